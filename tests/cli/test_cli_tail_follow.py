"""``utf8stream tail -f``/``-F``: lines as they come, across rotation and truncation (with
notices on stderr), multi-line events, several FILEs in argument order, ``--pid``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _helpers import append, bytes_within
from _tail_cli import (
    READ_DEADLINE,
    Follow,
    tail,
)

from utf8stream.follower import read_checkpoint


def test_follow_prints_lines_as_they_come(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"first\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "utf8stream", "tail", "-F", "--interval", "0.01", str(log)],
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"first\n"
        append(log, "zwei €\n".encode())
        assert proc.stdout.readline() == "zwei €\n".encode()
        os.rename(log, tmp_path / "app.log.1")
        time.sleep(0.05)  # the path is missing a moment, as between logrotate's two steps
        log.write_bytes(b"rotated\n")
        assert proc.stdout.readline() == b"rotated\n"
        # SIGTERM ends it at once, anyio's worker thread included.
        proc.terminate()
        assert proc.wait(5) == 143
    finally:
        proc.kill()


def test_missing_file_is_an_error_without_retry(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    for argv in ([], ["-f"], ["--retry"]):
        result = tail(*argv, str(missing))
        assert (result.returncode, result.stdout) == (1, b"")
        assert result.stderr.decode().splitlines()[-1] == (
            f"utf8stream: {missing}: cannot open for reading: No such file or directory"
        )


@pytest.mark.parametrize("files", [["p.log"], ["p*.log"]], ids=["file", "pattern"])
def test_an_unfinished_line_is_shown_at_once_and_its_rest_once(
    tmp_path: Path, files: list[str]
) -> None:
    log, cp = tmp_path / "p.log", tmp_path / "cp"
    log.write_bytes(b"old\n")
    argv = ("-f", "-q", "-n0", *(str(tmp_path / f) for f in files), "--checkpoint", str(cp))
    follow = Follow(*argv)
    try:
        append(log, b"Downloading 50%")
        assert follow.proc.stdout is not None
        assert bytes_within(follow.proc.stdout, 15, READ_DEADLINE) == b"Downloading 50%"
        append(log, b" 80%")
        assert bytes_within(follow.proc.stdout, 4, READ_DEADLINE) == b" 80%"
    finally:
        assert follow.stop() == (143, b"", b"")
    # The checkpoint covers what was shown: the next run shows the rest of the line.
    append(log, b" 100%\nnext\n")
    follow = Follow(*argv)
    try:
        assert follow.out() == b" 100%\n"
        assert follow.out() == b"next\n"
    finally:
        assert follow.stop() == (143, b"", b"")


def test_follow_waits_for_a_missing_file(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    follow = Follow("-F", str(log))
    try:
        assert follow.err() == (
            f"utf8stream: {log}: cannot open for reading: No such file or directory\n"
        )
        log.write_bytes(b"first\nsecond\n")
        assert follow.err() == f"utf8stream: {log}: has appeared; following new file\n"
        assert [follow.out(), follow.out()] == [b"first\n", b"second\n"]
    finally:
        assert follow.stop() == (143, b"", b"")


def test_follow_survives_the_file_vanishing_after_rotation(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\n")
    follow = Follow("-F", str(log))
    try:
        assert follow.out() == b"one\n"
        os.rename(log, tmp_path / "app.log.1")
        assert follow.err() == (
            f"utf8stream: {log}: has become inaccessible: No such file or directory\n"
        )
        time.sleep(0.2)  # many polls: still running, nothing more said
        assert follow.proc.poll() is None
        log.write_bytes(b"two\n")
        assert follow.err() == f"utf8stream: {log}: has appeared; following new file\n"
        assert follow.out() == b"two\n"
    finally:
        assert follow.stop() == (143, b"", b"")


def test_truncation_is_a_notice(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"before\n")
    follow = Follow("-F", str(log))
    try:
        assert follow.out() == b"before\n"
        os.truncate(log, 0)
        assert follow.err() == f"utf8stream: {log}: file truncated\n"
        append(log, b"after\n")
        assert follow.out() == b"after\n"
    finally:
        assert follow.stop() == (143, b"", b"")


def test_a_rotation_is_a_notice_and_the_new_file_is_followed(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"old\n")
    follow = Follow("-F", "--rotate-grace", "0", str(log))
    try:
        assert follow.out() == b"old\n"
        # Rotated with no moment where the path is missing (a slow rename-then-create
        # could be seen as "has become inaccessible" first, a notice of its own).
        os.link(log, tmp_path / "app.log.1")
        (tmp_path / "new").write_bytes(b"new\n")
        os.rename(tmp_path / "new", log)
        assert follow.err() == f"utf8stream: {log}: has been replaced; following new file\n"
        assert follow.out() == b"new\n"
    finally:
        assert follow.stop() == (143, b"", b"")


def test_copytruncate_lines_come_from_the_copy_with_a_notice(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\n")
    follow = Follow("-F", str(log))
    try:
        assert follow.out() == b"one\n"
        follow.proc.send_signal(signal.SIGSTOP)  # the writer outpaces the follower
        append(log, b"two\n")
        shutil.copyfile(log, tmp_path / "app.log.1")
        os.truncate(log, 0)
        append(log, b"three\n")
        follow.proc.send_signal(signal.SIGCONT)
        assert [follow.out(), follow.out()] == [b"two\n", b"three\n"]
        assert follow.err() == (
            f"utf8stream: {log}: file truncated; 4 bytes not read yet were taken from "
            "its rotated copy\n"
        )
    finally:
        assert follow.stop() == (143, b"", b"")


def test_a_multiline_event_held_at_a_stop_is_printed_whole_by_the_next_run(
    tmp_path: Path,
) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    record = b"2026-01-01 12:00 ERROR failed\n"
    log.write_bytes(b"2026-01-01 12:00 INFO started\n" + record)
    follow = Follow(
        "-F", "-n", "+1", "--multiline-start", r"^\d{4}-", "--checkpoint", str(cp), str(log)
    )
    try:
        assert follow.out() == b"2026-01-01 12:00 INFO started\n"
        append(log, b"Traceback (most recent call last):\n")
        time.sleep(0.3)  # read, and held: the event may go on
    finally:
        assert follow.stop() == (143, b"", b"")
    assert read_checkpoint(cp).offset == len(b"2026-01-01 12:00 INFO started\n")
    append(log, b"ValueError: bad\n2026-01-01 12:01 INFO next\n")
    result = tail("--multiline", "python", "--checkpoint", str(cp), str(log))
    assert result.stdout == (
        record + b"Traceback (most recent call last):\nValueError: bad\n"
        b"2026-01-01 12:01 INFO next\n"
    )


def test_the_last_multiline_event_is_printed_after_the_timeout(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"record\n  continued\n")
    follow = Follow("-F", "--multiline", "indented", "--multiline-timeout", "0.2", str(log))
    try:
        assert [follow.out(), follow.out()] == [b"record\n", b"  continued\n"]
    finally:
        assert follow.stop() == (143, b"", b"")


def test_a_multiline_event_ending_unfinished_is_printed_as_a_line_would_be(
    tmp_path: Path,
) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(b"rec one\nrec two\n  cont, unfinished")
    # As GNU tail: the last line has no newline, and none is added.
    result = tail("-n", "+1", "--multiline", "indented", str(log))
    assert result.stdout == b"rec one\nrec two\n  cont, unfinished"
    # With a checkpoint, the event is left for the run that sees it whole, printed once.
    result = tail("-n", "+1", "--multiline", "indented", "--checkpoint", str(cp), str(log))
    assert result.stdout == b"rec one\n"
    assert read_checkpoint(cp).offset == len(b"rec one\n")
    append(log, b" done\nrec three\n")
    result = tail("--multiline", "indented", "--checkpoint", str(cp), str(log))
    assert result.stdout == b"rec two\n  cont, unfinished done\nrec three\n"


def test_an_overlong_line_in_a_multiline_event_is_printed_unchanged(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    data = b"1 " + b"x" * 30 + b"\n  continued\n2 " + b"y" * 30 + b"\n"
    log.write_bytes(data)
    # Read in pieces of 8 bytes: joined again to their line, not as lines of their own.
    for option in (["--multiline-start", r"^\d"], ["--multiline", "indented"]):
        result = tail("-n", "+1", "--max-line-bytes", "8", *option, str(log))
        assert (result.returncode, result.stdout, result.stderr) == (0, data, b"")


def test_max_event_bytes_prints_a_large_event_in_pieces_as_it_comes(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"1 start\n  aaaa\n  bbbb\n  cccc\n")
    follow = Follow(
        "-F", "-n", "+1", "--multiline-start", r"^\d", "--multiline-timeout", "3600",
        "--max-event-bytes", "20", str(log),
    )  # fmt: skip
    try:
        # 8 + 7 bytes fit in 20, the third line would not: the piece so far is printed
        # now, not when the event ends (the rest waits for its timeout).
        assert [follow.out(), follow.out()] == [b"1 start\n", b"  aaaa\n"]
    finally:
        assert follow.stop() == (143, b"", b"")


def test_max_event_bytes_is_checked_and_useless_without_multiline(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\n")
    result = tail("--max-event-bytes", "0", "--multiline", "python", str(log))
    assert (result.returncode, result.stdout) == (2, b"")
    error = "argument --max-event-bytes: must be a positive integer, not '0'"
    assert result.stderr.decode() == f"utf8stream: tail: {error}; try 'utf8stream tail --help'\n"
    result = tail("--max-event-bytes", "100", str(log))
    assert (result.returncode, result.stdout) == (0, b"one\n")
    assert result.stderr == (
        b"utf8stream: warning: --max-event-bytes ignored; it is useful only with --multiline*\n"
    )


def test_following_several_files_says_which_each_line_is_from(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"a0\n")
    b.write_bytes(b"b0\n")
    follow = Follow("-F", str(a), str(b))
    try:
        # Their last lines in argument order, as GNU tail shows them.
        first = b"".join(follow.out() for _ in range(5))
        assert first == f"==> {a} <==\na0\n\n==> {b} <==\nb0\n".encode()
        # Each line written once the one before it is out: a header where the file changes.
        for path, line, shown in (
            (a, b"x\n", f"\n==> {a} <==\nx\n"),
            (b, b"y\n", f"\n==> {b} <==\ny\n"),
            (b, b"y2\n", "y2\n"),
            (a, b"z\n", f"\n==> {a} <==\nz\n"),
        ):
            append(path, line)
            assert b"".join(follow.out() for _ in range(shown.count("\n"))) == shown.encode()
    finally:
        assert follow.stop() == (143, b"", b"")


@pytest.mark.parametrize("empty_first", [False, True])
def test_following_several_files_shows_each_whole_in_argument_order(
    tmp_path: Path, empty_first: bool
) -> None:
    # The first file takes many reads (each file has a task of its own): its lines still
    # all come before the second file's, and an empty or missing file keeps its place.
    big, small, empty = tmp_path / "big", tmp_path / "small", tmp_path / "empty"
    big_lines = [b"%07d %s\n" % (i, b"x" * 1200) for i in range(3000)]  # 3.6 MB
    big.write_bytes(b"".join(big_lines))
    small.write_bytes(b"s0\ns1\n")
    empty.write_bytes(b"")
    missing = tmp_path / "missing"
    files = [empty, missing, big, small] if empty_first else [big, missing, empty, small]
    follow = Follow("-F", "-n", "+1", *map(str, files))
    try:
        shown = {
            big: [f"==> {big} <==\n".encode(), *big_lines],
            small: [f"==> {small} <==\n".encode(), b"s0\n", b"s1\n"],
            empty: [f"==> {empty} <==\n".encode()],
            missing: [],
        }
        expected: list[bytes] = []
        for path in files:
            if shown[path]:
                expected += ([b"\n"] if expected else []) + shown[path]
        assert [follow.out() for _ in expected] == expected
        assert follow.err() == (
            f"utf8stream: {missing}: cannot open for reading: No such file or directory\n"
        )
    finally:
        assert follow.stop()[0] == 143


def test_pid_stops_following_once_the_writer_has_exited(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"start\n")
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    follow = Follow("-f", "-s", "0.05", "--pid", str(writer.pid), str(log))
    try:
        assert follow.out() == b"start\n"
        append(log, b"last words\nunfinished")
        writer.kill()
        writer.wait()
        status = follow.proc.wait(10)
        assert follow.proc.stdout is not None
        assert (status, follow.out() + follow.proc.stdout.read()) == (
            0,
            b"last words\nunfinished",
        )
    finally:
        writer.kill()
        follow.proc.kill()
