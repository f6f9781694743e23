"""What works on trio only (needs the ``trio`` extra: ``pip install 'utf8stream[trio]'``).

Importing this module without trio raises ``ModuleNotFoundError`` naming the extra.
"""

from __future__ import annotations

from .aio.trio_stream import ValidUtf8ReceiveStream

__all__ = ["ValidUtf8ReceiveStream"]
