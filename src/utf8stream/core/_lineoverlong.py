"""The line engine's overlong-line policies (``on_overlong``: split, truncate, skip,
raise) and its cut of a line's pieces; functions of ``LineEngine``, bound in its class."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._linetypes import LineBatch, LineItem
from .lineoptions import (
    LineTooLong,
)

if TYPE_CHECKING:
    from .linecodec import LineEngine


def finish_overlong(
    self: LineEngine,
    content: bytes,
    ending: bytes,
    lost: int,
    unfinished: bool,
    out: list[LineBatch | LineItem],
) -> None:
    """``finish`` for a last line found overlong only now: judged like any line."""
    start = self.line_start
    self._complete_line(content, ending, start, out)
    if lost:
        self.decoder.mark_gap(lost=lost)
    gap = self.decoder.decode(b"", final=True)
    last = out[-1]
    assert isinstance(last, LineItem)
    if isinstance(last.line, str):
        last = last._replace(line=last.line + gap)
    if unfinished:
        # The stream goes on later: a checkpoint reads the last piece (or the whole
        # line) again, with what follows it.
        stop = last.offset if isinstance(last.line, str) else start
        last = last._replace(offset=stop, end=stop)
    out[-1] = last._replace(terminated=bool(ending))


def complete_line(
    self: LineEngine, content: bytes, ending: bytes, offset: int, out: list[LineBatch | LineItem]
) -> None:
    end = offset + len(content) + len(ending)
    continuing, self._splitting = self._splitting, False
    if self.overlong:  # the end of a line that passed the limit earlier
        self.decoder.decode_line(content, ending)
        self.overlong = False
        if self.on_overlong == "truncate":
            head = self._head + self._kept(ending)
            out.append(LineItem(head, self._head_offset, end, False, True))
        else:
            out.append(LineItem(None, end, end, False, True))
        return
    if len(content) <= self._max:
        text = self.decoder.decode_line(content, ending) + self._kept(ending)
        out.append(LineItem(text, offset, end, False, True))
        return
    if not continuing:
        self._found_overlong(offset)
    if self.on_overlong == "split":
        pos = self._split_pieces(content, offset, out)
        tail = self.decoder.decode_line(content[pos:], ending) + self._kept(ending)
        out.append(LineItem(tail, offset + pos, end, False, True))
        return
    cut = self.decoder.cut(content, self._max)
    head = self.decoder.decode_piece(content[:cut], content[cut])
    self.decoder.decode_line(content[cut:], ending)  # for its events; not delivered
    if self.on_overlong == "truncate":
        out.append(LineItem(head + self._kept(ending), offset, end, False, True))
    elif self.on_overlong == "raise":
        out.append(LineItem(LineTooLong(head, self._max), end, end, False, True))
    else:
        out.append(LineItem(None, end, end, False, True))


def overlong_unfinished(
    self: LineEngine, rest: bytes, body: int, out: list[LineBatch | LineItem]
) -> bytes:
    """An unfinished line passed the limit: act now, so memory stays bounded.

    ``rest[:body]`` is the line so far; what follows may begin its newline, and is
    returned to be held (with whatever the split leaves).
    """
    if self.on_overlong == "split":
        if not self._splitting:
            self._found_overlong(self.line_start)
        self._splitting = True
        pos = self._split_pieces(rest[:body], self.line_start, out)
        self.line_start += pos
        return rest[pos:]
    self._found_overlong(self.line_start)
    cut = self.decoder.cut(rest[:body], self._max)
    head = self.decoder.decode_piece(rest[:cut], rest[cut])
    self.decoder.decode(rest[cut:body])
    self.overlong = True
    self._head, self._head_offset = head, self.line_start
    self.line_start += body
    if self.on_overlong == "raise":
        # Raised when the caller gets there; a checkpoint stands mid-line, after the
        # bytes already skipped.
        error = LineTooLong(head, self._max)
        out.append(LineItem(error, self.line_start, self.line_start, True, False))
    return rest[body:]


def found_overlong(self: LineEngine, offset: int) -> None:
    if self._on_overlong_line is not None:
        self._on_overlong_line(offset)


def split_pieces(
    self: LineEngine, content: bytes, offset: int, out: list[LineBatch | LineItem]
) -> int:
    """Hand out pieces of at most max_line_bytes while more than that remain.

    Returns how many bytes of ``content`` went out.  Each piece ends on a character
    boundary; a checkpoint after a piece resumes mid-line with no gap.
    """
    pos = 0
    limit = self._max
    while len(content) - pos > limit:
        size = self.decoder.cut(content[pos : pos + limit + 1], limit)
        text = self.decoder.decode_piece(content[pos : pos + size], content[pos + size])
        end = offset + pos + size
        out.append(LineItem(text, offset + pos, end, True, False))
        pos += size
    return pos
