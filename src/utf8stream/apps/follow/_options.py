"""The follower's options checked: a bad one is a ``ValueError`` when the follower is
built, not at its first read."""

from __future__ import annotations

from .._defaults import FOLLOW_ERRORS

__all__ = ["check_options"]


def check_options(
    start: str | int,
    last_lines: int,
    last_bytes: int | None,
    poll_interval: float,
    rotate_grace: float,
    errors: str,
    partial_after: float | None,
) -> None:
    """Raise ``ValueError`` for the first of these options of ``Follower`` out of its range
    (its line options are checked by ``check_line_options``)."""
    if partial_after is not None and not partial_after >= 0:
        raise ValueError("partial_after must be None or a number of seconds >= 0")
    if not (start in ("end", "beginning") or (isinstance(start, int) and start >= 0)):
        raise ValueError("start must be 'end', 'beginning' or a byte offset")
    if last_lines < 0:
        raise ValueError("last_lines must be non-negative")
    if not poll_interval > 0:
        raise ValueError("poll_interval must be > 0")
    if not rotate_grace >= 0:
        raise ValueError("rotate_grace must be >= 0")
    if last_bytes is not None and last_bytes < 0:
        raise ValueError("last_bytes must be non-negative")
    if errors not in FOLLOW_ERRORS:
        raise ValueError(
            f"errors must be one of {FOLLOW_ERRORS}: one bad byte never stops a follower"
        )
