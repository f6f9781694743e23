"""The follower's hot path: each slice of a read after the first is cut into lines in one
call (``LineEngine.feed_slice``: the lines as plain data, cut and decoded by the
decoder's scanner) and made ``Line`` records in one more (``records``), with no queue,
no item and no checkpoint made per slice; reads from the page cache become the bytes
read with no copy (``ReadBuffer``).  Nothing the follower hands out may change: the
lines, their offsets, the checkpoint after each of them, the statistics and the
malformed units reported are those of the general path (pure Python, each slice fed
through ``feed``), whatever the slices and the lines."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from _extension import module_with
from _helpers import examples, needs_c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import follow
from utf8stream.apps import _apps_accel, _apps_native
from utf8stream.core import _accel
from utf8stream.core.linecodec import LineEngine, line_decoder
from utf8stream.follower import ReadPolicy

#: Reads and slices of a few bytes, so a short file has many of each.
SMALL_SLICES = ReadPolicy(read_size=256, cached_read_size=200, feed_size=37)


def follow_all(path: Path, accelerated: bool, **options: Any) -> dict[str, Any]:
    """Everything a follower over ``path`` hands out: each line with its offset and
    whether it was terminated, the checkpoint after each, the statistics, the
    malformed units; and how many slices took the hot path.  ``accelerated=False``:
    pure Python, and no slice on the hot path (each goes through ``feed``)."""
    got: dict[str, Any] = {"lines": [], "checkpoints": [], "malformed": [], "hot": 0, "cold": 0}
    real = LineEngine.feed_slice
    feed = LineEngine.feed

    def counting(self: LineEngine, *args: Any) -> Any:
        found = real(self, *args) if accelerated else None
        got["hot"] += found is not None
        return found

    def general(self: LineEngine, data: Any) -> Any:
        got["cold"] += 1
        return feed(self, data)

    async def run() -> None:
        async with follow(
            path,
            start="beginning",
            until_eof=True,
            on_malformed=lambda event: got["malformed"].append((event.offset, event.kind)),
            **options,
        ) as lines:
            async for line in lines:
                got["lines"].append((line.text, line.offset, line.terminated))
                got["checkpoints"].append(lines.checkpoint().offset)
            got["statistics"] = lines.statistics()
            got["end"] = lines.checkpoint()

    LineEngine.feed_slice = counting  # type: ignore[method-assign]
    LineEngine.feed = general  # type: ignore[method-assign]
    try:
        with _accel.use_accelerator(accelerated):
            anyio.run(run)
    finally:
        LineEngine.feed_slice = real  # type: ignore[method-assign]
        LineEngine.feed = feed  # type: ignore[method-assign]
    return got


def same(hot: dict[str, Any], general: dict[str, Any]) -> bool:
    """What the followers handed out is the same (how they cut it aside)."""
    return {k: v for k, v in hot.items() if k not in ("hot", "cold")} == {
        k: v for k, v in general.items() if k not in ("hot", "cold")
    }


#: Lines of every sort the general path handles: newlines of three kinds, an empty line,
#: malformed bytes, non-ASCII text, a long line (over the limit of 40 bytes below).
PIECES = [
    b"short\n",
    b"a line of some length, as logs have\n",
    b"\n",
    b"crlf\r\n",
    b"cr\r",
    b"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n",
    b"bad \xff\xc3 bytes\n",
    b"x" * 90 + b"\n",
    b"\xe2\x82",
]


@needs_c
@pytest.mark.parametrize("on_overlong", ["split", "truncate", "skip"])
@pytest.mark.parametrize("newline", [None, "\n"])
@settings(
    max_examples=examples(40),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=60))
def test_the_hot_path_hands_out_what_the_general_path_does(
    tmp_path: Path, on_overlong: str, newline: str | None, parts: list[bytes]
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"".join(parts))
    options = {"max_line_bytes": 40, "on_overlong": on_overlong, "newline": newline}
    options["reading"] = SMALL_SLICES
    hot = follow_all(path, True, **options)
    general = follow_all(path, False, **options)
    assert general["hot"] == 0
    assert same(hot, general)


@needs_c
@pytest.mark.parametrize("newline", [None, "\n"])
@settings(
    max_examples=examples(30),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    runs=st.lists(
        st.tuples(st.sampled_from(PIECES), st.integers(min_value=1, max_value=150)), max_size=8
    )
)
def test_long_runs_of_lines_in_one_slice(
    tmp_path: Path, newline: str | None, runs: list[tuple[bytes, int]]
) -> None:
    """Slices of many lines (the follower's own sizes): runs of ASCII lines and of other
    lines (characters, malformed bytes, \\r), mixed, give what the general path gives."""
    path = tmp_path / "app.log"
    path.write_bytes(b"".join(piece * n for piece, n in runs))
    options = {"max_line_bytes": 40, "newline": newline}
    hot = follow_all(path, True, **options)
    general = follow_all(path, False, **options)
    assert same(hot, general)


@needs_c
def test_plain_lines_take_the_hot_path(tmp_path: Path) -> None:
    data = b"".join(b"line %04d %s\n" % (k, b"y" * (k % 7)) for k in range(600))
    path = tmp_path / "app.log"
    path.write_bytes(data)
    hot = follow_all(path, True, reading=SMALL_SLICES)
    general = follow_all(path, False, reading=SMALL_SLICES)
    assert [text for text, _, _ in hot["lines"]] == data.decode().splitlines()
    # Every slice: each long read ends at a line's end (the rest is read again with
    # the next bytes), so no slice holds a line to join to the next read's.
    assert hot["hot"] >= len(data) // 37
    assert hot["cold"] == 0
    assert same(hot, general)


@needs_c
def test_an_on_malformed_that_raises_on_the_hot_path_loses_nothing(tmp_path: Path) -> None:
    """The callback's exception is raised once the slice is cut; the lines of that
    slice come next, and the checkpoint covers exactly the lines handed out."""
    lines = [b"line %03d ok\n" % k for k in range(100)]
    lines[60] = b"line 060 \xff\n"
    path = tmp_path / "app.log"
    path.write_bytes(b"".join(lines))
    seen: list[str] = []

    def refuse(event: object) -> None:
        raise LookupError("refused")

    async def run() -> None:
        async with follow(
            path, start="beginning", until_eof=True, on_malformed=refuse, reading=SMALL_SLICES
        ) as follower:
            with pytest.raises(LookupError):
                async for line in follower:
                    seen.append(line.text)
            checkpoint = follower.checkpoint()
            rest = [line.text async for line in follower]
        assert checkpoint.offset == sum(map(len, lines[: len(seen)]))
        assert seen + rest == [line.decode(errors="replace")[:-1] for line in lines]

    anyio.run(run)


@pytest.mark.usefixtures("implementation")
def test_feed_slice_cuts_a_slice_into_lines() -> None:
    decoder = line_decoder("utf-8", "replace", start_offset=100)
    engine = LineEngine(decoder, offset=100, packed_offsets=True)
    data = b"ab\ncd\r\nef\rgh\nij"
    found = engine.feed_slice(data, 0, 9)
    assert found is not None
    (texts, offsets), end, items = found
    # The slice ends just past its last \n before byte 9.
    assert (texts, list(offsets), end, items) == (["ab", "cd"], [100, 103, 107], 7, [])
    assert (engine.position, engine.line_start, engine.partial) == (107, 107, b"")
    # The rest of the data: up to its end, the unfinished last line held.
    found = engine.feed_slice(data, 7, 100)
    assert found is not None
    (texts, offsets), end, items = found
    assert (texts, list(offsets), end, items) == (["ef", "gh"], [107, 110, 113], len(data), [])
    assert engine.partial == b"ij"
    # A line held: the hot path does not apply, and nothing changes.
    assert engine.feed_slice(b"kl\n", 0, 3) is None
    assert engine.position == 115
    # Universal newlines: a \r after the last \n that a byte follows before ``stop``
    # ends the slice past that byte, as ``slice_end`` ends it: the \r's line is
    # complete, and the byte after it is held as an unfinished line.
    engine = LineEngine(line_decoder("utf-8", "replace", start_offset=100), offset=100)
    found = engine.feed_slice(data, 0, 11)
    assert found is not None
    (texts, offsets), end, items = found
    assert (texts, list(offsets), end, items) == (["ab", "cd", "ef"], [100, 103, 107, 110], 11, [])
    assert engine.partial == b"g"
    assert engine.slice_end(data, 0, 11) == 11


@needs_c
@pytest.mark.parametrize("no_avx2", [None, "1"])
@pytest.mark.parametrize("shift", range(0, 40, 3))
def test_lines_finds_each_newline_and_character_in_a_block(
    no_avx2: str | None, shift: int
) -> None:
    """The scanner's ``lines`` (what ``feed_slice`` cuts a slice with) over lines of
    every length to 100 bytes, a two-byte character at several places in some, each
    line moved through every place in a block: the lines at their offsets, whichever
    module object (AVX2 or SSE2) cuts them."""
    module = _accel.built_accelerator() if no_avx2 is None else module_with(no_avx2)
    lines = [b"x" * k + b"\n" for k in range(101)]
    lines += [
        b"a" * k + "\u00e9".encode() + b"b" * j + b"\n"
        for k in range(0, 70, 7)
        for j in (0, 5, 33)
    ]
    lines += [b"c" * k + b"\r\n" for k in range(0, 70, 9)]
    data = b"y" * shift + b"\n" + b"".join(lines) + b"tail"
    events: list[Any] = []
    units = module.Units("\ufffd", events.append)
    texts, offsets = units.lines(b"", data, 1000, 10, 1 << 20, 2)
    expected, at = [], 1000
    for piece in data.split(b"\n")[:-1]:
        expected.append((piece.decode(), at))
        at += len(piece) + 1
    assert list(zip(texts, offsets, strict=False)) == expected
    assert offsets[-1] == 1000 + len(data) - len(b"tail")
    assert events == []


@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize("newline", [None, "\n"])
def test_feed_slice_cuts_many_lines_up_to_any_slice_end(newline: str | None) -> None:
    """``feed_slice`` over hundreds of lines of varied lengths (empty ones, \\r\\n and
    lone \\r with universal newlines, a line with a character among them), the slice
    ending at every place of its last blocks with lines after it, and at the data's own
    end: the lines of the slice, at their offsets."""
    lines = [b"z" * ((k * 37) % 131) + b"\n" for k in range(300)]
    lines[5] = b"\n"
    lines[150] = b"caf" + "\u00e9".encode() + b"\n"
    if newline is None:
        lines[70] = b"crlf" * 5 + b"\r\n"
        lines[200] = b"cr" * 9 + b"\r"
    data = b"".join(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for stop in [*range(len(data) - 300, len(data) - 300 + 70), len(data)]:
        decoder = line_decoder("utf-8", "replace", start_offset=500)
        engine = LineEngine(decoder, offset=500, newline=newline, packed_offsets=True)
        found = engine.feed_slice(data, 0, stop)
        assert found is not None
        (texts, offsets), end, items = found
        # The slice ends past the last newline byte before stop (\n: a \r after it
        # is not one here, and none is near the slices' ends).
        last = data.rindex(b"\n", 0, stop) + 1 if stop < len(data) else len(data)
        expected = [
            (line.rstrip(b"\r\n").decode(), 500 + at)
            for line, at in zip(lines, starts, strict=False)
            if at + len(line) <= last
        ]
        assert (end, items, offsets[-1]) == (last, [], 500 + last)
        assert list(zip(texts, offsets, strict=False)) == expected


@needs_c
def test_the_hot_path_declines_where_the_decoder_cannot_cut_lines() -> None:
    """A policy other than U+FFFD: the decoder does not cut lines itself, the slice is
    fed the usual way, and nothing changed."""
    engine = LineEngine(line_decoder("utf-8", "backslashreplace"), packed_offsets=True)
    assert engine.feed_slice(b"a\nb\n", 0, 4) is None
    assert engine.position == 0


@pytest.mark.parametrize("implementation", ["c", "python"])
def test_a_read_buffer_gives_what_was_read(tmp_path: Path, implementation: str) -> None:
    if implementation == "c":
        if _accel.built_accelerator() is None:
            pytest.skip("C accelerator not built")
        with _accel.use_accelerator(True):
            kind: Any = _apps_accel.implementation().ReadBuffer
        assert kind is not _apps_native.ReadBuffer
    else:
        kind = _apps_native.ReadBuffer
    path = tmp_path / "data"
    path.write_bytes(bytes(range(256)) * 4)
    buffer = kind(300)
    assert len(buffer) == 300
    fd = os.open(path, os.O_RDONLY)
    try:
        for offset in (0, 700, 1000):
            with memoryview(buffer) as view:
                n = os.preadv(fd, (view,), offset)
                if implementation == "c":
                    with pytest.raises(BufferError):
                        buffer.take(n)  # not while a view is held
            taken = buffer.take(n)
            assert type(taken) is bytes
            assert taken == (bytes(range(256)) * 4)[offset : offset + 300]
    finally:
        os.close(fd)
    with pytest.raises(ValueError):
        buffer.take(301)
    with pytest.raises(ValueError):
        buffer.take(-1)
