"""What the follower's read tests share (test_reading_page_cache, test_reading_memory_fs):
numbered lines, reading a file whole, and the check that a reader that never waits
still lets other tasks run and stops at a cancellation."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel

from utf8stream import follow
from utf8stream.follower import ReadPolicy


def numbered(count: int) -> bytes:
    return b"".join(b"line %05d %s\n" % (k, b"x" * (k % 40)) for k in range(count))


async def read_all(path: Path, reading: ReadPolicy) -> list[str]:
    async with follow(path, start="beginning", until_eof=True, reading=reading) as lines:
        return [line.text async for line in lines]


async def check_turns_and_cancellation(path: Path, data: bytes, reading: ReadPolicy) -> None:
    """``path`` holds ``data`` (4000 ``numbered`` lines), read as ``reading`` says, with
    a ``read_size`` of 2048: other tasks get a turn about once per ``read_size`` bytes,
    and a cancellation stops the reader at its next read, nothing lost and nothing
    repeated after it."""
    assert reading.read_size == 2048
    turns = 0
    done = False

    async def other() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        await anyio.lowlevel.checkpoint()
        turns = 0
        got = await read_all(path, reading)
        done = True
    assert got == data.decode().splitlines()
    assert turns >= len(data) // 2048 - 2

    async with follow(path, start="beginning", until_eof=True, reading=reading) as lines:
        seen = 0
        with anyio.CancelScope() as scope:
            async for _line in lines:
                seen += 1
                if seen == 100:
                    scope.cancel()  # at the next read, not after the whole file
        assert seen < 1000
        rest = [line.text async for line in lines]  # nothing lost, nothing repeated
    assert seen + len(rest) == 4000
    assert rest == data.decode().splitlines()[seen:]
