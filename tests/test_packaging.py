"""What a user installs: licence, metadata, optional trio, sdist and wheel contents.

These read the packaging configuration; they build nothing.  Building the sdist and wheel
and running the suite from the unpacked sdist is a release check (see MANIFEST.in).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # tomllib is new in Python 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
PROJECT: dict[str, Any] = PYPROJECT["project"]


def test_the_licence_is_an_spdx_expression_with_its_file() -> None:
    assert PROJECT["license"] == "MIT"
    assert PROJECT["license-files"] == ["LICENSE"]
    licence = (ROOT / "LICENSE").read_text("utf-8")
    assert licence.startswith("MIT License\n\nCopyright (c) 2026 utf8stream developers\n")
    # A licence classifier next to an SPDX expression is an error for setuptools >= 77,
    # which is also the first version that reads license-files.
    assert not [c for c in PROJECT["classifiers"] if c.startswith("License ::")]
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"]


def test_metadata_says_where_what_and_for_which_pythons() -> None:
    assert set(PROJECT["urls"]) == {"Source", "Issues", "Documentation"}
    classifiers = set(PROJECT["classifiers"])
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in range(10, 15)} <= (
        classifiers
    )
    assert PROJECT["requires-python"] == ">=3.10"
    assert {
        "Development Status :: 4 - Beta",
        "Intended Audience :: Developers",
        "Operating System :: POSIX",
        "Topic :: Text Processing",
        "Framework :: AnyIO",
        "Framework :: Trio",
        "Typing :: Typed",
    } <= classifiers
    # The follower reads with os.pread, which Windows does not have.
    assert not [
        c for c in classifiers if "Windows" in c or c == "Operating System :: OS Independent"
    ]


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_trio_is_an_extra_and_the_tests_install_it() -> None:
    assert requirement_names(PROJECT["dependencies"]) == {"anyio"}
    extras = PROJECT["optional-dependencies"]
    assert requirement_names(extras["trio"]) == {"trio"}
    assert set(extras["trio"]) <= set(extras["test"])


def test_kernel_watching_and_zstd_are_extras_the_tests_install() -> None:
    extras = PROJECT["optional-dependencies"]
    assert requirement_names(extras["watch"]) == {"watchfiles"}
    assert requirement_names(extras["compressed"]) == {"zstandard"}
    # Python 3.14 reads zstd with compression.zstd: the extra asks nothing more there.
    assert all("python_version < '3.14'" in r for r in extras["compressed"])
    # The tests exercise both on every Python (zstandard's reader too, on 3.14).
    assert {"watchfiles", "zstandard"} <= requirement_names(extras["test"])


def test_the_sdist_carries_what_its_tests_need() -> None:
    manifest = (ROOT / "MANIFEST.in").read_text("utf-8").splitlines()
    # conftest.py and the _helpers modules are not test_*.py files: only a graft takes them.
    assert "graft tests" in manifest
    assert "graft examples" in manifest  # the tests run the examples
    assert "graft docs" in manifest  # test_docs runs the pages' examples
    included = {
        name for line in manifest if line.startswith("include ") for name in line.split()[1:]
    }
    assert {"LICENSE", "README.md", "mkdocs.yml"} <= included
    # The core accelerator's headers (its C files go in as the extension's sources).
    assert "src/utf8stream/core/*.h" in included


def test_the_wheel_ships_the_typing_files_and_not_the_c_source() -> None:
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert setuptools["exclude-package-data"]["utf8stream"] == ["*.c", "*.h"]
    assert setuptools["exclude-package-data"]["utf8stream.core"] == ["*.c", "*.h"]
    assert setuptools["exclude-package-data"]["utf8stream.apps"] == ["*.c"]
    assert setuptools["package-data"]["utf8stream"] == ["py.typed", "*.pyi"]
    assert setuptools["package-data"]["utf8stream.apps"] == ["*.pyi"]
    assert setuptools["package-data"]["utf8stream.core"] == ["_detector_model.json"]
    assert (ROOT / "src/utf8stream/core/_detector_model.json").is_file()
    package = ROOT / "src" / "utf8stream"
    assert (package / "py.typed").is_file() and (package / "_speedups.pyi").is_file()


def test_docstrings_refer_to_nothing_a_user_does_not_have() -> None:
    """The design notes and the issue tracker are not installed with the package."""
    offending = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "src").rglob("*"))
        if path.suffix in {".py", ".pyi", ".c", ".h"}
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if re.search(r"DESIGN\.md|\bsection \d|\bissue \d|§", line, re.IGNORECASE)
    ]
    assert offending == []
