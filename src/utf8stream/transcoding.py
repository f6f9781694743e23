"""The ``Transcoder``'s checkpoint: ``TranscoderCheckpoint``, what
``Transcoder.checkpoint()`` returns and ``Transcoder.from_checkpoint`` continues from
(``to_json``/``from_json`` to keep it), and ``CheckpointUnsupported``, raised for a codec
whose state cannot be read (``punycode``, codecs registered without ``getstate``).
"""

from __future__ import annotations

from .core.transcoderstate import CheckpointUnsupported, TranscoderCheckpoint

__all__ = ["CheckpointUnsupported", "TranscoderCheckpoint"]
