"""``utf8stream tail``'s output as a regular file: how far it was written when a checkpoint
was saved (``OutputMark``), and the bytes a killed run wrote past that, matched against
what the restarted run writes again so that they are not written twice.

Theory of operation
-------------------
Lines go out in one write and the checkpoint is saved right after it; a SIGKILL between
the two leaves a checkpoint from before the write, and the restart produces those lines
again.  Into a pipe nothing can tell: the bytes are gone to the reader.  Into a regular
file they are still there: each save records the file (device, inode) and its size just
after the write the checkpoint covers, so on a restart whatever lies past that size was
written after the save.  The restart reads those bytes (``pread`` at the recorded size)
and, as it produces its output again from the checkpoint, writes only what goes beyond
them, checking that what it skips is byte for byte what it would have written.  A line the
kill cut in half is so completed, not repeated.  Bytes that differ (another writer
appended, or another file holds that inode) end the skipping: from the line where they
differ on, everything is written (at least once), and a notice says so.  The restart
must give the lines in the order the killed run wrote them: one file's always are; several
files followed together take turns, and a restart can start them in another order (then
the bytes differ, and that write's lines come twice).
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterable
from typing import BinaryIO

from ..follow._checkpoint import OutputMark

__all__ = ["Replay", "appended_file", "mark_of", "replay_for", "resumed_mark"]

#: Past a mark, at most this many bytes are read back: a kill leaves one write's worth
#: (a batch, the line that filled it, a header); more is someone else's.
REPLAY_MAX_BYTES = 1 << 26


def appended_file(out: BinaryIO) -> int | None:
    """The descriptor of ``out`` if it is a regular file written at its end (``>>``, or
    ``>`` once the shell has emptied it), else None: only there do the bytes past a mark
    stay where a restart can read them, and its writes go after them."""
    try:
        fd = out.fileno()
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
            return fd
        return fd if os.lseek(fd, 0, os.SEEK_CUR) == info.st_size else None
    except (OSError, ValueError):  # no descriptor (an embedding program's stream), closed
        return None


def mark_of(fd: int, header: str | None, size: int | None = None) -> OutputMark:
    """The mark of the output file ``fd``: its size now, or ``size``."""
    info = os.fstat(fd)
    return OutputMark(info.st_dev, info.st_ino, info.st_size if size is None else size, header)


class Replay:
    """The bytes past a mark, skipped as this run writes them again.

    ``take`` returns what of each write still has to go out.  ``skipped`` counts the
    bytes matched so far: the output is delivered up to ``mark.size + skipped``.
    """

    def __init__(self, extra: bytes, line_end: bytes) -> None:
        self.extra = extra
        self.line_end = line_end
        self.skipped = 0
        self.done = not extra
        #: Why the bytes past the mark are written after instead of skipped (None: they
        #: are skipped, or there are none).
        self.differs: str | None = None

    def take(self, data: bytes) -> bytes:
        """What of ``data`` goes out: past the bytes already there, or, where they
        differ, everything from the start of the line they differ in."""
        if self.done:
            return data
        rest = self.extra[self.skipped :]
        n = min(len(rest), len(data))
        if data[:n] == rest[:n]:
            self.skipped += n
            self.done = self.skipped == len(self.extra)
            return data[n:]
        same = next(i for i in range(n) if data[i] != rest[i])
        self.done = True
        self.differs = "are not the lines it resumes"
        # The line they differ in starts in ``data`` or in the bytes skipped before it.
        start = data.rfind(self.line_end, 0, same) + 1
        if start == 0:
            matched = self.extra[: self.skipped]
            line = matched[matched.rfind(self.line_end) + 1 :]
        else:
            line = b""
        # What is in the file ends without a line end (a torn line, or not ours): our
        # lines start on a line of their own.
        apart = b"" if self.extra.endswith(self.line_end) else self.line_end
        return apart + line + data[start:]


def resumed_mark(fd: int, marks: Iterable[OutputMark]) -> OutputMark | None:
    """Of the marks a checkpoint holds, the one of the output file ``fd`` that the last
    save recorded, if any.  A store's rows carry the marks of the saves they moved in;
    the file only grows while it is written, so the last save's is the largest."""
    info = os.fstat(fd)
    mine = [m for m in marks if (m.device, m.inode) == (info.st_dev, info.st_ino)]
    return max(mine, key=lambda m: m.size, default=None)


def replay_for(fd: int, mark: OutputMark, line_end: bytes) -> Replay | None:
    """What to skip in ``fd``, the file ``mark`` recorded, past the mark (None if it is
    shorter than recorded: someone emptied it, there is nothing to skip)."""
    info = os.fstat(fd)
    if info.st_size < mark.size:
        return None
    length = info.st_size - mark.size
    if length > REPLAY_MAX_BYTES:
        replay = Replay(b"", line_end)
        replay.differs = "are more than it reads back"
        return replay
    extra = _read_back(fd, info, length, mark.size)
    if extra is None:  # cannot be checked: written again
        replay = Replay(b"", line_end)
        replay.differs = "cannot be read back"
        return replay
    return Replay(extra, line_end)


def _read_back(fd: int, info: os.stat_result, length: int, at: int) -> bytes | None:
    """``length`` bytes of the output file at ``at``.  Output opened for writing only (as
    ``>>`` opens it) is read through another descriptor of the same file (Linux's
    ``/proc/self/fd``); None if it cannot be read."""
    try:
        return os.pread(fd, length, at)
    except OSError:
        pass
    try:
        reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
    except OSError:
        return None
    try:
        again = os.fstat(reader)
        if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino):
            return None
        return os.pread(reader, length, at)
    except OSError:
        return None
    finally:
        os.close(reader)
