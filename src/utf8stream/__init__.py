"""utf8stream: streaming, asynchronous UTF-8 transcoding."""

from __future__ import annotations

from .boundaries import char_start, cut_at_boundary, next_char_start, rejoined_event, split_points
from .decoder import DecoderCheckpoint, Utf8Decoder
from .events import DecoderStatistics, Malformed, MalformedKind, Utf8DecodeError
from .lines import LineSplitter, LineTooLong
from .sources import as_byte_stream
from .streams import (
    LineReceiveStream,
    StreamStatistics,
    Utf8ReceiveStream,
    Utf8SendStream,
    Utf8Stream,
)
from .tail import FileIdentity, FollowCheckpoint, Follower, Line, follow, write_checkpoint

__all__ = [
    "DecoderCheckpoint",
    "DecoderStatistics",
    "FileIdentity",
    "FollowCheckpoint",
    "Follower",
    "Line",
    "LineReceiveStream",
    "LineSplitter",
    "LineTooLong",
    "Malformed",
    "MalformedKind",
    "StreamStatistics",
    "Utf8DecodeError",
    "Utf8Decoder",
    "Utf8ReceiveStream",
    "Utf8SendStream",
    "Utf8Stream",
    "as_byte_stream",
    "char_start",
    "cut_at_boundary",
    "follow",
    "next_char_start",
    "rejoined_event",
    "split_points",
    "write_checkpoint",
]
__version__ = "0.1.0"
