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
from _helpers import append, set_in_follower, take_texts

from utf8stream import Malformed, MalformedKind
from utf8stream.apps.follow import (
    FileIdentity,
    FollowCheckpoint,
    Follower,
    FollowerStatistics,
    Line,
    Notice,
    _rotation,
    follow,
    write_checkpoint,
)
from utf8stream.core.lines import LineTooLong

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("implementation")]
POLL = 0.005


async def nothing_more(follower: Follower, wait: float = 0.05) -> bool:
    """True if no line arrives within ``wait`` seconds."""
    with anyio.move_on_after(wait):
        await follower.__anext__()
        return False
    return True


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
    async with follow(path, start="beginning", poll_interval=POLL) as lines:
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
    set_in_follower(monkeypatch, "READ_SIZE", 64)
    path = tmp_path / "app.log"
    lines_in = [f"line {i:03d} " + "x" * 20 for i in range(20)]
    path.write_bytes("".join(line + "\n" for line in lines_in).encode())
    events: list[Malformed] = []
    async with follow(
        path, start="beginning", poll_interval=POLL, on_malformed=events.append
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
    async with follow(path, checkpoint=cp, poll_interval=POLL) as lines:
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


async def test_invalid_bytes_and_overlong_lines_never_stop_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"ok\nbad \xff\xc0 byte\n" + b"y" * 50 + b"\nafter\n")
    events: list[Malformed] = []
    async with follow(
        path,
        start="beginning",
        poll_interval=POLL,
        max_line_bytes=16,
        on_overlong="skip",
        on_malformed=events.append,
    ) as lines:
        assert await take_texts(lines, 3) == ["ok", "bad \ufffd\ufffd byte", "after"]
        cp = lines.checkpoint()
    assert cp.offset == path.stat().st_size
    assert [(e.offset, e.kind) for e in events] == [
        (7, MalformedKind.INVALID_BYTE),
        (8, MalformedKind.OVERLONG),
    ]


@pytest.mark.parametrize("policy", ["split", "truncate", "skip", "raise"])
async def test_overlong_policies(tmp_path: Path, policy: str) -> None:
    path = tmp_path / "app.log"
    long_line = "é" * 10  # 20 bytes
    path.write_bytes(f"short\n{long_line}\nnext\n".encode())
    async with follow(
        path, start="beginning", poll_interval=POLL, max_line_bytes=7, on_overlong=policy
    ) as lines:
        got: list[str] = []
        errors: list[LineTooLong] = []
        with anyio.fail_after(5):
            while "next" not in got:
                try:
                    got.append((await lines.__anext__()).text)
                except LineTooLong as exc:
                    errors.append(exc)
    expected = {
        # 20 bytes in pieces of at most 7 bytes, cut at character boundaries: 6+6+6+2.
        "split": ["short", "ééé", "ééé", "ééé", "é", "next"],
        "truncate": ["short", "ééé", "next"],
        "skip": ["short", "next"],
        "raise": ["short", "next"],
    }
    assert got == expected[policy]
    assert [e.partial for e in errors] == (["ééé"] if policy == "raise" else [])


async def test_overlong_unfinished_line_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_in_follower(monkeypatch, "READ_SIZE", 100)
    path = tmp_path / "app.log"
    path.write_bytes(b"z" * 1000)  # no newline yet
    async with follow(
        path, start="beginning", poll_interval=POLL, max_line_bytes=64, on_overlong="truncate"
    ) as lines:
        assert await nothing_more(lines)
        file = lines._reader.file
        assert file is not None and len(file.engine.partial) <= 64 + 100
        append(path, b"zz\nnext\n")
        assert await take_texts(lines, 2) == ["z" * 64, "next"]


async def test_split_checkpoint_mid_line_resumes_without_gap(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"abcdefghij\nk\n")
    async with follow(
        path, start="beginning", poll_interval=POLL, max_line_bytes=4, on_overlong="split"
    ) as lines:
        assert await take_texts(lines, 1) == ["abcd"]
        cp = lines.checkpoint()
    assert cp.mid_line and cp.offset == 4
    async with follow(
        path, checkpoint=cp, poll_interval=POLL, max_line_bytes=4, on_overlong="split"
    ) as lines:
        assert await take_texts(lines, 3) == ["efgh", "ij", "k"]


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
    set_in_follower(monkeypatch, "READ_SIZE", 64)
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


