"""Follow a growing log file: no line lost, none repeated, across rotation and restarts.

Theory of operation
-------------------
The follower reads the file with positional reads, so the only position is ours: a
cancelled read changes nothing, and a checkpoint is just a file identity and a byte
offset.  A read the page cache holds is done at once in the event loop's thread
(``preadv`` with ``RWF_NOWAIT``, on Linux: a copy from memory, cheaper than a worker
thread's round trip; the bytes land in a buffer that becomes the bytes object read, with
no second copy), and so is any read of a file held in memory (tmpfs, which refuses
``RWF_NOWAIT``); any other (storage to wait for, or a file system that cannot tell) in
a worker thread.  A long read ends at its last newline: the start of a line after it is
read again with what follows.  Lines are cut by one ``LineEngine`` per file (the
core's line engine: newline modes, the limit, the overlong policies, the exact byte
offset of every line, in any encoding it has a ``LineDecoder`` for); every byte goes
through its decoder in order, so malformed units are reported with their absolute
offsets and never stop the reader.  The follower keeps files, rotation and checkpoints.
A read is cut ``FEED_SIZE`` bytes at a time as its lines are handed out; in the common
case (the accelerator, nothing held or pending) a slice is one C call that cuts and
decodes its lines (``LineEngine.feed_slice``) and one that makes them ``Line`` records,
and the checkpoint is worked out only when asked (each record holds its offset).

Only complete lines are delivered (the last line of a file is delivered when the file is
left behind by rotation or truncation).  A line longer than ``max_line_bytes`` is handled
as soon as it passes the limit, so memory stays bounded by one read plus the limit.

At the end of the data the follower waits for the kernel to say the file or its
directory changed (``Watcher``; it polls where no notification exists), then looks: it
compares the file it holds open with what the path now names (device and inode, plus a
fingerprint of the first bytes, because inodes are reused), checks the size against its
position (truncation), and re-reads the few bytes before its position (a file truncated
and regrown past the old size between two looks no longer has them).  On rotation the old
file is read until it has been quiet for ``rotate_grace`` (its writer appends to it until
it reopens the path), and while the new file is empty and a process still has the old one
open for writing (``_holders.py``).  On truncation the bytes not read yet are taken from
the rotated copy (copytruncate's ``app.log.1``, plain or compressed), known by the
fingerprint of its head; a copy is read one chunk per step, as a file is, so memory stays
bounded whatever it holds.  A restart from a checkpoint whose file was rotated away while
stopped looks for it among the path's rotations, plain (same inode) or compressed (same
decompressed head), and drains it first.  After a rotated file, the next one is the oldest
rotation named newer than it (logrotate's ``app.log.N``, ``N`` = 1 the newest, or names
of fixed width such as ``dateext``'s), compressed or not: a compressed one is read
decompressed, so a rotation compressed before the follower reached it is not skipped;
where the names follow no scheme, the plain files by modification time.  One ``Watcher``
serves the follower from its first wait to ``aclose``.  With ``encoding="auto"`` each
file's encoding is told by its first bytes (``_sniff``) and kept in its ``FileIdentity``,
so in the checkpoint.  With ``multiline=`` a stage after the lines joins them into events.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import hashlib
import json
import os
import re
import stat
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import anyio
import anyio.lowlevel
import anyio.to_thread

from ...core._accel import implementation
from ...core.events import Malformed
from ...core.lastlines import start_of_last_lines
from ...core.linecodec import LineBatch, LineEngine, LineItem, Utf8LineDecoder, line_decoder
from ...core.lines import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_ON_OVERLONG,
    LineTooLong,
    check_line_options,
)
from ...core.multiline import MultilineEvent, MultilineJoiner
from .._compressed import (
    CompressedFileError,
    compression_of,
    decompressed_size,
    matches,
    read_from,
)
from .._defaults import (
    DEFAULT_MULTILINE_TIMEOUT,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_ROTATE_GRACE,
    FOLLOW_ERRORS,
)
from .._follow_accel import LINE_TYPE
from .._follow_accel import implementation as follow_implementation
from .._holders import held_for_writing
from .._identity import FINGERPRINT_BYTES, head_fingerprint
from .._sniff import AUTO, DETECTED_ENCODINGS, SNIFF_BYTES, sniff_encoding
from .._watch import Watcher

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

READ_SIZE = 1 << 20
#: How much a read that the page cache holds takes, done in the event loop's thread with
#: no worker thread (``_read_cached``): copying it blocks the loop for some tens of
#: microseconds, a worker thread's round trip costs more than that.
CACHED_READ_SIZE = 1 << 18
#: How much of a read is cut into lines at a time, when the lines before it are all
#: handed out: the records of a whole read (three times its size) would not stay in the
#: processor's second-level cache between being built and being used; those of a slice
#: do (none stay in the first level, whatever the size).  Each slice also costs a run of
#: Python, which a larger slice spreads over more lines: ``benchmarks/ab_follow.py
#: --feed KIB`` compares sizes.
FEED_SIZE = 1 << 17
#: How often a follower woken by the kernel looks whether ``stop_at_end()`` was called.
_FLAG_CHECK_INTERVAL = 0.25
ANCHOR_BYTES = 32
#: How many times the next file is looked for when rotations keep renaming it away.
_FIND_ATTEMPTS = 5


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
)


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
    checkpoint's offset).
    ``path`` is the path followed; ``message`` is a sentence for a human.
    """

    kind: str
    path: str
    message: str


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


