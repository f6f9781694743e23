"""The statistics records: frozen snapshots of what an object has done so far.

Each is what ``statistics()`` returns on its object: ``DecoderStatistics``
(``Utf8Decoder``; a ``Transcoder``'s through its ``decoder`` when the source is UTF-8),
``LineSplitterStatistics`` (``LineSplitter``),
``StreamStatistics`` (the streams of ``utf8stream``), ``FollowerStatistics`` (the
followers).  Each loads with its object's module, on first use here: naming the decoder's
record does not import the async streams.
"""

from __future__ import annotations

TYPE_CHECKING = False  # ``typing`` itself is not imported for this
if TYPE_CHECKING:
    from .aio.streams import StreamStatistics
    from .apps.follow import FollowerStatistics
    from .core.events import DecoderStatistics
    from .core.lines import LineSplitterStatistics

_LAZY = {
    "DecoderStatistics": "core.events",
    "FollowerStatistics": "apps.follow",
    "LineSplitterStatistics": "core.lines",
    "StreamStatistics": "aio.streams",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'utf8stream.stats' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"utf8stream.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = ["DecoderStatistics", "FollowerStatistics", "LineSplitterStatistics", "StreamStatistics"]
