"""Shared fixtures and the Hypothesis profiles.

The conformance corpus lives beside the project in ../shared/corpus.

Profiles: ``ci`` when the environment variable ``CI`` is set (``.ci/run`` sets it), else
``dev``; ``HYPOTHESIS_PROFILE`` names one explicitly (``deep`` for a long local run).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# A shell starts a background job (`pytest ... &`) with SIGINT ignored, and an ignored
# signal stays ignored across exec: the CLI processes the tests start would then never
# see the Ctrl-C the tests send them (as the CLI must not: it respects SIG_IGN like any
# tool). A handler, unlike SIG_IGN, is reset to the default by exec, so the children
# start as they would from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Registered on Hypothesis' own defaults, not on whatever profile is loaded now (Hypothesis
# itself loads its built-in "ci" profile when it sees CI).  The profile must be loaded
# before any test module builds a settings object: those inherit from it.
_BASE = settings.get_profile("default")
# The default run (ci and dev) draws a quarter of Hypothesis' default number of examples,
# so that the README's test command stays short: Hypothesis tries the small and boundary
# cases first, and every short input of the decoding core is checked exhaustively besides
# (test_table.py, test_scanner_units.py).  ``deep`` draws forty times as many; it is run
# before every landing.
_DEFAULT_RUN = _BASE.max_examples // 4
# A submission must never fail CI on a roll of the dice: CI draws the same examples on
# every run, and a slow shared runner cannot trip a timing check.
settings.register_profile(
    "ci",
    parent=_BASE,
    max_examples=_DEFAULT_RUN,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# Local runs stay random, so that they keep finding new cases.
settings.register_profile(
    "dev", parent=_BASE, derandomize=False, deadline=None, max_examples=_DEFAULT_RUN
)
settings.register_profile(
    "deep", parent=_BASE, derandomize=False, deadline=None, max_examples=10 * _BASE.max_examples
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if "CI" in os.environ else "dev")
)

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
    from utf8stream.accel import use_accelerator

    with ExitStack() as stack:
        try:
            stack.enter_context(use_accelerator(request.param == "accelerated"))
        except RuntimeError:
            pytest.skip("the C accelerator is not built here (pure-Python install)")
        yield str(request.param)


@pytest.fixture
def thread_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The sizes of the reads the follower sends to a worker thread (``os.pread`` run by
    ``anyio.to_thread.run_sync``)."""
    import anyio.to_thread

    sizes: list[int] = []
    run_sync = anyio.to_thread.run_sync

    async def counting(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if func is os.pread:
            sizes.append(args[1])
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    yield sizes
