"""Reading a regular file ahead: the next read, at an explicit offset, done in a thread of
its own while the caller works on the last one.  One implementation, two users: the
follower (``follow/_reading.py``), which hands out the lines of one read meanwhile, and
the file transcoder (``files/streaming.py``), which converts one chunk meanwhile.

``ReadAhead`` is the accelerator's (``_apps_speedups``: a pthread that touches no
Python object) or its twin's (``_apps_native``: a Python thread), as
``apps_implementation()`` chooses; the two behave alike (``tests/apps/test_readahead.py``
runs both).  The contract:

- ``ReadAhead(fd)`` reads through a duplicate of ``fd`` (the caller may close its own
  at any time) with ``pread``: the file position the caller sees never moves.  A bad
  ``fd`` is an ``OSError``.
- ``start(offset, size, nowait) -> bool`` asks for one read (``nowait``: with
  ``RWF_NOWAIT``, so it never waits for storage; where the system has no such flag the
  read fails with ``EOPNOTSUPP``, as ``os.preadv`` would).  One read at a time: a read
  started before and not taken is waited for and dropped.  False when nothing will be
  read ahead: the file is not a regular one (a pipe's read could wait for ever, and
  ``close`` with it), the object is closed, or this is a forked child of the process
  that started the thread.
- ``take(offset, size) -> bytes | None``: the bytes of the read started at that offset
  and size, exactly those ``os.pread(fd, size, offset)`` gave when it ran (waiting for
  it if need be, without the GIL); its ``OSError`` raised; None if no such read was
  started (the caller reads itself).  The bytes object handed out is the one the read
  filled: no copy after the kernel's.
- ``close()`` stops the thread after its current read and closes the duplicate (also
  done when the object is freed); ``ReadAhead.threads()`` counts the threads running.
- Memory: the one read in flight, ``size`` bytes.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any, Protocol

from ._apps_accel import implementation as apps_implementation

__all__ = ["Ahead", "chunks", "read_ahead", "threads"]


class Ahead(Protocol):
    """What ``read_ahead`` returns (see the module's docstring)."""

    def start(self, offset: int, size: int, nowait: bool, /) -> bool: ...
    def take(self, offset: int, size: int, /) -> bytes | None: ...
    def close(self) -> None: ...


def read_ahead(fd: int) -> Ahead:
    """A ``ReadAhead`` of the implementation in use, reading ``fd``."""
    made: Ahead = apps_implementation().ReadAhead(fd)
    return made


def threads() -> int:
    """The read-ahead threads of the implementation in use running in this process."""
    count: int = apps_implementation().ReadAhead.threads()
    return count


def chunks(fd: int, offset: int, size: int) -> Generator[bytes, None, None] | None:
    """The bytes of the regular file open as ``fd`` from ``offset`` to its end, ``size``
    at a time (the last shorter, or none if it ends at ``offset``), each read started as
    the one before is handed out; None if the file cannot be read ahead (not a regular
    file: read it in turn).  Close the generator to stop the thread early."""
    ahead = read_ahead(fd)
    if not ahead.start(offset, size, False):
        ahead.close()
        return None
    return _chunks(ahead, fd, offset, size)


def _chunks(ahead: Any, fd: int, offset: int, size: int) -> Generator[bytes, None, None]:
    try:
        while True:
            data = ahead.take(offset, size)
            if data is None:  # not started: closed under us, or a forked child
                data = os.pread(fd, size, offset)
            if not data:
                return
            offset += len(data)
            ahead.start(offset, size, False)
            yield data
    finally:
        ahead.close()
