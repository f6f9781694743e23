"""The line engine's bulk paths: the complete lines of a read cut and decoded in one
pass (``feed_slice``, ``feed_cut``, a decoder's ``decode_lines``), by their code units
(``decode_units``), or in one decode of a block; functions of ``LineEngine``, bound in
its class."""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from typing import TYPE_CHECKING, Any

from . import linesearch
from ._accel import ACCEL_MAX_POSITION, implementation
from ._linetypes import (
    LineBatch,
    LineItem,
)

if TYPE_CHECKING:
    from .linecodec import LineEngine


def feed_slice(
    self: LineEngine, data: bytes, start: int, stop: int
) -> tuple[LineBatch, int, list[LineBatch | LineItem]] | None:
    """``feed`` of a slice of a long read, the complete lines at its start in bulk
    (a reader of long reads: the follower's hot path, one call per slice).

    The slice is ``data[start:end]``, ``end`` where ``slice_end`` ends it before
    ``stop`` (``len(data)`` if ``stop`` reaches it).  Returns ``(batch, end, items)``:
    the slice's complete lines at its start as one ``LineBatch`` (decoded in the same
    pass as they are cut, by the decoder's ``decode_lines``), then ``items``, what
    ``feed`` gives for the rest of the slice (a line too long, an unfinished line;
    mostly nothing).  ``None`` when this does not apply (a line held, an overlong
    line under way, a decoder that cannot cut lines), and nothing was fed: the
    caller feeds the slice the usual way.  The same lines, offsets, events and
    state as ``feed`` either way.
    """
    sep = self._sep
    if (
        sep is None
        or self.partial
        or self.overlong
        or not self._started
        or self._units is not None
        or type(data) is not bytes
    ):
        return None
    end = self.slice_end(data, start, stop) if stop < len(data) else len(data)
    piece = memoryview(data)[start:end]
    found = self.decoder.decode_lines(b"", piece, sep, self._max, self._offset_mode)
    if found is None:
        return None
    texts, offsets = found
    after = offsets[-1]
    moved = after - self.position
    self.position = self.line_start = after
    if texts:
        self._splitting = False
    items = self.feed(piece[moved:]) if moved < len(piece) else []
    return LineBatch(texts, offsets), end, items


def feed_cut(
    self: LineEngine, decode_lines: Callable[..., Any], data: bytes | memoryview
) -> tuple[list[Any], list[LineBatch | LineItem]] | None:
    """``feed(data)`` for a caller whose decoder decodes the bytes as they are (a
    splitter's source passing them through): ``decode_lines`` is that decoder's (its
    scanner cuts and decodes the lines in one pass).  The same lines and state as
    ``feed``, with the layers between cut out (one Python call per chunk).  Returns the
    texts of the lines it cut (a list of the caller's to keep) and what ``feed`` would
    return after their ``LineBatch`` (mostly nothing: an overlong line and those after
    it); ``None`` when the engine or the decoder is not on its fast path (nothing is
    changed then).
    """
    sep = self._sep
    if sep is None or self.overlong or not self._started or self._units is not None:
        return None
    if self._offset_mode:
        return None  # (an engine that hands out offsets: they are not kept here)
    partial = self.partial
    base = self.line_start
    found = decode_lines(partial, data, sep, self._max, 0)
    if found is None:
        return None
    texts, offsets = found
    self.position += len(data)
    end = offsets[-1]
    more: list[LineBatch | LineItem] = []
    if texts:
        self._splitting = False
    used, held = end - base, len(partial)
    rest = data[used - held :] if used >= held else partial[used:] + data
    buf = rest if type(rest) is bytes else bytes(rest)
    if len(buf) <= self._max:
        # ``lines`` stops before an unterminated line, a \r that may be the first
        # half of \r\n, or a line over the limit (more than ``_max`` bytes then):
        # here no line ends in ``buf``, and ``_take_rest`` would only keep it.
        self.line_start = end
        self.partial = buf
    else:
        self._take_rest(buf, end, more)
    return texts, more


