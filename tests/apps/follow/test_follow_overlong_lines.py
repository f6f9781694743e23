"""The log follower's overlong lines: each policy (truncate, skip, split, raise) at any
read size, with the limit counted in bytes of the file, the checkpoint of a split line,
and what an unfinished overlong line holds in memory."""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest
from _helpers import append, nothing_more, take_texts

from utf8stream import Malformed, MalformedKind
from utf8stream.apps.follow import FollowerStatistics, follow
from utf8stream.core.lines import LineTooLong
from utf8stream.follower import ReadPolicy

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("implementation")]
POLL = 0.005


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
    path = tmp_path / "app.log"
    path.write_bytes(b"z" * 1000)  # no newline yet
    async with follow(
        path,
        start="beginning",
        poll_interval=POLL,
        max_line_bytes=64,
        on_overlong="truncate",
        reading=ReadPolicy(read_size=100),
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


@pytest.mark.parametrize("policy", ["truncate", "skip", "raise"])
@pytest.mark.parametrize("newline", [None, "\r\n"], ids=["universal", "crlf"])
@pytest.mark.parametrize("length", [15, 31], ids=["first-read", "later-read"])
async def test_a_read_ending_inside_an_overlong_lines_newline_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, newline: str | None, length: int
) -> None:
    """Reads of 16 bytes end right after the ``\\r`` of the overlong line's
    ``\\r\\n`` (or lone ``\\r``); the line after it must still come, whole."""
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
        reading=ReadPolicy(read_size=16),
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
    path = tmp_path / "app.log"
    path.write_bytes(b"12345678\r\nnext\r\n")  # the first read ends after the \r
    reading = ReadPolicy(read_size=9)
    async with follow(
        path,
        start="beginning",
        max_line_bytes=8,
        on_overlong="skip",
        until_eof=True,
        reading=reading,
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
        got: list[str] = []
        async with follow(
            path,
            start="beginning",
            newline=newline,
            max_line_bytes=limit,
            on_overlong=policy,
            until_eof=True,
            reading=ReadPolicy(read_size=read_size),
        ) as lines:
            piece = ""
            async for line in lines:
                piece += line.text
                if line.terminated:  # split pieces are joined back into their line
                    got.append(piece)
                    piece = ""
        assert got == expected, read_size


@pytest.mark.parametrize("policy", ["split", "raise", "skip"])
async def test_statistics_count_each_overlong_line_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"a\n" + b"x" * 100 + b"\nb\n")
    lines = []
    reading = ReadPolicy(read_size=7)  # the long line comes in many reads
    async with follow(
        path,
        start="beginning",
        until_eof=True,
        max_line_bytes=16,
        on_overlong=policy,
        reading=reading,
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
