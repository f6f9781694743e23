"""A streaming transcoder: bytes in any Python codec to bytes in any other, chunk by chunk.

The UTF-8 family (``utf-8``, ``wtf-8``, ``cesu-8``, ``mutf-8``, ``utf-8z``) goes through
``Utf8Decoder`` and ``Utf8Encoder``, with all their guarantees (eager output, absolute
offsets, ``Malformed`` events, gaps, strict mode that does not poison); every other codec
goes through its ``codecs`` incremental decoder or encoder, which are chunk-boundary safe.
So for any chunking, the output is what a one-shot ``data.decode(source, errors)`` followed
by ``.encode(target, errors)`` gives, apart from what the BOM policy changes.

BOM policy (``bom=``), on the decoded text and the input bytes:

``keep``
    the text passes through untouched: a leading U+FEFF stays (and codecs that consume or
    write a BOM themselves, such as ``utf-16`` or ``utf-8-sig``, still do).
``strip``
    a U+FEFF at the start of the text is dropped.
``add``
    the output starts with a BOM in the target encoding: a leading U+FEFF is dropped and
    one is written first, unless the target codec writes its own (``utf-16``, ``utf-32``,
    ``utf-8-sig``), even for an empty stream.
``detect``
    the input's first bytes are sniffed for a UTF-32, UTF-8 or UTF-16 BOM (in that order,
    because the UTF-32-LE BOM FF FE 00 00 begins with the UTF-16-LE one); if one is there
    it is removed and the stream is decoded in that encoding (a UTF-8 BOM keeps a UTF-8
    family ``source``), otherwise with ``source``.  Up to three bytes are held while the
    first chunks are too short to decide.

A ``utf-16`` or ``utf-32`` source (no byte order given) is read as CPython's one-shot
decoder reads it: a BOM picks the byte order and is consumed, and without one the native
order applies.  (CPython's incremental decoders for these two refuse a stream without a
BOM, so the transcoder reads the BOM itself, with the same short-chunk care.)
"""

from __future__ import annotations

import codecs
import sys
from typing import TYPE_CHECKING, Protocol

from .decoder import Utf8Decoder
from .encoder import Utf8Encoder
from .events import Utf8DecodeError
from .transformed import as_transform
from .variants import VARIANTS

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from .transformed import Transforms

__all__ = ["BOM_POLICIES", "Transcoder"]

BOM_POLICIES = ("keep", "strip", "add", "detect")

#: Longest first: FF FE 00 00 is UTF-32-LE, not UTF-16-LE followed by U+0000.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


class _Decoder(Protocol):
    def decode(self, input: ReadableBuffer, final: bool = False) -> str: ...  # noqa: A002


class _Encoder(Protocol):
    def encode(self, input: str, final: bool = False) -> bytes: ...  # noqa: A002


#: CPython's BOM-reading codecs: a BOM picks the byte order (and is consumed); without
#: one, their one-shot decoders use the native order while their incremental decoders
#: refuse the stream ("does not start with BOM").  The transcoder reads the BOM itself.
_ENDIAN = "le" if sys.byteorder == "little" else "be"
_BOM_READERS = {
    "utf-16": (_BOMS[3:], f"utf-16-{_ENDIAN}"),
    "utf-32": (_BOMS[:2], f"utf-32-{_ENDIAN}"),
}


def _sniff(
    data: bytes, final: bool, boms: tuple[tuple[bytes, str], ...]
) -> tuple[str, int] | None:
    """``(codec, BOM length)`` for a BOM at the start of ``data``; ``("", 0)`` for none;
    None while ``data`` is too short to tell (only when not ``final``)."""
    for bom, codec in boms:
        if data.startswith(bom):
            return codec, len(bom)
        if not final and bom.startswith(data):
            return None
    return "", 0


def _family(name: str) -> str | None:
    """The UTF-8 variant a canonical codec name stands for, if any."""
    return name if name in VARIANTS else None


def _writes_own_bom(target: str) -> bool:
    """Does the target codec put a BOM in front of its output by itself?"""
    encoder = codecs.getincrementalencoder(target)()
    return encoder.encode("a") != encoder.encode("a")


