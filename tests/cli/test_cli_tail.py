"""``utf8stream tail`` without following: the last lines or bytes, from line or byte N,
GNU tail's counts and option values, encodings and line options, several FILEs."""

from __future__ import annotations

from pathlib import Path

import pytest
from _helpers import append
from _tail_cli import (
    Follow,
    outcome,
    run,
)


def test_last_lines_like_tail_n(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\ntwo\nthr\xffee\nfour")
    # As GNU tail: the last line has no newline, and none is added.
    assert run(capsysbinary, "tail", "-n", "2", str(log)) == (0, "thr\ufffdee\nfour".encode())
    assert run(capsysbinary, "tail", str(log)) == (0, "one\ntwo\nthr\ufffdee\nfour".encode())


def test_offset_mid_character(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    log = tmp_path / "app.log"
    log.write_bytes("x€y\n".encode())
    assert run(capsysbinary, "tail", "--offset", "2", str(log)) == (0, "\ufffdy\n".encode())


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


def test_an_encoding_lines_cannot_be_cut_in_is_a_usage_error(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    status, _, err = outcome(
        capsysbinary, "tail", "--encoding", "utf-7", str(tmp_path / "app.log")
    )
    assert status == 2
    assert "argument --encoding: 'utf_7': its newline bytes are not self-delimiting" in err


def test_line_endings_pass_through_unchanged(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    log = tmp_path / "app.log"
    data = b"crlf\r\nlone\rcr inside\n\r\n\nlf\r\rlast, no newline"
    log.write_bytes(data)
    assert run(capsysbinary, "tail", "-n", "100", str(log)) == (0, data)
    assert run(capsysbinary, "tail", "-n", "2", str(log)) == (0, b"\nlf\r\rlast, no newline")
    log.write_bytes(data + b"\n")
    follow = Follow("-F", "-n", "100", str(log))
    try:
        assert b"".join(follow.out() for _ in range(5)) == data + b"\n"
        append(log, b"more\r\n")
        assert follow.out() == b"more\r\n"
    finally:
        assert follow.stop() == (143, b"", b"")


def test_long_lines(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    log = tmp_path / "app.log"
    long_line = "é" * 15  # 30 bytes
    data = f"short\n{long_line}\r\nnext\n".encode()
    log.write_bytes(data)

    def run_with(*policy: str) -> tuple[int, bytes, str]:
        return outcome(
            capsysbinary, "tail", "-n", "100", "--max-line-bytes", "8", *policy, str(log)
        )

    # Split (the default): read in pieces, printed unchanged.
    assert run_with() == (0, data, "")
    assert run_with("--on-overlong", "split") == (0, data, "")
    notice = f"utf8stream: {log}: line at byte 6 longer than 8 bytes"
    truncated = run_with("--on-overlong", "truncate")
    assert truncated == (0, "short\néééé\nnext\n".encode(), f"{notice}: truncated\n")
    skipped = run_with("--on-overlong", "skip")
    assert skipped == (0, b"short\nnext\n", f"{notice}: skipped\n")
    raised = run_with("--on-overlong", "raise")
    assert raised == (1, b"short\n", f"utf8stream: {log}: line longer than 8 bytes\n")


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("replace", "a\ufffd\ufffdb\n\ufffd\n".encode()),
        ("ignore", b"ab\n\n"),
        ("backslashreplace", b"a\\xff\\xc0b\n\\xe2\\x82\n"),
        ("surrogateescape", b"a\xff\xc0b\n\xe2\x82\n"),  # the bytes, as they were
    ],
)
def test_errors_policy(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], policy: str, expected: bytes
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"a\xff\xc0b\n\xe2\x82\n")
    assert run(capsysbinary, "tail", "--errors", policy, str(log)) == (0, expected)


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


def test_bytes_with_a_suffix(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"x" * 5000 + b"\n")
    assert run(capsysbinary, "tail", "-c", "1K", str(log)) == (0, b"x" * 1023 + b"\n")
    assert run(capsysbinary, "tail", "-c", "1kB", str(log)) == (0, b"x" * 999 + b"\n")
    assert run(capsysbinary, "tail", "-c", "+4K", str(log)) == (0, b"x" * (5000 - 4095) + b"\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-line-bytes", "3"], "argument --max-line-bytes: must be at least 4"),
        (["--max-line-bytes", "x"], "argument --max-line-bytes: must be an integer"),
        (["--errors", "strict"], "argument --errors: invalid choice: 'strict'"),
        (["--on-overlong", "wrap"], "argument --on-overlong: invalid choice: 'wrap'"),
        (["--rotate-grace", "-1"], "argument --rotate-grace: must be a number of seconds >= 0"),
        (["--rotate-grace", "inf"], "argument --rotate-grace: must be a number of seconds >= 0"),
        (["--rotate-grace", "soon"], "argument --rotate-grace: must be a number, not 'soon'"),
        (["--multiline-timeout", "0"], "argument --multiline-timeout: must be a positive number"),
        (["--multiline", "cobol"], "argument --multiline: invalid choice: 'cobol'"),
        (["--interval", "0"], "argument --interval: must be a positive number, not '0'"),
    ],
)
def test_option_values_are_checked(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], argv: list[str], message: str
) -> None:
    status, _, err = outcome(capsysbinary, "tail", *argv, str(tmp_path / "app.log"))
    assert status == 2
    assert message in err


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
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], argv: list[str], expected: bytes
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"1\n2\n3\n4\n")
    assert run(capsysbinary, "tail", *argv, str(log)) == (0, expected)


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
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], argv: list[str], expected: bytes
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes("héllo\nworld\n".encode())
    assert run(capsysbinary, "tail", *argv, str(log)) == (0, expected)


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
def test_gnu_option_values_are_checked(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], argv: list[str], message: str
) -> None:
    status, out, err = outcome(capsysbinary, "tail", *argv, str(tmp_path / "app.log"))
    assert (status, out) == (2, b"")
    assert message in err


def test_several_files_have_headers(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    a, b, empty = tmp_path / "a", tmp_path / "b", tmp_path / "empty"
    a.write_bytes(b"a1\na2\n")
    b.write_bytes(b"b1\n")
    empty.write_bytes(b"")
    _, out = run(capsysbinary, "tail", "-n", "1", str(a), str(empty), str(b))
    assert out == (f"==> {a} <==\na2\n\n==> {empty} <==\n\n==> {b} <==\nb1\n".encode())
    assert run(capsysbinary, "tail", "-q", "-n", "1", str(a), str(b)) == (0, b"a2\nb1\n")
    assert run(capsysbinary, "tail", "-v", "-n", "1", str(a)) == (0, f"==> {a} <==\na2\n".encode())
    assert run(capsysbinary, "tail", "-n", "1", str(a)) == (0, b"a2\n")


def test_a_missing_file_among_several(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    a, missing, b = tmp_path / "a", tmp_path / "missing", tmp_path / "b"
    a.write_bytes(b"a1\n")
    b.write_bytes(b"b1\n")
    assert outcome(capsysbinary, "tail", str(a), str(missing), str(b)) == (
        1,
        f"==> {a} <==\na1\n\n==> {b} <==\nb1\n".encode(),
        f"utf8stream: {missing}: cannot open for reading: No such file or directory\n",
    )
