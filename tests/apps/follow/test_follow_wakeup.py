"""follow() at the end of its data: woken by the kernel, polling where it cannot be, and a
file renamed away read until it has been quiet for ``rotate_grace``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from _helpers import append, fake_watchfiles, needs_proc_fdinfo, take_texts

from utf8stream.apps.follow import Follower, follow

# Timing-bound: each test waits out real poll intervals and grace periods (the soak step).
pytestmark = [pytest.mark.anyio, pytest.mark.soak]

#: How long a test waits for the follower to get where it is going (a failure, not a hang).
DEADLINE = 10.0


async def waits_at_the_end(lines: Follower) -> None:
    """Until the follower has read all its file holds and waits for more (someone must be
    asking it for a line)."""
    with anyio.fail_after(DEADLINE):
        await lines.caught_up()


async def until(condition: Callable[[], bool]) -> None:
    """Until ``condition()`` holds, looking again every few milliseconds."""
    with anyio.fail_after(DEADLINE):
        while not condition():
            await anyio.sleep(0.005)


async def take_into(lines: Follower, got: list[str], n: int, timeout: float | None) -> None:
    """The text of the next ``n`` lines into ``got``, each as it comes."""
    with anyio.fail_after(timeout or DEADLINE):
        while len(got) < n:
            got.append((await lines.__anext__()).text)


async def test_the_kernel_wakes_the_follower_long_before_its_poll_interval(
    tmp_path: Path,
) -> None:
    pytest.importorskip("watchfiles")  # the test extra installs it
    path = tmp_path / "app.log"
    path.write_bytes(b"first\n")
    async with follow(path, start="beginning", poll_interval=60) as lines:
        assert await take_texts(lines, 1) == ["first"]
        got: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(take_into, lines, got, 1, 5)
            await waits_at_the_end(lines)
            started = time.monotonic()
            append(path, b"second\n")
        assert got == ["second"]
        assert time.monotonic() - started < 5
        # A rotation is seen the same way: the directory is watched.
        os.rename(path, tmp_path / "app.log.1")
        path.write_bytes(b"third\n")
        assert await take_texts(lines, 1, timeout=5) == ["third"]


async def test_without_kernel_notification_the_follower_polls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_watchfiles(monkeypatch, None)
    path = tmp_path / "app.log"
    path.write_bytes(b"first\n")
    async with follow(path, start="beginning", poll_interval=0.02, rotate_grace=0) as lines:
        assert await take_texts(lines, 1) == ["first"]
        got: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(take_into, lines, got, 1, None)
            await waits_at_the_end(lines)  # its poll finds what comes next
            append(path, b"second\n")
        assert got == ["second"]
        os.rename(path, tmp_path / "app.log.1")
        path.write_bytes(b"third\n")
        assert await take_texts(lines, 1) == ["third"]


@pytest.mark.parametrize("polling", [False, True])
async def test_a_writer_appending_to_the_renamed_file_after_the_rename_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, polling: bool
) -> None:
    if polling:
        fake_watchfiles(monkeypatch, None)
    path = tmp_path / "app.log"
    got: list[str] = []
    writer = open(path, "ab", buffering=0)  # noqa: SIM115 - held across the rename
    try:
        writer.write(b"old 0\n")
        async with follow(path, start="beginning", poll_interval=0.01, rotate_grace=0.6) as lines:

            async def read_all() -> None:
                got.extend(await take_texts(lines, 7))

            async with anyio.create_task_group() as tg:
                tg.start_soon(read_all)  # reading while the writer writes
                await waits_at_the_end(lines)  # it has read to the end before the rename
                os.rename(path, tmp_path / "app.log.1")
                path.write_bytes(b"new 0\n")  # the new file appears at once
                # The writer has not reopened yet: its lines come over time, within the
                # grace period (the time between them is the case tested).
                for i in range(1, 6):
                    await anyio.sleep(0.08)
                    writer.write(f"old {i}\n".encode())
    finally:
        writer.close()
    assert got == [f"old {i}" for i in range(6)] + ["new 0"]


@needs_proc_fdinfo
async def test_a_renamed_file_its_writer_still_holds_is_drained_past_the_grace(
    tmp_path: Path,
) -> None:
    """logrotate's ``create``: the writer appends to the renamed file until it reopens
    the path, maybe long after the grace period.  While it holds the file open for
    writing and nothing was written at the path, the follower stays on the old file; once
    the writer reopens, the new file follows: a follower that left at the end of the
    grace would lose "old 1"."""
    path = tmp_path / "app.log"
    got: list[str] = []
    writer = open(path, "ab", buffering=0)  # noqa: SIM115 - held across the rename
    try:
        writer.write(b"old 0\n")
        async with (
            follow(path, start="beginning", poll_interval=0.02, rotate_grace=0.1) as lines,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(take_into, lines, got, 3, 10)  # the follower runs all along
            await waits_at_the_end(lines)  # it has read to the end before the rename
            os.rename(path, tmp_path / "app.log.1")
            path.write_bytes(b"")  # logrotate's new, empty file
            await anyio.sleep(1.0)  # ten grace periods, the writer silent: the case
            writer.write(b"old 1\n")
            await until(lambda: len(got) == 2)  # read before the writer reopens
            writer.close()  # it reopens the path (postrotate) and writes there
            append(path, b"new 0\n")
    finally:
        writer.close()
    assert got == ["old 0", "old 1", "new 0"]


async def test_a_file_rotated_long_ago_is_left_without_waiting_for_the_grace(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    async with follow(path, start="beginning", poll_interval=0.01) as lines:
        assert await take_texts(lines, 1) == ["one"]
        checkpoint = lines.checkpoint()
    append(path, b"two\n")
    rotated = tmp_path / "app.log.1"
    os.rename(path, rotated)
    an_hour_ago = time.time() - 3600
    os.utime(rotated, (an_hour_ago, an_hour_ago))
    path.write_bytes(b"three\n")
    async with follow(path, checkpoint=checkpoint, poll_interval=0.01, rotate_grace=60) as lines:
        assert await take_texts(lines, 2, timeout=10) == ["two", "three"]


async def test_stop_at_end_ends_a_follower_woken_by_the_kernel(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\n")
    async with follow(path, start="beginning", poll_interval=60) as lines:
        assert await take_texts(lines, 1) == ["one"]

        async def stop_soon() -> None:
            await waits_at_the_end(lines)  # the follower is waiting when told to stop
            lines.stop_at_end()

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_soon)
                rest = [line.text async for line in lines]
    assert rest == []


async def test_caught_up_once_the_lines_the_file_held_are_handed_out(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"".join(b"%d\n" % i for i in range(50_000)))  # several reads
    seen: list[str] = []
    seen_when_caught_up: list[int] = []
    async with follow(path, start="beginning", poll_interval=0.05) as lines:

        async def watch() -> None:
            await lines.caught_up()
            seen_when_caught_up.append(len(seen))

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            with anyio.fail_after(10):
                while len(seen) < 50_000:
                    seen.append((await lines.__anext__()).text)
                await anyio.sleep(0.1)  # quiet, and no one asks: not caught up
                assert seen_when_caught_up == []  # not until the follower waits for more
                # Asked for a line the file does not hold yet, it waits: caught up.
                with anyio.move_on_after(0.3):
                    await lines.__anext__()
            assert seen_when_caught_up == [50_000]
        await lines.caught_up()  # already: returns at once


async def test_caught_up_when_the_file_cannot_be_opened_or_the_follower_closes(
    tmp_path: Path,
) -> None:
    async with follow(tmp_path / "missing.log", retry=True, poll_interval=0.05) as lines:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(lines.__anext__)
                await lines.caught_up()
                group.cancel_scope.cancel()
    later = follow(tmp_path / "other.log", retry=True)
    await later.aclose()
    with anyio.fail_after(1):
        await later.caught_up()
