"""The line seam of the decoder: ``decode_lines`` (lines cut and decoded in one pass of
the scanner) and ``end_pending`` (a held unit decided by the byte after it); functions
of ``Utf8Decoder``, bound in its class."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ._bytes import classify_unit, is_proper_prefix
from ._policy import _malformed

if TYPE_CHECKING:
    from .decoder import Utf8Decoder


class DecodedLines(NamedTuple):
    """What ``Utf8Decoder.decode_lines`` returns."""

    #: Each complete line's text, without its newline.
    texts: list[str]
    #: The absolute offset of each line's first byte, then the offset where the
    #: undecoded rest begins (the decoder's new ``position``).  A list, or with
    #: ``each_offset=2`` possibly a ``memoryview`` of int64 (format ``"q"``).
    offsets: Sequence[int]


def decode_lines(
    self: Utf8Decoder,
    head: bytes,
    data: bytes | memoryview,
    sep: int,
    limit: int,
    each_offset: int = True,
) -> DecodedLines | None:
    """Decode the complete lines at the start of ``head + data``, or return ``None``.

    For a reader that holds its unfinished line itself (the line engine); also
    ``None`` while a prefix is held.  ``head + data`` starts at ``position``.  Lines
    end at the byte ``sep`` (-1: universal newlines; a ``\r`` that ends the buffer
    ends no line yet); decoding stops before the first unterminated line or the
    first line with more than ``limit`` bytes, which the reader handles with
    ``decode()``.  Events and statistics are those of ``decode()`` of the bytes
    consumed.  A callback that raises leaves this decoder unusable (the follower
    catches that).  ``each_offset=False``: ``offsets`` holds only the end of the
    last line (a reader that hands out no offsets saves an int per line);
    ``each_offset=2``: all of them, packed where the accelerator cuts the lines (a
    ``memoryview`` of int64: no int object per line; a list otherwise).
    """
    parts: list[str]
    offsets: Sequence[int]
    scanner = self._ready
    if scanner is None or not self._cuts_lines or scanner.pending:
        return None
    parts, offsets = scanner.lines(head, data, scanner.position, sep, limit, each_offset)
    scanner.position = offsets[-1]
    return DecodedLines(parts, offsets)


def end_pending(self: Utf8Decoder, next_byte: int) -> str:
    """The text of a held proper prefix that ``next_byte`` does not continue.

    ``next_byte`` is the byte the next ``decode`` will start with, not decoded here:
    the prefix is the malformed unit that call would begin with, reported, counted
    and given its text now, so that the text of the bytes decoded so far is
    complete (a piece of a line cut there).  ``""`` when nothing such is held: no
    prefix, one ``next_byte`` continues, a variant's, or input held after a failure.
    """
    self._refuse_if_reporting("end_pending")
    scanner = self._scanner
    pending = scanner.pending
    if (
        not pending
        or self._variant.name != "utf-8"
        or self._unread
        or self._carry
        or self._gap_open
        or is_proper_prefix(pending + bytes((next_byte,)))
    ):
        return ""
    scanner.pending = b""
    kind = classify_unit(pending + bytes((next_byte,)), 0, len(pending), False)
    self._counts[kind] += 1
    policy = self._policy
    try:
        text = policy.map_unit(_malformed(scanner.position - len(pending), pending, kind))
    except BaseException:
        # As after a failed ``decode``: the unit is consumed, a callback's text waits
        # for the next call.
        self._carry, policy.failed_text = policy.failed_text, ""
        raise
    finally:
        self._sync()
    self._chars += len(text)
    return text
