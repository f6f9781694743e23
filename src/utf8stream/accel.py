"""The C accelerator: whether it is in use, and a switch to compare it with pure Python.

Both implementations give the same text, events, statistics and checkpoints; the
compiled one is used wherever it was built, unless ``UTF8STREAM_PURE_PYTHON`` is set.
"""

from __future__ import annotations

from .core._accel import accelerated, use_accelerator

__all__ = ["accelerated", "use_accelerator"]
