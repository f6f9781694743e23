"""utf8stream: streaming, asynchronous UTF-8 transcoding."""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from .apps.files import (
    SameFileError,
    TranscodeSummary,
    UnmappableCharacterError,
    WorkerError,
    transcode_file,
)

# Importing .core.registry registers the codecs wtf-8, cesu-8, mutf-8
# (java-modified-utf-8) and utf-8z, and the error policy "optu-8".
from .core import registry  # noqa: F401
from .core._accel import use_accelerator
from .core.boundaries import (
    char_start,
    cut_at_boundary,
    next_char_start,
    split_points,
    variant_char_start,
)
from .core.decoder import DecoderCheckpoint, Utf8Decoder
from .core.encoder import Utf8EncodeError, Utf8Encoder
from .core.events import DecoderStatistics, Malformed, MalformedKind, Utf8DecodeError
from .core.transcoder import Transcoder

if TYPE_CHECKING:
    from .aio.sources import as_byte_stream
    from .aio.streams import (
        LineReceiveStream,
        StreamStatistics,
        Utf8ReceiveStream,
        Utf8SendStream,
        Utf8Stream,
    )

    # Listed in __all__ only where trio is installed (below).
    from .aio.trio_stream import ValidUtf8ReceiveStream as ValidUtf8ReceiveStream
    from .apps.checkpoints import CheckpointStore
    from .apps.files import atranscode_file, open_text
    from .apps.follow import (
        CheckpointError,
        FileIdentity,
        FollowCheckpoint,
        Follower,
        FollowerStatistics,
        Line,
        Notice,
        follow,
        read_checkpoint,
        write_checkpoint,
    )
    from .apps.many import ManyFollower, follow_many
    from .core.linecodec import (
        ByteLine,
        CodecLineDecoder,
        LineBatch,
        LineDecoder,
        LineEngine,
        LineItem,
        Utf8LineDecoder,
        line_decoder,
    )
    from .core.lines import (
        DEFAULT_MAX_LINE_BYTES,
        DEFAULT_ON_OVERLONG,
        OVERLONG_POLICIES,
        LineSplitter,
        LineSplitterStatistics,
        LineTooLong,
    )
    from .core.multiline import MultilineEvent, MultilineJoiner

# The async layers (anyio), and the line engine, load on first use, so the core and the
# command line start fast (``utf8stream transcode`` needs neither).
_LAZY = {
    **dict.fromkeys(
        [
            "ByteLine",
            "CodecLineDecoder",
            "LineBatch",
            "LineDecoder",
            "LineEngine",
            "LineItem",
            "Utf8LineDecoder",
            "line_decoder",
        ],
        "core.linecodec",
    ),
    **dict.fromkeys(
        [
            "DEFAULT_MAX_LINE_BYTES",
            "DEFAULT_ON_OVERLONG",
            "OVERLONG_POLICIES",
            "LineSplitter",
            "LineSplitterStatistics",
            "LineTooLong",
        ],
        "core.lines",
    ),
    **dict.fromkeys(["MultilineEvent", "MultilineJoiner"], "core.multiline"),
    **dict.fromkeys(
        ["LineReceiveStream", "StreamStatistics", "Utf8ReceiveStream", "Utf8SendStream"],
        "aio.streams",
    ),
    "Utf8Stream": "aio.streams",
    "as_byte_stream": "aio.sources",
    "atranscode_file": "apps.files",
    "open_text": "apps.files",
    "CheckpointStore": "apps.checkpoints",
    "ManyFollower": "apps.many",
    "follow_many": "apps.many",
    **dict.fromkeys(
        [
            "CheckpointError",
            "FileIdentity",
            "FollowCheckpoint",
            "Follower",
            "FollowerStatistics",
            "Line",
            "Notice",
            "follow",
            "read_checkpoint",
            "write_checkpoint",
        ],
        "apps.follow",
    ),
    # Needs the trio extra: importing it without trio raises ModuleNotFoundError naming it.
    "ValidUtf8ReceiveStream": "aio.trio_stream",
    # Internal-grade (for apps/files.py), so not in __all__; kept importable from here.
    "rejoined_event": "core.boundaries",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'utf8stream' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_ON_OVERLONG",
    "OVERLONG_POLICIES",
    "ByteLine",
    "CheckpointError",
    "CheckpointStore",
    "CodecLineDecoder",
    "DecoderCheckpoint",
    "DecoderStatistics",
    "FileIdentity",
    "FollowCheckpoint",
    "Follower",
    "FollowerStatistics",
    "Line",
    "LineBatch",
    "LineDecoder",
    "LineEngine",
    "LineItem",
    "LineReceiveStream",
    "LineSplitter",
    "LineSplitterStatistics",
    "LineTooLong",
    "Malformed",
    "MalformedKind",
    "ManyFollower",
    "MultilineEvent",
    "MultilineJoiner",
    "Notice",
    "SameFileError",
    "StreamStatistics",
    "TranscodeSummary",
    "Transcoder",
    "UnmappableCharacterError",
    "Utf8DecodeError",
    "Utf8Decoder",
    "Utf8EncodeError",
    "Utf8Encoder",
    "Utf8LineDecoder",
    "Utf8ReceiveStream",
    "Utf8SendStream",
    "Utf8Stream",
    "WorkerError",
    "as_byte_stream",
    "atranscode_file",
    "char_start",
    "cut_at_boundary",
    "follow",
    "follow_many",
    "line_decoder",
    "next_char_start",
    "open_text",
    "read_checkpoint",
    "split_points",
    "transcode_file",
    "use_accelerator",
    "variant_char_start",
    "write_checkpoint",
]


def _trio_installed() -> bool:
    try:
        return importlib.util.find_spec("trio") is not None
    except ValueError:  # sys.modules["trio"] is None or has no spec: not importable
        return False


# Listed only where it can be imported, so that ``from utf8stream import *`` works
# without the trio extra.
if _trio_installed():
    __all__.append("ValidUtf8ReceiveStream")
__version__ = "0.1.0"
