"""How the follower opens and reads a file: identity, page cache, memory file systems,
read-ahead, where each read is done (``_Reads``), and the state of the file being read.
The sizes and choices are the follower's ``ReadPolicy`` (``_readpolicy.py``), which each
file being read carries."""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from ...core.autodecode import DEFAULT_MAX_LOOKAHEAD
from ...core.autodoubt import DoubtTracker
from ...core.autolines import line_codec
from ...core.linecodec import LineEngine, Utf8LineDecoder, line_decoder
from .._apps_accel import implementation as apps_implementation
from .._identity import FINGERPRINT_BYTES, head_fingerprint
from .._readahead import read_ahead, threads
from ._readpolicy import ReadPolicy
from ._records import FileIdentity

if TYPE_CHECKING:
    from ...core.detector import Detection
    from .._readahead import Ahead
    from ._checkpoint import FollowCheckpoint
    from ._rotation import _Copy


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


def _nowait_flag() -> int | None:
    """``os.RWF_NOWAIT`` where ``preadv`` takes it (Linux), else None."""
    flag: int | None = getattr(os, "RWF_NOWAIT", None)
    return flag if hasattr(os, "preadv") else None


#: What ``preadv`` with ``RWF_NOWAIT`` raises where the file system cannot tell whether a
#: read would wait (tmpfs, many network file systems): that file is read in a thread.
_NOWAIT_UNSUPPORTED = {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS}


def _read_cached(
    fd: int, buffer: Any, size: int, offset: int, at_least: int, nowait: int
) -> bytes | None:
    """Up to ``size`` bytes (at most ``len(buffer)``) of ``fd`` at ``offset`` if the page
    cache holds them (at least ``at_least`` of them, or all the file holds from
    ``offset``; else None), read without waiting for storage or for a lock
    (``RWF_NOWAIT``), so in the event loop's thread: what the kernel does then is a copy
    from memory.  ``buffer`` is a ``ReadBuffer`` (``implementation()``'s): the bytes
    returned are the buffer itself with the accelerator (no second copy of what was
    read), a copy of it without.  Raises ``OSError`` with an errno of
    ``_NOWAIT_UNSUPPORTED`` where the file system cannot say.  ``nowait``:
    ``os.RWF_NOWAIT``."""
    with memoryview(buffer) as whole, whole[: min(size, len(whole))] as space:
        try:
            n = os.preadv(fd, (space,), offset, nowait)
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


def _in_loop_size(f: _Open, size: int) -> int:
    """How much of a read of ``size`` bytes is done in the event loop's thread at once."""
    return min(size, f.policy.cached_read_size)


