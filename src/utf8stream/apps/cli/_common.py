"""What every subcommand shares: exit statuses, messages, option types, chunked reading,
the progress bar."""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator, Sequence

TYPE_CHECKING = False  # ``typing`` itself is not imported: ``--version`` needs nothing
if TYPE_CHECKING:
    from typing import Any, BinaryIO, NoReturn

CHUNK_SIZE = 1 << 16
EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
#: Stopped by a signal: 128 + its number, as shells report it.
EXIT_SIGINT, EXIT_SIGTERM = 130, 143
#: stdout was a pipe whose reader went away (``| head``): what a shell reports for a
#: program killed by SIGPIPE.  Not 0, because what was asked for was not all delivered.
EXIT_BROKEN_PIPE = 141


class Terminated(BaseException):
    """SIGTERM, raised wherever the program is, so that ``finally`` blocks clean up.

    A ``BaseException`` like ``KeyboardInterrupt``: code that handles ``Exception``
    never swallows it.  ``main()`` turns it into exit status 143, without a traceback.
    """


def display_name(path: str) -> str:
    """How a file is named in messages (``-`` is the standard input or output)."""
    return "-" if path == "-" else path


class CommandError(Exception):
    """A failure reported as one line, ``utf8stream: FILE: what went wrong``.

    ``main()`` prints it and exits with ``status``; no traceback ever reaches the user.
    """

    def __init__(self, message: str, path: str | None = None, status: int = EXIT_USAGE):
        super().__init__(message)
        self.message, self.path, self.status = message, path, status

    def __str__(self) -> str:
        return format_message(self.message, self.path)


def format_message(message: str, path: str | None = None) -> str:
    """The one message format of every command."""
    where = f"{display_name(path)}: " if path is not None else ""
    return f"utf8stream: {where}{message}"


def warn(message: str, path: str | None = None) -> None:
    """A notice or error line on stderr, in the one format."""
    sys.stderr.write(format_message(message, path) + "\n")
    sys.stderr.flush()


def silence_stdout() -> None:
    """After a ``BrokenPipeError`` on stdout: send the rest of the output to /dev/null.

    Python flushes ``sys.stdout`` again at exit; to a closed pipe that would print
    "Exception ignored ... BrokenPipeError".  Standard streams that are not files (an
    embedding program's, pytest's capture) are left alone.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class Parser(argparse.ArgumentParser):
    """The parser of the program and of each command (argparse makes the commands' of
    the program's class).

    A usage error is one line, as every other error: ``utf8stream: COMMAND: what is
    wrong; try 'utf8stream COMMAND --help'``, exit status 2 (not argparse's usage block).
    ``rewrite(parser, args)``: a command's translation of the short forms GNU tools
    accept (``tail -3``) into its own options, applied to its arguments before parsing.
    """

    def __init__(
        self,
        *args: Any,
        rewrite: Callable[[Parser, list[str]], list[str]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.rewrite = rewrite

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        if self.rewrite is not None:
            args = self.rewrite(self, list(sys.argv[1:] if args is None else args))
        return super().parse_known_args(args, namespace)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> Any:
        """As argparse's, but arguments no parser took are the command's error: argparse
        leaves them to the program's parser, whose message names no command."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._parser_of(getattr(parsed, "command", None)).error(
                f"unrecognized arguments: {' '.join(extras)}"
            )
        return parsed

    def add_subparsers(self, **kwargs: Any) -> Any:
        self.commands = super().add_subparsers(**kwargs)
        return self.commands

    def _parser_of(self, command: str | None) -> Parser:
        """The parser of ``command`` (itself when it has none by that name)."""
        commands = getattr(self, "commands", None)
        found = None if commands is None or command is None else commands.choices.get(command)
        return found if isinstance(found, Parser) else self

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        where = f"{command}: " if command else ""
        self.exit(EXIT_USAGE, f"utf8stream: {where}{message}; try '{self.prog} --help'\n")


# -- option types: argparse ``type=`` validators that speak the user's language ---------


def non_negative_int(text: str) -> int:
    """``type=`` for counts and offsets: 0, 1, 2, ..."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, not {text!r}")
    return value


def positive_int(text: str) -> int:
    """``type=`` for limits and worker counts: 1, 2, 3, ..."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


def positive_float(text: str) -> float:
    """``type=`` for intervals in seconds: any finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None


# -- progress ---------------------------------------------------------------------------


def progress_wanted(output: str) -> bool:
    """Whether to draw a progress bar for a command writing to ``output`` (``-``: stdout).

    Only when stderr is a terminal (nobody reads a bar in a log) and the output is not that
    same terminal (the bar would mix into the text).  Two file descriptors are the same
    terminal when both are character devices with the same device number, whatever the
    names they were opened by (``/dev/tty``, ``/dev/pts/3``).
    """
    try:
        if not os.isatty(sys.stderr.fileno()):
            return False
        terminal = os.fstat(sys.stderr.fileno())
        target = os.fstat(sys.stdout.fileno()) if output == "-" else os.stat(output)
    except FileNotFoundError:
        return True  # an output file still to be created is no terminal
    except (AttributeError, ValueError, OSError):
        return False  # no real stderr, or an output we cannot look at: stay quiet
    same_terminal = stat.S_ISCHR(target.st_mode) and target.st_rdev == terminal.st_rdev
    return not same_terminal


def chunks(stream: BinaryIO) -> Iterator[bytes]:
    """The stream's bytes, a chunk as soon as it is there (``read1``: from a pipe, what
    has arrived, instead of waiting for a full chunk or the end)."""
    read = getattr(stream, "read1", stream.read)
    while chunk := read(CHUNK_SIZE):
        yield chunk


def with_final(chunks: Iterator[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Pair each chunk with whether it is the last, so the last decode flushes."""
    previous: bytes | None = None
    for chunk in chunks:
        if previous is not None:
            yield previous, False
        previous = chunk
    yield (previous or b""), True


class ProgressBar:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.drawn < 0.1 and done < total:
            return
        self.drawn = now
        rate = done / max(now - self.started, 1e-9) / 2**20
        if total:
            width = 30
            filled = width * done // total
            bar = "#" * filled + "-" * (width - filled)
            sys.stderr.write(
                f"\r[{bar}] {100 * done // total:3d}% {done / 2**20:8.1f} MiB {rate:7.1f} MiB/s"
            )
        else:
            sys.stderr.write(f"\r{done / 2**20:8.1f} MiB {rate:7.1f} MiB/s")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
