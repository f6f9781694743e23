"""``utf8stream tail -`` (or no FILE): standard input, as GNU tail reads it."""

from __future__ import annotations

import codecs
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import line_within

UTF8STREAM = str(Path(sys.executable).with_name("utf8stream"))
GNU_TAIL = shutil.which("tail")


def tail_of(data: bytes, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    """``utf8stream tail ARGV`` with ``data`` on a pipe as standard input."""
    return subprocess.run(
        [UTF8STREAM, "tail", *argv], input=data, capture_output=True, timeout=timeout, check=False
    )


TEXT = "".join(f"line {i} héllo wörld 😀\r\n" if i % 7 == 0 else f"{i}\n" for i in range(5000))


PIPE_ARGVS = [
    [],
    ["-"],
    ["-n", "1"],
    ["-n", "3"],
    ["-n", "0"],
    ["-n", "+4990"],
    ["-n", "+1"],
    ["-n", "1K"],
    ["-c", "40"],
    ["-c", "+40000"],
    ["-c", "2K"],
]
#: Where the last text line loses its newline, only the lines counted change: byte counts,
#: no lines and ``-`` (as no FILE) see it in the soak step.
_NEWLINE_CHANGES_NOTHING = (["-"], ["-n", "0"], ["-c", "40"], ["-c", "+40000"], ["-c", "2K"])


@pytest.mark.parametrize(
    ("argv", "last_newline"),
    [
        *((argv, True) for argv in PIPE_ARGVS),
        *(
            pytest.param(argv, False, marks=pytest.mark.soak)
            if argv in _NEWLINE_CHANGES_NOTHING
            else (argv, False)
            for argv in PIPE_ARGVS
        ),
    ],
)
def test_a_pipe_shows_what_gnu_tail_shows(argv: list[str], last_newline: bool) -> None:
    data = (TEXT if last_newline else TEXT.rstrip("\n")).encode() + b"\xff\xc3\n\xe2\x82"
    expected = gnu_rule(data, argv)
    if GNU_TAIL is not None:  # the rule below is GNU tail's: check it against the real one
        gnu = subprocess.run([GNU_TAIL, *argv], input=data, capture_output=True, check=True)
        assert gnu.stdout == expected
    # GNU tail copies bytes; ours decodes, and with surrogateescape writes back the very
    # bytes of a malformed unit (a stray byte, a character cut by -c).
    result = tail_of(data, *argv, "--errors", "surrogateescape")
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == expected


_MULTIPLIERS = {"": 1, "K": 1024, "kB": 1000}


def gnu_rule(data: bytes, argv: list[str]) -> bytes:
    """GNU tail's documented rule for the arguments used above: the last N lines (or
    bytes; N 10 by default), or from the Nth on with ``+N``; a line is what ends in
    ``\n``, or the rest."""
    option, value = argv if len(argv) == 2 else ("-n", "10")
    number = value.lstrip("+")
    digits = number.rstrip("KkB")
    count = int(digits) * _MULTIPLIERS[number[len(digits) :]]
    if option == "-c":
        pieces = [bytes([b]) for b in data]
    else:
        pieces = [line + b"\n" for line in data.split(b"\n")]
        pieces[-1] = pieces[-1][:-1]  # what follows the last newline has none
    if not pieces[-1]:
        pieces.pop()
    if value.startswith("+"):
        return b"".join(pieces[max(count - 1, 0) :])
    return b"".join(pieces[max(len(pieces) - count, 0) :]) if count else b""


# One line and a few: the same search; the one line is the soak's.
@pytest.mark.parametrize("count", [pytest.param("1", marks=pytest.mark.soak), "7", "2000"])
def test_the_last_lines_of_a_long_input_with_long_lines_and_damage(count: str) -> None:
    # A megabyte and more, many reads: the last lines found in the bytes as they pass,
    # lines of every length (far over --max-line-bytes, split and shown whole), malformed
    # bytes and cut characters, no newline at the end.
    rng = random.Random(20261126)
    parts = []
    for i in range(6000):
        body = ("ü€😀x"[i % 4] * rng.choice([0, 1, 5, 40, 300, 3000])).encode()
        if i % 11 == 0:
            body = body[: len(body) // 2 + 1] + b"\xff\xc3"
        parts.append(body + b"\n")
    data = b"".join(parts) + "tail without a newline €".encode()[:-1]
    assert len(data) > 4 << 20
    argv = ["-n", count]
    result = tail_of(data, *argv, "--max-line-bytes", "100", "--errors", "surrogateescape")
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == gnu_rule(data, argv)
    replaced = tail_of(data, *argv, "--max-line-bytes", "100")
    expected = gnu_rule(data, argv).decode("utf-8", "replace").encode()
    assert replaced.stdout == expected


def test_a_cut_character_is_a_malformed_unit() -> None:
    data = "héllo\nworld\n".encode()
    assert tail_of(data, "-c", "+3").stdout == "\ufffdllo\nworld\n".encode()
    assert tail_of(data, "-c", "11").stdout == "\ufffdllo\nworld\n".encode()
    assert tail_of(data, "-c", "+3", "--errors", "surrogateescape").stdout == data[2:]


def test_much_more_input_than_it_keeps() -> None:
    # 4 MB through the pipe (64 reads of READ_SIZE, many pipe buffers), the last three
    # lines kept as they pass.
    line = b"x" * 99 + b"\n"
    data = line * 40_000 + b"end 1\nend 2\nend 3\n"
    assert tail_of(data, "-n", "3").stdout == b"end 1\nend 2\nend 3\n"
    assert tail_of(data, "-c", "6").stdout == b"end 3\n"
    # From byte or line N on, N far past the first reads.
    assert tail_of(data, "-c", f"+{len(data) - 17}").stdout == b"end 1\nend 2\nend 3\n"
    assert tail_of(data, "-n", "+40002").stdout == b"end 2\nend 3\n"


def test_encodings_and_line_options() -> None:
    utf16 = codecs.BOM_UTF16_LE + "a\r\nb\r\nçé\r\n".encode("utf-16-le")
    assert tail_of(utf16, "-n", "2", "--encoding", "auto").stdout == "b\r\nçé\r\n".encode()
    assert tail_of(utf16, "-n", "1", "--encoding", "utf-16").stdout == "çé\r\n".encode()
    cp1252 = "café\n€ euro\n".encode("cp1252")
    assert tail_of(cp1252, "-n", "1", "--encoding", "auto").stdout == "€ euro\n".encode()
    long_line = b"y" * 100 + b"\nshort\n"
    split = tail_of(long_line, "-n", "2", "--max-line-bytes", "40")
    assert split.stdout == b"y" * 100 + b"\nshort\n"  # the pieces of a split line: one
    truncated = tail_of(
        long_line, "-n", "2", "--max-line-bytes", "40", "--on-overlong", "truncate"
    )
    assert truncated.stdout == b"y" * 40 + b"\nshort\n"


def test_multiline_events() -> None:
    data = b"start 1\n  more\nstart 2\n  more 2\n  more 3\nstart 3\n"
    result = tail_of(data, "-n", "2", "--multiline-start", "^start")
    assert result.stdout == b"start 2\n  more 2\n  more 3\nstart 3\n"
    # --max-event-bytes: "start 2\n  more 2\n" (17 bytes) is cut before "  more 3", whose
    # piece is an event of its own in the count.
    result = tail_of(data, "-n", "2", "--multiline-start", "^start", "--max-event-bytes", "20")
    assert result.stdout == b"  more 3\nstart 3\n"
    # An overlong line read in pieces stays one line of its event, printed unchanged.
    data = b"start " + b"x" * 30 + b"\n  more\nstart " + b"y" * 30 + b"\n"
    for count in ("+1", "2"):
        argv = ("-n", count, "--max-line-bytes", "8", "--multiline-start", "^start")
        assert tail_of(data, *argv).stdout == data
    assert tail_of(data, "-n", "1", *argv[2:]).stdout == data[data.index(b"start y") :]


def test_headers_and_order_with_files(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"f1\nf2\n")
    result = tail_of(b"s1\ns2\n", "-n", "1", str(log), "-")
    assert result.stdout == f"==> {log} <==\nf2\n\n==> standard input <==\ns2\n".encode()
    result = tail_of(b"", "-n", "1", "-", str(log))
    assert result.stdout == f"==> standard input <==\n\n==> {log} <==\nf2\n".encode()


def test_follow_ends_at_the_end_of_a_pipe_and_refuses_to_follow_it_by_name() -> None:
    result = tail_of(b"a\nb\n", "-f", "-n", "1")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"b\n", b"")
    result = tail_of(b"a\nb\n", "-F", "-")
    assert (result.returncode, result.stdout) == (1, b"")
    assert result.stderr == b"utf8stream: cannot follow '-' by name\n"
    result = tail_of(b"a\n", "--checkpoint", "cp.json", "-")
    assert result.returncode == 2
    assert b"standard input cannot be resumed" in result.stderr
    assert b"Traceback" not in result.stderr


def test_standard_input_that_is_a_file_is_followed(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\ntwo\n")
    with open(log, "rb") as stdin:
        assert subprocess.run(
            [UTF8STREAM, "tail", "-n", "1"], stdin=stdin, capture_output=True, check=True
        ).stdout == (b"two\n")
    with open(log, "rb") as stdin:
        proc = subprocess.Popen(
            [UTF8STREAM, "tail", "-f", "-n", "1", "--interval", "0.05"],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    try:
        assert proc.stdout is not None
        assert line_within(proc.stdout, 30) == b"two\n"
        with open(log, "ab") as f:
            f.write(b"three\n")
        assert line_within(proc.stdout, 30) == b"three\n"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert (proc.returncode, err) == (143, b"")


def test_shown_as_it_comes_and_interrupted_while_the_pipe_is_open() -> None:
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [UTF8STREAM, "tail", "-n", "+2"],
        stdin=read_end,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(read_end)
    try:
        os.write(write_end, b"a\nb\n")
        assert proc.stdout is not None
        assert line_within(proc.stdout, 30) == b"b\n"  # before the end of the input
        proc.send_signal(signal.SIGINT)  # while it waits for more
        out, err = proc.communicate(timeout=10)
    finally:
        os.close(write_end)
        proc.kill()
    assert (proc.returncode, out, err) == (130, b"", b"")


def test_a_closed_standard_input_is_an_error_not_a_traceback() -> None:
    result = subprocess.run(
        [UTF8STREAM, "tail", "-n", "1"], stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    result = subprocess.run(
        f"exec 0<&-; {UTF8STREAM} tail -n 1", shell=True, capture_output=True, check=False
    )
    assert result.returncode == 1
    assert result.stderr.decode().startswith("utf8stream: standard input: error reading: ")
    assert "Traceback" not in result.stderr.decode()


def _long_lines_text(seed: int) -> bytes:
    """Short lines and lines far longer than the window kept of a pipe, some of them
    without their newline at the end."""
    rng = random.Random(seed)
    lines = []
    for i in range(40):
        size = rng.choice([3, 30, 5000, 300_000])
        lines.append(f"{i}:" + "é" * (size // 2))
    return "\n".join(lines).encode() + rng.choice([b"\n", b""])


# A second seed of the same runs goes to the soak step (each run writes a megabyte).
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.soak)])
@pytest.mark.parametrize(
    "argv",
    [
        ["-n", "3"],
        ["-n", "7", "--max-line-bytes", "1000", "--on-overlong", "truncate"],
        ["-n", "7", "--max-line-bytes", "1000", "--on-overlong", "skip"],
        ["-n", "2", "--max-line-bytes", "64"],
        [
            "-n",
            "5",
            "--encoding",
            "utf-16-le",
            "--max-line-bytes",
            "999",
            "--on-overlong",
            "truncate",
        ],
    ],
)
def test_the_last_lines_of_a_pipe_are_those_of_the_same_file(
    tmp_path: Path, seed: int, argv: list[str]
) -> None:
    """One search for the last lines: a pipe shows what the same bytes in a FILE show
    (the follower's start, read with positional reads), whatever the line policy."""
    data = _long_lines_text(seed)
    if "utf-16-le" in argv:
        data = data.decode().encode("utf-16-le")
    log = tmp_path / "app.log"
    log.write_bytes(data)
    from_file = subprocess.run(
        [UTF8STREAM, "tail", *argv, str(log)], capture_output=True, timeout=60, check=False
    )
    from_pipe = tail_of(data, *argv, timeout=60)
    assert from_file.returncode == 0, from_file.stderr
    assert (from_pipe.returncode, from_pipe.stdout) == (0, from_file.stdout)
    assert from_pipe.stdout  # something was shown
