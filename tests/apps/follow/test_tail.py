"""The log follower: every line once, whole, across small writes, rotation, truncation,
restarts and cancellation.  Writers run as concurrent tasks."""

from __future__ import annotations

import gzip
import os
import random
import re
from pathlib import Path

import anyio
import pytest
from _helpers import append, nothing_more, take_texts

from utf8stream import Malformed, MalformedKind
from utf8stream.apps.follow import (
    FileIdentity,
    FollowCheckpoint,
    Follower,
    Line,
    Notice,
    _rotation,
    follow,
    write_checkpoint,
)
from utf8stream.follower import ReadPolicy

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("implementation")]
POLL = 0.005


async def until_notices(
    follower: Follower, notices: list[Notice], n: int, timeout: float = 5.0
) -> None:
    """Drive ``follower`` (no line may come) until ``n`` notices have been given: a
    loaded machine may take several polls to see a change."""
    with anyio.fail_after(timeout):
        while len(notices) < n:
            assert await nothing_more(follower)


async def test_lines_from_the_beginning_with_offsets(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\r\ntwo\rthree\nfour\n")
    async with follow(path, start="beginning", poll_interval=POLL) as lines:
        got = [await lines.__anext__() for _ in range(4)]
    assert [line.text for line in got] == ["one", "two", "three", "four"]
    assert [line.offset for line in got] == [0, 5, 9, 15]
    assert got[0].file.inode == os.stat(path).st_ino


async def test_line_written_in_small_pieces_is_delivered_once_when_complete(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"")
    lines_out = ["žluťoučký kůň 🐴", "日本語のテキスト", "plain ascii", "end €"]
    payload = "\r\n".join(lines_out).encode() + b"\r\n"
    async with follow(path, start="beginning", poll_interval=POLL) as lines:
        got: list[str] = []
        # Write byte by byte: every multi-byte character and every \r\n is split.
        for i in range(len(payload)):
            byte = payload[i : i + 1]
            append(path, byte)
            if byte == b"\n":
                got += await take_texts(lines, 1)  # the line is complete now, and only now
            elif byte == b"\r" or byte >= b"\xc0" or i % 7 == 0:
                # Mid-newline, mid-character, or mid-line: nothing may come out yet.
                assert await nothing_more(lines, 2 * POLL)
        assert got == lines_out
        assert await nothing_more(lines)


async def test_start_at_end_and_last_lines(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"a\nb\nc\nd\npartial")
    async with follow(path, last_lines=3, poll_interval=POLL) as lines:
        assert await take_texts(lines, 2) == ["c", "d"]  # the third is unfinished: it waits
        append(path, b" line\nnew\n")
        assert await take_texts(lines, 2) == ["partial line", "new"]
    async with follow(path, poll_interval=POLL) as lines:  # start="end", no history
        assert await nothing_more(lines)
        append(path, b"later\n")
        assert await take_texts(lines, 1) == ["later"]
    async with follow(path, last_lines=100, poll_interval=POLL) as lines:
        assert await take_texts(lines, 7) == ["a", "b", "c", "d", "partial line", "new", "later"]


async def test_start_mid_character_begins_with_one_replacement(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    data = "first line\nčeský 🐴 text\nnext\n".encode()
    path.write_bytes(data)
    horse = data.index("🐴".encode())
    events: list[Malformed] = []
    async with follow(
        path, start=horse + 1, poll_interval=POLL, on_malformed=events.append
    ) as lines:
        first, second = await take_texts(lines, 2)
    assert first == "\ufffd text"
    assert second == "next"
    assert [e.kind for e in events] == [MalformedKind.LOST_BYTES]
    # Starting exactly at a line start needs no gap.
    async with follow(path, start=data.index(b"next"), poll_interval=POLL) as lines:
        assert await take_texts(lines, 1) == ["next"]


async def test_rename_and_create_rotation_drains_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"old 1\n")
    # The old file's writer is done before the new file appears: a short grace drains it.
    async with follow(path, start="beginning", poll_interval=POLL, rotate_grace=0.2) as lines:
        assert await take_texts(lines, 1) == ["old 1"]
        old = open(path, "ab")  # noqa: SIM115 - the writer keeps it across the rename
        os.rename(path, tmp_path / "app.log.1")
        old.write(b"old 2, written after the rename\nold 3 without newline")
        old.flush()
        path.write_bytes(b"new 1\n")
        append(path, b"new 2\n")
        got = await take_texts(lines, 4)
        old.close()
        assert await nothing_more(lines)
    assert got[:4] == [
        "old 2, written after the rename",
        "old 3 without newline",
        "new 1",
        "new 2",
    ]


async def test_rotation_sequence(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"")
    expected: list[str] = []
    # Each old file is read to its end before the rename: a short grace loses nothing.
    async with follow(path, start="beginning", poll_interval=POLL, rotate_grace=0.1) as lines:
        got: list[str] = []
        for generation in range(4):
            for i in range(3):
                line = f"gen {generation} line {i}"
                append(path, line.encode() + b"\n")
                expected.append(line)
            got += await take_texts(lines, 3)
            os.rename(path, tmp_path / f"app.log.{generation}")
            path.write_bytes(b"")
        assert got == expected
        assert lines.statistics().rotations >= 3


async def test_copytruncate_with_unread_bytes_reports_a_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "app.log"
    lines_in = [f"line {i:03d} " + "x" * 20 for i in range(20)]
    path.write_bytes("".join(line + "\n" for line in lines_in).encode())
    events: list[Malformed] = []
    async with follow(
        path,
        start="beginning",
        poll_interval=POLL,
        on_malformed=events.append,
        reading=ReadPolicy(read_size=64),
    ) as lines:
        first = await take_texts(lines, 1)
        assert first == lines_in[:1]
        # copytruncate: the copy is made elsewhere, the file is emptied and refilled.
        os.truncate(path, 0)
        append(path, b"after truncation\n")
        got: list[str] = []
        with anyio.fail_after(5):
            while "after truncation" not in got:
                got.append((await lines.__anext__()).text)
    gaps = [e for e in events if e.kind is MalformedKind.LOST_BYTES]
    assert len(gaps) == 1
    assert got[-1] == "after truncation"
    # What was read before the truncation came out whole; the cut line ends in U+FFFD.
    assert got[:-2] == lines_in[1 : len(got) - 1]
    assert got[-2].endswith("\ufffd")
    assert lines.statistics().truncations == 1


async def test_truncate_then_regrow_past_old_size_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"short\n")
    async with follow(path, start="beginning", poll_interval=0.05) as lines:
        assert await take_texts(lines, 1) == ["short"]
        # Between two polls: emptied and rewritten with more than before.
        with open(path, "wb") as f:
            f.write(b"rewritten first\nrewritten second\n")
        assert await take_texts(lines, 2) == ["rewritten first", "rewritten second"]
        assert lines.statistics().truncations == 1


