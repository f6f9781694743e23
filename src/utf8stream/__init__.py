"""utf8stream: streaming, asynchronous UTF-8 transcoding.

The names below are the whole top level; the rest lives in named submodules:
``utf8stream.lines`` (the line engine, its decoders, constants and multi-line joining),
``utf8stream.follower`` (the follower classes and checkpoint files), ``utf8stream.stats``
(the statistics records), ``utf8stream.boundaries`` (character boundaries),
``utf8stream.accel`` (the C accelerator switch), ``utf8stream.detect`` (which encoding a
stream is in), ``utf8stream.trio`` (trio-only streams) and ``utf8stream.dask``.

Every name loads on first use (PEP 562), so that ``import utf8stream`` and the command
line start at once: a program pays only for the layers it uses (the async streams pull
in anyio, the follower the line engine).  Importing the package registers the codecs
``wtf-8``, ``cesu-8``, ``mutf-8`` (``java-modified-utf-8``) and ``utf-8z`` and the error
policy ``optu-8``.
"""

from __future__ import annotations

from .core import registry  # noqa: F401  (registers the codecs: see its docstring)

# ``typing`` is not imported at run time: it is most of an import's cost here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .aio.linestream import LineReceiveStream
    from .aio.sources import as_byte_stream
    from .aio.streams import Utf8ReceiveStream, Utf8SendStream, Utf8Stream
    from .apps.checkpoints import CheckpointStore
    from .apps.files import (
        SameFileError,
        TranscodeSummary,
        UnmappableCharacterError,
        WorkerError,
        atranscode_file,
        open_text,
        transcode_file,
    )
    from .apps.follow import CheckpointError, FollowCheckpoint, Line, Notice, follow
    from .apps.many import follow_many
    from .core.decoder import DecoderCheckpoint, Utf8Decoder
    from .core.encoder import Utf8EncodeError, Utf8Encoder
    from .core.events import Malformed, MalformedKind, Utf8DecodeError
    from .core.lines import LineSplitter, LineTooLong
    from .core.transcoder import Transcoder

_HOMES = {
    "core.decoder": ("DecoderCheckpoint", "Utf8Decoder"),
    "core.encoder": ("Utf8EncodeError", "Utf8Encoder"),
    "core.events": ("Malformed", "MalformedKind", "Utf8DecodeError"),
    "core.lines": ("LineSplitter", "LineTooLong"),
    "core.transcoder": ("Transcoder",),
    "aio.sources": ("as_byte_stream",),
    "aio.streams": ("Utf8ReceiveStream", "Utf8SendStream", "Utf8Stream"),
    "aio.linestream": ("LineReceiveStream",),
    "apps.checkpoints": ("CheckpointStore",),
    "apps.files": (
        "SameFileError",
        "TranscodeSummary",
        "UnmappableCharacterError",
        "WorkerError",
        "atranscode_file",
        "open_text",
        "transcode_file",
    ),
    "apps.follow": ("CheckpointError", "FollowCheckpoint", "Line", "Notice", "follow"),
    "apps.many": ("follow_many",),
}
_LAZY = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'utf8stream' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "CheckpointError",
    "CheckpointStore",
    "DecoderCheckpoint",
    "FollowCheckpoint",
    "Line",
    "LineReceiveStream",
    "LineSplitter",
    "LineTooLong",
    "Malformed",
    "MalformedKind",
    "Notice",
    "SameFileError",
    "TranscodeSummary",
    "Transcoder",
    "UnmappableCharacterError",
    "Utf8DecodeError",
    "Utf8Decoder",
    "Utf8EncodeError",
    "Utf8Encoder",
    "Utf8ReceiveStream",
    "Utf8SendStream",
    "Utf8Stream",
    "WorkerError",
    "as_byte_stream",
    "atranscode_file",
    "follow",
    "follow_many",
    "open_text",
    "transcode_file",
]
__version__ = "0.1.0"
