"""Hypothesis profiles (conftest.py): CI never fails on a roll of the dice.

Every property must take derandomize, database, deadline and print_blob from the loaded
profile, so that under ``ci`` it draws the same examples on every run; a test that sets
one of them itself would escape the profile.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parent


def hypothesis_tests() -> Iterator[tuple[str, Any]]:
    """``(name, test)`` for every ``@given`` test in every test module."""
    for path in sorted(TESTS.rglob("test_*.py")):
        if str(path.parent) not in sys.path:  # as pytest's rootdir-relative import does
            sys.path.insert(0, str(path.parent))
        module = importlib.import_module(path.stem)
        for name, test in vars(module).items():
            if getattr(test, "is_hypothesis_test", False):
                yield f"{path.stem}.{name}", test


def test_every_property_inherits_the_loaded_profile() -> None:
    loaded = settings.default
    assert loaded is not None
    found = list(hypothesis_tests())
    assert len(found) > 50, "the test modules were not found"
    for name, test in found:
        used = test._hypothesis_internal_use_settings
        assert used.derandomize == loaded.derandomize, name
        assert used.deadline == loaded.deadline, name
        assert used.print_blob == loaded.print_blob, name
        if loaded.database is None:
            assert used.database is None, name
        if HealthCheck.too_slow in loaded.suppress_health_check:
            assert HealthCheck.too_slow in used.suppress_health_check, name
        assert test._hypothesis_internal_use_seed is None, name


def test_every_example_count_scales_with_the_profile() -> None:
    # A count written as a number would run as many examples under ``deep`` as under
    # ``ci``: every count goes through ``_helpers.examples``.
    fixed = []
    for path in sorted(TESTS.rglob("test_*.py")):
        source = path.read_text("utf-8")
        if "max_examples" not in source:  # no keyword of that name to look at
            continue
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.keyword)
                and node.arg == "max_examples"
                and isinstance(node.value, ast.Constant)
            ):
                fixed.append(f"{path.relative_to(TESTS)}:{node.value.lineno}")
    assert fixed == []


def run_profile_check(target: str, **env: str) -> str:
    """Run pytest on ``target`` (``--collect-only`` for the header alone) in a fresh
    interpreter with ``env``; return its report header."""
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *target.split()],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=TESTS,
        env={**clean, **env},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return next(line for line in result.stdout.splitlines() if "hypothesis profile" in line)


@pytest.mark.parametrize(
    ("env", "profile", "shown"),
    [
        ({"CI": "true"}, "ci", "derandomize=True"),
        ({}, "dev", "deadline=None"),
        # Each run starts pytest anew: the deep cases wait for the soak step.
        pytest.param(
            {"HYPOTHESIS_PROFILE": "deep"}, "deep", "max_examples=1000", marks=pytest.mark.soak
        ),
        pytest.param(
            {"CI": "true", "HYPOTHESIS_PROFILE": "deep"},
            "deep",
            "max_examples=1000",
            marks=pytest.mark.soak,
        ),
    ],
)
def test_the_environment_chooses_the_profile(
    env: dict[str, str], profile: str, shown: str
) -> None:
    # Collecting this module imports no other test module: the header comes at once.
    header = run_profile_check(f"--collect-only {Path(__file__).name}", **env)
    assert f"hypothesis profile {profile!r}" in header
    assert shown in header
    if profile != "ci":
        assert "derandomize" not in header  # random, as Hypothesis' own default


# The same check in a child under each profile (every test module imported again, hence
# the soak step); test_every_property_inherits_the_loaded_profile covers this run's.
@pytest.mark.soak
@pytest.mark.parametrize("env", [{"CI": "true"}, {}], ids=["ci", "dev"])
def test_every_property_inherits_each_profile(env: dict[str, str]) -> None:
    run_profile_check(
        f"{Path(__file__).name}::test_every_property_inherits_the_loaded_profile", **env
    )
