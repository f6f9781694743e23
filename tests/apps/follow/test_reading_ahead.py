"""The follower's read-ahead: while the lines of one read are handed out, the next read
is done in a thread of its own (``apps/_readahead.py``, the accelerator's or its twin's:
each test runs on both), so the copy from the page cache is off the event loop's path.
A read taken from it gives exactly the bytes a read done then would give (the file's
bytes do not change once written; a file truncated since is read again), so the
follower's lines, checkpoints and notices are the same with it and without it."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from utf8stream import FollowCheckpoint, follow
from utf8stream.apps import _readahead
from utf8stream.apps.follow import _cutting
from utf8stream.apps.follow._reading import in_memory
from utf8stream.follower import ReadPolicy

pytestmark = pytest.mark.anyio


def numbered(count: int) -> bytes:
    """Lines of varied length, some with characters beyond ASCII."""
    return b"".join(
        f"line {i:06d} {'é' * (i % 5)}{'x' * (i % 97)}\n".encode() for i in range(count)
    )


def reads_without_waiting(path: Path) -> bool:
    """Whether the follower reads ``path`` in the event loop (its file system keeps its
    files in memory, or ``RWF_NOWAIT`` works on it), so that it reads ahead."""
    if in_memory(os.stat(path)):
        return True
    if not hasattr(os, "preadv") or not hasattr(os, "RWF_NOWAIT"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT)
    except OSError as exc:
        # What a file system that cannot tell says (tmpfs, many network ones).
        return exc.errno not in {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS}
    finally:
        os.close(fd)
    return True


async def follow_whole(
    path: Path, reading: ReadPolicy
) -> tuple[list[tuple[str, int]], FollowCheckpoint]:
    async with follow(path, start="beginning", until_eof=True, reading=reading) as lines:
        got = [(line.text, line.offset) async for line in lines]
        return got, lines.checkpoint()


def counting_loop_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes read by ``os.pread`` and ``os.preadv`` in this (the event loop's)
    thread, counted as they are read: what read-ahead takes was read by its own thread,
    so it is not counted."""
    loop = threading.get_ident()
    counted = [0]
    pread, preadv = os.pread, getattr(os, "preadv", None)

    def counting_pread(fd: int, size: int, offset: int) -> bytes:
        found = pread(fd, size, offset)
        if threading.get_ident() == loop:
            counted[0] += len(found)
        return found

    def counting_preadv(fd: int, buffers: Any, offset: int, *flags: int) -> int:
        assert preadv is not None
        n: int = preadv(fd, buffers, offset, *flags)
        if threading.get_ident() == loop:
            counted[0] += n
        return n

    monkeypatch.setattr(os, "pread", counting_pread)
    if preadv is not None:
        monkeypatch.setattr(os, "preadv", counting_preadv)
    return counted


@pytest.mark.parametrize("where", ["tmp_path", "/dev/shm"])
async def test_the_lines_are_the_same_with_and_without_it(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A file of many reads (on tmpfs, read as a file in memory; elsewhere through the
    page cache), followed with read-ahead and without: the same lines at the same
    offsets, the same checkpoint; and where the follower reads in the loop, the reads
    were taken from the read-ahead."""
    directory = tmp_path if where == "tmp_path" else Path(where)
    if not directory.is_dir():
        pytest.fail(f"{where} is not a directory on this Linux machine")
    path = directory / f"ahead-{os.getpid()}.log"
    data = numbered(40_000)  # some 3.7 MB: many reads of CACHED_READ_SIZE
    path.write_bytes(data)
    in_loop = reads_without_waiting(path)
    reading = ReadPolicy()
    counted = counting_loop_reads(monkeypatch)
    try:
        with_it = await follow_whole(path, reading)
        in_loop_with = counted[0]
        counted[0] = 0
        without = await follow_whole(path, ReadPolicy(read_ahead=False))
        in_loop_without = counted[0]
    finally:
        path.unlink()
    expected = []
    offset = 0
    for line in data.split(b"\n")[:-1]:
        expected.append((line.decode(), offset))
        offset += len(line) + 1
    assert with_it[0] == expected
    assert with_it == without
    if where != "tmp_path" or in_loop:
        # The first read and the one after each taken ahead that came back full are
        # done in the loop at most: the others were taken from the read-ahead.
        assert in_loop_with <= 3 * reading.cached_read_size
        assert in_loop_without >= len(data)
    else:
        assert in_loop_with == in_loop_without  # nothing was read ahead


@pytest.mark.parametrize("last_read", ["short", "full"])
async def test_no_thread_is_kept_once_caught_up(kind: str, tmp_path: Path, last_read: str) -> None:
    """Caught up, the follower stops its read-ahead thread: after a short read, and
    after a full one that ended where the file does (the next read has nothing new)."""
    size = 256  # each read: the anchor again and 256 - ANCHOR_BYTES new bytes
    reading = ReadPolicy(cached_read_size=size, in_memory=True)  # reads in the loop
    step = size - min(_cutting.ANCHOR_BYTES, size)
    assert step > 0
    total = size + 40 * step + (0 if last_read == "full" else step // 2)
    body = numbered(20_000)[: total - 1]
    body = body[: body.rfind(b"\n") + 1]
    data = body + b"z" * (total - 1 - len(body)) + b"\n"
    assert len(data) == total
    count = data.count(b"\n")
    path = tmp_path / "live.log"
    path.write_bytes(data)
    async with follow(path, start="beginning", poll_interval=0.01, reading=reading) as lines:
        got = 0
        with anyio.fail_after(10):
            async for _line in lines:
                got += 1
                if got == count:
                    break
        with anyio.move_on_after(0.2):  # nothing more: it reads to the end and waits
            await lines.__anext__()
        assert lines.statistics().lines == count
        f = lines._reader.file
        assert f is not None
        assert f.readahead is None


async def test_at_most_so_many_files_are_read_ahead_at_once(kind: str, tmp_path: Path) -> None:
    """Followers catching up together (as follow_many at its start) share the limit:
    beyond it a file is read as without read-ahead, with the same lines."""
    reading = ReadPolicy(read_ahead_threads=1, in_memory=True)  # reads in the loop
    assert _readahead.threads() == 0
    data = numbered(30_000)
    paths = [tmp_path / "a.log", tmp_path / "b.log"]
    for path in paths:
        path.write_bytes(data)
    most = 0
    got: list[list[str]] = [[], []]
    async with (
        follow(paths[0], start="beginning", until_eof=True, reading=reading) as a,
        follow(paths[1], start="beginning", until_eof=True, reading=reading) as b,
    ):
        followers = [a, b]
        done = [False, False]
        while not all(done):
            for k, follower in enumerate(followers):
                if done[k]:
                    continue
                for _ in range(500):  # by turns, each a few reads' worth of lines
                    try:
                        got[k].append((await follower.__anext__()).text)
                    except StopAsyncIteration:
                        done[k] = True
                        break
                    most = max(most, _readahead.threads())
    expected = data.decode().split("\n")[:-1]
    assert got == [expected, expected]
    assert most == 1
    assert _readahead.threads() == 0
