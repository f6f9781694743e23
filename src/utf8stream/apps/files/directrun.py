"""The direct path: UTF-8 to or from UTF-16/UTF-32, and the UTF-8 repair, bytes to bytes."""

from __future__ import annotations

import sys

from ...core.direct import COUNTED_KINDS, byte_transcoder
from ...core.events import Malformed, MalformedKind, Utf8DecodeError
from .results import EventCounter, OnMalformed

__all__ = ["NATIVE_ORDER", "WITHOUT_BOM", "DirectRun"]

#: Targets whose codec writes a BOM first, then the native byte order.
NATIVE_ORDER = {
    "utf-16": "utf-16-le" if sys.byteorder == "little" else "utf-16-be",
    "utf-32": "utf-32-le" if sys.byteorder == "little" else "utf-32-be",
}
#: The codec each BOM-writing target is after its BOM.
WITHOUT_BOM = {**NATIVE_ORDER, "utf-8-sig": "utf-8"}
#: What CPython's codecs say of each kind of unit of a UTF-16 or UTF-32 source (the
#: message of a strict run's error, as the codec path raised it).
_CODEC_REASONS = {
    ("16", MalformedKind.INVALID_BYTE): "illegal encoding",
    ("16", MalformedKind.SURROGATE): "illegal UTF-16 surrogate",
    ("16", MalformedKind.TRUNCATED_AT_END): "unexpected end of data",
    ("32", MalformedKind.INVALID_BYTE): "code point not in range(0x110000)",
    ("32", MalformedKind.SURROGATE): "code point in surrogate code point range(0xd800, 0xe000)",
    ("32", MalformedKind.TRUNCATED_AT_END): "truncated data",
}


class DirectRun:
    """What ``CodecRun`` does, for UTF-8 to or from UTF-16/UTF-32 with ``errors`` replace,
    ignore or strict: bytes to bytes in one ``ByteTranscoder`` call per chunk (in C with
    the accelerator), no str built.  The units are counted by the transcoder; an event
    is made only for ``counter.forward`` (``on_malformed``), with absolute offsets.
    Nothing is unmappable: these targets encode every character the source decodes to.

    ``on_final`` sees the one unit the last call can meet (a held prefix, cut by the end
    of a piece), as ``CodecRun``'s does.  A strict failure raises what the str path raises:
    ``Utf8DecodeError`` (offset within the piece) for a UTF-8 source, the codec's
    ``UnicodeDecodeError`` for the others, with the absolute offset in its reason.
    """

    unmappable = 0

    def __init__(
        self,
        source: str,
        target: str,
        errors: str,
        bom: str,
        counter: EventCounter,
        start: int = 0,
        on_final: OnMalformed | None = None,
    ) -> None:
        self.source, self.start, self.on_final = source, start, on_final
        self.target = NATIVE_ORDER.get(target, target)
        self.transcoder = byte_transcoder(source, self.target, errors, counter.forward, start)
        byte_order_mark = "\ufeff".encode(self.target)
        #: Written in front of the first call's output by the target codec itself.
        self._codec_bom = byte_order_mark if target in NATIVE_ORDER else b""
        self._bom_to_strip = byte_order_mark if bom in ("strip", "add") else b""
        self._bom_to_add = byte_order_mark if bom == "add" and not self._codec_bom else b""
        self._at_text_start = True
        self._first_call = True
        self._characters = 0
        self._counts = [0] * len(COUNTED_KINDS)
        self._tail = b""  # the last bytes given: a held prefix is among them
        self.fed = 0
        self.partial_output = b""

    @property
    def text_characters(self) -> int:
        """Characters decoded and written so far (after the BOM policy)."""
        self._drain()
        return self._characters

    def transcode(self, data: bytes | memoryview, final: bool = False) -> bytes:
        transcoder = self.transcoder
        self._before(data, final)
        out = self._bom_policy(transcoder.transcode(data, final), final)
        failure = transcoder.failure
        if failure is None:
            return out
        self.partial_output = out
        raise self._error(failure, out)

    def transcode_into(
        self, data: memoryview, out: bytearray | memoryview, final: bool = False
    ) -> int:
        """``transcode`` writing into ``out`` (from its start), which must have room for
        ``bound(len(data))`` bytes; the number of bytes written."""
        if self._at_text_start or self._first_call:  # the BOM policy: once, on bytes
            result = self.transcode(data, final)
            out[: len(result)] = result
            return len(result)
        self._before(data, final)
        written = self.transcoder.transcode_into(data, out, 0, final)
        failure = self.transcoder.failure
        if failure is None:
            return written
        self.partial_output = bytes(out[:written])
        raise self._error(failure, self.partial_output)

    def bound(self, n: int) -> int:
        """Room ``transcode_into`` needs for ``n`` input bytes."""
        return self.transcoder.bound(n) + len(self._codec_bom) + len(self._bom_to_add)

    def _before(self, data: bytes | memoryview, final: bool) -> None:
        if final and self.on_final is not None and self.source == "utf-8":
            held = self.transcoder.buffered
            if held and not data:
                cut = self._tail[len(self._tail) - held :]
                end = self.start + self.fed
                self.on_final(Malformed(end - held, cut, MalformedKind.TRUNCATED_AT_END))
        self.fed += len(data)
        self._tail = (self._tail + data[-3:])[-3:]

    def counts(self) -> dict[MalformedKind, int]:
        self._drain()
        return {kind: n for kind, n in zip(COUNTED_KINDS, self._counts, strict=True) if n}

    def _drain(self) -> None:
        *by_kind, characters = self.transcoder.drain()
        self._characters += characters
        for i, n in enumerate(by_kind):
            self._counts[i] += n

    def _bom_policy(self, out: bytes, final: bool) -> bytes:
        """``Transcoder``'s BOM policy on the output (a leading U+FEFF is the output's
        first bytes), and the BOM a ``utf-16``/``utf-32`` target writes first."""
        if self._at_text_start and (out or final):
            if out:
                self._at_text_start = False
                if self._bom_to_strip and out.startswith(self._bom_to_strip):
                    out = out[len(self._bom_to_strip) :]
                    self._characters -= 1
            if self._bom_to_add:
                self._at_text_start = False
                out = self._bom_to_add + out
                self._characters += 1
        if self._first_call:
            self._first_call = False
            out = self._codec_bom + out
        return out

    def _error(self, failure: Malformed, out: bytes) -> UnicodeDecodeError:
        if self.source == "utf-8":
            relative = Malformed(failure.offset - self.start, failure.data, failure.kind)
            return Utf8DecodeError(relative, out.decode(self.target, "replace"))
        width = "16" if "16" in self.source else "32"
        reason = _CODEC_REASONS[width, failure.kind]
        if failure.kind is MalformedKind.TRUNCATED_AT_END and len(failure.data) == 1:
            reason = "truncated data"  # an odd byte, not a cut surrogate pair
        return UnicodeDecodeError(
            self.source,
            failure.data,
            0,
            len(failure.data),
            f"{reason} (the unit at byte offset {failure.offset})",
        )
