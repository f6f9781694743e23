"""A rotated file whose inode once belonged to a file already read is read all the same.

logrotate's ``rotate N`` deletes the oldest rotation, and the file system soon gives its
inode to the next new log; the follower knows files by inode *and* first bytes, so a
reused inode must not make it skip that new file when it in turn is rotated away.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from utf8stream import follow

pytestmark = [pytest.mark.anyio]


def lines(tag: str, n: int = 20) -> str:
    return "".join(f"{tag} {i} {'x' * 50}\n" for i in range(n))


async def test_a_reused_inode_does_not_hide_a_rotated_file(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    one, two = tmp_path / "app.log.1", tmp_path / "app.log.2"
    log.write_text(lines("a"))
    got: list[str] = []
    async with follow(str(log), start="beginning", rotate_grace=0.1) as lines_in:
        it = lines_in.__aiter__()

        async def take(n: int) -> None:
            with anyio.move_on_after(5):
                for _ in range(n):
                    got.append((await it.__anext__()).text.split()[0])

        await take(20)
        first = os.stat(log).st_ino
        log.rename(one)
        log.write_text(lines("b"))
        await take(20)
        # The oldest rotation goes; the next new log may well get its inode.
        one.unlink()
        log.rename(one)
        log.write_text(lines("c"))
        reused = os.stat(log).st_ino == first
        one.rename(two)
        log.rename(one)
        log.write_text(lines("d"))
        await take(40)
    assert [got.count(tag) for tag in "abcd"] == [20, 20, 20, 20], f"inode reused: {reused}"
    assert got == sorted(got, key="abcd".index)
