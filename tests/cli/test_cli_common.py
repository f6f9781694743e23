"""What every subcommand shares (``_common.py``) and ``main()``: the message format, option
types, exit statuses on signals and closed pipes, the progress-bar decision, ``--version``.

The command-line tests run the real program in a subprocess, with real signals and pipes.
"""

from __future__ import annotations

import argparse
import errno
import os
import pty
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

import utf8stream
from utf8stream.apps.cli import _common as cli
from utf8stream.apps.cli import _main

PROGRAM = [sys.executable, "-m", "utf8stream"]


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROGRAM, *args], input=stdin.decode(), capture_output=True, text=True, timeout=30
    )


# -- --version --------------------------------------------------------------------------


def test_version() -> None:
    result = _run("--version")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"utf8stream {utf8stream.__version__}\n"


# -- one message format: utf8stream: FILE: what went wrong ------------------------------


@pytest.mark.parametrize("command", ["validate", "decode"])
def test_directory_is_named(tmp_path: Path, command: str) -> None:
    result = _run(command, str(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"utf8stream: {tmp_path}: Is a directory\n"


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (
            FileNotFoundError(errno.ENOENT, "No such file or directory", "in.txt"),
            "utf8stream: in.txt: No such file or directory\n",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied", b"out.bin"),
            "utf8stream: out.bin: Permission denied\n",
        ),
        (
            OSError(errno.ENOSPC, "No space left on device"),
            "utf8stream: No space left on device\n",
        ),
        # Errors that name no file are about the command's input.
        (
            ValueError("workers must be at least 1"),
            "utf8stream: in.txt: workers must be at least 1\n",
        ),
        (
            LookupError("unknown encoding: klingon"),
            "utf8stream: in.txt: unknown encoding: klingon\n",
        ),
    ],
)
def test_fallback_messages(
    capsys: pytest.CaptureFixture[str], raised: Exception, expected: str
) -> None:
    def command(args: argparse.Namespace) -> int:
        raise raised

    assert _main._run(argparse.Namespace(run=command, input="in.txt")) == 2
    assert capsys.readouterr() == ("", expected)


def test_command_error_format(capsys: pytest.CaptureFixture[str]) -> None:
    def command(args: argparse.Namespace) -> int:
        raise cli.CommandError("checkpoint is for another file", "cp.json")

    assert _main._run(argparse.Namespace(run=command, files=["a", "b"])) == 2
    assert capsys.readouterr().err == "utf8stream: cp.json: checkpoint is for another file\n"


# -- option types -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("validator", "text", "value"),
    [
        (cli.non_negative_int, "0", 0),
        (cli.non_negative_int, "42", 42),
        (cli.positive_int, "1", 1),
        (cli.positive_float, "0.25", 0.25),
        (cli.positive_float, "3", 3.0),
    ],
)
def test_option_types_accept(validator: Callable[[str], object], text: str, value: object) -> None:
    assert validator(text) == value


