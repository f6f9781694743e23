"""The incremental encoder: text to UTF-8 or a UTF-8 variant, on CPython's C codec.

Theory of operation
-------------------
``str.encode("utf-8")`` does all the work on valid text; the encoder adds only what the
variants and the stream need, in O(1) Python steps per call plus one step per run of
surrogates (a surrogate is an error in UTF-8, CESU-8 and UTF-8Z, and rare data in WTF-8
and MUTF-8):

* ``utf-8``: one ``str.encode("utf-8", errors)`` call; the C codec applies the policy.
* surrogates: text without any (the common case) is encoded strictly in one call.  WTF-8
  writes each surrogate as 3 bytes except a high+low pair, which becomes the 4-byte form
  of the character it stands for (joined by a round trip through UTF-16, in C).  MUTF-8
  writes every surrogate as 3 bytes.  CESU-8 and UTF-8Z hand each run of surrogates to
  the error policy, like UTF-8.
* CESU-8 and MUTF-8 rewrite each 4-byte sequence as a 6-byte surrogate pair; MUTF-8 and
  UTF-8Z write U+0000 as C0 80.  Both are byte substitutions on the encoded output, which
  holds only well-formed sequences at that point.
* WTF-8 holds a high surrogate at the end of a call (``final=False``): if the next call
  starts with a low surrogate, the two become one 4-byte sequence, exactly as if they had
  arrived together.  ``getstate()`` is that held code point (0 for none).

Errors are transactional: a call that raises has no effect (``position`` and the held
surrogate stay as they were), so the caller can retry with corrected text.  The exception
(``Utf8EncodeError``, a ``UnicodeEncodeError``) has ``start``/``end`` relative to the text
of the failing call, as every codec does, and ``offset``: the absolute position of
``object[start]`` among all code points given to the encoder since it was created or
reset (after ``start_position``, for an encoder that resumes a stream).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from ._accel import implementation
from .variants import OPTU8, Variant, get_variant, optu8_errors

__all__ = ["Utf8EncodeError", "Utf8Encoder"]

_SURROGATES = re.compile("[\ud800-\udfff]+")
_FOUR_BYTE = re.compile(rb"[\xf0-\xf4][\x80-\xbf]{3}")
#: The same for U+10000..U+3FFFF only: a literal first byte makes the search much faster.
_FOUR_BYTE_F0 = re.compile(rb"\xf0[\x80-\xbf]{3}")
_FOUR_BYTE_LEADS = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")
#: What the OPTU-8 decoder produces for a malformed byte: U+EF80..U+EFFF (80..FF), and
#: U+EF00 (a raw 00) in the variants where 00 is malformed.
_OPTU8_HIGH = re.compile(rb"\xee[\xbe\xbf][\x80-\xbf]")
_OPTU8_ALL = re.compile(rb"\xee\xbc\x80|\xee[\xbe\xbf][\x80-\xbf]")
#: Policies whose names CPython's UTF-8 codec understands for any input.
_CPYTHON_POLICIES = frozenset(
    {
        "strict",
        "ignore",
        "replace",
        "backslashreplace",
        "xmlcharrefreplace",
        "namereplace",
        "surrogateescape",
        "surrogatepass",
    }
)


class Utf8EncodeError(UnicodeEncodeError):
    """Raised by ``Utf8Encoder`` when text cannot be encoded under its error policy.

    ``object[start:end]`` is what could not be encoded, in the text of the failing call;
    ``offset`` is the absolute position of ``object[start]`` among all the code points
    the encoder has been given; ``partial`` is what ``object[:start]`` encodes to.  The
    failing call has no effect on the encoder.
    """

    offset: int
    partial: bytes

    def __init__(
        self,
        encoding: str,
        obj: str,
        start: int,
        end: int,
        reason: str,
        offset: int,
        partial: bytes = b"",
    ) -> None:
        super().__init__(encoding, obj, start, end, reason)
        self.offset = offset
        self.partial = partial

    def __reduce__(self) -> tuple[object, ...]:
        args = (self.encoding, self.object, self.start, self.end, self.reason)
        return (type(self), (*args, self.offset, self.partial))

    def __str__(self) -> str:
        return f"{super().__str__()} (code point offset {self.offset} in the stream)"


def _pair_for(match: re.Match[bytes]) -> bytes:
    """The 6-byte CESU-8 form of one 4-byte UTF-8 sequence."""
    cp = ord(match[0].decode("utf-8")) - 0x10000
    high, low = 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)
    return (chr(high) + chr(low)).encode("utf-8", "surrogatepass")


def _as_pairs(out: bytes, text: str, pattern: re.Pattern[bytes]) -> bytes:
    """``out`` (``text`` in UTF-8) with each 4-byte sequence rewritten as a 6-byte pair.

    With few supplementary characters, one regex substitution (a Python call each).  With
    many, C passes only: CESU-8 is UTF-8 applied to each UTF-16 code unit, and the one C
    codec that turns code units into code points without joining pairs is
    ``unicode_escape``, so the units are spelled ``\\uXXXX`` (hex, then strided slice
    assignments) and decoded, then encoded with ``surrogatepass``: a cost per character,
    where the substitution's is per supplementary character, so the C passes win from
    about one supplementary character in 40 (``benchmarks/bench_encoder.py``, CESU-8).
    """
    units = text.encode("utf-16-be", "surrogatepass")
    n = len(units) // 2
    if (n - len(text)) * 40 < len(text):
        return pattern.sub(_pair_for, out)
    digits = units.hex().encode("ascii")
    escaped = bytearray(6 * n)
    escaped[0::6] = b"\\" * n
    escaped[1::6] = b"u" * n
    for k in range(4):
        escaped[2 + k :: 6] = digits[k::4]
    return escaped.decode("unicode_escape").encode("utf-8", "surrogatepass")


def _optu8_byte(match: re.Match[bytes]) -> bytes:
    return bytes((ord(match[0].decode("utf-8")) - 0xEF00,))


class Utf8Encoder(codecs.IncrementalEncoder):
    """Incremental encoder for UTF-8 and its variants (``variants.py``).

    ``errors``: ``strict`` (default), any policy CPython knows (``surrogateescape`` turns
    U+DC80..U+DCFF back into the bytes ``Utf8Decoder(errors="surrogateescape")`` read, and
    in UTF-8Z also U+DC00 into the raw 00 that is malformed there),
    ``surrogatepass``, ``optu-8`` (U+EF80..U+EFFF, and U+EF00 in MUTF-8 and UTF-8Z, become
    the byte they stand for, undoing ``Utf8Decoder(errors="optu-8")``), or any name
    registered with ``codecs.register_error``.  WTF-8 and MUTF-8 can encode every code
    point, so there the policy never applies (use ``optu-8`` to round-trip malformed
    bytes through them).

    ``variant``: ``utf-8`` (default), ``wtf-8``, ``cesu-8``, ``mutf-8`` or ``utf-8z``.
    ``start_position``: the code points given before this encoder took over (``position``
    and error offsets count from it), for an encoder that resumes a stream.
    """

    def __init__(
        self, errors: str = "strict", *, variant: str = "utf-8", start_position: int = 0
    ) -> None:
        if start_position < 0:
            raise ValueError(f"start_position must not be negative, not {start_position}")
        self._variant: Variant = get_variant(variant)
        self._hold_surrogates = self._variant.pairs_malformed
        self._held = ""
        self._position = start_position
        super().__init__(errors)

    # -- settings and state ------------------------------------------------------------

    @property
    def errors(self) -> str:
        return self._errors

    @errors.setter
    def errors(self, errors: str) -> None:
        if errors not in _CPYTHON_POLICIES and errors != OPTU8:
            codecs.lookup_error(errors)  # LookupError for unknown names, as codecs does
        self._fold()
        self._errors = errors
        self._optu8 = errors == OPTU8
        # The one-call path: plain UTF-8 with a policy the C codec applies by itself.
        self._plain = self._variant.name == "utf-8" and not self._optu8
        # With the C accelerator that path is one C call: ``encode`` is then an instance
        # attribute bound to it, which counts characters (folded into ``_position`` when
        # read) and hands anything else to the method below (in pure Python, everything).
        self._c: Any = None
        if self._plain:
            self._c = implementation().PlainEncoder(errors, partial(Utf8Encoder.encode, self))
            self.encode = self._c.encode  # type: ignore[method-assign]
        else:
            self.__dict__.pop("encode", None)

    def _fold(self) -> None:
        """Add what the C encoder counted to ``_position``."""
        c = self.__dict__.get("_c")
        if c is not None:
            self._position += c.drain()

    @property
    def variant(self) -> str:
        return self._variant.name

    @property
    def position(self) -> int:
        """Code points given to ``encode`` so far (a held surrogate included)."""
        self._fold()
        return self._position

    @property
    def buffered(self) -> int:
        """Code points held for the next call (0, or 1: a WTF-8 high surrogate)."""
        return len(self._held)

    def getstate(self) -> int:
        """The held high surrogate's code point, or 0 (``codecs.IncrementalEncoder``)."""
        return ord(self._held) if self._held else 0

    def setstate(self, state: int | str) -> None:
        code = int(state)
        if code and not 0xD800 <= code <= 0xDBFF:
            raise ValueError(f"not a Utf8Encoder state: {state!r}")
        self._held = chr(code) if code else ""

    def reset(self) -> None:
        """Forget a held surrogate; the position returns to 0."""
        self._held = ""
        self._fold()
        self._position = 0

    # -- encoding ----------------------------------------------------------------------

    def encode(self, input: str, final: bool = False) -> bytes:  # noqa: A002
        """Encode ``input``; with ``final=True`` also flush a held high surrogate."""
        if self._plain:
            try:
                out = input.encode("utf-8", self._errors)
            except UnicodeEncodeError as exc:
                raise self._error(exc, input, 0) from None
            self._position += len(input)
            return out
        held = self._held
        text = held + input if held else input
        hold = ""
        if self._hold_surrogates and not final and text and "\ud800" <= text[-1] <= "\udbff":
            hold, text = text[-1], text[:-1]
        try:
            out = self._encode_text(text)
        except UnicodeEncodeError as exc:
            raise self._error(exc, input, len(held)) from None
        self._held = hold
        self._position += len(input)
        return out

    def _encode_text(self, text: str) -> bytes:
        """``text`` (no held character) in this variant, under this policy."""
        variant = self._variant
        try:
            out = text.encode("utf-8")
        except UnicodeEncodeError:
            if variant.pairs_malformed:  # WTF-8: join pairs, other surrogates as 3 bytes
                joined = text.encode("utf-16-le", "surrogatepass")
                out = joined.decode("utf-16-le", "surrogatepass").encode("utf-8", "surrogatepass")
            elif variant.encodes_surrogates:  # MUTF-8: every surrogate as 3 bytes
                out = self._rewrite(text.encode("utf-8", "surrogatepass"), text)
            elif variant.name == "utf-8":
                out = text.encode("utf-8", self._errors)
            else:
                out = self._encode_with_policy(text)
        else:
            out = self._rewrite(out, text)
        if self._optu8:
            pattern = _OPTU8_ALL if variant.table.lone_kind[0] is not None else _OPTU8_HIGH
            if b"\xee" in out:
                out = pattern.sub(_optu8_byte, out)
        return out

    def _rewrite(self, out: bytes, text: str) -> bytes:
        """CESU-8/MUTF-8 pairs and the Java null in ``out``, which is ``text`` encoded
        with UTF-8 (surrogates, if any, as 3 bytes each)."""
        variant = self._variant
        if variant.astral_as_pairs and not text.isascii():
            leads = [lead for lead in _FOUR_BYTE_LEADS if lead in out]
            if leads:
                out = _as_pairs(out, text, _FOUR_BYTE_F0 if leads == [b"\xf0"] else _FOUR_BYTE)
        if variant.null_as_c0_80 and b"\x00" in out:
            out = out.replace(b"\x00", b"\xc0\x80")
        return out

    def _encode_with_policy(self, text: str) -> bytes:
        """CESU-8 and UTF-8Z with surrogates in ``text``: each run goes to the policy."""
        handler = self._handler()
        parts: list[bytes] = []
        pos = 0
        n = len(text)
        while pos < n:
            match = _SURROGATES.search(text, pos)
            if match is None:
                rest = text[pos:]
                parts.append(self._rewrite(rest.encode("utf-8"), rest))
                break
            start, end = match.span()
            if start > pos:
                clean = text[pos:start]
                parts.append(self._rewrite(clean.encode("utf-8"), clean))
            reason = "surrogates not allowed"
            exc = UnicodeEncodeError(self._variant.name, text, start, end, reason)
            replacement, resume = handler(exc)
            if isinstance(replacement, str):
                # As CPython does: a replacement must itself be encodable.
                replacement = self._rewrite(replacement.encode("utf-8"), replacement)
            parts.append(replacement)
            pos = resume + n if resume < 0 else resume
            if not 0 <= pos <= n:
                raise IndexError(f"position {resume} from error handler out of bounds")
        return b"".join(parts)

    def _handler(self) -> Callable[[UnicodeError], tuple[str | bytes, int]]:
        errors = self._errors
        if errors == "strict":
            return _raise
        if errors == "surrogatepass":
            return _pass_surrogates
        if errors == "surrogateescape":
            # A raw 00 is malformed in UTF-8Z, so its decoder escapes it as U+DC00.
            return _escape_nul_too if self._variant.table.lone_kind[0] else _escape_surrogates
        if errors == OPTU8:
            return optu8_errors
        return codecs.lookup_error(errors)

    def _error(self, exc: UnicodeEncodeError, text: str, held: int) -> Utf8EncodeError:
        """The exception for a failure in ``exc.object`` = held character + ``text``."""
        self._fold()
        start = exc.start - held
        end = exc.end - held
        try:
            partial = self._encode_text(text[:start]) if start > 0 else b""
        except UnicodeEncodeError:
            partial = b""
        return Utf8EncodeError(
            self._variant.name, text, start, end, exc.reason, self._position + start, partial
        )


def _raise(exc: UnicodeError) -> tuple[str | bytes, int]:
    raise exc


def _pass_surrogates(exc: UnicodeError) -> tuple[str | bytes, int]:
    assert isinstance(exc, UnicodeEncodeError)
    run = exc.object[exc.start : exc.end]
    return run.encode("utf-8", "surrogatepass"), exc.end


def _escape_surrogates(exc: UnicodeError, lowest: int = 0xDC80) -> tuple[str | bytes, int]:
    """surrogateescape as CPython's UTF-8 encoder applies it: U+DC80..U+DCFF become bytes,
    and the error is reported at the first other surrogate."""
    assert isinstance(exc, UnicodeEncodeError)
    out = bytearray()
    for i in range(exc.start, exc.end):
        cp = ord(exc.object[i])
        if not (lowest <= cp <= 0xDCFF and (cp >= 0xDC80 or cp == 0xDC00)):
            raise UnicodeEncodeError(exc.encoding, exc.object, i, exc.end, exc.reason)
        out.append(cp - 0xDC00)
    return bytes(out), exc.end


def _escape_nul_too(exc: UnicodeError) -> tuple[str | bytes, int]:
    return _escape_surrogates(exc, 0xDC00)
