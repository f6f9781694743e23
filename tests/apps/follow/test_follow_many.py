"""follow_many(): glob patterns, one watcher, one checkpoint store."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import anyio
import pytest
from _helpers import append, take_named

from utf8stream import CheckpointError, CheckpointStore, follow_many
from utf8stream.follower import ManyFollower, ReadPolicy

pytestmark = [pytest.mark.anyio]


async def nothing_more(lines: ManyFollower, wait: float = 0.3) -> None:
    with anyio.move_on_after(wait):
        line = await lines.__anext__()
        pytest.fail(f"unexpected line {line!r}")


@pytest.mark.parametrize("force_polling", [False, True], ids=["kernel", "polling"])
async def test_a_new_file_is_picked_up_from_its_start(tmp_path: Path, force_polling: bool) -> None:
    (tmp_path / "a.log").write_bytes(b"old a\n")
    (tmp_path / "notes.txt").write_bytes(b"not matched\n")
    async with follow_many(
        [tmp_path / "*.log"], poll_interval=0.05, force_polling=force_polling
    ) as lines:
        assert lines.paths == [str(tmp_path / "a.log")]
        (tmp_path / "b.log").write_bytes(b"b1\nb2\n")
        append(tmp_path / "notes.txt", b"still not\n")
        append(tmp_path / "a.log", b"a1\n")
        got = await take_named(lines, 3)
        assert sorted(got) == [("a.log", "a1"), ("b.log", "b1"), ("b.log", "b2")]
        assert [t for f, t in got if f == "b.log"] == ["b1", "b2"]
        assert sorted(lines.paths) == [str(tmp_path / "a.log"), str(tmp_path / "b.log")]
        await nothing_more(lines)


async def test_a_deleted_file_is_read_to_its_end_and_dropped(tmp_path: Path) -> None:
    notices: list[tuple[str, str]] = []
    (tmp_path / "a.log").write_bytes(b"")
    (tmp_path / "b.log").write_bytes(b"")
    async with follow_many(
        str(tmp_path / "*.log"),
        rotate_grace=0.2,
        poll_interval=0.05,
        on_notice=lambda n: notices.append((n.kind, os.path.basename(n.path))),
    ) as lines:
        await nothing_more(lines, 0.1)
        append(tmp_path / "a.log", b"a1\na2 unfinished")
        os.unlink(tmp_path / "a.log")
        append(tmp_path / "b.log", b"b1\n")
        got = await take_named(lines, 3)
        assert sorted(got) == [("a.log", "a1"), ("a.log", "a2 unfinished"), ("b.log", "b1")]
        with anyio.fail_after(5):
            while str(tmp_path / "a.log") in lines.paths:
                await nothing_more(lines, 0.05)
        assert lines.paths == [str(tmp_path / "b.log")]
        assert ("inaccessible", "a.log") in notices


async def test_one_of_several_files_rotates_without_loss(tmp_path: Path) -> None:
    for name in ("a.log", "b.log", "c.log"):
        (tmp_path / name).write_bytes(b"")
    async with follow_many(
        [tmp_path / "*.log"], rotate_grace=0.2, poll_interval=0.05, start="beginning"
    ) as lines:
        append(tmp_path / "b.log", b"b1\nb2\n")
        assert await take_named(lines, 2) == [("b.log", "b1"), ("b.log", "b2")]
        append(tmp_path / "b.log", b"b3\n")
        os.rename(tmp_path / "b.log", tmp_path / "b.log.1")
        (tmp_path / "b.log").write_bytes(b"b5\n")
        append(tmp_path / "b.log.1", b"b4\n")  # the writer has not reopened yet
        append(tmp_path / "a.log", b"a1\n")
        got = await take_named(lines, 4)
        assert [t for _, t in got if t.startswith("b")] == ["b3", "b4", "b5"]
        assert ("a.log", "a1") in got
        await nothing_more(lines)
        # The rotated file matches no pattern: it is not followed as a file of its own.
        assert len(lines.paths) == 3


async def test_restart_from_the_store_neither_loses_nor_repeats(tmp_path: Path) -> None:
    names = [f"f{i}.log" for i in range(4)]
    for name in names:
        (tmp_path / name).write_bytes(b"".join(b"%s %d\n" % (name.encode(), k) for k in range(3)))
    db = tmp_path / "state.db"
    seen: list[tuple[str, str]] = []
    async with follow_many([tmp_path / "*.log"], store=db, start="beginning") as lines:
        seen += await take_named(lines, 7)
    # Stopped after 7 of 12 lines; more written while stopped, one file rotated away.
    for name in names:
        append(tmp_path / name, b"%s 3\n" % name.encode())
    os.rename(tmp_path / "f1.log", tmp_path / "f1.log.1")
    (tmp_path / "f1.log").write_bytes(b"f1.log 4\n")
    (tmp_path / "f9.log").write_bytes(b"f9.log 0\n")
    async with follow_many([tmp_path / "*.log"], store=str(db), start="end") as lines:
        seen += await take_named(lines, 11)
        await nothing_more(lines)
    texts = [t for _, t in seen]
    # f9.log was created since the last save: read from its start, whatever ``start``.
    expected = [f"{name} {k}" for name in names for k in range(4)] + ["f1.log 4", "f9.log 0"]
    assert sorted(texts) == sorted(expected)
    for name in names:  # in order per file
        mine = [t for t in texts if t.startswith(name)]
        assert mine == sorted(mine)
    with CheckpointStore(db) as store:
        saved = store.load_all()
    assert sorted(saved) == sorted(str(tmp_path / n) for n in [*names, "f9.log"])


@pytest.mark.parametrize("start", ["end", "beginning"])
async def test_a_file_created_while_stopped_is_read_from_its_start(
    tmp_path: Path, start: str
) -> None:
    (tmp_path / "a.log").write_bytes(b"a1\na2\n")
    (tmp_path / "x.txt").write_bytes(b"x1\n")
    db = tmp_path / "state.db"
    async with follow_many([tmp_path / "*.log"], store=db, start=start, last_lines=1) as lines:
        assert await take_named(lines, 1 if start == "end" else 2)
    (tmp_path / "b.log").write_bytes(b"".join(b"b%d\n" % k for k in range(1, 16)))
    notices: list[tuple[str, str]] = []
    async with follow_many(
        [tmp_path / "*.log", tmp_path / "*.txt"],
        store=db,
        start=start,
        last_lines=1,
        on_notice=lambda n: notices.append((n.kind, os.path.basename(n.path))),
    ) as lines:
        got = await take_named(lines, 16)
        await nothing_more(lines)
    # x.txt: a pattern the store knew no file of (its first run): ``start`` applies.
    want = [("b.log", f"b{k}") for k in range(1, 16)] + [("x.txt", "x1")]
    assert sorted(got) == sorted(want)
    assert ("appeared", "b.log") in notices


async def test_the_first_run_with_an_empty_store_starts_at_start(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"a1\na2\na3\n")
    (tmp_path / "b.log").write_bytes(b"b1\nb2\n")
    async with follow_many(
        [tmp_path / "*.log"], store=tmp_path / "state.db", last_lines=1
    ) as lines:
        assert sorted(await take_named(lines, 2)) == [("a.log", "a3"), ("b.log", "b2")]
        await nothing_more(lines)


async def test_a_copytruncate_between_the_open_and_the_first_read_loses_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.log"
    old = [f"old {k}" for k in range(200)]  # more than a fingerprint's 1,024 bytes
    path.write_bytes("".join(f"{t}\n" for t in old).encode())
    new = b"new 0\nnew 1\n"
    db = tmp_path / "state.db"
    notices: list[str] = []
    async with follow_many(
        [tmp_path / "*.log"],
        store=db,
        start="beginning",
        autosave=False,
        on_notice=lambda n: notices.append(n.kind),
    ) as lines:
        # Entering the block opened the file; nothing is read from it yet: copytruncate.
        shutil.copyfile(path, tmp_path / "a.log.1")
        os.truncate(path, 0)
        append(path, new)
        first = await take_named(lines, 100)
        await lines.save()
    assert first == [("a.log.1", t) for t in old[:100]]
    assert notices == ["truncated"]
    async with follow_many([tmp_path / "*.log"], store=db, autosave=False) as lines:
        rest = await take_named(lines, 102)
        await nothing_more(lines)
        await lines.save()
        (checkpoint,) = lines.checkpoints().values()
    assert rest == [("a.log.1", t) for t in old[100:]] + [("a.log", "new 0"), ("a.log", "new 1")]
    # The fingerprint describes the content the offset points into.
    assert checkpoint.offset == len(new)
    assert checkpoint.file.head_length == len(new)
    assert checkpoint.file.head_sha256 == hashlib.sha256(new).hexdigest()


async def test_lines_handed_out_after_the_last_save_come_again(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"1\n2\n3\n4\n")
    db = tmp_path / "state.db"
    store = CheckpointStore(db)
    async with follow_many(
        [tmp_path / "*.log"], store=store, start="beginning", save_every=10**6, save_interval=1e6
    ) as lines:
        assert [t for _, t in await take_named(lines, 2)] == ["1", "2"]
        await lines.save()
        assert [t for _, t in await take_named(lines, 1)] == ["3"]
        store.close()  # as if killed here: the last save is all the store knows
        with pytest.raises(ValueError, match="closed"):
            await lines.aclose()
    async with follow_many([tmp_path / "*.log"], store=db) as lines:
        assert [t for _, t in await take_named(lines, 2)] == ["3", "4"]


async def test_each_pattern_can_have_its_encoding(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_bytes(b"")
    (tmp_path / "sql.txt").write_bytes(b"")
    async with follow_many(
        [tmp_path / "*.log", tmp_path / "*.txt"],
        encodings={str(tmp_path / "*.txt"): "utf-16-le"},
        start="beginning",
    ) as lines:
        append(tmp_path / "sql.txt", "Spid 51: événement\r\n".encode("utf-16-le"))
        append(tmp_path / "app.log", "événement\n".encode())
        got = await take_named(lines, 2)
        assert sorted(got) == [("app.log", "événement"), ("sql.txt", "Spid 51: événement")]


async def _take_until(lines: ManyFollower, wanted: tuple[str, str]) -> list[tuple[str, str]]:
    """The records up to ``wanted`` (included), or a failed test after 10 seconds."""
    got: list[tuple[str, str]] = []
    with anyio.fail_after(10):
        while wanted not in got[-1:]:
            got += await take_named(lines, 1)
    return got


async def test_one_busy_file_does_not_starve_the_others(tmp_path: Path) -> None:
    count = 200_000
    (tmp_path / "busy.log").write_bytes(b"".join(b"busy %d\n" % i for i in range(count)))
    (tmp_path / "quiet.log").write_bytes(b"first\n")
    async with follow_many([tmp_path / "*.log"], start="beginning") as lines:
        got = await _take_until(lines, ("quiet.log", "first"))
        # Turns of the busy file (a turn is one read's lines at most): quiet.log has had
        # one since, found nothing more and waits; only the watcher can wake it now.
        got += await take_named(lines, 10_000)
        append(tmp_path / "quiet.log", b"hello\n")
        got += await _take_until(lines, ("quiet.log", "hello"))
    assert [t for f, t in got if f == "quiet.log"] == ["first", "hello"]
    busy_lines = [t for f, t in got if f == "busy.log"]
    assert busy_lines == [f"busy {i}" for i in range(len(busy_lines))]
    # Not starved: the line came while the busy file was still being read.
    assert len(busy_lines) < count


@pytest.mark.parametrize("read_size", [None, 64])
async def test_each_file_is_read_as_the_read_policy_says(
    tmp_path: Path, read_size: int | None
) -> None:
    """Busy files take turns one read at a time: with the default ``read_size`` the first
    file's lines all come in its first turn, with reads of 64 bytes a few lines each."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.log").write_bytes(
            b"".join(b"%s %03d\n" % (name.encode(), i) for i in range(300))
        )
    reading = ReadPolicy() if read_size is None else ReadPolicy(read_size=read_size)
    async with follow_many([tmp_path / "*.log"], start="beginning", reading=reading) as lines:
        got = await take_named(lines, 600)
    assert sorted(got) == sorted((f"{n}.log", f"{n} {i:03d}") for n in "ab" for i in range(300))
    first = {name for name, _ in got[:20]}
    assert first == ({"a.log"} if read_size is None else {"a.log", "b.log"})


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only the file name"):
        follow_many(str(tmp_path / "*" / "app.log"))
    with pytest.raises(ValueError, match="not followed"):
        follow_many(str(tmp_path / "*.log"), encodings={"*.txt": "utf-16"})
    with pytest.raises(TypeError, match="until_eof"):
        follow_many(str(tmp_path / "*.log"), until_eof=True)
    with pytest.raises(ValueError, match="unknown encoding"):
        follow_many(str(tmp_path / "*.log"), encoding="no-such-codec")


async def test_a_store_it_opened_is_closed_when_entering_fails(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with CheckpointStore(db) as store:
        store.save({})
    with sqlite3.connect(db) as connection:  # a row no follower wrote: refused on loading
        connection.execute("INSERT INTO checkpoints VALUES (?, ?)", (b"k", "{}"))
    many = follow_many([tmp_path / "*.log"], store=db)
    with pytest.raises(CheckpointError, match="the checkpoint of 'k'"):
        await many.__aenter__()
    assert many._store is not None
    with pytest.raises(ValueError, match="closed"):
        many._store.load_all()
