"""A checkpoint that does not fit its file (past its end, other first bytes) is not
silently replaced by the file's beginning: a ``Notice`` says so, naming the checkpoint."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _helpers import take_texts

from utf8stream import FollowCheckpoint, Notice, follow

pytestmark = [pytest.mark.anyio]

#: 2,000 bytes: more than the fingerprint's 1,024, so the file can shrink and keep them.
LINES = [f"line {k:04d}" for k in range(200)]
CONTENT = "".join(f"{t}\n" for t in LINES).encode()


async def stopped_at_the_end(path: Path) -> FollowCheckpoint:
    async with follow(path, start="beginning", poll_interval=0.01) as lines:
        await take_texts(lines, len(LINES))
        return lines.checkpoint()


async def resumed(
    path: Path, checkpoint: FollowCheckpoint, n: int
) -> tuple[list[str], list[Notice]]:
    notices: list[Notice] = []
    async with follow(
        path, checkpoint=checkpoint, poll_interval=0.01, on_notice=notices.append
    ) as lines:
        return await take_texts(lines, n), notices


async def test_a_checkpoint_past_the_end_of_its_file_is_told(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(CONTENT)
    checkpoint = await stopped_at_the_end(path)
    os.truncate(path, 1500)  # the same first bytes, shorter than the checkpoint's offset
    texts, notices = await resumed(path, checkpoint, 150)
    assert texts == LINES[:150]
    assert [(n.kind, n.path, n.message) for n in notices] == [
        (
            "checkpoint",
            str(path),
            f"checkpoint at byte 2000 does not fit {path}: it is past the end of the file"
            " (1500 bytes); reading it from the beginning",
        )
    ]


async def test_a_checkpoint_of_other_first_bytes_is_told(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(CONTENT)
    checkpoint = await stopped_at_the_end(path)
    with open(path, "r+b") as f:  # rewritten in place: the same inode
        f.write(b"LINE")
    texts, notices = await resumed(path, checkpoint, 1)
    assert texts == ["LINE 0000"]
    assert [(n.kind, n.message) for n in notices] == [
        (
            "checkpoint",
            f"checkpoint at byte 2000 does not fit {path}: the file's first 1024 bytes are"
            " not the checkpoint's (rewritten, or another file); reading it from the beginning",
        )
    ]


async def test_a_checkpoint_that_fits_is_resumed_without_a_word(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(CONTENT)
    checkpoint = await stopped_at_the_end(path)
    with open(path, "ab") as f:
        f.write(b"more\n")
    assert await resumed(path, checkpoint, 1) == (["more"], [])


async def test_a_checkpoint_whose_file_is_gone_is_told(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(CONTENT)
    checkpoint = await stopped_at_the_end(path)
    # Moved where no rotation of it is looked for (kept: its inode is not reused).
    (tmp_path / "elsewhere").mkdir()
    path.rename(tmp_path / "elsewhere" / "x")
    path.write_bytes(b"new\n")
    texts, notices = await resumed(path, checkpoint, 1)
    assert texts == ["new"]
    assert [(n.kind, n.message) for n in notices] == [
        (
            "checkpoint",
            f"checkpoint at byte 2000 does not fit {path}: its file is neither there nor"
            " among its rotations (what it held past that byte is lost); reading the file"
            " there now from the beginning",
        )
    ]
