"""tail -F --checkpoint killed with SIGKILL: into a regular file no line is lost or
repeated; into a pipe none is lost and at most the lines of one write repeat.

The checkpoint is saved right after every write to stdout (one write of at most 64 KiB of
lines), so a SIGKILL can only come before the save of lines already written.  Into a
regular file each save records how far the file was written, and the restart skips what
lies past that as it writes those lines again (a line the kill cut in half is completed);
into a pipe the lines of that one write come again.  The short tests make the kill land
there for certain: the save is held back (the store's write lock held by the test; a FIFO
where the JSON checkpoint's temporary file is made), the output grows, SIGKILL.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from utf8stream import CheckpointStore
from utf8stream.follower import read_checkpoint

UTF8STREAM = str(Path(sys.executable).with_name("utf8stream"))
ONE_WRITE = (1 << 16) + 100  # tail's batch, and the line that filled it
LINES = 150_000
DEADLINE = 60.0


def _lines(first: int, count: int) -> bytes:
    return b"".join(b"line %06d %s\n" % (i, b"x" * 66) for i in range(first, first + count))


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def _printed(data: bytes) -> list[bytes]:
    """The lines printed, without a pattern's ``==> app.log <==`` header."""
    return [line for line in data.splitlines(keepends=True) if line[:4] == b"line"]


