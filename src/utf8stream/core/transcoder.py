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

``source="auto"`` decodes through ``AutoDecoder``: the encoding detector decides on the
first bytes (at most 64 KiB) and they are replayed into the decoder it chooses, so nothing
is lost or decoded twice; a byte-order mark is read by the detector and never reaches the
text (as the codecs that read one do), so ``bom="detect"`` is the same as ``keep`` there.
Input that is not text raises ``NotTextError`` (a ``ValueError``).

``checkpoint()`` is a ``TranscoderCheckpoint`` (``transcoderstate``) from which
``from_checkpoint`` continues exactly, whatever the source: the UTF-8 family through the
decoder's ``DecoderCheckpoint``, ``"auto"`` through its ``AutoCheckpoint`` (the decision is
kept: a resumed transcoder never detects again), other codecs through their incremental
coders' ``getstate()``.  ``punycode`` (which codes each call as a whole input) and codecs
registered by a program whose incremental coders do not define ``getstate`` cannot be
checkpointed: ``checkpoint()`` raises ``CheckpointUnsupported`` (a ``ValueError``).
"""

from __future__ import annotations

import codecs
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from .autodecode import AUTO, is_auto
from .decoder import OnMalformed, Utf8Decoder
from .encoder import Utf8Encoder
from .events import Utf8DecodeError
from .variants import VARIANTS

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from .detector import Detection
    from .transcoderstate import TranscoderCheckpoint

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
    def decode(self, input: ReadableBuffer, final: bool = False, /) -> str: ...  # noqa: A002


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

    ``source`` is a codec name or ``"auto"`` (detected: ``detection`` and
    ``source_encoding`` say what was found).  ``errors`` applies to both sides
    (``replace`` by default: a stream must survive bad bytes).  ``decoder`` and
    ``encoder`` are the objects doing the work: a ``Utf8Decoder`` for a UTF-8 family
    source, an ``AutoDecoder`` for ``"auto"``, otherwise the source codec's incremental
    decoder; with ``bom="detect"`` the decoder is chosen once the BOM is known.
    ``on_malformed`` receives every ``Malformed`` event of a UTF-8 source, detected or
    named (``decoder.mark_gap()`` after lost bytes).

    If the decoder raises (``errors="strict"``), the text it decoded before the error is
    encoded all the same: those bytes are ``partial_output`` and come out in front of the
    next call's output, so a caller that goes on loses nothing.
    """

    def __init__(
        self,
        source: str,
        target: str,
        *,
        errors: str = "replace",
        bom: str = "keep",
        on_malformed: OnMalformed | None = None,
    ) -> None:
        if bom not in BOM_POLICIES:
            raise ValueError(f"bom must be one of {BOM_POLICIES}, not {bom!r}")
        # LookupError for unknown codecs.
        self.source = AUTO if is_auto(source) else codecs.lookup(source).name
        self.target = codecs.lookup(target).name
        self.errors = errors
        self.bom = bom
        self._on_malformed = on_malformed
        # The codec for a stream without a BOM, and the BOMs to look for (the detector
        # reads them itself).
        self._no_bom = self.source
        self._boms: tuple[tuple[bytes, str], ...] = (
            _BOMS if bom == "detect" and self.source != AUTO else ()
        )
        if self.source in _BOM_READERS:
            boms, self._no_bom = _BOM_READERS[self.source]
            self._boms = self._boms or boms
        self._decoding = self._no_bom
        self.decoder: _Decoder = self._new_decoder(self._no_bom, 0)
        self.encoder: _Encoder = self._new_encoder(0)
        self._add_bom = bom == "add" and not _writes_own_bom(self.target)
        self._sniffing = bool(self._boms)
        self._sniffed = b""
        self._at_text_start = True
        self._characters = 0
        self._carry = b""

    @property
    def characters(self) -> int:
        """Characters decoded and handed to the encoder so far."""
        return self._characters

    @property
    def partial_output(self) -> bytes:
        """Output for the text decoded before the last error, not returned yet."""
        return self._carry

    @property
    def detection(self) -> Detection | None:
        """With ``source="auto"``, the detector's decision (the encoding, its confidence,
        the bytes looked at and why); None before it, for a named source, and for a
        transcoder resumed from a checkpoint (``source_encoding`` still says it)."""
        return getattr(self.decoder, "detection", None)

    @property
    def source_encoding(self) -> str | None:
        """The codec the input is decoded with: ``source``, or what a BOM
        (``bom="detect"``, ``utf-16``, ``utf-32``) or the detector chose; None until
        known."""
        if self._sniffing:
            return None
        if self._decoding == AUTO:
            encoding: str | None = getattr(self.decoder, "encoding", None)
            return encoding
        return self._decoding

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
        self._characters += len(text)
        return self.encoder.encode(text, final)

    def _new_decoder(self, codec: str, start_offset: int) -> _Decoder:
        self._decoding = codec
        if codec == AUTO:
            from .autodecode import AutoDecoder

            return AutoDecoder(self.errors, on_malformed=self._on_malformed)
        variant = _family(codec)
        if variant is not None:
            return Utf8Decoder(
                self.errors,
                variant=variant,
                start_offset=start_offset,
                on_malformed=self._on_malformed,
            )
        decoder: _Decoder = codecs.getincrementaldecoder(codec)(self.errors)
        return decoder

    def _new_encoder(self, position: int) -> codecs.IncrementalEncoder:
        variant = _family(self.target)
        if variant is not None:
            return Utf8Encoder(self.errors, variant=variant, start_position=position)
        return codecs.getincrementalencoder(self.target)(self.errors)

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

    # -- checkpoints -----------------------------------------------------------------------

    def checkpoint(self) -> TranscoderCheckpoint:
        """An immutable, serialisable snapshot from which ``from_checkpoint`` continues
        exactly; ``CheckpointUnsupported`` for a codec whose state cannot be read (see
        the module docstring)."""
        from .autodecode import AutoDecoder
        from .transcoderstate import CheckpointUnsupported, TranscoderCheckpoint

        self._refuse_unsupported(CheckpointUnsupported, self._decoding)
        encoder = self.encoder
        if not isinstance(encoder, codecs.IncrementalEncoder):
            raise CheckpointUnsupported(f"the encoder {encoder!r} does not report its state")
        position = encoder.position if isinstance(encoder, Utf8Encoder) else 0
        base = TranscoderCheckpoint(
            source=self.source,
            target=self.target,
            errors=self.errors,
            bom=self.bom,
            sniffing=self._sniffing,
            sniffed=self._sniffed,
            decoding=self._decoding,
            encoder_state=encoder.getstate(),
            encoder_position=position,
            at_text_start=self._at_text_start,
            characters=self._characters,
            carry=self._carry,
        )
        decoder = self.decoder
        if isinstance(decoder, Utf8Decoder):
            return replace(base, utf8=decoder.checkpoint())
        if isinstance(decoder, AutoDecoder):
            return replace(base, auto=decoder.checkpoint())
        assert isinstance(decoder, codecs.IncrementalDecoder)
        held, flag = decoder.getstate()
        return replace(base, held=bytes(held), flag=flag)

    def _refuse_unsupported(self, error: type[ValueError], decoding: str) -> None:
        from .transcoderstate import unsupported_reason

        for codec in (self.source, decoding, self.target):
            reason = None if codec == AUTO or _family(codec) else unsupported_reason(codec)
            if reason is not None:
                raise error(
                    f"a transcoder from {self.source} to {self.target} cannot be"
                    f" checkpointed: {reason}"
                )

    @classmethod
    def from_checkpoint(
        cls, checkpoint: TranscoderCheckpoint, *, on_malformed: OnMalformed | None = None
    ) -> Transcoder:
        """A transcoder that continues exactly where the checkpointed one stood: the same
        bytes out, the same events and offsets.  ``ValueError`` for a checkpoint whose
        parts do not fit together."""
        from .autodecode import AutoDecoder

        cp = checkpoint
        transcoder = cls(
            cp.source, cp.target, errors=cp.errors, bom=cp.bom, on_malformed=on_malformed
        )
        transcoder._check_fits(cp)
        transcoder._sniffing = cp.sniffing
        transcoder._sniffed = cp.sniffed
        transcoder._decoding = cp.decoding
        if cp.utf8 is not None:
            transcoder.decoder = Utf8Decoder.from_checkpoint(cp.utf8, on_malformed=on_malformed)
        elif cp.auto is not None:
            transcoder.decoder = AutoDecoder.from_checkpoint(cp.auto, on_malformed=on_malformed)
        else:
            decoder = codecs.getincrementaldecoder(cp.decoding)(cp.errors)
            decoder.setstate((cp.held, cp.flag))
            transcoder.decoder = decoder
        encoder = transcoder._new_encoder(cp.encoder_position)
        encoder.setstate(cp.encoder_state)
        transcoder.encoder = encoder
        transcoder._at_text_start = cp.at_text_start
        transcoder._characters = cp.characters
        transcoder._carry = cp.carry
        return transcoder

    def _check_fits(self, cp: TranscoderCheckpoint) -> None:
        """``ValueError`` unless the parts of ``cp`` fit the transcoder its settings make."""

        def unfit(why: str) -> ValueError:
            return ValueError(f"a transcoder checkpoint whose parts do not fit: {why}")

        if cp.sniffing and not self._boms:
            raise unfit(f"looking for a BOM, which {cp.source} with bom={cp.bom!r} does not do")
        if cp.sniffing and cp.decoding != self._decoding:
            raise unfit(f"decoding {cp.decoding!r} before the BOM is known")
        if (cp.decoding == AUTO) != (cp.source == AUTO):
            raise unfit(f"decoding {cp.decoding!r} from source {cp.source!r}")
        try:
            known = cp.decoding == AUTO or codecs.lookup(cp.decoding).name == cp.decoding
        except LookupError:
            known = False
        if not known:
            raise unfit(f"decoding {cp.decoding!r}, not a codec's own name")
        variant = _family(cp.decoding)
        if (cp.auto is not None) != (cp.decoding == AUTO):
            raise unfit("an auto-decoder checkpoint goes with decoding 'auto' and only with it")
        if (cp.utf8 is not None) != (variant is not None):
            raise unfit("a UTF-8 decoder checkpoint goes with a UTF-8 family decoding and only")
        inner = cp.utf8 or cp.auto
        if inner is not None and inner.errors != cp.errors:
            raise unfit(f"the decoder's errors {inner.errors!r} are not {cp.errors!r}")
        if cp.utf8 is not None and cp.utf8.variant != variant:
            raise unfit(f"a {cp.utf8.variant} decoder for {cp.decoding}")
        if inner is not None and (cp.held or cp.flag):
            raise unfit("a codec's state beside the decoder's checkpoint")
        self._refuse_unsupported(ValueError, cp.decoding)