@dataclass(frozen=True)
class FollowCheckpoint:
    """Where to resume: just past the last line delivered, in which file.

    ``path`` is the (absolute) path followed, even while a file rotated away from it is
    being read: a follower resumes only a checkpoint of the path it follows.

    ``mid_line`` is true when that was a piece of an overlong line split at a character
    boundary (the rest of the line follows, without a gap).
    """

    path: str
    file: FileIdentity
    offset: int
    mid_line: bool = False

    def to_json(self) -> str:
        record: dict[str, Any] = {
            "version": 1,
            "path": self.path,
            "offset": self.offset,
            "mid_line": self.mid_line,
            "file": {
                "device": self.file.device,
                "inode": self.file.inode,
                "head_length": self.file.head_length,
                "head_sha256": self.file.head_sha256,
            },
        }
        if self.file.encoding is not None:
            # Only then: a checkpoint without detection reads as it always did.
            record["file"]["encoding"] = self.file.encoding
        return json.dumps(record, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> FollowCheckpoint:
        """Parse what ``to_json`` wrote; anything else raises ``CheckpointError``.

        The text comes from a file anyone may have edited or damaged: the key set and
        every type are exact (``true`` is not a number), numbers are bounded, and a text
        over ``CHECKPOINT_MAX_BYTES`` or nested too deeply is refused before it can cost
        memory or a ``RecursionError``.
        """
        if len(text) > CHECKPOINT_MAX_BYTES:
            raise CheckpointError(f"larger than {CHECKPOINT_MAX_BYTES} bytes")
        try:
            raw = json.loads(text)
        except RecursionError:
            raise CheckpointError("nested too deeply") from None
        except ValueError as exc:  # also UnicodeDecodeError and overlong integer literals
            raise CheckpointError(f"not JSON ({exc})") from None
        version = raw.get("version") if isinstance(raw, dict) else None
        if (
            isinstance(raw, dict)
            and "version" in raw
            and (type(version) is not int or version != 1)
        ):
            raise CheckpointError(f"unknown version {_shown(version)} (expected 1)")
        record = _expect_object(raw, _CHECKPOINT_KEYS, "the checkpoint")
        file = _expect_object(record["file"], _IDENTITY_KEYS, '"file"', _OPTIONAL_IDENTITY_KEYS)
        mid_line = record["mid_line"]
        if type(mid_line) is not bool:
            raise CheckpointError(f'"mid_line" must be true or false, not {_shown(mid_line)}')
        checkpoint = cls(
            path=_expect_path(record["path"]),
            file=FileIdentity(
                device=_expect_int(file, "device", _ID_LIMIT),
                inode=_expect_int(file, "inode", _ID_LIMIT),
                head_length=_expect_int(file, "head_length", FINGERPRINT_BYTES + 1),
                head_sha256=_expect_digest(file["head_sha256"]),
                encoding=_expect_detected(file.get("encoding")),
            ),
            offset=_expect_int(record, "offset", _OFFSET_LIMIT),
            mid_line=mid_line,
        )
        return checkpoint


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: damaged, hostile, or for another file."""


#: A checkpoint is about 300 bytes; anything much larger is not one.
CHECKPOINT_MAX_BYTES = 1 << 16
_CHECKPOINT_KEYS = frozenset({"version", "path", "offset", "mid_line", "file"})
_IDENTITY_KEYS = frozenset({"device", "inode", "head_length", "head_sha256"})
_OPTIONAL_IDENTITY_KEYS = frozenset({"encoding"})
#: Offsets are ``off_t`` (signed 64 bits); device and inode numbers are unsigned 64 bits.
_OFFSET_LIMIT = 1 << 63
_ID_LIMIT = 1 << 64
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _shown(value: object) -> str:
    """A value for a message, cut short: it comes from a file, and may be huge."""
    text = (
        json.dumps(value) if isinstance(value, (str, int, float, bool)) else type(value).__name__
    )
    return text if len(text) <= 40 else text[:37] + "..."


def _expect_object(
    value: object, keys: frozenset[str], what: str, optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CheckpointError(f"{what} must be a JSON object, not {_shown(value)}")
    missing, extra = keys - value.keys(), value.keys() - keys - optional
    if missing:
        raise CheckpointError(f"{what} lacks {', '.join(sorted(missing))}")
    if extra:
        names = ", ".join(_shown(k) for k in sorted(extra)[:3])
        raise CheckpointError(f"{what} has unknown keys: {names}")
    return value


def _expect_int(record: dict[str, Any], key: str, limit: int) -> int:
    value = record[key]
    if type(value) is not int or not 0 <= value < limit:
        raise CheckpointError(
            f'"{key}" must be an integer from 0 to {limit - 1}, not {_shown(value)}'
        )
    return value


def _expect_digest(value: object) -> str:
    if not isinstance(value, str) or not _DIGEST.fullmatch(value):
        raise CheckpointError(f'"head_sha256" must be 64 hex digits, not {_shown(value)}')
    return value


def _expect_detected(value: object) -> str | None:
    if value is None or value in DETECTED_ENCODINGS:
        return value
    raise CheckpointError(
        f'"encoding" must be one of {", ".join(DETECTED_ENCODINGS)}, not {_shown(value)}'
    )


def _expect_path(value: object) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise CheckpointError(f'"path" must be a file name, not {_shown(value)}')
    try:
        os.fsencode(value)
    except UnicodeError:
        raise CheckpointError(f'"path" is not a file name: {_shown(value)}') from None
    return value


def _validated(checkpoint: FollowCheckpoint) -> FollowCheckpoint:
    """``checkpoint`` if a program-built one is as sane as a parsed one must be."""
    return FollowCheckpoint.from_json(checkpoint.to_json())


def read_checkpoint(path: str | os.PathLike[str]) -> FollowCheckpoint:
    """Read a checkpoint written by ``write_checkpoint``; ``CheckpointError`` if unusable.

    At most ``CHECKPOINT_MAX_BYTES`` are read, whatever the file holds.
    """
    with open(path, "rb") as f:
        data = f.read(CHECKPOINT_MAX_BYTES + 1)
    return FollowCheckpoint.from_json(data)


def write_checkpoint(
    checkpoint: FollowCheckpoint, path: str | os.PathLike[str], *, durable: bool = True
) -> None:
    """Write ``checkpoint`` to ``path`` atomically (temporary file, fsync, rename).

    ``durable=False`` leaves out the fsync: the rename is still atomic, and what a
    process killed with SIGKILL wrote stays (the kernel's page cache is not the
    process's); only a power loss or a kernel crash can take the latest checkpoints
    back.  An ``OSError`` names ``path`` (not the temporary file, which is removed).
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(checkpoint.to_json())
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from exc


@functools.cache
def _is_utf8(encoding: str) -> bool:
    return isinstance(line_decoder(encoding, "strict"), Utf8LineDecoder)


@functools.cache
def _unit_of(encoding: str) -> int:
    return line_decoder(encoding, "strict").unit


def _open_regular(path: str) -> int:
    """``os.open`` for reading, refusing a directory (it opens, but cannot be read)."""
    fd = os.open(path, os.O_RDONLY)
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    return fd


def _identity_of(fd: int) -> FileIdentity:
    st = os.fstat(fd)
    head = os.pread(fd, FINGERPRINT_BYTES, 0)
    length, digest = head_fingerprint(head)
    return FileIdentity(st.st_dev, st.st_ino, length, digest)


def _matches(fd: int, identity: FileIdentity) -> bool:
    """Is the file open as ``fd`` the one ``identity`` describes?"""
    st = os.fstat(fd)
    if not identity.same_inode(st):
        return False
    head = os.pread(fd, identity.head_length, 0)
    return head_fingerprint(head) == (identity.head_length, identity.head_sha256)


def _head_holds(f: _Open, data: bytes) -> bool:
    """Whether the first bytes of ``f``, of which ``data`` was just read from its start,
    are still the fingerprinted ones (else it was truncated, perhaps rewritten, since it
    was opened: nothing read yet, no anchor tells)."""
    length = f.identity.head_length
    if not length:
        return True
    head = data[:length] if len(data) >= length else os.pread(f.fd, length, 0)
    return head_fingerprint(head) == (length, f.identity.head_sha256)


#: ``os.RWF_NOWAIT`` where ``preadv`` takes it (Linux), else None.
_NOWAIT: int | None = getattr(os, "RWF_NOWAIT", None) if hasattr(os, "preadv") else None
#: What ``preadv`` with ``RWF_NOWAIT`` raises where the file system cannot tell whether a
#: read would wait (tmpfs, many network file systems): that file is read in a thread.
_NOWAIT_UNSUPPORTED = {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS}


def _read_cached(fd: int, buffer: Any, size: int, offset: int, at_least: int) -> bytes | None:
    """Up to ``size`` bytes (at most ``len(buffer)``) of ``fd`` at ``offset`` if the page
    cache holds them (at least ``at_least`` of them, or all the file holds from
    ``offset``; else None), read without waiting for storage or for a lock
    (``RWF_NOWAIT``), so in the event loop's thread: what the kernel does then is a copy
    from memory.  ``buffer`` is a ``ReadBuffer`` (``implementation()``'s): the bytes
    returned are the buffer itself with the accelerator (no second copy of what was
    read), a copy of it without.  Raises ``OSError`` with an errno of
    ``_NOWAIT_UNSUPPORTED`` where the file system cannot say."""
    assert _NOWAIT is not None
    with memoryview(buffer) as whole, whole[: min(size, len(whole))] as space:
        try:
            n = os.preadv(fd, (space,), offset, _NOWAIT)
        except BlockingIOError:  # not in the page cache (or a lock is held)
            return None
    if n < at_least or n == 0:
        # A short read: the end of the file (what a read at the end of a finished file
        # or of a quiet live one gives every time: no worker thread for that), or bytes
        # not cached.  The size after the read tells: if the file ends where the read
        # did, every byte there was was read (it grew since? the next read has it).
        if offset + n < os.fstat(fd).st_size:
            return None
        if n == 0:
            return b""  # the buffer is kept for the next read
    data: bytes = buffer.take(n)
    return data


#: Whether a file being caught up with is read ahead in a thread (``Follower._read_ahead``).
_READ_AHEAD = True
#: At most this many files are read ahead at once in a process (many followers catching
#: up together, as ``follow_many`` at its start, share the processors anyway).
_READ_AHEAD_THREADS = max(2, os.cpu_count() or 2)


def _in_loop_size(size: int) -> int:
    """How much of a read of ``size`` bytes is done in the event loop's thread at once."""
    return min(size, CACHED_READ_SIZE)


def _taken_ahead(f: _Open, size: int, offset: int, at_least: int) -> bytes | None:
    """The read ``_pread`` asks for, if ``f``'s ``ReadAhead`` started it: its bytes, if
    they are what the read done now in the loop would give; else None, and the read is
    done now.  A log's bytes do not change once written, so bytes read moments ago are
    the bytes there now, unless the file was truncated since: then it is shorter than
    the bytes read (or it would have been regrown past them in those moments by a writer
    that does not append, as after a copytruncate, and then the bytes read are the ones
    its copy holds).  A failed read is done again too (its error is the present one),
    and a short one counts only where the file ends there (``_read_cached``'s rule)."""
    if f.readahead is None:
        return None
    try:
        data: bytes | None = f.readahead.take(offset, _in_loop_size(size))
    except OSError:
        return None
    if data is None:
        return None
    n = len(data)
    size_now = os.fstat(f.fd).st_size
    if size_now < offset + n:
        return None  # truncated since: what is there now is read now
    if not f.in_memory and (n < at_least or n == 0) and offset + n < size_now:
        return None
    return data


def _stop_reading_ahead(f: _Open) -> None:
    if f.readahead is not None:
        f.readahead.close()
        f.readahead = None


#: File systems whose files live in memory: the page cache is their storage, so a read
#: never waits for a disk (tmpfs, which refuses ``RWF_NOWAIT``; ramfs).
_MEMORY_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs"})
_MOUNTINFO = "/proc/self/mountinfo"


def _in_memory(st: os.stat_result) -> bool:
    """Whether the file ``st`` describes lives on a file system held in memory (Linux's
    mount table says; False wherever it cannot be told).

    Such a file is read in the event loop's thread, as a read the page cache holds is
    elsewhere: a copy from memory, where a worker thread's round trip (and the bytes
    read on another processor's cache) would cost more than the read.  The exception
    is memory swapped out, which any access may wait for."""
    wanted = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    try:
        with open(_MOUNTINFO, encoding="utf-8", errors="replace") as table:
            for entry in table:
                fields = entry.split()
                # id, parent, major:minor, root, mount point, options, [optional...], -,
                # type, source, super options
                if len(fields) > 7 and fields[2] == wanted and "-" in fields[6:]:
                    kind = fields[fields.index("-", 6) + 1]
                    return kind in _MEMORY_FILE_SYSTEMS
    except (OSError, IndexError):
        pass
    return False


def _is_compressed(path: Path) -> bool:
    """Whether ``path`` starts like a compressed file (unreadable: treated as one).

    A rotated log compressed by logrotate is never read as text: only ``_find_copy``
    reads one, decompressed.
    """
    try:
        return compression_of(path) is not None
    except OSError:
        return True


@dataclass(frozen=True)
class _Copy:
    """A rotated copy of a followed file: plain or compressed, and the bytes it holds."""

    path: str
    compression: str | None
    size: int  # decompressed
    #: Its first bytes (up to ``SNIFF_BYTES``), decompressed: its fingerprint, and its
    #: encoding (a byte-order mark; with "auto", detection).
    head: bytes
    mtime_ns: int  # when it was last written (compressed: when it was compressed)
    device: int
    inode: int


def _find_copy(
    live: Path, identity: FileIdentity, offset: int, problems: list[str]
) -> _Copy | None:
    """The newest rotated copy of the file ``identity`` describes, if it holds all bytes up
    to ``offset`` (a copy holding no more is still where the file went: the files rotated
    after it come next).

    A copy is a sibling named after ``live`` (``app.log.1``, ``app.log-20260101.gz``)
    whose (decompressed) first bytes have ``identity``'s fingerprint: copytruncate's copy,
    or a rotation compressed while the follower was stopped.  A compressed file is checked
    to its end first, so a damaged one is never read; each one met is told in
    ``problems``.  Runs in a worker thread (it decompresses).
    """
    if identity.head_length == 0:
        return None  # nothing was fingerprinted: any file would match
    try:
        siblings = list(live.parent.iterdir())
    except OSError:
        return None
    candidates: list[tuple[int, Path, os.stat_result]] = []
    for candidate in siblings:
        if candidate == live or not candidate.name.startswith(live.name):
            continue
        try:
            st = candidate.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            candidates.append((st.st_mtime_ns, candidate, st))
    wanted = (identity.head_length, identity.head_sha256)
    # The newest copy with the fingerprint is the one: an older one with the same first
    # bytes (a log that always starts with the same banner) is a previous cycle's.
    for mtime_ns, candidate, st in sorted(candidates, key=lambda c: (c[0], c[1]), reverse=True):
        try:
            compression = compression_of(candidate)
            if compression is None:
                if identity.same_inode(st):
                    continue  # the file itself under another name: not a copy
                with open(candidate, "rb") as f:
                    head = f.read(SNIFF_BYTES)
                if head_fingerprint(head[: identity.head_length]) == wanted:
                    if st.st_size < offset:
                        return None
                    return _Copy(
                        str(candidate), None, st.st_size, head, mtime_ns, st.st_dev, st.st_ino
                    )
            elif matches(candidate, *wanted):
                size = decompressed_size(candidate)
                if size < offset:
                    return None
                chunks = read_from(candidate, 0)
                head = next(chunks, b"")[:SNIFF_BYTES]
                chunks.close()  # type: ignore[attr-defined]
                return _Copy(
                    str(candidate), compression, size, head, mtime_ns, st.st_dev, st.st_ino
                )
        except CompressedFileError as exc:
            problems.append(f"cannot read the rotated {exc}")
        except (ValueError, OSError):
            # Gone, or not compressed any more since its first bytes were looked at (its
            # name now names the next rotation's file, not compressed yet): not this one.
            continue
    return None


def _open_copy(copy: _Copy, offset: int) -> Generator[bytes, None, None] | None:
    """The bytes of ``copy`` from ``offset`` on, decompressed, in chunks of at most
    ``READ_SIZE`` (plain) or ``CHUNK_BYTES`` (compressed); None if its name no longer
    names it (rotated on since it was found: look for it again).

    The file is opened now, in this (worker) thread, so that a rotation renaming
    ``app.log.2.gz`` to ``app.log.3.gz`` meanwhile cannot hand us another file's bytes.
    """
    if copy.compression is None:
        f = open(copy.path, "rb")  # noqa: SIM115 (owned by the generator below)
        st = os.fstat(f.fileno())
        if (st.st_dev, st.st_ino) != (copy.device, copy.inode):
            f.close()
            return None
        return _plain_chunks(f, offset)
    # A compressed reader opens its file at its first read: the name must name the copy
    # before and after that (a rotation never renames a file back).
    chunks = read_from(copy.path, offset)
    try:
        first = next(chunks, b"")
        st = os.stat(copy.path)
    except BaseException:
        chunks.close()  # type: ignore[attr-defined]
        raise
    if (st.st_dev, st.st_ino) != (copy.device, copy.inode):
        chunks.close()  # type: ignore[attr-defined]
        return None
    return _primed(first, chunks)


def _open_compressed(target: _Next) -> tuple[_Copy, Generator[bytes, None, None]] | str | None:
    """A compressed rotation to read next, checked to its end and opened at its start; a
    message if it is damaged; None if its name now names another file (look again).
    Runs in a worker thread."""
    assert target.compression is not None
    try:
        size = decompressed_size(target.path)
        found = _Copy(target.path, target.compression, size, b"", 0, target.device, target.inode)
        chunks = _open_copy(found, 0)
        if chunks is None:
            return None
        first = next(chunks, b"")
    except CompressedFileError as exc:
        return f"cannot read the rotated {exc}"
    except OSError:
        return None
    head = first[:SNIFF_BYTES]
    copy = _Copy(target.path, target.compression, size, head, 0, target.device, target.inode)
    return copy, _primed(first, chunks)


def _plain_chunks(f: BinaryIO, offset: int) -> Generator[bytes, None, None]:
    with f:
        f.seek(offset)
        while chunk := f.read(READ_SIZE):
            yield chunk


def _primed(first: bytes, rest: Iterator[bytes]) -> Generator[bytes, None, None]:
    try:
        if first:
            yield first
        yield from rest
    finally:
        rest.close()  # type: ignore[attr-defined]


def _find_rotated(path: Path, identity: FileIdentity) -> Path | None:
    """A rotation of ``path`` (a sibling named after it) with ``identity``'s device and
    inode.

    Whether its first bytes still match the fingerprint decides where reading resumes.
    A compressed file is never it, even on a reused inode, and neither is a file of
    another name: the inode of a deleted rotation is soon another file's (the temporary
    file of a checkpoint being written, say, which must not be read as the log).
    """
    try:
        candidates = sorted(path.parent.iterdir())
    except OSError:
        return None
    for candidate in candidates:
        try:
            st = candidate.stat()
        except OSError:
            continue
        if (
            identity.same_inode(st)
            and candidate.name.startswith(path.name)
            and not _COMPRESSED_SUFFIX.search(candidate.name)  # perhaps being written
            and candidate.is_file()
            and candidate != path
            and not _is_compressed(candidate)
        ):
            return candidate
    return None


@dataclass
class _Open:
    """The file being read; its line engine holds the unfinished line."""

    fd: int
    path: str
    identity: FileIdentity
    engine: LineEngine
    read_pos: int  # next byte to read
    known_size: int = 0  # size at the last look: did unread bytes vanish?
    anchor: bytes = b""  # the bytes just before read_pos, to notice a rewrite
    #: When a rotated-away file was first seen at its end with nothing new (monotonic
    #: time), for its grace period; None while it yields data.
    quiet_since: float | None = None
    #: When its last new bytes were read (the event loop's clock): ``partial_after``.
    fed_at: float = 0.0
    #: Reading the rest of the file from a rotated copy (``fd`` is -1, or with
    #: ``resume_live`` the truncated file, read again from 0 once the copy is done).
    copy: _Copy | None = None
    #: The copy's bytes still to read, one chunk per read (None once read to its end).
    chunks: Generator[bytes, None, None] | None = None
    resume_live: bool = False
    lost: int = 0  # bytes of the file that no copy holds, reported when it is left
    #: ``encoding="auto"`` and the file was empty: its engine waits for its first bytes.
    undecided: bool = False
    #: The last read's bytes from ``unfed_at`` on are not cut into lines yet (the engine
    #: gets them ``FEED_SIZE`` at a time, as the lines before them run out).
    unfed: bytes = b""
    unfed_at: int = 0
    #: Where the bytes of ``unfed`` to cut end: just past its last newline when the read
    #: was cut short there (``_take``), else its length.
    unfed_end: int = 0
    #: False once the file system said it cannot tell whether a read would wait
    #: (``_read_cached``): the file is read in worker threads only.
    nowait: bool = True
    #: The file system keeps its files in memory (``_in_memory``): every read is done in
    #: the event loop's thread.
    in_memory: bool = False
    #: While catching up (each read done in the loop came back full): the next read,
    #: started in a thread of its own as this one's lines are handed out (``ReadAhead``).
    readahead: Any = None


@dataclass(frozen=True)
class _Next:
    """The file to read next: a rotated file (as listed: device, inode, compression), or
    the path followed."""

    path: str
    device: int = -1
    inode: int = -1
    compression: str | None = None


#: Compression suffixes logrotate's ``compressext`` gives, left out of a rotation's name.
_COMPRESSED_SUFFIX = re.compile(r"\.(?:gz|bz2|xz|zst|lz4|Z)$")
_NUMBERED = re.compile(r"\.([0-9]+)")


def _numbers_grow_newer(live_name: str, entries: list[tuple[Path, os.stat_result]]) -> bool:
    """Whether the plain numbered rotations were written in the order of their numbers
    (``app.log.1`` the oldest, names that never shift), not logrotate's (``.1`` the
    newest): what their modification times say, logrotate's order when they say nothing.
    """
    numbered = []
    for candidate, st in entries:
        key = _rotation_key(live_name, candidate.name)
        if (
            key is not None
            and key[0] == "number"
            and not _COMPRESSED_SUFFIX.search(candidate.name)
        ):
            numbered.append((-key[1], st.st_mtime_ns))
    numbered.sort()
    votes = 0
    for (_, earlier), (_, later) in pairwise(numbered):
        if later != earlier:
            votes += 1 if later > earlier else -1
    return votes > 0


def _rotation_key(live_name: str, name: str) -> tuple[str, int, str] | None:
    """Where ``name`` stands among the rotations of ``live_name``; None if not one.

    Keys of one scheme compare, the larger being the newer: ``app.log.N`` (logrotate's
    numbering, N = 1 the newest) or a suffix of fixed width (``dateext``'s
    ``app.log-20260101``), each with or without a compression suffix.  The name, not the
    modification time, gives the order: a compressed file's time is that of its
    compression, later than that of the plain rotation made after it.
    """
    if not name.startswith(live_name):
        return None
    rest = _COMPRESSED_SUFFIX.sub("", name[len(live_name) :])
    if not rest:
        return None
    number = _NUMBERED.fullmatch(rest)
    if number is not None:
        return ("number", -int(number[1]), "")
    return (f"text {rest[0]} {len(rest)}", 0, rest)


#: A queued result: (text, or a LineTooLong to raise, or None for a skipped line; the
#: line's offset; the offset just past it; its file; its path; whether it ends mid-line;
#: whether a newline ended it).  Handing it out moves the checkpoint to ``end``.
_Item = tuple[str | LineTooLong | None, int, int, FileIdentity, str, bool, bool]


def _fed_to(f: _Open, end: int) -> None:
    """The last read's bytes up to ``end`` have gone to ``f``'s engine."""
    if end >= f.unfed_end:
        f.unfed, f.unfed_at = b"", 0
    else:
        f.unfed_at = end


def _slice_records(f: _Open) -> tuple[list[Line], int, list[LineBatch | LineItem]] | None:
    """The next ``FEED_SIZE`` slice of ``f``'s last read cut into ``Line`` records in one
    call (``LineEngine.feed_slice``, made records), and marked fed: the records, the offset after
    them, and what else the slice gave; None where that does not apply (nothing fed)."""
    at = f.unfed_at
    stop = min(at + FEED_SIZE, f.unfed_end)
    found = f.engine.feed_slice(f.unfed, at, stop)
    if found is None:
        return None
    (texts, offsets), end, items = found
    _fed_to(f, end)
    return _records(texts, offsets, f.identity, f.path), offsets[-1], items


class _Block:
    """The complete, ordinary lines of one slice of a read: the hot path, in bulk.

    ``lines`` holds the ``Line`` records last first (they are popped from its end, by
    ``Follower.__anext__`` or the C iterator that shares the list); ``end`` is the
    offset just past the last line, ``count`` how many lines it had.  Once ``k`` lines
    were handed out the checkpoint is the offset of the next one (``lines[-1]``), or
    ``end``.  ``resumes``: the checkpoint before its first line is handed out is that
    line's offset too (the block follows a block of the same file handed out whole).
    """

    __slots__ = ("count", "end", "file", "lines", "resumes")

    def __init__(
        self, lines: list[Line], end: int, file: FileIdentity, resumes: bool = False
    ) -> None:
        self.lines = lines
        self.count = len(lines)
        self.end = end
        self.file = file
        self.resumes = resumes

    def handed(self) -> int:
        return self.count - len(self.lines)

    def position(self) -> int | None:
        """The checkpoint's offset, or None while it is the one before the block."""
        lines = self.lines
        if len(lines) == self.count and not self.resumes:
            return None
        return lines[-1].offset if lines else self.end


def _records(
    texts: list[str], offsets: Sequence[int], file: FileIdentity, path: str
) -> list[Line]:
    """``Line`` records for ``texts`` (at ``offsets``), last first."""
    records: list[Line] = follow_implementation().records(Line, texts, offsets, file, path, True)
    return records


class Follower:
    """Async iterator of ``Line`` records; also an async context manager.

    Built by ``follow()``.  ``checkpoint()`` covers exactly the lines already yielded.
    Cancelling a pending ``__anext__`` loses nothing: reads are positional, and the
    position moves only when a line is handed out.
    """

    def __init__(
        self,
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
        partial_after: float | None = None,
    ) -> None:
        check_line_options(newline, max_line_bytes, on_overlong)
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
        #: "auto": each file's encoding is detected from its first bytes (``_detect``).
        self._auto = encoding == AUTO
        self._encoding = "utf-8" if self._auto else encoding
        self._newline = newline
        self._max = max_line_bytes
        self._on_overlong = on_overlong
        self._errors = errors
        # The encoding is checked now (and the newline in it), not at the first read.
        probe = line_decoder(self._encoding, errors)
        if on_malformed is not None and not isinstance(probe, Utf8LineDecoder):
            raise ValueError("on_malformed is reported for UTF-8 only")
        if not probe.prelude:
            self._engine_for(0, encoding=self._encoding)
        self.path = os.fspath(path)
        #: What checkpoints record: the file followed, not the rotated file being read.
        self._followed = os.path.abspath(self.path)
        if checkpoint is not None:
            checkpoint = _validated(checkpoint)
            if os.path.realpath(checkpoint.path) != os.path.realpath(self.path):
                raise CheckpointError(
                    f"it is for another file ({checkpoint.path}), not {self.path}"
                )
        self._start = start
        self._last_lines = last_lines
        self._last_bytes = last_bytes
        self._gap_at_start = gap_at_start
        self._resume = checkpoint
        self._poll_interval = poll_interval
        self._rotate_grace = rotate_grace
        #: The watcher of the paths waited on: one for the follower's life, entered at the
        #: first wait, re-targeted when the paths change, closed by ``aclose``.
        self._watcher: Watcher | None = None
        self._on_malformed = on_malformed
        self._until_eof = until_eof
        self._partial_after = partial_after
        self._retry = retry
        self._on_notice = on_notice
        #: The last "inaccessible" notice while the path cannot be opened, else None.
        self._inaccessible: str | None = None
        self._at_eof = False
        self._file: _Open | None = None
        #: Scratch space of the reads the page cache holds (``_read_cached``).
        self._scratch: Any = None
        self._unyielded = 0  # bytes read since the event loop last ran other tasks
        # True while reading a file that was rotated away from ``path``: at its end, go
        # on with the next rotated file (by modification time), then with ``path``.
        self._draining = False
        #: The rotated files read to their end, by (device, inode): with the identity
        #: they had, since a deleted file's inode is soon another file's.
        self._visited: dict[tuple[int, int], FileIdentity] = {}
        self._queue: deque[_Item | _Block] = deque()
        self._done: _Item | None = None  # the last item handed out, if not from a block
        self._block: _Block | None = None  # the block lines are being handed out from
        self._ready: list[Line] = []  # its lines not handed out yet, last first
        self._lines = 0
        self._callback_error: Exception | None = None
        # Before the first line, a resumed follower stands where its checkpoint says.
        self._checkpoint: FollowCheckpoint | None = checkpoint
        self._closed = False
        #: Set once everything the file held has been handed out and the follower waits
        #: for more, or has stopped (``caught_up``); the event is made on first use.
        self._has_caught_up = False
        self._caught_up_event: anyio.Event | None = None
        self._skipped = 0
        self._overlong = 0
        self._rotations = 0
        self._truncations = 0
        self._malformed = 0

    # -- public API ----------------------------------------------------------------

    async def __aenter__(self) -> Follower:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncIterator[Line]:
        # ``async for``: an iterator that hands out the ready lines of a block (with the
        # C accelerator, with no Python frame per line) and calls ``_next_for`` when they
        # run out.  All state stays here, so leaving the loop, mixing in ``__anext__()``
        # or a cancelled step loses nothing.
        iterator: AsyncIterator[Line] = implementation().BufferedAsyncIterator(self._next_for)
        iterator.feed(self._ready)  # type: ignore[attr-defined]
        return iterator

    async def __anext__(self) -> Line:
        ready = self._ready
        if ready:
            return ready.pop()
        line = self._next_block()
        return line if line is not None else await self._advance()

    async def _next_for(self, iterator: Any) -> Line:
        ready = self._ready
        if ready:
            line = ready.pop()
        else:
            found = self._next_block()
            line = found if found is not None else await self._advance()
        iterator.feed(self._ready)
        return line

    def _next_block(self) -> Line | None:
        """The hot path, when the ready lines ran out: the next slice of the last read
        cut into a block of records in one call (``LineEngine.feed_slice``), with no
        queue, no item and no checkpoint made; None where it does not apply (the next
        slice goes the general way, ``_advance``): anything queued or pending, the
        lines before not a block of this file that ends where the engine stands.
        """
        block = self._block
        f = self._file
        if (
            block is None
            or f is None
            or not f.unfed
            or block.file is not f.identity
            or self._queue
            or self._done is not None
            or self._closed
        ):
            return None
        if f.engine.position != block.end:
            return None
        found = _slice_records(f)
        if found is None:
            return None
        lines, after, items = found
        self._lines += block.count
        new = _Block(lines, after, f.identity, resumes=True)
        error = self._callback_error
        if items or error is not None or not lines:
            # The rest of the slice went the general way, or on_malformed raised: what
            # was cut goes through the queue, as ``_feed_slice`` would have queued it.
            self._block = None
            self._checkpoint = FollowCheckpoint(self._followed, f.identity, block.end)
            if lines:
                self._queue.append(new)
            self._queue_items(f, items)
            if error is not None:
                # Raised once the read is taken in, as ``_fill`` does.
                self._callback_error = None
                self._note_caught_up()
                raise error
            return None
        self._block = new
        self._ready = lines
        line: Line = lines.pop()
        return line

    async def _advance(self) -> Line:
        """The next line once the ready ones are handed out: the next queued item."""
        queue = self._queue
        while True:
            while not queue:
                if self._closed or self._at_eof:
                    self._note_caught_up()
                    raise StopAsyncIteration
                try:
                    await self._fill()
                except BaseException:
                    self._note_caught_up()  # stopped: a reader waiting for its turn goes on
                    raise
            if self._closed:
                raise StopAsyncIteration
            item = queue.popleft()
            self._settle()
            if type(item) is _Block:
                self._block = item
                self._ready = item.lines
                return item.lines.pop()
            assert isinstance(item, tuple)
            self._done = item
            text = item[0]
            if type(text) is str:
                self._lines += 1
                return Line(text, item[1], item[3], item[4], item[6])
            if isinstance(text, LineTooLong):
                raise text

    def _settle(self) -> None:
        """Fold what was handed out so far into the checkpoint and the line count.

        Called when the current block's lines have all been handed out (or dropped by
        ``aclose``), before the next item.
        """
        block = self._block
        if block is not None:
            self._lines += block.handed()
            at = block.position()
            if at is not None:
                self._checkpoint = FollowCheckpoint(self._followed, block.file, at)
            self._block = None
        self._fold_done()

    def _fold_done(self) -> None:
        if self._done is not None:
            _, _, end, identity, _, mid_line, _ = self._done
            self._checkpoint = FollowCheckpoint(self._followed, identity, end, mid_line)
            self._done = None

    def checkpoint(self) -> FollowCheckpoint:
        """Where a new follower resumes: no yielded line repeats, none is lost."""
        block = self._block
        if block is not None:
            at = block.position()
            if at is not None:
                return FollowCheckpoint(self._followed, block.file, at)
        self._fold_done()
        if self._checkpoint is None:
            raise RuntimeError("the follower has not opened its file yet: iterate first")
        return self._checkpoint

    def stop_at_end(self) -> None:
        """Read what there is now (rotated files drained first), then end the iteration.

        As with ``until_eof``, the unfinished last line is delivered, unterminated, and
        the checkpoint stays at its start.  ``tail --pid``: the writer has exited.
        """
        self._until_eof = True

    async def caught_up(self) -> None:
        """Return once the lines the file held have all been handed out and the follower
        waits for more (or cannot open the file yet, or has stopped).

        ``tail -f A B`` shows A's last lines before B's, as GNU tail does, by waiting for
        this before B's turn.
        """
        if self._has_caught_up:
            return
        if self._caught_up_event is None:
            self._caught_up_event = anyio.Event()
        await self._caught_up_event.wait()

    def _note_caught_up(self) -> None:
        if not self._has_caught_up:
            self._has_caught_up = True
            if self._caught_up_event is not None:
                self._caught_up_event.set()

    def has_pending(self) -> bool:
        """Whether lines already read wait to be handed out (the next comes at once).

        A writer of the lines can flush its output when this turns false: the next
        step may wait for the file to grow.
        """
        return bool(self._ready or self._queue or (self._file is not None and self._file.unfed))

    def statistics(self) -> FollowerStatistics:
        """Lines yielded, overlong and skipped lines, rotations, truncations, units."""
        lines = self._lines + (self._block.handed() if self._block is not None else 0)
        return FollowerStatistics(
            lines=lines,
            skipped=self._skipped,
            overlong=self._overlong,
            rotations=self._rotations,
            truncations=self._truncations,
            malformed=self._malformed,
        )

    async def aclose(self) -> None:
        """Close the file; iteration ends (lines read but not handed out are not)."""
        self._closed = True
        self._note_caught_up()
        self._settle()
        self._ready.clear()
        self._release()
        self._file = None
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            await watcher.__aexit__(None, None, None)

    # -- opening -------------------------------------------------------------------

    def _release(self) -> None:
        """Close the file being read (and the copy being read for it)."""
        f = self._file
        if f is None:
            return
        if f.chunks is not None:
            f.chunks.close()
            f.chunks = None
        _stop_reading_ahead(f)
        if f.fd >= 0:
            os.close(f.fd)
            f.fd = -1

    def _count(self, event: Malformed) -> None:
        self._malformed += 1
        if self._on_malformed is not None:
            try:
                self._on_malformed(event)
            except Exception as exc:  # raised once the read is taken in, see _fill
                if self._callback_error is None:
                    self._callback_error = exc

    def _attach(self, fd: int, path: str, offset: int, encoding: str | None = None) -> _Open:
        """Read the file open as ``fd`` from ``offset``; ``encoding``: the one detected
        for it before (a checkpoint's), else it is detected now."""
        self._release()
        st = os.fstat(fd)
        if not self._auto:
            encoding = self._encoding
        elif encoding is None:
            encoding = self._detect(fd)
        offset = min(offset, st.st_size)
        offset -= offset % _unit_of(encoding or "utf-8")  # lines start on a code unit
        anchor_len = min(ANCHOR_BYTES, offset)
        identity = _identity_of(fd)
        if self._auto:
            identity = dataclasses.replace(identity, encoding=encoding)
        f = _Open(
            fd=fd,
            path=path,
            identity=identity,
            engine=self._engine_for(offset, fd, encoding=encoding),
            read_pos=offset,
            known_size=st.st_size,
            anchor=os.pread(fd, anchor_len, offset - anchor_len),
            undecided=encoding is None,
            in_memory=_in_memory(st),
        )
        self._file = f
        if self._checkpoint is None:
            self._checkpoint = FollowCheckpoint(self._followed, f.identity, offset)
        return f

    def _engine_for(
        self,
        offset: int,
        fd: int = -1,
        head: bytes | None = None,
        *,
        encoding: str | None,
    ) -> LineEngine:
        """The line engine for a file in ``encoding`` (None: not known yet, UTF-8 until
        the first bytes come) read from ``offset`` (``fd``'s first bytes, or ``head``,
        tell a byte-order mark)."""
        encoding = encoding or "utf-8"
        decoder = line_decoder(
            encoding,
            self._errors,
            start_offset=offset,
            on_malformed=self._count if _is_utf8(encoding) else None,
        )
        if head is None and fd >= 0 and decoder.prelude:
            head = os.pread(fd, decoder.prelude, 0)
        return LineEngine(
            decoder,
            newline=self._newline,
            max_line_bytes=self._max,
            on_overlong=self._on_overlong,
            on_overlong_line=self._found_overlong,
            offset=offset,
            head=head,
            # The offsets of a block stay packed (the C ``Line`` makes each int on use).
            packed_offsets=True,
        )

    async def _open(self, path: str) -> int:
        return await anyio.to_thread.run_sync(_open_regular, path)

    def _detect(self, fd: int) -> str | None:
        """``encoding="auto"``: the encoding of the file open as ``fd``, told by its first
        bytes; None while it has none (decided when its first bytes are read)."""
        head = os.pread(fd, SNIFF_BYTES, 0)
        return sniff_encoding(head, whole=False) if head else None

    def _copy_encoding(self, copy: _Copy, known: str | None) -> str:
        """The encoding of a rotated copy: ``known`` (its checkpoint's), else detected."""
        if not self._auto:
            return self._encoding
        return known or sniff_encoding(copy.head, whole=copy.size <= len(copy.head))

    def _notice(self, kind: str, message: str) -> None:
        if self._on_notice is not None:
            self._on_notice(Notice(kind, self.path, message))

    def _cannot_open(self, message: str) -> None:
        """Tell once that the path cannot be opened (again only if the reason changes)."""
        if message != self._inaccessible:
            self._inaccessible = message
            self._notice("inaccessible", message)

    def _opened(self, kind: str, message: str) -> None:
        """The path was opened after a rotation (or after being inaccessible)."""
        if self._inaccessible is not None:
            kind, message = "appeared", "has appeared; following new file"
            self._inaccessible = None
        self._notice(kind, message)

    async def _open_first(self) -> None:
        """Open the file where reading starts; with ``retry``, wait until it can be."""
        while True:
            try:
                await self._open_start()
            except OSError as exc:
                if not self._retry:
                    raise
                self._cannot_open(f"cannot open for reading: {exc.strerror or exc}")
                self._note_caught_up()
                await anyio.sleep(self._poll_interval)
                continue
            if self._inaccessible is not None:
                self._opened("appeared", "")
            return

    async def _open_start(self) -> None:
        if self._resume is not None:
            await self._open_from_checkpoint(self._resume)
            self._resume = None
            return
        fd = await self._open(self.path)
        size = os.fstat(fd).st_size
        start = self._start
        if start == "beginning" or self._inaccessible is not None:
            # A file that appeared while we waited is new: all of it is unread.
            self._attach(fd, self.path, 0)
        elif start == "end" and self._last_bytes is None:
            encoding = self._detect(fd) if self._auto else self._encoding
            engine = self._engine_for(0, fd, encoding=encoding)
            offset = start_of_last_lines(
                lambda at, n: os.pread(fd, n, at), size, self._last_lines, engine
            )
            self._attach(fd, self.path, offset, encoding)
        else:
            if start == "end":
                assert self._last_bytes is not None
                offset = max(0, size - self._last_bytes)
            else:
                assert isinstance(start, int)
                offset = start
            f = self._attach(fd, self.path, offset)
            if self._gap_at_start and f.read_pos and not self._at_line_start(f):
                # Joined mid-line: the first line starts with U+FFFD.
                f.engine.decoder.mark_gap()

    def _at_line_start(self, f: _Open) -> bool:
        return f.engine.starts_line(f.anchor)

    async def _open_from_checkpoint(self, cp: FollowCheckpoint) -> None:
        # The path followed is ours, never the checkpoint's: __init__ checked they agree.
        try:
            fd = await self._open(self.path)
        except OSError:
            fd = -1  # perhaps rotated away and not there again yet: look for ours
        if fd >= 0 and cp.file.same_inode(os.fstat(fd)):
            offset = self._resume_offset(fd, cp)
            if offset != cp.offset and await self._resume_from_copy(cp):
                # Truncated while we were stopped: its copy holds the rest, and the copies
                # made at later truncations (copytruncate again) come before the path.
                os.close(fd)
                return
            self._misfit(fd, cp, offset)
            self._attach(fd, self.path, offset, cp.file.encoding if offset else None)
            return
        # The path names another file now: was ours rotated away while we were stopped?
        rotated = await anyio.to_thread.run_sync(_find_rotated, Path(self.path), cp.file)
        if rotated is not None:
            rfd = await self._open(str(rotated))
            offset = self._resume_offset(rfd, cp)
            # Other first bytes: a new rotation on our file's inode, if a copy (compressed
            # after its rotation) holds our file; else our file, rewritten.
            if offset == cp.offset or not await self._resume_from_copy(cp):
                if fd >= 0:
                    os.close(fd)
                self._misfit(rfd, cp, offset)
                self._attach(rfd, str(rotated), offset, cp.file.encoding if offset else None)
                self._draining = True  # drain it and its successors, then the path
                return
            os.close(rfd)
            if fd >= 0:
                os.close(fd)
            return
        if await self._resume_from_copy(cp):
            # Compressed after its rotation: read from there, then the rotations made
            # after it (compressed or not), then the path.
            if fd >= 0:
                os.close(fd)
            return
        if fd < 0:
            fd = await self._open(self.path)
        # Our file is gone: the path is a new file.
        self._notice(
            "checkpoint",
            f"checkpoint at byte {cp.offset} does not fit {self.path}: its file is neither"
            " there nor among its rotations (what it held past that byte is lost);"
            " reading the file there now from the beginning",
        )
        self._attach(fd, self.path, 0)

    async def _resume_from_copy(self, cp: FollowCheckpoint) -> bool:
        """Go on reading the checkpoint's file from a rotated copy, if one holds it.

        The copy is copytruncate's, or the rotated file compressed while we were
        stopped.  It is read one chunk at a time like any file, then the files rotated
        after it, then the path (``_move_on``).
        """
        # A unit of every encoding divides the offset of a line: it is the checkpoint's.
        opened = await self._find_and_open_copy(cp.file, cp.offset)
        if opened is None:
            return False
        copy, chunks = opened
        encoding = self._copy_encoding(copy, cp.file.encoding)
        offset = cp.offset - cp.offset % _unit_of(encoding)
        if offset != cp.offset:  # another encoding than the checkpoint's file had
            chunks.close()
            opened = await self._find_and_open_copy(cp.file, offset)
            if opened is None:
                return False
            copy, chunks = opened
        self._file = _Open(
            fd=-1,
            path=copy.path,
            identity=dataclasses.replace(cp.file, encoding=encoding) if self._auto else cp.file,
            engine=self._engine_for(offset, head=copy.head, encoding=encoding),
            read_pos=offset,
            known_size=copy.size,
            copy=copy,
            chunks=chunks,
        )
        self._draining = True
        return True

    async def _find_and_open_copy(
        self, identity: FileIdentity, offset: int
    ) -> tuple[_Copy, Generator[bytes, None, None]] | None:
        """A rotated copy holding ``identity``'s file past ``offset``, opened at ``offset``.

        Found again if a rotation renamed it between finding and opening.
        """
        for _ in range(_FIND_ATTEMPTS):
            copy = await self._find_copy_of(identity, offset)
            if copy is None:
                return None
            try:
                chunks = await anyio.to_thread.run_sync(_open_copy, copy, offset)
            except (ValueError, OSError):  # CompressedFileError is a ValueError
                # Gone or changed since it was checked (its name may name the next
                # rotation's file, not compressed yet): look again.
                chunks = None
            if chunks is not None:
                return copy, chunks
        return None

    def _misfit(self, fd: int, cp: FollowCheckpoint, offset: int) -> None:
        """Tell that the checkpoint does not fit the file open as ``fd``, read from
        ``offset`` (0) instead of the checkpoint's."""
        if offset == cp.offset:
            return
        size = os.fstat(fd).st_size
        if not _matches(fd, cp.file):
            why = (
                f"the file's first {cp.file.head_length} bytes are not the checkpoint's"
                " (rewritten, or another file)"
            )
        else:
            why = f"it is past the end of the file ({size} bytes)"
        self._notice(
            "checkpoint",
            f"checkpoint at byte {cp.offset} does not fit {self.path}: {why};"
            " reading it from the beginning",
        )

    @staticmethod
    def _resume_offset(fd: int, cp: FollowCheckpoint) -> int:
        """The checkpoint's offset if ``fd`` is still its file, else 0.

        Same inode but other first bytes, or shorter than the offset: the file was
        truncated and rewritten, or it is a new file that reuses the inode.  Either way
        the old offset means nothing in it and all of it is unread.
        """
        if _matches(fd, cp.file) and os.fstat(fd).st_size >= cp.offset:
            return cp.offset
        return 0

    # -- reading -------------------------------------------------------------------

    async def _fill(self) -> None:
        """Read more; at the end, look for rotation or truncation, else wait.

        An exception from ``on_malformed`` is raised here, once the read is taken in
        (the lines read with it are delivered next; nothing is lost).
        """
        await self._read_more()
        error, self._callback_error = self._callback_error, None
        if error is not None:
            raise error

    async def _read_more(self) -> None:
        if self._file is None:
            await self._open_first()
        f = self._file
        assert f is not None
        if f.unfed:
            self._feed_slice(f)
            return
        if f.copy is not None:
            await self._read_copy(f)
            return
        # Read the anchor again with the new bytes: if the bytes before our position
        # changed, the file was truncated and rewritten (perhaps past its old size).
        # Nothing read yet (no anchor): the first bytes must still be the fingerprinted
        # ones, or the file was truncated between its open and this first read.
        n = len(f.anchor)
        data = await self._pread(f, READ_SIZE + n, f.read_pos - n, n + 1)
        if data[:n] != f.anchor or (not f.read_pos and not _head_holds(f, data)):
            _stop_reading_ahead(f)
            await self._truncated(f)
            return
        if len(data) > n:
            f.known_size = max(os.fstat(f.fd).st_size, f.read_pos + len(data) - n)
            self._take(f, data, n)  # the anchor is skipped, not sliced off (a copy)
            self._read_ahead(f, full=len(data) == _in_loop_size(READ_SIZE + n))
            return
        _stop_reading_ahead(f)  # caught up: a quiet file needs no thread
        if self._until_eof and not self._draining:
            # Read once: the unfinished last line is shown, but it is not complete, so
            # the checkpoint stays at its start and a later run reads it again whole.
            self._finish(f, unfinished=True)
            self._at_eof = True
        elif not await self._look_around(f):
            if self._until_eof:
                self._finish(f, unfinished=True)
                self._at_eof = True
                return
            due = self._partial_due(f)
            if due is not None and due <= 0:
                self._queue_items(f, f.engine.cut_unfinished())
                if self._queue:
                    return
                due = None  # what is held cannot be cut yet: the next bytes decide
            await self._wait_for_change(f, due)

    async def _pread(self, f: _Open, size: int, offset: int, at_least: int) -> bytes:
        """``os.pread(f.fd, size, offset)``, or fewer bytes (at least ``at_least``, or
        all there are): from the page cache at once where it holds them (up to
        ``CACHED_READ_SIZE``; always, for a file held in memory: ``_in_memory``), else
        in a worker thread, since a read from storage may take milliseconds.  A
        cancellation point either way; cancelled, nothing is read.
        """
        if f.in_memory or (f.nowait and _NOWAIT is not None):
            # A reader that never waits must still be cancellable at each read, and let
            # the other tasks run as often as it did with a thread per ``READ_SIZE``
            # read (a turn of the event loop per read would cost more than the read).
            if self._unyielded >= READ_SIZE:
                self._unyielded = 0
                await anyio.lowlevel.checkpoint()
            else:
                await anyio.lowlevel.checkpoint_if_cancelled()
            found = _taken_ahead(f, size, offset, at_least)
            if found is not None:
                self._unyielded += len(found)
                return found
            if f.in_memory:
                # A file in memory: the read is a copy from memory, whatever its size
                # (at most ``CACHED_READ_SIZE``, to bound the time the loop is held).
                found = os.pread(f.fd, _in_loop_size(size), offset)
                self._unyielded += len(found)
                return found
            buffer = self._scratch
            if buffer is None:
                buffer = self._scratch = follow_implementation().ReadBuffer(CACHED_READ_SIZE)
            try:
                data = _read_cached(f.fd, buffer, size, offset, at_least)
            except OSError as exc:
                if exc.errno not in _NOWAIT_UNSUPPORTED:
                    raise
                f.nowait = False  # this file system cannot tell: read it in threads
                data = None
            if data is not None:
                self._unyielded += len(data)
                return data
        self._unyielded = 0
        return await anyio.to_thread.run_sync(os.pread, f.fd, size, offset)

    def _read_ahead(self, f: _Open, full: bool) -> None:
        """After a read done in the loop: if it came back full (more is likely there),
        start the next one in a thread (``ReadAhead``) while its lines are handed out;
        else (caught up) stop that thread, as a quiet file needs none."""
        if not full or not _READ_AHEAD or not (f.in_memory or (f.nowait and _NOWAIT is not None)):
            _stop_reading_ahead(f)
            return
        if f.readahead is None:
            kind = follow_implementation().ReadAhead
            if kind.threads() >= _READ_AHEAD_THREADS:
                return  # enough files are read ahead (many followed at once)
            f.readahead = kind(f.fd)
        n = len(f.anchor)  # what the next read in ``_read_more`` asks for
        f.readahead.start(f.read_pos - n, _in_loop_size(READ_SIZE + n), not f.in_memory)

    async def _look_around(self, f: _Open) -> bool:
        """At the end of the data: handle truncation and rotation; True if acted."""
        st = os.fstat(f.fd)
        if st.st_size < f.read_pos:
            await self._truncated(f)
            return True
        f.known_size = st.st_size
        if not self._draining:
            try:
                st_path = os.stat(self.path)
            except OSError as exc:  # renamed or deleted, the new file is not there yet
                self._cannot_open(f"has become inaccessible: {exc.strerror or exc}")
                return False
            if f.identity.same_inode(st_path):
                return False
            self._draining = True  # rotated away
        # Writes may have reached the rotated file since the last read: drain it.
        data = await anyio.to_thread.run_sync(os.pread, f.fd, READ_SIZE, f.read_pos)
        if data:
            self._take(f, data)
            return True
        if not self._until_eof:
            grace_left = self._grace_left(f)
            if grace_left > 0:
                await self._wait_for_change(f, grace_left)
                return True
            if f.copy is None and await anyio.to_thread.run_sync(self._writer_may_hold, f):
                # Quiet, but its writer has not reopened the path yet: it may still append.
                await self._wait_for_change(f, self._rotate_grace or self._poll_interval)
                return True
        return await self._move_on(f)

    def _partial_due(self, f: _Open) -> float | None:
        """Seconds until the unfinished last line of ``f`` is handed out as it is
        (``partial_after``); None if it is not to be, or nothing is held."""
        if self._partial_after is None or not f.engine.partial or f.engine.overlong:
            return None
        return f.fed_at + self._partial_after - anyio.current_time()

    def _writer_may_hold(self, f: _Open) -> bool:
        """Whether the writer of the renamed-away ``f`` may still append to it: nothing
        has been written at the path since (empty or missing) and some process has ``f``
        open for writing (Linux; elsewhere the grace period alone decides)."""
        try:
            if os.stat(self.path).st_size > 0:
                return False  # the writer (or another) has moved on to the path
        except OSError:
            pass  # not created yet
        return held_for_writing(f.fd)

    async def _move_on(self, f: _Open) -> bool:
        """Leave the rotated file ``f``, read to its end, for the next file; False (and
        ``f`` kept) if that is the path and it cannot be opened now."""
        exclude: set[str] = set()
        for _ in range(_FIND_ATTEMPTS):
            target = await anyio.to_thread.run_sync(self._next_file, f, exclude)
            if target.compression is not None:
                opened = await anyio.to_thread.run_sync(_open_compressed, target)
                if opened is None:
                    continue  # renamed meanwhile: look again
                if isinstance(opened, str):
                    self._notice("damaged", opened)
                    exclude.add(target.path)
                    continue
                copy, chunks = opened
                self._leave(f)
                self._release()
                encoding = self._copy_encoding(copy, None)
                identity = FileIdentity(
                    copy.device,
                    copy.inode,
                    *head_fingerprint(copy.head),
                    encoding if self._auto else None,
                )
                self._file = _Open(
                    fd=-1,
                    path=copy.path,
                    identity=identity,
                    engine=self._engine_for(0, head=copy.head, encoding=encoding),
                    read_pos=0,
                    known_size=copy.size,
                    copy=copy,
                    chunks=chunks,
                )
                self._draining = True
                return True
            try:
                fd = await self._open(target.path)
            except OSError as exc:
                if target.path == self.path:
                    self._cannot_open(f"has become inaccessible: {exc.strerror or exc}")
                    return False
                continue  # renamed or deleted since listed: look again
            st = os.fstat(fd)
            if target.inode >= 0 and (st.st_dev, st.st_ino) != (target.device, target.inode):
                os.close(fd)  # a rotation gave the name to another file meanwhile
                continue
            self._leave(f)
            self._attach(fd, target.path, 0)
            self._draining = target.path != self.path
            if not self._draining:
                self._opened("replaced", "has been replaced; following new file")
            return True
        return False

    def _leave(self, f: _Open) -> None:
        """``f`` is read to its end: remember it as read, hand out its last line."""
        copy = f.copy
        if copy is None:
            self._visited[(f.identity.device, f.identity.inode)] = f.identity
        elif copy.compression is None:
            identity = FileIdentity(
                copy.device, copy.inode, f.identity.head_length, f.identity.head_sha256
            )
            self._visited[(copy.device, copy.inode)] = identity
        self._finish(f, lost=f.lost)
        f.lost = 0
        self._rotations += 1

    def _grace_left(self, f: _Open) -> float:
        """Seconds the rotated-away ``f`` must still stay unchanged before it is left.

        Quiet is measured from the later of its last modification and the moment it was
        first seen with nothing new, whichever ends sooner: a file rotated long ago (a
        restart) is left at once, and one whose modification time is in the future (a
        clock set back) is still left ``rotate_grace`` after its last new byte.
        """
        now = time.monotonic()
        if f.quiet_since is None:
            f.quiet_since = now
        since_read = now - f.quiet_since
        since_write = time.time() - os.fstat(f.fd).st_mtime
        return self._rotate_grace - max(since_read, since_write)

    async def _wait_for_change(self, f: _Open, timeout: float | None = None) -> None:
        """Wait until ``f``, the path followed, or its directory may have changed.

        The kernel wakes the follower (``Watcher``); where it cannot, the directory is
        polled every ``poll_interval``.  The watcher is armed before the last look (it
        stays armed from the first wait on), so a change made between the read that
        found nothing and the wait is not missed.
        Returns after ``timeout`` seconds too, and soon after ``stop_at_end()``.
        """
        self._note_caught_up()
        paths = tuple(dict.fromkeys((self.path, f.path)))
        watcher = self._watcher
        if watcher is None:
            watcher = Watcher(paths, poll_interval=self._poll_interval)
            await watcher.__aenter__()
            self._watcher = watcher
        elif watcher.paths != paths:
            watcher.retarget(paths)
        deadline = None if timeout is None else anyio.current_time() + timeout
        look = await anyio.to_thread.run_sync(self._look_again, f)
        if look == "changed":
            return
        if look == "path gone":
            # The writer may go on writing to our file under a name nobody
            # watches: look again after ``poll_interval``, as a poller would.
            gone_deadline = anyio.current_time() + self._poll_interval
            deadline = gone_deadline if deadline is None else min(deadline, gone_deadline)
        while not self._until_eof and not self._closed:
            # Woken by the kernel, the follower still looks at ``stop_at_end()`` often.
            step = self._poll_interval
            if watcher.mode == "kernel":
                step = min(step, _FLAG_CHECK_INTERVAL)
            if deadline is not None:
                step = min(step, deadline - anyio.current_time())
                if step <= 0:
                    return
            if await watcher.wait(step):
                return

    def _look_again(self, f: _Open) -> str:
        """``"changed"`` if ``f`` or the path differs from what the last look saw,
        ``"path gone"`` if the path names nothing, else ``"same"``."""
        if os.fstat(f.fd).st_size != f.read_pos:
            return "changed"
        if self._draining:
            return "same"
        try:
            st = os.stat(self.path)
        except OSError:
            return "path gone"
        return "same" if f.identity.same_inode(st) else "changed"

    def _next_file(self, f: _Open, exclude: set[str]) -> _Next:
        """The file to read after the rotated ``f``: the next newer rotation, else the path.

        Several rotations may have happened while we were stopped or not being iterated.
        Where the rotated files are named by a scheme (``_rotation_key``: logrotate's
        numbers or dates), the next is the oldest one named newer than ``f``, compressed
        or not (a compressed one is read decompressed); when a file and its compressed
        twin share a name (compression under way), the plain one.  Otherwise the plain
        files last written after ``f`` are read in the order of their modification times
        (a compressed file's time is that of its compression, so those are left out).
        ``exclude``: paths not to take (found damaged).  Runs in a worker thread.
        """
        live = Path(self.path)
        try:
            live_st = live.stat()
            live_inode = (live_st.st_dev, live_st.st_ino)
        except OSError:
            live_inode = None
        try:
            siblings = list(live.parent.iterdir())
        except OSError:
            return _Next(self.path)
        entries: list[tuple[Path, os.stat_result]] = []
        for candidate in siblings:
            if candidate == live or not candidate.name.startswith(live.name):
                continue
            try:
                cst = candidate.stat()
            except OSError:
                continue
            if stat.S_ISREG(cst.st_mode) and (cst.st_dev, cst.st_ino) != live_inode:
                entries.append((candidate, cst))
        reference = self._reference_key(f, entries)
        if reference is None:
            return self._next_by_time(f, entries, exclude)
        flip = reference[0] == "number" and _numbers_grow_newer(live.name, entries)
        if flip:
            reference = ("number", -reference[1], "")
        best: tuple[tuple[str, int, str], bool, _Next] | None = None
        for candidate, cst in entries:
            key = _rotation_key(live.name, candidate.name)
            if key is not None and flip and key[0] == "number":
                key = ("number", -key[1], "")
            if key is None or key[0] != reference[0] or key <= reference:
                continue
            if str(candidate) in exclude or (best is not None and key > best[0]):
                continue
            try:
                compression = compression_of(candidate)
            except OSError:
                continue
            if compression is None and self._read_before(candidate, cst):
                continue
            found = _Next(str(candidate), cst.st_dev, cst.st_ino, compression)
            # Of a file and its compressed twin (compression under way: the twin may be
            # empty still, with no magic bytes to tell it), the plain one.
            twin = compression is not None or bool(_COMPRESSED_SUFFIX.search(candidate.name))
            if best is None or (key, twin) < best[:2]:
                best = (key, twin, found)
        return _Next(self.path) if best is None else best[2]

    def _reference_key(
        self, f: _Open, entries: list[tuple[Path, os.stat_result]]
    ) -> tuple[str, int, str] | None:
        """The rotation key of the name ``f``'s file has now, if it has one.

        A plain file deleted after its compression (``delaycompress``: ``app.log.2``
        became ``app.log.2.gz`` while we read it) is known by the fingerprint of its
        compressed copy's decompressed head; of several with it, the oldest is taken
        (reading a file twice is better than skipping one).
        """
        live_name = Path(self.path).name
        inode = (
            (f.identity.device, f.identity.inode)
            if f.copy is None
            else (f.copy.device, f.copy.inode)
        )
        for candidate, cst in entries:
            if (cst.st_dev, cst.st_ino) == inode:
                return _rotation_key(live_name, candidate.name)
        if f.copy is not None or f.identity.head_length == 0:
            return None
        keys = []
        for candidate, _ in entries:
            key = _rotation_key(live_name, candidate.name)
            if key is None:
                continue
            try:
                if compression_of(candidate) is not None and matches(
                    candidate, f.identity.head_length, f.identity.head_sha256
                ):
                    keys.append(key)
            except (ValueError, OSError):  # CompressedFileError too; or changed meanwhile
                continue
        return min(keys) if keys else None

    def _next_by_time(
        self, f: _Open, entries: list[tuple[Path, os.stat_result]], exclude: set[str]
    ) -> _Next:
        """The plain rotated file last written after ``f`` the soonest, not read yet."""
        if f.copy is None:
            mtime = os.fstat(f.fd).st_mtime_ns
            skip = (f.identity.device, f.identity.inode)
        else:
            # A compressed copy's time is that of its compression: every plain one counts.
            mtime = f.copy.mtime_ns if f.copy.compression is None else 0
            skip = (f.copy.device, f.copy.inode)
        newer: list[tuple[int, str, os.stat_result]] = []
        for candidate, cst in entries:
            if (
                (cst.st_dev, cst.st_ino) != skip
                and cst.st_mtime_ns >= mtime
                and str(candidate) not in exclude
                and not _COMPRESSED_SUFFIX.search(candidate.name)  # perhaps being written
                and not _is_compressed(candidate)
                and not self._read_before(candidate, cst)
            ):
                newer.append((cst.st_mtime_ns, str(candidate), cst))
        if not newer:
            return _Next(self.path)
        _, path, cst = min(newer, key=lambda n: (n[0], n[1]))
        return _Next(path, cst.st_dev, cst.st_ino)

    def _read_before(self, candidate: Path, st: os.stat_result) -> bool:
        """Whether ``candidate`` is a rotated file already read to its end: its inode was
        seen, and its first bytes are still those of the file seen there (after a delete,
        logrotate's ``rotate N``, the inode may be a new log's)."""
        seen = self._visited.get((st.st_dev, st.st_ino))
        if seen is None:
            return False
        try:
            fd = os.open(candidate, os.O_RDONLY)
        except OSError:
            return True  # unreadable now: nothing to read from it either
        try:
            return _matches(fd, seen)
        finally:
            os.close(fd)

    async def _truncated(self, f: _Open) -> None:
        """The file shrank or was rewritten: restart at 0, reporting vanished bytes.

        The bytes not read yet are first taken from the rotated copy (copytruncate's
        ``app.log.1``, perhaps compressed) when one is found, one chunk per read; only
        what no copy holds is reported lost.
        """
        self._truncations += 1
        opened = await self._find_and_open_copy(f.identity, f.read_pos)
        recovered = 0 if opened is None else opened[0].size - f.read_pos
        lost = max(0, f.known_size - f.read_pos - recovered)
        message = "file truncated"
        if recovered:
            message += f"; {recovered} bytes not read yet were taken from its rotated copy"
        if lost:
            message += f"; {lost} bytes not read were lost"
        self._notice("truncated", message)
        if opened is not None and recovered:
            f.copy, f.chunks = opened
            f.resume_live = True
            f.lost = lost
            return
        if opened is not None:
            opened[1].close()
        self._finish(f, lost=lost)
        self._attach(os.dup(f.fd), f.path, 0)

    async def _find_copy_of(self, identity: FileIdentity, offset: int) -> _Copy | None:
        """A rotated copy holding ``identity``'s file past ``offset``; damaged ones told."""
        problems: list[str] = []
        copy = await anyio.to_thread.run_sync(
            _find_copy, Path(self.path), identity, offset, problems
        )
        for problem in problems:
            self._notice("damaged", problem)
        return copy

    async def _read_copy(self, f: _Open) -> None:
        """Read one chunk of ``f``'s file from its rotated copy; at the copy's end, go on
        with the truncated file from its start, or with the next file.

        ``f``'s engine cuts the bytes (the lines say they come from the copy).  One chunk
        at a time, as from a plain file: memory stays bounded whatever the copy holds.
        """
        copy = f.copy
        assert copy is not None
        chunk = b""
        if f.chunks is not None:
            try:
                chunk = await anyio.to_thread.run_sync(next, f.chunks, b"")
            except (CompressedFileError, OSError) as exc:
                # Changed since it was checked: what was read stands, the rest is a gap.
                self._notice("damaged", f"cannot read the rotated copy {copy.path}: {exc}")
                f.lost += max(0, copy.size - f.read_pos)
        if chunk:
            f.read_pos += len(chunk)
            f.known_size = max(f.known_size, f.read_pos)
            self._queue_items(f, f.engine.feed(chunk), copy.path)
            return
        if f.chunks is not None:
            f.chunks.close()
            f.chunks = None
        if f.resume_live:
            self._finish(f, lost=f.lost)
            self._attach(os.dup(f.fd), f.path, 0)
            return
        if not await self._move_on(f):
            # The path cannot be opened now: it is opened (and read from its start, as
            # a file that appeared) at the next step, or waited for with ``retry``.
            self._leave(f)
            self._file = None
            self._draining = False
            self._start = "beginning"

    def _finish(self, f: _Open, lost: int = 0, unfinished: bool = False) -> None:
        """Leaving a file: its unfinished last line is complete now."""
        self._queue_items(f, f.engine.finish(lost=lost, unfinished=unfinished))

    def _take(self, f: _Open, data: bytes, start: int = 0) -> None:
        """Cut newly read bytes (``data`` from ``start`` on) into lines and queue the
        complete ones (those of the first ``FEED_SIZE`` bytes; the rest when asked)."""
        if f.undecided:
            # The first bytes of a file that was empty: its encoding is told now.
            encoding = self._detect(f.fd) or sniff_encoding(data[start:], whole=False)
            f.engine = self._engine_for(f.read_pos, f.fd, encoding=encoding)
            f.identity = dataclasses.replace(f.identity, encoding=encoding)
            f.undecided = False
        end = len(data)
        if end - start > FEED_SIZE:
            # A long read ends at a line's end: the rest, the start of a line, is read
            # again with the next bytes (positional reads), so no slice holds a line
            # that the engine must join to the next read's (that costs the general path
            # twice per read).  A read with no newline is taken whole.
            end = f.engine.slice_end(data, start, end)
        f.read_pos += end - start
        f.quiet_since = None
        f.fed_at = anyio.current_time()
        f.anchor = (f.anchor + data[max(start, end - ANCHOR_BYTES) : end])[-ANCHOR_BYTES:]
        if f.identity.head_length < FINGERPRINT_BYTES and f.read_pos > f.identity.head_length:
            # A young file: fingerprint more of it, so a reused inode is recognised.
            head = os.pread(f.fd, FINGERPRINT_BYTES, 0)[: f.read_pos]
            length, digest = head_fingerprint(head)
            f.identity = dataclasses.replace(f.identity, head_length=length, head_sha256=digest)
        f.unfed, f.unfed_at, f.unfed_end = data, start, end
        self._feed_slice(f)

    def _feed_slice(self, f: _Open) -> None:
        """Cut the next ``FEED_SIZE`` bytes of the last read into lines, and queue them.

        The slice ends just past a newline where it can: the engine then holds nothing
        to join to the next slice (a copy of it), and the slice is not copied either."""
        found = _slice_records(f)
        if found is not None:
            # In one call where it can: the slice cut straight into records.
            lines, after, items = found
            if lines:
                self._queue.append(_Block(lines, after, f.identity))
            self._queue_items(f, items)
            return
        data, at, limit = f.unfed, f.unfed_at, f.unfed_end
        stop = min(at + FEED_SIZE, limit)
        end = f.engine.slice_end(data, at, stop) if stop < limit else limit
        _fed_to(f, end)
        # A slice is a view: the engine's fast path reads it where it lies (no copy).
        piece = memoryview(data)[at:end] if at or end < len(data) else data
        self._queue_items(f, f.engine.feed(piece))

    def _queue_items(
        self, f: _Open, items: list[LineBatch | LineItem], path: str | None = None
    ) -> None:
        queue = self._queue
        identity = f.identity
        path = f.path if path is None else path
        for item in items:
            if isinstance(item, LineBatch):
                texts, offsets = item
                records = _records(texts, offsets, identity, path)
                queue.append(_Block(records, offsets[-1], identity))
            else:
                line, offset, end, mid_line, terminated = item
                if line is None and self._on_overlong == "skip":
                    self._skipped += 1  # (under "raise", None only moves the checkpoint)
                queue.append((line, offset, end, identity, path, mid_line, terminated))

    def _found_overlong(self, offset: int) -> None:
        """Truncated or skipped: text is lost, so say so (a split loses nothing)."""
        self._overlong += 1
        done = {"truncate": "truncated", "skip": "skipped"}.get(self._on_overlong)
        if done is not None:
            self._notice(
                "overlong", f"line at byte {offset} longer than {self._max} bytes: {done}"
            )


class _EventDue(Exception):
    """The held event's timeout has passed and the file has nothing more: hand it out."""


class _MultilineFollower(Follower):
    """A follower whose ``Line`` records are multi-line events (``follow(multiline=)``).

    The lines come from the plain follower, with the offset just past each (its
    checkpoint); they go through the joiner, which holds the incomplete event.  A line
    from another file (another inode, or an offset before the last: a truncation) ends
    the event held.  Each event keeps the checkpoint taken just before its first line:
    the checkpoint is that of the first event not handed out (queued or held), else the
    plain one.  The pieces of a line longer than ``max_line_bytes`` (``on_overlong=
    "split"``) are joined to its start (``MultilineJoiner.extend``), not as lines.  An
    event is ``terminated`` as its last line is; one that ends in the
    unfinished last line of ``until_eof`` (or ``stop_at_end()``), which the plain
    checkpoint stays before, is not complete either: handed out, it leaves the checkpoint
    before its first line, and a later run reads it again whole.

    The timeout is kept where the follower waits for its file (``_wait_for_change``,
    the only wait once a file is open, so whenever an event is held): the wait ends when
    the held event is due, and once due, the next wait raises ``_EventDue`` instead, so
    the file is always looked at first.  Lines that reached the file in time join the
    event even when the consumer came back late; only a file with nothing more ends it.
    Where there is no file to look at (its path cannot be opened now), the step is
    bounded by the event's timeout instead.
    """

    def __init__(self, joiner: MultilineJoiner, timeout: float, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("partial_after") is not None:
            raise ValueError("partial_after is for lines: a multi-line event is handed out whole")
        super().__init__(*args, **kwargs)
        self._joiner = joiner
        self._multiline_timeout = timeout
        #: Complete events not handed out, each with the checkpoint before its first line.
        self._events: deque[tuple[Line, FollowCheckpoint]] = deque()
        #: The event held by the joiner: the checkpoint before it, its file and path.
        self._held: tuple[FollowCheckpoint, FileIdentity, str] | None = None
        self._last: tuple[int, int, int] | None = None  # device, inode, end of last line
        self._line_end: FollowCheckpoint | None = None  # the plain checkpoint after it
        self._last_terminated = True  # whether the last line read had its newline
        self._last_open = False  # ... and whether the plain checkpoint stayed before it
        #: Before an event handed out whose last line was unfinished (at the end).
        self._unfinished: FollowCheckpoint | None = None

    def __aiter__(self) -> AsyncIterator[Line]:
        return self

    async def __anext__(self) -> Line:
        events = self._events
        while not events:
            await self._join_more()
        return events.popleft()[0]

    async def _join_more(self) -> None:
        """Take one more line (or the held event, due, or the end) and queue the events
        it completes."""
        try:
            left = self._due_in()
            if left is not None and self._file is None:
                # No file to look at (its path cannot be opened now, after a copy was
                # drained): waiting for it, or trying it, ends when the event is due.
                if left <= 0:
                    self._flush()
                    return
                with anyio.move_on_after(left):  # cancelling a step loses nothing
                    await self._join_line()
                return
            await self._join_line()
        except _EventDue:
            self._flush()
        except StopAsyncIteration:
            self._flush()
            if not self._events:
                raise

    def _due_in(self) -> float | None:
        """Seconds until the held event is due (<= 0: it is); None if none is held."""
        since = self._joiner.pending_since
        return None if since is None else self._multiline_timeout - (anyio.current_time() - since)

    def hand_out_held(self) -> bool:
        """Queue the held event now (its file is gone); whether events wait to go out."""
        self._flush()
        return bool(self._events)

    async def _wait_for_change(self, f: _Open, timeout: float | None = None) -> None:
        left = self._due_in()
        if left is not None:
            if left <= 0:
                raise _EventDue  # (raised where a wait begins: the state is complete)
            timeout = left if timeout is None else min(timeout, left)
        await super()._wait_for_change(f, timeout)

    async def _join_line(self) -> None:
        before = self._line_end
        line = await Follower.__anext__(self)
        after = Follower.checkpoint(self)
        self._line_end = after
        self._unfinished = None
        where = (line.file.device, line.file.inode)
        piece = before is not None and before.mid_line  # the rest of a line cut in pieces
        if self._last is not None and (where != self._last[:2] or line.offset < self._last[2]):
            self._flush()  # another file: the event held is complete
            piece = False
        self._last = (*where, after.offset)
        held = self._held is not None
        previous = self._last_terminated  # of the last line of the events this completes
        self._last_terminated = line.terminated
        self._last_open = not line.terminated and after.offset <= line.offset
        now = anyio.current_time()
        if piece:
            events = self._joiner.extend(line.text, line.offset, after.offset, now)
        else:
            events = self._joiner.feed([(line.text, line.offset, after.offset)], now)
        for event in events:
            self._queue_event(event, previous)
        if self._joiner.pending_since is None:
            self._held = None
        elif events or not held:  # this line began the event now held
            start = before or FollowCheckpoint(self._followed, line.file, line.offset)
            self._held = (start, line.file, line.path)

    def _flush(self) -> None:
        event = self._joiner.flush()
        if event is not None:
            assert self._held is not None
            if self._last_open:  # the unfinished last line: the event is not complete
                self._unfinished = self._held[0]
            self._queue_event(event, self._last_terminated)
        self._held = None

    def _queue_event(self, event: MultilineEvent, terminated: bool) -> None:
        """Queue an event: the one held until now."""
        assert self._held is not None
        start, file, path = self._held
        self._events.append((Line(event.text, event.offset, file, path, terminated), start))

    def checkpoint(self) -> FollowCheckpoint:
        """Where a new follower resumes: before the first line of the first event not
        handed out, else just past the last line read."""
        if self._events:
            return self._events[0][1]
        if self._held is not None:
            return self._held[0]
        if self._unfinished is not None:
            return self._unfinished
        return Follower.checkpoint(self)

    def has_pending(self) -> bool:
        return bool(self._events) or Follower.has_pending(self)


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
