"""The line engine over every kind of encoding, against ``bytes.decode`` and ``re.split``."""

from __future__ import annotations

import codecs
import re

import pytest
from _helpers import examples, run_engine
from hypothesis import example, given, settings
from hypothesis import strategies as st

from utf8stream import LineSplitter, LineTooLong, Utf8Decoder
from utf8stream.accel import use_accelerator
from utf8stream.boundaries import cut_at_boundary
from utf8stream.core.linecodec import ByteLine
from utf8stream.lines import (
    CodecLineDecoder,
    LineBatch,
    LineDecoder,
    LineEngine,
    Utf8LineDecoder,
    line_decoder,
)

ENCODINGS = [
    "utf-8",
    "utf-8-sig",
    "utf-16-le",
    "utf-16-be",
    "utf-16",
    "utf-32",
    "utf-32-be",
    "cp1252",
    "shift_jis",
    "gb18030",
    "euc-jp",
]
NEWLINES = [None, "\n", "\r", "\r\n"]
_UNIVERSAL = re.compile("\r\n|\r|\n")
# Characters of every width, newlines, and characters other readers count as line breaks.
ALPHABET = "ab é€あ漢字😀\r\n\x0b\x0c\x1c\x85\u2028"


def _fixed(encoding: str) -> str:
    """The codec with the byte order ``encoding`` writes (no byte-order mark)."""
    name = codecs.lookup(encoding).name
    return {"utf-16": "utf-16-le", "utf-32": "utf-32-le", "utf-8-sig": "utf-8"}.get(name, name)


def _encodable(text: str, encoding: str) -> str:
    return "".join(c for c in text if c.encode(encoding, "replace") != b"?" or c == "?")


def _oracle(text: str, encoding: str, newline: str | None) -> list[ByteLine]:
    """The lines of ``text.encode(encoding)`` as the engine must give them (a byte-order
    mark is part of the first line's bytes: lines tile the input)."""
    fixed = _fixed(encoding)
    parts = _UNIVERSAL.split(text) if newline is None else text.split(newline)
    endings = _UNIVERSAL.findall(text) if newline is None else [newline] * (len(parts) - 1)
    mark = len(text.encode(encoding)) - len(text.encode(fixed))
    offset = 0
    lines = []
    for k, part in enumerate(parts):
        ending = endings[k] if k < len(endings) else ""
        if not part and not ending:
            break  # nothing after the last newline
        end = offset + len((part + ending).encode(fixed)) + (mark if k == 0 else 0)
        lines.append(ByteLine(part, offset, end, bool(ending)))
        offset = end
    return lines


