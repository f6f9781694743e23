"""A decoder and a transform in one: bytes in, transformed text out, one checkpoint for
both (see ``transformed.py`` for how transforms apply to a text stream).  Its own module,
so that what only asks for lines (the command line) does without it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .autodecode import AutoDecoder
    from .decoder import DecoderCheckpoint, OnMalformed, Utf8Decoder
    from .transform import OnChange, TextTransform, TransformCheckpoint

__all__ = ["TransformedCheckpoint", "TransformingDecoder"]


@dataclass(frozen=True)
class TransformedCheckpoint:
    """A ``TransformingDecoder``'s checkpoint: the decoder's and the transform's."""

    decoder: DecoderCheckpoint
    transform: TransformCheckpoint

    def to_json(self) -> str:
        """Serialise to a JSON object holding both checkpoints' JSON forms."""
        import json

        return json.dumps(
            {
                "decoder": json.loads(self.decoder.to_json()),
                "transform": json.loads(self.transform.to_json()),
                "version": 1,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> TransformedCheckpoint:
        """Inverse of ``to_json``; ``ValueError`` for anything else."""
        import json

        from .decoder import DecoderCheckpoint
        from .transform import TransformCheckpoint

        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.pop("version", None) != 1:
            raise ValueError("not a utf8stream transformed-decoder checkpoint (version 1)")
        if set(raw) != {"decoder", "transform"}:
            raise ValueError("not a utf8stream transformed-decoder checkpoint (version 1)")
        return cls(
            DecoderCheckpoint.from_json(json.dumps(raw["decoder"])),
            TransformCheckpoint.from_json(json.dumps(raw["transform"])),
        )


class TransformingDecoder:
    """A ``Utf8Decoder`` whose text goes through a transform: bytes in, transformed text
    out, with one checkpoint for both.

    ``decode(data, final)`` is the decoder's, its text transformed (``final`` ends the
    transform's text too).  A strict decoder's ``Utf8DecodeError`` carries the
    transformed text before the unit as its ``partial``; the transform goes on after it.
    An ``AutoDecoder`` decodes too, but has no checkpoint of this kind.
    """

    def __init__(self, decoder: Utf8Decoder | AutoDecoder, transform: TextTransform) -> None:
        self.decoder = decoder
        self.transform = transform

    def decode(self, data: bytes, final: bool = False) -> str:
        from .events import Utf8DecodeError

        try:
            text = self.decoder.decode(data, final)
        except Utf8DecodeError as exc:
            exc.partial = self.transform.transform(exc.partial)
            raise
        return self.transform.transform(text, final)

    def checkpoint(self) -> TransformedCheckpoint:
        """Where both stand: a decoder built from it goes on as this one would."""
        from .decoder import Utf8Decoder

        if not isinstance(self.decoder, Utf8Decoder):
            raise TypeError("a TransformedCheckpoint is of a Utf8Decoder and a transform")
        return TransformedCheckpoint(self.decoder.checkpoint(), self.transform.checkpoint())

    @classmethod
    def from_checkpoint(
        cls,
        checkpoint: TransformedCheckpoint,
        *,
        on_malformed: OnMalformed | None = None,
        on_change: OnChange | None = None,
    ) -> TransformingDecoder:
        """The decoder and the transform, going on where ``checkpoint`` stood."""
        from .decoder import Utf8Decoder
        from .transform import transform_from_checkpoint

        return cls(
            Utf8Decoder.from_checkpoint(checkpoint.decoder, on_malformed=on_malformed),
            transform_from_checkpoint(checkpoint.transform, on_change),
        )
