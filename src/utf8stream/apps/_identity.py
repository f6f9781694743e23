"""How a followed file is recognised: the fingerprint of its first bytes.

Shared by the follower and the reader of compressed rotations, which must compute the same
fingerprint from a decompressed head as the follower did from the plain file.
"""

from __future__ import annotations

import hashlib

__all__ = ["FINGERPRINT_BYTES", "head_fingerprint"]

#: How many first bytes identify a file (with its device and inode, reused after a delete).
FINGERPRINT_BYTES = 1024


def head_fingerprint(head: bytes) -> tuple[int, str]:
    """(length, SHA-256) of the first ``FINGERPRINT_BYTES`` of ``head``."""
    head = head[:FINGERPRINT_BYTES]
    return len(head), hashlib.sha256(head).hexdigest()