class Run:
    """``utf8stream tail -F -n +1 --checkpoint`` of one FILE (a JSON checkpoint) or of a
    PATTERN (a checkpoint store), appending to ``out``: directly, or through a pipe."""

    def __init__(self, tmp_path: Path, many: bool, pipe: bool) -> None:
        self.dir = tmp_path
        self.log, self.out = tmp_path / "app.log", tmp_path / "out"
        self.cp = tmp_path / ("cp.db" if many else "cp")
        self.out.touch()
        followed = str(tmp_path / "app*.log") if many else str(self.log)
        self.command = [UTF8STREAM, "tail", "-F", "-n", "+1", "--checkpoint", str(self.cp)]
        self.command.append(followed)
        self.pipe = pipe
        self.starts: list[int] = []  # the output's size as each run started

    def start(self, prefix: list[str] | None = None) -> subprocess.Popen[bytes]:
        self.starts.append(self.out.stat().st_size)
        with self.out.open("ab") as out:
            if not self.pipe:
                return subprocess.Popen([*(prefix or []), *self.command], stdout=out)
            # ``cat`` appends what the pipe brings; it ends when the CLI's end closes.
            cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=out)
            assert cat.stdin is not None
            proc = subprocess.Popen([*(prefix or []), *self.command], stdout=cat.stdin)
            cat.stdin.close()
            self.cat = cat
            return proc

    def end(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        proc.send_signal(sig)
        proc.wait(timeout=30)
        if self.pipe:
            self.cat.wait(timeout=30)

    def until_printed(self, last: int) -> None:
        line = _lines(last, 1)
        _wait_for(lambda: self.out.read_bytes()[-200:].endswith(line), f"line {last}")


def _repeats_per_run(data: bytes, starts: list[int]) -> tuple[list[int], set[bytes]]:
    """Bytes each run printed that an earlier one had, and every line seen."""
    seen: set[bytes] = set()
    repeats = []
    for begin, end in zip(starts, [*starts[1:], len(data)], strict=True):
        run = _printed(data[begin:end])
        repeats.append(sum(len(line) for line in run if line in seen))
        seen.update(run)
    return repeats, seen


@contextmanager
def _store_locked(path: Path) -> Iterator[None]:
    """The checkpoint store's write lock held: a save waits (for the store's busy timeout)."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        yield
    finally:
        connection.execute("ROLLBACK")
        connection.close()


def _stored_offset(path: Path) -> int:
    """Where the store's last save stands in the log."""
    with CheckpointStore(path) as store:
        return max((cp.offset for cp in store.load_all().values()), default=-1)


def _cut_torn_line(out: Path) -> None:
    """A line a kill cut in half in a pipe is not completed: it comes again whole."""
    data = out.read_bytes()
    os.truncate(out, data.rfind(b"\n") + 1)


@pytest.mark.parametrize("pipe", [False, True], ids=["into a file", "into a pipe"])
def test_a_kill_between_a_write_and_its_save(tmp_path: Path, pipe: bool) -> None:
    """A PATTERN (a checkpoint store): the save after a write waits for the store's lock,
    and the kill comes while it waits."""
    run = Run(tmp_path, many=True, pipe=pipe)
    run.log.write_bytes(_lines(0, 300))
    proc = run.start()
    run.until_printed(299)
    size = run.out.stat().st_size
    logged = run.log.stat().st_size
    _wait_for(lambda: _stored_offset(run.cp) == logged, "the save of the first lines")
    with _store_locked(run.cp):
        with run.log.open("ab") as log:
            log.write(_lines(300, 200))
        _wait_for(lambda: run.out.stat().st_size > size, "a write (its save waits)")
        run.end(proc, signal.SIGKILL)
    if pipe:
        _cut_torn_line(run.out)
    after_save = run.out.stat().st_size - size
    proc = run.start()
    with run.log.open("ab") as log:
        log.write(_lines(500, 100))
    run.until_printed(599)
    run.end(proc, signal.SIGTERM)
    data = run.out.read_bytes()
    repeats, seen = _repeats_per_run(data, run.starts)
    assert len(seen) == 600  # none lost
    if pipe:
        assert repeats == [0, after_save]  # what the killed run wrote after its last save
    else:
        assert repeats == [0, 0]
        assert _printed(data) == _printed(_lines(0, 600))
        assert data.count(b" <==\n") == 1  # the header is there already


@pytest.mark.parametrize("torn", [False, True], ids=["whole", "cut mid-line"])
def test_a_kill_between_a_write_and_its_save_of_one_file(tmp_path: Path, torn: bool) -> None:
    """One FILE (a JSON checkpoint): the save after a write waits on a FIFO where it makes
    its temporary file (``.cp.PID.tmp``, renamed over ``cp``).  Cut mid-line: what a kill
    during the write leaves, whose line the restart completes."""
    run = Run(tmp_path, many=False, pipe=False)
    run.log.write_bytes(_lines(0, 300))
    proc = run.start()
    run.until_printed(299)
    run.end(proc, signal.SIGTERM)
    with run.log.open("ab") as log:
        log.write(_lines(300, 200))
    # ``exec`` keeps the shell's PID: the FIFO bears the CLI's.
    fifo = ["sh", "-c", 'mkfifo "$0/.cp.$$.tmp" && exec "$@"', str(tmp_path)]
    size = run.out.stat().st_size
    proc = run.start(prefix=fifo)
    _wait_for(lambda: run.out.stat().st_size > size, "a write (its save blocked)")
    run.end(proc, signal.SIGKILL)
    (tmp_path / f".cp.{proc.pid}.tmp").unlink()
    assert read_checkpoint(run.cp).output.size < run.out.stat().st_size  # type: ignore[union-attr]
    if torn:
        os.truncate(run.out, run.out.stat().st_size - 30)
    proc = run.start()
    run.until_printed(499)
    run.end(proc, signal.SIGTERM)
    assert _printed(run.out.read_bytes()) == _printed(_lines(0, 500))


@pytest.mark.soak  # eight runs over 11 MB of lines, six of them killed
@pytest.mark.parametrize("pipe", [False, True], ids=["into a file", "into a pipe"])
@pytest.mark.parametrize("many", [False, True], ids=["one FILE", "a PATTERN"])
def test_kills_at_any_moment(tmp_path: Path, many: bool, pipe: bool) -> None:
    """Killed wherever the output has reached 1, 4 and 8 MB."""
    run = Run(tmp_path, many, pipe)
    run.log.write_bytes(_lines(0, LINES))
    for kill_at in (1 << 20, 4 << 20, 8 << 20):
        if pipe:
            _cut_torn_line(run.out)
        proc = run.start()
        _wait_for(lambda: run.out.stat().st_size >= kill_at, f"{kill_at} bytes")  # noqa: B023
        run.end(proc, signal.SIGKILL)
    if pipe:
        _cut_torn_line(run.out)
    proc = run.start()
    try:
        run.until_printed(LINES - 1)
    finally:
        run.end(proc, signal.SIGTERM)
    data = run.out.read_bytes()
    repeats, seen = _repeats_per_run(data, run.starts)
    assert len(seen) == LINES  # none lost
    if pipe:
        assert max(repeats) <= ONE_WRITE, f"a restart repeated {max(repeats)} bytes"
    else:
        assert repeats == [0] * len(run.starts)
        assert _printed(data) == _printed(_lines(0, LINES))