@pytest.mark.parametrize("policy", ["truncate", "skip", "raise"])
@pytest.mark.parametrize("newline", [None, "\r\n"], ids=["universal", "crlf"])
@pytest.mark.parametrize("length", [15, 31], ids=["first-read", "later-read"])
async def test_a_read_ending_inside_an_overlong_lines_newline_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, newline: str | None, length: int
) -> None:
    """Reads of 16 bytes end right after the ``\\r`` of the overlong line's
    ``\\r\\n`` (or lone ``\\r``); the line after it must still come, whole."""
    set_in_follower(monkeypatch, "READ_SIZE", 16)
    path = tmp_path / "app.log"
    ending = b"\r\n" if newline else b"\r"
    # (A \r at the very end would wait for what follows: the last line ends in \n.)
    last = b"last\r\n" if newline else b"last\n"
    path.write_bytes(b"y" * length + ending + b"next" + ending + last)
    got: list[str] = []
    raised = 0
    async with follow(
        path,
        start="beginning",
        newline=newline,
        max_line_bytes=8,
        on_overlong=policy,
        poll_interval=POLL,
    ) as lines:
        with anyio.fail_after(5):
            while "last" not in got:
                try:
                    got.append((await lines.__anext__()).text)
                except LineTooLong:
                    raised += 1
        assert lines.checkpoint().offset == path.stat().st_size
    assert got == (["y" * 8] if policy == "truncate" else []) + ["next", "last"]
    assert raised == (policy == "raise")


async def test_a_line_at_the_limit_before_a_cut_crlf_is_not_overlong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_in_follower(monkeypatch, "READ_SIZE", 9)
    path = tmp_path / "app.log"
    path.write_bytes(b"12345678\r\nnext\r\n")  # the first read ends after the \r
    async with follow(
        path, start="beginning", max_line_bytes=8, on_overlong="skip", until_eof=True
    ) as lines:
        assert [line.text async for line in lines] == ["12345678", "next"]
        assert lines.statistics().overlong == 0


def _char_cut(content: bytes, limit: int) -> int:
    """The oracle's cut: the last character start at or before ``limit`` (valid UTF-8)."""
    cut = limit
    while cut and 0x80 <= content[cut] <= 0xBF:
        cut -= 1
    return cut


@pytest.mark.parametrize("seed", range(3))  # universal newlines, "\r\n", "\n"
@pytest.mark.parametrize("policy", ["truncate", "skip", "split"])
async def test_overlong_lines_at_every_read_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, policy: str
) -> None:
    rng = random.Random(seed)
    newline = [None, "\r\n", "\n"][seed % 3]
    endings = [b"\r\n", b"\r", b"\n"] if newline is None else [newline.encode()]
    limit = 8
    contents = [
        "".join(rng.choice(["a", "é", "€", "🐍"]) for _ in range(rng.randrange(12))).encode()
        for _ in range(40)
    ]
    data = b""
    for i, content in enumerate(contents):
        if not content and data.endswith(b"\r"):
            contents[i] = content = b"a"  # \r then an empty line's \n would be one \r\n
        data += content + rng.choice(endings)
    if data.endswith(b"\r"):
        data += b"\n"  # a last lone \r would wait for what follows it
    expected: list[str] = []
    for content in contents:
        if len(content) <= limit or policy == "split":
            expected.append(content.decode())
        elif policy == "truncate":
            expected.append(content[: _char_cut(content, limit)].decode())
    path = tmp_path / "app.log"
    path.write_bytes(data)
    for read_size in (1, 4, 16):
        set_in_follower(monkeypatch, "READ_SIZE", read_size)
        got: list[str] = []
        async with follow(
            path,
            start="beginning",
            newline=newline,
            max_line_bytes=limit,
            on_overlong=policy,
            until_eof=True,
        ) as lines:
            piece = ""
            async for line in lines:
                piece += line.text
                if line.terminated:  # split pieces are joined back into their line
                    got.append(piece)
                    piece = ""
        assert got == expected, read_size


# -- other encodings, through the core's line engine ----------------------------------------


async def _records(follower: Follower, n: int) -> list[tuple[str, int, bool]]:
    with anyio.fail_after(5):
        return [
            (line.text, line.offset, line.terminated)
            for line in [await follower.__anext__() for _ in range(n)]
        ]


