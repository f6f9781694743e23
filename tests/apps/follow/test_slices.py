"""A read is cut into lines a slice (``ReadPolicy.feed_size`` bytes) at a time, as the lines before
it are handed out: the records of a whole read would not stay in the processor's cache.
Nothing about the lines, their order, their offsets or the checkpoints changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from utf8stream import follow
from utf8stream.follower import ReadPolicy

#: The follower's own sizes: the default policy.
DEFAULT = ReadPolicy()


def numbered(count: int, newline: bytes = b"\n") -> bytes:
    return b"".join(b"line %06d %s" % (k, b"x" * (k % 50)) + newline for k in range(count))


@pytest.mark.anyio
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le"])
async def test_one_slice_of_lines_at_a_time_and_nothing_changes(
    tmp_path: Path, encoding: str
) -> None:
    text = numbered(40_000, b"\r\n").decode()
    assert DEFAULT.read_size > 2 * DEFAULT.feed_size
    assert len(text.encode(encoding)) > DEFAULT.read_size
    path = tmp_path / "app.log"
    path.write_bytes(text.encode(encoding))
    expected = text.split("\r\n")[:-1]
    unit = 2 if encoding == "utf-16-le" else 1
    async with follow(path, start="beginning", until_eof=True, encoding=encoding) as lines:
        first = await lines.__anext__()
        # Only the first slice is cut: its lines, not the whole read's, wait in memory.
        assert lines.has_pending()
        shortest = min(len(line) + 2 for line in expected) * unit
        assert len(lines._ready) <= DEFAULT.feed_size // shortest
        got = [first.text]
        offsets = [first.offset]
        async for line in lines:
            got.append(line.text)
            offsets.append(line.offset)
            if len(got) == 30_000:
                checkpoint = lines.checkpoint()
                break
        assert got == expected[:30_000]
        starts = [0]
        for line in expected:
            starts.append(starts[-1] + (len(line) + 2) * unit)
        assert offsets == starts[:30_000]
    async with follow(path, checkpoint=checkpoint, until_eof=True, encoding=encoding) as lines:
        assert [line.text async for line in lines] == expected[30_000:]
        assert not lines.has_pending()
