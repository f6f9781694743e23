"""The follower's hot path for UTF-16LE/BE: each slice of a read cut into
``Line`` records in one C call (``LineEngine.feed_records`` through
``CodecLineDecoder.unit_records``, the accelerator's ``utf16_line_records``), the
well-formed lines only.  Nothing handed out may change: the lines, their offsets, the
checkpoints and the state after them are those of the general path (the engine's
``feed``, which the pure-Python build always takes), whatever the slices, the byte
order, the newline mode, the error policy and the malformed units."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _helpers import needs_c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import utf8stream.apps.follow as follow_module
from utf8stream import follow
from utf8stream.core import _accel
from utf8stream.core.linecodec import LineBatch, LineEngine, LineItem, LineTooLong, line_decoder

LINE = follow_module.Line
IDENTITY = follow_module.FileIdentity(1, 2)

#: Code units of every sort, as text (``unit`` encodes them in either byte order): ASCII,
#: Latin-1, other BMP characters, a surrogate pair, newlines of three kinds, lone
#: surrogates (malformed), and a character whose low byte is a newline's (U+010A, U+0D0A).
UNITS = [
    "short",
    "a line of some length, as logs have",
    "caf\xe9",
    "\u20ac \u3042\u6f22",
    "\U0001f600",
    "\n",
    "\r",
    "\r\n",
    "\u010a\u0d0a\u0a00",
    "\ud800",
    "\udc00",
    "x" * 30,
]


def encode(parts: list[str], big: bool) -> bytes:
    """The parts in UTF-16 of that byte order, lone surrogates as they are."""
    return "".join(parts).encode("utf-16-be" if big else "utf-16-le", "surrogatepass")


def normalized(items: list[Any]) -> list[tuple[Any, ...]]:
    """Records, ``LineBatch`` and ``LineItem`` alike: ``(text, offset, terminated,
    mid_line)`` (a ``LineTooLong`` as its start)."""
    out: list[tuple[Any, ...]] = []
    for item in items:
        if isinstance(item, LineBatch):
            offsets = list(item.offsets)
            out.extend((text, offsets[k], True, False) for k, text in enumerate(item.texts))
        elif isinstance(item, LineItem):
            line = item.line
            if isinstance(line, LineTooLong):
                line = ("raise", line.partial)
            out.append((line, item.offset, item.terminated, item.mid_line))
        else:  # a Line record
            out.append((item.text, item.offset, item.terminated, False))
    return out


def engine(encoding: str, **options: Any) -> LineEngine:
    decoder = line_decoder(encoding, options.pop("errors"))
    return LineEngine(decoder, packed_offsets=True, **options)


def sliced(data: bytes, encoding: str, slices: list[int], c: bool, **options: Any) -> Any:
    """The follower's way: slices of the sizes ``slices`` (in turn) cut as ``slice_end``
    cuts them, through ``feed_records`` (``c``; the general ``feed`` where it declines)
    or through ``feed`` alone; the lines, the state after the last slice, and how many
    slices were cut in C."""
    e = engine(encoding, **options)
    got: list[Any] = []
    at, taken, k = 0, 0, 0
    while at < len(data):
        stop = min(len(data), at + slices[k % len(slices)])
        k += 1
        found = e.feed_records(data, at, stop, LINE, IDENTITY, "p") if c else None
        if found is None:
            end = e.slice_end(data, at, stop) if stop < len(data) else len(data)
            got.extend(e.feed(memoryview(data)[at:end]))
        else:
            records, _after, end, items = found
            got.extend(reversed(records))
            got.extend(items)
            taken += 1
        at = end
    state = (e.position, e.line_start, e.partial, e.overlong, e.buffered)
    got.extend(e.finish())
    return normalized(got), state, taken


@needs_c
@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize(
    "options",
    [
        {"newline": None, "errors": "replace"},
        {"newline": "\n", "errors": "replace"},
        {"newline": "\r", "errors": "backslashreplace"},
        {"newline": "\u0d0a", "errors": "replace"},
        {"newline": None, "errors": "ignore", "max_line_bytes": 40, "on_overlong": "split"},
        {"newline": None, "errors": "replace", "max_line_bytes": 40, "on_overlong": "truncate"},
        {"newline": "\n", "errors": "replace", "max_line_bytes": 40, "on_overlong": "skip"},
        {"newline": None, "errors": "replace", "max_line_bytes": 40, "on_overlong": "raise"},
    ],
)
@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.sampled_from(UNITS), max_size=50),
    odd=st.booleans(),
    slices=st.lists(st.integers(1, 90), min_size=1, max_size=6),
)
def test_the_c_cut_gives_what_the_general_path_gives(
    big: bool,
    options: dict[str, Any],
    parts: list[str],
    odd: bool,
    slices: list[int],
) -> None:
    data = encode(parts, big) + (b"\x41" if odd else b"")  # a torn last code unit
    encoding = "utf-16-be" if big else "utf-16-le"
    lines, state, _taken = sliced(data, encoding, slices, True, **options)
    expected, expected_state, taken = sliced(data, encoding, slices, False, **options)
    assert taken == 0
    assert (lines, state) == (expected, expected_state)


@needs_c
@pytest.mark.parametrize("big", [False, True])
def test_well_formed_lines_are_cut_in_c_and_stop_before_a_malformed_one(big: bool) -> None:
    encoding = "utf-16-be" if big else "utf-16-le"
    speedups = _accel.built_accelerator()
    data = encode(["ab\r\n", "\xe9\u20ac\U0001f600\n", "c\r", "d\ud800e\n", "f\n"], big)
    found = speedups.utf16_line_records(data, 0, 1000, 100, big, -1, 1000, LINE, IDENTITY, "p")
    records, cut, end = found
    # Offsets by construction: two bytes a code unit, a surrogate pair four.
    assert [(r.text, r.offset, r.file, r.path, r.terminated) for r in records] == [
        ("c", 118, IDENTITY, "p", True),
        ("\xe9\u20ac\U0001f600", 108, IDENTITY, "p", True),
        ("ab", 100, IDENTITY, "p", True),
    ]
    assert type(records[0]) is speedups.Line
    # The line with a lone surrogate is the general path's, and what follows it.
    assert (cut, end) == (22, len(data))
    # The engine: the same lines, the rest through ``feed`` (its policy's U+FFFD).
    e = engine(encoding, errors="replace")
    records, after, end, items = e.feed_records(data, 0, 1000, LINE, IDENTITY, "p")
    assert [r.text for r in records] == ["c", "\xe9\u20ac\U0001f600", "ab"]
    assert (after, end) == (22, len(data))
    assert normalized(items) == [("d\ufffde", 22, True, False), ("f", 30, True, False)]


@needs_c
@pytest.mark.parametrize("big", [False, True])
def test_a_slice_ends_after_its_last_aligned_newline_unit(big: bool) -> None:
    speedups = _accel.built_accelerator()
    # U+0A0A and U+010A hold a newline byte at either alignment: no newline.
    data = encode(["ab\n", "\u0a0a\u010a\n", "cd"], big)
    cut_records = speedups.utf16_line_records
    records, cut, end = cut_records(data, 0, 12, 0, big, -1, 100, LINE, IDENTITY, "")
    assert [r.text for r in records] == ["\u0a0a\u010a", "ab"] and (cut, end) == (12, 12)
    records, cut, end = cut_records(data, 0, 11, 0, big, -1, 100, LINE, IDENTITY, "")
    assert [r.text for r in records] == ["ab"] and (cut, end) == (6, 6)
    # No newline before ``stop``: the slice is all of it, and no line is complete.
    records, cut, end = cut_records(data, 6, 11, 6, big, -1, 100, LINE, IDENTITY, "")
    assert (records, cut, end) == ([], 6, 11)
    # A \r after the last \n that a unit follows before ``stop`` ends the slice too,
    # past that unit, as ``LineEngine.slice_end`` ends it: the \r's line is complete,
    # the unit after it left to the general path.
    data = encode(["ab\n", "c\r", "de"], big)
    records, cut, end = cut_records(data, 0, 12, 0, big, -1, 100, LINE, IDENTITY, "")
    assert [r.text for r in records] == ["c", "ab"] and (cut, end) == (10, 12)
    e = engine("utf-16-be" if big else "utf-16-le", errors="replace")
    assert e.slice_end(data, 0, 12) == 12
    # A \r at the end of the data may be the first half of \r\n: held.
    data = encode(["a\r", "b\r"], big)
    records, cut, end = cut_records(data, 0, 100, 0, big, -1, 100, LINE, IDENTITY, "")
    assert [r.text for r in records] == ["a"] and (cut, end) == (4, 8)
    # A line longer than the limit (content bytes) stops the cut.
    data = encode(["abc\n", "abcd\n"], big)
    records, cut, end = cut_records(data, 0, 100, 0, big, 10, 6, LINE, IDENTITY, "")
    assert [r.text for r in records] == ["abc"] and (cut, end) == (8, len(data))


@needs_c
@pytest.mark.parametrize("big", [False, True])
def test_each_line_decodes_as_the_codec_decodes_it(big: bool) -> None:
    """Lines of 0 to 40 code units, ASCII but for one character anywhere (the ASCII test
    and the narrowing go 16 units a step, the last step overlapping the one before)."""
    encoding = "utf-16-be" if big else "utf-16-le"
    cut_records = _accel.built_accelerator().utf16_line_records
    for length in range(41):
        for odd in ["", "\x80", "\xff", "\u0100", "\u20ac", "\U0001f600"]:
            for at in range(length + 1) if odd else [0]:
                text = "".join(chr(0x21 + (k * 7) % 90) for k in range(length))
                text = text[:at] + odd + text[at:]
                data = (text + "\n").encode(encoding)
                records, cut, end = cut_records(data, 0, 999, 0, big, -1, 999, LINE, None, "")
                assert (records[0].text, cut, end) == (data[:-2].decode(encoding), end, end)


def test_slice_end_looks_for_a_cr_only_before_the_end_it_is_given() -> None:
    """A slice that ends before its first code unit is whole holds no \r: ``slice_end``
    gives its end back (a negative end to ``rfind`` would count from the end of the
    data and find a \r after the slice)."""
    e = engine("utf-16-le", errors="replace")
    data = "abc\rd".encode("utf-16-le")
    assert e.slice_end(data, 0, 1) == 1


@needs_c
def test_the_c_cut_refuses_bad_arguments() -> None:
    cut_records = _accel.built_accelerator().utf16_line_records
    with pytest.raises(TypeError):
        cut_records(b"a\x00\n\x00", 0, 4, 0, False, -1, 10, object, None, "")
    for sep in (-2, 0xD800, 0x10000):
        with pytest.raises(ValueError):
            cut_records(b"a\x00\n\x00", 0, 4, 0, False, sep, 10, LINE, None, "")
    with pytest.raises(ValueError):
        cut_records(b"a\x00\n\x00", 5, 4, 0, False, -1, 10, LINE, None, "")


@needs_c
def test_no_c_cut_where_it_does_not_apply() -> None:
    data = "a\nb\n".encode("utf-16-le")
    # Pure Python: no hot path.
    with _accel.use_accelerator(False):
        e = engine("utf-16-le", errors="replace")
        assert e.feed_records(data, 0, 8, LINE, None, "") is None
    # Lines that keep their newlines, a newline of two characters, UTF-32: none either.
    options: dict[str, Any]
    for encoding, options in [
        ("utf-16-le", {"keepends": True}),
        ("utf-16-le", {"newline": "\r\n"}),
        ("utf-32-le", {}),
    ]:
        e = engine(encoding, errors="replace", **options)
        assert e.feed_records(data, 0, 8, LINE, None, "") is None
    # A byte held by the decoder (a torn code unit after a gap, say), or a gap to mark.
    e = engine("utf-16-le", errors="replace")
    e.decoder.mark_gap()
    assert e.feed_records(data, 0, 8, LINE, None, "") is None
    # "utf-16" once its byte order is known takes it, after the mark.
    e = engine("utf-16", errors="replace")
    e.feed(codecs.BOM_UTF16_LE + "x\n".encode("utf-16-le"))
    found = e.feed_records(data, 0, 8, LINE, None, "")
    assert found is not None
    assert [(r.text, r.offset) for r in found[0]] == [("b", 10), ("a", 6)]


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reads and slices of a few bytes, so a short file has many of each."""
    monkeypatch.setattr(follow_module, "READ_SIZE", 256)
    monkeypatch.setattr(follow_module, "CACHED_READ_SIZE", 200)
    monkeypatch.setattr(follow_module, "FEED_SIZE", 38)
    yield


