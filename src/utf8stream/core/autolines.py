"""``encoding="auto"`` for the line engine: ``AutoLineEngine`` holds the first bytes until
an ``EncodingDetector`` decides, then makes the ``LineEngine`` of the encoding chosen and
replays them into it (after a byte-order mark; offsets absolute).  Lines are cut in the
bytes, so a stateful encoding (ISO-2022-JP), whose newline bytes can belong to a
character, is refused with a clear message; input that is not text raises
``NotTextError``."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._linetypes import ByteLine, LineBatch, LineItem
from .autodecode import DEFAULT_MAX_LOOKAHEAD, marked_codec, text_encoding
from .autodoubt import DoubtTracker, OnDoubt, doubt_tracker
from .linecodec import LineEngine
from .linedecoders import LineDecoder, line_decoder
from .lineoptions import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG, check_line_options

if TYPE_CHECKING:
    from .detector import Detection
    from .events import Malformed

__all__ = ["AutoLineEngine", "auto_line_decoder", "detect_line_codec", "line_codec"]


def auto_line_decoder(
    detection: Detection,
    errors: str = "replace",
    *,
    start_offset: int = 0,
    on_malformed: Callable[[Malformed], object] | None = None,
) -> LineDecoder:
    """The line engine's decoder for what the detector chose (``line_decoder``).

    Its first byte is the one after the byte-order mark: feed the engine (made with
    ``offset=start_offset + detection.bom_length``) the bytes from there.  A stateful
    encoding, whose newline bytes may belong to a character, is refused.
    """
    encoding = text_encoding(detection)
    try:
        return line_decoder(
            encoding,
            errors,
            start_offset=start_offset + detection.bom_length,
            on_malformed=on_malformed,
        )
    except ValueError as exc:
        raise ValueError(
            f"the input was detected as {encoding} ({detection.reason}), a stateful"
            " encoding whose newline bytes can belong to a character: lines cannot be cut"
            f" in it; transcode it whole instead (encoding {encoding!r})"
        ) from exc


class AutoLineEngine:
    """A ``LineEngine`` over the encoding an ``EncodingDetector`` chooses.

    ``feed`` and ``finish`` are the engine's; until the detector decides they hold the
    bytes (at most ``max_lookahead``) and return nothing, then the engine gets them all
    and every byte after.  ``options`` are ``LineEngine``'s (``newline``, ``keepends``,
    ``max_line_bytes``, ``on_overlong``, ``on_overlong_line``, ``each_offset``...);
    ``offset`` is the stream's first byte.  ``engine`` is None until decided.
    ``on_doubt`` is ``AutoDecoder``'s.
    """

    def __init__(
        self,
        errors: str = "replace",
        *,
        offset: int = 0,
        on_malformed: Callable[[Malformed], object] | None = None,
        max_lookahead: int = DEFAULT_MAX_LOOKAHEAD,
        on_doubt: OnDoubt | None = None,
        **options: Any,
    ) -> None:
        codecs.lookup_error(errors)
        check_line_options(
            options.get("newline"),
            options.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES),
            options.get("on_overlong", DEFAULT_ON_OVERLONG),
        )
        self.errors = errors
        self.offset = offset
        self._on_malformed = on_malformed
        self._on_doubt = on_doubt
        self._doubt: DoubtTracker | None = None
        self.max_lookahead = max_lookahead
        self._options = options
        from .detector import EncodingDetector

        self._detector = EncodingDetector(max_lookahead)
        self._fed = 0
        self.detection: Detection | None = None
        self.engine: LineEngine | None = None

    @property
    def encoding(self) -> str | None:
        """The encoding chosen, None until decided."""
        return None if self.detection is None else self.detection.encoding

    @property
    def buffered(self) -> int:
        """The engine's ``buffered``; until decided, the bytes the detector holds."""
        return self._detector.looked_at if self.engine is None else self.engine.buffered

    def feed(self, data: bytes | memoryview) -> list[LineBatch | LineItem]:
        if self.engine is not None:
            self._track(data, False)
            return self.engine.feed(data)
        data = bytes(data)
        found = self._detector.feed(data)
        self._fed += len(data)
        if found is None:
            return []
        after = self._fed - found.looked_at
        assert 0 <= after <= len(data), (after, len(data))  # see AutoDecoder.decode
        return self._start(found, data[len(data) - after :])

    def finish(self, **kwargs: Any) -> list[LineBatch | LineItem]:
        out: list[LineBatch | LineItem] = []
        if self.engine is None:
            out = self._start(self._detector.finish(), b"")
        self._track(b"", True)
        assert self.engine is not None
        return out + self.engine.finish(**kwargs)

    def records(self, items: list[LineBatch | LineItem]) -> Iterator[ByteLine]:
        """The engine's ``records`` (items come only once it is made)."""
        if self.engine is None:
            return iter(())
        return self.engine.records(items)

    def _start(self, found: Detection, tail: bytes) -> list[LineBatch | LineItem]:
        decoder = auto_line_decoder(
            found, self.errors, start_offset=self.offset, on_malformed=self._on_malformed
        )
        self.detection = found
        bom = found.bom_length
        self.engine = LineEngine(decoder, offset=self.offset + bom, **self._options)
        head = self._detector.buffered() + tail
        self._doubt = doubt_tracker(
            found, start=self.offset, max_lookahead=self.max_lookahead, on_doubt=self._on_doubt
        )
        self._track(head[bom:], False)
        return self.engine.feed(head[bom:])

    def _track(self, data: bytes | memoryview, final: bool) -> None:
        if self._doubt is not None:
            self._doubt.feed(data, final)
            if self._doubt.done:
                self._doubt = None


def detect_line_codec(head: bytes, name: str = "the input") -> str:
    """The codec to cut a stream into lines with, told by its first bytes ``head`` (the
    detector's decision on them, or on its first ``DEFAULT_MAX_LOOKAHEAD``): with a
    byte-order mark, the codec that reads and drops it (``utf-8-sig``, ``utf-16``,
    ``utf-32``).  ``NotTextError`` for input that is not text; ``ValueError`` for a
    stateful encoding (ISO-2022-JP)."""
    from .detector import detect

    return line_codec(detect(bytes(head[:DEFAULT_MAX_LOOKAHEAD])), name)


def line_codec(found: Detection, name: str = "the input") -> str:
    """The codec to cut lines with for the detector's decision ``found`` (see
    ``detect_line_codec``)."""
    codec = marked_codec(found, name)
    auto_line_decoder(found)  # refuses what cannot be cut in lines, saying why
    return codec