async def test_checkpoint_resume_no_loss_no_repeat(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"1\n2\n3\n")
    async with follow(path, start="beginning", poll_interval=POLL) as lines:
        assert await take_texts(lines, 2) == ["1", "2"]
        cp = lines.checkpoint()
    restored = FollowCheckpoint.from_json(cp.to_json())
    assert restored == cp
    append(path, b"4\n")
    async with follow(path, checkpoint=restored, poll_interval=POLL) as lines:
        assert await take_texts(lines, 2) == ["3", "4"]
        assert await nothing_more(lines)


async def test_checkpoint_after_rotation_while_stopped_drains_rotated_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"a\nb\n")
    async with follow(path, start="beginning", poll_interval=POLL) as lines:
        assert await take_texts(lines, 1) == ["a"]
        cp = lines.checkpoint()
    append(path, b"c\n")
    os.rename(path, tmp_path / "app.log.1")
    path.write_bytes(b"d\n")
    async with follow(path, checkpoint=cp, poll_interval=POLL, rotate_grace=0.2) as lines:
        assert await take_texts(lines, 3) == ["b", "c", "d"]
        assert await nothing_more(lines)


async def test_reused_inode_with_other_content_is_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"old content line\nsecond\n")
    async with follow(path, start="beginning", poll_interval=POLL) as lines:
        await take_texts(lines, 2)
        cp = lines.checkpoint()
    os.remove(path)
    path.write_bytes(b"brand new\n")
    st = os.stat(path)
    # Whether or not the filesystem reused the inode, pretend it did: same device and
    # inode, different first bytes.
    reused = FollowCheckpoint(
        str(path),
        FileIdentity(st.st_dev, st.st_ino, cp.file.head_length, cp.file.head_sha256),
        cp.offset,
    )
    for checkpoint in (cp, reused):
        async with follow(path, checkpoint=checkpoint, poll_interval=POLL) as lines:
            assert await take_texts(lines, 1) == ["brand new"]


