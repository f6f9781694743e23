"""The ``utf8stream`` command line: ``validate`` and ``decode``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from utf8stream.apps.cli import _common as cli
from utf8stream.apps.cli import main

# A small file with known damage; every expected line below was worked out by hand.
#   line 1: a b FF c                      FF at offset 2, column 3
#   line 2: é (C3 A9) E2 82 x             E2 82 at offset 7, column 2
#   line 3: C0 AF ED A0 80 z              five units at offsets 11..15, columns 1..5
#   line 4: 80 F0 9F 98 <end of file>     offsets 18 and 19, columns 1 and 2
DAMAGED = b"ab\xffc\n\xc3\xa9\xe2\x82x\n\xc0\xaf\xed\xa0\x80z\n\x80\xf0\x9f\x98"
DAMAGED_REPORT = [
    "2 1:3 INVALID_BYTE ff",
    "7 2:2 INCOMPLETE_SEQUENCE e2 82",
    "11 3:1 OVERLONG c0",
    "12 3:2 UNEXPECTED_CONTINUATION af",
    "13 3:3 SURROGATE ed",
    "14 3:4 UNEXPECTED_CONTINUATION a0",
    "15 3:5 UNEXPECTED_CONTINUATION 80",
    "18 4:1 UNEXPECTED_CONTINUATION 80",
    "19 4:2 TRUNCATED_AT_END f0 9f 98",
]
VALID = "Příliš žluťoučký kůň\nСъешь же ещё 😀\n".encode() * 50


@pytest.fixture
def damaged_file(tmp_path: Path) -> Path:
    path = tmp_path / "damaged.txt"
    path.write_bytes(DAMAGED)
    return path


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


# -- validate ---------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [1 << 16, 1, 2, 3, 5])
def test_validate_reports_every_unit(
    damaged_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    chunk_size: int,
) -> None:
    # Small read sizes put units and characters across chunk boundaries.
    monkeypatch.setattr(cli, "CHUNK_SIZE", chunk_size)
    assert main(["validate", str(damaged_file)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == DAMAGED_REPORT
    assert err == ""


def test_validate_json(damaged_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--json", str(damaged_file)]) == 1
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == len(DAMAGED_REPORT)
    for record, line in zip(records, DAMAGED_REPORT, strict=True):
        offset, position, kind, hex_bytes = line.split(" ", 3)
        row, column = position.split(":")
        assert record["offset"] == int(offset)
        assert (record["line"], record["column"]) == (int(row), int(column))
        assert record["kind"] == kind
        assert record["bytes"] == hex_bytes
        assert record["file"] == str(damaged_file)


@pytest.mark.parametrize("data", [VALID, b""], ids=["valid", "empty"])
def test_validate_valid_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    path = tmp_path / "ok.txt"
    path.write_bytes(data)
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr() == ("", "")


def test_validate_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, DAMAGED)
    assert main(["validate", "-"]) == 1
    assert capsys.readouterr().out.splitlines() == DAMAGED_REPORT
    _stdin(monkeypatch, DAMAGED)
    assert main(["validate", "--json", "-"]) == 1
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert first["file"] == "<stdin>"
    assert first["offset"] == 2


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-file.txt"
    for argv in (["validate", str(missing)], ["decode", str(missing)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.count("\n") == 1 and err.endswith("\n")
        assert str(missing) in err


def test_unknown_policy_is_a_usage_error(
    damaged_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["decode", "--errors", "no-such-policy", str(damaged_file)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1


# -- decode -----------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [1 << 16, 1, 3])
def test_decode_repairs(
    damaged_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_size: int
) -> None:
    monkeypatch.setattr(cli, "CHUNK_SIZE", chunk_size)
    out = tmp_path / "out.txt"
    assert main(["decode", str(damaged_file), "-o", str(out)]) == 0
    assert out.read_bytes() == DAMAGED.decode("utf-8", "replace").encode("utf-8")


def test_decode_to_stdout_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    _stdin(monkeypatch, DAMAGED)
    assert main(["decode", "-"]) == 0
    assert capsysbinary.readouterr().out == DAMAGED.decode("utf-8", "replace").encode()


@pytest.mark.parametrize("policy", ["ignore", "backslashreplace"])
def test_decode_other_policies(damaged_file: Path, tmp_path: Path, policy: str) -> None:
    out = tmp_path / "out.txt"
    assert main(["decode", "--errors", policy, str(damaged_file), "-o", str(out)]) == 0
    assert out.read_bytes() == DAMAGED.decode("utf-8", policy).encode("utf-8")


@pytest.mark.parametrize("chunk_size", [1 << 16, 1, 2])
def test_decode_surrogateescape_restores_the_original(
    damaged_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_size: int
) -> None:
    monkeypatch.setattr(cli, "CHUNK_SIZE", chunk_size)
    out = tmp_path / "out.bin"
    argv = ["decode", "--errors", "surrogateescape", str(damaged_file), "-o", str(out)]
    assert main(argv) == 0
    assert out.read_bytes() == DAMAGED


def test_decode_strict_stops_at_the_first_error(
    damaged_file: Path, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    out = tmp_path / "out.txt"
    out.write_bytes(b"previous contents")
    assert main(["decode", "--errors", "strict", str(damaged_file), "-o", str(out)]) == 1
    assert out.read_bytes() == b"previous contents"  # a failed run replaces nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.txt", "out.txt"]
    err = capsysbinary.readouterr().err
    assert err.count(b"\n") == 1
    assert err.endswith(
        b": illegal input sequence at position 2 (ff: byte that never occurs in UTF-8)\n"
    )
    # Standard output is a stream: everything before the first bad byte, as iconv.
    assert main(["decode", "--errors", "strict", str(damaged_file)]) == 1
    assert capsysbinary.readouterr().out == b"ab"


# -- large input ------------------------------------------------------------------------

_FILLER = "ñandú 水 😀 abc déjà vu\n"


def _large_input() -> tuple[bytes, list[tuple[int, str, bytes]]]:
    """About 4 MiB of text with damage placed at and across 64 KiB read boundaries.

    Returns the data and the damage as ``(offset, kind, bytes)``, known by construction.
    """
    out = bytearray()
    damage: list[tuple[int, str, bytes]] = []
    filler = _FILLER.encode()

    def pad_to(offset: int) -> None:
        while len(out) + len(filler) <= offset:
            out.extend(filler)
        out.extend(b"x" * (offset - len(out)))

    k = 1 << 16
    pad_to(k - 1)
    damage.append((len(out), "INCOMPLETE_SEQUENCE", b"\xe2\x82"))  # across a boundary
    out.extend(b"\xe2\x82A")
    pad_to(2 * k - 1)
    damage.append((len(out), "INVALID_BYTE", b"\xff"))  # last byte of a read
    out.extend(b"\xff")
    pad_to(3 * k - 2)
    out.extend("😀".encode())  # a valid character across a boundary: no report
    pad_to(4 * k - 1)
    damage.append((len(out), "INCOMPLETE_SEQUENCE", b"\xf0\x9f\x98"))
    out.extend(b"\xf0\x9f\x98B")
    pad_to(5 * k)
    damage.append((len(out), "UNEXPECTED_CONTINUATION", b"\x80"))  # first byte of a read
    out.extend(b"\x80")
    pad_to(6 * k - 1)
    damage.append((len(out), "SURROGATE", b"\xed"))
    damage.append((len(out) + 1, "UNEXPECTED_CONTINUATION", b"\xa0"))
    damage.append((len(out) + 2, "UNEXPECTED_CONTINUATION", b"\x80"))
    out.extend(b"\xed\xa0\x80")
    pad_to(4 * 1024 * 1024 - 2)
    damage.append((len(out), "TRUNCATED_AT_END", b"\xe2\x82"))
    out.extend(b"\xe2\x82")
    return bytes(out), damage


def _location(data: bytes, offset: int) -> tuple[int, int]:
    """Line and column (in characters, a unit counting as one) of a unit, via CPython."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def test_large_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, damage = _large_input()
    assert len(data) == 4 * 1024 * 1024
    path = tmp_path / "large.txt"
    path.write_bytes(data)

    assert main(["validate", str(path)]) == 1
    expected = []
    for offset, kind, unit in damage:
        line, column = _location(data, offset)
        expected.append(f"{offset} {line}:{column} {kind} {unit.hex(' ')}")
    assert capsys.readouterr().out.splitlines() == expected

    repaired = tmp_path / "repaired.txt"
    assert main(["decode", str(path), "-o", str(repaired)]) == 0
    assert repaired.read_bytes() == data.decode("utf-8", "replace").encode("utf-8")

    restored = tmp_path / "restored.bin"
    argv = ["decode", "--errors", "surrogateescape", str(path), "-o", str(restored)]
    assert main(argv) == 0
    assert restored.read_bytes() == data


