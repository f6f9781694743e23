"""Which implementation runs: the compiled ``_speedups`` module, or pure Python.

Chosen once, when this module is imported: the compiled module if it was built and
``UTF8STREAM_PURE_PYTHON`` is not set in the environment, else pure Python.  Callers ask
``implementation()`` here (the compiled module or ``_native``, the same names) and the
scanner seam asks ``scanner.scanner_type()``, so ``use_accelerator`` is the one switch
between the two (for tests that compare them in one process); nothing else looks for the
compiled module.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import _native
from .events import Malformed, MalformedKind

__all__ = ["accelerated", "accelerator", "implementation", "use_accelerator"]

#: The kinds the accelerator counts, in the order of its counters (``Units.drain``).
ACCEL_KINDS = (
    MalformedKind.UNEXPECTED_CONTINUATION,
    MalformedKind.OVERLONG,
    MalformedKind.SURROGATE,
    MalformedKind.OUT_OF_RANGE,
    MalformedKind.INVALID_BYTE,
    MalformedKind.INCOMPLETE_SEQUENCE,
    MalformedKind.TRUNCATED_AT_END,
)


#: The accelerator counts offsets in 64-bit integers: past this position (4 EiB, far
#: beyond any real stream, but a ``start_offset`` may be anything) a decoder decodes in
#: Python, so that both implementations accept every non-negative offset.
ACCEL_MAX_POSITION = 1 << 62


def _load() -> Any:
    """The compiled ``_speedups`` module, set up, or None (pure Python)."""
    if os.environ.get("UTF8STREAM_PURE_PYTHON"):
        return None
    try:
        from .. import _speedups
    except ImportError:
        return None
    _speedups.setup(
        ACCEL_KINDS,
        Malformed,
        Malformed.__dict__["offset"],
        Malformed.__dict__["data"],
        Malformed.__dict__["kind"],
    )
    return _speedups


#: The compiled module, even while ``use_accelerator(False)`` is in force.
_built: Any = _load()
#: The implementation in use (None: pure Python).
_current: Any = _built


def accelerated() -> bool:
    """True when the compiled accelerator is in use."""
    return _current is not None


def built_accelerator() -> Any:
    """The compiled module if it was built and not disabled, whatever ``use_accelerator``
    says (the switch chooses per object; a type may need the module for both)."""
    return _built


def accelerator() -> Any:
    """The compiled ``_speedups`` module in use, or None (pure Python)."""
    return _current


def implementation() -> Any:
    """The module in use, compiled (``_speedups``) or pure Python (``_native``): the same
    names with the same behaviour, so a caller never branches on which it got."""
    return _native if _current is None else _current


@contextmanager
def use_accelerator(enabled: bool) -> Iterator[bool]:
    """Objects created inside this block use the C accelerator, or pure Python.

    ``use_accelerator(False)`` always works; ``use_accelerator(True)`` raises
    ``RuntimeError`` where the extension is not built or ``UTF8STREAM_PURE_PYTHON`` is
    set.  A decoder keeps the implementation it was created with; an encoder asks
    ``accelerator()`` when its policy is set, a stream's ``async for`` when it starts,
    so they follow the switch too.  The block yields ``enabled``.  For tests that compare
    the two implementations in one process; both produce the same text, events,
    statistics and checkpoints.
    """
    global _current
    if enabled and _built is None:
        raise RuntimeError("the C accelerator is not available (not built, or disabled)")
    saved = _current
    _current = _built if enabled else None
    try:
        yield enabled
    finally:
        _current = saved