@pytest.mark.parametrize("via", ["__anext__", "__aiter__"])
async def test_cancellation_loses_and_repeats_nothing(tmp_path: Path, via: str) -> None:
    """Cancelled steps of ``__anext__`` or of the ``async for`` iterator (the C one with
    the accelerator), with a writer cutting lines anywhere."""
    path = tmp_path / "app.log"
    path.write_bytes(b"")
    expected = [f"line {i} ✓" for i in range(300)]
    rnd = random.Random(7)

    async def writer() -> None:
        for line in expected:
            data = (line + "\n").encode()
            cut = rnd.randrange(len(data))
            append(path, data[:cut])
            await anyio.sleep(0)  # a read may come between the halves
            append(path, data[cut:])
            if rnd.random() < 0.3:
                await anyio.sleep(0.001)  # the writer pauses now and then

    got: list[str] = []
    follower = follow(path, start="beginning", poll_interval=0.001)
    iterator = follower if via == "__anext__" else follower.__aiter__()
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        with anyio.fail_after(20):
            while len(got) < len(expected):
                with anyio.move_on_after(rnd.choice([0, 0.0001, 0.001, 0.01])):
                    got.append((await iterator.__anext__()).text)
    assert got == expected
    await follower.aclose()
    assert follower._reader.file is None  # the file is closed


async def test_randomised_write_rotate_truncate_restart(tmp_path: Path) -> None:
    """Hundreds of steps; every line written is received exactly once, in order."""
    rnd = random.Random(2026)
    path = tmp_path / "app.log"
    path.write_bytes(b"")
    written: list[str] = []
    received: list[str] = []
    # Rotations here are made after everything written was read: no grace is needed.
    follower = follow(path, start="beginning", poll_interval=0.001, rotate_grace=0)
    rotated = 0
    counter = 0

    async def drain(f: Follower) -> None:
        with anyio.fail_after(10):
            while len(received) < len(written):
                received.append((await f.__anext__()).text)

    def write_lines(k: int) -> None:
        nonlocal counter
        for _ in range(k):
            counter += 1
            line = f"#{counter} " + rnd.choice(
                ["ascii", "čeština", "日本", "🐍🐍"]
            ) * rnd.randrange(4)
            written.append(line)
            data = (line + rnd.choice(["\n", "\r\n"])).encode()
            append(path, data)

    for _step in range(200):
        action = rnd.choice(["write", "write", "write", "rotate", "truncate", "restart"])
        if action == "write":
            write_lines(rnd.randrange(1, 5))
        elif action == "rotate":
            await drain(follower)
            rotated += 1
            os.rename(path, tmp_path / f"app.log.{rotated}")
            write_lines(0)
            path.write_bytes(b"")
        elif action == "truncate":
            await drain(follower)
            os.truncate(path, 0)  # copytruncate after everything was read
        else:
            await drain(follower)
            cp = FollowCheckpoint.from_json(follower.checkpoint().to_json())
            await follower.aclose()
            write_lines(rnd.randrange(0, 3))
            if rnd.random() < 0.4:  # rotated while stopped
                rotated += 1
                os.rename(path, tmp_path / f"app.log.{rotated}")
                path.write_bytes(b"")
                write_lines(rnd.randrange(0, 3))
            follower = follow(path, checkpoint=cp, poll_interval=0.001, rotate_grace=0)
    await drain(follower)
    assert received == written
    assert await nothing_more(follower, 0.02)
    await follower.aclose()


def test_write_checkpoint_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "cp.json"
    cp = FollowCheckpoint("/var/log/x", FileIdentity(1, 2, 3, "ab" * 32), 42, False)
    write_checkpoint(cp, target)
    assert FollowCheckpoint.from_json(target.read_text()) == cp
    assert [p.name for p in tmp_path.iterdir()] == ["cp.json"]  # no temporary left behind
    with pytest.raises(ValueError):
        FollowCheckpoint.from_json('{"version": 9}')


async def test_until_eof_reads_once_including_the_unfinished_line(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"a\nb\nc\nlast without newline")
    async with follow(path, last_lines=2, until_eof=True) as lines:
        got = [line.text async for line in lines]
    assert got == ["c", "last without newline"]  # tail -n counts the unfinished line
    async with follow(path, last_lines=10, until_eof=True) as lines:
        assert [line.text async for line in lines] == ["a", "b", "c", "last without newline"]


# -- the bulk path: lines handed out from blocks -------------------------------------


def expected_lines(
    data: bytes, errors: str = "replace", newline: bytes | None = None
) -> list[str]:
    """The oracle: cut the bytes at newlines, decode each line with CPython's codec."""
    pattern = rb"\r\n|\r|\n" if newline is None else re.escape(newline)
    pieces = re.split(pattern, data)
    pieces.pop()  # the unfinished rest (empty when the data ends with a newline)
    return [p.decode("utf-8", errors) for p in pieces]


