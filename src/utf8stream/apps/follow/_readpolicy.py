"""``ReadPolicy``: how a follower reads its file, one frozen value (a tuning seam).

Nothing here loads the async layers: ``FollowOptions`` holds one, and the command line
builds its parser from those.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ._public import public

__all__ = ["LEAST_CACHED_READ", "ReadPolicy"]

#: The smallest read done in the event loop: more than the bytes read again before each
#: read to notice a rewrite (``_cutting.ANCHOR_BYTES``), so that each read moves on.
LEAST_CACHED_READ = 64


@public("utf8stream.follower")
@dataclass(frozen=True)
class ReadPolicy:
    """How a follower reads its file: ``FollowOptions.reading`` (``follow(path,
    reading=ReadPolicy(...))``, ``follow_many`` too).  A tuning seam: the default suits
    every file system, since where each read is done is chosen per file from what its
    file system can tell; a field changes one choice.

    ``read_size``: the most one read takes (bytes); memory stays bounded by it plus
    ``max_line_bytes``, and the follower lets other tasks run at least once per this
    many bytes read.  A rotated copy (plain) is read in chunks of this size too.
    ``cached_read_size``: the most a read done in the event loop's thread takes (what
    the page cache holds, read without waiting with ``RWF_NOWAIT`` on Linux, or a file
    held in memory): it bounds how long the loop is held by one copy; at least
    ``LEAST_CACHED_READ`` (64).  ``feed_size``: a read is cut into lines this many bytes
    at a time, as its lines are handed out.  ``read_ahead``: while a file is being
    caught up with, the accelerator reads the next chunk ahead in a thread of its own
    (stopped once caught up); ``read_ahead_threads``: at most this many files are read
    ahead at once in the process.  ``in_memory``: whether the file system keeps its
    files in memory (tmpfs, ramfs: every read is done in the event loop's thread, as a
    copy from memory); ``None`` (default): told for each file from the mount table
    (Linux; elsewhere no file is).  A value out of range is a ``ValueError`` naming the
    field.
    """

    read_size: int = 1 << 20
    # Copying this from the page cache holds the loop some tens of microseconds; a worker
    # thread's round trip costs more than that.
    cached_read_size: int = 1 << 18
    # The records of a whole read (three times its size) would not stay in the
    # processor's second-level cache between being built and being used; those of a
    # slice do.  Each slice costs a run of Python, which a larger one spreads over more
    # lines: ``benchmarks/ab_follow.py --feed KIB`` compares sizes.
    feed_size: int = 1 << 17
    read_ahead: bool = True
    read_ahead_threads: int = max(2, os.cpu_count() or 2)
    in_memory: bool | None = None

    def __post_init__(self) -> None:
        for name, least in (
            ("read_size", 1),
            ("cached_read_size", LEAST_CACHED_READ),
            ("feed_size", 1),
            ("read_ahead_threads", 0),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{name}={value!r}: must be an integer >= {least}")
        if not isinstance(self.read_ahead, bool):
            raise ValueError(f"read_ahead={self.read_ahead!r}: must be True or False")
        if self.in_memory is not None and not isinstance(self.in_memory, bool):
            raise ValueError(f"in_memory={self.in_memory!r}: must be None, True or False")
