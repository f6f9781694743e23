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
Newlines are searched with ``bytes.find`` (memchr), never with a regular expression,
and the unfinished line held between reads is not searched again.

``LineEngine`` owns everything else, once: the newline modes (``None`` = universal
``\\n``/``\\r\\n``/``\\r``, or a fixed newline string), ``max_line_bytes`` (a limit on a
line's content in *source* bytes) and the overlong-line policies.  It holds at most the
unfinished line (bounded by the limit) between calls.
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from ._accel import ACCEL_MAX_POSITION, implementation
from ._bytes import is_proper_prefix
from .boundaries import char_start, cut_at_boundary
from .lineoptions import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_ON_OVERLONG,
    LineTooLong,
    check_line_options,
)

if TYPE_CHECKING:
    from .decoder import DecodedLines, Utf8Decoder
    from .events import Malformed

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

_CR = "\r"
_LF = "\n"
_UNIVERSAL_TEXT = re.compile("\r\n|\r|\n")
_UNIVERSAL_KEPT = re.compile("(\r\n|\r|\n)")
# Codecs whose newline byte is not self-delimiting: shift states (ISO-2022, HZ, UTF-7)
# or escapes that decode to a newline.
_REFUSED = re.compile(r"iso2022|hz|utf_7|unicode_escape|idna|punycode|undefined")


@runtime_checkable
class LineDecoder(Protocol):
    """What the line engine needs of a decoder: the interface a new encoding implements.

    ``unit``: the code-unit size in bytes; a newline is found only at a multiple of it
    from the start of the stream.  ``prelude``: how many bytes ``begin`` wants to see
    before the byte order is known (a byte-order mark), else 0.
    """

    @property
    def encoding(self) -> str: ...

    @property
    def unit(self) -> int: ...

    @property
    def prelude(self) -> int: ...

    def begin(self, head: bytes, resumed: bool = False) -> None:
        """The first bytes of the stream (``prelude`` of them, or all there ever are).

        ``resumed``: decoding starts later in the stream, not at ``head``."""

    def encode_newline(self, text: str) -> bytes:
        """The bytes of ``text`` (a newline); ``ValueError`` if they are not self-delimiting."""

    def decode(self, data: bytes, final: bool = False) -> str:
        """Decode the next bytes of the stream, incrementally."""

    def decode_line(self, content: bytes, ending: bytes) -> str:
        """The text of the rest of a line, ``content``, which ``ending`` (its newline's
        bytes, or ``b""`` at the end) ends: nothing stays held after it."""

    def cut(self, data: bytes, limit: int) -> int:
        """The longest prefix of ``data`` (which starts on a character) of at most
        ``limit`` bytes that ends on a character boundary; at least one code unit."""

    def decode_piece(self, data: bytes, after: int) -> str:
        """``decode(data)`` for a piece of a line (cut by ``cut``) whose next byte is
        ``after``: a malformed unit at its end is decided by that byte now, so the text
        of the piece is all of it (the piece's own U+FFFD is not left to the next)."""

    def mark_gap(self, lost: int | None = None) -> None:
        """Bytes are missing here (``lost`` of them if known): the next text starts
        with one U+FFFD, and decoding starts afresh."""

    def decode_lines(
        self,
        head: bytes,
        data: bytes | memoryview,
        sep: int,
        limit: int,
        each_offset: int = True,
    ) -> DecodedLines | None:
        """The fast path: the complete lines at the start of ``head + data``, decoded, or
        ``None`` (then the engine cuts and decodes them itself).  See
        ``Utf8Decoder.decode_lines`` (``each_offset``: 0, 1, or 2 for packed offsets)."""

    def text_split_exact(self, newline: str | None) -> bool:
        """Whether decoded text has exactly the newlines its bytes have (no replacement
        makes one, none is hidden by dropping bytes around it)."""


def _text_split_exact(errors: str, newline: str | None) -> bool:
    """The rule for the standard error policies (see ``LineDecoder.text_split_exact``).

    A replacement may contain newline characters (U+FFFD or ``\\xff`` with an unusual
    delimiter), and ``"ignore"`` joins the text around a dropped byte (``\\r`` + bad
    byte + ``\\n`` becomes one ``\\r\\n``).  Surrogate escapes never match.
    """
    if newline is None:
        return errors != "ignore"
    produced = {"replace": "\ufffd", "backslashreplace": "\\x0123456789abcdef"}.get(errors, "")
    if errors == "ignore" and len(newline) > 1:
        return False
    return not set(produced) & set(newline)


