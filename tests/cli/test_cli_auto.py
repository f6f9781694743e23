"""``utf8stream transcode -f auto`` and ``decode -f auto`` as a user runs them: the text of
the encoding detected, ``-v`` says which, binary input exits 1 with no output file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

COMMAND = [sys.executable, "-m", "utf8stream"]
FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ?\n" * 20
BINARY = bytes(range(256)) * 16


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*COMMAND, *args], input=stdin, capture_output=True, timeout=30, check=False
    )


def test_transcode_auto_file_and_stdin(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(FRENCH.encode("cp1252"))
    done = run("transcode", "-f", "auto", "-v", str(src), str(tmp_path / "out.txt"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text("utf-8") == FRENCH
    assert b"detected cp1252" in done.stderr
    # From a pipe, the bytes the detector read are transcoded too.
    piped = run("transcode", "-f", "auto", "-t", "utf-16-le", stdin=FRENCH.encode("cp1252"))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == FRENCH.encode("utf-16-le")


def test_transcode_auto_refuses_binary_input(tmp_path: Path) -> None:
    src = tmp_path / "in.dat"
    src.write_bytes(BINARY)
    done = run("transcode", "-f", "auto", str(src), str(tmp_path / "out"))
    assert done.returncode == 1
    assert b"is not text" in done.stderr and b"Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.dat"]
    piped = run("transcode", "-f", "auto", stdin=BINARY)
    assert piped.returncode == 1 and piped.stdout == b""


def test_decode_auto(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(FRENCH.encode("cp1252"))
    done = run("decode", "-f", "auto", "-v", str(src))
    assert done.returncode == 0, done.stderr
    assert done.stdout == FRENCH.encode()
    assert b"detected cp1252" in done.stderr
    (tmp_path / "in.dat").write_bytes(BINARY)
    refused = run("decode", "-f", "auto", str(tmp_path / "in.dat"), "-o", str(tmp_path / "o"))
    assert refused.returncode == 1
    assert b"is not text" in refused.stderr and b"Traceback" not in refused.stderr
    assert not (tmp_path / "o").exists()
    other = run("decode", "-f", "latin-1", str(src))
    assert other.returncode == 2 and b"see transcode" in other.stderr


#: Detected as UTF-8 on its first bytes; a cp1252 "é" after them.
LATE_CP1252 = FRENCH.encode()[:400] + b"\ncaf\xe9 au lait\n"
LATE_AT = LATE_CP1252.index(b"\xe9")
DOUBT = f"byte {LATE_AT} is not valid utf-8, the encoding detected;"


def test_transcode_auto_tells_a_doubt_on_stderr_and_keeps_the_choice() -> None:
    piped = run("transcode", "-f", "auto", "--errors", "replace", stdin=LATE_CP1252)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == LATE_CP1252.decode("utf-8", "replace").encode()
    assert f"utf8stream: -: {DOUBT} cp1252 would decode it".encode() in piped.stderr


def test_decode_auto_tells_a_doubt_on_stderr(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(LATE_CP1252)
    done = run("decode", "-f", "auto", str(src))
    assert done.returncode == 0, done.stderr
    assert done.stdout == LATE_CP1252.decode("utf-8", "replace").encode()
    assert DOUBT.encode() in done.stderr and b"cp1252 would decode it" in done.stderr