# -- as a program -----------------------------------------------------------------------


def test_python_dash_m(damaged_file: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "utf8stream", "validate", str(damaged_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == DAMAGED_REPORT
    assert result.stderr == ""


def test_python_dash_m_decode_pipe() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "utf8stream", "decode", "--errors", "surrogateescape", "-"],
        input=DAMAGED,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout == DAMAGED


# -- validate: -q, --max-errors, --variant, unreadable files, closed pipes --------------

PROGRAM = [sys.executable, "-m", "utf8stream"]


def _validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROGRAM, "validate", *args], capture_output=True, text=True, timeout=30
    )


def _validate_pipe_kept_open(args: list[str], data: bytes) -> subprocess.CompletedProcess[str]:
    """``validate`` reading stdin from a pipe that stays open after ``data``: only a
    program that stops reading by itself ends."""
    proc = subprocess.Popen(
        [*PROGRAM, "validate", *args, "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.flush()
        # Not communicate(): it would close stdin.  The report is small, no pipe fills.
        status = proc.wait(timeout=10)
        out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()  # type: ignore[union-attr]
    return subprocess.CompletedProcess(proc.args, status, out.decode(), err.decode())


def test_validate_quiet(damaged_file: Path, tmp_path: Path) -> None:
    result = _validate("-q", str(damaged_file))
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "")
    valid = tmp_path / "valid.txt"
    valid.write_bytes(VALID)
    result = _validate("--quiet", str(valid))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_validate_quiet_stops_at_the_first_unit() -> None:
    result = _validate_pipe_kept_open(["-q"], b"fine so far \xff")
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "")