class Utf8LineDecoder:
    """``LineDecoder`` for UTF-8, over a ``Utf8Decoder`` (events, statistics, gaps)."""

    unit = 1
    prelude = 0
    encoding = "utf-8"

    def __init__(self, decoder: Utf8Decoder) -> None:
        self.decoder = decoder
        self.decode = decoder.decode
        self.decode_lines = decoder.decode_lines
        self.mark_gap = decoder.mark_gap

    def begin(self, head: bytes, resumed: bool = False) -> None:
        pass

    def decode_line(self, content: bytes, ending: bytes) -> str:
        # A newline is valid and ends any held prefix: the text ends with its characters.
        text = self.decode(content + ending)
        width = len(ending) if ending.isascii() else len(ending.decode("utf-8"))
        return text[: len(text) - width]

    def encode_newline(self, text: str) -> bytes:
        # Every encoded character is self-delimiting in UTF-8.
        return text.encode("utf-8")

    def cut(self, data: bytes, limit: int) -> int:
        cut = cut_at_boundary(data, limit)
        # A malformed unit that starts like a character is held by the decoder until the
        # byte after it: a cut just after it would give the piece's U+FFFD to the next
        # piece.  Cut before it instead (unless it is all there is), and before the
        # one that may then end the piece.
        if cut < len(data):
            while cut > 0:
                start = char_start(data, cut - 1)
                if not (start and is_proper_prefix(data[start:cut])):
                    break
                cut = start
        return cut or limit

    def decode_piece(self, data: bytes, after: int) -> str:
        return self.decode(data) + self.decoder.end_pending(after)

    def text_split_exact(self, newline: str | None) -> bool:
        return _text_split_exact(self.decoder.errors, newline)


def _codec_name(encoding: str) -> str:
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None
    # ``_is_text_encoding`` is how the codecs module itself tells text codecs from others.
    if not getattr(info, "_is_text_encoding", True):
        raise ValueError(f"{info.name!r} is not a text encoding")
    return info.name.replace("-", "_")


_UNIT_CODECS = {
    "utf_16": 2,
    "utf_16_le": 2,
    "utf_16_be": 2,
    "utf_32": 4,
    "utf_32_le": 4,
    "utf_32_be": 4,
}


@lru_cache(maxsize=64)
def _holds_bytes(name: str) -> bool:
    """Whether a decoder of ``name`` ever holds a byte back (a multi-byte codec)."""
    for x in range(256):
        if not codecs.getincrementaldecoder(name)("replace").decode(bytes([x])):
            return True
    return False


#: Error policies under which a code unit decodes to at most one character.
_ONE_CHAR_ERRORS = frozenset({"strict", "replace", "ignore"})


@lru_cache(maxsize=64)
def _one_char_bytes(name: str) -> bool:
    """Whether every byte on its own decodes to exactly one character in ``name``
    (an undefined one to one U+FFFD); with ``_holds_bytes`` false: a single-byte codec."""
    return all(len(bytes([x]).decode(name, "replace")) == 1 for x in range(256))


@lru_cache(maxsize=64)
def _self_delimiting(name: str, newlines: bytes) -> bool:
    """Whether each byte of ``newlines`` is never part of a longer character in ``name``.

    Tried exhaustively after every prefix the codec holds back (lead bytes, and for
    GB18030 its two- and three-byte prefixes): each prefix followed by a newline byte
    must still decode to that newline.  One decode of all of them at a time: a newline
    taken into a character is missing from the count.
    """
    held = [b""]
    for depth in range(3):  # a character is at most four bytes
        # A prefix with a newline in it is no prefix: that newline ended the line.
        candidates = [
            prefix + bytes([byte])
            for prefix in held
            for byte in range(256)
            if byte not in newlines
        ]
        for newline in newlines:
            ending = bytes([newline]) + b"A"  # an ASCII letter: the next prefix starts afresh
            text = ending.join(candidates).decode(name, "replace") + ending.decode(name)
            if text.count(ending.decode(name)) != len(candidates):
                return False
        held = [c for c in candidates if depth < 2 and _incomplete(c, name)]
        if not held:
            break
    return True


