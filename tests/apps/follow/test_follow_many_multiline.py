"""follow_many(multiline=...): multi-line events per file, each file's own timeout, and a
store that never records a position inside an incomplete event."""

from __future__ import annotations

import contextlib
import gzip
import os
import random
from pathlib import Path
from typing import Any

import anyio
import pytest
from _helpers import append, take_lines

from utf8stream import CheckpointStore, follow_many
from utf8stream.apps.follow import Line
from utf8stream.follower import ManyFollower
from utf8stream.lines import MultilineJoiner

pytestmark = [pytest.mark.anyio]

TRACEBACK = (
    b"2026-01-01 failed\n"
    b"Traceback (most recent call last):\n"
    b'  File "app.py", line 1, in <module>\n'
    b"ValueError: bad\n"
)


def seen(lines: list[Line]) -> list[tuple[str, str, int]]:
    return [(os.path.basename(line.path), line.text, line.offset) for line in lines]


async def nothing_more(lines: ManyFollower, wait: float = 0.3) -> None:
    with anyio.move_on_after(wait):
        line = await lines.__anext__()
        pytest.fail(f"unexpected event {line!r}")


@pytest.mark.parametrize("force_polling", [False, True], ids=["kernel", "polling"])
async def test_two_files_interleaving_events_are_joined_per_file(
    tmp_path: Path, force_polling: bool
) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"")
    b.write_bytes(b"")
    async with follow_many(
        [tmp_path / "*.log"],
        start="beginning",
        poll_interval=0.02,
        force_polling=force_polling,
        multiline=MultilineJoiner(start=r"^\d"),
        multiline_timeout=60,
    ) as lines:
        # Written line by line in turns: each file's continuation lines reach the
        # follower between the other file's lines.
        for data in (b"1 a\n", b"1 b\n", b"  a, 1\n", b"  b, 1\n", b"  a, 2\n"):
            append(a if b" a" in data else b, data)
            await anyio.sleep(0.05)  # the follower reads each line before the next
        append(b, b"2 b\n")
        append(a, b"2 a\n")
        got = seen(await take_lines(lines, 2))
        assert sorted(got) == [("a.log", "1 a\n  a, 1\n  a, 2", 0), ("b.log", "1 b\n  b, 1", 0)]
        # The second events are held: each file's checkpoint stands before its own.
        checkpoints = lines.checkpoints()
        assert checkpoints[str(a)].offset == len(b"1 a\n  a, 1\n  a, 2\n")
        assert checkpoints[str(b)].offset == len(b"1 b\n  b, 1\n")
        append(a, b"3 a\n")
        assert seen(await take_lines(lines, 1)) == [("a.log", "2 a", a.stat().st_size - 8)]
        await nothing_more(lines)


@pytest.mark.soak  # three timeouts of real time, the busy file written all along
async def test_each_file_has_its_own_timeout(tmp_path: Path) -> None:
    quiet, busy = tmp_path / "quiet.log", tmp_path / "busy.log"
    quiet.write_bytes(b"")
    busy.write_bytes(b"")
    timeout = 1.0
    async with follow_many(
        [tmp_path / "*.log"],
        start="beginning",
        poll_interval=0.02,
        multiline="indented",
        multiline_timeout=timeout,
    ) as lines:
        append(quiet, b"quiet event\n  its only continuation\n")
        append(busy, b"busy event\n")
        fed = 0

        async def feed_busy() -> None:
            # A continuation line well within every timeout, for three timeouts: the busy
            # file's event stays open all along, the quiet file's is due meanwhile.
            nonlocal fed
            for i in range(60):
                append(busy, b"  more %d\n" % i)
                fed += 1
                await anyio.sleep(timeout / 20)

        async with anyio.create_task_group() as group:
            group.start_soon(feed_busy)
            got = await take_lines(lines, 1)
            fed_then = fed
            # The busy file's event: all its lines, once its own timeout passed.
            got += await take_lines(lines, 1)
        assert fed_then < 60, "the quiet file's event waited for the busy file to be quiet"
        busy_event = "busy event\n" + "\n".join(f"  more {i}" for i in range(60))
        assert seen(got) == [
            ("quiet.log", "quiet event\n  its only continuation", 0),
            ("busy.log", busy_event, 0),
        ]
        await nothing_more(lines)


async def test_lines_waiting_unread_in_the_file_join_a_due_event(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"record\n")
    async with follow_many(
        [tmp_path / "*.log"],
        start="beginning",
        poll_interval=0.02,
        multiline="indented",
        multiline_timeout=0.3,
    ) as lines:
        await nothing_more(lines, 0.1)  # "record" is read and held
        append(path, b"  continued in time\n")
        await anyio.sleep(0.6)  # the consumer is busy elsewhere past the timeout
        append(path, b"next\n")
        assert seen(await take_lines(lines, 1)) == [("app.log", "record\n  continued in time", 0)]


