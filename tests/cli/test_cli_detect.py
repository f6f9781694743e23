"""``utf8stream detect``: the real program in a subprocess, on files and on stdin."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

PROGRAM = [sys.executable, "-m", "utf8stream", "detect"]

RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю. В городе много музеев."
FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ?"


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROGRAM, *args],
        input=stdin.decode("latin-1"),
        capture_output=True,
        text=True,
        encoding="latin-1",
        timeout=30,
        check=False,
    )


def test_each_file_gets_its_encoding_and_the_reason(tmp_path: Path) -> None:
    russian = tmp_path / "ru.txt"
    russian.write_bytes((RUSSIAN * 3).encode("cp1251"))
    marked = tmp_path / "bom.txt"
    marked.write_bytes(b"\xef\xbb\xbfplain")
    result = _run(str(russian), str(marked))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    first, second = result.stdout.splitlines()
    assert first.startswith(f"{russian}: cp1251 (confidence ")
    assert "statistics: cp1251" in first
    assert second == (
        f"{marked}: utf-8 (confidence 1.00, looked at 3 bytes, byte-order mark of 3 bytes): "
        "byte-order mark ef bb bf"
    )


def test_json_records_and_stdin_when_no_file_is_named() -> None:
    data = FRENCH.encode("utf-16-le")
    result = _run("--json", stdin=data)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["file"] == "<stdin>"
    assert record["encoding"] == "utf-16-le"
    assert record["is_text"] is True
    assert record["bom_length"] == 0
    assert 0 < record["looked_at"] <= len(data)
    assert 0 < record["confidence"] <= 1
    assert "utf-16-le" in record["reason"]


def test_a_file_that_is_not_text_is_exit_status_1_and_said(tmp_path: Path) -> None:
    binary = tmp_path / "data.gz"
    binary.write_bytes(gzip.compress(b"some text " * 100, mtime=0))
    text = tmp_path / "ok.txt"
    text.write_bytes(b"ascii only\n")
    result = _run("--json", str(binary), str(text))
    assert result.returncode == 1
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["encoding"], r["is_text"]) for r in records] == [(None, False), ("utf-8", True)]
    assert result.stderr == f"utf8stream: {binary}: not text\n"


def test_an_unreadable_file_is_exit_status_2_and_the_others_are_still_told(
    tmp_path: Path,
) -> None:
    binary = tmp_path / "data.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    missing = tmp_path / "missing.txt"
    result = _run(str(missing), str(binary))
    assert result.returncode == 2
    assert result.stdout.startswith(f"{binary}: not text (")
    assert result.stderr.splitlines() == [
        f"utf8stream: {missing}: No such file or directory",
        f"utf8stream: {binary}: not text",
    ]


def test_max_lookahead_bounds_what_is_looked_at(tmp_path: Path) -> None:
    path = tmp_path / "late.txt"
    path.write_bytes(b"plain words " * 50 + FRENCH.encode("cp1252"))
    short = json.loads(_run("--json", "--max-lookahead", "64", str(path)).stdout)
    assert (short["encoding"], short["looked_at"]) == ("utf-8", 64)
    whole = json.loads(_run("--json", str(path)).stdout)
    assert whole["encoding"] == "cp1252"


def test_a_lookahead_below_four_bytes_is_a_usage_error() -> None:
    result = _run("--max-lookahead", "2")
    assert result.returncode == 2
    assert result.stderr == (
        "utf8stream: detect: argument --max-lookahead: must be a whole number of bytes, 4 or "
        "more, not '2'; try 'utf8stream detect --help'\n"
    )


def test_it_answers_without_waiting_for_the_end_of_a_pipe() -> None:
    process = subprocess.Popen(
        PROGRAM, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(b"\xff\xfeh\x00i\x00")
        process.stdin.flush()
        # The pipe stays open: the answer must come from the bytes already written.
        line = process.stdout.readline()
        assert line == (
            b"<stdin>: utf-16-le (confidence 1.00, looked at 3 bytes, byte-order mark of 2 "
            b"bytes): byte-order mark ff fe\n"
        )
        assert process.wait(timeout=30) == 0
    finally:
        process.stdin.close()
        process.kill()
        process.wait()