def _incomplete(data: bytes, name: str) -> bool:
    """Whether ``data`` is the start of a longer character in ``name``."""
    try:
        data.decode(name)
    except UnicodeDecodeError as exc:
        return exc.start == 0 and exc.end == len(data) and "incomplete" in exc.reason
    return False


class CodecLineDecoder:
    """``LineDecoder`` for any Python text codec whose newlines can be found in its bytes.

    UTF-16 and UTF-32 (newlines at code-unit-aligned offsets; ``"utf-16"`` and
    ``"utf-32"`` read a byte-order mark like the codecs do, the platform's order without
    one; ``"utf-8-sig"`` drops a leading mark) and legacy single- and multi-byte codecs
    (``cp1252``, ``latin-1``, ``shift_jis``, ``gb18030``, ``euc-jp``, ...) in which the
    newline bytes are never part of another character.  Stateful codecs (ISO-2022, HZ,
    UTF-7) and escape codecs are refused with ``ValueError``.  Malformed bytes follow
    ``errors``.
    """

    def __init__(self, encoding: str, errors: str = "replace") -> None:
        name = _codec_name(encoding)
        if _REFUSED.search(name):
            raise ValueError(
                f"{name!r}: its newline bytes are not self-delimiting (a stateful or escape"
                " codec), so lines cannot be cut in its bytes"
            )
        codecs.lookup_error(errors)
        self.encoding = name
        self.errors = errors
        self.unit = _UNIT_CODECS.get(name, 1)
        if errors == "surrogateescape" and self.unit > 1:
            # Python's handler escapes only bytes from 0x80 on: a lone surrogate such as
            # 00 D8 would raise UnicodeDecodeError in the middle of the stream.
            raise ValueError(
                f"errors='surrogateescape' cannot decode {name!r}: its malformed code units"
                " hold bytes below 0x80, which it cannot escape (use replace or"
                " backslashreplace)"
            )
        self.prelude = {"utf_16": 2, "utf_32": 4, "utf_8_sig": 3}.get(name, 0)
        #: The codec with a fixed byte order, once known (for newlines and cuts).
        self._fixed = name if not self.prelude else ""
        self._decoder = codecs.getincrementaldecoder(name)(errors)
        self._gap = False
        self._bom_left = 0  # byte-order-mark bytes still to drop
        self._one_char_units = self._units_are_chars()

    def begin(self, head: bytes, resumed: bool = False) -> None:
        if not self.prelude:
            return
        if self.encoding == "utf_8_sig":
            mark = codecs.BOM_UTF8 if head.startswith(codecs.BOM_UTF8) else b""
            self._fixed = "utf_8"
        else:
            bits = self.unit * 8
            little = codecs.BOM_UTF32_LE if self.unit == 4 else codecs.BOM_UTF16_LE
            big = codecs.BOM_UTF32_BE if self.unit == 4 else codecs.BOM_UTF16_BE
            if head.startswith(little):
                order, mark = "le", little
            elif head.startswith(big):
                order, mark = "be", big
            else:
                order, mark = ("le" if sys.byteorder == "little" else "be"), b""
            self._fixed = f"utf_{bits}_{order}"
        self._bom_left = 0 if resumed else len(mark)
        # Line by line, a decoder must not look for a mark again after each newline.
        self._decoder = codecs.getincrementaldecoder(self._fixed)(self.errors)
        self._one_char_units = self._units_are_chars()

    def _units_are_chars(self) -> bool:
        """Whether ``decode_units`` can apply: the byte order is known, the error policy
        gives a code unit at most one character, and for a one-byte unit the codec
        decodes every byte on its own to one character (single-byte codecs)."""
        if not self._fixed or self.errors not in _ONE_CHAR_ERRORS:
            return False
        return self.unit > 1 or (not _holds_bytes(self._fixed) and _one_char_bytes(self._fixed))

    def encode_newline(self, text: str) -> bytes:
        fixed = self._fixed
        if not fixed:
            raise RuntimeError("begin() first: the byte order is not known yet")
        try:
            data = text.encode(fixed)
        except UnicodeEncodeError:
            raise ValueError(f"newline {text!r} cannot be encoded in {fixed!r}") from None
        # Universal newlines ask for "\r" and "\n": one exhaustive check for both.
        if self.unit == 1 and not (
            len(data) == len(text)
            and _self_delimiting(fixed, bytes(sorted(set("\r\n".encode(fixed) + data))))
        ):
            raise ValueError(
                f"newline {text!r} is not self-delimiting in {fixed!r}: its bytes may be"
                " part of another character"
            )
        return data

    def decode(self, data: bytes, final: bool = False) -> str:
        if self._bom_left:
            drop = min(self._bom_left, len(data))
            self._bom_left -= drop
            data = data[drop:]
        text = self._decoder.decode(data, final)
        if self._gap:
            self._gap = False
            text = "\ufffd" + text
        return text

    def decode_units(self, data: bytes) -> str | None:
        """The text of ``data`` (whole lines) if each of its code units decodes to exactly
        one character, else ``None``; the decoder's state is unchanged either way (after
        whole lines, ``decode`` would hold nothing back).

        Then a line's byte offset is its character index times ``unit``: the line engine
        cuts the text instead of searching the bytes line by line.  Under the policies
        in ``_ONE_CHAR_ERRORS`` a code unit gives at most one character, so a text of
        one character per unit proves it (no surrogate pair, nothing dropped).
        """
        if not self._one_char_units or self._gap or self._bom_left:
            return None
        if self._decoder.getstate()[0]:  # a character's first bytes are held
            return None
        try:
            text = data.decode(self._fixed, self.errors)
        except UnicodeDecodeError:
            return None  # errors="strict": ``decode`` raises it where it belongs
        return text if len(text) * self.unit == len(data) else None

    def decode_line(self, content: bytes, ending: bytes) -> str:
        # The newline is known text: only the content is decoded, to its end, so no
        # malformed prefix can take the newline into a character (GB18030's decoder would).
        text = self.decode(content, final=True)
        self._decoder.reset()
        return text

    def cut(self, data: bytes, limit: int) -> int:
        unit = self.unit
        cut = min(limit, len(data)) // unit * unit
        # A character is at most four bytes: of four cuts, one ends on a boundary unless
        # the bytes are malformed, and then any cut is as good as another.
        for size in range(cut, max(unit, cut - 4) - 1, -unit):
            decoder = codecs.getincrementaldecoder(self._fixed or self.encoding)("replace")
            decoder.decode(data[:size])
            if not decoder.decode(b"", True):
                return size
        return max(unit, cut)

    def decode_piece(self, data: bytes, after: int) -> str:
        # ``cut`` ends a piece where the codec holds nothing back.
        return self.decode(data)

    def mark_gap(self, lost: int | None = None) -> None:
        self._decoder = codecs.getincrementaldecoder(self._fixed or self.encoding)(self.errors)
        self._gap = True

    def decode_lines(
        self,
        head: bytes,
        data: bytes | memoryview,
        sep: int,
        limit: int,
        each_offset: int = True,
    ) -> DecodedLines | None:
        return None

    def text_split_exact(self, newline: str | None) -> bool:
        # A multi-byte decoder may take a newline into a malformed sequence.
        holds = self.unit == 1 and _holds_bytes(self._fixed or self.encoding)
        return not holds and _text_split_exact(self.errors, newline)


