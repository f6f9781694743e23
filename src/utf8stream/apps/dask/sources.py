"""The files a Dask call reads, as the client finds them, and the blocks they are cut into."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import dask
import dask.bag
import fsspec
import fsspec.core
import fsspec.implementations.local
import fsspec.utils
from dask.utils import parse_bytes

from ...core.autodecode import DEFAULT_MAX_LOOKAHEAD as SNIFF_BYTES
from ...core.autolines import detect_line_codec

if TYPE_CHECKING:
    from fsspec.spec import AbstractFileSystem

__all__ = [
    "CHUNK",
    "DEFAULT_BLOCKSIZE",
    "File",
    "ascii_aligned",
    "block_spans",
    "compute",
    "delayed",
    "from_delayed",
    "is_local",
    "list_files",
    "parse_blocksize",
    "read_at",
]

# Dask's own annotations are partial: its entry points are used through ``Any``.  Tasks
# are not pure (each call its own keys): a file may change between two calls.
delayed: Any = cast(Any, dask).delayed
compute: Any = cast(Any, dask).compute
from_delayed: Any = cast(Any, dask.bag).from_delayed

#: What a task reads at once while it looks for a line start or copies a block.
CHUNK = 1 << 20
DEFAULT_BLOCKSIZE = "128 MiB"


# -- files and blocks -------------------------------------------------------------------


@dataclass(frozen=True)
class File:
    """One input, as the client found it: what a task needs to open and cut it.

    ``name``: how records and messages name it (the name the caller gave, for a name
    that is not a pattern; with the URL's protocol, for a remote file)."""

    fs: AbstractFileSystem
    path: str
    name: str
    compression: str | None
    size: int  # -1 for a compressed file (read whole, by one task)
    head: bytes  # its first bytes (decompressed): a byte-order mark tells the byte order
    #: With ``encoding="auto"``: the encoding its first ``SNIFF_BYTES`` tell.
    detected: str | None = None

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        of = fsspec.core.OpenFile(self.fs, self.path, mode="rb", compression=self.compression)
        with of as f:
            yield cast(BinaryIO, f)


#: What makes a name a pattern for fsspec's glob.
GLOB = re.compile(r"[*?\[]")


def is_local(fs: AbstractFileSystem) -> bool:
    return isinstance(fs, fsspec.implementations.local.LocalFileSystem)


def names(urlpath: str | Sequence[str], fs: AbstractFileSystem, paths: list[str]) -> list[str]:
    if isinstance(urlpath, str) and len(paths) == 1 and not GLOB.search(urlpath):
        return [urlpath]
    if not is_local(fs):
        return [fs.unstrip_protocol(path) for path in paths]
    patterns = [urlpath] if isinstance(urlpath, str) else list(urlpath)
    relative = not any(os.path.isabs(p) or "://" in p for p in patterns)
    return [os.path.relpath(path) if relative else path for path in paths]


def list_files(
    urlpath: str | Sequence[str], storage_options: dict[str, Any] | None, sniff: bool = False
) -> list[File]:
    """Every file ``urlpath`` names (globs expanded), with its size and first bytes, and
    with ``sniff`` the encoding they tell (``encoding="auto"``)."""
    fs, _, paths = fsspec.core.get_fs_token_paths(
        urlpath, mode="rb", storage_options=storage_options or {}
    )
    if not paths:
        raise FileNotFoundError(f"no file matches {urlpath!r}")
    files = []
    for path, name in zip(paths, names(urlpath, fs, paths), strict=True):
        compression = fsspec.utils.infer_compression(path)
        of = fsspec.core.OpenFile(fs, path, mode="rb", compression=compression)
        with of as f:
            head = f.read(SNIFF_BYTES + 1 if sniff else 4)
        size = -1 if compression else int(fs.size(path))
        detected = detect_line_codec(head, path) if sniff else None
        files.append(File(fs, path, name, compression, size, head[:4], detected))
    return files


def block_spans(
    file: File, blocksize: int | None, unit: int, prelude: int = 0
) -> list[tuple[int, int]]:
    """``[start, end)`` of each block, starts at code-unit offsets (one for a compressed
    file, or with no block size); ``prelude``: the bytes the first block holds at least."""
    size = file.size
    if size < 0 or blocksize is None or size <= blocksize:
        return [(0, max(size, 0) if size >= 0 else -1)]
    # The first block holds at least the byte-order mark's bytes: the line engine cuts
    # no line before it knows the byte order.
    starts = sorted({max(k - k % unit, prelude) for k in range(blocksize, size, blocksize)})
    return list(itertools.pairwise([0, *(s for s in starts if s < size), size]))


def parse_blocksize(blocksize: int | str | None) -> int | None:
    if blocksize is None:
        return None
    size = parse_bytes(blocksize) if isinstance(blocksize, str) else blocksize
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"blocksize must be a positive number of bytes, not {blocksize!r}")
    return size


def read_at(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    return f.read(size)


def _after_ascii(f: BinaryIO, pos: int, stop: int) -> int | None:
    """The first offset at or after ``pos`` that follows an ASCII byte (where a UTF-8
    family decoder holds nothing), looking at bytes before ``stop``; ``None`` if none."""
    if pos <= 0:
        return 0
    offset = pos - 1
    while offset < stop:
        chunk = read_at(f, offset, min(CHUNK, stop - offset))
        if not chunk:
            return None
        for k, byte in enumerate(chunk):
            if byte < 0x80:
                return offset + k + 1
        offset += len(chunk)
    return None


def ascii_aligned(file: File, f: BinaryIO, start: int, end: int) -> tuple[int, int] | None:
    """The bytes a UTF-8 family block really covers: from just after an ASCII byte to
    just after one, by the same rule at both ends (``None``: it covers none)."""
    p = _after_ascii(f, start, end)
    if p is None:
        return None
    if end >= file.size or end < 0:
        return p, -1
    q = _after_ascii(f, end, file.size)
    return p, -1 if q is None else q