@pytest.mark.parametrize(
    ("validator", "text", "message"),
    [
        (cli.non_negative_int, "-5", "must be a non-negative integer, not '-5'"),
        (cli.non_negative_int, "1.5", "must be an integer, not '1.5'"),
        (cli.positive_int, "0", "must be a positive integer, not '0'"),
        (cli.positive_int, "-1", "must be a positive integer, not '-1'"),
        (cli.positive_int, "two", "must be an integer, not 'two'"),
        (cli.positive_float, "0", "must be a positive number, not '0'"),
        (cli.positive_float, "-0.5", "must be a positive number, not '-0.5'"),
        (cli.positive_float, "inf", "must be a positive number, not 'inf'"),
        (cli.positive_float, "nan", "must be a positive number, not 'nan'"),
        (cli.positive_float, "soon", "must be a number, not 'soon'"),
    ],
)
def test_option_types_reject(validator: Callable[[str], object], text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        validator(text)
    assert str(caught.value) == message


def test_bad_option_value_is_one_usage_error_line(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"ok\n")
    result = _run("validate", "--max-errors", "-3", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "utf8stream: validate: argument --max-errors: must be a positive integer, not '-3'; "
        "try 'utf8stream validate --help'\n"
    )


# -- a closed output pipe ---------------------------------------------------------------


def _piped_to_head(args: list[str]) -> tuple[int, str, int, bytes]:
    """Run ``utf8stream ARGS | head -1`` (two processes, a real pipe, no shell).

    Returns our exit status and stderr, head's exit status and output.
    """
    producer = subprocess.Popen([*PROGRAM, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert producer.stdout is not None and producer.stderr is not None
    head = subprocess.Popen(["head", "-1"], stdin=producer.stdout, stdout=subprocess.PIPE)
    producer.stdout.close()  # head holds the only reading end: when it exits, the pipe breaks
    head_out, _ = head.communicate(timeout=30)
    err = producer.stderr.read().decode()
    producer.stderr.close()
    return producer.wait(timeout=30), err, head.returncode, head_out


def test_decode_into_closed_pipe_is_quiet_and_not_success(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"a line of text\n" * 100_000)  # far more than a pipe holds
    status, err, head_status, head_out = _piped_to_head(["decode", str(path)])
    assert (head_status, head_out) == (0, b"a line of text\n")
    assert status == cli.EXIT_BROKEN_PIPE == 141
    assert err == ""  # no traceback, no "Exception ignored" at exit


# -- signals ----------------------------------------------------------------------------


@pytest.fixture
def validating_a_fifo(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``utf8stream validate FIFO``, blocked reading a FIFO this fixture keeps open.

    Opening the FIFO for writing returns only once the program has opened it for reading:
    by then ``main()`` has set up its signal handling, so a signal sent now is a signal
    received mid-run.
    """
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with subprocess.Popen(
        [*PROGRAM, "validate", str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        writer = os.open(fifo, os.O_WRONLY)
        try:
            os.write(writer, b"some text \xff and more\n")
            yield proc
        finally:
            os.close(writer)
            if proc.poll() is None:
                proc.kill()


@pytest.mark.parametrize(
    ("signals", "statuses"),
    [
        ([signal.SIGINT], {130}),
        ([signal.SIGTERM], {143}),
        # Sent twice: the second arrives while the first is handled, during cleanup, or
        # while the program exits (where a handler put back too early let it kill the
        # process by SIGINT).
        ([signal.SIGINT, signal.SIGINT], {130}),
        ([signal.SIGTERM, signal.SIGTERM], {143}),
        # Both at once: the kernel may deliver them in either order; the first wins.
        ([signal.SIGINT, signal.SIGTERM], {130, 143}),
    ],
)
def test_signals_end_the_run_without_traceback(
    validating_a_fifo: subprocess.Popen[bytes], signals: list[signal.Signals], statuses: set[int]
) -> None:
    proc = validating_a_fifo
    for signum in signals:
        proc.send_signal(signum)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode in statuses
    assert err == b""


def test_second_interrupt_during_cleanup(tmp_path: Path) -> None:
    # A command whose cleanup is interrupted by a second Ctrl-C, sent for real: the
    # second KeyboardInterrupt escapes the ``finally`` block and must still end as 130.
    script = (
        "import os, signal, sys, time\n"
        "from utf8stream.apps.cli import _main, validate\n"
        "def interrupted(args):\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        time.sleep(5)\n"
        "    finally:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        time.sleep(5)\n"
        "validate._cmd_validate = interrupted\n"
        "sys.exit(_main.main(['validate', '-']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert (result.returncode, result.stderr) == (130, "")


# -- the progress bar -------------------------------------------------------------------


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    """A pseudo-terminal: the fd of its terminal side, and that side's name."""
    controller, terminal_fd = pty.openpty()
    try:
        yield terminal_fd, os.ttyname(terminal_fd)
    finally:
        os.close(controller)
        os.close(terminal_fd)


@pytest.fixture
def streams(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int, int], None]]:
    """Point ``sys.stdout`` and ``sys.stderr`` at the given file descriptors."""
    opened: list[IO[str]] = []

    def redirect(stdout_fd: int, stderr_fd: int) -> None:
        for name, fd in (("stdout", stdout_fd), ("stderr", stderr_fd)):
            opened.append(open(fd, "w", closefd=False))  # noqa: SIM115 - closed below
            monkeypatch.setattr(sys, name, opened[-1])

    yield redirect
    monkeypatch.undo()
    for stream in opened:
        stream.close()


def test_progress_on_a_terminal_writing_a_file(
    streams: Callable[[int, int], None], terminal: tuple[int, str], tmp_path: Path
) -> None:
    fd, _ = terminal
    read_end, write_end = os.pipe()
    try:
        streams(write_end, fd)
        assert cli.progress_wanted(str(tmp_path / "not-yet-created.txt"))
        existing = tmp_path / "existing.txt"
        existing.write_bytes(b"")
        assert cli.progress_wanted(str(existing))
        assert cli.progress_wanted("-")  # stdout is a pipe
    finally:
        os.close(read_end)
        os.close(write_end)


def test_no_progress_into_the_same_terminal(
    streams: Callable[[int, int], None], terminal: tuple[int, str]
) -> None:
    fd, name = terminal
    same = os.open(name, os.O_WRONLY)  # another descriptor, another name, same terminal
    try:
        streams(same, fd)
        assert not cli.progress_wanted("-")
        assert not cli.progress_wanted(name)
    finally:
        os.close(same)


def test_progress_when_output_is_another_terminal(
    streams: Callable[[int, int], None], terminal: tuple[int, str]
) -> None:
    fd, _ = terminal
    other_controller, other = pty.openpty()
    try:
        streams(other, fd)
        assert cli.progress_wanted("-")
        assert cli.progress_wanted(os.ttyname(other))
    finally:
        os.close(other_controller)
        os.close(other)


def test_no_progress_when_stderr_is_not_a_terminal(
    streams: Callable[[int, int], None], terminal: tuple[int, str], tmp_path: Path
) -> None:
    fd, _ = terminal
    read_end, write_end = os.pipe()
    try:
        streams(fd, write_end)
        assert not cli.progress_wanted("-")
        assert not cli.progress_wanted(str(tmp_path / "out.txt"))
    finally:
        os.close(read_end)
        os.close(write_end)
