"""``encoding="auto"``: the one place that turns a detection into a decoder.

``AutoDecoder`` feeds the start of a byte stream to an ``EncodingDetector`` until it
decides (or ``max_lookahead`` bytes, or the end), makes the decoder of the encoding chosen
(``Utf8Decoder`` for UTF-8, Python's incremental codec for any other) and replays into it
exactly the bytes the detector looked at, then the rest of the chunk that decided: no byte
is lost or decoded twice.  A byte-order mark is skipped, as the codecs that read one do
(``utf-8-sig``, ``utf-16``); offsets stay absolute, so a UTF-8 decoder's malformed units
carry the offsets of the whole stream.

Input that is not text raises ``NotTextError`` (a ``ValueError``) and nothing of it is
decoded.  ``AutoLineEngine`` is the same for the line engine, which cuts lines
in the bytes and so refuses a stateful encoding (ISO-2022-JP) with a clear message
(``autolines``).

The choice is part of the checkpoint: a decoder resumed from an ``AutoCheckpoint`` taken
after the decision never detects again.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from .autodoubt import DoubtTracker, OnDoubt, doubt_tracker
from .decoder import DecoderCheckpoint, OnMalformed, Utf8Decoder
from .events import DecoderStatistics

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from .detector import Detection

#: ``EncodingDetector``'s default (``detector.DEFAULT_MAX_LOOKAHEAD``): the detector and
#: its model load only when a stream asks for detection.
DEFAULT_MAX_LOOKAHEAD = 65536

__all__ = [
    "AUTO",
    "DEFAULT_MAX_LOOKAHEAD",
    "AutoCheckpoint",
    "AutoDecoder",
    "NotTextError",
    "is_auto",
    "marked_codec",
    "text_encoding",
]

#: The value of ``encoding=`` that asks for detection.
AUTO = "auto"


def is_auto(encoding: str | None) -> bool:
    """Whether ``encoding`` asks for detection (``"auto"``, any case)."""
    return isinstance(encoding, str) and encoding.lower() == AUTO


class NotTextError(ValueError):
    """The detector found the input is not text: it is refused, never decoded."""

    def __init__(self, detection: Detection, name: str = "the input") -> None:
        self.detection = detection
        super().__init__(
            f"{name} is not text ({detection.reason}; after {detection.looked_at} bytes):"
            " refusing to decode it"
        )


def text_encoding(detection: Detection, name: str = "the input") -> str:
    """The encoding a detection chose; ``NotTextError`` if the input is not text."""
    if detection.encoding is None:
        raise NotTextError(detection, name)
    return detection.encoding


#: The codecs that read a byte-order mark and drop it, by the encoding it marks.
_MARK_READERS = {
    "utf-8": "utf-8-sig",
    "utf-16-le": "utf-16",
    "utf-16-be": "utf-16",
    "utf-32-le": "utf-32",
    "utf-32-be": "utf-32",
}


def marked_codec(detection: Detection, name: str = "the input") -> str:
    """The codec to read a whole stream with, for the detector's decision on its head:
    with a byte-order mark, the codec that reads the mark as a mark and drops it
    (``utf-8-sig``, ``utf-16``, ``utf-32``).  ``NotTextError`` if it is not text."""
    encoding = text_encoding(detection, name)
    return _MARK_READERS.get(encoding, encoding) if detection.bom_length else encoding


@dataclass(frozen=True)
class AutoCheckpoint:
    """A serialisable snapshot of an ``AutoDecoder``.

    ``encoding`` None: not decided yet, and ``held`` is the bytes the detector looked at.
    Decided: ``utf8`` is the UTF-8 decoder's checkpoint, or for another codec ``held`` and
    ``flag`` are its state (``IncrementalDecoder.getstate()``) and ``position`` the next
    byte's offset.
    """

    encoding: str | None
    errors: str = "replace"
    start_offset: int = 0
    max_lookahead: int = DEFAULT_MAX_LOOKAHEAD
    bom_length: int = 0
    position: int = 0
    held: bytes = b""
    flag: int = 0
    chars_out: int = 0
    utf8: DecoderCheckpoint | None = None

    def to_json(self) -> str:
        """Serialise to a JSON object (bytes as hex strings, the UTF-8 decoder's
        checkpoint as its own ``to_json`` object)."""
        import json  # here: importing the decoder does without it

        raw: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        raw["held"] = self.held.hex()
        raw["utf8"] = None if self.utf8 is None else json.loads(self.utf8.to_json())
        raw["version"] = 1
        return json.dumps(raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AutoCheckpoint:
        """Inverse of ``to_json``."""
        import json

        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.pop("version", None) != 1:
            raise ValueError("not a utf8stream auto-decoder checkpoint (version 1)")
        unknown = set(raw) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown checkpoint fields: {sorted(unknown)}")
        raw["held"] = bytes.fromhex(raw.get("held", ""))
        utf8 = raw.get("utf8")
        raw["utf8"] = None if utf8 is None else DecoderCheckpoint.from_json(json.dumps(utf8))
        return cls(**raw)


class AutoDecoder:
    """An incremental decoder of a byte stream in an encoding it detects.

    ``decode(data, final)`` returns "" while the detector is still looking (it holds at
    most ``max_lookahead`` bytes), then the text of everything fed.  ``errors`` is the
    chosen decoder's policy; ``on_malformed`` and malformed-unit offsets are the UTF-8
    decoder's (counted from ``start_offset``, the offset of the first byte fed).
    ``on_doubt`` is given at most one ``EncodingDoubt``: bytes after the decision invalid
    in the encoding chosen, which one set aside on statistics decodes (``autodoubt``).
    """

    def __init__(
        self,
        errors: str = "replace",
        *,
        start_offset: int = 0,
        on_malformed: OnMalformed | None = None,
        max_lookahead: int = DEFAULT_MAX_LOOKAHEAD,
        on_doubt: OnDoubt | None = None,
    ) -> None:
        codecs.lookup_error(errors)
        self.errors = errors
        self.start_offset = start_offset
        self.max_lookahead = max_lookahead
        self._on_malformed = on_malformed
        self._on_doubt = on_doubt
        self._doubt: DoubtTracker | None = None
        from .detector import EncodingDetector

        self._detector: EncodingDetector | None = EncodingDetector(max_lookahead)
        self._fed = 0
        self._detection: Detection | None = None
        self._encoding: str | None = None
        self._bom = 0
        self._utf8: Utf8Decoder | None = None
        self._codec: codecs.IncrementalDecoder | None = None
        self._codec_chars = 0

    @property
    def encoding(self) -> str | None:
        """The encoding chosen (a codec name), None until decided."""
        return self._encoding

    @property
    def detection(self) -> Detection | None:
        """The detector's decision (None until decided, or for a resumed decoder)."""
        return self._detection

    @property
    def utf8(self) -> Utf8Decoder | None:
        """The UTF-8 decoder, when UTF-8 was chosen."""
        return self._utf8

    @property
    def position(self) -> int:
        """The absolute offset of the next byte."""
        return self.start_offset + self._fed

    def decode(self, data: ReadableBuffer, final: bool = False) -> str:
        """Decode a chunk (any bytes-like object); "" while the detector looks."""
        if self._detector is None:
            if not isinstance(data, bytes | bytearray | memoryview):
                data = memoryview(data)
            return self._decode(data, final)
        data = bytes(data)
        detector = self._detector
        found = detector.feed(data)
        if found is None and final:
            found = detector.finish()
        if found is None:
            self._fed += len(data)
            return ""
        # Of the bytes fed in all, those after the ones looked at are the end of this chunk.
        after = self._fed + len(data) - found.looked_at
        # The detector decides at ``max_lookahead`` at the latest, so nothing it let
        # pass is in an earlier chunk.
        assert 0 <= after <= len(data), (after, len(data))
        head = detector.buffered() + data[len(data) - after :]
        self._fed = 0  # the replay counts every byte again, once
        self._choose(found)
        self._detection = found
        return self._decode(head[found.bom_length :], final, skipped=found.bom_length)

    def _choose(self, detection: Detection) -> None:
        encoding = text_encoding(detection)
        self._detector = None
        self._start(encoding, detection.bom_length)
        self._doubt = doubt_tracker(
            detection,
            start=self.start_offset,
            max_lookahead=self.max_lookahead,
            on_doubt=self._on_doubt,
        )

    def _start(self, encoding: str, bom: int) -> None:
        self._encoding = encoding
        self._bom = bom
        if codecs.lookup(encoding).name == "utf-8":
            self._utf8 = Utf8Decoder(
                self.errors, start_offset=self.start_offset + bom, on_malformed=self._on_malformed
            )
        else:
            self._codec = codecs.getincrementaldecoder(encoding)(self.errors)

    def _decode(self, data: bytes | bytearray | memoryview, final: bool, skipped: int = 0) -> str:
        self._fed += len(data) + skipped
        if self._doubt is not None:
            self._track(data, final)
        if self._utf8 is not None:
            return self._utf8.decode(data, final)
        assert self._codec is not None
        text = self._codec.decode(bytes(data), final)
        self._codec_chars += len(text)
        return text

    def _track(self, data: bytes | bytearray | memoryview, final: bool) -> None:
        assert self._doubt is not None
        self._doubt.feed(data, final)
        if self._doubt.done:
            self._doubt = None

    def statistics(self) -> DecoderStatistics:
        """Bytes fed (those the detector holds included) and what the decoder made of
        them (malformed units are counted by the UTF-8 decoder only)."""
        if self._utf8 is not None:
            return replace(self._utf8.statistics(), bytes_fed=self._fed)
        return DecoderStatistics(bytes_fed=self._fed, chars_out=self._codec_chars)

    def checkpoint(self) -> AutoCheckpoint:
        base = AutoCheckpoint(
            self._encoding,
            self.errors,
            self.start_offset,
            self.max_lookahead,
            self._bom,
            self.position,
            chars_out=self._codec_chars,
        )
        if self._detector is not None:
            return replace(base, held=self._detector.buffered())
        if self._utf8 is not None:
            return replace(base, utf8=self._utf8.checkpoint())
        assert self._codec is not None
        held, flag = self._codec.getstate()
        return replace(base, held=bytes(held), flag=flag)

    @classmethod
    def from_checkpoint(
        cls, checkpoint: AutoCheckpoint, *, on_malformed: OnMalformed | None = None
    ) -> AutoDecoder:
        """A decoder that goes on where the checkpointed one stood; once the encoding was
        chosen it is not detected again."""
        cp = checkpoint
        decoder = cls(
            cp.errors,
            start_offset=cp.start_offset,
            on_malformed=on_malformed,
            max_lookahead=cp.max_lookahead,
        )
        if cp.encoding is None:
            decoder.decode(cp.held)
            return decoder
        decoder._detector = None
        decoder._start(cp.encoding, cp.bom_length)
        decoder._fed = cp.position - cp.start_offset
        decoder._codec_chars = cp.chars_out
        if cp.utf8 is not None:
            decoder._utf8 = Utf8Decoder.from_checkpoint(cp.utf8, on_malformed=on_malformed)
        elif decoder._codec is not None:
            decoder._codec.setstate((cp.held, cp.flag))
        return decoder

    @classmethod
    def resumed(
        cls,
        encoding: str,
        errors: str = "replace",
        *,
        start_offset: int = 0,
        on_malformed: OnMalformed | None = None,
    ) -> AutoDecoder:
        """A decoder of ``encoding`` (a choice made before) from ``start_offset`` on,
        after any byte-order mark: it does not detect."""
        decoder = cls(errors, start_offset=start_offset, on_malformed=on_malformed)
        decoder._detector = None
        decoder._start(encoding, 0)
        return decoder

    def mark_gap(self, lost: int | None = None) -> None:
        """Bytes were lost here (see ``Utf8Decoder.mark_gap``): for UTF-8 only, once
        chosen."""
        if self._utf8 is None:
            raise ValueError("mark_gap() needs a stream detected as UTF-8")
        self._utf8.mark_gap(lost)
        self._doubt = None  # bytes are missing: what follows says nothing of the choice
        self._fed = self._utf8.position - self.start_offset
