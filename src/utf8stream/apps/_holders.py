"""Whether some process still has a file open for writing (Linux, from ``/proc``).

After a rotation by rename (logrotate's ``create``), the writer appends to the renamed
file until it reopens the path, which may be long after the last line it wrote (it
reopens on its ``postrotate`` signal, or at its next write). The follower keeps draining
the renamed file while its writer may still hold it: while a process has it open for
writing and nothing has been written at the path yet.

Each process's open files are read from ``/proc/PID/fdinfo/FD`` (flags, mount id and
inode), never by a ``stat`` of the file itself, which could hang on a network file system.
Processes this user may not inspect are passed over: the answer is True only when a
holder was seen, and False also where it cannot be told (another system, a kernel whose
``fdinfo`` has no ``ino`` line): the follower then keeps only its grace period.
"""

from __future__ import annotations

import os

__all__ = ["held_for_writing"]

_PROC = "/proc"
#: The access mode bits of ``open(2)`` flags: O_WRONLY or O_RDWR mean writing.
_ACCESS = os.O_WRONLY | os.O_RDWR


def _fdinfo(path: str) -> tuple[int, int, int] | None:
    """(flags, mount id, inode) of one ``fdinfo`` file, None if unreadable or incomplete."""
    try:
        with open(path, "rb") as f:
            text = f.read(4096)
    except OSError:  # the descriptor was closed meanwhile, or not ours to read
        return None
    fields: dict[bytes, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(b":")
        if key in (b"flags", b"mnt_id", b"ino"):
            try:
                fields[key] = int(value.strip(), 8 if key == b"flags" else 10)
            except ValueError:
                return None
    if len(fields) != 3:
        return None
    return fields[b"flags"], fields[b"mnt_id"], fields[b"ino"]


def held_for_writing(fd: int, proc: str = _PROC) -> bool:
    """True if some process (this one included) has the file that this process's ``fd``
    is open on open for writing; False if none was seen or it cannot be told.

    Reads every inspectable process's descriptors: a few milliseconds for a few hundred
    processes.  Call it rarely (the follower: once per grace period, only while it
    drains a renamed file) and from a worker thread.
    """
    mine = _fdinfo(os.path.join(proc, "self", "fdinfo", str(fd)))
    if mine is None:
        return False
    _, mount, inode = mine
    try:
        pids = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return False
    for pid in pids:
        directory = os.path.join(proc, pid, "fdinfo")
        try:
            descriptors = os.listdir(directory)
        except OSError:  # gone, or another user's
            continue
        for name in descriptors:
            info = _fdinfo(os.path.join(directory, name))
            if info is not None and info[2] == inode and info[1] == mount and info[0] & _ACCESS:
                return True
    return False
