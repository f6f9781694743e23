"""The read-ahead of the follower and the file transcoder (``apps/_readahead.py``): a read
of a regular file at an explicit offset, done in a thread of its own and taken later,
gives exactly what ``os.pread`` gives; its error is raised to the caller; ``close`` stops
the thread.  Each test runs on the accelerator's ``ReadAhead`` and on its pure-Python
twin, and a differential test runs the same calls on both."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _apps_c import needs_compiled
from _helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream.apps import _readahead
from utf8stream.core._accel import use_accelerator

SIZE = 10_240
DATA = bytes(range(256)) * (SIZE // 256)


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.bin"
    path.write_bytes(DATA)
    return path


@pytest.fixture
def fd(data_file: Path) -> Iterator[int]:
    """``data_file`` open for reading."""
    descriptor = os.open(data_file, os.O_RDONLY)
    yield descriptor
    os.close(descriptor)


@pytest.mark.parametrize(
    ("offset", "size"),
    [(0, 100), (0, SIZE), (5, 4096), (10_000, 1000), (SIZE, 10), (20_000, 5), (7, 0)],
)
def test_take_gives_what_pread_gives(kind: str, fd: int, offset: int, size: int) -> None:
    ahead = _readahead.read_ahead(fd)
    assert ahead.take(offset, size) is None  # nothing started
    assert ahead.start(offset, size, False) is True
    assert ahead.take(offset, size) == DATA[offset : offset + size]
    assert ahead.take(offset, size) is None  # taken once
    ahead.close()


def test_only_the_read_started_is_taken(kind: str, fd: int) -> None:
    ahead = _readahead.read_ahead(fd)
    ahead.start(100, 50, False)
    assert ahead.take(101, 50) is None  # another offset
    assert ahead.take(100, 49) is None  # another size
    assert ahead.take(100, 50) == DATA[100:150]  # still there
    ahead.start(0, 10, False)
    ahead.start(300, 10, False)  # replaces the one not taken
    assert ahead.take(0, 10) is None
    assert ahead.take(300, 10) == DATA[300:310]
    ahead.close()


def test_it_reads_through_its_own_descriptor_at_no_position(kind: str, data_file: Path) -> None:
    fd = os.open(data_file, os.O_RDONLY)
    os.lseek(fd, 123, os.SEEK_SET)
    ahead = _readahead.read_ahead(fd)
    ahead.start(0, 1000, False)
    assert ahead.take(0, 1000) == DATA[:1000]
    assert os.lseek(fd, 0, os.SEEK_CUR) == 123  # the caller's position did not move
    os.close(fd)  # the caller's: a rotation closed it, say
    ahead.start(2000, 1000, False)
    assert ahead.take(2000, 1000) == DATA[2000:3000]
    ahead.close()


@pytest.mark.skipif(not hasattr(os, "RWF_NOWAIT"), reason="no RWF_NOWAIT on this platform")
@pytest.mark.parametrize("where", ["tmp_path", "/dev/shm"])
def test_nowait_reads_as_preadv_with_rwf_nowait(kind: str, tmp_path: Path, where: str) -> None:
    directory = tmp_path if where == "tmp_path" else Path(where)
    if not directory.is_dir():
        pytest.fail(f"{where} is not a directory on this Linux machine")
    path = directory / f"nowait-{os.getpid()}.bin"
    path.write_bytes(DATA)
    fd = os.open(path, os.O_RDONLY)
    try:
        buffer = bytearray(4096)
        try:
            n = os.preadv(fd, [buffer], 100, os.RWF_NOWAIT)
            expected: bytes | int = bytes(buffer[:n])
        except OSError as exc:  # tmpfs cannot tell: EOPNOTSUPP
            expected = exc.errno or 0
        ahead = _readahead.read_ahead(fd)
        ahead.start(100, 4096, True)
        try:
            got: bytes | int | None = ahead.take(100, 4096)
        except OSError as exc:
            got = exc.errno or 0
        ahead.close()
        assert got == expected
    finally:
        os.close(fd)
        path.unlink()


def test_a_failed_read_is_raised_by_take(kind: str, data_file: Path) -> None:
    fd = os.open(data_file, os.O_WRONLY)  # a regular file, but not open for reading
    try:
        ahead = _readahead.read_ahead(fd)
        assert ahead.start(0, 100, False) is True
        with pytest.raises(OSError) as caught:
            ahead.take(0, 100)
        assert caught.value.errno == errno.EBADF
        ahead.start(0, 100, False)  # it goes on: the next read fails alike
        with pytest.raises(OSError):
            ahead.take(0, 100)
        ahead.close()
    finally:
        os.close(fd)


def test_only_a_regular_file_is_read_ahead(kind: str) -> None:
    """A pipe's read could wait for ever (and ``close`` with it): nothing is started."""
    r, w = os.pipe()
    try:
        ahead = _readahead.read_ahead(r)
        assert ahead.start(0, 10, False) is False
        assert ahead.take(0, 10) is None
        ahead.close()
        assert _readahead.chunks(r, 0, 10) is None
        assert _readahead.threads() == 0
    finally:
        os.close(r)
        os.close(w)


