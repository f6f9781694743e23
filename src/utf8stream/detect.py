"""Which encoding a byte stream is in: ``detect(data)`` on a prefix, or an
``EncodingDetector`` fed chunk by chunk, which decides as soon as the bytes seen make it
safe and hands back the bytes it looked at, for replay into the chosen decoder.

A ``Detection`` names a Python codec (``codecs.lookup(name).name``), or None for input
that is not text, with a confidence, the bytes looked at, the length of a byte-order mark
and the reason.  ``AutoDecoder`` is what ``encoding="auto"`` decodes with: the detector
in front of the decoder it chooses, the bytes it looked at replayed, the choice kept in
its ``AutoCheckpoint``; its ``on_doubt`` hears of bytes after the decision that the
encoding chosen cannot decode and one set aside on statistics can (``EncodingDoubt``).
Input that is not text raises ``NotTextError`` (a ``ValueError``) wherever
``encoding="auto"`` is taken.  The statistics behind it are derived from the
word lists of the ``wordfreq`` project (data CC-BY-SA 4.0).
"""

from __future__ import annotations

from .core.autodecode import AutoCheckpoint, AutoDecoder, NotTextError
from .core.autodoubt import EncodingDoubt
from .core.detector import DEFAULT_MAX_LOOKAHEAD, Detection, EncodingDetector, detect

__all__ = [
    "DEFAULT_MAX_LOOKAHEAD",
    "AutoCheckpoint",
    "AutoDecoder",
    "Detection",
    "EncodingDetector",
    "EncodingDoubt",
    "NotTextError",
    "detect",
]
