"""The pure-Python side of what ``_speedups`` offers beyond the scanner, name for name.

markupsafe's ``_native``/``_speedups`` pattern: ``_accel.implementation()`` returns the
compiled module or this one, so the encoder, the line streams and the follower call one
interface and never ask which is in use.  (The scanner pair is ``PyScanner`` and
``_speedups.Units``, chosen by ``scanner.scanner_type()``.)  Nothing here is faster than
the Python code it stands in for; it is the same behaviour through the same seam.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Generator
from itertools import accumulate
from typing import Any, Generic, TypeVar

__all__ = ["BufferedAsyncIterator", "PlainEncoder", "records", "split_lines"]

_T = TypeVar("_T")


#: The fields of the follower's ``Line``, in the order of its constructor's arguments.
_LINE_FIELDS = ("text", "offset", "file", "path", "terminated")


def records(
    cls: type[_T], texts: list[str], offsets: list[int], file: Any, path: str, terminated: bool, /
) -> list[_T]:
    """One ``cls`` (the follower's ``Line``) per text, with the offset at the same index
    and the three constants, last first (the order a reader pops them in)."""
    if getattr(cls, "__match_args__", None) != _LINE_FIELDS:
        raise TypeError("records: the Line type expected")
    if len(offsets) < len(texts):
        raise ValueError("records: fewer offsets than texts")
    built = [
        cls(text, offset, file, path, terminated)  # type: ignore[call-arg]
        for text, offset in zip(texts, offsets, strict=False)
    ]
    built.reverse()
    return built


_UNIVERSAL_NEWLINE = re.compile("(\r\n|\r|\n)")


def split_lines(
    text: str, newline: str | None, base: int, unit: int, limit: int, each_offset: bool, /
) -> tuple[list[str], list[int]] | None:
    """The lines of ``text`` (whole lines; ``newline`` None for universal newlines, or
    one character) and the source offset of each line's start, then of the end
    (``unit`` bytes per character from ``base``; the end only without
    ``each_offset``); None if a line is longer than ``limit`` source bytes."""
    if not (newline is None or len(newline) == 1):
        raise TypeError("split_lines: newline is one character or None")
    if unit < 1 or limit < 0 or base < 0 or base + len(text) * unit >= 1 << 63:
        raise ValueError("split_lines: unit >= 1, limit >= 0, and offsets below 2**63")
    parts = _UNIVERSAL_NEWLINE.split(text) if newline is None else text.split(newline)
    parts.pop()  # after the last newline
    contents = parts[::2] if newline is None else parts
    if contents and max(map(len, contents)) * unit > limit:
        return None
    if newline is None:
        widths = [len(c) + len(nl) for c, nl in zip(parts[::2], parts[1::2], strict=True)]
    else:
        widths = [len(c) + 1 for c in contents]
    offsets = list(accumulate([w * unit for w in widths], initial=base))
    return contents, offsets if each_offset else offsets[-1:]


class PlainEncoder:
    """The one-call encoding path: in Python, every call is the encoder's own method
    (``fallback``), which counts its characters itself, so nothing is left to drain."""

    def __init__(self, errors: str, fallback: Callable[..., bytes]) -> None:
        self.errors = errors
        self.encode = fallback

    def drain(self) -> int:
        return 0


class BufferedAsyncIterator(Generic[_T]):
    """``async for`` over a reader that produces items in batches: the items of the
    batch given to ``feed`` (popped from its end), then ``await refill(self)`` for the
    next item when they run out (``refill`` may ``feed`` a new batch).  The list is the
    reader's own, so an item taken by another way is not handed out twice."""

    def __init__(self, refill: Callable[[BufferedAsyncIterator[_T]], Awaitable[_T]]) -> None:
        self._refill = refill
        self._items: list[_T] = []

    def __aiter__(self) -> BufferedAsyncIterator[_T]:
        return self

    def __anext__(self) -> Awaitable[_T]:
        # As in C: whether an item is ready is decided here, and the item is taken when
        # the result is awaited (one never awaited takes nothing).
        items = self._items
        if items:
            return _Ready(items)
        return self._refill(self)

    def feed(self, items: list[_T], /) -> None:
        self._items = items


class _Ready(Generic[_T]):
    """The awaitable ``__anext__`` returns for an item that is ready."""

    __slots__ = ("_items",)

    def __init__(self, items: list[_T]) -> None:
        self._items = items

    def __await__(self) -> Generator[Any, None, _T]:
        if not self._items:
            raise RuntimeError(
                "BufferedAsyncIterator: the buffer was emptied between __anext__() and await"
            )
        return self._items.pop()
        yield  # unreachable: it makes this method a generator, as __await__ must be
