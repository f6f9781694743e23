"""``partial_after=``: an unfinished last line handed out once it has waited, its rest
later, with a checkpoint that neither loses nor repeats a byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from _helpers import append, take_lines

from utf8stream import Line, follow, follow_many

pytestmark = [pytest.mark.anyio]


def shown(lines: list[Line]) -> list[tuple[str, int, bool]]:
    return [(line.text, line.offset, line.terminated) for line in lines]


async def test_an_unfinished_line_comes_in_pieces_and_its_rest_later(tmp_path: Path) -> None:
    path = tmp_path / "p.log"
    path.write_bytes(b"")
    async with follow(path, start="beginning", poll_interval=0.01, partial_after=0.02) as lines:
        append(path, b"done\nDownloading 50%")
        assert shown(await take_lines(lines, 2)) == [
            ("done", 0, True),
            ("Downloading 50%", 5, False),
        ]
        checkpoint = lines.checkpoint()
        assert (checkpoint.offset, checkpoint.mid_line) == (20, True)
        append(path, b" 80%\xe2\x82")  # a character cut by the end of the data waits
        assert shown(await take_lines(lines, 1)) == [(" 80%", 20, False)]
        append(path, b"\xac 100%\nnext\n")
        assert shown(await take_lines(lines, 2)) == [("€ 100%", 24, True), ("next", 33, True)]


async def test_a_restart_from_a_piece_gives_the_rest_of_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.log"
    path.write_bytes(b"")
    async with follow(path, start="beginning", poll_interval=0.01, partial_after=0) as lines:
        append(path, b"one\ntw")
        assert shown(await take_lines(lines, 2)) == [("one", 0, True), ("tw", 4, False)]
        checkpoint = lines.checkpoint()
    append(path, b"o\nthree\n")
    async with follow(path, checkpoint=checkpoint, poll_interval=0.01) as lines:
        assert shown(await take_lines(lines, 2)) == [("o", 6, True), ("three", 8, True)]


async def test_many_files_hand_out_their_pieces_too(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"")
    async with follow_many(
        [tmp_path / "*.log"], poll_interval=0.01, partial_after=0.02, store=tmp_path / "db"
    ) as lines:
        append(tmp_path / "a.log", b"50%")
        assert shown(await take_lines(lines, 1)) == [("50%", 0, False)]
        await lines.save()
        append(tmp_path / "a.log", b" 100%\n")
        assert shown(await take_lines(lines, 1)) == [(" 100%", 3, True)]


def test_multi_line_events_are_handed_out_whole(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="partial_after"):
        follow(tmp_path / "a.log", multiline="python", partial_after=1)
    with pytest.raises(ValueError, match="partial_after"):
        follow_many([tmp_path / "*.log"], multiline="python", partial_after=1)
    with pytest.raises(ValueError, match="partial_after"):
        follow(tmp_path / "a.log", partial_after=-1)