class Transcoder:
    """Turns bytes in ``source`` into bytes in ``target``, incrementally.

    ``errors`` applies to both sides (``replace`` by default: a stream must survive bad
    bytes).  ``decoder`` and ``encoder`` are the objects doing the work: a
    ``Utf8Decoder`` for a UTF-8 family source (set ``decoder.on_malformed`` to receive
    every ``Malformed`` event, call ``decoder.mark_gap()`` after lost bytes), otherwise
    the source codec's incremental decoder; with ``bom="detect"`` the decoder is chosen
    once the BOM is known (``on_malformed`` carries over).

    If the decoder raises (``errors="strict"``), the text it decoded before the error is
    encoded all the same: those bytes are ``partial_output`` and come out in front of the
    next call's output, so a caller that goes on loses nothing.

    ``transforms``: a ``TextTransform`` or a sequence of them (``utf8stream.transforms``)
    done on the decoded text before it is encoded (``transform``); the end of the stream
    is the end of their text.  ``characters`` counts the transformed text.
    """

    def __init__(
        self,
        source: str,
        target: str,
        *,
        errors: str = "replace",
        bom: str = "keep",
        transforms: Transforms = None,
    ) -> None:
        if bom not in BOM_POLICIES:
            raise ValueError(f"bom must be one of {BOM_POLICIES}, not {bom!r}")
        self.source = codecs.lookup(source).name  # LookupError for unknown codecs
        self.target = codecs.lookup(target).name
        self.errors = errors
        self.bom = bom
        # The codec for a stream without a BOM, and the BOMs to look for.
        self._no_bom = self.source
        self._boms: tuple[tuple[bytes, str], ...] = _BOMS if bom == "detect" else ()
        if self.source in _BOM_READERS:
            boms, self._no_bom = _BOM_READERS[self.source]
            self._boms = self._boms or boms
        self.decoder: _Decoder = self._new_decoder(self._no_bom, 0)
        variant = _family(self.target)
        self.encoder: _Encoder = (
            Utf8Encoder(errors, variant=variant)
            if variant is not None
            else codecs.getincrementalencoder(self.target)(errors)
        )
        self._add_bom = bom == "add" and not _writes_own_bom(self.target)
        self._sniffing = bool(self._boms)
        self._sniffed = b""
        self._at_text_start = True
        self._characters = 0
        self._carry = b""
        #: What the decoded text goes through (``transforms=``), if anything.
        self.transform = as_transform(transforms)

    @property
    def characters(self) -> int:
        """Characters decoded and handed to the encoder so far."""
        return self._characters

    @property
    def partial_output(self) -> bytes:
        """Output for the text decoded before the last error, not returned yet."""
        return self._carry

    def transcode(self, data: ReadableBuffer, final: bool = False) -> bytes:
        """Transcode a chunk; return every byte of output that is already certain.

        With ``final=True`` the stream ends: held input is decoded or reported, and the
        encoder is flushed.
        """
        if self._sniffing:
            buf = self._sniffed + bytes(data)
            found = _sniff(buf, final, self._boms)
            if found is None:
                self._sniffed = buf
                return self._take_carry(b"")
            self._detected(*found)
            data = buf[found[1] :]
        try:
            text = self.decoder.decode(data, final)
        except Utf8DecodeError as exc:
            self._carry += self._encode(exc.partial, False)
            raise
        return self._take_carry(self._encode(text, final))

    def _take_carry(self, out: bytes) -> bytes:
        if self._carry:
            out, self._carry = self._carry + out, b""
        return out

    def _encode(self, text: str, final: bool) -> bytes:
        if self._at_text_start and (text or final):
            if text:
                self._at_text_start = False
                if text[0] == "\ufeff" and self.bom in ("strip", "add"):
                    text = text[1:]
            if self._add_bom:
                self._at_text_start = False
                text = "\ufeff" + text
        if self.transform is not None:
            text = self.transform.transform(text, final)
        self._characters += len(text)
        return self.encoder.encode(text, final)

    def _new_decoder(self, codec: str, start_offset: int) -> _Decoder:
        variant = _family(codec)
        if variant is not None:
            return Utf8Decoder(self.errors, variant=variant, start_offset=start_offset)
        decoder: _Decoder = codecs.getincrementaldecoder(codec)(self.errors)
        return decoder

    def _detected(self, codec: str, bom_length: int) -> None:
        self._sniffing = False
        self._sniffed = b""
        if not codec:
            return  # no BOM: the decoder for ``_no_bom`` is in place already
        if codec == "utf-8" and _family(self.source) is not None:
            codec = self.source  # a UTF-8 BOM is also the BOM of every UTF-8 variant
        old = self.decoder
        self.decoder = self._new_decoder(codec, bom_length)
        if isinstance(old, Utf8Decoder) and isinstance(self.decoder, Utf8Decoder):
            self.decoder.on_malformed = old.on_malformed
