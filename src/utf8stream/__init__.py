"""utf8stream: streaming, asynchronous UTF-8 transcoding."""

from __future__ import annotations

from .boundaries import char_start, cut_at_boundary, next_char_start, rejoined_event, split_points
from .decoder import DecoderCheckpoint, Utf8Decoder
from .events import DecoderStatistics, Malformed, MalformedKind, Utf8DecodeError

__all__ = [
    "DecoderCheckpoint",
    "DecoderStatistics",
    "Malformed",
    "MalformedKind",
    "Utf8DecodeError",
    "Utf8Decoder",
    "char_start",
    "cut_at_boundary",
    "next_char_start",
    "rejoined_event",
    "split_points",
]
__version__ = "0.1.0"
