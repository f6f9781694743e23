"""Character boundaries in UTF-8 bytes: where a buffer can be cut without splitting a
character, and where to split it into pieces for parallel work."""

from __future__ import annotations

from .core.boundaries import (
    char_start,
    cut_at_boundary,
    next_char_start,
    rejoined_event,
    split_points,
    variant_char_start,
)

__all__ = [
    "char_start",
    "cut_at_boundary",
    "next_char_start",
    "rejoined_event",
    "split_points",
    "variant_char_start",
]
