"""Output files renamed into place only on success; the standard streams for ``-``."""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import BinaryIO, cast

from .results import SameFileError

__all__ = ["Output", "check_distinct", "name_output", "open_binary", "open_output"]


def check_distinct(src: str, dst: str) -> None:
    """Raise ``SameFileError`` if ``dst`` is the file ``src`` (``"-"``: stdin) names,
    through any hard or symbolic link."""
    if dst == "-":
        return
    try:
        out = os.stat(dst)
        into = os.fstat(sys.stdin.fileno()) if src == "-" else os.stat(src)
    except (FileNotFoundError, NotADirectoryError, ValueError, io.UnsupportedOperation):
        return  # no such output yet, or no real stdin: they cannot be the same
    if stat.S_ISREG(out.st_mode) and (out.st_dev, out.st_ino) == (into.st_dev, into.st_ino):
        raise SameFileError("the output is the input file: refused, nothing was written")


class Output:
    """An output file, written to a temporary file in its directory.

    ``commit`` flushes it to disk and renames it over the destination (a symbolic link
    stays a link: the file it names is replaced); ``discard`` removes it.  A destination
    that exists and is not a regular file (a FIFO, a device) is written in place.
    """

    def __init__(self, dst: str) -> None:
        self.destination = os.path.realpath(dst)
        try:
            existing: os.stat_result | None = os.stat(self.destination)
        except FileNotFoundError:
            existing = None
        self.in_place = existing is not None and not stat.S_ISREG(existing.st_mode)
        if self.in_place:
            self.path = dst
            self.file = cast(BinaryIO, open(dst, "wb"))  # noqa: SIM115 (closed by commit/discard)
            return
        folder, name = os.path.split(self.destination)
        fd = -1
        try:
            while fd < 0:
                path = os.path.join(folder, f".{name}.{os.urandom(4).hex()}.tmp")
                # 0o666 as for any new file (the umask applies); an existing file's own
                # permission bits are set below.
                with suppress(FileExistsError):
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            exc.filename = dst  # the user named the destination, not our temporary file
            raise
        self.path = path
        try:
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                with suppress(PermissionError):  # only root can give a file away
                    os.fchown(fd, existing.st_uid, existing.st_gid)
            self.file = cast(BinaryIO, os.fdopen(fd, "wb"))
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise

    def commit(self) -> None:
        try:
            self.file.flush()
            if not self.in_place:
                os.fsync(self.file.fileno())
        except BaseException:
            self.discard()
            raise
        self.file.close()
        if self.in_place:
            return
        try:
            os.replace(self.path, self.destination)
        except BaseException:
            self.discard()
            raise
        _fsync_directory(os.path.dirname(self.destination))

    def discard(self) -> None:
        with suppress(OSError):  # a failed flush of data nobody wants
            self.file.close()
        if not self.in_place:
            with suppress(FileNotFoundError):
                os.unlink(self.path)


def _fsync_directory(path: str) -> None:
    """Make the rename itself durable (best effort: some file systems refuse)."""
    try:
        fd = os.open(path or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def open_output(dst: str, src: str | None = None) -> Iterator[Output | None]:
    """The output ``dst`` as an ``Output`` (None for ``"-"``, stdout, streamed).

    The file takes the destination's place only if the block ends normally; any
    exception (``KeyboardInterrupt`` included) leaves the destination untouched.  With
    ``src``, an output that is the input is refused first (``SameFileError``).
    """
    if src is not None:
        check_distinct(src, dst)
    if dst == "-":
        yield None
        sys.stdout.buffer.flush()
        return
    output: Output | None = None
    try:
        output = Output(dst)
        yield output
    except BaseException:
        if output is not None:
            output.discard()
        raise
    output.commit()


def name_output(exc: OSError, output: Output | None, dst: str) -> None:
    """A write error is about the destination, not about the temporary file."""
    if output is not None and exc.filename in (None, output.path):
        exc.filename = dst


@contextmanager
def open_binary(path: str, mode: str) -> Iterator[BinaryIO]:
    """``open`` for paths; the standard streams (left open) for ``"-"``."""
    if path == "-":
        stream = sys.stdin.buffer if "r" in mode else sys.stdout.buffer
        yield stream
        if "w" in mode:
            stream.flush()
        return
    with open(path, mode) as f:
        yield cast(BinaryIO, f)
