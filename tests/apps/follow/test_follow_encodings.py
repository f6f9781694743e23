"""The log follower in other encodings than UTF-8, through the core's line engine:
exact source byte offsets, a byte-order mark on resuming, legacy codecs."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from _helpers import append, nothing_more

from utf8stream.apps.follow import Follower, follow

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("implementation")]
POLL = 0.005


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