def follow_all(path: Path, accelerated: bool, **options: Any) -> dict[str, Any]:
    """Each line a follower hands out (text, offset, terminated), the checkpoint after
    each, and the checkpoint at the end; how many slices were cut in C."""
    got: dict[str, Any] = {"lines": [], "checkpoints": [], "hot": 0}
    real = LineEngine.feed_records

    def counting(self: LineEngine, *args: Any) -> Any:
        found = real(self, *args)
        got["hot"] += found is not None
        return found

    async def run() -> None:
        async with follow(path, start="beginning", until_eof=True, **options) as lines:
            async for line in lines:
                got["lines"].append((line.text, line.offset, line.terminated))
                got["checkpoints"].append(lines.checkpoint().offset)
            got["end"] = lines.checkpoint()

    LineEngine.feed_records = counting  # type: ignore[method-assign]
    try:
        with _accel.use_accelerator(accelerated):
            anyio.run(run)
    finally:
        LineEngine.feed_records = real  # type: ignore[method-assign]
    return got


@needs_c
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-16"])
@pytest.mark.parametrize("newline", [None, "\n"])
@pytest.mark.parametrize("on_overlong", ["split", "truncate", "skip"])
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(parts=st.lists(st.sampled_from(UNITS), max_size=60), odd=st.booleans())
def test_the_follower_hands_out_what_the_general_path_does(
    tmp_path: Path,
    small_slices: None,
    encoding: str,
    newline: str | None,
    on_overlong: str,
    parts: list[str],
    odd: bool,
) -> None:
    big = encoding == "utf-16-be"
    data = encode(parts, big) + (b"\x41" if odd else b"")
    if encoding == "utf-16":
        data = codecs.BOM_UTF16_LE + data
    path = tmp_path / "app.log"
    path.write_bytes(data)
    options = {
        "encoding": encoding,
        "newline": newline,
        "max_line_bytes": 40,
        "on_overlong": on_overlong,
    }
    fast = follow_all(path, True, **options)
    slow = follow_all(path, False, **options)
    assert slow["hot"] == 0
    assert {k: v for k, v in fast.items() if k != "hot"} == {
        k: v for k, v in slow.items() if k != "hot"
    }


@needs_c
def test_the_follower_cuts_utf16_slices_in_c(tmp_path: Path, small_slices: None) -> None:
    path = tmp_path / "app.log"
    lines = [f"line {k} \xe9\u20ac\U0001f600" for k in range(200)]
    path.write_bytes("".join(f"{line}\r\n" for line in lines).encode("utf-16-le"))
    got = follow_all(path, True, encoding="utf-16-le")
    assert [text for text, _, _ in got["lines"]] == lines
    assert got["hot"] > 50
