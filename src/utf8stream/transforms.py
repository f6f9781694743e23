"""Text transforms on a stream, chunk by chunk, with offsets and checkpoints.

A transform takes text in pieces and gives text out (``transform(text, final=False)``),
carries at most ``max_carry`` code points between calls, reports what it changed as
``TextChange`` events to its ``on_change`` callback, and checkpoints its carry
(``checkpoint()``, ``transform_from_checkpoint``).  ``chain(*transforms)`` composes them.
Every text API of utf8stream takes them as ``transforms=``.

``MojibakeBytesRepairer`` (``repair_mojibake_bytes``) makes ``MojibakeRepairer``'s repair
on UTF-8 bytes, decoding only the lines it could change.
"""

from __future__ import annotations

from .core.mojibake import MojibakeRepairer, repair_mojibake
from .core.mojibakebytes import MojibakeBytesRepairer, repair_mojibake_bytes
from .core.normalize import Normalizer, SegmentTooLongError
from .core.transform import (
    Chain,
    OnChange,
    TextChange,
    TextTransform,
    TransformCheckpoint,
    chain,
    register_transform,
    transform_from_checkpoint,
)
from .core.transformingdecoder import TransformedCheckpoint, TransformingDecoder

__all__ = [
    "Chain",
    "MojibakeBytesRepairer",
    "MojibakeRepairer",
    "Normalizer",
    "OnChange",
    "SegmentTooLongError",
    "TextChange",
    "TextTransform",
    "TransformCheckpoint",
    "TransformedCheckpoint",
    "TransformingDecoder",
    "chain",
    "register_transform",
    "repair_mojibake",
    "repair_mojibake_bytes",
    "transform_from_checkpoint",
]
