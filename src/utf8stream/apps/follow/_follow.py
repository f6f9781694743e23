"""``follow()``: a follower of one path, built from its options."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...core.events import Malformed
from ...core.multiline import MultilineJoiner
from ._checkpoint import FollowCheckpoint
from ._follower import Follower
from ._options import FollowOptions
from ._readpolicy import ReadPolicy
from ._records import Notice

if TYPE_CHECKING:
    from ...core.transformed import Transforms

__all__ = ["follow"]


def follow(
    path: str | os.PathLike[str],
    *,
    start: str | int = FollowOptions.start,
    last_lines: int = FollowOptions.last_lines,
    last_bytes: int | None = FollowOptions.last_bytes,
    gap_at_start: bool = FollowOptions.gap_at_start,
    checkpoint: FollowCheckpoint | None = FollowOptions.checkpoint,
    poll_interval: float = FollowOptions.poll_interval,
    rotate_grace: float = FollowOptions.rotate_grace,
    newline: str | None = FollowOptions.newline,
    max_line_bytes: int = FollowOptions.max_line_bytes,
    on_overlong: str = FollowOptions.on_overlong,
    errors: str = FollowOptions.errors,
    encoding: str = FollowOptions.encoding,
    on_malformed: Callable[[Malformed], object] | None = FollowOptions.on_malformed,
    until_eof: bool = FollowOptions.until_eof,
    retry: bool = FollowOptions.retry,
    on_notice: Callable[[Notice], object] | None = FollowOptions.on_notice,
    multiline: MultilineJoiner | str | None = FollowOptions.multiline,
    multiline_timeout: float = FollowOptions.multiline_timeout,
    partial_after: float | None = FollowOptions.partial_after,
    reading: ReadPolicy = FollowOptions.reading,
    transforms: Transforms = FollowOptions.transforms,
) -> Follower:
    """Follow ``path`` like ``tail -F``, yielding ``Line`` records.

    By default from its end on (``start``, ``last_lines``, ``last_bytes``, ``checkpoint``
    say where else), waking when the file changes, across rotation, truncation and
    restarts.  What each option does, its default and its range: ``FollowOptions``
    (``utf8stream.follower``), whose fields these keywords are; a value out of range is a
    ``ValueError`` naming the option (``follow(path, **options.as_kwargs("follow"))``
    follows with a ``FollowOptions``).
    """
    options = FollowOptions(
        start=start,
        last_lines=last_lines,
        last_bytes=last_bytes,
        gap_at_start=gap_at_start,
        checkpoint=checkpoint,
        poll_interval=poll_interval,
        rotate_grace=rotate_grace,
        newline=newline,
        max_line_bytes=max_line_bytes,
        on_overlong=on_overlong,
        errors=errors,
        encoding=encoding,
        on_malformed=on_malformed,
        until_eof=until_eof,
        retry=retry,
        on_notice=on_notice,
        multiline=multiline,
        multiline_timeout=multiline_timeout,
        partial_after=partial_after,
        reading=reading,
        transforms=transforms,
    )
    return Follower(path, options)
