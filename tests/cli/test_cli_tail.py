"""``utf8stream tail``: last lines, checkpoints across runs, following a growing file."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _helpers import append, bytes_within, line_within

from utf8stream.apps.cli import main
from utf8stream.follower import read_checkpoint


def run(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes]:
    code = main(list(argv))
    return code, capsysbinary.readouterr().out


def test_last_lines_like_tail_n(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\ntwo\nthr\xffee\nfour")
    # As GNU tail: the last line has no newline, and none is added.
    assert run(capsysbinary, "tail", "-n", "2", str(log)) == (0, "thr\ufffdee\nfour".encode())
    assert run(capsysbinary, "tail", str(log)) == (0, "one\ntwo\nthr\ufffdee\nfour".encode())


def test_checkpoint_runs_print_each_complete_line_once(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(b"a\nb\npartial")
    # The unfinished line is left for the run that sees it whole: none is printed twice.
    assert run(capsysbinary, "tail", "-n", "100", "--checkpoint", str(cp), str(log)) == (
        0,
        b"a\nb\n",
    )
    append(log, b" done\nc\n")
    assert run(capsysbinary, "tail", "--checkpoint", str(cp), str(log)) == (
        0,
        b"partial done\nc\n",
    )
    assert run(capsysbinary, "tail", "--checkpoint", str(cp), str(log)) == (0, b"")
    os.rename(log, tmp_path / "app.log.1")
    log.write_bytes(b"after rotation\n")
    assert run(capsysbinary, "tail", "--checkpoint", str(cp), str(log)) == (
        0,
        b"after rotation\n",
    )


def test_offset_mid_character(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    log = tmp_path / "app.log"
    log.write_bytes("x€y\n".encode())
    assert run(capsysbinary, "tail", "--offset", "2", str(log)) == (0, "\ufffdy\n".encode())


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


@pytest.mark.parametrize("policy", ["optu-8", "surrogateescape"])
def test_decode_round_trips_bad_bytes(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], policy: str
) -> None:
    data = b"a\xff\xc3\xa9\xed\xa0\x80 \xe2\x82"
    (tmp_path / "in").write_bytes(data)
    assert run(capsysbinary, "decode", "--errors", policy, str(tmp_path / "in")) == (0, data)


def test_transcode_command(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes("Grüße \xff".encode("utf-8", "surrogateescape") + b"\xff")
    argv = ["transcode", "--errors", "replace", "-t", "utf-16-le", str(src), str(dst)]
    assert run(capsysbinary, *argv)[0] == 0
    assert dst.read_bytes() == "Grüße ÿ\ufffd".encode("utf-16-le")
    assert run(capsysbinary, "transcode", str(src), str(dst))[0] == 1  # as iconv
    assert run(capsysbinary, "transcode", "-f", "nope", str(src), str(dst))[0] == 2
    assert run(capsysbinary, "transcode", "-f", "latin-1", "-t", "utf-8", str(src), "-") == (
        0,
        src.read_bytes().decode("latin-1").encode("utf-8"),
    )


# -- checkpoints: the real console script, real files --------------------------------

UTF8STREAM = str(Path(sys.executable).with_name("utf8stream"))


def tail(*argv: str, timeout: float = 20) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [UTF8STREAM, "tail", *argv], capture_output=True, timeout=timeout, check=False
    )


def one_error_line(result: subprocess.CompletedProcess[bytes], status: int) -> str:
    """The one stderr line of a failed run (no traceback, nothing on stdout)."""
    assert (result.returncode, result.stdout) == (status, b"")
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    "content",
    [
        b'{"version": 1, "path": "x", "offset": -5, "mid_line": false, "file": {}}',
        b'{"version": 1, "path": "x", "offset": 0, "mid_line": false, "file": {"device": 1, '
        b'"inode": 2, "head_length": 1e11, "head_sha256": "00"}}',
        b"[" * 40_000,
        b"\xff\xfe garbage",
        b"",
        b"[]",
    ],
)
def test_damaged_checkpoint_is_one_clear_line(tmp_path: Path, content: bytes) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(b"line\n")
    cp.write_bytes(content)
    line = one_error_line(tail("--checkpoint", str(cp), str(log)), 2)
    assert line.startswith(f"utf8stream: {cp}: not a usable checkpoint: ")
    assert cp.read_bytes() == content  # left as it was, for the user to look at


def test_checkpoint_of_another_file_is_refused(tmp_path: Path) -> None:
    log, other, cp = tmp_path / "app.log", tmp_path / "other.log", tmp_path / "cp.json"
    log.write_bytes(b"app\n")
    other.write_bytes(b"secret\n")
    assert tail("--checkpoint", str(cp), str(other)).stdout == b"secret\n"
    line = one_error_line(tail("--checkpoint", str(cp), str(log)), 2)
    assert line == (
        f"utf8stream: {cp}: not a usable checkpoint: it is for another file ({other}), not {log}"
    )


def test_a_checkpoint_that_does_not_fit_its_file_is_a_notice(tmp_path: Path) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(numbered(1000, 1200))  # 2,000 bytes: more than the fingerprint's 1,024
    assert tail("-n", "1", "--checkpoint", str(cp), str(log)).stdout == b"line 1199\n"
    os.truncate(log, 1500)  # shorter than the checkpoint's offset, the same first bytes
    result = tail("--checkpoint", str(cp), str(log))
    assert (result.returncode, result.stdout) == (0, numbered(1000, 1150))
    assert result.stderr.decode() == (
        f"utf8stream: {cp}: checkpoint at byte 2000 does not fit {log}: it is past the end"
        " of the file (1500 bytes); reading it from the beginning\n"
    )


def test_checkpoint_write_error_names_the_checkpoint(tmp_path: Path) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "no-such-dir" / "cp.json"
    log.write_bytes(b"line\n")
    result = tail("--checkpoint", str(cp), str(log))
    assert result.returncode == 2
    assert result.stderr.decode() == f"utf8stream: {cp}: No such file or directory\n"


# -- the checkpoint is saved on every stop ---------------------------------------------


def numbered(start: int, stop: int) -> bytes:
    return b"".join(b"line %d\n" % i for i in range(start, stop))


def start_following(log: Path, cp: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            *(UTF8STREAM, "tail", "-F", "-n", "100000", "--interval", "0.01"),
            *("--checkpoint", str(cp), *extra, str(log)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def read_lines(proc: subprocess.Popen[bytes], count: int) -> list[bytes]:
    assert proc.stdout is not None
    return [proc.stdout.readline() for _ in range(count)]


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"]
)
def test_a_signal_saves_the_checkpoint(tmp_path: Path, signum: int, status: int) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(numbered(0, 100))
    proc = start_following(log, cp)
    try:
        got = read_lines(proc, 100)
        append(log, numbered(100, 150))
        got += read_lines(proc, 50)
        proc.send_signal(signum)
        assert proc.wait(10) == status
    finally:
        proc.kill()
    assert proc.stdout is not None and proc.stderr is not None
    got += proc.stdout.read().splitlines(keepends=True)
    assert proc.stderr.read() == b""  # no traceback, no message
    append(log, numbered(150, 170))
    again = tail("--checkpoint", str(cp), str(log))
    assert again.returncode == 0
    # Every line exactly once, over the two runs.
    assert b"".join(got) + again.stdout == numbered(0, 170)


def test_the_checkpoint_is_saved_when_the_output_goes_quiet(tmp_path: Path) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(numbered(0, 20_000))
    proc = start_following(log, cp)
    try:
        got = read_lines(proc, 20_000)
        # Quiet from here on: the place must be saved without any more output.
        deadline = time.monotonic() + READ_DEADLINE
        while not (cp.exists() and read_checkpoint(cp).offset == log.stat().st_size):
            assert time.monotonic() < deadline, "the checkpoint was not saved"
            time.sleep(0.01)  # a poll of the saved file
        proc.kill()  # no chance to save anything now
        proc.wait(10)
    finally:
        proc.kill()
    assert b"".join(got) == numbered(0, 20_000)
    append(log, numbered(20_000, 20_005))
    assert tail("--checkpoint", str(cp), str(log)).stdout == numbered(20_000, 20_005)


def test_a_closed_pipe_saves_what_was_delivered(tmp_path: Path) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(numbered(0, 200_000))
    proc = subprocess.Popen(
        [UTF8STREAM, "tail", "-n", "200000", "--checkpoint", str(cp), str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # like | head -1
    assert proc.wait(20) == 141
    assert first == b"line 0\n"
    assert proc.stderr.read() == b""
    rest = tail("--checkpoint", str(cp), str(log)).stdout
    # What the pipe took before it closed is not printed again; nothing is lost.
    assert 100_000 < rest.count(b"\n") < 200_000
    assert numbered(0, 200_000).endswith(rest) and rest.startswith(b"line ")


# -- compressed rotated files are never printed as text --------------------------------

COMPRESSORS = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    # No compressor for these in the standard library: a frame header is what is looked
    # at, followed here by bytes that would print as text if the file were read.
    "zstd": lambda data: b"\x28\xb5\x2f\xfd" + data,
    "lz4": lambda data: b"\x04\x22\x4d\x18" + data,
}


@pytest.mark.parametrize("method", list(COMPRESSORS))
def test_delaycompress_rotation_while_stopped(tmp_path: Path, method: str) -> None:
    """logrotate with delaycompress, between two runs: app.log.1 (the previous cycle)
    becomes app.log.2.<ext>, compressed now, so newer than the file our checkpoint is in;
    app.log becomes app.log.1; a new app.log is created."""
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    (tmp_path / "app.log.1").write_bytes(b"previous cycle\n")
    log.write_bytes(b"a1\na2\n")
    assert tail("--checkpoint", str(cp), str(log)).stdout == b"a1\na2\n"
    append(log, b"a3\n")
    time.sleep(0.02)  # the compressed file is written after our file's last write
    os.rename(tmp_path / "app.log.1", tmp_path / "app.log.2")
    compressed = tmp_path / f"app.log.2.{method}"
    compressed.write_bytes(COMPRESSORS[method]((tmp_path / "app.log.2").read_bytes()))
    os.remove(tmp_path / "app.log.2")
    os.rename(log, tmp_path / "app.log.1")
    log.write_bytes(b"b1\n")
    result = tail("--checkpoint", str(cp), str(log))
    assert (result.returncode, result.stdout) == (0, b"a3\nb1\n")


# -- notices on stderr, never fake lines on stdout ----------------------------------


#: How long a test waits for a line the command should print (a failure, not a hang).
READ_DEADLINE = 30.0


class Follow:
    """``tail -F`` running on a file, its stdout and stderr read line by line."""

    def __init__(self, *argv: str) -> None:
        self.proc = subprocess.Popen(
            [UTF8STREAM, "tail", "--interval", "0.01", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def out(self) -> bytes:
        assert self.proc.stdout is not None
        return line_within(self.proc.stdout, READ_DEADLINE)

    def err(self) -> str:
        assert self.proc.stderr is not None
        return line_within(self.proc.stderr, READ_DEADLINE).decode()

    def stop(self) -> tuple[int, bytes, bytes]:
        self.proc.terminate()
        try:
            status = self.proc.wait(10)
        finally:
            self.proc.kill()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        return status, self.proc.stdout.read(), self.proc.stderr.read()


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


@pytest.mark.parametrize("bom", [b"", b"\xff\xfe"])
def test_utf16le_logs_are_printed_in_utf8(tmp_path: Path, bom: bytes) -> None:
    """As SQL Server and PowerShell write them: UTF-16LE, CRLF, with or without a BOM."""
    log = tmp_path / "app.log"
    encoding = "utf-16" if bom else "utf-16-le"
    log.write_bytes(bom + "première\r\n".encode("utf-16-le"))
    follow = Follow("-F", "-n", "+1", "--encoding", encoding, str(log))
    try:
        assert follow.out() == "première\r\n".encode()
        append(log, "日本\r\n".encode("utf-16-le"))
        assert follow.out() == "日本\r\n".encode()
    finally:
        assert follow.stop() == (143, b"", b"")


def test_an_encoding_lines_cannot_be_cut_in_is_a_usage_error(tmp_path: Path) -> None:
    result = tail("--encoding", "utf-7", str(tmp_path / "app.log"))
    assert result.returncode == 2
    assert "argument --encoding: 'utf_7': its newline bytes are not self-delimiting" in (
        result.stderr.decode()
    )


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


# -- line endings, long lines and malformed bytes passed through as they are -----------


def test_line_endings_pass_through_unchanged(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    data = b"crlf\r\nlone\rcr inside\n\r\n\nlf\r\rlast, no newline"
    log.write_bytes(data)
    assert tail("-n", "100", str(log)).stdout == data
    assert tail("-n", "2", str(log)).stdout == b"\nlf\r\rlast, no newline"
    log.write_bytes(data + b"\n")
    follow = Follow("-F", "-n", "100", str(log))
    try:
        assert b"".join(follow.out() for _ in range(5)) == data + b"\n"
        append(log, b"more\r\n")
        assert follow.out() == b"more\r\n"
    finally:
        assert follow.stop() == (143, b"", b"")


def test_long_lines(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    long_line = "é" * 15  # 30 bytes
    data = f"short\n{long_line}\r\nnext\n".encode()
    log.write_bytes(data)

    def run_with(*policy: str) -> subprocess.CompletedProcess[bytes]:
        return tail("-n", "100", "--max-line-bytes", "8", *policy, str(log))

    # Split (the default): read in pieces, printed unchanged.
    assert run_with().stdout == data
    assert run_with("--on-overlong", "split").stdout == data
    truncated = run_with("--on-overlong", "truncate")
    assert truncated.stdout == "short\néééé\nnext\n".encode()
    notice = f"utf8stream: {log}: line at byte 6 longer than 8 bytes"
    assert truncated.stderr.decode() == f"{notice}: truncated\n"
    skipped = run_with("--on-overlong", "skip")
    assert (skipped.stdout, skipped.stderr.decode()) == (b"short\nnext\n", f"{notice}: skipped\n")
    raised = run_with("--on-overlong", "raise")
    assert (raised.returncode, raised.stdout) == (1, b"short\n")
    assert raised.stderr.decode() == f"utf8stream: {log}: line longer than 8 bytes\n"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("replace", "a\ufffd\ufffdb\n\ufffd\n".encode()),
        ("ignore", b"ab\n\n"),
        ("backslashreplace", b"a\\xff\\xc0b\n\\xe2\\x82\n"),
        ("surrogateescape", b"a\xff\xc0b\n\xe2\x82\n"),  # the bytes, as they were
    ],
)
def test_errors_policy(tmp_path: Path, policy: str, expected: bytes) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"a\xff\xc0b\n\xe2\x82\n")
    assert tail("--errors", policy, str(log)).stdout == expected


@pytest.mark.parametrize(
    ("value", "number", "from_start"),
    [
        ("7", 7, False),
        ("-7", 7, False),
        ("+7", 7, True),
        ("2b", 1024, False),
        ("1K", 1024, False),
        ("1KiB", 1024, False),
        ("1kB", 1000, False),
        ("1k", 1024, False),
        ("1m", 1024**2, False),
        ("1kiB", 1024, False),
        ("+3M", 3 * 1024**2, True),
        ("2MB", 2_000_000, False),
        ("1G", 1024**3, False),
        ("1GB", 10**9, False),
        ("1Q", 1024**10, False),
    ],
)
def test_counts_take_gnu_multiplier_suffixes(value: str, number: int, from_start: bool) -> None:
    from utf8stream.apps.cli._main import build_parser

    count = build_parser().parse_args(["tail", "-n", value]).lines
    assert (count.number, count.from_start) == (number, from_start)


def test_bytes_with_a_suffix(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"x" * 5000 + b"\n")
    assert tail("-c", "1K", str(log)).stdout == b"x" * 1023 + b"\n"
    assert tail("-c", "1kB", str(log)).stdout == b"x" * 999 + b"\n"
    assert tail("-c", "+4K", str(log)).stdout == b"x" * (5000 - 4095) + b"\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-line-bytes", "3"], "argument --max-line-bytes: must be at least 4"),
        (["--max-line-bytes", "x"], "argument --max-line-bytes: must be an integer"),
        (["--errors", "strict"], "argument --errors: invalid choice: 'strict'"),
        (["--on-overlong", "wrap"], "argument --on-overlong: invalid choice: 'wrap'"),
    ],
)
def test_option_values_are_checked(tmp_path: Path, argv: list[str], message: str) -> None:
    result = tail(*argv, str(tmp_path / "app.log"))
    assert result.returncode == 2
    assert message in result.stderr.decode()


def test_the_commands_defaults_are_the_librarys() -> None:
    """The follower's options of the command are ``FollowOptions``'s fields: the same
    names, defaults and choices."""
    import dataclasses
    import inspect

    from utf8stream.apps._watch import Watcher
    from utf8stream.apps.cli._main import build_parser
    from utf8stream.follower import FollowOptions

    args = build_parser().parse_args(["tail", "app.log"])
    on_the_command_line = [
        field for field in dataclasses.fields(FollowOptions) if field.metadata["option"].flags
    ]
    assert {field.name for field in on_the_command_line} >= {
        "poll_interval",
        "rotate_grace",
        "max_line_bytes",
        "on_overlong",
        "errors",
        "encoding",
        "multiline",
        "multiline_timeout",
        "retry",
    }
    for field in on_the_command_line:
        assert getattr(args, field.name) == field.default, field.name
    assert (args.rotate_grace, args.poll_interval, args.multiline_timeout) == (1.0, 0.25, 5.0)
    assert inspect.signature(Watcher).parameters["poll_interval"].default == 0.25


def test_one_default_for_each_line_option() -> None:
    """One overlong policy (split: nothing lost, no reader stopped) and one limit for
    every line reader: library readers, the follower and the command."""
    import inspect

    from utf8stream import LineReceiveStream, LineSplitter, follow
    from utf8stream.apps.cli._main import build_parser
    from utf8stream.core import lines
    from utf8stream.lines import LineEngine

    for reader in (LineSplitter, LineReceiveStream, LineEngine, follow):
        parameters = inspect.signature(reader).parameters
        assert parameters["max_line_bytes"].default == lines.DEFAULT_MAX_LINE_BYTES
        assert parameters["on_overlong"].default == lines.DEFAULT_ON_OVERLONG == "split"
    args = build_parser().parse_args(["tail", "x"])
    assert args.max_line_bytes == lines.DEFAULT_MAX_LINE_BYTES == 1 << 20
    assert args.on_overlong == lines.DEFAULT_ON_OVERLONG


# -- GNU tail's options ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-n", "+3"], b"3\n4\n"),
        (["-n", "+1"], b"1\n2\n3\n4\n"),
        (["-n", "+0"], b"1\n2\n3\n4\n"),
        (["-n", "+9"], b""),
        (["-n", "2"], b"3\n4\n"),
        (["-n", "-2"], b"3\n4\n"),
        (["-n", "0"], b""),
        (["--lines=+4"], b"4\n"),
    ],
)
def test_lines_from_the_end_or_from_line_n(
    tmp_path: Path, argv: list[str], expected: bytes
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"1\n2\n3\n4\n")
    assert tail(*argv, str(log)).stdout == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-c", "6"], b"world\n"),
        (["-c", "+8"], b"world\n"),
        (["-c", "+1"], "héllo\nworld\n".encode()),
        (["-c", "100"], "héllo\nworld\n".encode()),
        (["-c", "+3"], "\ufffdllo\nworld\n".encode()),  # byte 3 is inside the é
        (["-c", "+3", "--errors", "surrogateescape"], "héllo\nworld\n".encode()[2:]),
        (["-c", "11"], "\ufffdllo\nworld\n".encode()),
    ],
)
def test_bytes_from_the_end_or_from_byte_n(
    tmp_path: Path, argv: list[str], expected: bytes
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes("héllo\nworld\n".encode())
    assert tail(*argv, str(log)).stdout == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-n", "x"], "argument -n/--lines: must be N (the last N) or +N (from the Nth on)"),
        (["-n", "+-1"], "argument -n/--lines: must be N"),
        (["-c", "1.5"], "argument -c/--bytes: must be N"),
        (["-c", "1g"], "with an optional multiplier suffix"),  # as GNU: k and m only
        (["-n", "1Ki"], "argument -n/--lines: must be N"),
        (["-n", "١"], "argument -n/--lines: must be N"),  # ASCII digits only
        (["--offset", "-5"], "argument --offset: must be a non-negative integer, not '-5'"),
        (["-s", "0"], "argument -s/--sleep-interval: must be a positive number, not '0'"),
        (["-s", "nan"], "argument -s/--sleep-interval: must be a positive number"),
        (["--pid", "0"], "argument --pid: must be a positive integer, not '0'"),
        (["-n", "1", "-c", "1"], "argument -c/--bytes: not allowed with argument -n/--lines"),
        (["-q", "-v"], "argument -v/--verbose: not allowed with argument -q"),
    ],
)
def test_gnu_option_values_are_checked(tmp_path: Path, argv: list[str], message: str) -> None:
    result = tail(*argv, str(tmp_path / "app.log"))
    assert (result.returncode, result.stdout) == (2, b"")
    assert message in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()


def test_several_files_have_headers(tmp_path: Path) -> None:
    a, b, empty = tmp_path / "a", tmp_path / "b", tmp_path / "empty"
    a.write_bytes(b"a1\na2\n")
    b.write_bytes(b"b1\n")
    empty.write_bytes(b"")
    result = tail("-n", "1", str(a), str(empty), str(b))
    assert result.stdout == (f"==> {a} <==\na2\n\n==> {empty} <==\n\n==> {b} <==\nb1\n".encode())
    assert tail("-q", "-n", "1", str(a), str(b)).stdout == b"a2\nb1\n"
    assert tail("-v", "-n", "1", str(a)).stdout == f"==> {a} <==\na2\n".encode()
    assert tail("-n", "1", str(a)).stdout == b"a2\n"


def test_a_missing_file_among_several(tmp_path: Path) -> None:
    a, missing, b = tmp_path / "a", tmp_path / "missing", tmp_path / "b"
    a.write_bytes(b"a1\n")
    b.write_bytes(b"b1\n")
    result = tail(str(a), str(missing), str(b))
    assert (result.returncode, result.stdout) == (
        1,
        f"==> {a} <==\na1\n\n==> {b} <==\nb1\n".encode(),
    )
    assert result.stderr.decode() == (
        f"utf8stream: {missing}: cannot open for reading: No such file or directory\n"
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


def test_checkpoint_belongs_to_one_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"a\n")
    b.write_bytes(b"b\n")
    result = tail("--checkpoint", str(tmp_path / "cp.json"), str(a), str(b))
    assert one_error_line(result, 2) == (
        "utf8stream: --checkpoint records one file: give each FILE its own run and checkpoint"
    )


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


def test_main_from_another_thread(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """An embedding program may call main() from a thread: no signal handling there."""
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(b"one\ntwo\n")
    statuses: list[int] = []
    worker = threading.Thread(
        target=lambda: statuses.append(main(["tail", "--checkpoint", str(cp), str(log)]))
    )
    worker.start()
    worker.join(20)
    assert statuses == [0]
    assert capsysbinary.readouterr().out == b"one\ntwo\n"
    assert read_checkpoint(cp).offset == len(b"one\ntwo\n")
