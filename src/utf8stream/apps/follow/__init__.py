"""Follow a growing log file: no line lost, none repeated, across rotation and restarts.

The names are loaded on first use (``utf8stream tail`` and ``import utf8stream`` stay
light); each lives in the module of its one responsibility.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Some names not in ``__all__`` are imported from here too: ``_HOMES`` lists them.
    from .._defaults import FOLLOW_ERRORS  # noqa: F401
    from .._identity import FINGERPRINT_BYTES  # noqa: F401
    from ._follower import (  # noqa: F401
        CHECKPOINT_MAX_BYTES,
        FEED_SIZE,
        NOTICE_KINDS,
        READ_SIZE,
        CheckpointError,
        FileIdentity,
        FollowCheckpoint,
        Follower,
        FollowerStatistics,
        Line,
        Notice,
        follow,
        read_checkpoint,
        write_checkpoint,
    )

__all__ = [
    "NOTICE_KINDS",
    "CheckpointError",
    "FileIdentity",
    "FollowCheckpoint",
    "Follower",
    "FollowerStatistics",
    "Line",
    "Notice",
    "follow",
    "read_checkpoint",
    "write_checkpoint",
]

_HOMES = {
    "_follower": (
        "CHECKPOINT_MAX_BYTES",
        "FEED_SIZE",
        "NOTICE_KINDS",
        "READ_SIZE",
        "CheckpointError",
        "FileIdentity",
        "FollowCheckpoint",
        "Follower",
        "FollowerStatistics",
        "Line",
        "Notice",
        "follow",
        "read_checkpoint",
        "write_checkpoint",
    ),
    # Also importable from here, where they were first offered.
    ".._defaults": ("FOLLOW_ERRORS",),
    ".._identity": ("FINGERPRINT_BYTES",),
}
_LAZY = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module if module[0] == "." else f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
