"""Rotations compressed before the follower reached them are read, in rotation order.

After the file holding the position, the follower takes the rotated files in rotation
order, compressed ones included: a rotation compressed meanwhile (``app.log.2.gz`` when
``app.log.1`` is the next plain one) is read, not skipped for the plain files.  The same
holds for a follower left behind by two rotations while it drains a renamed file.
"""

from __future__ import annotations

import builtins
import dataclasses
import gzip
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from utf8stream import FollowCheckpoint, Notice, follow

pytestmark = [pytest.mark.anyio]


def lines(tag: str, n: int) -> bytes:
    return "".join(f"{tag} {i:03} {'x' * 40}\n" for i in range(n)).encode()


def rotate(directory: Path, then: bytes) -> None:
    """logrotate's compress + delaycompress: shift the .gz files, ``.1`` to ``.2``, the log
    to ``.1``, a new log, then ``.2`` compressed to ``.2.gz``."""
    log = directory / "app.log"
    for number in range(8, 1, -1):
        older = directory / f"app.log.{number}.gz"
        if older.exists():
            older.rename(directory / f"app.log.{number + 1}.gz")
    one, two = directory / "app.log.1", directory / "app.log.2"
    if one.exists():
        one.rename(two)
    log.rename(one)
    log.write_bytes(then)
    if two.exists():
        with two.open("rb") as src, gzip.open(directory / "app.log.2.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        two.unlink()


async def stopped_after_20(log: Path) -> tuple[list[str], FollowCheckpoint]:
    """``log`` written with 50 lines of ``a``, followed for 20 of them, then stopped: the
    lines, and the checkpoint after them."""
    log.write_bytes(lines("a", 50))
    got: list[str] = []
    async with follow(str(log), start="beginning") as followed:
        async for line in followed:
            got.append(line.text)
            if len(got) == 20:
                break
        return got, followed.checkpoint()


async def resumed(log: Path, checkpoint: FollowCheckpoint) -> list[str]:
    """What a follower resumed from ``checkpoint`` reads to the end."""
    async with follow(str(log), checkpoint=checkpoint, until_eof=True) as followed:
        with anyio.fail_after(10):
            return [line.text async for line in followed]


async def test_restart_reads_every_rotation_compressed_while_stopped(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    got, checkpoint = await stopped_after_20(log)
    for tag in "bcd":
        rotate(tmp_path, lines(tag, 50))
    # a is in app.log.3.gz, b in app.log.2.gz, c in app.log.1, d in app.log.
    assert sorted(p.name for p in tmp_path.iterdir())[:4] == [
        "app.log",
        "app.log.1",
        "app.log.2.gz",
        "app.log.3.gz",
    ]
    rest = await resumed(log, checkpoint)
    expected = (lines("a", 50) + lines("b", 50) + lines("c", 50) + lines("d", 50)).decode()
    assert got + rest == expected.splitlines()


async def test_a_follower_left_behind_reads_the_rotation_compressed_meanwhile(
    tmp_path: Path,
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(lines("a", 50))
    got: list[str] = []
    async with follow(str(log), start="beginning", rotate_grace=0) as followed:
        iterator = followed.__aiter__()
        with anyio.fail_after(10):
            while len(got) < 20:
                got.append((await iterator.__anext__()).text)
            # Still reading a (open, then deleted once compressed) when b, its successor,
            # is compressed too.
            for tag in "bcd":
                rotate(tmp_path, lines(tag, 50))
            while len(got) < 200:
                got.append((await iterator.__anext__()).text)
    expected = (lines("a", 50) + lines("b", 50) + lines("c", 50) + lines("d", 50)).decode()
    assert got == expected.splitlines()


async def test_a_file_of_another_name_on_the_checkpoints_inode_is_not_read(
    tmp_path: Path,
) -> None:
    """The checkpoint's file was compressed and deleted while stopped, and its inode went
    to another file of the directory (the soak test met the checkpoint's own temporary
    file there): the rest comes from the compressed copy, and the other file is left."""
    log = tmp_path / "app.log"
    got, checkpoint = await stopped_after_20(log)
    rotate(tmp_path, lines("b", 50))
    rotate(tmp_path, lines("c", 50))  # a is app.log.2.gz now, its inode free
    other = tmp_path / ".tail.checkpoint.123.tmp"
    other.write_bytes(b'{"not": "a log line"}')
    # As if the file system had given a's inode to the other file.
    reused = dataclasses.replace(checkpoint.file, inode=other.stat().st_ino)
    checkpoint = dataclasses.replace(checkpoint, file=reused)
    rest = await resumed(log, checkpoint)
    expected = (lines("a", 50) + lines("b", 50) + lines("c", 50)).decode()
    assert got + rest == expected.splitlines()


@pytest.mark.parametrize("listed", ["sorted", "reversed"])
async def test_a_rotation_being_compressed_is_read_from_its_plain_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listed: str
) -> None:
    """``app.log.2.gz`` just created, still empty, beside ``app.log.2``: the plain file is
    read, whichever the directory lists first (the soak test saw the empty twin taken for
    a plain file, its gzip bytes printed as it filled, and app.log.2 skipped)."""
    log = tmp_path / "app.log"
    got, checkpoint = await stopped_after_20(log)
    rotate(tmp_path, lines("b", 50))
    rotate(tmp_path, lines("c", 50))  # a: app.log.2.gz, b: app.log.1
    # The next rotation, caught while compressing b: app.log.2 and an empty app.log.2.gz.
    (tmp_path / "app.log.2.gz").rename(tmp_path / "app.log.3.gz")
    (tmp_path / "app.log.1").rename(tmp_path / "app.log.2")
    log.rename(tmp_path / "app.log.1")
    log.write_bytes(lines("d", 50))
    (tmp_path / "app.log.2.gz").write_bytes(b"")
    real_iterdir = Path.iterdir

    def iterdir(self: Path) -> Iterator[Path]:
        return iter(sorted(real_iterdir(self), reverse=listed == "reversed"))

    monkeypatch.setattr(Path, "iterdir", iterdir)
    rest = await resumed(log, checkpoint)
    expected = b"".join(lines(tag, 50) for tag in "abcd").decode()
    assert got + rest == expected.splitlines()


@pytest.mark.parametrize("looks", range(1, 9))
async def test_a_copy_replaced_by_the_next_rotation_while_looked_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, looks: int
) -> None:
    """The compressed copy holding the checkpoint's file is looked for, then the next
    rotation shifts it to ``app.log.3.gz`` and starts compressing into ``app.log.2.gz``
    (still empty) before the follower reads it: the follower looks again (the many-file
    soak saw a restarted follower die there of "app.log.2.gz: not a compressed file").
    The rotation lands just before the copy's ``looks``-th opening, made with the file
    system alone: anywhere in the search, and between the search and the read."""

    log = tmp_path / "app.log"
    got, checkpoint = await stopped_after_20(log)
    rotate(tmp_path, lines("b", 50))
    rotate(tmp_path, lines("c", 50))  # a: app.log.2.gz, b: app.log.1
    copy = tmp_path / "app.log.2.gz"
    opened: list[int] = []
    real_open = builtins.open

    def opening(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike) and Path(file) == copy and mode == "rb":
            opened.append(1)
            if len(opened) == looks:
                # The next rotation, caught while compressing b.
                copy.rename(tmp_path / "app.log.3.gz")
                (tmp_path / "app.log.1").rename(tmp_path / "app.log.2")
                log.rename(tmp_path / "app.log.1")
                log.write_bytes(lines("d", 50))
                copy.write_bytes(b"")
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", opening)
    rest = await resumed(log, checkpoint)
    expected = b"".join(lines(tag, 50) for tag in "abcd").decode()
    assert len(opened) >= looks  # the rotation landed
    assert got + rest == expected.splitlines()


async def test_a_name_that_stops_being_compressed_while_looked_at_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same race where copies are looked for: a name first seen compressed names a
    file that is not (the next rotation's, being compressed) when it is read.  It is
    passed over, with no problem told, instead of a ValueError ending the follower; the
    copy that holds the checkpoint's file is found after it."""
    log = tmp_path / "app.log"
    got, checkpoint = await stopped_after_20(log)
    # While stopped: a compressed into app.log.3.gz and deleted, d the new log, and
    # app.log.2.gz the next rotation's file, which logrotate is compressing.
    with gzip.open(tmp_path / "app.log.3.gz", "wb") as f:
        f.write(lines("a", 50))
    log.unlink()
    log.write_bytes(lines("d", 50))
    racing = tmp_path / "app.log.2.gz"
    compressed = gzip.compress(lines("x", 5))
    racing.write_bytes(compressed)
    # The race, made with the file system alone: once the follower's first look at the
    # name is over (its first bytes: gzip), the name holds bytes that are not compressed
    # yet; once its second look is over, the compressed file again.
    contents = [lines("x", 5), compressed]
    real_open = builtins.open

    class Looked(io.BufferedReader):
        def close(self) -> None:
            super().close()
            if contents:
                racing.write_bytes(contents.pop(0))

    def opening(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        ours = isinstance(file, str | os.PathLike) and Path(file) == racing
        if ours and contents and mode == "rb" and not args and not kwargs:
            return Looked(io.FileIO(file, "rb"))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", opening)
    notices: list[Notice] = []
    async with follow(
        str(log), checkpoint=checkpoint, until_eof=True, on_notice=notices.append
    ) as followed:
        with anyio.fail_after(10):
            rest = [line.text async for line in followed]
    assert contents == []  # the race happened
    assert [n for n in notices if n.kind == "damaged"] == []
    expected = (lines("a", 50) + lines("x", 5) + lines("d", 50)).decode()
    assert got + rest == expected.splitlines()
