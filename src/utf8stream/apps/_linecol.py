"""Byte offsets as line and column, counted from the bytes as they stream by
(``utf8stream validate``, and ``utf8stream.dask.malformed`` block by block)."""

from __future__ import annotations

import re

from ..core.events import Malformed, MalformedKind

_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
#: A surrogate pair written as two three-byte halves: one character in CESU-8 and MUTF-8.
_SURROGATE_PAIR = re.compile(rb"\xed[\xa0-\xaf][\x80-\xbf]\xed[\xb0-\xbf][\x80-\xbf]")


class LineColumnTracker:
    """Turns absolute byte offsets into 1-based ``line:column`` (column in characters).

    Fed the raw bytes in order; never holds more than counters.  A malformed unit counts
    as one character, like the U+FFFD that replaces it: every character and every unit
    starts with a byte that is not a continuation byte, except an unexpected
    continuation byte, which the caller reports with ``note_unit``.
    """

    def __init__(self, *, joins_pairs: bool = False, start: int = 0) -> None:
        self.line = 1
        self._chars_in_line = 0
        self._pos = start  # the offset of the first byte fed (a line starts there)
        # For variants where a six-byte surrogate pair is one character: the last bytes
        # of the line so far, where a pair that ends in the next segment may begin.
        self._joins_pairs = joins_pairs
        self._carry = b""

    def advance(self, data: bytes, data_offset: int, to: int) -> None:
        """Count the bytes of ``data`` (starting at ``data_offset``) up to offset ``to``."""
        if to <= self._pos:
            return
        segment = data[self._pos - data_offset : to - data_offset]
        newlines = segment.count(b"\n")
        if newlines:
            self.line += newlines
            segment = segment[segment.rfind(b"\n") + 1 :]
            self._chars_in_line = 0
            self._carry = b""
        self._chars_in_line += len(segment.translate(None, _CONTINUATION_BYTES))
        if self._joins_pairs:
            # Pairs cannot overlap and are six bytes long: every pair found here ends in
            # ``segment``, so none is counted twice.
            window = self._carry + segment
            self._chars_in_line -= len(_SURROGATE_PAIR.findall(window))
            self._carry = window[-5:]
        self._pos = to

    @property
    def chars_in_line(self) -> int:
        """Characters of the current line so far (a malformed unit counts one)."""
        return self._chars_in_line

    def locate(self, event: Malformed) -> tuple[int, int]:
        """Line and column of ``event``; call after ``advance`` up to its offset."""
        # A unit that began in the previous chunk has its lead byte counted already.
        column = self._chars_in_line + (event.offset >= self._pos)
        if event.kind is MalformedKind.UNEXPECTED_CONTINUATION:
            self._chars_in_line += 1
        return self.line, column
