"""A restart from a checkpoint reads every rotation made while it was stopped.

After draining the copy that holds the checkpoint's position, the follower must read the
rotations made after that copy before the live file: two copytruncates in a row, or a
compressed rotation whose position is its very end, followed by a plain one.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import anyio
import pytest

from utf8stream import FollowCheckpoint, follow

pytestmark = [pytest.mark.anyio]


def lines(tag: str, n: int) -> bytes:
    return "".join(f"{tag} {i:03} {'x' * 40}\n" for i in range(n)).encode()


async def read(
    log: Path, count: int, checkpoint: FollowCheckpoint | None = None
) -> tuple[list[str], FollowCheckpoint]:
    got: list[str] = []
    async with follow(
        str(log), start="beginning", checkpoint=checkpoint, until_eof=checkpoint is not None
    ) as followed:
        with anyio.move_on_after(10):
            async for line in followed:
                got.append(line.text.split()[0])
                if len(got) == count:
                    break
        return got, followed.checkpoint()


def copytruncate(log: Path, to: Path, then: bytes) -> None:
    shutil.copyfile(log, to)
    with log.open("r+b") as f:
        f.truncate(0)
    with log.open("ab") as f:
        f.write(then)


async def test_two_copytruncates_while_stopped(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(lines("a", 50))
    got, cp = await read(log, 40)
    assert got == ["a"] * 40
    copytruncate(log, tmp_path / "app.log.1", lines("b", 20))
    (tmp_path / "app.log.1").rename(tmp_path / "app.log.2")
    copytruncate(log, tmp_path / "app.log.1", lines("c", 20))
    rest, _ = await read(log, 50, cp)
    assert [rest.count(tag) for tag in "abc"] == [10, 20, 20]
    assert rest == sorted(rest)


async def test_a_rotation_after_a_compressed_one_read_to_its_end(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    one, two = tmp_path / "app.log.1", tmp_path / "app.log.2"
    log.write_bytes(lines("a", 50))
    got, cp = await read(log, 50)
    assert got == ["a"] * 50
    log.rename(one)
    log.write_bytes(lines("b", 50))
    one.rename(two)
    log.rename(one)
    log.write_bytes(lines("c", 50))
    with two.open("rb") as src, gzip.open(tmp_path / "app.log.2.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    two.unlink()
    rest, _ = await read(log, 100, cp)
    assert [rest.count(tag) for tag in "abc"] == [0, 50, 50]
    assert rest == sorted(rest)
