"""The follower objects behind ``utf8stream.follow`` and ``utf8stream.follow_many``.

``follow()`` and ``follow_many()`` (at the top level) are what most programs call.  Here:
the objects they drive, for a program that wants to hold one (``Follower``,
``ManyFollower``: ``statistics()``, ``checkpoint()``, ``aclose()``), the identity of a
followed file (``FileIdentity``), the options of ``follow()`` and ``follow_many()`` as
one checked value (``FollowOptions``), how the files are read (``ReadPolicy``, a
tuning seam), and the checkpoint as a JSON file
(``read_checkpoint``, ``write_checkpoint``; ``utf8stream.CheckpointStore`` keeps many),
with how far a program had written the lines out when it was saved (``OutputMark``).
"""

from __future__ import annotations

from .apps.follow import (
    FileIdentity,
    Follower,
    FollowOptions,
    OutputMark,
    ReadPolicy,
    read_checkpoint,
    write_checkpoint,
)
from .apps.many import ManyFollower

__all__ = [
    "FileIdentity",
    "FollowOptions",
    "Follower",
    "ManyFollower",
    "OutputMark",
    "ReadPolicy",
    "read_checkpoint",
    "write_checkpoint",
]
