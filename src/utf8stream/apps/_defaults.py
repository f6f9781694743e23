"""The followers' default values: ``FollowOptions`` (``follow/_options.py``, from which
``follow()``, ``follow_many()`` and the ``tail`` command take them), the follower classes
and the watcher read them here.  Nothing is imported, so the watcher imports no more."""

from __future__ import annotations

__all__ = [
    "DEFAULT_MULTILINE_TIMEOUT",
    "DEFAULT_POLL_INTERVAL",
    "DEFAULT_ROTATE_GRACE",
    "FOLLOW_ERRORS",
]

#: How long a file renamed away must stay unchanged before the follower leaves it: the
#: writer appends to it until it reopens the path (logrotate's ``postrotate`` signal).
DEFAULT_ROTATE_GRACE = 1.0
#: How long the last multi-line event waits for more lines before it is handed out.
DEFAULT_MULTILINE_TIMEOUT = 5.0
#: Where the kernel cannot say a file changed, how often it is looked at (seconds).
DEFAULT_POLL_INTERVAL = 0.25
#: Policies under which a follower never stops (and whose replacements hold no newline).
FOLLOW_ERRORS = ("replace", "ignore", "backslashreplace", "surrogateescape")
