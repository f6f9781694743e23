"""The pure-Python twin of ``_apps_speedups``, the apps layer's accelerator, name for
name.

``_apps_accel.implementation()`` returns the compiled module or this one.  Nothing here
decodes: the follower's lines come from the core's line engine as plain data (texts and
offsets), and ``records`` makes them ``Line`` records.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import weakref
from collections.abc import Sequence
from typing import Any, TypeVar

__all__ = ["ReadAhead", "ReadBuffer", "records"]

_T = TypeVar("_T")


class ReadBuffer(bytearray):
    """``ReadBuffer(size)``: a buffer of ``size`` bytes that a read fills in place, then
    ``take(n)`` gives its first ``n`` bytes as bytes.  The accelerator's hands out the
    buffer itself (no copy); this one copies them."""

    def take(self, n: int) -> bytes:
        if not 0 <= n <= len(self):
            raise ValueError("take: 0 <= n <= size")
        with memoryview(self) as whole:
            return whole[:n].tobytes()


class ReadAhead:
    """``ReadAhead(fd)``: the accelerator's read-ahead (``_readahead.py`` states the
    contract), here with a Python thread: each read is ``os.pread`` (``os.preadv`` with
    ``RWF_NOWAIT`` when ``nowait``), which releases the GIL while the kernel copies."""

    def __init__(self, fd: int) -> None:
        self._fd = os.dup(fd)  # not inheritable, as the accelerator's F_DUPFD_CLOEXEC
        self._regular = stat.S_ISREG(os.fstat(self._fd).st_mode)
        self._job = _Job(self._fd)
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._asked: tuple[int, int] | None = None  # the read started and not taken
        # Freed while a read is asked for: the thread is stopped first, as the
        # accelerator's does (its target holds the job, not this object).
        self._finalizer = weakref.finalize(self, ReadAhead._stop, self._job, self._fd)

    def start(self, offset: int, size: int, nowait: bool, /) -> bool:
        if offset < 0 or size < 0:
            raise ValueError("start: offset and size must be non-negative")
        if not self._finalizer.alive or not self._regular:
            return False
        if self._thread is not None and self._pid != os.getpid():
            return False  # a forked child: the thread is its parent's
        self._job.settle()
        self._asked = None
        if self._thread is None:
            self._pid = self._job.pid = os.getpid()
            self._job.stopping = False
            thread = threading.Thread(
                target=self._job.run, name="utf8stream-readahead", daemon=True
            )
            thread.start()
            self._thread = self._job.thread = thread
            with _LOCK:
                _RUNNING.add(self._job)
        self._job.ask(offset, size, nowait)
        self._asked = (offset, size)
        return True

    def take(self, offset: int, size: int, /) -> bytes | None:
        if self._asked != (offset, size) or self._pid != os.getpid():
            return None
        self._asked = None
        result = self._job.settle()
        if isinstance(result, BaseException):
            raise result
        return result

    def close(self) -> None:
        self._asked = None
        self._finalizer()

    @staticmethod
    def _stop(job: _Job, fd: int) -> None:
        """The thread stopped after its current read and joined, the duplicate closed."""
        if job.thread is not None:
            if job.pid == os.getpid():
                job.stop()
            job.thread = None
            with _LOCK:
                _RUNNING.discard(job)
        os.close(fd)

    @staticmethod
    def threads() -> int:
        return len(_RUNNING)


class _Job:
    """What a ``ReadAhead`` and its thread share, under ``cond``: the read asked for,
    and its result (bytes, or the exception it raised: an ``OSError``, or a size too
    large for memory)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.cond = threading.Condition(threading.Lock())
        self.state = _IDLE
        self.stopping = False
        self.read: tuple[int, int, bool] = (0, 0, False)
        self.result: bytes | Exception = b""
        self.thread: threading.Thread | None = None
        self.pid = os.getpid()

    def ask(self, offset: int, size: int, nowait: bool) -> None:
        with self.cond:
            self.read = (offset, size, nowait)
            self.state = _ASKED
            self.cond.notify_all()

    def settle(self) -> bytes | Exception:
        """Until the thread is done with the read asked for; its result."""
        with self.cond:
            while self.state in (_ASKED, _BUSY):
                self.cond.wait()
            self.state = _IDLE
            result, self.result = self.result, b""
            return result

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        assert self.thread is not None
        self.thread.join()

    def run(self) -> None:
        with self.cond:
            while True:
                while self.state != _ASKED and not self.stopping:
                    self.cond.wait()
                if self.stopping:
                    return
                self.state = _BUSY
                offset, size, nowait = self.read
                self.cond.release()
                try:
                    result: bytes | Exception = _pread(self.fd, size, offset, nowait)
                except Exception as exc:  # raised by ``take``, in the caller's thread
                    result = exc
                finally:
                    self.cond.acquire()
                self.result = result
                self.state = _DONE
                self.cond.notify_all()


_IDLE, _ASKED, _BUSY, _DONE = range(4)
#: The jobs whose thread was started in this process and not stopped (``threads()``).
_RUNNING: set[_Job] = set()
_LOCK = threading.Lock()


def _pread(fd: int, size: int, offset: int, nowait: bool) -> bytes:
    if not nowait:
        return os.pread(fd, size, offset)
    flag = getattr(os, "RWF_NOWAIT", None)
    if flag is None or not hasattr(os, "preadv"):
        # As ``os.preadv`` given a flag this system does not have.
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
    buffer = bytearray(size)
    n = os.preadv(fd, (buffer,), offset, flag)
    del buffer[n:]
    return bytes(buffer)


#: The fields of the follower's ``Line``, in the order of its constructor's arguments.
_LINE_FIELDS = ("text", "offset", "file", "path", "terminated")


def records(
    cls: type[_T],
    texts: list[str],
    offsets: Sequence[int],
    file: Any,
    path: str,
    terminated: bool,
    /,
) -> list[_T]:
    """One ``cls`` (the follower's ``Line``) per text, with the offset at the same index
    (``offsets``: a list, or packed int64 offsets) and the three constants, last first
    (the order a reader pops them in): made in ``texts`` itself, which is returned."""
    if getattr(cls, "__match_args__", None) != _LINE_FIELDS:
        raise TypeError("records: the Line type expected")
    if len(offsets) < len(texts):
        raise ValueError("records: fewer offsets than texts")
    built = [
        cls(text, offset, file, path, terminated)  # type: ignore[call-arg]
        for text, offset in zip(texts, offsets, strict=False)
    ]
    built.reverse()
    made: list[_T] = texts  # type: ignore[assignment]
    made[:] = built
    return made
