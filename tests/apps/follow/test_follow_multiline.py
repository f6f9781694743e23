"""follow(multiline=...): multi-line events as Line records, flushed on timeout, at a
rotation and at the end; the checkpoint never passes an event not handed out."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from _helpers import append, take_lines, take_texts

from utf8stream.apps.follow import FollowCheckpoint, follow
from utf8stream.lines import MultilineJoiner

pytestmark = [pytest.mark.anyio]

LOG = (
    b"2026-01-01 first record\n"
    b"2026-01-01 failed\n"
    b"Traceback (most recent call last):\n"
    b'  File "app.py", line 1, in <module>\n'
    b"ValueError: bad\n"
    b"2026-01-01 third record\n"
)
TRACEBACK_EVENT = (
    "2026-01-01 failed\n"
    "Traceback (most recent call last):\n"
    '  File "app.py", line 1, in <module>\n'
    "ValueError: bad"
)
EVENTS = [
    ("2026-01-01 first record", 0),
    (TRACEBACK_EVENT, LOG.index(b"2026-01-01 failed")),
    ("2026-01-01 third record", LOG.index(b"2026-01-01 third")),
]

JOINERS: dict[str, Callable[[], MultilineJoiner | str]] = {
    "preset": lambda: "python",
    "start": lambda: MultilineJoiner(start=r"^\d{4}-"),
    "continuation": lambda: MultilineJoiner(continuation=r"^(?:[ \t]|Traceback|\w+Error)"),
}


@pytest.mark.parametrize("joiner", list(JOINERS))
async def test_events_come_with_the_offset_of_their_first_line(
    tmp_path: Path, joiner: str
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(LOG)
    async with follow(
        path,
        start="beginning",
        until_eof=True,
        multiline=JOINERS[joiner](),
        multiline_timeout=60,
    ) as lines:
        got = [line async for line in lines]
    assert [(line.text, line.offset) for line in got] == EVENTS
    assert all(line.path == str(path) for line in got)


async def test_the_last_event_comes_after_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(LOG[: LOG.index(b"2026-01-01 third")])
    async with follow(
        path, start="beginning", poll_interval=0.01, multiline="python", multiline_timeout=0.3
    ) as lines:
        assert await take_texts(lines, 1) == [EVENTS[0][0]]
        # The traceback may go on: it is held, and the checkpoint stays before it.
        with anyio.move_on_after(0.1):
            await lines.__anext__()
            pytest.fail("an event came out before its timeout")
        assert lines.checkpoint().offset == EVENTS[1][1]
        assert await take_texts(lines, 1) == [TRACEBACK_EVENT]
        assert lines.checkpoint().offset == LOG.index(b"2026-01-01 third")


async def test_lines_waiting_unread_in_the_file_join_a_due_event(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"record\n")
    async with follow(
        path, start="beginning", poll_interval=0.01, multiline="indented", multiline_timeout=0.3
    ) as lines:
        with anyio.move_on_after(0.1):  # "record" is read and held
            await lines.__anext__()
            pytest.fail("an event came out before its timeout")
        append(path, b"  continued in time\n")
        await anyio.sleep(0.6)  # the consumer is busy elsewhere past the timeout
        assert await take_texts(lines, 1) == ["record\n  continued in time"]
        assert lines.checkpoint().offset == path.stat().st_size


async def test_the_timeout_ends_a_wait_in_a_rotated_file_s_grace(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"")
    async with follow(
        path,
        start="beginning",
        poll_interval=0.01,
        rotate_grace=3600,
        multiline="indented",
        multiline_timeout=0.3,
    ) as lines:
        with anyio.move_on_after(0.1):
            await lines.__anext__()
        append(path, b"record\n  continued\n")
        os.rename(path, tmp_path / "app.log.1")  # drained for an hour: its writer may go on
        assert await take_texts(lines, 1) == ["record\n  continued"]


async def test_the_timeout_holds_while_the_path_cannot_be_opened(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"first\nrecord\n  continued\n")
    async with follow(path, start="beginning", until_eof=True) as lines:
        assert await take_texts(lines, 1) == ["first"]
        checkpoint = lines.checkpoint()
    # Rotated and compressed while stopped, with no new file at the path: the copy is
    # drained (its event held) and left, and the follower waits until the path can be
    # opened (retry); the held event still goes out at its timeout.
    (tmp_path / "app.log.1.gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    async with follow(
        path,
        checkpoint=checkpoint,
        retry=True,
        poll_interval=0.01,
        multiline="indented",
        multiline_timeout=0.5,
    ) as lines:
        with anyio.fail_after(5):
            assert await take_texts(lines, 1) == ["record\n  continued"]
        assert not path.exists()


async def test_a_restart_in_the_middle_of_an_event_gives_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    cut = LOG.index(b'  File "app.py"')
    path.write_bytes(LOG[:cut])
    async with follow(
        path, start="beginning", poll_interval=0.01, multiline="python", multiline_timeout=60
    ) as lines:
        assert await take_texts(lines, 1) == [EVENTS[0][0]]
        with anyio.move_on_after(0.2):  # the traceback's first lines are read, held
            await lines.__anext__()
        checkpoint = FollowCheckpoint.from_json(lines.checkpoint().to_json())
    assert checkpoint.offset == EVENTS[1][1]
    append(path, LOG[cut:])
    async with follow(
        path, checkpoint=checkpoint, until_eof=True, multiline="python", multiline_timeout=60
    ) as lines:
        got = [(line.text, line.offset) async for line in lines]
    assert got == EVENTS[1:]


async def test_an_event_ending_in_an_unfinished_line_is_read_again_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"rec one\nrec two\n  cont, unfinished")
    async with follow(
        path, start="beginning", until_eof=True, multiline="indented", multiline_timeout=60
    ) as lines:
        got = [(line.text, line.offset, line.terminated) async for line in lines]
        checkpoint = lines.checkpoint()
    # Terminated as its last line is; the checkpoint stays before it, as before that
    # line alone without multiline.
    assert got == [("rec one", 0, True), ("rec two\n  cont, unfinished", 8, False)]
    assert checkpoint.offset == 8
    append(path, b" done\nrec three\n")
    async with follow(
        path, checkpoint=checkpoint, until_eof=True, multiline="indented", multiline_timeout=60
    ) as lines:
        got = [(line.text, line.offset, line.terminated) async for line in lines]
    third = len(b"rec one\nrec two\n  cont, unfinished done\n")
    assert got == [("rec two\n  cont, unfinished done", 8, True), ("rec three", third, True)]


@pytest.mark.parametrize("joiner", ["start", "continuation"])
async def test_an_overlong_line_split_in_pieces_stays_one_line_of_its_event(
    tmp_path: Path, joiner: str
) -> None:
    path = tmp_path / "app.log"
    long_line = "2026-01-01 " + "x" * 50 + "é" * 20
    data = f"{long_line}\n  File ...\nValueError: bad\n2026-01-02 next\n".encode()
    path.write_bytes(data)
    async with follow(
        path,
        start="beginning",
        until_eof=True,
        max_line_bytes=16,
        on_overlong="split",
        multiline=JOINERS[joiner](),
        multiline_timeout=60,
    ) as lines:
        got = [(line.text, line.offset, line.terminated) async for line in lines]
    # The pieces are joined to the line's start with nothing between, and the pattern is
    # not tried on them ("xxxx" neither starts nor continues an event).
    assert got == [
        (f"{long_line}\n  File ...\nValueError: bad", 0, True),
        ("2026-01-02 next", data.index(b"2026-01-02"), True),
    ]


async def test_an_event_never_spans_a_rotation(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"record one\n  continued\n")
    async with follow(
        path,
        start="beginning",
        poll_interval=0.01,
        rotate_grace=0,
        multiline="indented",
        multiline_timeout=60,
    ) as lines:

        async def rotate_soon() -> None:
            await anyio.sleep(0.2)  # the first event is held open when the file rotates
            os.rename(path, tmp_path / "app.log.1")
            path.write_bytes(b"  indented, but in the new file\nrecord two\n")

        async with anyio.create_task_group() as tg:
            tg.start_soon(rotate_soon)
            got = await take_lines(lines, 2)
    assert [(line.text, line.path) for line in got] == [
        ("record one\n  continued", str(path)),
        ("  indented, but in the new file", str(path)),
    ]


def test_multiline_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown multi-line preset"):
        follow(tmp_path / "app.log", multiline="cobol")
    with pytest.raises(ValueError, match="multiline_timeout"):
        follow(tmp_path / "app.log", multiline="python", multiline_timeout=0)
