"""The follower's records: the file identity, the line, the notice and the statistics."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass

from .._apps_accel import LINE_TYPE
from ._public import public

__all__ = ["NOTICE_KINDS", "FileIdentity", "FollowerStatistics", "Line", "Notice"]


@public("utf8stream.follower")
@dataclass(frozen=True)
class FileIdentity:
    """Which file: device and inode, plus a fingerprint of its first bytes.

    Inodes are reused after a delete, so ``(device, inode)`` alone is not enough: the
    fingerprint (SHA-256 of the first ``head_length`` bytes) must match too.
    ``encoding``: with ``encoding="auto"``, the one detected for the file (kept in the
    checkpoint, so a restart reads it the same way), else None.
    """

    device: int
    inode: int
    head_length: int = 0
    head_sha256: str = hashlib.sha256(b"").hexdigest()
    encoding: str | None = None

    def same_inode(self, st: os.stat_result) -> bool:
        return (st.st_dev, st.st_ino) == (self.device, self.inode)


#: What a ``Notice`` can be about.
NOTICE_KINDS = (
    "inaccessible",
    "appeared",
    "replaced",
    "truncated",
    "overlong",
    "damaged",
    "checkpoint",
    "encoding-doubt",
)


@public("utf8stream")
@dataclass(frozen=True)
class Notice:
    """Something met while following that is not a line, told in GNU tail's words.

    ``kind`` is one of ``NOTICE_KINDS``: ``"inaccessible"`` (the path cannot be opened,
    now or after a rotation: the follower waits and retries), ``"appeared"`` (it can be
    again; the new file is read from its start), ``"replaced"`` (rotated: the new file
    at the path is followed once the old one is drained), ``"truncated"`` (the file
    shrank or was rewritten: reading starts again at its beginning), ``"overlong"`` (a
    line passed ``max_line_bytes`` and was truncated or skipped; split lines lose
    nothing and come as pieces with ``terminated=False``, ``"raise"`` raises),
    ``"damaged"`` (a rotated compressed copy that cannot be read to its end: none of it
    is read as text), ``"checkpoint"`` (the checkpoint resumed from does not fit its
    file: its offset is past the file's end, or the file's first bytes are not the
    fingerprinted ones, or the file is gone, and no rotated copy holds its bytes: the
    file at the path is read from its beginning; the message says which and gives the
    checkpoint's offset), ``"encoding-doubt"`` (``encoding="auto"``, a file read from its
    first byte: a byte after the ones the encoding was detected on is invalid in it, and
    an encoding the detector set aside on statistics decodes it; reading goes on in the
    encoding detected, see ``utf8stream.detect.EncodingDoubt``).
    ``path`` is the path followed; ``message`` is a sentence for a human.
    """

    kind: str
    path: str
    message: str


@public("utf8stream.stats")
@dataclass(frozen=True)
class FollowerStatistics:
    """What a follower has done so far (``Follower.statistics()``).

    ``lines``: lines yielded (pieces of split lines included); ``overlong``: lines longer
    than ``max_line_bytes``, whatever the policy; ``skipped``: lines left out (``skip``);
    ``rotations`` and ``truncations`` of the file followed; ``malformed``: malformed
    units met (UTF-8; other encodings replace them without counting).
    """

    lines: int = 0
    skipped: int = 0
    overlong: int = 0
    rotations: int = 0
    truncations: int = 0
    malformed: int = 0


@public("utf8stream")
@dataclass(frozen=True, slots=True)
class Line:
    """One line (without its newline), the offset of its first byte, and its file.

    ``terminated`` is false when no newline ended it: the unfinished last line shown by
    ``until_eof``, the last line of a file left behind by rotation or truncation, a
    piece of an overlong line split by ``on_overlong="split"`` (the pieces joined are
    the line).
    """

    text: str
    offset: int
    file: FileIdentity
    path: str = ""
    terminated: bool = True


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _accelerated_line(declared: type[Line], built: type) -> type[Line]:
    """The accelerator's ``Line`` type, made the dataclass ``declared`` is.

    The follower builds thousands of records per read: a C type that the garbage
    collector does not track costs a fraction of a slotted dataclass's to build and to
    free (its fields, a str, an int, a ``FileIdentity``, a str and a bool, cannot lead
    back to a record; so a ``Line`` made by hand must not hold one in a container).  It
    has the same fields, constructor and pickling; here it gets the rest: the dataclass
    metadata (``dataclasses.fields``, ``replace``, ``asdict`` work on it), the generated
    repr, equality and hash, frozen assignment, and the name and module.  A test checks
    both behave alike.
    """
    for name in (
        "__dataclass_fields__",
        "__dataclass_params__",
        "__match_args__",
        "__repr__",
        "__eq__",
        "__hash__",
        "__doc__",
        "__module__",
        "__qualname__",
    ):
        setattr(built, name, getattr(declared, name))
    built.__setattr__ = _frozen_setattr  # type: ignore[assignment]
    built.__delattr__ = _frozen_delattr  # type: ignore[assignment]
    return built


#: The declaration, which the accelerator's type is tested against.
_DECLARED_LINE = Line
if LINE_TYPE is not None:
    Line = _accelerated_line(Line, LINE_TYPE)  # type: ignore[misc]
