"""The line splitter: text or bytes in, lines out.  A consumer of the line engine, no I/O.

Theory of operation
-------------------
``LineSplitter`` cuts nothing itself: the core's ``LineEngine`` (``linecodec``) owns the
newline modes, ``max_line_bytes`` and the overlong-line policies for every line reader.
The splitter gives the engine bytes through one ``LineDecoder`` of its own,
``_SplitterSource``, and turns what the engine hands out into a list of lines (and
``LineTooLong`` instances in the place of overlong lines under ``on_overlong="raise"``;
the adapter raises them when the caller gets there, which keeps the lines before and
after one).

* ``feed_bytes(decoder, data)``: the source's bytes themselves go to the engine, which
  decodes each line with ``decoder`` when the line is complete (in bulk, through the
  scanner's fast path, with ``errors="replace"``).  ``max_line_bytes`` counts source
  bytes, as for every reader: a malformed byte counts one, though its U+FFFD is three
  in UTF-8, and memory is bounded by the limit in the source.
* ``feed(text)``: the text's UTF-8 form (lone surrogates three bytes each, like
  ``surrogatepass``) goes to the engine, which decodes it back; the limit then counts
  those bytes, which are the source bytes when the text was decoded from UTF-8.

Both may be mixed in one stream (``LineReceiveStream`` does, at the end of its source, and
after a gap or an error): ``sync_decoder()`` decodes the bytes of the unfinished line the
engine still holds, so that the decoder has seen every byte before it is used elsewhere,
and what the engine holds is text from then on.  Per line, ``feed_bytes`` costs what the
engine's fast path costs; per call, a few attribute lookups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._bytes import character_count, is_continuation
from .autodecode import DEFAULT_MAX_LOOKAHEAD, is_auto
from .autodoubt import OnDoubt
from .autolines import AutoLineEngine
from .decoder import Utf8Decoder, stream_mark
from .linecodec import LineBatch, LineEngine, LineItem, Utf8LineDecoder, line_decoder
from .lineoptions import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_ON_OVERLONG,
    OVERLONG_POLICIES,
    LineTooLong,
    check_line_options,
)
from .transformed import LineTransform, as_transform

if TYPE_CHECKING:
    from .decoder import DecodedLines
    from .transformed import Transforms

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_ON_OVERLONG",
    "OVERLONG_POLICIES",
    "LineSplitter",
    "LineSplitterStatistics",
    "LineTooLong",
    "check_line_options",
]

# Error policies with which a ``Utf8Decoder`` never raises: its bytes can wait in the
# engine until their line is complete.  With others (``strict``, a handler of the
# caller's) an error must surface with the chunk that holds it, as ``decode`` raises it.
_NEVER_RAISE = frozenset({"replace", "ignore", "surrogateescape", "backslashreplace"})


@dataclass(frozen=True)
class LineSplitterStatistics:
    """What a splitter has seen so far."""

    chars_in: int = 0
    lines: int = 0
    overlong_lines: int = 0


class _SplitterSource:
    """The splitter's ``LineDecoder``: a ``Utf8Decoder``'s bytes, or text as UTF-8.

    ``raw``: the decoder of the bytes ``feed_bytes`` gives (``None``: text only).  The
    first ``text_left`` bytes the engine has not decoded yet came from text (the held
    start of a line when the splitter went from text to bytes); they are decoded back
    to that text, the rest by ``raw``.  The engine decodes every byte once, in order, so
    a count is all it takes.
    """

    unit = 1
    prelude = 0
    encoding = "utf-8"

    def __init__(self) -> None:
        self.raw: Utf8LineDecoder | None = None
        self.text_left = 0
        #: Whether ``raw``'s positions are not the engine's (text was fed before the
        #: bytes, or another decoder): its lines' offsets would not be the engine's, so
        #: the engine cuts them itself (``decode_lines`` declines).
        self.shifted = False
        #: The end of the stream finishes ``raw`` too (after ``feed_bytes(final=True)``).
        self.finishing = False
        #: Text's own bytes decoded back; they are well-formed, or with a lone surrogate
        #: of the text (``encode_text``) ``surrogatepass`` bytes, read by a decoder
        #: that makes them the surrogate again from then on.
        self._text = Utf8Decoder("strict")

    def begin(self, head: bytes, resumed: bool = False) -> None:
        pass

    def encode_newline(self, text: str) -> bytes:
        return self.encode_text(text)

    def encode_text(self, text: str) -> bytes:
        """The UTF-8 of text, a lone surrogate three bytes (``surrogatepass``)."""
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            if self._text.errors != "surrogatepass":
                # Nothing held is lost: the held prefix of a character moves over.
                passing = Utf8Decoder("surrogatepass")
                passing.setstate(self._text.getstate())
                self._text = passing
            return text.encode("utf-8", "surrogatepass")

    def decode(self, data: bytes, final: bool = False) -> str:
        raw = self.raw
        left = self.text_left
        if raw is None:
            return self._text.decode(data, final)
        final = final and self.finishing
        if not left:
            return raw.decode(data, final)
        if len(data) < left or (len(data) == left and not final):
            self.text_left = left - len(data)
            return self._text.decode(data)
        self.text_left = 0
        return self._text.decode(data[:left], True) + raw.decode(data[left:], final)

    def decode_line(self, content: bytes, ending: bytes) -> str:
        # A newline is whole, and ends whatever was held: the text ends with it.
        text = self.decode(content + ending)
        return text[: len(text) - character_count(ending)]

    def decode_piece(self, data: bytes, after: int) -> str:
        text = self.decode(data)
        if self.raw is not None and not self.text_left:  # the piece ends in the bytes
            text += self.raw.decoder.end_pending(after)
        return text

    def cut(self, data: bytes, limit: int) -> int:
        raw = self.raw
        if raw is not None and self.text_left < min(limit, len(data)):
            return raw.cut(data, limit)
        # Text: a lone surrogate (ED A0..BF xx) is a character here, not malformed bytes.
        cut = min(limit, len(data))
        while cut < len(data) and cut > 0 and is_continuation(data[cut]):
            cut -= 1
        return cut or limit

    def mark_gap(self, lost: int | None = None) -> None:
        # A splitter's engine is never told of a gap itself (its user marks gaps on the
        # Utf8Decoder, after sync_decoder()); this keeps the LineDecoder contract for
        # the bytes, where a gap can be, and refuses one inside text, where none can.
        if self.raw is None or self.text_left:
            raise ValueError("no gap in text: mark it on the Utf8Decoder of the bytes")
        self.raw.mark_gap(lost)

    def decode_lines(
        self,
        head: bytes,
        data: bytes | memoryview,
        sep: int,
        limit: int,
        each_offset: int = True,
    ) -> DecodedLines | None:
        raw = self.raw
        if raw is None or self.text_left or self.shifted:
            return None
        return raw.decode_lines(head, data, sep, limit, each_offset)

    def text_split_exact(self, newline: str | None) -> bool:
        raw = self.raw
        return raw is None or raw.text_split_exact(newline)


class LineSplitter:
    """Splits text or bytes, fed in pieces of any size, into lines (with ``LineEngine``).

    ``newline``: ``None`` for universal newlines (``\\n``, ``\\r\\n`` and ``\\r``; a ``\\r``
    at the end of a piece is held until the next piece, or the end, decides), or any
    non-empty string used as a fixed delimiter (``"\\n"``, ``"\\r\\n"``, ``"\\0"``, ...),
    which may be split across pieces.

    ``keepends``: keep each line's newline (the overlong-line policies add it to the last
    piece they deliver of that line).

    ``max_line_bytes``: limit on a line's content in source bytes (at least 4, so that
    any character fits; ``None`` for no limit): the bytes ``feed_bytes`` gave, and for
    text given to ``feed``, its UTF-8 bytes (a lone surrogate three).  ``on_overlong``:
    ``"raise"`` (a ``LineTooLong`` takes the line's place in the output), ``"truncate"``
    (the line's first ``max_line_bytes`` bytes, cut at a character boundary), ``"split"``
    (pieces of at most ``max_line_bytes`` bytes, cut at character boundaries) or
    ``"skip"``.  Only the content decides, so the same input gives the same lines and
    the same errors however it is cut into pieces.

    ``encoding``: what ``feed_encoded`` takes: UTF-8 (the default; decoded by a
    ``Utf8Decoder`` of the splitter's own, with ``errors``), a codec name (the line
    engine's ``line_decoder``; ``keepends`` is for UTF-8 only), or ``"auto"``: the
    encoding is detected on the first bytes, at most ``max_lookahead`` (an
    ``AutoLineEngine``; ``on_doubt`` as for ``AutoDecoder``).  A splitter of another
    encoding than UTF-8 takes bytes only, and ``flush()`` ends its input.

    ``transforms``: a ``TextTransform`` (``utf8stream.transforms``) or a sequence of them,
    done in order, on each line: the line's text is transformed whole (``final=True``), its
    newline kept out of the transform (and put back with ``keepends``); a newline is a
    boundary for every transform utf8stream ships, so nothing is carried from one line to
    the next.  A piece of a split or truncated overlong line is transformed as a line;
    a ``LineTooLong`` is left as it is.  ``line_transform`` applies them.
    """

    def __init__(
        self,
        *,
        newline: str | None = None,
        keepends: bool = False,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        on_overlong: str = DEFAULT_ON_OVERLONG,
        encoding: str = "utf-8",
        errors: str = "replace",
        max_lookahead: int = DEFAULT_MAX_LOOKAHEAD,
        on_doubt: OnDoubt | None = None,
        transforms: Transforms = None,
    ) -> None:
        check_line_options(newline, max_line_bytes, on_overlong)
        transform = as_transform(transforms)
        #: What each line goes through (``transforms=``), if anything.
        self.line_transform = (
            None if transform is None else LineTransform(transform, newline, bool(keepends))
        )
        self.newline = newline
        self.keepends = bool(keepends)
        self.max_line_bytes = max_line_bytes
        self.on_overlong = on_overlong
        self.encoding = encoding
        self._source = _SplitterSource()
        options: dict[str, Any] = {
            "newline": newline,
            "keepends": self.keepends,
            "max_line_bytes": max_line_bytes,
            "on_overlong": on_overlong,
            "on_overlong_line": self._found_overlong,
            "each_offset": False,  # a splitter hands out text only
        }
        self._engine = LineEngine(self._source, **options)
        #: The bytes of ``feed_encoded``: UTF-8 through ``feed_bytes`` and this decoder;
        #: another encoding through an engine of its own.
        self._utf8: Utf8Decoder | None = None
        self._coded: LineEngine | AutoLineEngine | None = None
        if is_auto(encoding):
            self._coded = AutoLineEngine(
                errors, max_lookahead=max_lookahead, on_doubt=on_doubt, **options
            )
        else:
            decoder = line_decoder(encoding, errors)
            if isinstance(decoder, Utf8LineDecoder):
                self._utf8 = decoder.decoder
            elif keepends:
                raise ValueError("keepends is for UTF-8 only")
            else:
                self._coded = LineEngine(decoder, **options)
        self._chars_in = 0
        #: ``raw``'s decoder's position and state after the splitter last used it: if
        #: they changed, someone else decoded with it (or marked a gap), out of order.
        self._raw_mark: tuple[int, tuple[bytes, int]] | None = None
        #: ``raw``'s decoder's ``chars_out`` when it was attached.
        self._chars_base = 0
        #: ``feed_bytes`` was told the decoder's input ends (it is finished with the line).
        self._final = False
        self._lines = 0
        self._overlong_lines = 0

    # -- public API ------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Bytes held for the current line (at most ``max_line_bytes`` and the start of a
        newline), plus the characters of a truncated line's head; with ``"auto"``, until
        the encoding is decided, the bytes the detector holds."""
        return (self._coded or self._engine).buffered

    @property
    def source_encoding(self) -> str | None:
        """The encoding of ``feed_encoded``'s bytes: the one given, or with ``"auto"`` the
        one detected (None until decided)."""
        if isinstance(self._coded, AutoLineEngine):
            return self._coded.encoding
        return self.encoding

    @property
    def overlong_lines(self) -> int:
        """Lines found longer than ``max_line_bytes`` so far, whatever the policy."""
        return self._overlong_lines

    def feed(self, text: str) -> list[str | LineTooLong]:
        """Add text; return what it completes, in order.

        Items are lines, and under ``on_overlong="raise"`` a ``LineTooLong`` in the place
        of each overlong line (for an unfinished line, as soon as its content passes the
        limit; the rest of it is then skipped).
        """
        self._text_or_utf8()
        if self._source.raw is not None:
            self.sync_decoder()
        self._chars_in += len(text)
        if not text:
            return []
        return self._lines_of(self._engine.feed(self._source.encode_text(text)))

    def feed_bytes(
        self, decoder: Utf8Decoder, data: bytes, final: bool = False
    ) -> list[str | LineTooLong]:
        """Add the next bytes of a stream ``decoder`` decodes; return what they complete.

        The engine cuts the bytes at their newlines and decodes each complete line with
        ``decoder`` (the lines of a chunk in one pass of its scanner where it can), so
        ``max_line_bytes`` counts source bytes, and the decoder sees the bytes of the
        unfinished line only when it ends: call ``sync_decoder()`` before using the
        decoder elsewhere (a ``RuntimeError`` says so otherwise).  ``final``: the
        decoder's input ends here; it is finished with the last line, by ``flush()``.
        With a policy that raises (``errors="strict"``) or an ``on_malformed``
        callback, an error must come with its chunk: this is then
        ``feed(decoder.decode(data, final))``.
        """
        # (``on_malformed``'s getter, and ``_check_raw`` and ``_mark``, read here without
        # a Python call each: this runs once per chunk of a line stream.)
        if self._coded is not None:
            self._text_or_utf8()
        if decoder.errors not in _NEVER_RAISE or decoder.on_malformed is not None:
            return self.feed(decoder.decode(data, final))
        source = self._source
        raw = source.raw
        if raw is None or raw.decoder is not decoder or self._final:
            self.sync_decoder()
            source.raw = Utf8LineDecoder(decoder)
            source.text_left = len(self._engine.partial)
            source.shifted = self._engine.position != decoder.position
            self._chars_base = decoder.statistics().chars_out
        elif stream_mark(decoder) != self._raw_mark:
            self._check_raw(decoder)  # raises
        cut = None
        # Not while text fed before is still to decode, nor where the decoder's positions
        # are not the engine's (``shifted``): the engine then cuts the lines itself.
        if not (source.text_left or source.shifted or not data):
            # The source passes the bytes through: the decoder's ``decode_lines`` cuts
            # them (None where it cannot: the engine's own way below).
            cut = self._engine.feed_cut(decoder.decode_lines, data)
        if cut is not None:
            out, more = cut
            self._lines += len(out)
            if self.line_transform is not None:
                self.line_transform.lines(out)
            if more:
                out += self._lines_of(more)
        else:
            out = self._lines_of(self._engine.feed(data)) if data else []
        self._raw_mark = stream_mark(decoder)
        self._final = final
        return out

    def feed_encoded(self, data: bytes | memoryview) -> list[str | LineTooLong]:
        """Add the next bytes of the input in ``encoding``; return what they complete
        (with ``"auto"``, nothing until the encoding is decided: then the lines of all
        the bytes held)."""
        if self._coded is None:
            assert self._utf8 is not None
            return self.feed_bytes(self._utf8, bytes(data))
        return self._lines_of(self._coded.feed(data))

    def sync_decoder(self) -> None:
        """Hand the bytes ``feed_bytes`` left in the unfinished line to their decoder
        (and finish it after a ``final``), so that it has seen every byte fed, in order.

        The splitter keeps the rest of the line as text (its limit counts the text's
        UTF-8 bytes from then on), and goes on with ``feed`` or ``feed_bytes`` alike.
        """
        source = self._source
        raw = source.raw
        if raw is None:
            return
        self._check_raw(raw.decoder)
        engine = self._engine
        held = engine.partial[source.text_left :]
        if held or self._final:
            text = source.encode_text(raw.decode(held, self._final))
            # Only its length changes (offsets are not the splitter's to hand out).
            engine.partial = engine.partial[: source.text_left] + text
            engine.position = engine.line_start + len(engine.partial)
        self._detach()

    def flush(self) -> list[str | LineTooLong]:
        """End of input: return the final line, if any, and start afresh.

        A decoder ``feed_bytes`` uses is finished only after ``final=True``; otherwise
        it keeps what it holds, and may go on.
        """
        if self._coded is not None:
            return self._lines_of(self._coded.finish())
        source = self._source
        raw = source.raw
        if raw is not None and raw.decoder is self._utf8 and not self._final:
            # ``feed_encoded``'s decoder: its input ends here.
            self.feed_bytes(raw.decoder, b"", True)
        if raw is None:
            return self._lines_of(self._engine.finish())
        # The last line, judged in source bytes like any other.
        self._check_raw(raw.decoder)
        source.finishing = self._final
        out = self._lines_of(self._engine.finish())
        self._detach()
        return out

    def statistics(self) -> LineSplitterStatistics:
        """Characters fed, lines returned (pieces of split lines included), overlong lines."""
        chars = self._chars_in
        raw = self._source.raw
        if raw is not None:
            chars += raw.decoder.statistics().chars_out - self._chars_base
        return LineSplitterStatistics(chars, self._lines, self._overlong_lines)

    def _detach(self) -> None:
        """The decoder has seen every byte: what the engine holds is text from now on."""
        source = self._source
        assert source.raw is not None
        self._chars_in += source.raw.decoder.statistics().chars_out - self._chars_base
        source.raw = None
        source.text_left = 0
        source.finishing = self._final = False

    def _text_or_utf8(self) -> None:
        if self._coded is not None:
            raise TypeError(
                f"a splitter of {self.encoding} bytes takes them by feed_encoded(), not"
                " text or a UTF-8 decoder's bytes"
            )

    def _check_raw(self, decoder: Utf8Decoder) -> None:
        if stream_mark(decoder) != self._raw_mark:
            raise RuntimeError(
                "the decoder was used while the splitter held bytes of the line for it:"
                " call sync_decoder() first, or end with feed_bytes(decoder, b'', True)"
            )

    # -- the engine's output ---------------------------------------------------------

    def _found_overlong(self, offset: int) -> None:
        self._overlong_lines += 1

    def _lines_of(self, items: list[LineBatch | LineItem]) -> list[str | LineTooLong]:
        if len(items) == 1 and type(items[0]) is LineBatch:
            texts: list[str | LineTooLong] = items[0].texts  # type: ignore[assignment]
            self._lines += len(texts)
            return texts if self.line_transform is None else self.line_transform.lines(texts)
        out: list[str | LineTooLong] = []
        lines = 0
        for item in items:
            if type(item) is LineBatch:
                out += item.texts
                lines += len(item.texts)
            else:
                line = item.line  # type: ignore[union-attr]
                if line is not None:
                    out.append(line)
                    lines += type(line) is str
        self._lines += lines
        return out if self.line_transform is None else self.line_transform.lines(out)
