"""Rotations of a followed file: rotated copies (plain or compressed), and their names'
order."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import BinaryIO

from .._compressed import (
    CompressedFileError,
    compression_of,
    decompressed_size,
    matches,
    read_from,
)
from .._identity import head_fingerprint
from .._sniff import SNIFF_BYTES
from ._reading import READ_SIZE
from ._records import FileIdentity


def _is_compressed(path: Path) -> bool:
    """Whether ``path`` starts like a compressed file (unreadable: treated as one).

    A rotated log compressed by logrotate is never read as text: only ``_find_copy``
    reads one, decompressed.
    """
    try:
        return compression_of(path) is not None
    except OSError:
        return True


@dataclass(frozen=True)
class _Copy:
    """A rotated copy of a followed file: plain or compressed, and the bytes it holds."""

    path: str
    compression: str | None
    size: int  # decompressed
    #: Its first bytes (up to ``SNIFF_BYTES``), decompressed: its fingerprint, and its
    #: encoding (a byte-order mark; with "auto", detection).
    head: bytes
    mtime_ns: int  # when it was last written (compressed: when it was compressed)
    device: int
    inode: int


def _find_copy(
    live: Path, identity: FileIdentity, offset: int, problems: list[str]
) -> _Copy | None:
    """The newest rotated copy of the file ``identity`` describes, if it holds all bytes up
    to ``offset`` (a copy holding no more is still where the file went: the files rotated
    after it come next).

    A copy is a sibling named after ``live`` (``app.log.1``, ``app.log-20260101.gz``)
    whose (decompressed) first bytes have ``identity``'s fingerprint: copytruncate's copy,
    or a rotation compressed while the follower was stopped.  A compressed file is checked
    to its end first, so a damaged one is never read; each one met is told in
    ``problems``.  Runs in a worker thread (it decompresses).
    """
    if identity.head_length == 0:
        return None  # nothing was fingerprinted: any file would match
    try:
        siblings = list(live.parent.iterdir())
    except OSError:
        return None
    candidates: list[tuple[int, Path, os.stat_result]] = []
    for candidate in siblings:
        if candidate == live or not candidate.name.startswith(live.name):
            continue
        try:
            st = candidate.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            candidates.append((st.st_mtime_ns, candidate, st))
    wanted = (identity.head_length, identity.head_sha256)
    # The newest copy with the fingerprint is the one: an older one with the same first
    # bytes (a log that always starts with the same banner) is a previous cycle's.
    for mtime_ns, candidate, st in sorted(candidates, key=lambda c: (c[0], c[1]), reverse=True):
        try:
            compression = compression_of(candidate)
            if compression is None:
                if identity.same_inode(st):
                    continue  # the file itself under another name: not a copy
                with open(candidate, "rb") as f:
                    head = f.read(SNIFF_BYTES)
                if head_fingerprint(head[: identity.head_length]) == wanted:
                    if st.st_size < offset:
                        return None
                    return _Copy(
                        str(candidate), None, st.st_size, head, mtime_ns, st.st_dev, st.st_ino
                    )
            elif matches(candidate, *wanted):
                size = decompressed_size(candidate)
                if size < offset:
                    return None
                chunks = read_from(candidate, 0)
                head = next(chunks, b"")[:SNIFF_BYTES]
                chunks.close()  # type: ignore[attr-defined]
                return _Copy(
                    str(candidate), compression, size, head, mtime_ns, st.st_dev, st.st_ino
                )
        except CompressedFileError as exc:
            problems.append(f"cannot read the rotated {exc}")
        except (ValueError, OSError):
            # Gone, or not compressed any more since its first bytes were looked at (its
            # name now names the next rotation's file, not compressed yet): not this one.
            continue
    return None


def _open_copy(copy: _Copy, offset: int) -> Generator[bytes, None, None] | None:
    """The bytes of ``copy`` from ``offset`` on, decompressed, in chunks of at most
    ``READ_SIZE`` (plain) or ``CHUNK_BYTES`` (compressed); None if its name no longer
    names it (rotated on since it was found: look for it again).

    The file is opened now, in this (worker) thread, so that a rotation renaming
    ``app.log.2.gz`` to ``app.log.3.gz`` meanwhile cannot hand us another file's bytes.
    """
    if copy.compression is None:
        f = open(copy.path, "rb")  # noqa: SIM115 (owned by the generator below)
        st = os.fstat(f.fileno())
        if (st.st_dev, st.st_ino) != (copy.device, copy.inode):
            f.close()
            return None
        return _plain_chunks(f, offset)
    # A compressed reader opens its file at its first read: the name must name the copy
    # before and after that (a rotation never renames a file back).
    chunks = read_from(copy.path, offset)
    try:
        first = next(chunks, b"")
        st = os.stat(copy.path)
    except BaseException:
        chunks.close()  # type: ignore[attr-defined]
        raise
    if (st.st_dev, st.st_ino) != (copy.device, copy.inode):
        chunks.close()  # type: ignore[attr-defined]
        return None
    return _primed(first, chunks)


def _open_compressed(target: _Next) -> tuple[_Copy, Generator[bytes, None, None]] | str | None:
    """A compressed rotation to read next, checked to its end and opened at its start; a
    message if it is damaged; None if its name now names another file (look again).
    Runs in a worker thread."""
    assert target.compression is not None
    try:
        size = decompressed_size(target.path)
        found = _Copy(target.path, target.compression, size, b"", 0, target.device, target.inode)
        chunks = _open_copy(found, 0)
        if chunks is None:
            return None
        first = next(chunks, b"")
    except CompressedFileError as exc:
        return f"cannot read the rotated {exc}"
    except OSError:
        return None
    head = first[:SNIFF_BYTES]
    copy = _Copy(target.path, target.compression, size, head, 0, target.device, target.inode)
    return copy, _primed(first, chunks)


def _plain_chunks(f: BinaryIO, offset: int) -> Generator[bytes, None, None]:
    with f:
        f.seek(offset)
        while chunk := f.read(READ_SIZE):
            yield chunk


def _primed(first: bytes, rest: Iterator[bytes]) -> Generator[bytes, None, None]:
    try:
        if first:
            yield first
        yield from rest
    finally:
        rest.close()  # type: ignore[attr-defined]


def _find_rotated(path: Path, identity: FileIdentity) -> Path | None:
    """A rotation of ``path`` (a sibling named after it) with ``identity``'s device and
    inode.

    Whether its first bytes still match the fingerprint decides where reading resumes.
    A compressed file is never it, even on a reused inode, and neither is a file of
    another name: the inode of a deleted rotation is soon another file's (the temporary
    file of a checkpoint being written, say, which must not be read as the log).
    """
    try:
        candidates = sorted(path.parent.iterdir())
    except OSError:
        return None
    for candidate in candidates:
        try:
            st = candidate.stat()
        except OSError:
            continue
        if (
            identity.same_inode(st)
            and candidate.name.startswith(path.name)
            and not _COMPRESSED_SUFFIX.search(candidate.name)  # perhaps being written
            and candidate.is_file()
            and candidate != path
            and not _is_compressed(candidate)
        ):
            return candidate
    return None


@dataclass(frozen=True)
class _Next:
    """The file to read next: a rotated file (as listed: device, inode, compression), or
    the path followed."""

    path: str
    device: int = -1
    inode: int = -1
    compression: str | None = None


#: Compression suffixes logrotate's ``compressext`` gives, left out of a rotation's name.
_COMPRESSED_SUFFIX = re.compile(r"\.(?:gz|bz2|xz|zst|lz4|Z)$")
_NUMBERED = re.compile(r"\.([0-9]+)")


def _numbers_grow_newer(live_name: str, entries: list[tuple[Path, os.stat_result]]) -> bool:
    """Whether the plain numbered rotations were written in the order of their numbers
    (``app.log.1`` the oldest, names that never shift), not logrotate's (``.1`` the
    newest): what their modification times say, logrotate's order when they say nothing.
    """
    numbered = []
    for candidate, st in entries:
        key = _rotation_key(live_name, candidate.name)
        if (
            key is not None
            and key[0] == "number"
            and not _COMPRESSED_SUFFIX.search(candidate.name)
        ):
            numbered.append((-key[1], st.st_mtime_ns))
    numbered.sort()
    votes = 0
    for (_, earlier), (_, later) in pairwise(numbered):
        if later != earlier:
            votes += 1 if later > earlier else -1
    return votes > 0


def _rotation_key(live_name: str, name: str) -> tuple[str, int, str] | None:
    """Where ``name`` stands among the rotations of ``live_name``; None if not one.

    Keys of one scheme compare, the larger being the newer: ``app.log.N`` (logrotate's
    numbering, N = 1 the newest) or a suffix of fixed width (``dateext``'s
    ``app.log-20260101``), each with or without a compression suffix.  The name, not the
    modification time, gives the order: a compressed file's time is that of its
    compression, later than that of the plain rotation made after it.
    """
    if not name.startswith(live_name):
        return None
    rest = _COMPRESSED_SUFFIX.sub("", name[len(live_name) :])
    if not rest:
        return None
    number = _NUMBERED.fullmatch(rest)
    if number is not None:
        return ("number", -int(number[1]), "")
    return (f"text {rest[0]} {len(rest)}", 0, rest)