async def test_a_restart_in_the_middle_of_an_event_gives_it_whole_once(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    cut = TRACEBACK.index(b'  File "app.py"')
    path.write_bytes(b"2026-01-01 first record\n" + TRACEBACK[:cut])
    first = len(b"2026-01-01 first record\n")
    (tmp_path / "other.log").write_bytes(b"other\nother two\n")
    db = tmp_path / "state.db"
    store = CheckpointStore(db)
    async with follow_many(
        [tmp_path / "*.log"],
        store=store,
        start="beginning",
        poll_interval=0.02,
        save_every=1,
        multiline="python",
        multiline_timeout=60,
    ) as lines:
        got = seen(await take_lines(lines, 2))
        assert sorted(got) == [
            ("app.log", "2026-01-01 first record", 0),
            ("other.log", "other", 0),
        ]
        # The traceback's first lines (and "other two") are read and held; a save now
        # records the positions before them.
        await nothing_more(lines, 0.3)
        await lines.save()
        saved = store.load_all()
        assert (saved[str(path)].offset, saved[str(tmp_path / "other.log")].offset) == (first, 6)
        store.close()  # killed here: the last save is all the store knows
        with contextlib.suppress(ValueError):  # (a save on closing would find it closed)
            await lines.aclose()
    append(path, TRACEBACK[cut:] + b"2026-01-01 third record\n")
    async with follow_many(
        [tmp_path / "*.log"],
        store=db,
        poll_interval=0.02,
        multiline="python",
        multiline_timeout=0.2,
    ) as lines:
        got = seen(await take_lines(lines, 3))
        await nothing_more(lines)
    assert [event for event in got if event[0] == "app.log"] == [
        ("app.log", TRACEBACK.decode().rstrip("\n"), first),
        ("app.log", "2026-01-01 third record", first + len(TRACEBACK)),
    ]
    assert [event for event in got if event[0] == "other.log"] == [("other.log", "other two", 6)]


async def test_a_clean_stop_mid_event_leaves_it_for_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"record one\n  continued\n")
    db = tmp_path / "state.db"
    async with follow_many(
        [tmp_path / "*.log"],
        store=db,
        start="beginning",
        poll_interval=0.02,
        multiline="indented",
        multiline_timeout=60,
    ) as lines:
        await nothing_more(lines, 0.3)  # read, held: not complete, not handed out
    with CheckpointStore(db) as store:
        assert store.load_all()[str(path)].offset == 0
    append(path, b"  and more\nrecord two\n")
    async with follow_many(
        [tmp_path / "*.log"], store=db, poll_interval=0.02, multiline="indented"
    ) as lines:
        assert seen(await take_lines(lines, 1)) == [
            ("app.log", "record one\n  continued\n  and more", 0)
        ]


async def test_an_event_never_spans_a_rotation(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"")
    async with follow_many(
        [tmp_path / "*.log"],
        start="beginning",
        poll_interval=0.02,
        rotate_grace=0.1,
        multiline="indented",
        multiline_timeout=3600,
    ) as lines:
        append(path, b"record one\n  continued\n")
        await nothing_more(lines, 0.2)  # read, held
        os.rename(path, tmp_path / "app.log.1")
        path.write_bytes(b"  indented, but in the new file\nrecord two\n")
        got = seen(await take_lines(lines, 2))
    assert got == [
        ("app.log", "record one\n  continued", 0),
        ("app.log", "  indented, but in the new file", 0),
    ]


async def test_a_dropped_file_hands_out_its_last_event_before_the_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"")
    async with follow_many(
        [tmp_path / "*.log"],
        start="beginning",
        poll_interval=0.02,
        rotate_grace=0.2,
        multiline="indented",
        multiline_timeout=3600,
    ) as lines:
        append(path, b"last words\n  said twice\n")
        await nothing_more(lines, 0.2)
        os.unlink(path)
        assert seen(await take_lines(lines, 1)) == [("app.log", "last words\n  said twice", 0)]
        with anyio.fail_after(5):
            while lines.paths:
                await nothing_more(lines, 0.05)


async def test_a_file_gone_while_it_cannot_be_read_hands_out_its_event_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"first\nrecord\n  continued\n")
    (tmp_path / "other.log").write_bytes(b"")
    store = tmp_path / "cp.db"
    options: dict[str, Any] = {"multiline": "indented", "multiline_timeout": 3600}
    async with follow_many(
        [tmp_path / "*.log"], store=store, start="beginning", **options
    ) as lines:
        assert seen(await take_lines(lines, 1)) == [("app.log", "first", 0)]
    # Rotated and compressed while stopped, with no new file at the path: the restart
    # drains the copy (its event held), leaves it, and finds the path gone.
    (tmp_path / "app.log.1.gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    async with follow_many(
        [tmp_path / "*.log"], store=store, poll_interval=0.02, **options
    ) as lines:
        assert seen(await take_lines(lines, 1)) == [("app.log.1.gz", "record\n  continued", 6)]
        with anyio.fail_after(5):
            while str(path) in lines.paths:
                await nothing_more(lines, 0.05)


