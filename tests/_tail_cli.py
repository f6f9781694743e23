"""The real ``utf8stream`` command for its tests: run in this process (``run``, ``outcome``),
as the console script to its end (``tail``), or following (``Follow``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import line_within

from utf8stream.apps.cli import main


def run(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes]:
    """``main(argv)`` in this process: its status and what it wrote to stdout."""
    code = main(list(argv))
    return code, capsysbinary.readouterr().out


def outcome(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes, str]:
    """``main(argv)`` in this process: its status (the one returned, or the parser's
    ``SystemExit`` for a command line it refuses), stdout and stderr.  For runs whose
    output is the point; test_cli_usage.py runs the real program for its refusals (one
    line, status 2, no traceback)."""
    try:
        status = main(list(argv))
    except SystemExit as stop:
        assert isinstance(stop.code, int)
        status = stop.code
    captured = capsysbinary.readouterr()
    return status, captured.out, captured.err.decode()


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
