"""The follower over UTF-16LE/BE: each slice of a read cut where ``slice_end`` ends it and
fed to the line engine, whose lines of code units are cut and decoded in bulk
(``CodecLineDecoder.decode_units`` and ``split_lines``).  Nothing handed out may depend
on the slices or the implementation: the lines, their offsets, the checkpoints and the
state after them are those of one feed of all the bytes, in C and in pure Python,
whatever the byte order, the newline mode, the error policy and the malformed units."""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

import anyio
import pytest
from _helpers import examples, needs_c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import follow
from utf8stream.core import _accel
from utf8stream.core.linecodec import LineBatch, LineEngine, LineItem, LineTooLong, line_decoder
from utf8stream.follower import ReadPolicy

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


def sliced(data: bytes, encoding: str, slices: list[int], **options: Any) -> Any:
    """The follower's way: slices of the sizes ``slices`` (in turn) cut as ``slice_end``
    cuts them and fed; the lines, and the state after the last slice."""
    e = engine(encoding, **options)
    got: list[Any] = []
    at, k = 0, 0
    while at < len(data):
        stop = min(len(data), at + slices[k % len(slices)])
        k += 1
        end = e.slice_end(data, at, stop) if stop < len(data) else len(data)
        got.extend(e.feed(memoryview(data)[at:end]))
        at = end
    state = (e.position, e.line_start, e.partial, e.overlong, e.buffered)
    got.extend(e.finish())
    return normalized(got), state


@pytest.mark.usefixtures("implementation")
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
@settings(max_examples=examples(60), deadline=None)
@given(
    parts=st.lists(st.sampled_from(UNITS), max_size=50),
    odd=st.booleans(),
    slices=st.lists(st.integers(1, 90), min_size=1, max_size=6),
)
def test_slices_give_what_one_feed_gives(
    big: bool,
    options: dict[str, Any],
    parts: list[str],
    odd: bool,
    slices: list[int],
) -> None:
    data = encode(parts, big) + (b"\x41" if odd else b"")  # a torn last code unit
    encoding = "utf-16-be" if big else "utf-16-le"
    lines, state = sliced(data, encoding, slices, **options)
    whole, whole_state = sliced(data, encoding, [len(data) + 1], **options)
    assert (raised_anywhere(lines), state) == (raised_anywhere(whole), whole_state)


def raised_anywhere(lines: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The lines, a ``LineTooLong`` as its start alone: it is raised as soon as the bytes
    seen pass the limit (where depends on how the bytes came: mid-line, then the end of
    the line skipped, or at its end), and a skipped line's end is no line."""
    return [
        (line,) if isinstance(line, tuple) else (line, *rest)
        for line, *rest in lines
        if line is not None
    ]


@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize("big", [False, True])
def test_lines_of_code_units_and_their_offsets(big: bool) -> None:
    encoding = "utf-16-be" if big else "utf-16-le"
    data = encode(["ab\r\n", "\xe9\u20ac\U0001f600\n", "c\r", "d\ud800e\n", "f\n"], big)
    # Offsets by construction: two bytes a code unit, a surrogate pair four; a lone
    # surrogate is the policy's U+FFFD.
    lines, _ = sliced(data, encoding, [1000], errors="replace")
    assert lines == [
        ("ab", 0, True, False),
        ("\xe9\u20ac\U0001f600", 8, True, False),
        ("c", 18, True, False),
        ("d\ufffde", 22, True, False),
        ("f", 30, True, False),
    ]
    # U+0A0A and U+010A hold a newline byte at either alignment: no newline.
    data = encode(["ab\n", "\u0a0a\u010a\n", "cd"], big)
    e = engine(encoding, errors="replace")
    assert (e.slice_end(data, 0, 12), e.slice_end(data, 0, 11)) == (12, 6)
    lines, _ = sliced(data, encoding, [11], errors="replace")
    assert lines == [
        ("ab", 0, True, False),
        ("\u0a0a\u010a", 6, True, False),
        ("cd", 12, False, False),
    ]


@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize("big", [False, True])
def test_each_line_decodes_as_the_codec_decodes_it(big: bool) -> None:
    """Lines of 0 to 40 code units, ASCII but for one character anywhere."""
    encoding = "utf-16-be" if big else "utf-16-le"
    texts = []
    for length in range(41):
        for odd in ["", "\x80", "\xff", "\u0100", "\u20ac", "\U0001f600"]:
            for at in range(length + 1) if odd else [0]:
                text = "".join(chr(0x21 + (k * 7) % 90) for k in range(length))
                texts.append(text[:at] + odd + text[at:])
    data = "".join(text + "\n" for text in texts).encode(encoding)
    lines, _ = sliced(data, encoding, [4096], errors="replace", max_line_bytes=None)
    assert [text for text, *_ in lines] == texts


def test_slice_end_looks_for_a_cr_only_before_the_end_it_is_given() -> None:
    """A slice that ends before its first code unit is whole holds no \r: ``slice_end``
    gives its end back (a negative end to ``rfind`` would count from the end of the
    data and find a \r after the slice)."""
    e = engine("utf-16-le", errors="replace")
    data = "abc\rd".encode("utf-16-le")
    assert e.slice_end(data, 0, 1) == 1


#: Reads and slices of a few bytes, so a short file has many of each.
SMALL_SLICES = ReadPolicy(read_size=256, cached_read_size=200, feed_size=38)


def follow_all(path: Path, accelerated: bool, **options: Any) -> dict[str, Any]:
    """Each line a follower hands out (text, offset, terminated), the checkpoint after
    each, and the checkpoint at the end; read in ``SMALL_SLICES``."""
    got: dict[str, Any] = {"lines": [], "checkpoints": []}

    async def run() -> None:
        reading = SMALL_SLICES
        async with follow(
            path, start="beginning", until_eof=True, reading=reading, **options
        ) as lines:
            async for line in lines:
                got["lines"].append((line.text, line.offset, line.terminated))
                got["checkpoints"].append(lines.checkpoint().offset)
            got["end"] = lines.checkpoint()

    with _accel.use_accelerator(accelerated):
        anyio.run(run)
    return got


@needs_c
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-16"])
@pytest.mark.parametrize("newline", [None, "\n"])
@pytest.mark.parametrize("on_overlong", ["split", "truncate", "skip"])
@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(parts=st.lists(st.sampled_from(UNITS), max_size=60), odd=st.booleans())
def test_the_follower_hands_out_the_same_in_c_and_in_python(
    tmp_path: Path,
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
    assert follow_all(path, True, **options) == follow_all(path, False, **options)


@pytest.mark.usefixtures("implementation")
def test_the_follower_reads_utf16_lines(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    lines = [f"line {k} \xe9\u20ac\U0001f600" for k in range(200)]
    path.write_bytes("".join(f"{line}\r\n" for line in lines).encode("utf-16-le"))
    got = follow_all(path, _accel.accelerated(), encoding="utf-16-le")
    assert [text for text, _, _ in got["lines"]] == lines
