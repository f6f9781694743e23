"""Reads the page cache holds are done in the event loop's thread (``preadv`` with
``RWF_NOWAIT``: a copy from memory, never a wait for storage); the others, and all reads
where the file system cannot tell, in a worker thread.  The lines are the same either
way, the follower stays a cancellation point at each read and lets other tasks run at
least once per ``ReadPolicy.read_size`` bytes it reads.

These tests are about files on storage: where pytest's temporary directory is on tmpfs
(read in the event loop whatever the page cache says, apps/follow/test_reading_memory_fs.py),
its files are taken for files on storage (``in_memory=False``), so the tests hold on any
machine.  They fake ``os.preadv`` to see each read done in the loop; the accelerator's
read-ahead thread reads with its own ``preadv2``, so it is off here (it has its own
tests: apps/follow/test_reading_ahead.py)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from _follow_reads import check_turns_and_cancellation, numbered, read_all

from utf8stream import follow
from utf8stream.follower import ReadPolicy

pytestmark = pytest.mark.anyio


def on_storage(**sizes: int) -> ReadPolicy:
    """Reads as of a file on storage, with no read-ahead, and these sizes."""
    return ReadPolicy(in_memory=False, read_ahead=False, **sizes)


def fake_preadv(
    monkeypatch: pytest.MonkeyPatch, answer: Callable[[int, Any, int], int]
) -> list[int]:
    """``os.preadv`` answering with ``answer(fd, buffer, offset)`` (and
    ``os.RWF_NOWAIT``, where the platform has none); the offsets asked for."""
    asked: list[int] = []
    if not hasattr(os, "RWF_NOWAIT"):
        monkeypatch.setattr(os, "RWF_NOWAIT", 8, raising=False)
    nowait = os.RWF_NOWAIT

    def preadv(fd: int, buffers: Any, offset: int, flags: int = 0) -> int:
        assert flags == nowait
        asked.append(offset)
        (buffer,) = buffers
        return answer(fd, buffer, offset)

    monkeypatch.setattr(os, "preadv", preadv, raising=False)
    return asked


def from_memory(fd: int, buffer: Any, offset: int) -> int:
    data = os.pread(fd, len(buffer), offset)
    buffer[: len(data)] = data
    return len(data)


async def test_reads_the_page_cache_holds_take_no_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_reads: list[int]
) -> None:
    data = numbered(3000)
    path = tmp_path / "app.log"
    path.write_bytes(data)
    asked = fake_preadv(monkeypatch, from_memory)
    reading = on_storage(read_size=4096, cached_read_size=1000)
    assert await read_all(path, reading) == data.decode().splitlines()
    # Each read at most cached_read_size bytes, from where the last one ended (less the
    # anchor read again); the read at the end (no bytes but the anchor: the file's size
    # says it is the end, not bytes the page cache lacks) goes to no thread either.
    assert len(asked) >= len(data) // 1000
    assert thread_reads == []


async def test_a_quiet_live_file_is_looked_at_with_no_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_reads: list[int]
) -> None:
    """At the end of a live file, a look finds the end (a short read, the size where it
    ended): no worker thread for that; what is appended next is read from the page
    cache too."""
    data = numbered(200)
    path = tmp_path / "app.log"
    path.write_bytes(data)
    asked = fake_preadv(monkeypatch, from_memory)
    options: dict[str, Any] = {"poll_interval": 0.01, "reading": on_storage()}
    async with follow(path, start="beginning", **options) as lines:
        first = [(await lines.__anext__()).text for _ in range(200)]
        with anyio.move_on_after(0.2):
            await lines.__anext__()  # nothing comes: it reads at the end, then waits
        with path.open("ab") as f:
            f.write(b"appended\n")
        appended = await lines.__anext__()
    assert first == data.decode().splitlines()
    assert appended.text == "appended"
    assert len(asked) >= 3  # the file, the look at its end, the appended line
    assert thread_reads == []


async def test_a_short_cached_read_that_is_not_the_end_goes_to_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_reads: list[int]
) -> None:
    """Fewer bytes than asked for and the file goes on past them (the page cache lacks
    the rest?): a thread reads them, so no line is cut short."""
    data = numbered(3000)
    path = tmp_path / "app.log"
    path.write_bytes(data)
    asked = fake_preadv(monkeypatch, lambda fd, buffer, offset: 0)  # nothing cached
    assert await read_all(path, on_storage(read_size=4096)) == data.decode().splitlines()
    assert len(thread_reads) == len(asked) >= len(data) // 4096


async def test_a_read_that_would_wait_goes_to_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_reads: list[int]
) -> None:
    data = numbered(3000)
    path = tmp_path / "app.log"
    path.write_bytes(data)
    calls = 0

    def half_cached(fd: int, buffer: Any, offset: int) -> int:
        nonlocal calls
        calls += 1
        if calls % 2:
            raise BlockingIOError(errno.EAGAIN, "would wait")
        return from_memory(fd, buffer, offset)

    fake_preadv(monkeypatch, half_cached)
    assert await read_all(path, on_storage(read_size=4096)) == data.decode().splitlines()
    assert calls > 2 and len(thread_reads) >= calls // 2


async def test_a_short_cached_read_goes_to_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_reads: list[int]
) -> None:
    """Fewer bytes than the anchor read again (the page cache holds the first page
    only?): they do not tell whether the file was rewritten, so a thread reads."""
    data = numbered(200)
    path = tmp_path / "app.log"
    path.write_bytes(data)
    options: dict[str, Any] = {"poll_interval": 0.01, "reading": on_storage()}
    async with follow(path, start="beginning", **options) as lines:
        first = [await lines.__anext__() for _ in range(200)]
        fake_preadv(monkeypatch, lambda fd, buffer, offset: from_memory(fd, buffer[:3], offset))
        with path.open("ab") as f:
            f.write(b"appended\n")
        appended = await lines.__anext__()
    assert [line.text for line in first] == data.decode().splitlines()
    assert appended.text == "appended"
    assert thread_reads  # the 3 bytes were not taken: a thread read the rest


async def test_a_file_system_that_cannot_tell_is_read_in_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_reads: list[int]
) -> None:
    data = numbered(3000)
    path = tmp_path / "app.log"
    path.write_bytes(data)

    def unsupported(fd: int, buffer: Any, offset: int) -> int:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    asked = fake_preadv(monkeypatch, unsupported)
    assert await read_all(path, on_storage(read_size=4096)) == data.decode().splitlines()
    assert len(asked) == 1  # asked once for the file, never again
    assert len(thread_reads) > len(data) // 4096


async def test_another_error_of_a_cached_read_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(numbered(10))

    def broken(fd: int, buffer: Any, offset: int) -> int:
        raise OSError(errno.EIO, "Input/output error")

    fake_preadv(monkeypatch, broken)
    with pytest.raises(OSError, match="Input/output error"):
        await read_all(path, on_storage())


async def test_other_tasks_run_while_cached_reads_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads that never wait still give the event loop a turn once per ``read_size``
    bytes (as a thread per read did), and a cancellation stops the reader at a read."""
    data = numbered(4000)  # about 190 KiB
    path = tmp_path / "app.log"
    path.write_bytes(data)
    fake_preadv(monkeypatch, from_memory)
    await check_turns_and_cancellation(
        path, data, on_storage(read_size=2048, cached_read_size=512)
    )


async def test_the_real_page_cache(tmp_path: Path, thread_reads: list[int]) -> None:
    """No fake: where the file system tells (a local disk's, on Linux), a file just
    written is read with no worker thread, the read at its end included."""
    data = numbered(40_000)  # about 1.8 MiB: more than one read of each kind
    path = tmp_path / "app.log"
    path.write_bytes(data)
    reading = on_storage()
    assert await read_all(path, reading) == data.decode().splitlines()
    tells = hasattr(os, "preadv") and hasattr(os, "RWF_NOWAIT")
    if tells:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT)
        except OSError as exc:
            # What a file system that cannot tell says (tmpfs, many network ones).
            assert exc.errno in {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS}
            tells = False
        finally:
            os.close(fd)
    if tells:
        assert thread_reads == []
    else:
        assert len(thread_reads) >= len(data) // reading.read_size
