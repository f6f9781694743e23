"""What the line engine's parts share: its newline characters, and the lines it hands out
(``ByteLine``, ``LineBatch``, ``LineItem``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .lineoptions import LineTooLong

_CR = "\r"
_LF = "\n"


@dataclass(frozen=True, slots=True)
class ByteLine:
    """One line (without its newline), where its bytes start and end in the source, and
    whether a newline ended it (not: the last line at the end of the input, or a piece of
    an overlong line split by ``on_overlong="split"``)."""

    text: str
    offset: int
    end: int
    terminated: bool = True


class LineBatch(NamedTuple):
    """Complete, ordinary lines of one ``feed``, in bulk: ``offsets`` is each line's first
    byte, then the offset just past the last line (only that last one from an engine
    made with ``each_offset=False``).  ``offsets`` is a sequence of ints: a list, or from
    an engine made with ``packed_offsets=True`` possibly a ``memoryview`` of int64
    (format ``"q"``), which holds no int object per line."""

    texts: list[str]
    offsets: Sequence[int]


class LineItem(NamedTuple):
    """One line the engine hands out on its own: ``line`` is its text, a ``LineTooLong``
    to raise (``on_overlong="raise"``), or ``None`` for a skipped line; ``end`` is where
    the next line starts (for a checkpoint); ``mid_line``: a piece of a split line, or a
    raise before the overlong line ended."""

    line: str | LineTooLong | None
    offset: int
    end: int
    mid_line: bool
    terminated: bool
