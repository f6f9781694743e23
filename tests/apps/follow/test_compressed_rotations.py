"""Compressed rotations: recognised by their magic bytes, fingerprinted
over the decompressed head as the plain file was, drained from a decompressed offset, and
a truncated or corrupt one is a ``CompressedFileError``, never bytes handed on as text."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from _helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream.apps import _compressed
from utf8stream.apps._compressed import (
    CHUNK_BYTES,
    CompressedFileError,
    UnsupportedCompressionError,
    compression_of,
    decompressed_size,
    fingerprint,
    matches,
    read_from,
)
from utf8stream.apps.follow import FINGERPRINT_BYTES
from utf8stream.apps.follow._reading import _identity_of

COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": zstandard.ZstdCompressor().compress,
}
SUFFIXES = {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz", "zstd": ".zst"}


def log_text(lines: int) -> bytes:
    return b"".join(f"{n:08d} request served in {n % 97} ms\n".encode() for n in range(lines))


#: Longer than one read chunk, so offsets land inside later chunks too.
LONG = log_text(6_000)
assert len(LONG) > 2 * CHUNK_BYTES


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def plain_identity(tmp_path: Path, data: bytes) -> tuple[int, str]:
    """The fingerprint the follower computes for ``data`` as a plain file."""
    fd = os.open(write(tmp_path / "plain.log", data), os.O_RDONLY)
    try:
        identity = _identity_of(fd)
    finally:
        os.close(fd)
    return identity.head_length, identity.head_sha256


@pytest.fixture(params=sorted(COMPRESSORS))
def compression(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_each_format_is_recognised_by_its_magic(tmp_path: Path, compression: str) -> None:
    rotated = write(tmp_path / "app.log.1", COMPRESSORS[compression](LONG))
    assert compression_of(rotated) == compression


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("app.log.1.gz", b"plain text after all\n", None),
        ("app.log.1.gz", lzma.compress(b"xz under a gz name\n"), "xz"),
        ("app.log.1.bz2", gzip.compress(b"gzip under a bz2 name\n"), "gzip"),
        ("app.log.1", b"BZh1 is how this line starts, and it is text\n", None),
        ("app.log.1.zst", b"", None),
        ("app.log.1.lz4", b"\x04\x22\x4d\x18rest", "lz4"),
    ],
    # Named, not by their bytes: gzip's header holds the time it was made, so every
    # process would name the case differently (pytest-xdist's workers must agree).
    ids=["text-as-gz", "xz-as-gz", "gzip-as-bz2", "text-starting-BZh", "empty-zst", "lz4"],
)
def test_the_magic_decides_not_the_suffix(
    tmp_path: Path, name: str, data: bytes, expected: str | None
) -> None:
    assert compression_of(write(tmp_path / name, data)) == expected


@pytest.mark.parametrize("size", [0, 10, FINGERPRINT_BYTES - 1, FINGERPRINT_BYTES, len(LONG)])
def test_the_fingerprint_is_the_plain_files(tmp_path: Path, compression: str, size: int) -> None:
    data = LONG[:size]
    rotated = write(
        tmp_path / ("app.log.1" + SUFFIXES[compression]), COMPRESSORS[compression](data)
    )
    assert fingerprint(rotated) == plain_identity(tmp_path, data)
    if data:
        assert fingerprint(rotated) != plain_identity(tmp_path, b"#" + data[1:])


def test_matches_a_head_fingerprinted_when_the_file_was_short(
    tmp_path: Path, compression: str
) -> None:
    rotated = write(tmp_path / "app.log.1", COMPRESSORS[compression](LONG))
    for length in (1, 100, FINGERPRINT_BYTES):
        digest = hashlib.sha256(LONG[:length]).hexdigest()
        assert matches(rotated, length, digest)
        assert not matches(rotated, length, hashlib.sha256(b"#" + LONG[1:length]).hexdigest())
    short = write(tmp_path / "short.gz", gzip.compress(LONG[:50]))
    # A head longer than the file is not in it, whatever its digest.
    assert not matches(short, 51, hashlib.sha256(LONG[:50]).hexdigest())


@pytest.mark.parametrize(
    "offset",
    [0, 1, 4095, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 7, len(LONG) - 1, len(LONG)],
)
def test_read_from_yields_the_decompressed_bytes_from_an_offset(
    tmp_path: Path, compression: str, offset: int
) -> None:
    rotated = write(tmp_path / "app.log.1", COMPRESSORS[compression](LONG))
    chunks = list(read_from(rotated, offset))
    assert b"".join(chunks) == LONG[offset:]
    assert all(0 < len(chunk) <= CHUNK_BYTES for chunk in chunks)


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    max_examples=examples(50),
)
@given(data=st.binary(max_size=3000), cut=st.integers(0, 3100), members=st.integers(1, 3))
def test_read_from_equals_slicing_the_plain_bytes(
    tmp_path: Path, compression: str, data: bytes, cut: int, members: int
) -> None:
    compress = COMPRESSORS[compression]
    step = len(data) // members + 1
    parts = [data[i : i + step] for i in range(0, len(data), step)] or [b""]
    rotated = write(tmp_path / "app.log.1", b"".join(compress(part) for part in parts))
    assert b"".join(read_from(rotated, cut)) == data[cut:]
    assert fingerprint(rotated) == plain_identity(tmp_path, data)


def test_an_offset_past_the_end_yields_nothing(tmp_path: Path, compression: str) -> None:
    rotated = write(tmp_path / "app.log.1", COMPRESSORS[compression](LONG))
    assert list(read_from(rotated, len(LONG) + 1)) == []
    assert decompressed_size(rotated) == len(LONG)


def test_concatenated_members_are_read_through(tmp_path: Path, compression: str) -> None:
    # gzip -c a >> b, or a rotation compressed in two goes, gives several members/frames.
    first, second = LONG[:1000], LONG[1000:3000]
    compress = COMPRESSORS[compression]
    rotated = write(tmp_path / "app.log.1", compress(first) + compress(second))
    assert b"".join(read_from(rotated, 500)) == (first + second)[500:]
    assert decompressed_size(rotated) == len(first) + len(second)


def test_a_negative_offset_is_refused(tmp_path: Path) -> None:
    rotated = write(tmp_path / "app.log.1.gz", gzip.compress(LONG))
    with pytest.raises(ValueError, match="offset"):
        list(read_from(rotated, -1))


def test_a_plain_file_is_not_taken_for_a_compressed_one(tmp_path: Path) -> None:
    plain = write(tmp_path / "app.log.1.gz", LONG)
    for call in (fingerprint, decompressed_size, lambda path: list(read_from(path, 0))):
        with pytest.raises(ValueError, match="not a compressed file") as caught:
            call(plain)
        assert not isinstance(caught.value, CompressedFileError)


@pytest.mark.parametrize("keep", [0.5, 0.99])
def test_a_truncated_file_is_an_error_not_a_short_read(
    tmp_path: Path, compression: str, keep: float
) -> None:
    whole = COMPRESSORS[compression](LONG)
    rotated = write(tmp_path / "app.log.1", whole[: int(len(whole) * keep)])
    with pytest.raises(CompressedFileError, match="truncated") as caught:
        decompressed_size(rotated)
    assert caught.value.compression == compression
    assert caught.value.path == str(rotated)
    received = bytearray()
    with pytest.raises(CompressedFileError, match="truncated"):
        for chunk in read_from(rotated, 0):
            received += chunk
    # What came before the damage is the file's own text, never compressed bytes.
    assert LONG.startswith(received)


def test_a_corrupt_file_is_an_error(tmp_path: Path, compression: str) -> None:
    whole = bytearray(COMPRESSORS[compression](LONG))
    middle = len(whole) // 2
    whole[middle : middle + 16] = bytes(255 - b for b in whole[middle : middle + 16])
    rotated = write(tmp_path / "app.log.1", bytes(whole))
    with pytest.raises(CompressedFileError) as caught:
        decompressed_size(rotated)
    assert caught.value.compression == compression
    assert str(rotated) in str(caught.value)


# xz and bzip2 readers (Python's, like the bzip2 tool) ignore trailing bytes that do not
# start a stream; a truncated further stream is still caught (the truncation test).
@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_garbage_after_the_last_member_is_an_error(tmp_path: Path, compression: str) -> None:
    rotated = write(tmp_path / "app.log.1", COMPRESSORS[compression](LONG) + b"not compressed")
    with pytest.raises(CompressedFileError, match="corrupt"):
        decompressed_size(rotated)


def test_a_recognised_format_without_a_decompressor_says_so(tmp_path: Path) -> None:
    lz4 = write(tmp_path / "app.log.1.lz4", b"\x04\x22\x4d\x18" + bytes(20))
    with pytest.raises(UnsupportedCompressionError, match="lz4"):
        fingerprint(lz4)


def test_zstd_without_a_decompressor_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rotated = write(tmp_path / "app.log.1.zst", COMPRESSORS["zstd"](LONG))
    # Neither decompressor importable: Python before 3.14, and no zstandard package.
    monkeypatch.setitem(sys.modules, "compression.zstd", None)
    monkeypatch.setitem(sys.modules, "zstandard", None)
    assert not _compressed.zstd_available()
    assert compression_of(rotated) == "zstd"
    with pytest.raises(UnsupportedCompressionError, match="zstandard"):
        list(read_from(rotated, 0))


def test_zstandard_reads_when_python_has_no_zstd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On Python 3.14 the standard library's reader is used; this keeps zstandard's tested.
    monkeypatch.setitem(sys.modules, "compression.zstd", None)  # as before Python 3.14
    compress = COMPRESSORS["zstd"]
    rotated = write(tmp_path / "app.log.1.zst", compress(LONG[:70_000]) + compress(LONG[70_000:]))
    assert b"".join(read_from(rotated, 3)) == LONG[3:]
    truncated = write(tmp_path / "cut.zst", compress(LONG)[:-3])
    with pytest.raises(CompressedFileError, match="truncated"):
        decompressed_size(truncated)


def test_a_truncated_second_member_is_an_error(tmp_path: Path, compression: str) -> None:
    compress = COMPRESSORS[compression]
    second = compress(LONG[1000:])
    rotated = write(tmp_path / "app.log.1", compress(LONG[:1000]) + second[: len(second) // 2])
    with pytest.raises(CompressedFileError, match="truncated"):
        decompressed_size(rotated)
