"""``utf8stream tail``: last lines, checkpoints across runs, following a growing file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from utf8stream.apps.cli import main


def run(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes]:
    code = main(list(argv))
    return code, capsysbinary.readouterr().out


def test_last_lines_like_tail_n(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\ntwo\nthr\xffee\nfour")
    assert run(capsysbinary, "tail", "-n", "2", str(log)) == (0, "thr\ufffdee\nfour\n".encode())
    assert run(capsysbinary, "tail", str(log))[1].count(b"\n") == 4


def test_checkpoint_runs_print_each_complete_line_once(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(b"a\nb\npartial")
    assert run(capsysbinary, "tail", "-n", "100", "--checkpoint", str(cp), str(log)) == (
        0,
        b"a\nb\npartial\n",
    )
    with open(log, "ab") as f:
        f.write(b" done\nc\n")
    # The unfinished line is shown again, now whole; nothing else repeats.
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
        with open(log, "ab") as f:
            f.write("zwei €\n".encode())
        assert proc.stdout.readline() == "zwei €\n".encode()
        os.rename(log, tmp_path / "app.log.1")
        time.sleep(0.05)
        log.write_bytes(b"rotated\n")
        assert proc.stdout.readline() == b"rotated\n"
    finally:
        proc.terminate()
        proc.wait(5)


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tail", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err


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
    assert run(capsysbinary, "transcode", "-t", "utf-16-le", str(src), str(dst))[0] == 0
    assert dst.read_bytes() == "Grüße ÿ\ufffd".encode("utf-16-le")
    assert run(capsysbinary, "transcode", "--errors", "strict", str(src), str(dst))[0] == 1
    assert run(capsysbinary, "transcode", "-f", "nope", str(src), str(dst))[0] == 2
    assert run(capsysbinary, "transcode", "-f", "latin-1", "-t", "utf-8", str(src), "-") == (
        0,
        src.read_bytes().decode("latin-1").encode("utf-8"),
    )
