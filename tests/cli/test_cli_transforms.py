"""``--fix-mojibake`` and ``--normalize`` on ``decode``, ``transcode`` and ``tail``, end
to end: real files, real subprocesses, and ``tail --checkpoint`` stopped and killed
between runs printing what one run prints."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from _helpers import append, line_within

from utf8stream import CheckpointError
from utf8stream.follower import read_checkpoint

UTF8STREAM = str(Path(sys.executable).with_name("utf8stream"))
#: Correct text, and what it looks like once its UTF-8 was read as cp1252.
GOOD = ["Grüße aus Köln", "déjà vu, naïve café", "plain ASCII", "Ελληνικά — “quoted”"]
MOJIBAKE = [line.encode().decode("cp1252", "strict") for line in GOOD[:2]] + GOOD[2:3]
#: Lines with decomposed characters (NFC composes them) and one already composed.
DECOMPOSED = ["cafe\u0301", "A\u030a ring", "e\u0301te\u0301 été"]


def utf8stream(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [UTF8STREAM, *argv], input=stdin, capture_output=True, timeout=60, check=False
    )


def lines_of(lines: list[str], newline: str = "\n") -> bytes:
    return "".join(line + newline for line in lines).encode()


def nfc(lines: list[str]) -> list[str]:
    return [unicodedata.normalize("NFC", line) for line in lines]


def test_decode_repairs_then_normalizes_a_file_and_stdin(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(lines_of(MOJIBAKE + DECOMPOSED))
    expected = lines_of([unicodedata.normalize("NFD", x) for x in GOOD[:3] + DECOMPOSED])
    result = utf8stream("decode", "--fix-mojibake", "--normalize", "nfd", str(src))
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == expected
    out = tmp_path / "out.txt"
    result = utf8stream(
        "decode", "--normalize", "NFC", "-o", str(out), "-", stdin=src.read_bytes()
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == lines_of(MOJIBAKE + nfc(DECOMPOSED))


def test_decode_strict_writes_the_text_before_the_error_transformed(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes("cafe\u0301".encode() + b"\xff rest")
    result = utf8stream("decode", "--errors", "strict", "--normalize", "NFC", str(src))
    assert result.returncode == 1
    assert result.stdout == "café".encode()  # the carried "e" and its accent, composed
    assert b"illegal input sequence at position 6" in result.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_transcode_repairs_and_normalizes_into_utf16(tmp_path: Path, jobs: str) -> None:
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    # Large enough that -j 2 would split it, were it not transformed.
    src.write_bytes(lines_of(MOJIBAKE + DECOMPOSED) * 2000)
    result = utf8stream(
        "transcode", "-t", "utf-16-le", "-j", jobs, "--fix-mojibake", "--normalize", "NFC",
        str(src), str(out),
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (0, b"")
    expected = "".join(x + "\n" for x in nfc(GOOD[:3] + DECOMPOSED)) * 2000
    assert out.read_bytes() == expected.encode("utf-16-le")


def test_a_bad_form_or_dask_with_a_transform_is_a_usage_error(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"x\n")
    result = utf8stream("decode", "--normalize", "NFX", str(src))
    assert result.returncode == 2 and b"--normalize" in result.stderr
    result = utf8stream(
        "transcode", "--dask", "local:1", "--normalize", "NFC", str(src), str(tmp_path / "o")
    )
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        "utf8stream: --fix-mojibake and --normalize are not available with --dask"
    ]


def test_tail_transforms_each_line_of_a_file_and_of_stdin(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(lines_of(MOJIBAKE + DECOMPOSED, "\r\n"))
    expected = lines_of(nfc(GOOD[1:3] + DECOMPOSED), "\r\n")
    result = utf8stream("tail", "-n", "5", "--fix-mojibake", "--normalize", "NFC", str(log))
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == expected  # the "\r" of each CRLF stays, as without transforms
    result = utf8stream(
        "tail", "-n", "5", "--fix-mojibake", "--normalize", "NFC", "-", stdin=log.read_bytes()
    )
    assert (result.returncode, result.stdout) == (0, expected)


def _wait_for_checkpoint_at(cp: Path, offset: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if read_checkpoint(cp).offset == offset:
                return
        except (OSError, CheckpointError):
            pass  # not written yet
        time.sleep(0.01)
    pytest.fail(f"the checkpoint never reached offset {offset}")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["TERM", "KILL"])
def test_tail_checkpoint_stopped_and_restarted_prints_one_run(
    tmp_path: Path, stop: signal.Signals
) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    first, second = MOJIBAKE + DECOMPOSED, GOOD[:3][::-1] + DECOMPOSED[::-1]
    log.write_bytes(lines_of(first))
    command = [
        *(UTF8STREAM, "tail", "-F", "-n", "+1", "-s", "0.01", "--checkpoint", str(cp)),
        *("--fix-mojibake", "--normalize", "NFC", str(log)),
    ]
    printed = b""
    for batch in (first, second):
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert proc.stdout is not None
            if batch is second:
                append(log, lines_of(batch))
            for _ in batch:
                printed += line_within(proc.stdout, 30)
            # Every line printed is in the checkpoint (saved after each write): a kill
            # now loses nothing and repeats nothing.
            _wait_for_checkpoint_at(cp, log.stat().st_size)
        finally:
            proc.send_signal(stop)
            rest, err = proc.communicate(timeout=30)
        printed += rest  # a line repeated would be here
        assert proc.returncode == (143 if stop == signal.SIGTERM else -9)
        assert err == b""
    assert printed == lines_of(nfc(GOOD[:3] + DECOMPOSED + second))
    assert os.path.exists(cp)


def test_tail_of_a_pattern_with_a_store_transforms_each_file_across_restarts(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.log").write_bytes(lines_of(MOJIBAKE[:1]))
    (tmp_path / "b.log").write_bytes(lines_of(DECOMPOSED[:1]))
    argv = ["tail", "-F", "-n", "+1", "-s", "0.01", "--checkpoint", "state.db"]
    argv += ["--fix-mojibake", "--normalize", "NFC", "*.log"]

    def run_until(lines: int) -> bytes:
        proc = subprocess.Popen(
            [UTF8STREAM, *argv], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            assert proc.stdout is not None
            got = b"".join(line_within(proc.stdout, 30) for _ in range(lines))
        finally:
            proc.send_signal(signal.SIGTERM)
            rest, err = proc.communicate(timeout=30)
        assert (proc.returncode, rest, err) == (143, b"", b"")
        return got

    first = run_until(5)
    assert first == b"==> a.log <==\n" + lines_of(GOOD[:1]) + b"\n==> b.log <==\n" + lines_of(
        nfc(DECOMPOSED[:1])
    )
    append(tmp_path / "b.log", lines_of(MOJIBAKE[1:2] + DECOMPOSED[1:2]))
    assert run_until(3) == b"==> b.log <==\n" + lines_of(nfc(GOOD[1:2] + DECOMPOSED[1:2]))
