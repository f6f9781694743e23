"""``transforms=`` on ``follow()`` and ``follow_many()``: each line's text transformed
whole, resumed from a checkpoint as one run, a fresh copy per file of many."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from _helpers import append, take_named
from _transform_helpers import Pairs, paired

from utf8stream import follow, follow_many
from utf8stream.follower import FollowOptions, ReadPolicy
from utf8stream.transforms import TextChange, TransformCheckpoint

pytestmark = [pytest.mark.anyio]

LINES = [f"{k} {'ab' * (k % 3)}a{'b' if k % 2 else ''} é" for k in range(300)]
DATA = "".join(line + ("\r\n" if k % 5 == 0 else "\n") for k, line in enumerate(LINES)).encode()


@pytest.mark.parametrize("read_size", [64, 1 << 20])
async def test_each_line_is_transformed_and_a_resume_gives_one_run(
    tmp_path: Path, read_size: int
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(DATA)
    pairs = Pairs()
    reading = ReadPolicy(read_size=read_size, cached_read_size=read_size, feed_size=read_size)
    got: list[str] = []
    async with follow(
        log, start="beginning", until_eof=True, reading=reading, transforms=pairs
    ) as lines:
        async for line in lines:
            got.append(line.text)
            # A line boundary needs no transform state.
            assert pairs.checkpoint().carry == ""
            if len(got) == 100:
                break
        saved = lines.checkpoint()
    async with follow(
        log, checkpoint=saved, until_eof=True, reading=reading, transforms=[Pairs()]
    ) as lines:
        got += [line.text async for line in lines]
    assert got == [paired(line) for line in _lines_as_read()]


def _lines_as_read() -> list[str]:
    """The lines as follow() cuts them by default (universal newlines)."""
    return DATA.decode().splitlines()


async def test_a_multi_line_event_is_transformed_whole(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"start xa\n  bab\nstart ab\n")
    async with follow(
        log, start="beginning", until_eof=True, multiline="indented", transforms=Pairs()
    ) as lines:
        assert [line.text async for line in lines] == ["start xa\n  bX", "start X"]


async def test_each_file_of_many_gets_its_pattern_s_transforms_fresh(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"")
    (tmp_path / "b.log").write_bytes(b"")
    (tmp_path / "c.txt").write_bytes(b"")
    changes: list[TextChange] = []
    given = Pairs(changes.append)
    async with follow_many(
        [tmp_path / "*.log", tmp_path / "*.txt"],
        start="beginning",
        transforms=given,
        transforms_by_pattern={str(tmp_path / "*.txt"): []},
    ) as lines:
        append(tmp_path / "a.log", b"a")  # held by a's follower, not by b's
        append(tmp_path / "b.log", b"bab\n")
        append(tmp_path / "c.txt", b"ab\n")
        append(tmp_path / "a.log", b"b\n")
        with anyio.fail_after(10):
            got = await take_named(lines, 3)
    assert sorted(got) == [("a.log", "X"), ("b.log", "bX"), ("c.txt", "ab")]
    assert given.position == 0  # each file had a copy of its own
    assert sorted((c.offset, c.original) for c in changes) == [(0, "ab"), (1, "ab")]


def test_transforms_that_are_not_transforms_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="transforms="):
        FollowOptions(transforms="NFC")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="transforms_by_pattern="):
        follow_many(str(tmp_path / "*.log"), transforms_by_pattern={"*.log": 3})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="not followed"):
        follow_many(str(tmp_path / "*.log"), transforms_by_pattern={"*.txt": Pairs()})


class _Unregistered(Pairs):
    def checkpoint(self) -> TransformCheckpoint:
        return TransformCheckpoint("not-registered")


def test_a_transform_that_cannot_be_copied_is_refused_at_once(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no transform of kind 'not-registered'"):
        follow_many(str(tmp_path / "*.log"), transforms=_Unregistered())
