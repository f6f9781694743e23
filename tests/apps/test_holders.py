"""Whether some process holds a file open for writing (``apps/_holders.py``): what keeps
the follower on a renamed log while its writer has not reopened the path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from _helpers import needs_proc_fdinfo

from utf8stream.apps._holders import held_for_writing

#: A child that opens its argument for appending, says so, and holds it until stdin ends.
HOLD = "import sys; f = open(sys.argv[1], 'ab'); print(1, flush=True); sys.stdin.read()"


@needs_proc_fdinfo
def test_a_writer_in_this_process_or_another_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"x\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert not held_for_writing(fd)  # this read-only descriptor is not a writer
        with open(path, "ab") as writer:
            assert held_for_writing(fd)
            writer.write(b"y\n")
        assert not held_for_writing(fd)
        with open(path, "r+b"):  # read and write
            assert held_for_writing(fd)
        child = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            assert child.stdout is not None and child.stdout.readline() == b"1\n"
            assert held_for_writing(fd)
        finally:
            child.communicate(b"")
        assert not held_for_writing(fd)
        # Another file open for writing is not this one.
        with open(tmp_path / "other.log", "ab"):
            assert not held_for_writing(fd)
    finally:
        os.close(fd)


def _fake_proc(root: Path, entries: dict[str, dict[str, str]]) -> None:
    for pid, fds in entries.items():
        (root / pid / "fdinfo").mkdir(parents=True)
        for fd, text in fds.items():
            (root / pid / "fdinfo" / fd).write_text(text)


def test_read_from_fdinfo_alone(tmp_path: Path) -> None:
    """Flags (octal), mount and inode must all match; a kernel without ``ino`` lines,
    an unreadable entry or a process gone cannot say yes."""
    mine = "pos:\t0\nflags:\t0100000\nmnt_id:\t24\nino:\t77\n"
    _fake_proc(
        tmp_path,
        {
            "self": {"3": mine},
            "10": {"0": mine, "1": "pos:\t0\nflags:\t0102001\nmnt_id:\t25\nino:\t77\n"},
            "11": {"4": "pos:\t0\nflags:\t02\nmnt_id:\t24\nino:\t78\n"},
        },
    )
    assert not held_for_writing(3, str(tmp_path))  # another mount, another inode
    _fake_proc(tmp_path, {"12": {"5": "pos:\t0\nflags:\t0102001\nmnt_id:\t24\nino:\t77\n"}})
    assert held_for_writing(3, str(tmp_path))  # O_WRONLY | O_APPEND | O_LARGEFILE
    old_kernel = tmp_path / "old"
    _fake_proc(old_kernel, {"self": {"3": "pos:\t0\nflags:\t0100000\nmnt_id:\t24\n"}})
    assert not held_for_writing(3, str(old_kernel))
    assert not held_for_writing(3, str(tmp_path / "missing"))
