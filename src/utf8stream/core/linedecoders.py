"""The line engine's decoders: ``LineDecoder`` (what the engine needs of one: the interface
a new encoding implements), ``Utf8LineDecoder`` (over ``Utf8Decoder``) and
``CodecLineDecoder`` (any Python text codec whose newlines can be found in its bytes)."""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ._bytes import character_count, is_proper_prefix
from .boundaries import char_start, cut_at_boundary

if TYPE_CHECKING:
    from .decoder import DecodedLines, Utf8Decoder
    from .events import Malformed

#: Codecs whose newline byte is not self-delimiting: shift states (ISO-2022, HZ, UTF-7)
#: or escapes that decode to a newline.
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
        return text[: len(text) - character_count(ending)]

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


def incremental_decoder(codec: str, errors: str) -> codecs.IncrementalDecoder:
    """An incremental decoder of ``codec`` (a name as ``_codec_name`` gives it): UTF-8
    bytes (``utf-8-sig`` after its mark) go through the scanner, as a ``Utf8Decoder``;
    any other codec is Python's."""
    if codec == "utf_8":
        from .decoder import Utf8Decoder

        return Utf8Decoder(errors)
    return codecs.getincrementaldecoder(codec)(errors)


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
        self._decoder = incremental_decoder(name, errors)  # a placeholder until begin()
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
        self._decoder = incremental_decoder(self._fixed, self.errors)
        self._one_char_units = self._units_are_chars()

    @property
    def codec(self) -> str:
        """The codec the bytes are decoded with: ``encoding``, with its byte order once
        the first bytes told it."""
        return self._fixed or self.encoding

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
            decoder = incremental_decoder(self._fixed or self.encoding, "replace")
            decoder.decode(data[:size])
            if not decoder.decode(b"", True):
                return size
        return max(unit, cut)

    def decode_piece(self, data: bytes, after: int) -> str:
        # ``cut`` ends a piece where the codec holds nothing back.
        return self.decode(data)

    def mark_gap(self, lost: int | None = None) -> None:
        self._decoder = incremental_decoder(self._fixed or self.encoding, self.errors)
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