async def test_a_joiner_given_is_a_template_left_untouched(tmp_path: Path) -> None:
    joiner = MultilineJoiner(continuation=r"^\+", max_event_bytes=12)
    (tmp_path / "a.log").write_bytes(b"a\n+1\n+2\n+3\n+4\n+5\nb\n")
    async with follow_many(
        [tmp_path / "*.log"], start="beginning", multiline=joiner, multiline_timeout=60
    ) as lines:
        got = seen(await take_lines(lines, 2))
    # max_event_bytes=12 cuts the event after 12 bytes of lines ("a\n+1\n+2\n+3\n" is 11).
    assert got == [("a.log", "a\n+1\n+2\n+3", 0), ("a.log", "+4\n+5", 11)]
    assert joiner.pending_since is None and joiner.safe_offset() == 0


def test_multiline_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown multi-line preset"):
        follow_many(str(tmp_path / "*.log"), multiline="cobol")
    with pytest.raises(ValueError, match="multiline_timeout"):
        follow_many(str(tmp_path / "*.log"), multiline="python", multiline_timeout=0)


@pytest.mark.parametrize(
    ("seed", "max_line_bytes"),
    [
        pytest.param(1, 1 << 20, id="1"),
        pytest.param(2, 1 << 20, id="2"),
        pytest.param(3, 16, id="pieces"),
    ],
)
@pytest.mark.soak  # kill-and-restart runs, with the kill soaks
async def test_random_kills_mid_event_give_every_event_once_in_order(
    tmp_path: Path, seed: int, max_line_bytes: int
) -> None:
    """Files written in random slices (cut mid-line too), a follower saving right after
    each event it hands out and killed after a random number of them: over all the runs,
    each file's events come exactly once, whole, in order (also with lines longer than
    ``max_line_bytes``, read in pieces, and kills between the pieces)."""
    rng = random.Random(seed)
    names = ["a.log", "b.log", "c.log"]
    expected: dict[str, list[str]] = {}
    contents: dict[str, bytes] = {}

    def padding() -> str:
        return "-" * rng.randrange(30)

    for name in names:
        events = [
            "\n".join(
                [
                    f"{name} {i}{padding()}",
                    *(f"  {name} {i}.{j}{padding()}" for j in range(rng.randrange(4))),
                ]
            )
            for i in range(15)
        ]
        expected[name] = events
        contents[name] = "".join(event + "\n" for event in events).encode()
        (tmp_path / name).write_bytes(b"")
    written = dict.fromkeys(names, 0)
    got: dict[str, list[str]] = {name: [] for name in names}
    db = tmp_path / "state.db"
    for _ in range(40):
        for name in names:
            step = rng.randrange(0, 200)
            append(tmp_path / name, contents[name][written[name] : written[name] + step])
            written[name] = min(written[name] + step, len(contents[name]))
        last = all(written[name] == len(contents[name]) for name in names)
        store = CheckpointStore(db)
        async with follow_many(
            [tmp_path / "*.log"],
            store=store,
            autosave=False,
            start="beginning",
            poll_interval=0.02,
            max_line_bytes=max_line_bytes,
            multiline=MultilineJoiner(start=r"^\S"),
            # Until all is written an event may go on in a later slice: never flushed.
            multiline_timeout=0.1 if last else 3600,
        ) as lines:
            with anyio.move_on_after(0.4 if last else 0.2):
                for _ in range(rng.randrange(1, 8) if not last else 10**6):
                    line = await lines.__anext__()
                    got[os.path.basename(line.path)].append(line.text)
                    await lines.save()  # what was handed out is committed
            store.close()  # killed: nothing saved on the way out
        if last and all(len(got[name]) == len(expected[name]) for name in names):
            break
    assert got == expected


async def test_each_pattern_can_have_its_joiner(tmp_path: Path) -> None:
    """``multilines`` maps a pattern to its files' joiner (``None``: plain lines), as
    ``encodings`` maps one to an encoding; the others use ``multiline``."""
    (tmp_path / "py").mkdir()
    (tmp_path / "plain").mkdir()
    (tmp_path / "indented").mkdir()
    tb = b'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: x\n'
    (tmp_path / "py" / "app.log").write_bytes(b"one\n" + tb + b"two\n")
    (tmp_path / "plain" / "app.log").write_bytes(b"one\n  two\n")
    (tmp_path / "indented" / "app.log").write_bytes(b"one\n  two\nthree\n")
    py, plain, indented = (str(tmp_path / d / "*.log") for d in ("py", "plain", "indented"))
    async with follow_many(
        [py, plain, indented],
        start="beginning",
        poll_interval=0.02,
        multiline="indented",
        multilines={py: "python", plain: None},
        multiline_timeout=60,
    ) as lines:
        # Each joined file's last event ("two", "three") waits for more lines.
        got = await take_lines(lines, 4)
        await nothing_more(lines)
    by_dir: dict[str, list[str]] = {}
    for line in got:
        by_dir.setdefault(Path(line.path).parent.name, []).append(line.text)
    assert by_dir == {
        "py": ["one\n" + tb.decode().rstrip("\n")],  # a traceback joins the line before
        "plain": ["one", "  two"],
        "indented": ["one\n  two"],
    }
    with pytest.raises(ValueError, match="multilines for patterns not followed"):
        follow_many([py], multilines={plain: "python"})
