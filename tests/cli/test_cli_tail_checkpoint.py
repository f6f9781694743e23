"""``utf8stream tail --checkpoint``: each line printed once across runs, a damaged or
foreign checkpoint refused in one line, the checkpoint saved on every stop, rotations
made while the command was stopped."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from _helpers import append
from _tail_cli import (
    READ_DEADLINE,
    UTF8STREAM,
    numbered,
    one_error_line,
    read_lines,
    run,
    start_following,
    tail,
)

from utf8stream.apps.cli import main
from utf8stream.follower import read_checkpoint


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


COMPRESSORS = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    # No compressor for these in the standard library: a frame header is what is looked
    # at, followed here by bytes that would print as text if the file were read.
    "zstd": lambda data: b"\x28\xb5\x2f\xfd" + data,
    "lz4": lambda data: b"\x04\x22\x4d\x18" + data,
}


# gzip (a real compressor) and lz4 (a header alone) by default; each compressor's file is
# recognised in test_compressed_rotations.py, and the others' runs here are the soak's.
@pytest.mark.parametrize(
    "method",
    [m if m in ("gzip", "lz4") else pytest.param(m, marks=pytest.mark.soak) for m in COMPRESSORS],
)
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


def test_checkpoint_belongs_to_one_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"a\n")
    b.write_bytes(b"b\n")
    result = tail("--checkpoint", str(tmp_path / "cp.json"), str(a), str(b))
    assert one_error_line(result, 2) == (
        "utf8stream: --checkpoint records one file: give each FILE its own run and checkpoint"
    )


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