def test_closed_it_reads_nothing(kind: str, fd: int) -> None:
    before = _readahead.threads()
    ahead = _readahead.read_ahead(fd)
    ahead.start(0, 100, False)
    ahead.close()
    assert _readahead.threads() == before
    assert ahead.take(0, 100) is None
    assert ahead.start(0, 100, False) is False
    ahead.close()  # twice: nothing happens
    other = _readahead.read_ahead(fd)
    other.start(0, 100, False)
    assert _readahead.threads() == before + 1
    del other  # freed with a read asked for: the thread is stopped first
    assert _readahead.threads() == before


def test_bad_arguments_are_refused(kind: str, fd: int) -> None:
    with pytest.raises(OSError) as caught:
        _readahead.read_ahead(-1)
    assert caught.value.errno == errno.EBADF
    ahead = _readahead.read_ahead(fd)
    with pytest.raises(ValueError):
        ahead.start(-1, 10, False)
    with pytest.raises(ValueError):
        ahead.start(0, -1, False)
    ahead.close()


def test_threads_counts_the_running_ones(kind: str, fd: int) -> None:
    before = _readahead.threads()
    first, second = _readahead.read_ahead(fd), _readahead.read_ahead(fd)
    assert _readahead.threads() == before  # a thread starts with the first read
    first.start(0, 10, False)
    second.start(0, 10, False)
    assert _readahead.threads() == before + 2
    first.close()
    assert _readahead.threads() == before + 1
    del second
    assert _readahead.threads() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_finds_nothing_read_ahead(kind: str, fd: int) -> None:
    """The child of a fork has no read-ahead thread: what its parent asked for is not
    waited for there (it would never come)."""
    ahead = _readahead.read_ahead(fd)
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
    assert ahead.take(100, 100) == DATA[100:200]  # the parent's is there
    ahead.close()


@pytest.mark.parametrize("size", [1, 1000, 4096, SIZE, 3 * SIZE])
@pytest.mark.parametrize("offset", [0, 77, SIZE])
def test_chunks_read_the_file_to_its_end(kind: str, fd: int, offset: int, size: int) -> None:
    found = _readahead.chunks(fd, offset, size)
    assert found is not None
    got = list(found)
    assert b"".join(got) == DATA[offset:]
    assert all(len(chunk) == size for chunk in got[:-1])
    assert _readahead.threads() == 0


def test_chunks_closed_early_stop_the_thread(kind: str, fd: int) -> None:
    found = _readahead.chunks(fd, 0, 100)
    assert found is not None
    assert next(found) == DATA[:100]
    assert _readahead.threads() == 1  # the next read is under way
    found.close()
    assert _readahead.threads() == 0


@needs_compiled
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_the_accelerators_thread_blocks_signals(fd: int) -> None:
    """Ctrl-C and SIGTERM go to the interpreter's threads, never to the read-ahead's
    (a Python thread's signals are handled by the main thread's interpreter anyway)."""
    import signal

    before = set(os.listdir("/proc/self/task"))
    with use_accelerator(True):
        ahead = _readahead.read_ahead(fd)
    ahead.start(0, 10, False)
    (tid,) = set(os.listdir("/proc/self/task")) - before
    status = Path(f"/proc/self/task/{tid}/status").read_text()
    blocked = int(next(x for x in status.splitlines() if x.startswith("SigBlk:")).split()[1], 16)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        assert blocked & (1 << (number - 1))
    ahead.close()


#: One call: ("start", offset, size) or ("take", offset, size).
calls = st.lists(
    st.tuples(
        st.sampled_from(["start", "take"]),
        st.integers(0, SIZE + 100),
        st.sampled_from([0, 1, 64, 1000, 4096, SIZE]),
    ),
    max_size=12,
)


def replay(fd: int, script: list[tuple[str, int, int]]) -> list[Any]:
    ahead = _readahead.read_ahead(fd)
    try:
        return [
            ahead.start(offset, size, False) if call == "start" else ahead.take(offset, size)
            for call, offset, size in script
        ]
    finally:
        ahead.close()


@needs_compiled
@settings(max_examples=examples(60), deadline=None)
@given(script=calls)
def test_the_accelerator_and_its_twin_answer_alike(script: list[tuple[str, int, int]]) -> None:
    """The same calls on both implementations: the same answers, and each take's bytes
    those of ``os.pread`` (the oracle: the last start not yet taken, at that offset and
    size)."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"readahead-{os.getpid()}.bin"
    path.write_bytes(DATA)
    fd = os.open(path, os.O_RDONLY)
    try:
        with use_accelerator(True):
            compiled_answers = replay(fd, script)
        with use_accelerator(False):
            twin_answers = replay(fd, script)
    finally:
        os.close(fd)
        path.unlink()
    expected: list[Any] = []
    pending: tuple[int, int] | None = None
    for call, offset, size in script:
        if call == "start":
            pending = (offset, size)
            expected.append(True)
        elif pending == (offset, size):
            pending = None
            expected.append(DATA[offset : offset + size])
        else:
            expected.append(None)
    assert compiled_answers == twin_answers == expected
