"""The structure of ``apps/`` a reader can hold: the sizes ``core/`` and ``aio/`` are held
to (``tests/test_structure.py``), no class overriding another class's private methods, and
no private name of a third-party package imported anywhere in the package.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from test_structure import MAX_C_FILE, MAX_C_FUNCTION, PACKAGE, c_definitions, python_sizes

APPS = PACKAGE / "apps"


def over_in_apps() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(APPS.rglob("*.py")):
        over = [item.split(":")[0] for item in python_sizes(path)]
        if over:
            found[str(path.relative_to(APPS))] = over
    return found


def test_apps_files_classes_and_functions_are_small() -> None:
    assert over_in_apps() == {}


def test_apps_c_files_and_functions_are_small() -> None:
    for path in sorted(APPS.rglob("*.c")):
        text = path.read_text("utf-8")
        assert len(text.splitlines()) <= MAX_C_FILE, path
        big = [(name, size) for name, size in c_definitions(text) if size > MAX_C_FUNCTION]
        assert big == [], path


def private_methods_overridden() -> list[str]:
    """``Sub._m`` where ``Sub`` subclasses a class of the package that defines ``_m``."""
    classes: dict[str, tuple[list[str], set[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
                methods = {
                    f.name
                    for f in node.body
                    if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                    and f.name.startswith("_")
                    and not f.name.startswith("__")
                }
                classes[node.name] = (bases, methods)
    found = []
    for name, (bases, methods) in classes.items():
        for base in bases:
            if base in classes:
                found += [f"{name}.{m} over {base}" for m in sorted(methods & classes[base][1])]
    return found


def test_no_class_overrides_another_classs_private_methods() -> None:
    assert private_methods_overridden() == []


def third_party_private_imports(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module + "." + alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                # (``_typeshed`` is the type checker's own stub of the standard library.)
                if top in sys.stdlib_module_names or top in ("utf8stream", "_typeshed"):
                    continue
                if any(part.startswith("_") for part in name.split(".")):
                    found.append(f"{path.relative_to(root)}: {name}")
    return found


def test_no_private_name_of_a_third_party_package_is_imported() -> None:
    assert third_party_private_imports() == []


def test_the_import_check_sees_private_names(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import _thread\nfrom watchfiles._rust_notify import RustNotify\n"
        "import anyio._core\nfrom anyio import create_task_group\n"
    )
    assert third_party_private_imports(tmp_path) == [
        "m.py: watchfiles._rust_notify.RustNotify",
        "m.py: anyio._core",
    ]
