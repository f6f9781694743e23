"""follow() takes unread bytes from a rotated copy: copytruncate's ``app.log.1`` (plain or
compressed) and a rotation compressed while the follower was stopped."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from _helpers import append, take_texts

from utf8stream import Malformed, MalformedKind
from utf8stream.apps.follow import FollowCheckpoint, Notice, follow
from utf8stream.follower import ReadPolicy

pytestmark = [pytest.mark.anyio]

COMPRESSORS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip": (".gz", gzip.compress),
    "xz": (".xz", lzma.compress),
    "bzip2": (".bz2", bz2.compress),
}


def copy_compressed(source: Path, target: Path, compression: str | None) -> None:
    if compression is None:
        shutil.copyfile(source, target)
    else:
        target.write_bytes(COMPRESSORS[compression][1](source.read_bytes()))


@pytest.mark.parametrize("compression", [None, "gzip", "xz"])
async def test_lines_appended_before_a_copytruncate_are_taken_from_the_copy(
    tmp_path: Path, compression: str | None
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\ntwo\n")
    events: list[Malformed] = []
    notices: list[Notice] = []
    async with follow(
        path,
        start="beginning",
        poll_interval=0.01,
        on_malformed=events.append,
        on_notice=notices.append,
    ) as lines:
        assert await take_texts(lines, 2) == ["one", "two"]  # everything there was read
        # Written while the follower was not looking, then copytruncate.
        append(path, b"late 1\nlate 2\nlate 3 unfinished")
        suffix = "" if compression is None else COMPRESSORS[compression][0]
        copy_compressed(path, tmp_path / f"app.log.1{suffix}", compression)
        os.truncate(path, 0)
        append(path, b"after\n")
        got = await lines.__anext__()
        rest = await take_texts(lines, 3)
    assert [got.text, *rest] == ["late 1", "late 2", "late 3 unfinished", "after"]
    assert got.path == str(tmp_path / f"app.log.1{suffix}")
    assert not [e for e in events if e.kind is MalformedKind.LOST_BYTES]
    assert [n.kind for n in notices] == ["truncated"]
    assert "taken from its rotated copy" in notices[0].message
    assert lines.statistics().truncations == 1


@pytest.mark.parametrize("read_ahead", [False, True])
async def test_only_the_bytes_no_copy_holds_are_a_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_ahead: bool
) -> None:
    """``read_ahead``: the reads are done in the event loop (as for a file in memory),
    each full one followed by the next done ahead in a thread (with the accelerator),
    and the next read is done ahead before the copytruncate: the file is shorter then
    than the bytes read ahead, so they are not taken, and the truncation is handled the
    same (apps/follow/test_reading_ahead.py)."""
    reading = ReadPolicy(read_size=16, in_memory=True if read_ahead else None)
    path = tmp_path / "app.log"
    records = [f"line {i:03d}" for i in range(10)]  # 9 bytes each, with the newline
    path.write_bytes("".join(r + "\n" for r in records).encode())
    events: list[Malformed] = []
    notices: list[Notice] = []
    async with follow(
        path,
        start="beginning",
        poll_interval=0.01,
        on_malformed=events.append,
        on_notice=notices.append,
        reading=reading,
    ) as lines:
        assert await take_texts(lines, 1) == records[:1]  # 16 bytes read
        shutil.copyfile(path, tmp_path / "app.log.1")  # copytruncate's copy: 90 bytes
        append(path, b"written after the copy\n")  # 23 bytes no copy holds
        assert await take_texts(lines, 1) == records[1:2]  # 32 bytes read, 113 seen
        if read_ahead:
            await anyio.sleep(0.05)  # the next read is done ahead meanwhile
        os.truncate(path, 0)
        append(path, b"after\n")
        got = await take_texts(lines, 9)
    assert got == [*records[2:], "after"]
    gaps = [e for e in events if e.kind is MalformedKind.LOST_BYTES]
    assert [g.offset for g in gaps] == [113]
    assert [n.message for n in notices] == [
        "file truncated; 58 bytes not read yet were taken from its rotated copy;"
        " 23 bytes not read were lost"
    ]


async def test_a_damaged_compressed_copy_is_a_notice_never_text(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    events: list[Malformed] = []
    notices: list[Notice] = []
    async with follow(
        path,
        start="beginning",
        poll_interval=0.01,
        on_malformed=events.append,
        on_notice=notices.append,
    ) as lines:
        assert await take_texts(lines, 1) == ["one"]
        append(path, b"late\n" * 200)
        whole = gzip.compress(path.read_bytes())
        (tmp_path / "app.log.1.gz").write_bytes(whole[: len(whole) - 12])  # cut short
        os.truncate(path, 0)
        append(path, b"after\n")
        got = await take_texts(lines, 1)
    assert got == ["after"]  # no "late" line, no gzip bytes
    assert [n.kind for n in notices] == ["damaged", "truncated"]
    assert "app.log.1.gz" in notices[0].message
    assert "is truncated" in notices[0].message


async def _stopped_at(path: Path, n: int) -> FollowCheckpoint:
    async with follow(path, start="beginning", poll_interval=0.01) as lines:
        await take_texts(lines, n)
        return lines.checkpoint()


@pytest.mark.parametrize("compression", ["gzip", "xz", "bzip2"])
async def test_a_rotation_compressed_while_stopped_is_drained_from_the_checkpoint(
    tmp_path: Path, compression: str
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    checkpoint = await _stopped_at(path, 1)
    append(path, b"two\nthree\n")
    # logrotate with compress: renamed, compressed, a new file created.
    suffix, compress = COMPRESSORS[compression]
    (tmp_path / f"app.log.1{suffix}").write_bytes(compress(path.read_bytes()))
    path.unlink()
    path.write_bytes(b"four\n")
    async with follow(path, checkpoint=checkpoint, poll_interval=0.01) as lines:
        got = await take_texts(lines, 3)
    assert got == ["two", "three", "four"]


async def test_delaycompress_drains_the_compressed_one_then_the_plain_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    checkpoint = await _stopped_at(path, 1)
    append(path, b"two\n")
    # Two rotations while stopped: ours is now app.log.2.gz, app.log.1 is plain.
    os.rename(path, tmp_path / "app.log.1")
    path.write_bytes(b"three\n")
    os.rename(tmp_path / "app.log.1", tmp_path / "app.log.2")
    os.rename(path, tmp_path / "app.log.1")
    path.write_bytes(b"four\n")
    older = tmp_path / "app.log.2"
    (tmp_path / "app.log.2.gz").write_bytes(gzip.compress(older.read_bytes()))
    older.unlink()
    async with follow(path, checkpoint=checkpoint, poll_interval=0.01, rotate_grace=0) as lines:
        got = await take_texts(lines, 3)
    assert got == ["two", "three", "four"]


async def test_a_copytruncate_while_stopped_is_drained_from_the_copy(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    checkpoint = await _stopped_at(path, 1)
    append(path, b"two\n")
    (tmp_path / "app.log.1.gz").write_bytes(gzip.compress(path.read_bytes()))
    os.truncate(path, 0)
    append(path, b"three\n")
    async with follow(path, checkpoint=checkpoint, poll_interval=0.01) as lines:
        got = await take_texts(lines, 2)
    assert got == ["two", "three"]


async def test_a_compressed_rotation_is_read_once_while_the_path_is_waited_for(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    checkpoint = await _stopped_at(path, 1)
    append(path, b"two\n")
    (tmp_path / "app.log.1.gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()  # and no new file yet

    async def create_soon() -> None:
        await anyio.sleep(0.3)  # the path stays missing a while
        path.write_bytes(b"three\n")

    async with (
        follow(path, checkpoint=checkpoint, poll_interval=0.01, retry=True) as lines,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(create_soon)
        got = await take_texts(lines, 2)
    assert got == ["two", "three"]


async def test_an_older_copy_with_the_same_first_bytes_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    banner = b"service started\n"
    older = tmp_path / "app.log.2"  # a previous cycle's copy: same banner, more bytes
    older.write_bytes(banner + b"previous cycle 1\nprevious cycle 2\nprevious cycle 3\n")
    an_hour_ago = time.time() - 3600
    os.utime(older, (an_hour_ago, an_hour_ago))
    path.write_bytes(banner)
    notices: list[Notice] = []
    async with follow(
        path, start="beginning", poll_interval=0.01, on_notice=notices.append
    ) as lines:
        assert await take_texts(lines, 1) == ["service started"]
        shutil.copyfile(path, tmp_path / "app.log.1")  # holds nothing we have not read
        os.truncate(path, 0)
        append(path, b"after\n")
        assert await take_texts(lines, 1) == ["after"]
    assert [n.message for n in notices] == ["file truncated"]


@pytest.mark.parametrize("compression", [None, "gzip"])
async def test_the_copys_unread_part_is_read_in_bounded_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str | None
) -> None:
    """8 MB not read yet when the file is truncated: the first line recovered from the
    copy comes after one read of it, not after all of it was cut into lines."""
    import tracemalloc

    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    unread = [f"late {i:06d} {'x' * 66}" for i in range(100_000)]  # 80 bytes a line
    reading = ReadPolicy(read_size=1 << 16)
    async with follow(path, start="beginning", poll_interval=0.01, reading=reading) as lines:
        assert await take_texts(lines, 1) == ["one"]
        append(path, "".join(f"{line}\n" for line in unread).encode())
        suffix = "" if compression is None else COMPRESSORS[compression][0]
        copy_compressed(path, tmp_path / f"app.log.1{suffix}", compression)
        os.truncate(path, 0)
        append(path, b"after\n")
        tracemalloc.start()
        try:
            first = await take_texts(lines, 1, timeout=60)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        rest = await take_texts(lines, len(unread), timeout=60)
    assert first + rest == [*unread, "after"]
    # All of it as lines would be well over 8 MB; one read's lines are about 64 KiB
    # (the decompressor keeps a window and buffers of its own besides).
    assert peak < 3_000_000, peak