def line_decoder(
    encoding: str = "utf-8",
    errors: str = "replace",
    *,
    start_offset: int = 0,
    on_malformed: Callable[[Malformed], object] | None = None,
) -> LineDecoder:
    """The ``LineDecoder`` for ``encoding``: ``Utf8LineDecoder`` for UTF-8 (malformed
    units reported to ``on_malformed`` with offsets from ``start_offset``), else
    ``CodecLineDecoder``."""
    if _codec_name(encoding) == "utf_8":
        from .decoder import Utf8Decoder

        return Utf8LineDecoder(
            Utf8Decoder(errors, start_offset=start_offset, on_malformed=on_malformed)
        )
    if on_malformed is not None:
        raise ValueError("on_malformed is reported by the UTF-8 decoder only")
    return CodecLineDecoder(encoding, errors)


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

    def feed_slice(
        self, data: bytes, start: int, stop: int
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

    def _finish_overlong(
        self,
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
        at = data.rfind(nl, start, end)
        while at >= start and (at + shift) % unit:
            at = data.rfind(nl, start, at + len(nl) - 1)
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
            cr = data.rfind(self._cr, lo, end - unit) if end >= unit else -1
            while cr >= lo and (cr + shift) % unit:
                cr = data.rfind(self._cr, lo, cr + unit - 1)
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
        if self.newline is None:
            return _universal_ends(buf, self._cr, self._lf, self._unit, start, hold_cr)
        return _fixed_ends(buf, self._nl, self._unit, start)

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

    def feed_cut(
        self, units: Any, data: bytes | memoryview
    ) -> tuple[list[Any], list[LineBatch | LineItem]] | None:
        """``feed(data)`` for a caller that knows that its decoder's ``decode_lines``
        is ``units.lines`` at ``units.position`` (a ``Utf8Decoder`` in decoder mode with
        nothing held, its splitter's source passing the bytes through): the same lines
        and state, with the layers between cut out (one Python call per chunk).  Returns
        the texts of the lines ``units.lines`` cut (a list of the caller's to keep) and
        what ``feed`` would return after their ``LineBatch`` (mostly nothing: an
        overlong line and those after it); ``None`` when the engine is not on its fast
        path (nothing is changed then).
        """
        sep = self._sep
        if sep is None or self.overlong or not self._started or self._units is not None:
            return None
        if self._offset_mode:
            return None  # (an engine that hands out offsets: they are not kept here)
        partial = self.partial
        base = self.line_start
        self.position += len(data)
        texts, offsets = units.lines(partial, data, units.position, sep, self._max, 0)
        end = offsets[-1]
        units.position = end
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

    def _take_units(
        self, buf: bytes, base: int, scanned: int, out: list[LineBatch | LineItem]
    ) -> int:
        """The complete lines of ``buf`` when each of their code units is one character
        (``CodecLineDecoder.decode_units``: UTF-16/32 text without surrogate pairs,
        single-byte codecs): one decode, one split of the text, and the offsets by
        arithmetic; the bytes are searched only for the last newline.

        Returns how many bytes were used; 0 when this does not apply (the decoder's
        state is then untouched) and the lines need the byte-by-byte search.
        """
        assert self._units is not None
        end = self._last_line_end(buf, scanned)
        if not end or not self.decoder.text_split_exact(self.newline):
            return 0
        if base + end >= ACCEL_MAX_POSITION:
            return 0  # offsets past 64 bits: the byte-by-byte search takes any offset
        text = self._units(buf[:end])
        if text is None:
            return 0
        newline = self.newline
        unit = self._unit
        if not self.keepends and (newline is None or len(newline) == 1):
            split_lines = implementation().split_lines
            cut = split_lines(text, newline, base, unit, self._max, self._offset_mode)
            if cut is None:
                return 0  # a line too long: cut it the other way
            contents, offsets = cut
        else:
            # Each line keeps its newline, or the newline is longer than a character.
            if newline is None:
                if _CR not in text:
                    newline = _LF
                elif text.count(_CR) == text.count(_LF) == text.count(_CR + _LF):
                    newline = _CR + _LF
                else:
                    return 0  # mixed newlines
            contents = text.split(newline)
            contents.pop()  # the empty remainder after the last newline
            if max(map(len, contents)) * unit > self._max:
                return 0
            width = len(newline)
            if self.each_offset:
                widths = [(len(c) + width) * unit for c in contents]
                offsets = list(accumulate(widths, initial=base))
            else:
                offsets = [base + end]
            if self.keepends:
                contents = [c + newline for c in contents]
        out.append(LineBatch(contents, offsets))
        self._splitting = False
        return end

    def _last_line_end(self, buf: bytes, start: int) -> int:
        """Where the last complete line of ``buf`` ends (0: none), as ``_line_ends``
        (looking from ``start`` on) would find it, with two searches from the end."""
        unit = self._unit
        size = len(buf) // unit * unit
        if self.newline is None:
            if buf.endswith(self._cr, 0, size):
                size -= unit  # the \r may be the first half of \r\n
            last_lf = _rfind_unit(buf, self._lf, start, size, unit)
            # Only a \r after the last \n matters: the search for one stops there (a file
            # with none would be searched whole, and a two-byte search is not memrchr).
            after_lf = max(start, last_lf + unit)
            at = max(last_lf, _rfind_unit(buf, self._cr, after_lf, size, unit))
            return at + unit if at >= 0 else 0
        at = _rfind_unit(buf, self._nl, start, size, unit)
        return at + len(self._nl) if at >= 0 else 0

    def _take_block(
        self, buf: bytes, base: int, ends: list[tuple[int, int]], out: list[LineBatch | LineItem]
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
        newline = self.newline
        if self.keepends:
            if newline is None:
                parts = _UNIVERSAL_KEPT.split(text)
                contents = [a + b for a, b in zip(parts[::2], parts[1::2], strict=False)]
            else:
                contents = [line + newline for line in text.split(newline)]
                contents.pop()
        elif newline is None:
            contents = text.split(_LF) if _CR not in text else _UNIVERSAL_TEXT.split(text)
            contents.pop()  # the empty remainder after the last newline
        else:
            contents = text.split(newline)
            contents.pop()
        offsets = [base + s for s in starts] if self.each_offset else []
        offsets.append(base + block_end)
        out.append(LineBatch(contents, offsets))
        self._splitting = False
        return block_end

    def _complete_line(
        self, content: bytes, ending: bytes, offset: int, out: list[LineBatch | LineItem]
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

    def _overlong_unfinished(
        self, rest: bytes, body: int, out: list[LineBatch | LineItem]
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

    def _found_overlong(self, offset: int) -> None:
        if self._on_overlong_line is not None:
            self._on_overlong_line(offset)

    def _split_pieces(self, content: bytes, offset: int, out: list[LineBatch | LineItem]) -> int:
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


def _rfind_unit(buf: bytes, sub: bytes, start: int, end: int, unit: int) -> int:
    """The last ``sub`` in ``buf[start:end]`` at a multiple of ``unit``, or -1."""
    at = buf.rfind(sub, start, end)
    while at > 0 and at % unit:
        at = buf.rfind(sub, start, at + len(sub) - 1)
    return at


def _fixed_ends(buf: bytes, nl: bytes, unit: int, start: int) -> list[tuple[int, int]]:
    """``LineEngine._line_ends`` for one newline: ``bytes.find`` is memchr-fast, where a
    regular expression scans a long line at a few tens of MB/s."""
    out: list[tuple[int, int]] = []
    find = buf.find
    width = len(nl)
    at = find(nl, start)
    while at >= 0:
        if at % unit:
            at = find(nl, at + 1)
            continue
        out.append((at, at + width))
        at = find(nl, at + width)
    return out


def _universal_ends(
    buf: bytes, cr: bytes, lf: bytes, unit: int, start: int, hold_cr: bool
) -> list[tuple[int, int]]:
    """``LineEngine._line_ends`` for universal newlines (``cr`` and ``lf`` are one code
    unit each): ``\\r\\n``, ``\\r`` and ``\\n`` found with ``bytes.find``.

    With ``hold_cr``, a ``\\r`` with no whole code unit after it ends no line yet: it may
    be the first half of ``\\r\\n``.
    """
    out: list[tuple[int, int]] = []
    find = buf.find
    lf_at = find(lf, start)
    cr_at = find(cr, start)
    if unit == 1 and cr_at < 0:  # the common case: "\n" only
        while lf_at >= 0:
            out.append((lf_at, lf_at + 1))
            lf_at = find(lf, lf_at + 1)
        return out
    if unit == 1 and buf.count(cr, start) == buf.count(lf, start) == buf.count(cr + lf, start):
        # "\r\n" only (Windows): one search, as cheap as for "\n".
        while cr_at >= 0:
            out.append((cr_at, cr_at + 2))
            cr_at = find(cr, cr_at + 2)
        return out
    while cr_at >= 0 and cr_at % unit:
        cr_at = find(cr, cr_at + 1)
    size = len(buf)
    while lf_at >= 0 or cr_at >= 0:
        # The "\n"s before the next "\r" (all of them when there is none), in a tight loop.
        before = cr_at if cr_at >= 0 else size
        while 0 <= lf_at < before:
            if lf_at % unit:
                lf_at = find(lf, lf_at + 1)
                continue
            out.append((lf_at, lf_at + unit))
            lf_at = find(lf, lf_at + unit)
        if cr_at < 0:
            break
        after = cr_at + unit
        if lf_at == after:
            after += unit
            lf_at = find(lf, after)
        elif hold_cr and size < after + unit:
            break  # the \r may be the first half of \r\n
        out.append((cr_at, after))
        cr_at = find(cr, after)
        while cr_at >= 0 and cr_at % unit:
            cr_at = find(cr, cr_at + 1)
    return out
