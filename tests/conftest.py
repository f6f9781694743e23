"""Shared fixtures: the conformance corpus lives beside the project in ../shared/corpus."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CORPUS = PROJECT_ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"conformance corpus not found at {CORPUS} (it sits beside the project in CI)")
    return CORPUS


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every ``@pytest.mark.anyio`` test runs on asyncio and on trio."""
    return str(request.param)


@pytest.fixture(scope="module", params=["accelerated", "pure-python"])
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a module's tests with the C accelerator and again in pure Python.

    Decoders (and encoders, and streams) created while ``use_accelerator`` is in force use
    the implementation it chose, so the objects a test creates use the one chosen here.
    """
    from utf8stream import use_accelerator

    with ExitStack() as stack:
        try:
            stack.enter_context(use_accelerator(request.param == "accelerated"))
        except RuntimeError:
            pytest.skip("the C accelerator is not built here (pure-Python install)")
        yield str(request.param)