def test_validate_quiet_unreadable_file_still_said(damaged_file: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    result = _validate("-q", "--json", str(missing), str(damaged_file))
    assert result.returncode == 2  # an unreadable file wins over invalid input
    assert result.stdout == ""
    assert result.stderr == f"utf8stream: {missing}: No such file or directory\n"


def test_validate_max_errors(damaged_file: Path) -> None:
    result = _validate("--max-errors", "3", str(damaged_file), str(damaged_file))
    assert result.returncode == 1
    prefix = f"{damaged_file}: "
    # Per file, like grep -m: each file stops after its own first three units.
    assert result.stdout.splitlines() == [prefix + line for line in DAMAGED_REPORT[:3]] * 2
    assert result.stderr == ""


def test_validate_max_errors_stops_reading() -> None:
    result = _validate_pipe_kept_open(["--max-errors", "2"], b"\xff ok \xfe and then")
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["0 1:1 INVALID_BYTE ff", "5 1:6 INVALID_BYTE fe"]


def test_validate_max_errors_summary(damaged_file: Path) -> None:
    result = _validate("--summary", "--max-errors", "3", str(damaged_file))
    assert result.returncode == 1
    # The third unit (C0 at offset 11) ends at byte 12; nothing after it was read.
    assert result.stdout == (
        f"{damaged_file}: 3 malformed, stopped at byte 12 "
        "(INCOMPLETE_SEQUENCE 1, INVALID_BYTE 1, OVERLONG 1)\n"
    )
    result = _validate("--summary", "--json", "--max-errors", "3", str(damaged_file))
    assert json.loads(result.stdout) == {
        "file": str(damaged_file),
        "summary": True,
        "stopped_at": 12,
        "malformed": 3,
        "by_kind": {"INVALID_BYTE": 1, "INCOMPLETE_SEQUENCE": 1, "OVERLONG": 1},
    }


# A surrogate pair for U+10400 in six bytes, Java's two-byte NUL, a raw NUL.
_PAIR = b"\xed\xa0\x81\xed\xb0\x80"


@pytest.mark.parametrize(
    ("variant", "data", "report"),
    [
        ("utf-8", b"a" + _PAIR, ["1 1:2 SURROGATE ed", "2 1:3 UNEXPECTED_CONTINUATION a0"]),
        ("cesu-8", b"a" + _PAIR + b"\xc0\x80b", []),
        ("mutf-8", b"a" + _PAIR + b"\xc0\x80b", []),
        ("mutf-8", b"a\x00b", ["1 1:2 INVALID_BYTE 00"]),
        ("utf-8z", b"a\xc0\x80b", []),
        ("utf-8", b"a\xc0\x80b", ["1 1:2 OVERLONG c0", "2 1:3 UNEXPECTED_CONTINUATION 80"]),
        # WTF-8: a lone half is a character; a pair in six bytes is malformed.
        ("wtf-8", b"a\xed\xa0\x81b", []),
        ("wtf-8", b"a" + _PAIR, ["1 1:2 SURROGATE ed a0 81", "4 1:3 SURROGATE ed b0 80"]),
    ],
)
def test_validate_variant(tmp_path: Path, variant: str, data: bytes, report: list[str]) -> None:
    path = tmp_path / "in.bin"
    path.write_bytes(data)
    result = _validate("--variant", variant, str(path))
    assert result.stdout.splitlines()[: len(report)] == report
    assert result.returncode == (1 if report else 0)
    assert result.stderr == ""


@pytest.mark.parametrize("chunk_size", [1 << 16, 1, 2, 4, 5])
@pytest.mark.parametrize("variant", ["cesu-8", "mutf-8"])
def test_validate_variant_columns_count_a_pair_as_one_character(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    chunk_size: int,
    variant: str,
) -> None:
    # Line 1: x, U+10400 (six bytes), FF -> FF in column 3.  Line 2: two pairs, then FE
    # in column 3 again; the pairs straddle reads for the small chunk sizes.
    monkeypatch.setattr(cli, "CHUNK_SIZE", chunk_size)
    path = tmp_path / "in.bin"
    path.write_bytes(b"x" + _PAIR + b"\xff\n" + _PAIR * 2 + b"\xfe")
    assert main(["validate", "--variant", variant, str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "7 1:3 INVALID_BYTE ff",
        "21 2:3 INVALID_BYTE fe",
    ]


def test_validate_unknown_variant_is_a_usage_error(damaged_file: Path) -> None:
    result = _validate("--variant", "utf-7", str(damaged_file))
    assert result.returncode == 2
    assert result.stdout == ""
    assert "argument --variant: invalid choice: 'utf-7'" in result.stderr


def test_validate_json_unreadable_file(damaged_file: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    result = _validate("--json", str(missing), str(tmp_path), str(damaged_file))
    assert result.returncode == 2
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[:2] == [
        {"file": str(missing), "error": "No such file or directory", "errno": 2},
        {"file": str(tmp_path), "error": "Is a directory", "errno": 21},
    ]
    assert [r["offset"] for r in records[2:]] == [int(x.split()[0]) for x in DAMAGED_REPORT]
    assert result.stderr == (
        f"utf8stream: {missing}: No such file or directory\n"
        f"utf8stream: {tmp_path}: Is a directory\n"
    )


def _validate_into_head(args: list[str], stdin: bytes | None = None) -> tuple[int, str, bytes]:
    """``utf8stream validate ARGS | head -1``: two processes, a real pipe, no shell.

    With ``stdin``, the program's stdin is a pipe written only after head has exited.
    Returns validate's exit status and stderr, and what head printed.
    """
    producer = subprocess.Popen(
        [*PROGRAM, "validate", *args],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert producer.stdout is not None and producer.stderr is not None
    head = subprocess.Popen(["head", "-1"], stdin=producer.stdout, stdout=subprocess.PIPE)
    producer.stdout.close()  # head holds the only reading end
    head_out, _ = head.communicate(timeout=30)
    if stdin is not None:
        assert producer.stdin is not None
        producer.stdin.write(stdin)
        producer.stdin.close()
    err = producer.stderr.read().decode()
    producer.stderr.close()
    return producer.wait(timeout=30), err, head_out


def test_validate_into_head_invalid_is_not_success(tmp_path: Path) -> None:
    path = tmp_path / "many-errors.txt"
    path.write_bytes(b"\xff\n" * 100_000)  # far more report than a pipe holds
    status, err, head_out = _validate_into_head([str(path)])
    assert head_out == b"0 1:1 INVALID_BYTE ff\n"
    assert (status, err) == (1, "")  # invalid input was seen; no traceback, no warning


def test_validate_into_head_unfinished_is_not_valid(tmp_path: Path) -> None:
    # The first summary fits head; by the time the rest of the input (stdin) is read,
    # nobody reads the report: the input is valid so far, but not all was checked.
    path = tmp_path / "valid.txt"
    path.write_bytes(VALID)
    status, err, head_out = _validate_into_head(["--summary", str(path), "-"], stdin=VALID)
    assert head_out.startswith(f"{path}: valid;".encode())
    assert (status, err) == (141, "")


def run(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes]:
    code = main(list(argv))
    return code, capsysbinary.readouterr().out


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
