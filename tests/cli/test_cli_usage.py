"""Usage errors as one line, and the short forms GNU users type (``tail -3``, ``tail -z``).

The real program in a subprocess; where GNU tail is on the machine (coreutils), its
output on the same input is the expectation.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = [sys.executable, "-m", "utf8stream"]
GNU_TAIL = shutil.which("tail")


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*PROGRAM, *args], input=stdin, capture_output=True, timeout=30, check=False
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["tail", "--encoding", "nope"],
            "utf8stream: tail: argument --encoding: unknown encoding 'nope'; "
            "try 'utf8stream tail --help'",
        ),
        (
            ["tail", "-n", "x"],
            "utf8stream: tail: argument -n/--lines: must be N (the last N) or +N (from the "
            "Nth on), with an optional multiplier suffix (b, K, kB, KiB, M, MB, MiB, G, ...), "
            "not 'x'; try 'utf8stream tail --help'",
        ),
        (
            ["validate", "--variant", "nope"],
            "utf8stream: validate: argument --variant: invalid choice: 'nope' (choose from "
            "'utf-8', 'wtf-8', 'cesu-8', 'mutf-8', 'utf-8z'); try 'utf8stream validate --help'",
        ),
        (
            ["transcode", "--bom", "never"],
            "utf8stream: transcode: argument --bom: invalid choice: 'never' (choose from "
            "'keep', 'strip', 'add', 'detect'); try 'utf8stream transcode --help'",
        ),
        (
            ["tail", "--bogus"],
            "utf8stream: tail: unrecognized arguments: --bogus; try 'utf8stream tail --help'",
        ),
        (
            ["decode", "--bogus", "--also"],
            "utf8stream: decode: unrecognized arguments: --bogus --also; "
            "try 'utf8stream decode --help'",
        ),
        (
            ["frobnicate"],
            "utf8stream: argument COMMAND: invalid choice: 'frobnicate' (choose from "
            "'validate', 'decode', 'transcode', 'tail', 'detect'); try 'utf8stream --help'",
        ),
        (
            [],
            "utf8stream: the following arguments are required: COMMAND; try 'utf8stream --help'",
        ),
    ],
)
def test_a_bad_option_value_is_one_line_not_the_usage_block(
    tmp_path: Path, args: list[str], line: str
) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"ok\n")
    result = _run(*args, *([str(path)] if args else []))
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr.decode() == line + "\n"


NUMBERS = b"".join(b"%d\n" % i for i in range(1, 21))


# ``gnu``: whether GNU tail takes the same arguments (its -N only as the one option).
@pytest.mark.parametrize(
    ("args", "expected", "gnu"),
    [
        (["-3"], b"18\n19\n20\n", True),
        (["-12"], b"".join(b"%d\n" % i for i in range(9, 21)), True),
        (["-n", "-2"], b"19\n20\n", True),  # the value of -n keeps its own meaning
        (["-fn", "-2"], b"19\n20\n", True),  # in a cluster too (a pipe: read to its end)
        (["-v", "-1"], b"==> standard input <==\n20\n", False),
    ],
)
def test_minus_n_is_n_lines_as_in_gnu_tail(args: list[str], expected: bytes, gnu: bool) -> None:
    result = _run("tail", *args, stdin=NUMBERS)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected, b"")
    if gnu and GNU_TAIL is not None:  # coreutils; the expectation stands without it
        gnu = subprocess.run([GNU_TAIL, *args], input=NUMBERS, capture_output=True, check=True)
        assert gnu.stdout == expected


def test_minus_n_after_double_dash_is_a_file_name(tmp_path: Path) -> None:
    (tmp_path / "-3").write_bytes(NUMBERS)
    result = subprocess.run(
        [*PROGRAM, "tail", "-n", "1", "--", "-3"],
        capture_output=True,
        cwd=tmp_path,
        timeout=30,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"20\n", b"")


def test_minus_n_with_n_given_twice_is_refused() -> None:
    result = _run("tail", "-3", "-c", "5", stdin=NUMBERS)
    assert result.returncode == 2
    assert result.stderr.startswith(b"utf8stream: tail: argument -c/--bytes: not allowed")


# NUL-terminated records holding newlines, the last one unterminated.
RECORDS = b"one\0two\nlines\0three\0\xff four"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-z", "-n", "2"], b"three\0\xef\xbf\xbd four"),
        (["-z", "-n", "+2"], b"two\nlines\0three\0\xef\xbf\xbd four"),
        (["-z", "-c", "5"], b" four"),
        (["--zero-terminated", "-n2"], b"three\0\xef\xbf\xbd four"),
    ],
)
@pytest.mark.parametrize("source", ["file", "pipe"])
def test_zero_terminated_lines(
    tmp_path: Path, args: list[str], expected: bytes, source: str
) -> None:
    path = tmp_path / "records"
    path.write_bytes(RECORDS)
    if source == "file":
        result = _run("tail", *args, str(path))
    else:
        result = _run("tail", *args, stdin=RECORDS)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected, b"")
    if GNU_TAIL is not None:  # GNU tail agrees, but for the U+FFFD of the invalid byte
        gnu = subprocess.run([GNU_TAIL, *args, str(path)], capture_output=True, check=True)
        assert gnu.stdout.replace(b"\xff", "\ufffd".encode()) == expected


def test_zero_terminated_lines_with_several_files_keep_newline_headers(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"x\0y\0")
    b.write_bytes(b"z\0")
    result = _run("tail", "-z", "-n", "1", str(a), str(b))
    assert result.returncode == 0
    assert result.stdout == f"==> {a} <==\ny\0\n==> {b} <==\nz\0".encode()
    if GNU_TAIL is not None:
        gnu = subprocess.run([GNU_TAIL, "-z", "-n", "1", str(a), str(b)], capture_output=True)
        assert gnu.stdout == result.stdout


def test_zero_terminated_lines_and_multiline_events_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "records"
    path.write_bytes(RECORDS)
    result = _run("tail", "-z", "--multiline", "python", str(path))
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr == (
        b"utf8stream: -z and --multiline* cannot be combined: events join lines with \\n\n"
    )
