"""Shared fixtures: the conformance corpus lives beside the project in ../shared/corpus."""

from __future__ import annotations

from collections.abc import Iterator
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

    Decoders read ``utf8stream.core.decoder._accel`` when they set their policy, so the
    decoders a test creates use the implementation chosen here.
    """
    import utf8stream.core.decoder as decoder_module

    saved = decoder_module._accel
    if request.param == "accelerated" and saved is None:
        pytest.skip("the C accelerator is not built here (pure-Python install)")
    if request.param == "pure-python":
        decoder_module._accel = None
    try:
        yield str(request.param)
    finally:
        decoder_module._accel = saved
