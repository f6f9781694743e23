"""``follow()``: a follower of one path, built from its options."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...core.events import Malformed
from ...core.lines import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_ON_OVERLONG,
)
from ...core.multiline import MultilineJoiner
from .._defaults import (
    DEFAULT_MULTILINE_TIMEOUT,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_ROTATE_GRACE,
)
from ._checkpoint import FollowCheckpoint
from ._follower import Follower
from ._multiline import _MultilineFollower
from ._records import Notice

__all__ = ["follow"]


def follow(
    path: str | os.PathLike[str],
    *,
    start: str | int = "end",
    last_lines: int = 0,
    last_bytes: int | None = None,
    gap_at_start: bool = True,
    checkpoint: FollowCheckpoint | None = None,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    rotate_grace: float = DEFAULT_ROTATE_GRACE,
    newline: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_overlong: str = DEFAULT_ON_OVERLONG,
    errors: str = "replace",
    encoding: str = "utf-8",
    on_malformed: Callable[[Malformed], object] | None = None,
    until_eof: bool = False,
    retry: bool = False,
    on_notice: Callable[[Notice], object] | None = None,
    multiline: MultilineJoiner | str | None = None,
    multiline_timeout: float = DEFAULT_MULTILINE_TIMEOUT,
    partial_after: float | None = None,
) -> Follower:
    """Follow ``path`` like ``tail -F``, yielding ``Line`` records.

    ``start``: ``"end"`` (default; with ``last_lines=N`` the last N complete lines first),
    ``"beginning"``, or a byte offset (joined mid-line or mid-character: the first line
    starts with one U+FFFD for the gap, as after lost bytes).  ``last_bytes=N`` with
    ``start="end"``: start N bytes before the end (``tail -c``).  ``gap_at_start=False``:
    no U+FFFD for joining mid-line; the bytes from there are decoded as they are (those
    of a cut character are malformed units, handled by ``errors``).  ``checkpoint`` resumes
    exactly after the lines a previous follower yielded, draining files rotated away meanwhile.
    ``until_eof=True`` reads to the current end once, unfinished last line included,
    and stops (``tail`` without ``-f``).  ``on_malformed`` sees every malformed unit; an
    exception it raises comes out of the ``__anext__`` that read the unit (the lines
    read with it follow; nothing is lost, and iteration may go on).  ``retry=True``
    waits for a file that cannot be opened yet (``tail -F``/``--retry``); without it that
    is an ``OSError`` from the first step.  ``on_notice`` is told of each ``Notice``:
    the path inaccessible or back, a rotation, a truncation, an overlong line.
    At the end of the data the follower is woken by the kernel when the file or its
    directory changes (inotify and its kin, through the ``watch`` extra's ``watchfiles``);
    where that is not available (no ``watchfiles``, a network file system) it polls
    every ``poll_interval`` seconds.  While it catches up with a file the page cache
    holds, the accelerator reads the next chunk ahead in a thread of its own (one per
    file being caught up with, at most ``max(2, os.cpu_count())`` in a process; stopped
    once caught up).  A file renamed away (rotation) is read until it has stayed
    unchanged for ``rotate_grace`` seconds, since its writer appends to it until it
    reopens the path, and longer while nothing was written at the path and some process
    still has the old file open for writing (Linux, from ``/proc``); then the new file
    is read.
    ``partial_after``: seconds; an unfinished last line that has waited that long for its
    newline is handed out as it is (``terminated=False``), the checkpoint just past it
    (``mid_line``), its rest as the next ``Line``: the pieces joined are the line, no byte
    lost or repeated (``LineEngine.cut_unfinished``; not with ``multiline``).
    ``multiline``: a ``MultilineJoiner`` or the name of one of its presets
    (``"python"``, ``"java"``, ``"indented"``): each ``Line`` is then an event, its lines
    joined with ``"\\n"`` at the offset of its first line.  An event never spans two
    files; the last one is handed out once ``multiline_timeout`` seconds pass with no
    line, at a rotation or truncation, and at the end with ``until_eof``.  The checkpoint
    never passes an event not handed out: a restart reads its lines again.  An event is
    ``terminated`` as its last line is; one ending in ``until_eof``'s unfinished last line
    leaves the checkpoint before it, as that line alone would (a later run reads it whole).
    ``encoding``: UTF-8 by default, or any encoding ``line_decoder`` takes (UTF-16/32,
    legacy codecs; offsets stay exact source byte offsets, a byte offset to start at is
    rounded down to a code unit; ``on_malformed`` is for UTF-8 only), or ``"auto"``:
    each file's encoding is told by its first 64 KiB (or what it holds when its first
    bytes are read; an empty file waits for them): a byte-order mark, UTF-16's zero
    bytes, valid UTF-8, else cp1252 (``_sniff``); ``Line.file.encoding`` says it, the
    checkpoint keeps it for a restart, and a new file after a rotation is told again
    (``on_malformed`` then sees the files told UTF-8).
    """
    options: dict[str, Any] = {
        "start": start,
        "last_lines": last_lines,
        "last_bytes": last_bytes,
        "gap_at_start": gap_at_start,
        "checkpoint": checkpoint,
        "poll_interval": poll_interval,
        "rotate_grace": rotate_grace,
        "newline": newline,
        "max_line_bytes": max_line_bytes,
        "on_overlong": on_overlong,
        "errors": errors,
        "encoding": encoding,
        "on_malformed": on_malformed,
        "until_eof": until_eof,
        "retry": retry,
        "on_notice": on_notice,
        "partial_after": partial_after,
    }
    if multiline is not None:
        joiner = MultilineJoiner.preset(multiline) if isinstance(multiline, str) else multiline
        if not multiline_timeout > 0:
            raise ValueError("multiline_timeout must be > 0")
        return _MultilineFollower(joiner, multiline_timeout, path, **options)
    return Follower(path, **options)
