"""Read a rotated log that was compressed: recognise it, fingerprint it, drain it.

logrotate's ``compress`` turns ``app.log.1`` into ``app.log.1.gz`` (or ``.bz2``, ``.xz``,
``.zst``), possibly while the follower is stopped.  The unread tail of the old file then
lives only inside the compressed copy.  This module lets the follower find that copy (the
fingerprint of its *decompressed* head is the one a plain file would have had) and read
its decompressed bytes from the offset the checkpoint names.

The format is decided by the magic bytes, never by the suffix alone: a ``.gz`` name over
plain text is plain text, and a file without a suffix that starts like xz is xz.  A
truncated or corrupt compressed file raises :class:`CompressedFileError`; its bytes are
never handed on as if they were text.  (Bytes after the last xz or bzip2 stream that do
not start another stream are ignored, as Python's readers do; a truncated further stream
is an error.)

gzip, bzip2 and xz come with Python.  zstd needs Python 3.14's ``compression.zstd`` or the
``zstandard`` package (the ``utf8stream[compressed]`` extra); without either a zstd file is
still recognised, and reading it raises :class:`UnsupportedCompressionError`.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import importlib
import lzma
import os
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import Any, BinaryIO, Protocol

from ._identity import FINGERPRINT_BYTES, head_fingerprint

__all__ = [
    "FORMATS",
    "CompressedFileError",
    "UnsupportedCompressionError",
    "compression_of",
    "decompressed_size",
    "fingerprint",
    "matches",
    "read_from",
    "zstd_available",
]

#: Magic numbers.  bzip2's "BZh" and level digit are followed by the magic of a block or
#: of the end of the stream, which tells real bzip2 from a text that starts with "BZh1".
_MAGIC = (
    ("gzip", b"\x1f\x8b"),
    ("xz", b"\xfd7zXZ\x00"),
    ("zstd", b"\x28\xb5\x2f\xfd"),
    ("lz4", b"\x04\x22\x4d\x18"),
)
_BZIP2_MARKERS = (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90")
_MAGIC_BYTES = 10

#: Every format recognised; the ones this module can also read are in ``_OPENERS``.
FORMATS = ("gzip", "bzip2", "xz", "zstd", "lz4")

#: Decompressed bytes asked for at a time: the memory one read may take.
CHUNK_BYTES = 1 << 16
#: Compressed bytes handed to the zstandard decompressor at a time.  It has no output
#: limit, and zstd expands at most about 32,000 times, so this bounds one output.
_ZSTANDARD_INPUT_BYTES = 1 << 10


class CompressedFileError(ValueError):
    """A compressed file that cannot be read to its end: truncated, or corrupt."""

    def __init__(self, path: str, compression: str, reason: str) -> None:
        super().__init__(f"{path}: {compression} data {reason}")
        self.path = path
        self.compression = compression
        self.reason = reason


class UnsupportedCompressionError(CompressedFileError):
    """A compressed file whose format is recognised but no decompressor is installed."""


class _Reader(Protocol):
    def read(self, size: int, /) -> bytes: ...

    def close(self) -> None: ...


def compression_of(path: str | os.PathLike[str]) -> str | None:
    """The compression format ``path`` starts with (one of :data:`FORMATS`), or None."""
    with open(path, "rb") as f:
        head = f.read(_MAGIC_BYTES)
    for name, magic in _MAGIC:
        if head.startswith(magic):
            return name
    if head[:3] == b"BZh" and head[3:4] in b"123456789" and head[4:] in _BZIP2_MARKERS:
        return "bzip2"
    return None


def _stdlib_zstd() -> Any | None:
    try:
        return importlib.import_module("compression.zstd")
    except ImportError:  # Python < 3.14, or built without zstd
        return None


def _zstandard() -> Any | None:
    try:
        return importlib.import_module("zstandard")
    except ImportError:
        return None


def zstd_available() -> bool:
    """Whether zstd files can be read here (Python 3.14's module or ``zstandard``)."""
    return _stdlib_zstd() is not None or _zstandard() is not None


class _ZstandardReader:
    """zstd frames decoded with ``zstandard``, which reports a truncated frame.

    ``zstandard``'s own stream readers end quietly at a truncated frame; a
    decompression object says whether its frame reached its end (``eof``).
    """

    def __init__(self, raw: BinaryIO, module: Any) -> None:
        self._raw = raw
        self._new = module.ZstdDecompressor().decompressobj
        self._error: type[Exception] = module.ZstdError
        self._decompressor = self._new()
        self._in_frame = False
        self._pending = b""
        self._input = b""

    def read(self, size: int, /) -> bytes:
        while len(self._pending) < size:
            if not self._input:
                self._input = self._raw.read(_ZSTANDARD_INPUT_BYTES)
                if not self._input:
                    if self._in_frame:
                        raise EOFError("the last zstd frame is truncated")
                    break
            self._in_frame = True
            self._pending += self._decompressor.decompress(self._input)
            if self._decompressor.eof:
                self._input = self._decompressor.unused_data
                self._decompressor = self._new()
                self._in_frame = False
            else:
                self._input = b""
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    def close(self) -> None:
        self._raw.close()


def _open_zstd(path: str) -> _Reader:
    stdlib = _stdlib_zstd()
    if stdlib is not None:
        reader: _Reader = stdlib.ZstdFile(path, "rb")
        return reader
    module = _zstandard()
    if module is None:
        raise UnsupportedCompressionError(
            path,
            "zstd",
            "cannot be read: install zstandard (utf8stream[compressed]) or use Python 3.14+",
        )
    return _ZstandardReader(open(path, "rb"), module)


# Each reader is closed by _chunks, which owns it.
_OPENERS: dict[str, Callable[[str], _Reader]] = {
    "gzip": lambda path: gzip.GzipFile(path, "rb"),
    "bzip2": lambda path: bz2.BZ2File(path, "rb"),
    "xz": lambda path: lzma.LZMAFile(path, "rb"),  # noqa: SIM115
    "zstd": _open_zstd,
}


def _data_errors() -> tuple[type[Exception], ...]:
    errors: list[type[Exception]] = [lzma.LZMAError, zlib.error]
    for module in (_stdlib_zstd(), _zstandard()):
        if module is not None:
            errors.append(module.ZstdError)
    return tuple(errors)


def _chunks(path: str, compression: str) -> Generator[bytes, None, None]:
    """The decompressed bytes of ``path``, in chunks; data errors become ours."""
    opener = _OPENERS.get(compression)
    if opener is None:
        raise UnsupportedCompressionError(path, compression, "cannot be read: no decompressor")
    reader = opener(path)
    try:
        while True:
            try:
                chunk = reader.read(CHUNK_BYTES)
            except EOFError as exc:
                raise CompressedFileError(path, compression, f"is truncated ({exc})") from exc
            except _data_errors() as exc:
                raise CompressedFileError(path, compression, f"is corrupt ({exc})") from exc
            except OSError as exc:
                # gzip and bz2 report bad data as an OSError without an errno; one with an
                # errno is the disk or the file system failing, not the data.
                if exc.errno is not None:
                    raise
                raise CompressedFileError(path, compression, f"is corrupt ({exc})") from exc
            if not chunk:
                return
            yield chunk
    finally:
        reader.close()


def _compressed(path: str | os.PathLike[str]) -> tuple[str, str]:
    name = os.fspath(path)
    compression = compression_of(name)
    if compression is None:
        raise ValueError(f"{name}: not a compressed file")
    return name, compression


def _head(path: str | os.PathLike[str], length: int) -> bytes:
    name, compression = _compressed(path)
    head = b""
    chunks = _chunks(name, compression)
    try:
        for chunk in chunks:
            head += chunk
            if len(head) >= length:
                break
    finally:
        chunks.close()
    return head[:length]


def fingerprint(path: str | os.PathLike[str]) -> tuple[int, str]:
    """The follower's fingerprint of the decompressed file: (head length, SHA-256).

    Equal to the fingerprint the plain file had, so a checkpointed file identity finds
    its compressed copy.  Raises ``ValueError`` for a file that is not compressed.
    """
    return head_fingerprint(_head(path, FINGERPRINT_BYTES))


def matches(path: str | os.PathLike[str], head_length: int, head_sha256: str) -> bool:
    """Whether the decompressed file starts with the head a checkpoint fingerprinted."""
    head = _head(path, head_length)
    return len(head) == head_length and hashlib.sha256(head).hexdigest() == head_sha256


def read_from(path: str | os.PathLike[str], offset: int) -> Iterator[bytes]:
    """The decompressed bytes of ``path`` from decompressed byte ``offset`` on, in chunks.

    An offset at or past the end yields nothing, as a positional read there does.  The
    bytes before ``offset`` are decompressed and dropped: the formats have no index.
    Raises :class:`CompressedFileError` when the data turns out truncated or corrupt,
    after yielding the bytes before the damage (see :func:`decompressed_size`).
    """
    if offset < 0:
        raise ValueError(f"offset must be >= 0, not {offset}")
    name, compression = _compressed(path)
    skip = offset
    for chunk in _chunks(name, compression):
        if skip >= len(chunk):
            skip -= len(chunk)
            continue
        yield chunk[skip:]
        skip = 0


def decompressed_size(path: str | os.PathLike[str]) -> int:
    """Decompress ``path`` to its end and return its length: a full integrity check.

    gzip, xz and zstd verify their checksums only at the end of each member, so bytes
    :func:`read_from` yields before it raises may be damaged.  A caller that must hand on
    nothing from a damaged file checks it with this first (it costs one more pass).
    """
    name, compression = _compressed(path)
    return sum(len(chunk) for chunk in _chunks(name, compression))
