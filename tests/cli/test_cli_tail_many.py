"""``utf8stream tail -F 'PATTERN'... --checkpoint DB``: the real console
script in a subprocess, with real files and signals."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _helpers import append
from _tail_cli import outcome

from utf8stream import CheckpointStore

UTF8STREAM = os.path.join(os.path.dirname(sys.executable), "utf8stream")


class Follow:
    def __init__(self, cwd: Path, *argv: str) -> None:
        self.proc = subprocess.Popen(
            [UTF8STREAM, "tail", "--interval", "0.01", "--rotate-grace", "0.1", *argv],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # A line that never comes fails the test instead of hanging it.
        self.watchdog = threading.Timer(30, self.proc.kill)
        self.watchdog.start()

    def out(self, n: int) -> bytes:
        assert self.proc.stdout is not None
        return b"".join(self.proc.stdout.readline() for _ in range(n))

    def err(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.readline().decode()

    def stop(self) -> tuple[int, bytes, bytes]:
        self.proc.terminate()
        try:
            status = self.proc.wait(10)
        finally:
            self.proc.kill()
            self.watchdog.cancel()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        return status, self.proc.stdout.read(), self.proc.stderr.read()


def test_patterns_headers_new_files_and_a_store_across_restarts(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"a1\na2\n")
    (tmp_path / "b.log").write_bytes(b"b1\n")
    (tmp_path / "other.txt").write_bytes(b"no\n")
    follow = Follow(tmp_path, "-F", "-n", "+1", "*.log", "--checkpoint", "state.db")
    try:
        assert follow.out(6) == b"==> a.log <==\na1\na2\n\n==> b.log <==\nb1\n"
        (tmp_path / "c.log").write_bytes(b"c1\n")
        assert follow.err() == "utf8stream: c.log: has appeared; following new file\n"
        assert follow.out(3) == b"\n==> c.log <==\nc1\n"
    finally:
        assert follow.stop() == (143, b"", b"")
    # Stopped: what was printed is in the store, for all three files at once.
    with sqlite3.connect(tmp_path / "state.db") as db:
        (rows,) = db.execute("SELECT count(*) FROM checkpoints").fetchone()
    assert rows == 3
    append(tmp_path / "a.log", b"a3\n")
    append(tmp_path / "c.log", b"c2\n")
    follow = Follow(tmp_path, "-F", "-n", "+1", "*.log", "--checkpoint", "state.db")
    try:
        got = follow.out(5)
        assert sorted(got.split(b"\n\n")) == [b"==> a.log <==\na3", b"==> c.log <==\nc2\n"]
    finally:
        assert follow.stop() == (143, b"", b"")


def test_a_file_created_while_stopped_is_printed_from_its_first_line(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"".join(b"%d\n" % k for k in range(1, 31)))
    follow = Follow(tmp_path, "-F", "*.log", "--checkpoint", "cp.db")
    try:
        assert follow.out(11) == b"==> a.log <==\n" + b"".join(b"%d\n" % k for k in range(21, 31))
    finally:
        assert follow.stop() == (143, b"", b"")
    (tmp_path / "b.log").write_bytes(b"".join(b"b%d\n" % k for k in range(1, 16)))
    follow = Follow(tmp_path, "-F", "*.log", "--checkpoint", "cp.db")
    try:
        assert follow.out(16) == b"==> b.log <==\n" + b"".join(b"b%d\n" % k for k in range(1, 16))
    finally:
        notice = b"utf8stream: b.log: has appeared; following new file\n"
        assert follow.stop() == (143, b"", notice)


def test_a_json_checkpoint_is_not_taken_for_a_store(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"a\n")
    (tmp_path / "cp.json").write_text("{}")
    result = subprocess.run(
        [UTF8STREAM, "tail", "-F", str(tmp_path / "*.log"), "--checkpoint", "cp.json"],
        cwd=tmp_path,
        capture_output=True,
        timeout=20,
        check=False,
    )
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr.decode().splitlines() == [
        "utf8stream: not a usable checkpoint store: cp.json: not a checkpoint store"
        " (file is not a database)"
    ]


@pytest.mark.soak  # a kill-and-restart run, with the kill soaks
@pytest.mark.parametrize("files", [["*.log"], ["a.log", "b.log"]], ids=["pattern", "files"])
def test_multiline_events_per_file_with_headers_and_a_store_across_kill_9(
    tmp_path: Path, files: list[str]
) -> None:
    (tmp_path / "a.log").write_bytes(b"1 a\n  a, 1\n2 a\n")
    (tmp_path / "b.log").write_bytes(b"1 b\n  b, 1\n")
    argv = ("-F", "-n", "+1", *files, "--multiline-start", r"^\d", "--checkpoint", "state.db")
    follow = Follow(tmp_path, *argv, "--multiline-timeout", "3600")
    try:
        # a.log's first event is complete ("2 a" began the next); b.log's is not.
        assert follow.out(3) == b"==> a.log <==\n1 a\n  a, 1\n"
        append(tmp_path / "b.log", b"  b, 2\n2 b\n")
        assert follow.out(5) == b"\n==> b.log <==\n1 b\n  b, 1\n  b, 2\n"
        append(tmp_path / "a.log", b"  a, 2\n")  # read, held: the event may go on
        time.sleep(0.5)
    finally:
        follow.proc.kill()  # kill -9 in the middle of both files' events
        assert follow.stop()[:2] == (-9, b"")
    with CheckpointStore(tmp_path / "state.db") as store:
        saved = store.load_all()
    assert saved[str(tmp_path / "a.log")].offset == len(b"1 a\n  a, 1\n")
    assert saved[str(tmp_path / "b.log")].offset == len(b"1 b\n  b, 1\n  b, 2\n")
    # The next run prints each held event whole, once, after its timeout.
    follow = Follow(tmp_path, *argv, "--multiline-timeout", "0.2")
    try:
        got = follow.out(6)
        time.sleep(0.5)  # quiet: each event was printed once, nothing follows
    finally:
        assert follow.stop() == (143, b"", b"")
    blocks = sorted(block.strip(b"\n") for block in got.split(b"\n\n"))
    assert blocks == [b"==> a.log <==\n2 a\n  a, 2", b"==> b.log <==\n2 b"]


@pytest.mark.parametrize(
    ("options", "why"),
    [
        (["--pid", "1"], "--pid (stopping when PID exits is implemented for separate FILEs only)"),
        (["--offset", "5"], "--offset (a byte offset belongs to one file)"),
        (
            ["-c", "5"],
            "--bytes (files followed together start at their last N lines (-n N) or first "
            "(-n +1))",
        ),
        (
            ["-n", "+3"],
            "-n +N (N > 1) (files followed together start at their last N lines (-n N) or "
            "first (-n +1))",
        ),
    ],
    ids=["pid", "offset", "bytes", "from-line-3"],
)
def test_options_for_one_file_are_refused_with_patterns(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], options: list[str], why: str
) -> None:
    argv = ["tail", "-F", *options, "--multiline", "java", str(tmp_path / "*.log")]
    status, out, err = outcome(capsysbinary, *argv)
    assert (status, out) == (2, b"")
    assert err == (f"utf8stream: not with several FILEs or PATTERNs followed at once: {why}\n")
