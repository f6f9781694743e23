"""Which implementation runs: the compiled ``_speedups`` module, or pure Python.

Chosen once, when this module is imported: the compiled module if it was built and
``UTF8STREAM_PURE_PYTHON`` is not set in the environment, else pure Python.  Everything
that can use the accelerator asks ``accelerator()`` here, so ``use_accelerator`` is the
one switch between the two (for tests that compare them in one process); nothing else
looks for the compiled module.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .events import Malformed, MalformedKind

__all__ = ["accelerated", "accelerator", "use_accelerator"]

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


class SplitFlag(enum.IntFlag):
    """What ``Utf8Decoder.decode_split`` says about the text it split.

    ``ENDS_CR``: with universal newlines, the text ended in a ``\r`` that was left out
    (the next text decides whether it is half of ``\r\n``).  ``STARTS_LF``: the text
    started with ``\n``.  ``ASCII_ONLY``: every part is ASCII.  The values are those of
    ``_speedups.c`` (checked when it is loaded).
    """

    ENDS_CR = 1
    STARTS_LF = 2
    ASCII_ONLY = 4


SPLIT_ENDS_CR = SplitFlag.ENDS_CR
SPLIT_STARTS_LF = SplitFlag.STARTS_LF
SPLIT_ASCII_ONLY = SplitFlag.ASCII_ONLY

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
    flags = (_speedups.ENDS_CR, _speedups.STARTS_LF, _speedups.ASCII_ONLY)
    if flags != (SPLIT_ENDS_CR, SPLIT_STARTS_LF, SPLIT_ASCII_ONLY):  # pragma: no cover
        return None  # a stale build of the extension
    return _speedups


#: The compiled module, even while ``use_accelerator(False)`` is in force.
_built: Any = _load()
#: The implementation in use (None: pure Python).
_current: Any = _built


def accelerated() -> bool:
    """True when the compiled accelerator is in use."""
    return _current is not None


def accelerator() -> Any:
    """The compiled ``_speedups`` module in use, or None (pure Python)."""
    return _current


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
