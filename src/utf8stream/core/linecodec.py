"""The line engine: bytes in, lines with their exact byte offsets out, in any encoding.

Theory of operation
-------------------
Lines are cut in the *bytes*, at the encoded newline, and only then decoded: the offset of
every line is then exact by construction, whatever the encoding and whatever malformed
bytes the decoder replaces.  That needs two things of an encoding, which the
``LineDecoder`` interface asks for:

* the newline characters encode to code units that are never part of another character
  (ASCII bytes in UTF-8 and the ASCII-compatible legacy codecs; ``0A 00`` at an even
  offset in UTF-16LE, and so on), so finding them needs no decoding;
* an incremental decoder that turns the bytes between them into text, with an error
  policy for malformed bytes.

Two implementations: ``Utf8LineDecoder`` (``Utf8Decoder``, whose scanner can cut and
decode the complete lines of a read in one pass: the fast path) and ``CodecLineDecoder``
(any Python text codec whose newlines are self-delimiting: UTF-16/32 with code-unit
alignment and byte-order-mark detection, single-byte and multi-byte legacy codecs).  A new
encoding plugs in by implementing ``LineDecoder``.  A decoder may also offer
``decode_units(data)``: the text of whole lines when each code unit is one character
(UTF-16/32 without surrogate pairs, single-byte codecs), else ``None``; the engine then
cuts the decoded text and computes the offsets instead of searching the bytes line by
line (``CodecLineDecoder`` does).  A reader of long reads feeds them in slices
(``feed_slice``): the lines of a slice come out as plain data, texts and offsets, for
the reader to make its own records of.
Newlines are searched for by ``linesearch`` (``bytes.find``, memchr), and the unfinished
line held between reads is not searched again.

``LineEngine`` owns everything else, once: the newline modes (``None`` = universal
``\\n``/``\\r\\n``/``\\r``, or a fixed newline string), ``max_line_bytes`` (a limit on a
line's content in *source* bytes) and the overlong-line policies.  It holds at most the
unfinished line (bounded by the limit) between calls.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

from . import _linebulk, _lineoverlong, linesearch
from ._bytes import is_proper_prefix
from ._linetypes import (
    _CR,
    _LF,
    ByteLine,
    LineBatch,
    LineItem,
)
from .linedecoders import (
    CodecLineDecoder,
    LineDecoder,
    Utf8LineDecoder,
    incremental_decoder,
    line_decoder,
)
from .lineoptions import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_ON_OVERLONG,
    LineTooLong,
    check_line_options,
)

__all__ = [
    "ByteLine",
    "CodecLineDecoder",
    "LineBatch",
    "LineDecoder",
    "LineEngine",
    "LineItem",
    "Utf8LineDecoder",
    "line_decoder",
]


class LineEngine:
    """Cuts a byte stream into lines with ``decoder`` (a ``LineDecoder``).

    ``newline``: ``None`` for universal newlines (``\\n``, ``\\r\\n``, ``\\r``; a ``\\r``
    at the end of the data is held until the next bytes, or the end, decide) or a fixed
    newline string.  ``max_line_bytes``: the limit on a line's content in source bytes.
    ``on_overlong``: ``"split"`` (pieces of at most the limit, cut at character
    boundaries, unterminated but the last), ``"truncate"`` (the first ``max_line_bytes``
    bytes), ``"skip"`` or ``"raise"`` (a ``LineTooLong`` in the line's place, as soon as
    the unfinished line passes the limit; the rest of the line is skipped).
    ``on_overlong_line(offset)`` is told of each overlong line when it is found.
    ``keepends``: each line keeps the text of its newline (an overlong line's policy adds
    it to the last piece it delivers of the line).
    ``offset``: where the stream starts in the source (a ``Utf8Decoder``'s
    ``start_offset`` must be the same).  ``head``: the source's first bytes, for a
    stream that starts later in it (a byte-order mark tells the byte order); without
    it, the stream's own first bytes tell.  ``each_offset=False``: for a reader that
    hands out no offsets (``LineSplitter``), a ``LineBatch`` carries only the offset
    after its last line, which spares an int object per line; ``records()`` then refuses.
    ``packed_offsets=True``: the offsets of a ``LineBatch`` may come packed (a
    ``memoryview`` of int64, no int object per line until one is read): for a reader that
    keeps them in bulk (the follower, whose C ``Line`` makes its offset's int on use).
    """

    def __init__(
        self,
        decoder: LineDecoder,
        *,
        newline: str | None = None,
        keepends: bool = False,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        on_overlong: str = DEFAULT_ON_OVERLONG,
        on_overlong_line: Callable[[int], object] | None = None,
        offset: int = 0,
        head: bytes | None = None,
        each_offset: bool = True,
        packed_offsets: bool = False,
    ) -> None:
        check_line_options(newline, max_line_bytes, on_overlong)
        if isinstance(decoder, Utf8LineDecoder) and decoder.decoder.position != offset:
            # The decoder's line offsets are its own: they would be taken for the engine's.
            raise ValueError(
                f"the engine starts at offset {offset} but its UTF-8 decoder at "
                f"{decoder.decoder.position}: give line_decoder() start_offset={offset}"
            )
        self.decoder = decoder
        self.each_offset = bool(each_offset)
        #: What the decoder's and the text splitter's ``each_offset`` get: 0 (the end
        #: only), 1 (a list), 2 (packed).
        self._offset_mode = (2 if packed_offsets else 1) if each_offset else 0
        self.newline = newline
        self.keepends = bool(keepends)
        self.max_line_bytes = max_line_bytes
        self.on_overlong = on_overlong
        self._max = sys.maxsize if max_line_bytes is None else max_line_bytes
        self._on_overlong_line = on_overlong_line
        #: Cut by the decoder's fast path: an ASCII newline byte, -1 for universal.
        self._sep: int | None = None
        # The fast path hands out lines without their newlines.
        one_byte = newline is None or (len(newline) == 1 and newline.isascii())
        if decoder.unit == 1 and one_byte and not self.keepends:
            self._sep = -1 if newline is None else ord(newline)
        # A newline that cannot overlap itself: its last occurrence, found from the end,
        # is one the search from the start finds (``_last_line_end``).
        plain = newline is None or not any(
            newline[:k] == newline[-k:] for k in range(1, len(newline))
        )
        self._units: Callable[[bytes], str | None] | None = (
            getattr(decoder, "decode_units", None) if plain else None
        )
        self._started = decoder.prelude == 0 or head is not None
        if head is not None:
            decoder.begin(head, resumed=offset > 0)
        if self._started:
            self._patterns()
        self._origin = offset
        self.position = offset  # the next byte
        self.line_start = offset  # the first byte of ``partial``
        self.partial = b""  # the unfinished line (at most max_line_bytes + a newline)
        self.overlong = False  # it passed the limit (truncate/raise/skip)
        self._head = ""  # truncate: its start, delivered when it ends
        self._head_offset = 0
        # split: pieces of the unfinished line went out (it was reported once already)
        self._splitting = False

    def _patterns(self) -> None:
        decoder = self.decoder
        self._unit = decoder.unit
        if self.newline is None:
            self._cr = decoder.encode_newline(_CR)
            self._lf = decoder.encode_newline(_LF)
            self._endings = {self._cr: _CR, self._lf: _LF, self._cr + self._lf: _CR + _LF}
        else:
            self._nl = decoder.encode_newline(self.newline)
            self._endings = {self._nl: self.newline}

    def _kept(self, ending: bytes) -> str:
        """What a line keeps of its newline ``ending`` (its bytes, or ``b""``)."""
        return self._endings[ending] if ending and self.keepends else ""

    # -- public API --------------------------------------------------------------------

    def feed(self, data: bytes | memoryview) -> list[LineBatch | LineItem]:
        """The next bytes; what they complete, in order.

        ``data`` may be a memoryview of bytes (a slice of a long read): the decoder's
        fast path cuts its lines where it lies, with no copy of it."""
        out: list[LineBatch | LineItem] = []
        self.position += len(data)
        if not self._started:
            self.partial += data
            if len(self.partial) < self.decoder.prelude:
                return out
            self._start()
            data, self.partial = self.partial, b""
        self._take(data, out)
        return out

    def finish(self, *, lost: int = 0, unfinished: bool = False) -> list[LineBatch | LineItem]:
        """The end of the stream: the unfinished last line is complete now.

        ``lost``: bytes after it that are gone (a gap, one U+FFFD).  ``unfinished``: the
        stream may go on later (``tail`` without ``-f``), so the line's ``end`` stays at
        its start and a checkpoint there reads it again whole.
        """
        out: list[LineBatch | LineItem] = []
        if not self._started:
            # Shorter than a byte-order mark: cut into lines like any bytes first.
            self._start()
            data, self.partial = self.partial, b""
            self._take(data, out)
        odd = len(self.partial) % self._unit
        if odd and self.newline is None and self.partial.endswith(self._cr, 0, -odd):
            # The held \r is followed by a torn code unit: it ended its line after all,
            # and the torn unit is a last line of its own.
            cut = len(self.partial) - odd
            self._complete_line(self.partial[: cut - self._unit], self._cr, self.line_start, out)
            self.line_start += cut
            self.partial = self.partial[cut:]
        decoder = self.decoder
        partial = self.partial
        ending = b""
        # A newline's bytes count only at a code unit (the line starts at one): after
        # an odd byte of UTF-16 they are parts of two units.
        aligned = len(partial) % self._unit == 0
        if self.newline is None and aligned and partial.endswith(self._cr):
            ending = self._cr  # the held \r was a line end after all
        elif self.newline is not None and aligned and partial.endswith(self._nl):
            ending = self._nl
        ended = bool(ending)
        content = partial[: len(partial) - len(ending)]
        if not self.overlong and len(content) > self._max:
            # The bytes held as the possible start of a newline are content after all,
            # and make the line overlong.
            self._finish_overlong(content, ending, lost, unfinished, out)
            self._reset_line()
            return out
        text = decoder.decode_line(content, ending)
        if lost:
            decoder.mark_gap(lost=lost)
        text += decoder.decode(b"", final=True)
        if unfinished:
            end = self._head_offset if self.overlong else self.line_start
        else:
            end = self.position
        if self.overlong:
            if self.on_overlong == "truncate":
                head = self._head + self._kept(ending)
                out.append(LineItem(head, self._head_offset, end, False, ended))
            else:
                out.append(LineItem(None, end, end, False, True))
        elif partial and not (
            self.line_start == self._origin
            and len(partial) <= decoder.prelude
            and not text
            and not ended
        ):
            # Lost bytes alone make no line (the gap is the decoder's to report), and
            # neither does a byte-order mark alone (a newline as short is a line).
            text += self._kept(ending)
            out.append(LineItem(text, self.line_start, end, False, ended))
        self._reset_line()
        return out

    def _reset_line(self) -> None:
        self.partial = b""
        self.overlong = False
        self._splitting = False
        self.line_start = self.position

    def records(self, items: list[LineBatch | LineItem]) -> Iterator[ByteLine]:
        """``items`` as ``ByteLine`` records, in order; skipped lines left out.

        A ``LineTooLong`` (``on_overlong="raise"``) is raised where the line was, after
        the records before it; iterate again over the items after it to go on.
        """
        if not self.each_offset:
            raise ValueError("records() needs an engine made with each_offset=True")
        for item in items:
            if isinstance(item, LineBatch):
                offsets = item.offsets
                for k, text in enumerate(item.texts):
                    yield ByteLine(text, offsets[k], offsets[k + 1])
            elif isinstance(item.line, LineTooLong):
                raise item.line
            elif item.line is not None:
                yield ByteLine(item.line, item.offset, item.end, item.terminated)

    def cut_unfinished(self) -> list[LineBatch | LineItem]:
        """The unfinished line's bytes so far as a piece of it, for a reader that shows
        a line before its end comes (``tail -f``): one ``LineItem``, mid-line and not
        terminated, or nothing.

        Bytes that may begin a newline, or a character the next bytes may complete,
        stay held; so does a line past the limit under a policy other than
        ``"split"``.  The rest of the line comes as the next line, from the offset
        after the piece (a checkpoint there resumes with no gap), and the limit counts
        from there: the pieces joined are the line.
        """
        if not self._started or self.overlong:
            return []
        held = self.partial
        body = len(held) - self._newline_start(held)
        body -= _incomplete_tail(self.decoder, held[:body])
        if body <= 0 or (self.line_start == self._origin and body <= self.decoder.prelude):
            return []  # (a byte-order mark alone is no text yet)
        text = self.decoder.decode(held[:body])
        start = self.line_start
        self.line_start += body
        self.partial = held[body:]
        return [LineItem(text, start, start + body, True, False)]

    @property
    def buffered(self) -> int:
        """Bytes held of the unfinished line, plus the characters of a truncated head
        waiting for the line's end."""
        return len(self.partial) + (len(self._head) if self.overlong else 0)

    @property
    def newline_width(self) -> int:
        """The longest newline, in bytes."""
        if self.newline is None:
            return len(self._cr) + len(self._lf)
        return len(self._nl)

    def starts_line(self, before: bytes) -> bool:
        """Whether a line starts just after ``before`` (the bytes that precede it)."""
        if self.newline is None:
            return before.endswith((self._cr, self._lf))
        return before.endswith(self._nl)

    def slice_end(self, data: bytes, start: int, end: int) -> int:
        """Where to end the slice ``data[start:end]`` of a long read that is fed in
        slices (``data[start]`` being the next byte to feed): just past the slice's last
        ``\n`` newline (``newline``'s, if fixed), so that nothing is held after it and
        the next slice is not joined to a held line; with universal newlines, just past
        the unit that follows a ``\r`` after it, if one does before ``end`` (a unit
        other than ``\n``: the engine then knows the ``\r`` ended its line and holds
        only that unit, where a ``\r`` at a slice's end would be held, as the start of
        a ``\r\n`` perhaps); ``end`` if there is none.  Only where the slices end
        changes; any ends give the same lines, and the same checkpoints.
        """
        if not self._started:
            return end
        nl = self._lf if self.newline is None else self._nl
        unit = self._unit
        # A newline counts at a code unit: a multiple of ``unit`` from the line's start.
        shift = self.position - self.line_start - start
        at = linesearch.last_unit(data, nl, start, end, unit, shift)
        found = at + len(nl) if at >= start else -1
        if self.newline is None:
            # Universal newlines: a \r after the last \n, followed by a unit before
            # ``end`` (so not the first half of \r\n: the \n would have been found),
            # ends a line too.  Otherwise a log of \r line ends with rare \n would have
            # each long read cut at its last \n, and all after it read again.  The
            # slice ends past the unit after the \r, not past the \r: fed that unit,
            # the engine knows the \r ended its line (a \r at a slice's end is held,
            # as it may start a \r\n), so a line stopped there (``on_overlong``
            # "raise") has its checkpoint after its \r, and only that unit is held.
            lo = max(found, start)
            # (A negative end would count from the end of ``data``: none then.)
            cr = -1
            if end >= unit:
                cr = linesearch.last_unit(data, self._cr, lo, end - unit, unit, shift)
            if cr >= lo:
                found = cr + 2 * unit
        return found if found >= 0 else end

    def line_ends(self, data: bytes) -> list[int]:
        """Offsets in ``data`` (which starts on a code unit) just past each newline; with
        universal newlines a ``\\r`` at the end counts as one."""
        return [after for _, after in self._line_ends(data, hold_cr=False)]

    def newlines(self, data: bytes) -> list[tuple[int, int]]:
        """``(start, end)`` of each newline in ``data`` (which starts on a code unit), as
        ``line_ends`` finds them."""
        return self._line_ends(data, hold_cr=False)

    # -- cutting -----------------------------------------------------------------------

    def _start(self) -> None:
        self.decoder.begin(self.partial)
        self._started = True
        self._patterns()

    def _line_ends(
        self, buf: bytes, hold_cr: bool = True, start: int = 0
    ) -> list[tuple[int, int]]:
        """``(content end, next line start)`` for each complete line in ``buf``, looked
        for from ``start`` on (a code-unit offset; the bytes before it hold none)."""
        nl = (self._cr, self._lf) if self.newline is None else self._nl
        return linesearch.line_ends(buf, nl, self._unit, start, hold_cr)

    def _newline_start(self, data: bytes) -> int:
        """How many bytes at the end of ``data`` may be the first part of a newline, or
        of the code unit after which it could start."""
        odd = len(data) % self._unit
        if odd:
            return odd + self._newline_start(data[:-odd]) if len(data) > odd else odd
        if self.newline is None:
            return len(self._cr) if data.endswith(self._cr) else 0
        nl = self._nl
        for size in range(len(nl) - self._unit, 0, -self._unit):
            if data.endswith(nl[:size]):
                return size
        return 0

    def _take(self, data: bytes | memoryview, out: list[LineBatch | LineItem]) -> None:
        """Cut newly read bytes into lines, appending the complete ones to ``out``."""
        base = self.line_start
        sep = self._sep
        lines = None
        if sep is not None and not self.overlong:
            # The hot path: the decoder cuts and decodes the complete lines in one pass,
            # and stops before an overlong one, which the code below handles.
            lines = self.decoder.decode_lines(
                self.partial, data, sep, self._max, self._offset_mode
            )
        if lines is not None:
            texts, offsets = lines
            if texts:
                out.append(LineBatch(texts, offsets))
                self._splitting = False
            used, held = offsets[-1] - base, len(self.partial)
            rest = data[used - held :] if used >= held else self.partial[used:] + data
            buf = rest if type(rest) is bytes else bytes(rest)  # (nothing, mostly)
            base = offsets[-1]
        else:
            buf = self.partial + data if self.partial else bytes(data)
        self._take_rest(buf, base, out)

    def _take_rest(self, buf: bytes, base: int, out: list[LineBatch | LineItem]) -> None:
        """``_take`` after the fast path: ``buf`` (at ``base``) is what it left, the held
        bytes and the new ones, or the bytes after the lines it cut."""
        # The held bytes were searched already: only their possible newline start is
        # looked at again (a long line is not searched over and over).
        scanned = 0
        if base == self.line_start:  # ``buf`` starts with them
            scanned = len(self.partial) - self._newline_start(self.partial)
        pos = 0
        if self._units is not None and not self.overlong:
            pos = self._take_units(buf, base, scanned, out)
        if not pos:
            ends = self._line_ends(buf, start=scanned)
            pos = self._take_block(buf, base, ends, out) if ends and not self.overlong else 0
            if not pos:
                for end, after in ends:
                    self._complete_line(buf[pos:end], buf[end:after], base + pos, out)
                    pos = after
        rest = buf[pos:]
        self.line_start = base + pos
        # Bytes at the end that may be the start of a newline (a "\r" before a "\n" still
        # to come) are not the line's: they stay, to be seen with the next bytes.
        body = len(rest) - self._newline_start(rest)
        if self.overlong:
            self.decoder.decode(rest[:body])  # the middle of an overlong line: events only
            self.line_start += body
            rest = rest[body:]
        elif body > self._max:
            rest = self._overlong_unfinished(rest, body, out)
        self.partial = rest

    # The rest of the engine, by responsibility, in modules of their own.
    _finish_overlong = _lineoverlong.finish_overlong
    _complete_line = _lineoverlong.complete_line
    _overlong_unfinished = _lineoverlong.overlong_unfinished
    _found_overlong = _lineoverlong.found_overlong
    _split_pieces = _lineoverlong.split_pieces
    feed_slice = _linebulk.feed_slice
    feed_cut = _linebulk.feed_cut
    _take_units = _linebulk.take_units
    _last_line_end = _linebulk.last_line_end
    _take_block = _linebulk.take_block


def _incomplete_tail(decoder: LineDecoder, data: bytes) -> int:
    """How many bytes at the end of ``data`` (which starts on a character) begin a
    character that the next bytes may complete."""
    if isinstance(decoder, Utf8LineDecoder):
        for size in (3, 2, 1):
            if len(data) >= size and is_proper_prefix(data[-size:]):
                return size
        return 0
    odd = len(data) % decoder.unit
    if isinstance(decoder, CodecLineDecoder):
        # The codec's own incremental decoder holds back exactly such bytes.
        probe = incremental_decoder(decoder.codec, "replace")
        probe.decode(data[: len(data) - odd])
        return odd + len(probe.getstate()[0])
    return odd
