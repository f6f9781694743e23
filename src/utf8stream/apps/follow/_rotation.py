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
from typing import TYPE_CHECKING, BinaryIO

from ...core.autodecode import DEFAULT_MAX_LOOKAHEAD as SNIFF_BYTES
from .._compressed import (
    CompressedFileError,
    compression_of,
    decompressed_size,
    matches,
    read_from,
)
from .._identity import head_fingerprint
from ._reading import _matches
from ._records import FileIdentity

if TYPE_CHECKING:
    from ._reading import _Open


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


#: How many times the rotated files are looked through when a rotation moved them while
#: they were looked at.
_SEARCHES = 3


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
    ``problems``.  A search that found nothing while a file changed under it (a rotation
    renamed the files as they were looked at) is made again: the copy may have moved to
    a name already passed.  Runs in a worker thread (it decompresses).
    """
    if identity.head_length == 0:
        return None  # nothing was fingerprinted: any file would match
    for _ in range(_SEARCHES):
        found, moved = _search_copy(live, identity, offset, problems)
        if found is not None or not moved:
            return found
    return None


def _search_copy(
    live: Path, identity: FileIdentity, offset: int, problems: list[str]
) -> tuple[_Copy | None, bool]:
    """One look through the siblings for ``_find_copy``: the copy, and whether a file
    changed while it was looked at."""
    moved = False
    try:
        siblings = list(live.parent.iterdir())
    except OSError:
        return None, False
    candidates: list[tuple[int, Path, os.stat_result]] = []
    for candidate in siblings:
        if candidate == live or not candidate.name.startswith(live.name):
            continue
        try:
            st = candidate.stat()
        except OSError:
            moved = True  # gone since the directory was listed
            continue
        if stat.S_ISREG(st.st_mode):
            candidates.append((st.st_mtime_ns, candidate, st))
    # The newest copy with the fingerprint is the one: an older one with the same first
    # bytes (a log that always starts with the same banner) is a previous cycle's.
    for mtime_ns, candidate, st in sorted(candidates, key=lambda c: (c[0], c[1]), reverse=True):
        try:
            found = _copy_at(candidate, st, mtime_ns, identity, offset)
        except CompressedFileError as exc:
            problems.append(f"cannot read the rotated {exc}")
            continue
        except (ValueError, OSError):
            # Gone, or not compressed any more since its first bytes were looked at (its
            # name now names the next rotation's file, not compressed yet): not this one.
            moved = True
            continue
        if not _still(candidate, st):
            moved = True  # replaced while looked at: what was read may be another file's
            continue
        if isinstance(found, _Copy):
            return found, False
        if found is _SHORT:
            return None, False
    return None, moved


#: A copy of the file that holds fewer bytes than the position: where the file went, with
#: nothing more to read.
_SHORT = object()


def _copy_at(
    candidate: Path, st: os.stat_result, mtime_ns: int, identity: FileIdentity, offset: int
) -> _Copy | object | None:
    """``candidate`` as the copy of ``identity``'s file, ``_SHORT``, or None (not it)."""
    wanted = (identity.head_length, identity.head_sha256)
    compression = compression_of(candidate)
    if compression is None:
        if identity.same_inode(st):
            return None  # the file itself under another name: not a copy
        with open(candidate, "rb") as f:
            head = f.read(SNIFF_BYTES)
        if head_fingerprint(head[: identity.head_length]) != wanted:
            return None
        if st.st_size < offset:
            return _SHORT
        return _Copy(str(candidate), None, st.st_size, head, mtime_ns, st.st_dev, st.st_ino)
    if not matches(candidate, *wanted):
        return None
    size = decompressed_size(candidate)
    if size < offset:
        return _SHORT
    chunks = read_from(candidate, 0)
    head = next(chunks, b"")[:SNIFF_BYTES]
    chunks.close()  # type: ignore[attr-defined]
    return _Copy(str(candidate), compression, size, head, mtime_ns, st.st_dev, st.st_ino)


def _still(path: Path, st: os.stat_result) -> bool:
    """Whether ``path`` still names the file ``st`` describes."""
    try:
        return os.path.samestat(path.stat(), st)
    except OSError:
        return False