def _engine(encoding: str, newline: str | None, **options: object) -> LineEngine:
    return LineEngine(line_decoder(encoding), newline=newline, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("newline", NEWLINES)
def test_whole_and_byte_by_byte(encoding: str, newline: str | None) -> None:
    text = _encodable("héllo\r\nwörld\rx\n\n\r\r\nあ漢\x85\u2028字😀\nlast", encoding)
    data = text.encode(encoding)
    expected = _oracle(text, encoding, newline)
    assert run_engine(_engine(encoding, newline), data, []) == expected
    assert run_engine(_engine(encoding, newline), data, list(range(len(data)))) == expected


@settings(max_examples=examples(60), deadline=None)
@given(
    encoding=st.sampled_from(ENCODINGS),
    newline=st.sampled_from(NEWLINES),
    text=st.text(alphabet=ALPHABET, max_size=40),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_random_chunkings(encoding: str, newline: str | None, text: str, cuts: list[int]) -> None:
    text = _encodable(text, encoding)
    data = text.encode(encoding)
    assert run_engine(_engine(encoding, newline), data, cuts) == _oracle(text, encoding, newline)


@settings(max_examples=examples(60), deadline=None)
@given(
    # Not the codecs that read a byte-order mark: they drop it from the first line.
    encoding=st.sampled_from([e for e in ENCODINGS if e not in ("utf-16", "utf-32", "utf-8-sig")]),
    newline=st.sampled_from(NEWLINES),
    data=st.binary(max_size=60).map(lambda b: b.replace(b"\x0b", b"\n")),
    cuts=st.lists(st.integers(0, 60), max_size=6),
)
def test_malformed_bytes_by_construction(
    encoding: str, newline: str | None, data: bytes, cuts: list[int]
) -> None:
    """Whatever the bytes: lines tile the input, end where the encoded newlines are, and
    hold the replacement-decoded bytes between them."""
    lines = run_engine(_engine(encoding, newline), data, cuts)
    assert lines == run_engine(_engine(encoding, newline), data, [])
    fixed = _fixed(encoding)
    unit = 4 if "32" in fixed else 2 if "16" in fixed else 1
    nls = ["\r\n", "\r", "\n"] if newline is None else [newline]
    position = 0
    for line in lines:
        assert line.offset == position
        raw = data[line.offset : line.end]
        ending = next((nl for nl in nls if raw.endswith(nl.encode(fixed))), "")
        if line.terminated:
            assert ending
            content = raw[: len(raw) - len(ending.encode(fixed))]
        else:
            content = raw
        assert line.text == content.decode(fixed, "replace")
        position = line.end
        if unit > 1:
            assert line.offset % unit == 0
    assert position == len(data)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
@pytest.mark.parametrize("bom", ["le", "be", None])
def test_byte_order_mark(encoding: str, bom: str | None) -> None:
    bits = encoding[-2:]
    fixed = f"utf-{bits}-{bom or 'le'}"
    marks = {
        "16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE),
        "32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE),
    }
    mark = b"" if bom is None else marks[bits][bom == "be"]
    data = mark + "one\r\ntwo\nthree".encode(fixed)
    lines = run_engine(_engine(encoding, None), data, list(range(0, len(data), 3)))
    size = 2 if bits == "16" else 4
    assert [(line.text, line.offset, line.end) for line in lines] == [
        ("one", 0, len(mark) + 5 * size),
        ("two", len(mark) + 5 * size, len(mark) + 9 * size),
        ("three", len(mark) + 9 * size, len(data)),
    ]


def test_newline_inside_a_code_unit_is_not_one() -> None:
    # U+0A0D, U+0D0A: their bytes are \r and \n, misaligned.
    text = "\u0a0d\u0d0a\u0a00x\n"
    data = text.encode("utf-16-le")
    assert run_engine(_engine("utf-16-le", None), data, [1, 3]) == _oracle(text, "utf-16-le", None)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("policy", ["split", "truncate", "skip", "raise"])
def test_overlong_policies(encoding: str, policy: str) -> None:
    fixed = _fixed(encoding)
    long = _encodable("aé漢😀" * 12, encoding)
    text = f"ok\n{long}\nafter\n"
    data = text.encode(encoding)
    limit = 26 if "32" in fixed else 13  # "after" fits, the long line does not
    base = len(data) - len(text.encode(fixed))
    start = base + len("ok\n".encode(fixed))
    end = start + len(f"{long}\n".encode(fixed))
    for cuts in ([], list(range(len(data)))):
        found: list[int] = []
        engine = _engine(
            encoding, None, max_line_bytes=limit, on_overlong=policy, on_overlong_line=found.append
        )
        items = []
        position = 0
        for cut in [*cuts, len(data)]:
            items += engine.feed(data[position:cut])
            position = cut
        items += engine.finish()
        assert found == [start]
        records: list[ByteLine] = []
        errors = []
        for item in items:
            try:
                records += engine.records([item])
            except LineTooLong as exc:
                errors.append(exc)
        texts = [r.text for r in records]
        assert texts[0] == "ok" and texts[-1] == "after"
        middle = records[1:-1]
        for r in middle:
            assert len(r.text.encode(fixed)) <= limit
            assert data[r.offset :].startswith(r.text.encode(fixed))
        if policy == "split":
            assert "".join(r.text for r in middle) == long
            assert middle[0].offset == start and middle[-1].end == end
            assert [r.terminated for r in middle] == [False] * (len(middle) - 1) + [True]
        elif policy == "truncate":
            assert len(middle) == 1 and long.startswith(middle[0].text) and middle[0].text
            assert (middle[0].offset, middle[0].end) == (start, end)
        else:
            assert middle == []
        if policy == "raise":
            assert len(errors) == 1 and long.startswith(errors[0].partial)
        assert records[-1].offset == end


def test_refuses_what_cannot_be_cut_exactly() -> None:
    for name in ["iso2022_jp", "utf-7", "hz", "unicode_escape"]:
        with pytest.raises(ValueError, match="not self-delimiting"):
            CodecLineDecoder(name)
    for name in ["base64", "rot13"]:
        with pytest.raises(ValueError, match="not a text encoding"):
            CodecLineDecoder(name)
    with pytest.raises(ValueError, match="unknown encoding"):
        line_decoder("no-such-codec")
    # A newline whose byte can be the second byte of a character.
    with pytest.raises(ValueError, match="not self-delimiting"):
        LineEngine(CodecLineDecoder("shift_jis"), newline="A")


def test_implementations_satisfy_the_interface() -> None:
    assert isinstance(CodecLineDecoder("utf-16-le"), LineDecoder)
    assert isinstance(Utf8LineDecoder(Utf8Decoder()), LineDecoder)
    assert isinstance(line_decoder("utf-8"), Utf8LineDecoder)


def test_utf8_reports_malformed_units_at_source_offsets() -> None:
    seen = []
    decoder = line_decoder("utf-8", start_offset=100, on_malformed=seen.append)
    engine = LineEngine(decoder, offset=100)
    lines = engine.records(engine.feed(b"ok\nb\xffd\n"))
    assert [(line.text, line.offset) for line in lines] == [("ok", 100), ("b\ufffdd", 103)]
    assert [event.offset for event in seen] == [104]


def test_gap_at_the_end() -> None:
    engine = _engine("utf-16-le", "\n")
    engine.feed("abc".encode("utf-16-le"))
    [line] = engine.records(engine.finish(lost=5))
    assert (line.text, line.offset, line.terminated) == ("abc\ufffd", 0, False)


def _texts(engine: LineEngine, data: bytes, cuts: list[int]) -> list[object]:
    items = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        items += engine.feed(data[start:cut])
        start = max(start, cut)
    items += engine.finish()
    out: list[object] = []
    for item in items:
        if isinstance(item, LineBatch):
            out += item.texts
        elif isinstance(item.line, LineTooLong):
            out.append(("LineTooLong", item.line.partial))
        elif item.line is not None:
            out.append(item.line)
    return out


@settings(max_examples=examples(150), deadline=None)
@given(
    encoding=st.sampled_from(["utf-8", "utf-16-le", "shift_jis"]),
    newline=st.sampled_from(NEWLINES),
    policy=st.sampled_from(["split", "truncate", "skip", "raise"]),
    pieces=st.lists(st.sampled_from(["a", "あ", "\r", "\n", "\r\n", "x" * 13]), max_size=12),
    cuts=st.lists(st.integers(0, 120), max_size=6),
)
def test_overlong_lines_whatever_the_chunking(
    encoding: str, newline: str | None, policy: str, pieces: list[str], cuts: list[int]
) -> None:
    """A read that ends inside or just after an overlong line's newline never merges
    the next line into it, and each overlong line is reported once."""
    data = "".join(pieces).encode(encoding)
    found: list[list[int]] = [[], []]
    engines = [
        LineEngine(
            line_decoder(encoding),
            newline=newline,
            max_line_bytes=8,
            on_overlong=policy,
            on_overlong_line=seen.append,
        )
        for seen in found
    ]
    assert _texts(engines[0], data, cuts) == _texts(engines[1], data, [])
    assert found[0] == found[1]


@settings(max_examples=examples(200), deadline=None)
@given(
    newline=st.sampled_from([None, "\n", "\r\n", "\0"]),
    policy=st.sampled_from(["split", "truncate", "skip", "raise"]),
    text=st.text(alphabet="ab é€😀\r\n\0", max_size=60),
    cuts=st.lists(st.integers(0, 200), max_size=6),
)
def test_the_engine_and_the_text_splitter_agree_on_valid_utf8(
    newline: str | None, policy: str, text: str, cuts: list[int]
) -> None:
    """Same lines, same LineTooLong, same overlong count: over valid UTF-8 a line's
    source bytes are its UTF-8 bytes, the text splitter's measure."""
    data = text.encode()
    splitter = LineSplitter(newline=newline, max_line_bytes=6, on_overlong=policy)
    expected: list[object] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        # The splitter is fed text: cut the bytes back to a character boundary.
        end = cut_at_boundary(data, max(start, cut))
        expected += splitter.feed(data[start:end].decode())
        start = end
    expected += splitter.flush()
    normal = [("LineTooLong", x.partial) if isinstance(x, LineTooLong) else x for x in expected]
    found: list[int] = []
    engine = LineEngine(
        line_decoder("utf-8"),
        newline=newline,
        max_line_bytes=6,
        on_overlong=policy,
        on_overlong_line=found.append,
    )
    assert _texts(engine, data, cuts) == normal
    assert len(found) == splitter.overlong_lines


def test_a_split_line_ended_by_the_fast_path_is_reported_once() -> None:
    found: list[int] = []
    engine = LineEngine(
        line_decoder("utf-8"), max_line_bytes=6, on_overlong="split", on_overlong_line=found.append
    )
    data = "éé€\r€😀".encode()
    _texts(engine, data, [7])  # the first line's end comes with the next read
    assert found == [0, 8]


@pytest.mark.parametrize("policy", ["split", "truncate", "skip", "raise"])
def test_held_newline_start_that_makes_the_last_line_overlong(policy: str) -> None:
    # "\r" may begin "\r\n", so it is held; at the end it is content, and the line has
    # seven bytes: more than the limit.
    engine = LineEngine(
        line_decoder("utf-8"), newline="\r\n", max_line_bytes=6, on_overlong=policy
    )
    expected = {
        "split": ["aaaaé", "\r"],
        "truncate": ["aaaaé"],
        "skip": [],
        "raise": [("LineTooLong", "aaaaé")],
    }[policy]
    assert _texts(engine, "aaaaé\r".encode(), []) == expected


@settings(max_examples=examples(60), deadline=None)
@given(
    newline=st.sampled_from(NEWLINES),
    data=st.binary(max_size=60).map(lambda b: b.replace(b"\x0b", b"\n")),
    cuts=st.lists(st.integers(0, 63), max_size=6),
)
def test_utf8_sig_decodes_malformed_bytes_after_its_mark_as_utf8(
    newline: str | None, data: bytes, cuts: list[int]
) -> None:
    """After the mark, any bytes: each line holds CPython's replacement-decoded bytes of
    its content, the mark dropped from the first."""
    marked = codecs.BOM_UTF8 + data
    lines = run_engine(_engine("utf-8-sig", newline), marked, cuts)
    nls = ["\r\n", "\r", "\n"] if newline is None else [newline]
    position = 0
    for line in lines:
        assert line.offset == position
        raw = marked[max(line.offset, 3) : line.end]
        ending = next((nl for nl in nls if line.terminated and raw.endswith(nl.encode())), "")
        assert line.terminated == bool(ending)
        assert line.text == raw[: len(raw) - len(ending.encode())].decode("utf-8", "replace")
        position = line.end
    assert position == (len(marked) if data else 0)  # a mark alone is no line


def test_utf8_sig_drops_only_the_leading_mark() -> None:
    data = "\ufeffa\n\ufeffb\n".encode()
    lines = run_engine(_engine("utf-8-sig", None), data, list(range(len(data))))
    assert [(line.text, line.offset, line.end) for line in lines] == [
        ("a", 0, 5),
        ("\ufeffb", 5, 10),
    ]


def test_a_piece_does_not_end_just_after_a_truncated_sequence() -> None:
    # F0 9F 98 is malformed only when "a" follows: a piece ending after it would have
    # offsets 0..5 and the text "aa" (its U+FFFD went to the next piece, or was lost
    # with the skipped rest under "truncate").
    data = b"aa\xf0\x9f\x98a\n"
    split = LineEngine(line_decoder("utf-8"), max_line_bytes=5, on_overlong="split")
    pieces = list(split.records(split.feed(data) + split.finish()))
    assert [(p.text, p.offset, p.end) for p in pieces] == [("aa", 0, 2), ("\ufffda", 2, 7)]
    truncate = LineEngine(line_decoder("utf-8"), max_line_bytes=5, on_overlong="truncate")
    assert [line.text for line in truncate.records(truncate.feed(data))] == ["aa"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le"])
def test_an_engine_without_each_offset_gives_the_same_lines(encoding: str) -> None:
    data = "one\ntwo\r\nthree\nfour".encode(encoding)
    with_offsets = LineEngine(line_decoder(encoding))
    without = LineEngine(line_decoder(encoding), each_offset=False)
    items, lean = with_offsets.feed(data), without.feed(data)
    texts = [t for item in items if isinstance(item, LineBatch) for t in item.texts]
    assert texts == ["one", "two", "three"]
    assert [t for item in lean if isinstance(item, LineBatch) for t in item.texts] == texts
    ends = [item.offsets[-1] for item in items if isinstance(item, LineBatch)]
    assert [item.offsets for item in lean if isinstance(item, LineBatch)] == [[e] for e in ends]
    with pytest.raises(ValueError, match="each_offset"):
        list(without.records(lean))


@settings(max_examples=examples(150), deadline=None)
@given(
    encoding=st.sampled_from(["utf-8-sig", "utf-16", "utf-32"]),
    newline=st.sampled_from(NEWLINES),
    text=st.text(alphabet="a\r\n€😀", max_size=3),
    cuts=st.lists(st.integers(0, 12), max_size=4),
)
def test_input_without_a_mark_as_short_as_one(
    encoding: str, newline: str | None, text: str, cuts: list[int]
) -> None:
    """An encoding that reads a byte-order mark gets input with none, as short as a mark
    or shorter: its lines are cut like any others (a newline there was one line with the
    text after it, and a lone ``\\r`` the size of a mark was taken for a mark)."""
    fixed = _fixed(encoding)
    data = text.encode(fixed)
    assert run_engine(_engine(encoding, newline), data, cuts) == _oracle(text, fixed, newline)


@pytest.mark.parametrize(
    ("encoding", "data", "expected"),
    [
        ("utf-8-sig", b"\n\xff", [ByteLine("", 0, 1), ByteLine("\ufffd", 1, 2, False)]),
        ("utf-8-sig", b"a\n", [ByteLine("a", 0, 2)]),
        ("utf-8-sig", b"\r", [ByteLine("", 0, 1)]),
        ("utf-16", b"\r\x00", [ByteLine("", 0, 2)]),
        ("utf-32", b"\r\x00\x00\x00", [ByteLine("", 0, 4)]),
        ("utf-16", b"\xff\xfe", []),  # a mark alone is no line
        ("utf-8-sig", b"\xef\xbb\xbf", []),
    ],
)
def test_short_inputs_of_mark_reading_encodings(
    encoding: str, data: bytes, expected: list[ByteLine]
) -> None:
    assert run_engine(_engine(encoding, None), data, []) == expected


@settings(max_examples=examples(60), deadline=None)
@given(
    encoding=st.sampled_from(ENCODINGS),
    newline=st.sampled_from(NEWLINES),
    text=st.text(alphabet=ALPHABET, max_size=40),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_packed_offsets_give_the_same_lines(
    encoding: str, newline: str | None, text: str, cuts: list[int]
) -> None:
    """``packed_offsets=True`` (the follower's engine): the same lines and offsets; the
    offsets of a batch are a Sequence[int] (packed int64 where the accelerator cut)."""
    text = _encodable(text, encoding)
    data = text.encode(encoding)
    engine = _engine(encoding, newline, packed_offsets=True)
    assert run_engine(engine, data, cuts) == _oracle(text, encoding, newline)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le"])
def test_packed_offsets_of_a_batch(encoding: str) -> None:
    data = "one\ntwo\nthree\n".encode(encoding)
    unit = len("\n".encode(encoding))
    listed = LineEngine(line_decoder(encoding)).feed(data)
    packed = LineEngine(line_decoder(encoding), packed_offsets=True).feed(data)
    assert len(listed) == len(packed) == 1
    assert isinstance(listed[0], LineBatch) and isinstance(packed[0], LineBatch)
    assert listed[0].offsets == [0, 4 * unit, 8 * unit, 14 * unit]
    assert list(packed[0].offsets) == listed[0].offsets
    assert packed[0].texts == listed[0].texts == ["one", "two", "three"]


@pytest.mark.parametrize(
    ("encoding", "newline", "fed", "data", "start", "end", "expected"),
    [
        # Just past the last newline in data[start:end] (not one at or after end).
        ("utf-8", None, b"", b"ab\ncd\nef\ngh", 0, 8, 6),
        ("utf-8", None, b"", b"ab\ncd\nef\ngh", 3, 11, 9),
        ("utf-8", "\n", b"", b"ab\ncd\nef\ngh", 0, 2, 2),  # none: the end asked for
        ("utf-8", "\r\n", b"", b"a\r\nb\nc\r\nd", 0, 9, 8),  # the fixed newline's
        # UTF-16LE: a newline at a code unit, counted from the line's start; after an
        # odd byte fed, the units of the rest start one byte later.
        ("utf-16-le", None, b"", "a\u0a00\nb".encode("utf-16-le"), 0, 8, 6),
        ("utf-16-le", None, b"x", "\u0a00\nb".encode("utf-16-le")[1:], 0, 5, 3),
        ("utf-16-le", None, b"", "\u0a00\u0100".encode("utf-16-le"), 0, 4, 4),  # 0A 00 odd
        # Universal newlines: a \r after the last \n ends a line if a unit follows it
        # before end (not a \n, or that \n would be the one found): the slice ends past
        # that unit, so the engine knows the \r is not the start of a \r\n.
        ("utf-8", None, b"", b"ab\ncd\ref\rgh", 0, 11, 10),
        ("utf-8", None, b"", b"ab\ncd\ref\r", 0, 9, 7),  # the \r at the end: \r\n?
        ("utf-8", None, b"", b"ab\rcd\r\nef", 0, 6, 4),  # \r\n cut at end: not after it
        ("utf-8", None, b"", b"ab\rcd\r\nef", 0, 7, 7),
        ("utf-8", "\n", b"", b"ab\ncd\ref\rgh", 0, 11, 3),  # a fixed newline: \n only
        ("utf-16-le", None, b"", "a\nb\rcd".encode("utf-16-le"), 0, 12, 10),
        ("utf-16-le", None, b"", "\u0d00\u0100x".encode("utf-16-le"), 0, 6, 6),  # 0D 00 odd
        ("utf-16-le", None, b"x", "\rb".encode("utf-16-le")[1:], 0, 3, 3),
    ],
)
def test_slice_end(
    encoding: str,
    newline: str | None,
    fed: bytes,
    data: bytes,
    start: int,
    end: int,
    expected: int,
) -> None:
    """Where the follower ends a slice of a long read: after a newline, so the engine
    holds nothing to join to the next slice."""
    engine = LineEngine(line_decoder(encoding), newline=newline)
    engine.feed(fed)
    assert engine.slice_end(data, start, end) == expected


@pytest.mark.usefixtures("implementation")
@settings(max_examples=examples(60), deadline=None)
@given(
    encoding=st.sampled_from(ENCODINGS),
    newline=st.sampled_from(NEWLINES),
    text=st.text(alphabet=ALPHABET, max_size=40),
    cuts=st.lists(st.integers(0, 200), max_size=8),
    max_line_bytes=st.sampled_from([None, 6]),
)
def test_memoryview_slices_give_the_same_lines(
    encoding: str, newline: str | None, text: str, cuts: list[int], max_line_bytes: int | None
) -> None:
    """The follower feeds views of its reads (no copy): the same lines as bytes give,
    whatever the path (the fast one reads the view where it lies, the others copy it)."""
    text = _encodable(text, encoding)
    data = text.encode(encoding)
    options = {"max_line_bytes": max_line_bytes, "on_overlong": "split"}
    expected = run_engine(_engine(encoding, newline, **options), data, cuts)
    engine = _engine(encoding, newline, packed_offsets=True, **options)
    view = memoryview(data)
    lines: list[ByteLine] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        lines += engine.records(engine.feed(view[start:cut]))
        start = max(start, cut)
    assert [*lines, *engine.records(engine.finish())] == expected
    assert not isinstance(engine.partial, memoryview)


@pytest.mark.usefixtures("implementation")
def test_the_scanner_reads_a_memoryview_where_it_lies() -> None:
    decoder = Utf8Decoder()
    scanner = decoder._scanner
    data = b"ab\n\xc3\xa9\xff\ncd"
    expected = scanner.lines(b"", data, 0, -1, 100)
    assert scanner.lines(b"", memoryview(data), 0, -1, 100) == expected
    assert scanner.lines(b"x", memoryview(data), 0, -1, 100) == scanner.lines(
        b"x", data, 0, -1, 100
    )
    view = memoryview(bytearray(data))
    assert scanner.lines(b"", view, 0, -1, 100) == expected


@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "cp1252"])
@pytest.mark.parametrize("start", [2**62 - 3, 2**63 - 2, 2**63 + 5, 2**80])
def test_offsets_past_64_bits_in_every_encoding(encoding: str, start: int) -> None:
    """Both implementations take any offset in every encoding, as the UTF-8 decoder does
    (the C cutters count in 64-bit integers: past them the engine cuts in Python)."""
    texts = ["ab", "cd", "é", "last"]
    data = "ab\ncd\r\né\nlast".encode(encoding)
    width = len("\n".encode(encoding))  # bytes per code unit (é is one in each)
    engine = LineEngine(line_decoder(encoding, start_offset=start), offset=start)
    lines = [*engine.records(engine.feed(data)), *engine.records(engine.finish())]
    assert [line.text for line in lines] == texts
    widths = [len(t.encode(encoding)) for t in ["ab\n", "cd\r\n", "é\n", "last"]]
    starts = [start + sum(widths[:k]) for k in range(4)]
    # A line's end is just past its newline (docs/layout.md's UTF-16LE example: 0 14 héllo).
    assert [(line.offset, line.end) for line in lines] == [
        (s, s + w) for s, w in zip(starts, widths, strict=True)
    ]
    assert widths[0] == 3 * width
    assert engine.position == start + len(data)


def test_an_engine_and_its_utf8_decoder_must_start_at_the_same_offset() -> None:
    """Their offsets would disagree and lines would come out twice: refused."""
    with pytest.raises(ValueError, match="start_offset=5"):
        LineEngine(line_decoder("utf-8"), offset=5)
    engine = LineEngine(line_decoder("utf-8", start_offset=5), offset=5)
    assert [line.offset for line in engine.records(engine.feed(b"a\nb\n"))] == [5, 7]


def _joined(lines: list[ByteLine]) -> list[ByteLine]:
    """Pieces (unterminated records followed by more) joined into the lines they are."""
    out: list[ByteLine] = []
    for line in lines:
        if out and not out[-1].terminated:
            assert out[-1].end == line.offset  # pieces tile the line
            head = out.pop()
            line = ByteLine(head.text + line.text, head.offset, line.end, line.terminated)
        out.append(line)
    return out


@settings(max_examples=examples(80), deadline=None)
@given(
    encoding=st.sampled_from(ENCODINGS),
    newline=st.sampled_from(NEWLINES),
    text=st.text(alphabet=ALPHABET, max_size=40),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_unfinished_lines_cut_after_every_chunk_join_into_the_lines(
    encoding: str, newline: str | None, text: str, cuts: list[int]
) -> None:
    text = _encodable(text, encoding)
    data = text.encode(encoding)
    engine = _engine(encoding, newline)
    lines: list[ByteLine] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        lines += engine.records(engine.feed(data[start:cut]))
        pieces = list(engine.records(engine.cut_unfinished()))
        for piece in pieces:
            # A piece is text of its own bytes: no character or newline cut in two.
            assert not piece.terminated
            codec = encoding if piece.offset == 0 else _fixed(encoding)  # a mark first
            assert data[piece.offset : piece.end].decode(codec) == piece.text
        lines += pieces
        start = max(start, cut)
    lines += engine.records(engine.finish())
    assert _joined(lines) == _oracle(text, encoding, newline)


def test_what_may_begin_a_newline_or_a_character_stays_held() -> None:
    engine = _engine("utf-8", None)
    assert engine.feed(b"caf\xc3") == []
    assert list(engine.records(engine.cut_unfinished())) == [ByteLine("caf", 0, 3, False)]
    assert engine.feed(b"\xa9\r") == []
    assert list(engine.records(engine.cut_unfinished())) == [ByteLine("é", 3, 5, False)]
    assert engine.cut_unfinished() == []  # the \r may be the first half of \r\n
    assert list(engine.records(engine.feed(b"\nx"))) == [ByteLine("", 5, 7)]


#: Code units that hold a newline's bytes at an offset that is not a unit's (0A 0D, 0A 00,
#: 0D 0A...), with the newlines themselves.
UNIT_ALPHABET = "ab\r\n\r\né\u0a0d\u0d0a\u0a00\u0d00\u0a0a\u2028"


def _both_implementations(
    encoding: str, newline: str | None, data: bytes, cuts: list[int], **options: object
) -> list[list[ByteLine]]:
    """The lines of ``data`` cut with the accelerator's line cut and with its pure twin."""
    out = []
    for accelerated in (True, False):
        try:
            with use_accelerator(accelerated):
                out.append(run_engine(_engine(encoding, newline, **options), data, cuts))
        except RuntimeError:
            pytest.skip("the C accelerator is not built here (pure-Python install)")
    return out


@settings(max_examples=examples(150), deadline=None)
@given(
    encoding=st.sampled_from(["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "latin-1"]),
    newline=st.sampled_from([None, "\n", "\r", "\u2028"]),
    text=st.text(alphabet=UNIT_ALPHABET, max_size=40),
    odd=st.binary(max_size=3),
    cuts=st.lists(st.integers(0, 170), max_size=8),
    max_line_bytes=st.sampled_from([None, 8, 20]),
)
@example("utf-16-le", "\n", "\u0a00\u0a00\r\nab\n", b"", [], None)  # 0A 00 at an odd offset
@example("utf-16-be", None, "\u0a00\u0a00\u0d0a\u0a0d\n", b"\x00", [3, 5], None)
@example("utf-32-le", None, "a\u0a00\u0a00\u0d00\r\n", b"\n", [20], 8)
def test_code_unit_lines_are_cut_alike_in_c_and_in_python(
    encoding: str,
    newline: str | None,
    text: str,
    odd: bytes,
    cuts: list[int],
    max_line_bytes: int | None,
) -> None:
    """Lines of one character per code unit, in either byte order, a ``\\r\\n`` cut
    anywhere between pieces, and a torn unit at the end: the same lines, offsets and
    pieces from the C cut (newline units searched in the bytes) and its pure twin, the
    oracle's where the bytes are whole code units."""
    if encoding == "latin-1":
        text = text.encode("latin-1", "replace").decode("latin-1")
        newline = "\x85" if newline == "\u2028" else newline
    data = text.encode(encoding) + odd
    options = {"max_line_bytes": max_line_bytes, "on_overlong": "split"}
    accelerated, pure = _both_implementations(encoding, newline, data, cuts, **options)
    assert accelerated == pure
    if not odd and max_line_bytes is None:
        assert accelerated == _oracle(text, encoding, newline)
