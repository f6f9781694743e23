"""The follower's read-ahead: while the lines of one read are handed out, the next read
is done in a thread of its own (the accelerator's ``ReadAhead``), so the copy from the
page cache is off the event loop's path.  A read taken from it gives exactly the bytes a
read done then would give (the file's bytes do not change once written; a file
truncated since is read again), so the follower's lines, checkpoints and notices are the
same with it and without it."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _helpers import needs_c

from utf8stream import FollowCheckpoint, follow
from utf8stream.apps import _follow_accel
from utf8stream.apps import _follow_native as _native
from utf8stream.apps.follow import _cutting
from utf8stream.apps.follow._reading import in_memory
from utf8stream.core._accel import built_accelerator, use_accelerator
from utf8stream.follower import ReadPolicy

pytestmark = pytest.mark.anyio


def read_ahead_type() -> Any:
    with use_accelerator(True):
        built = _follow_accel.implementation()
    assert built is not _native
    return built.ReadAhead


def numbered(count: int) -> bytes:
    """Lines of varied length, some with characters beyond ASCII."""
    return b"".join(
        f"line {i:06d} {'é' * (i % 5)}{'x' * (i % 97)}\n".encode() for i in range(count)
    )


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 40)  # 10,240 bytes
    return path


@pytest.fixture
def fd(data_file: Path) -> Iterator[int]:
    """``data_file`` open for reading."""
    descriptor = os.open(data_file, os.O_RDONLY)
    yield descriptor
    os.close(descriptor)


@needs_c
@pytest.mark.parametrize(
    ("offset", "size"),
    [(0, 100), (0, 10_240), (5, 4096), (10_000, 1000), (10_240, 10), (20_000, 5), (7, 0)],
)
def test_take_gives_what_pread_gives(fd: int, offset: int, size: int) -> None:
    ahead = read_ahead_type()(fd)
    assert ahead.take(offset, size) is None  # nothing started
    assert ahead.start(offset, size, False) is True
    assert ahead.take(offset, size) == os.pread(fd, size, offset)
    assert ahead.take(offset, size) is None  # taken once
    ahead.close()


@needs_c
def test_only_the_read_started_is_taken(fd: int) -> None:
    ahead = read_ahead_type()(fd)
    ahead.start(100, 50, False)
    assert ahead.take(101, 50) is None  # another offset
    assert ahead.take(100, 49) is None  # another size
    assert ahead.take(100, 50) == os.pread(fd, 50, 100)  # still there
    ahead.start(0, 10, False)
    ahead.start(300, 10, False)  # replaces the one not taken
    assert ahead.take(0, 10) is None
    assert ahead.take(300, 10) == os.pread(fd, 10, 300)
    ahead.close()


@needs_c
def test_it_reads_through_its_own_descriptor(data_file: Path) -> None:
    fd = os.open(data_file, os.O_RDONLY)
    ahead = read_ahead_type()(fd)
    expected = os.pread(fd, 1000, 2000)
    os.close(fd)  # the caller's: a rotation closed it, say
    ahead.start(2000, 1000, False)
    assert ahead.take(2000, 1000) == expected
    ahead.close()


@needs_c
@pytest.mark.skipif(not hasattr(os, "RWF_NOWAIT"), reason="no RWF_NOWAIT on this platform")
@pytest.mark.parametrize("where", ["tmp_path", "/dev/shm"])
def test_nowait_reads_as_preadv_with_rwf_nowait(tmp_path: Path, where: str) -> None:
    directory = tmp_path if where == "tmp_path" else Path(where)
    if not directory.is_dir():
        pytest.fail(f"{where} is not a directory on this Linux machine")
    path = directory / f"nowait-{os.getpid()}.bin"
    path.write_bytes(numbered(500))
    fd = os.open(path, os.O_RDONLY)
    try:
        buffer = bytearray(4096)
        try:
            n = os.preadv(fd, [buffer], 100, os.RWF_NOWAIT)
            expected: bytes | int = bytes(buffer[:n])
        except OSError as exc:
            expected = exc.errno or 0
        ahead = read_ahead_type()(fd)
        ahead.start(100, 4096, True)
        try:
            got: bytes | int = ahead.take(100, 4096)
        except OSError as exc:
            got = exc.errno or 0
        ahead.close()
        assert got == expected
    finally:
        os.close(fd)
        path.unlink()


@needs_c
def test_closed_it_reads_nothing(fd: int) -> None:
    ahead = read_ahead_type()(fd)
    ahead.start(0, 100, False)
    ahead.close()
    assert ahead.take(0, 100) is None
    assert ahead.start(0, 100, False) is False
    ahead.close()  # twice: nothing happens
    other = read_ahead_type()(fd)
    other.start(0, 100, False)
    del other  # freed with a read asked for: the thread is stopped first


@needs_c
def test_bad_arguments_are_refused(fd: int) -> None:
    with pytest.raises(OSError) as caught:
        read_ahead_type()(-1)
    assert caught.value.errno == errno.EBADF
    ahead = read_ahead_type()(fd)
    with pytest.raises(ValueError):
        ahead.start(-1, 10, False)
    with pytest.raises(ValueError):
        ahead.start(0, -1, False)
    ahead.close()


@needs_c
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_finds_nothing_read_ahead(fd: int) -> None:
    """The child of a fork has no read-ahead thread: what its parent asked for is not
    waited for there (it would never come)."""
    ahead = read_ahead_type()(fd)
    ahead.start(0, 100, False)
    ahead.take(0, 100)
    ahead.start(100, 100, False)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            answer = b"none" if ahead.take(100, 100) is None else b"data"
            answer += b" false" if ahead.start(0, 10, False) is False else b" true"
            ahead.close()
            os.write(w, answer)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    assert answer == b"none false"
    assert ahead.take(100, 100) == os.pread(fd, 100, 100)  # the parent's is there
    ahead.close()


def test_without_the_accelerator_nothing_is_read_ahead(fd: int) -> None:
    ahead = _native.ReadAhead(fd)
    assert ahead.start(0, 100, False) is False
    assert ahead.take(0, 100) is None
    ahead.close()
    with pytest.raises(ValueError):
        ahead.start(-1, 100, False)


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
    thread, counted as they are read: what read-ahead takes was read by its own thread
    (the accelerator's ``preadv2``), so it is not counted."""
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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A file of many reads (on tmpfs, read as a file in memory; elsewhere through the
    page cache), followed with read-ahead and without: the same lines at the same
    offsets, the same checkpoint; and with the accelerator the reads were taken from
    it."""
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
    if built_accelerator() is not None and (where != "tmp_path" or in_loop):
        # The first read and the one after each taken ahead that came back full are
        # done in the loop at most: the others were taken from the read-ahead.
        assert in_loop_with <= 3 * reading.cached_read_size
        assert in_loop_without >= len(data)
    else:
        assert in_loop_with == in_loop_without  # nothing was read ahead


@needs_c
@pytest.mark.parametrize("last_read", ["short", "full"])
async def test_no_thread_is_kept_once_caught_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, last_read: str
) -> None:
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


@needs_c
def test_threads_counts_the_running_ones(fd: int) -> None:
    kind = read_ahead_type()
    before = kind.threads()
    first, second = kind(fd), kind(fd)
    assert kind.threads() == before  # a thread starts with the first read
    first.start(0, 10, False)
    second.start(0, 10, False)
    assert kind.threads() == before + 2
    first.close()
    assert kind.threads() == before + 1
    del second
    assert kind.threads() == before


@needs_c
async def test_at_most_so_many_files_are_read_ahead_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Followers catching up together (as follow_many at its start) share the limit:
    beyond it a file is read as without read-ahead, with the same lines."""
    reading = ReadPolicy(read_ahead_threads=1, in_memory=True)  # reads in the loop
    kind = read_ahead_type()
    assert kind.threads() == 0
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
                    most = max(most, kind.threads())
    expected = data.decode().split("\n")[:-1]
    assert got == [expected, expected]
    assert most == 1
    assert kind.threads() == 0


@needs_c
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_its_thread_blocks_signals(fd: int) -> None:
    """Ctrl-C and SIGTERM go to the interpreter's threads, never to the read-ahead's."""
    import signal

    before = set(os.listdir("/proc/self/task"))
    ahead = read_ahead_type()(fd)
    ahead.start(0, 10, False)
    (tid,) = set(os.listdir("/proc/self/task")) - before
    status = Path(f"/proc/self/task/{tid}/status").read_text()
    blocked = int(next(x for x in status.splitlines() if x.startswith("SigBlk:")).split()[1], 16)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        assert blocked & (1 << (number - 1))
    ahead.close()
