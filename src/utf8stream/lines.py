"""The line engine under the line readers, for callers that build their own reader.

Most programs need only ``utf8stream.LineSplitter`` (text in, lines out),
``utf8stream.LineReceiveStream`` (a byte stream in) or ``utf8stream.follow`` (a file).
Here: the engine that cuts lines from bytes in any codec (``LineEngine`` and its items:
``LineBatch``, ``LineItem``, ``ByteLine``), the per-codec decoders it drives
(``line_decoder`` chooses one: ``Utf8LineDecoder`` or ``CodecLineDecoder``, both
``LineDecoder``), the engine over a detected encoding (``AutoLineEngine``,
``detect_line_codec``: ``encoding="auto"``), the defaults every line reader shares, and
the joining of continuation lines into multi-line events (``MultilineJoiner``).
"""

from __future__ import annotations

from .core.autolines import AutoLineEngine, detect_line_codec
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
from .core.lines import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG, OVERLONG_POLICIES
from .core.multiline import MultilineEvent, MultilineJoiner

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_ON_OVERLONG",
    "OVERLONG_POLICIES",
    "AutoLineEngine",
    "ByteLine",
    "CodecLineDecoder",
    "LineBatch",
    "LineDecoder",
    "LineEngine",
    "LineItem",
    "MultilineEvent",
    "MultilineJoiner",
    "Utf8LineDecoder",
    "detect_line_codec",
    "line_decoder",
]
