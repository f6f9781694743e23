"""utf8stream: streaming, asynchronous UTF-8 transcoding."""

from __future__ import annotations

from .decoder import DecoderCheckpoint, Utf8Decoder
from .events import DecoderStatistics, Malformed, MalformedKind, Utf8DecodeError

__all__ = [
    "DecoderCheckpoint",
    "DecoderStatistics",
    "Malformed",
    "MalformedKind",
    "Utf8DecodeError",
    "Utf8Decoder",
]
__version__ = "0.1.0"