def mixed_log(count: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words = [
        b"plain",
        "žluťoučký kůň".encode(),
        "日本語".encode(),
        "🐴".encode(),
        b"\xff",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"",
    ]
    return (
        b"".join(
            b" ".join(rng.choice(words) for _ in range(rng.randrange(6)))
            + rng.choice([b"\n", b"\r\n", b"\r"])
            for _ in range(count)
        )
        + b"tail"
    )  # a final \r must be followed by something to end its line


@pytest.mark.parametrize("seed", range(4))
async def test_iteration_styles_and_checkpoints_mixed_lose_nothing(
    tmp_path: Path, seed: int
) -> None:
    """``async for`` (broken off), ``__anext__`` and restarts from checkpoints taken in
    the middle of a read's lines, in random order: every line exactly once."""
    path = tmp_path / "app.log"
    data = mixed_log(3000, seed)
    path.write_bytes(data)
    expected = expected_lines(data)
    rng = random.Random(seed)
    got: list[Line] = []
    follower = follow(path, start="beginning", poll_interval=POLL)
    yielded = 0
    with anyio.fail_after(30):
        while len(got) < len(expected):
            step = rng.randrange(3)
            want = min(rng.randrange(1, 400), len(expected) - len(got))
            if step == 0:
                async for line in follower:
                    got.append(line)
                    yielded += 1
                    want -= 1
                    if not want:
                        break
            elif step == 1:
                for _ in range(want):
                    got.append(await follower.__anext__())
                    yielded += 1
            else:
                assert follower.statistics().lines == yielded
                checkpoint = follower.checkpoint()
                if got:
                    last = got[-1]
                    assert checkpoint.offset > last.offset
                await follower.aclose()
                follower = follow(path, checkpoint=checkpoint, poll_interval=POLL)
                yielded = 0
    await follower.aclose()
    assert [line.text for line in got] == expected
    offsets = [line.offset for line in got]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    assert data[offsets[1] - 1 : offsets[1]] in (b"\n", b"\r")


async def test_checkpoint_after_aclose_in_the_middle_of_a_read(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(100)))
    async with follow(path, start="beginning", poll_interval=POLL) as follower:
        first: list[Line] = []
        for _ in range(5):
            first.append(await follower.__anext__())
    assert [line.text for line in first] == [f"line {i}" for i in range(5)]
    checkpoint = follower.checkpoint()
    assert checkpoint.offset == len(b"".join(b"line %d\n" % i for i in range(5)))
    assert follower.statistics().lines == 5
    with pytest.raises(StopAsyncIteration):  # closed: the rest of the read is dropped
        await follower.__anext__()
    async with follow(path, checkpoint=checkpoint, poll_interval=POLL) as again:
        assert await take_texts(again, 2) == ["line 5", "line 6"]


async def test_an_on_malformed_exception_surfaces_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"a\nb\xff\nc\n")
    seen: list[int] = []

    def strict(event: Malformed) -> None:
        seen.append(event.offset)
        raise ValueError("bad byte")

    async with follow(path, start="beginning", on_malformed=strict, poll_interval=POLL) as lines:
        with pytest.raises(ValueError, match="bad byte"):
            await lines.__anext__()
        assert await take_texts(lines, 3) == ["a", "b\ufffd", "c"]
        assert lines.checkpoint().offset == len(b"a\nb\xff\nc\n")
    assert seen == [3]