def _open_copy(
    copy: _Copy, offset: int, read_size: int | None = None
) -> Generator[bytes, None, None] | None:
    """The bytes of ``copy`` from ``offset`` on, decompressed, in chunks of at most
    ``read_size`` (plain: given) or ``CHUNK_BYTES`` (compressed); None if its name no longer
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
        assert read_size is not None, "a plain copy is read in chunks of read_size"
        return _plain_chunks(f, offset, read_size)
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


def _plain_chunks(f: BinaryIO, offset: int, read_size: int) -> Generator[bytes, None, None]:
    with f:
        f.seek(offset)
        while chunk := f.read(read_size):
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


def _next_file(
    path: str, visited: dict[tuple[int, int], FileIdentity], f: _Open, exclude: set[str]
) -> _Next:
    """The file to read after the rotated ``f``: the next newer rotation, else the path.

    Several rotations may have happened while we were stopped or not being iterated.
    Where the rotated files are named by a scheme (``_rotation_key``: logrotate's
    numbers or dates), the next is the oldest one named newer than ``f``, compressed
    or not (a compressed one is read decompressed); when a file and its compressed
    twin share a name (compression under way), the plain one.  Otherwise the plain
    files last written after ``f`` are read in the order of their modification times
    (a compressed file's time is that of its compression, so those are left out).
    ``exclude``: paths not to take (found damaged).  Runs in a worker thread.
    """
    live = Path(path)
    try:
        live_st = live.stat()
        live_inode = (live_st.st_dev, live_st.st_ino)
    except OSError:
        live_inode = None
    try:
        siblings = list(live.parent.iterdir())
    except OSError:
        return _Next(path)
    entries: list[tuple[Path, os.stat_result]] = []
    for candidate in siblings:
        if candidate == live or not candidate.name.startswith(live.name):
            continue
        try:
            cst = candidate.stat()
        except OSError:
            continue
        if stat.S_ISREG(cst.st_mode) and (cst.st_dev, cst.st_ino) != live_inode:
            entries.append((candidate, cst))
    reference = _reference_key(path, f, entries)
    if reference is None:
        return _next_by_time(path, visited, f, entries, exclude)
    flip = reference[0] == "number" and _numbers_grow_newer(live.name, entries)
    if flip:
        reference = ("number", -reference[1], "")
    best: tuple[tuple[str, int, str], bool, _Next] | None = None
    for candidate, cst in entries:
        key = _rotation_key(live.name, candidate.name)
        if key is not None and flip and key[0] == "number":
            key = ("number", -key[1], "")
        if key is None or key[0] != reference[0] or key <= reference:
            continue
        if str(candidate) in exclude or (best is not None and key > best[0]):
            continue
        try:
            compression = compression_of(candidate)
        except OSError:
            continue
        if compression is None and _read_before(visited, candidate, cst):
            continue
        found = _Next(str(candidate), cst.st_dev, cst.st_ino, compression)
        # Of a file and its compressed twin (compression under way: the twin may be
        # empty still, with no magic bytes to tell it), the plain one.
        twin = compression is not None or bool(_COMPRESSED_SUFFIX.search(candidate.name))
        if best is None or (key, twin) < best[:2]:
            best = (key, twin, found)
    return _Next(path) if best is None else best[2]


def _reference_key(
    path: str, f: _Open, entries: list[tuple[Path, os.stat_result]]
) -> tuple[str, int, str] | None:
    """The rotation key of the name ``f``'s file has now, if it has one.

    A plain file deleted after its compression (``delaycompress``: ``app.log.2``
    became ``app.log.2.gz`` while we read it) is known by the fingerprint of its
    compressed copy's decompressed head; of several with it, the oldest is taken
    (reading a file twice is better than skipping one).
    """
    live_name = Path(path).name
    inode = (
        (f.identity.device, f.identity.inode) if f.copy is None else (f.copy.device, f.copy.inode)
    )
    for candidate, cst in entries:
        if (cst.st_dev, cst.st_ino) == inode:
            return _rotation_key(live_name, candidate.name)
    if f.copy is not None or f.identity.head_length == 0:
        return None
    keys = []
    for candidate, _ in entries:
        key = _rotation_key(live_name, candidate.name)
        if key is None:
            continue
        try:
            if compression_of(candidate) is not None and matches(
                candidate, f.identity.head_length, f.identity.head_sha256
            ):
                keys.append(key)
        except (ValueError, OSError):  # CompressedFileError too; or changed meanwhile
            continue
    return min(keys) if keys else None


def _next_by_time(
    path: str,
    visited: dict[tuple[int, int], FileIdentity],
    f: _Open,
    entries: list[tuple[Path, os.stat_result]],
    exclude: set[str],
) -> _Next:
    """The plain rotated file last written after ``f`` the soonest, not read yet."""
    if f.copy is None:
        mtime = os.fstat(f.fd).st_mtime_ns
        skip = (f.identity.device, f.identity.inode)
    else:
        # A compressed copy's time is that of its compression: every plain one counts.
        mtime = f.copy.mtime_ns if f.copy.compression is None else 0
        skip = (f.copy.device, f.copy.inode)
    newer: list[tuple[int, str, os.stat_result]] = []
    for candidate, cst in entries:
        if (
            (cst.st_dev, cst.st_ino) != skip
            and cst.st_mtime_ns >= mtime
            and str(candidate) not in exclude
            and not _COMPRESSED_SUFFIX.search(candidate.name)  # perhaps being written
            and not _is_compressed(candidate)
            and not _read_before(visited, candidate, cst)
        ):
            newer.append((cst.st_mtime_ns, str(candidate), cst))
    if not newer:
        return _Next(path)
    _, path, cst = min(newer, key=lambda n: (n[0], n[1]))
    return _Next(path, cst.st_dev, cst.st_ino)


def _read_before(
    visited: dict[tuple[int, int], FileIdentity], candidate: Path, st: os.stat_result
) -> bool:
    """Whether ``candidate`` is a rotated file already read to its end: its inode was
    seen, and its first bytes are still those of the file seen there (after a delete,
    logrotate's ``rotate N``, the inode may be a new log's)."""
    seen = visited.get((st.st_dev, st.st_ino))
    if seen is None:
        return False
    try:
        fd = os.open(candidate, os.O_RDONLY)
    except OSError:
        return True  # unreadable now: nothing to read from it either
    try:
        return _matches(fd, seen)
    finally:
        os.close(fd)