def take_units(
    self: LineEngine, buf: bytes, base: int, scanned: int, out: list[LineBatch | LineItem]
) -> int:
    """The complete lines of ``buf`` when each of their code units is one character
    (``CodecLineDecoder.decode_units``: UTF-16/32 text without surrogate pairs,
    single-byte codecs): one decode, and the lines cut by ``split_lines`` (the newline
    units searched in the bytes, the text sliced at the same units).

    Returns how many bytes were used; 0 when this does not apply (the decoder's
    state is then untouched) and the lines need the byte-by-byte search.
    """
    assert self._units is not None
    end = self._last_line_end(buf, scanned)
    if not end or not self.decoder.text_split_exact(self.newline):
        return 0
    if base + end >= ACCEL_MAX_POSITION:
        return 0  # offsets past 64 bits: the byte-by-byte search takes any offset
    data = buf[:end]
    text = self._units(data)
    if text is None:
        return 0
    newline = self.newline
    unit = self._unit
    crlf = newline == "\r\n" and len(self._nl) == 2 * unit
    if newline is None:
        units: bytes | tuple[bytes, bytes] = (self._cr, self._lf)
    elif len(self._nl) == unit:
        units = self._nl
    elif crlf:
        units = self._nl[unit:]  # the "\n" of each "\r\n", its "\r" checked below
    else:
        return 0
    # The lines' starts are needed to keep the newlines or strip a "\r".
    starts = self.keepends or crlf
    mode = 1 if starts else self._offset_mode
    cut = implementation().split_lines(data, text, units, base, self._max, mode)
    if cut is None:
        return 0  # a line too long: cut it the other way
    contents, offsets = cut
    if crlf:
        if not all(map(str.endswith, contents, repeat("\r"))):
            return 0  # a "\n" alone ends no line here: the search line by line
        contents = [c[:-1] for c in contents]
    if self.keepends:
        chars = list(map(unit.__rfloordiv__, map(base.__rsub__, offsets)))
        contents = list(map(text.__getitem__, map(slice, chars, chars[1:])))
    if starts and not self.each_offset:
        offsets = offsets[-1:]
    out.append(LineBatch(contents, offsets))
    self._splitting = False
    return end


def last_line_end(self: LineEngine, buf: bytes, start: int) -> int:
    """Where the last complete line of ``buf`` ends (0: none), as ``_line_ends``
    (looking from ``start`` on) would find it, with two searches from the end."""
    unit = self._unit
    size = len(buf) // unit * unit
    if self.newline is None:
        if buf.endswith(self._cr, 0, size):
            size -= unit  # the \r may be the first half of \r\n
        last_lf = linesearch.last_unit(buf, self._lf, start, size, unit)
        # Only a \r after the last \n matters: the search for one stops there (a file
        # with none would be searched whole, and a two-byte search is not memrchr).
        after_lf = max(start, last_lf + unit)
        at = max(last_lf, linesearch.last_unit(buf, self._cr, after_lf, size, unit))
        return at + unit if at >= 0 else 0
    at = linesearch.last_unit(buf, self._nl, start, size, unit)
    return at + len(self._nl) if at >= 0 else 0


def take_block(
    self: LineEngine,
    buf: bytes,
    base: int,
    ends: list[tuple[int, int]],
    out: list[LineBatch | LineItem],
) -> int:
    """The common case, in bulk: complete lines, none too long.

    One decode for all of them, one split of the text, where the text has exactly
    the newlines the bytes have.  Returns how many bytes were used, 0 when the lines
    need the one-by-one path.
    """
    # Asked each time: a decoder may change what it decodes (the splitter's does).
    if not self.decoder.text_split_exact(self.newline):
        return 0
    starts = [0, *[after for _, after in ends[:-1]]]
    block_end = ends[-1][1]
    if (
        block_end > self._max
        and max(e - s for s, (e, _) in zip(starts, ends, strict=True)) > self._max
    ):
        return 0
    text = self.decoder.decode(buf[:block_end])
    contents = linesearch.split_text(text, self.newline, self.keepends)
    offsets = [base + s for s in starts] if self.each_offset else []
    offsets.append(base + block_end)
    out.append(LineBatch(contents, offsets))
    self._splitting = False
    return block_end
