"""Follow a growing log file: no line lost, none repeated, across rotation and restarts.

A package of modules of one responsibility each: ``_records`` (file identity, line,
notice, statistics), ``_checkpoint`` (the checkpoint's JSON format, its validation and its
file), ``_readpolicy`` (``ReadPolicy``: how files are read), ``_reading`` (opening and
reading a file: page cache, memory file systems, read-ahead), ``_rotation`` (rotated
copies, plain or compressed, and the order of their names), ``_feed`` (a read cut into
records in bulk), ``_options`` (``FollowOptions``), ``_machine`` (the follower's state
machine: its states, events and transition table), ``_driver``, ``_opening``,
``_cutting``, ``_waiting`` (the driver that feeds it and its parts), ``_follower`` (the
``Follower``; its docstring tells how it works), ``_multiline`` (lines joined into
events) and ``_follow`` (``follow()``).  The names are loaded on first use,
so importing the package costs nothing until one is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Some names not in ``__all__`` are imported from here too: ``_HOMES`` lists them.
    from .._identity import FINGERPRINT_BYTES  # noqa: F401
    from ._checkpoint import (  # noqa: F401
        CHECKPOINT_MAX_BYTES,
        CheckpointError,
        FollowCheckpoint,
        OutputMark,
        read_checkpoint,
        write_checkpoint,
    )
    from ._follow import follow
    from ._follower import Follower
    from ._options import FOLLOW_ERRORS, FollowOptions  # noqa: F401
    from ._readpolicy import ReadPolicy
    from ._records import NOTICE_KINDS, FileIdentity, FollowerStatistics, Line, Notice

__all__ = [
    "NOTICE_KINDS",
    "CheckpointError",
    "FileIdentity",
    "FollowCheckpoint",
    "FollowOptions",
    "Follower",
    "FollowerStatistics",
    "Line",
    "Notice",
    "OutputMark",
    "ReadPolicy",
    "follow",
    "read_checkpoint",
    "write_checkpoint",
]

_HOMES = {
    "._records": ("NOTICE_KINDS", "FileIdentity", "FollowerStatistics", "Line", "Notice"),
    "._checkpoint": (
        "CHECKPOINT_MAX_BYTES",
        "CheckpointError",
        "FollowCheckpoint",
        "OutputMark",
        "read_checkpoint",
        "write_checkpoint",
    ),
    "._readpolicy": ("ReadPolicy",),
    "._follower": ("Follower",),
    "._follow": ("follow",),
    "._options": ("FOLLOW_ERRORS", "FollowOptions"),
    ".._identity": ("FINGERPRINT_BYTES",),
}
_LAZY = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
