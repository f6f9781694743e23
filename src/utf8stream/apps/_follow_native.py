"""The pure-Python twin of ``_follow_speedups``, the follower's accelerator, name for name.

``_follow_accel.implementation()`` returns the compiled module or this one.  Nothing here
decodes: the follower's lines come from the core's line engine as plain data (texts and
offsets), and ``records`` makes them ``Line`` records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

__all__ = ["ReadAhead", "ReadBuffer", "records"]

_T = TypeVar("_T")


class ReadBuffer(bytearray):
    """``ReadBuffer(size)``: a buffer of ``size`` bytes that a read fills in place, then
    ``take(n)`` gives its first ``n`` bytes as bytes.  The accelerator's hands out the
    buffer itself (no copy); this one copies them."""

    def take(self, n: int) -> bytes:
        if not 0 <= n <= len(self):
            raise ValueError("take: 0 <= n <= size")
        with memoryview(self) as whole:
            return whole[:n].tobytes()


class ReadAhead:
    """``ReadAhead(fd)``: the accelerator's reads a file ahead in a thread of its own
    (the follower's next read, while the lines of the last are handed out).  Without it
    nothing is read ahead: ``start`` says so (False) and ``take`` finds nothing (None),
    so the follower reads as it always does."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def start(self, offset: int, size: int, nowait: bool, /) -> bool:
        if offset < 0 or size < 0:
            raise ValueError("start: offset and size must be non-negative")
        return False

    def take(self, offset: int, size: int, /) -> bytes | None:
        return None

    def close(self) -> None:
        pass

    @staticmethod
    def threads() -> int:
        return 0


#: The fields of the follower's ``Line``, in the order of its constructor's arguments.
_LINE_FIELDS = ("text", "offset", "file", "path", "terminated")


def records(
    cls: type[_T],
    texts: list[str],
    offsets: Sequence[int],
    file: Any,
    path: str,
    terminated: bool,
    /,
) -> list[_T]:
    """One ``cls`` (the follower's ``Line``) per text, with the offset at the same index
    (``offsets``: a list, or packed int64 offsets) and the three constants, last first
    (the order a reader pops them in): made in ``texts`` itself, which is returned."""
    if getattr(cls, "__match_args__", None) != _LINE_FIELDS:
        raise TypeError("records: the Line type expected")
    if len(offsets) < len(texts):
        raise ValueError("records: fewer offsets than texts")
    built = [
        cls(text, offset, file, path, terminated)  # type: ignore[call-arg]
        for text, offset in zip(texts, offsets, strict=False)
    ]
    built.reverse()
    made: list[_T] = texts  # type: ignore[assignment]
    made[:] = built
    return made