def _taken_ahead(f: _Open, size: int, offset: int, at_least: int) -> bytes | None:
    """The read ``_Reads.pread`` asks for, if ``f``'s ``ReadAhead`` started it: its bytes, if
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
        data: bytes | None = f.readahead.take(offset, _in_loop_size(f, size))
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


def in_memory(st: os.stat_result, mountinfo: str = "/proc/self/mountinfo") -> bool:
    """Whether the file ``st`` describes lives on a file system held in memory (Linux's
    mount table, ``mountinfo``, says; False wherever it cannot be told).

    Such a file is read in the event loop's thread, as a read the page cache holds is
    elsewhere: a copy from memory, where a worker thread's round trip (and the bytes
    read on another processor's cache) would cost more than the read.  The exception
    is memory swapped out, which any access may wait for."""
    wanted = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as table:
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


@dataclass
class _Open:
    """The file being read; its line engine holds the unfinished line."""

    fd: int
    path: str
    identity: FileIdentity
    engine: LineEngine
    read_pos: int  # next byte to read
    policy: ReadPolicy  # the follower's read sizes and choices
    known_size: int = 0  # size at the last look: did unread bytes vanish?
    anchor: bytes = b""  # the bytes just before read_pos, to notice a rewrite
    #: When its last new bytes were read (the event loop's clock): ``partial_after``.
    fed_at: float = 0.0
    #: Reading the rest of the file from a rotated copy (``fd`` is -1, or the truncated
    #: file, read again from 0 once the copy is done).
    copy: _Copy | None = None
    #: The copy's bytes still to read, one chunk per read (None once read to its end).
    chunks: Generator[bytes, None, None] | None = None
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
    #: The file system keeps its files in memory (``in_memory``): every read is done in
    #: the event loop's thread.
    in_memory: bool = False
    #: While catching up (each read done in the loop came back full): the next read,
    #: started in a thread of its own as this one's lines are handed out (``read_ahead``).
    readahead: Ahead | None = None
    #: ``encoding="auto"``, read from its first byte: whether later bytes put the
    #: encoding detected in doubt (``DoubtTracker``).
    doubt: DoubtTracker | None = None


def _detect(fd: int) -> str | None:
    """``encoding="auto"``: the encoding of the file open as ``fd``, told by its first
    bytes; None while it has none (decided when its first bytes are read)."""
    found = _detection(fd)
    return None if found is None else line_codec(found)


def _detection(fd: int) -> Detection | None:
    """The detector's decision on the first bytes of the file open as ``fd`` (None while
    it has none)."""
    from ...core.detector import detect  # the model loads only when asked for

    head = os.pread(fd, DEFAULT_MAX_LOOKAHEAD, 0)
    return detect(head) if head else None


def _resume_offset(fd: int, cp: FollowCheckpoint) -> int:
    """The checkpoint's offset if ``fd`` is still its file, else 0.

    Same inode but other first bytes, or shorter than the offset: the file was
    truncated and rewritten, or it is a new file that reuses the inode.  Either way
    the old offset means nothing in it and all of it is unread.
    """
    if _matches(fd, cp.file) and os.fstat(fd).st_size >= cp.offset:
        return cp.offset
    return 0


class _Reads:
    """Where a follower's reads are done (``pread``): in the event loop's thread what the
    page cache or a file system in memory holds, else in a worker thread."""

    def __init__(self) -> None:
        #: Scratch space of the reads the page cache holds (``_read_cached``).
        self._scratch: Any = None
        self._unyielded = 0  # bytes read since the event loop last ran other tasks
        self._nowait = _nowait_flag()

    def read_ahead(self, f: _Open, full: bool) -> None:
        """After a read done in the loop: if it came back full (more is likely there),
        start the next one in a thread (``ReadAhead``) while its lines are handed out;
        else (caught up) stop that thread, as a quiet file needs none."""
        policy = f.policy
        if not full or not policy.read_ahead or not (f.in_memory or self._in_loop(f)):
            _stop_reading_ahead(f)
            return
        if f.readahead is None:
            if threads() >= policy.read_ahead_threads:
                return  # enough files are read ahead (many followed at once)
            f.readahead = read_ahead(f.fd)
        n = len(f.anchor)  # what the next read in ``_read_more`` asks for
        f.readahead.start(f.read_pos - n, _in_loop_size(f, policy.read_size + n), not f.in_memory)

    def _in_loop(self, f: _Open) -> bool:
        """Whether ``f``'s reads are tried in the event loop's thread first."""
        return f.in_memory or (f.nowait and self._nowait is not None)

    async def pread(self, f: _Open, size: int, offset: int, at_least: int) -> bytes:
        """``os.pread(f.fd, size, offset)``, or fewer bytes (at least ``at_least``, or
        all there are): from the page cache at once where it holds them (up to
        ``cached_read_size``; always, for a file held in memory: ``in_memory``), else
        in a worker thread, since a read from storage may take milliseconds.  A
        cancellation point either way; cancelled, nothing is read.
        """
        nowait = self._nowait
        if f.in_memory or (f.nowait and nowait is not None):
            # A reader that never waits must still be cancellable at each read, and let
            # the other tasks run as often as it did with a thread per ``read_size``
            # read (a turn of the event loop per read would cost more than the read).
            if self._unyielded >= f.policy.read_size:
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
                # (at most ``cached_read_size``, to bound the time the loop is held).
                found = os.pread(f.fd, _in_loop_size(f, size), offset)
                self._unyielded += len(found)
                return found
            buffer = self._scratch
            if buffer is None:
                buffer = apps_implementation().ReadBuffer(f.policy.cached_read_size)
                self._scratch = buffer
            assert nowait is not None
            try:
                data = _read_cached(f.fd, buffer, size, offset, at_least, nowait)
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