async def test_utf16le_file_with_exact_offsets(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    texts = ["one", "dos 😀", "", "drei\u2028x", "四"]
    data = "one\r\ndos 😀\n\r\ndrei\u2028x\n四".encode("utf-16-le")
    path.write_bytes(data[:7])  # "one\r" and half of a code unit
    async with follow(path, start="beginning", poll_interval=POLL, encoding="utf-16-le") as f:
        assert await nothing_more(f)
        append(path, data[7:])
        got = await _records(f, 4)
        # The unfinished last line comes when it is finished.
        assert await nothing_more(f)
        append(path, "\n".encode("utf-16-le"))
        got += await _records(f, 1)
        checkpoint = f.checkpoint()
    offsets = [0, 10, 24, 28, 42]  # code units: 5, 7 (a surrogate pair), 2, 7
    assert got == [(t, o, True) for t, o in zip(texts, offsets, strict=True)]
    assert checkpoint.offset == len(data) + 2 == path.stat().st_size
    # The last two lines, as tail -n 2 counts them in UTF-16 too.
    async with follow(path, last_lines=2, until_eof=True, encoding="utf-16-le") as f:
        assert [(line.text, line.offset) async for line in f] == [("drei\u2028x", 28), ("四", 42)]


async def test_utf16_with_byte_order_mark_resumes_mid_file(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes("a\nbé\nc\n".encode("utf-16"))  # the platform's order, with its mark
    async with follow(path, start="beginning", until_eof=True, encoding="utf-16") as f:
        lines = [(line.text, line.offset) async for line in f]
        checkpoint = f.checkpoint()
    assert lines == [("a", 0), ("bé", 6), ("c", 12)]
    append(path, "d\n".encode("utf-16")[2:])  # appended without a mark, as writers do
    resumed = follow(path, checkpoint=checkpoint, until_eof=True, encoding="utf-16")
    async with resumed as f:
        assert [(line.text, line.offset) async for line in f] == [("d", 16)]


@pytest.mark.parametrize("encoding", ["shift_jis", "gb18030", "cp1252"])
async def test_legacy_codec_file(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "app.log"
    texts = ["caf\u00e9" if encoding == "cp1252" else "日本語", "x", ""]
    data = b"".join(t.encode(encoding) + b"\r\n" for t in texts) + b"\xff\n"
    path.write_bytes(data)
    async with follow(path, start="beginning", until_eof=True, encoding=encoding) as f:
        got = [(line.text, line.offset) async for line in f]
    offsets = [0]
    for t in texts:
        offsets.append(offsets[-1] + len(t.encode(encoding)) + 2)
    assert got[:3] == list(zip(texts, offsets, strict=False))
    assert got[3][1] == offsets[3] and got[3][0] == b"\xff".decode(encoding, "replace")


def test_follow_refuses_encodings_lines_cannot_be_cut_in() -> None:
    with pytest.raises(ValueError, match="not self-delimiting"):
        follow("x.log", encoding="iso2022_jp")
    with pytest.raises(ValueError, match="UTF-8 only"):
        follow("x.log", encoding="utf-16-le", on_malformed=print)


@pytest.mark.parametrize("policy", ["split", "raise", "skip"])
async def test_statistics_count_each_overlong_line_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    set_in_follower(monkeypatch, "READ_SIZE", 7)  # the long line comes in many reads
    path = tmp_path / "app.log"
    path.write_bytes(b"a\n" + b"x" * 100 + b"\nb\n")
    lines = []
    async with follow(
        path, start="beginning", until_eof=True, max_line_bytes=16, on_overlong=policy
    ) as f:
        while True:
            try:
                lines.append((await f.__anext__()).text)
            except LineTooLong:
                lines.append("LineTooLong")
            except StopAsyncIteration:
                break
        stats = f.statistics()
    assert lines[0] == "a" and lines[-1] == "b"
    assert stats.overlong == 1
    assert stats.skipped == (1 if policy == "skip" else 0)
    assert stats == FollowerStatistics(
        lines=stats.lines, skipped=stats.skipped, overlong=1, rotations=0, truncations=0
    )
    with pytest.raises(AttributeError):
        stats.lines = 0  # type: ignore[misc]


async def test_held_newline_start_counts_against_the_limit_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"ok\r\n" + b"aaaaaa\r")  # the "\r" may begin "\r\n": held, then content
    async with follow(
        path,
        start="beginning",
        until_eof=True,
        newline="\r\n",
        max_line_bytes=6,
        on_overlong="truncate",
    ) as f:
        got = [(line.text, line.offset, line.terminated) async for line in f]
    assert got == [("ok", 0, True), ("aaaaaa", 4, False)]
