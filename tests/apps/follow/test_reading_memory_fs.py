"""A file on a file system held in memory (tmpfs, ramfs: Linux's mount table says) is
read in the event loop's thread, though tmpfs refuses ``RWF_NOWAIT``: a read there is a
copy from memory, and a worker thread per read would cost more than the read.  The
lines are the same, and the follower stays a cancellation point at each read."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from _follow_reads import check_turns_and_cancellation, numbered

from utf8stream import LineTooLong, follow
from utf8stream.apps.follow._reading import in_memory
from utf8stream.follower import ReadPolicy

pytestmark = pytest.mark.anyio


def mount_table(path: Path, st: os.stat_result, kind: str) -> Path:
    """A ``/proc/self/mountinfo`` that mounts ``st``'s device as ``kind``."""
    device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    table = path / "mountinfo"
    table.write_text(
        "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        f"23 1 {device} / /data rw,relatime shared:7 - {kind} somewhere rw,size=1024k\n"
    )
    return table


@pytest.mark.parametrize(
    ("kind", "expected"), [("tmpfs", True), ("ramfs", True), ("ext4", False), ("nfs", False)]
)
def test_the_mount_table_tells_a_file_system_in_memory(
    tmp_path: Path, kind: str, expected: bool
) -> None:
    st = os.stat(tmp_path)
    assert in_memory(st, str(mount_table(tmp_path, st, kind))) is expected


def test_without_a_mount_table_nothing_is_in_memory(tmp_path: Path) -> None:
    assert in_memory(os.stat(tmp_path), str(tmp_path / "none")) is False
    (tmp_path / "garbled").write_text("23 1\n\n- - -\n")
    assert in_memory(os.stat(tmp_path), str(tmp_path / "garbled")) is False


def test_the_real_mount_table_tells_dev_shm() -> None:
    """By default (``ReadPolicy.in_memory`` None) each file is told from this machine's
    own mount table: /dev/shm is tmpfs on Linux."""
    if not os.path.isdir("/dev/shm"):
        pytest.fail("/dev/shm is not a directory on this Linux machine")
    assert in_memory(os.stat("/dev/shm")) is True
    assert ReadPolicy().in_memory is None


async def test_a_file_in_memory_is_read_with_no_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_reads: list[int]
) -> None:
    reading = ReadPolicy(read_size=4096, cached_read_size=1000, in_memory=True)
    data = numbered(3000)
    path = tmp_path / "app.log"
    path.write_bytes(data)

    def refused(*args: Any) -> int:  # what tmpfs says to RWF_NOWAIT
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "preadv", refused, raising=False)
    async with follow(path, start="beginning", until_eof=True, reading=reading) as lines:
        got = [line.text async for line in lines]
    assert got == data.decode().splitlines()
    assert thread_reads == []


async def test_reads_in_memory_let_other_tasks_run_and_can_be_cancelled(tmp_path: Path) -> None:
    data = numbered(4000)
    path = tmp_path / "app.log"
    path.write_bytes(data)
    reading = ReadPolicy(read_size=2048, cached_read_size=512, in_memory=True)
    await check_turns_and_cancellation(path, data, reading)


async def test_a_log_of_cr_line_ends_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines ended by \\r with a rare \\n among them: a long read ends at its last line
    end, \\r or \\n, so what follows is read again only from there (a read ended at its
    last \\n read up to half of each read twice)."""
    reading = ReadPolicy(read_size=4096, cached_read_size=4096, feed_size=1024, in_memory=True)
    # A \n about every 2100 bytes: with 4096-byte reads, each read held one, about
    # halfway, and the rest was read again.
    data = b"".join(
        b"line %05d %s%s" % (k, b"x" * (k % 40), b"\n" if k % 70 == 69 else b"\r")
        for k in range(3000)
    )
    path = tmp_path / "app.log"
    path.write_bytes(data)
    read = 0
    pread = os.pread

    def counting(fd: int, size: int, offset: int) -> bytes:
        nonlocal read
        found = pread(fd, size, offset)
        read += len(found)
        return found

    monkeypatch.setattr(os, "pread", counting)
    async with follow(path, start="beginning", until_eof=True, reading=reading) as lines:
        texts = [line.text async for line in lines]
    assert texts == data.decode().splitlines()
    # Each read from the last line end (at most a line of 60 bytes back), with its
    # anchor of 32 bytes, and the file's head fingerprinted: a few per cent more than the
    # file (reads ended at the last \n only would read most of it twice).
    assert read <= len(data) * 1.1


async def test_an_overlong_line_ended_by_cr_at_a_slice_end_raises_past_its_cr(
    tmp_path: Path, implementation: str
) -> None:
    """A long read is fed in slices, and with universal newlines a slice may end at a
    \\r.  A slice that ended just past it would leave the \\r held by the engine (it may
    start a \\r\\n), so an overlong line ended by it would raise ``LineTooLong`` with the
    checkpoint before its \\r, and a follower resumed from there would give an empty line
    that the file does not hold.  Both implementations: past the \\r, and no empty line."""
    data = b"x" * 30 + b"\r\n" + b"x\r" + b"x" * 200 + b"\r" + b"y" * 70_000 + b"\r" + b"z\n"
    path = tmp_path / "app.log"
    path.write_bytes(data)
    options: dict[str, Any] = {"until_eof": True, "max_line_bytes": 100}
    async with follow(path, start="beginning", on_overlong="raise", **options) as lines:
        texts = []
        with pytest.raises(LineTooLong):
            async for line in lines:
                texts.append(line.text)
        checkpoint = lines.checkpoint()
    assert texts == ["x" * 30, "x"]
    assert (checkpoint.offset, checkpoint.mid_line) == (235, False)  # past the \r at 234
    async with follow(path, checkpoint=checkpoint, on_overlong="truncate", **options) as lines:
        rest = [(line.text, line.offset) async for line in lines]
    assert rest == [("y" * 100, 235), ("z", 70_236)]


async def test_a_split_piece_that_is_one_cut_off_sequence_resumes_without_loss(
    tmp_path: Path, implementation: str
) -> None:
    """Each E2 82 is one malformed unit that the next byte ends; the first piece of the
    overlong line is the first unit alone, and a follower resumed after it gives the
    rest: three U+FFFD in all, whether it ran through or stopped there."""
    path = tmp_path / "app.log"
    path.write_bytes(b"\xe2\x82" * 3 + b"\nok\n")
    options: dict[str, Any] = {"until_eof": True, "max_line_bytes": 4, "on_overlong": "split"}
    async with follow(path, start="beginning", **options) as lines:
        whole = [(line.text, line.offset) async for line in lines]
    assert whole == [("\ufffd", 0), ("\ufffd\ufffd", 2), ("ok", 7)]
    async with follow(path, start="beginning", **options) as lines:
        first = await lines.__anext__()
        checkpoint = lines.checkpoint()
    assert (first.text, checkpoint.offset, checkpoint.mid_line) == ("\ufffd", 2, True)
    async with follow(path, checkpoint=checkpoint, **options) as lines:
        rest = [(line.text, line.offset) async for line in lines]
    assert rest == whole[1:]
