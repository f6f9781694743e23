"""What every subcommand shares: exit statuses, chunked reading, the progress bar."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import BinaryIO

CHUNK_SIZE = 1 << 16
EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
#: Stopped by a signal: 128 + its number, as shells report it.
EXIT_SIGINT, EXIT_SIGTERM = 130, 143


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


def chunks(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK_SIZE):
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