@pytest.mark.parametrize(
    ("errors", "newline", "data"),
    [
        ("ignore", None, b"x\r\xff\ny\r\n\xfe\n"),  # \r, bad byte, \n: two line ends
        ("ignore", "\r\n", b"a\r\xff\nb\r\nc\r\n"),
        ("backslashreplace", "x", b"a\xffxbxc\xfex"),  # the replacement holds an "x"
        ("replace", "\ufffd", "a\ufffdb\xff\ufffd".encode("utf-8", "surrogateescape")),
    ],
)
async def test_replacements_never_make_or_hide_a_line_end(
    tmp_path: Path, errors: str, newline: str | None, data: bytes
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(data)
    expected = expected_lines(data, errors, None if newline is None else newline.encode())
    async with follow(
        path, start="beginning", errors=errors, newline=newline, until_eof=True
    ) as lines:
        got = [line.text async for line in lines]
    assert got == expected


def test_a_compressed_file_on_the_checkpoints_inode_is_not_ours(tmp_path: Path) -> None:
    """A rotated file compressed on a reused inode: never drained as text."""
    compressed = tmp_path / "app.log.1.gz"
    compressed.write_bytes(gzip.compress(b"old line\n"))
    plain = tmp_path / "app.log.2"
    plain.write_bytes(b"old line\n")
    for candidate, found in ((compressed, None), (plain, plain)):
        st = candidate.stat()
        identity = FileIdentity(st.st_dev, st.st_ino)
        assert _rotation._find_rotated(tmp_path / "app.log", identity) == found


# -- notices: what is not a line is told, not printed ------------------------------------


async def test_truncation_is_a_notice_not_a_line_of_replacement_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "app.log"
    lines_in = [f"line {i:03d} " + "x" * 22 for i in range(20)]  # 32 bytes with "\n"
    path.write_bytes("".join(line + "\n" for line in lines_in).encode())
    events: list[Malformed] = []
    notices: list[Notice] = []
    async with follow(
        path,
        start="beginning",
        poll_interval=POLL,
        on_malformed=events.append,
        on_notice=notices.append,
        reading=ReadPolicy(read_size=64),
    ) as lines:
        assert await take_texts(lines, 1) == lines_in[:1]  # the read held two whole lines
        os.truncate(path, 0)
        append(path, b"after truncation\n")
        assert await take_texts(lines, 2) == [lines_in[1], "after truncation"]
    assert [e.kind for e in events] == [MalformedKind.LOST_BYTES]
    lost = 18 * 32
    assert notices == [
        Notice("truncated", str(path), f"file truncated; {lost} bytes not read were lost")
    ]


async def test_a_missing_file_is_waited_for_with_retry(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    with pytest.raises(FileNotFoundError):
        async with follow(path, poll_interval=POLL) as lines:
            await lines.__anext__()
    notices: list[Notice] = []
    async with follow(path, poll_interval=POLL, retry=True, on_notice=notices.append) as lines:
        assert await nothing_more(lines)
        path.write_bytes(b"first\nsecond\n")  # a new file: read from its start
        assert await take_texts(lines, 2) == ["first", "second"]
    assert notices == [
        Notice("inaccessible", str(path), "cannot open for reading: No such file or directory"),
        Notice("appeared", str(path), "has appeared; following new file"),
    ]


async def test_a_path_gone_after_rotation_is_told_and_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    notices: list[Notice] = []
    async with follow(
        path, start="beginning", poll_interval=POLL, rotate_grace=0, on_notice=notices.append
    ) as lines:
        assert await take_texts(lines, 1) == ["one"]
        os.rename(path, tmp_path / "app.log.1")
        await until_notices(lines, notices, 1)
        path.mkdir()  # not a file we can read: still waiting
        await until_notices(lines, notices, 2)
        path.rmdir()
        path.write_bytes(b"two\n")
        assert await take_texts(lines, 1) == ["two"]
        os.rename(path, tmp_path / "app.log.2")
        path.write_bytes(b"three\n")
        assert await take_texts(lines, 1) == ["three"]
    gone = "has become inaccessible: No such file or directory"
    assert [(n.kind, n.message) for n in notices] == [
        ("inaccessible", gone),
        ("inaccessible", "has become inaccessible: Is a directory"),
        ("appeared", "has appeared; following new file"),
        ("replaced", "has been replaced; following new file"),
    ]


async def test_lines_say_whether_a_newline_ended_them(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"a\r\nb\n" + "é".encode() * 10 + b"\nlast")
    async with follow(
        path, start="beginning", max_line_bytes=7, until_eof=True, newline="\n"
    ) as lines:
        got = [(line.text, line.terminated) async for line in lines]
    assert got == [
        ("a\r", True),
        ("b", True),
        ("ééé", False),  # pieces of the split line: joined, they are the line
        ("ééé", False),
        ("ééé", False),
        ("é", True),
        ("last", False),
    ]
    # Many lines at once (the bulk path, in C with the accelerator) are terminated too.
    path.write_bytes(b"x\n" * 1000)
    async with follow(path, start="beginning", until_eof=True) as lines:
        assert {line.terminated async for line in lines} == {True}


async def test_last_bytes_and_stop_at_end(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes("x€y\nnext\n".encode())
    async with follow(path, last_bytes=9, gap_at_start=False, until_eof=True) as lines:
        assert [line.text async for line in lines] == ["\ufffd\ufffdy", "next"]
    async with follow(path, last_bytes=9, until_eof=True) as lines:  # one U+FFFD: a gap
        assert [line.text async for line in lines] == ["\ufffdy", "next"]
    async with follow(path, poll_interval=POLL) as lines:
        assert await nothing_more(lines)
        append(path, b"written last\nunfinished")
        lines.stop_at_end()
        with anyio.fail_after(5):
            got = [(line.text, line.terminated) async for line in lines]
    assert got == [("written last", True), ("unfinished", False)]
