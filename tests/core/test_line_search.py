"""Finding lines fast: the line engine's newline search (``bytes.find``), its
one-character-per-code-unit path for UTF-16/32 and single-byte codecs, and the backward
scan for the last N lines (``tail -n``), against references that walk the code units
one by one, over random bytes, random chunkings and small read blocks."""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from _helpers import examples, run_engine
from hypothesis import example, given, settings
from hypothesis import strategies as st

from utf8stream import LineTooLong
from utf8stream.core import linesearch
from utf8stream.core.lastlines import start_of_last_lines
from utf8stream.core.linecodec import ByteLine, LineDecoder
from utf8stream.lines import CodecLineDecoder, LineEngine, line_decoder

#: Encodings with a fixed byte order (no byte-order mark), and their code-unit size.
UNITS = {
    "utf-8": 1,
    "cp1252": 1,
    "latin-1": 1,
    "shift_jis": 1,
    "utf-16-le": 2,
    "utf-16-be": 2,
    "utf-32-le": 4,
    "utf-32-be": 4,
}
NEWLINES = [None, "\n", "\r\n", "\r"]
ERRORS = ["replace", "ignore", "backslashreplace", "surrogateescape"]
# Characters of every width (a surrogate pair in UTF-16), newlines, and characters
# other readers count as line breaks.
ALPHABET = "ab é€あ😀\r\n\x0b\x85\u2028"


def _units_of(encoding: str) -> list[bytes]:
    """Code units to build malformed input from: lone surrogates, a code point past
    U+10FFFF, bytes invalid in UTF-8 or undefined in cp1252, a lone lead byte."""
    unit = UNITS[encoding]
    if unit == 2:
        order = "little" if encoding.endswith("le") else "big"
        return [x.to_bytes(2, order) for x in (0xD800, 0xDC00, 0xDBFF)]
    if unit == 4:
        order = "little" if encoding.endswith("le") else "big"
        return [x.to_bytes(4, order) for x in (0xD800, 0x110000)]
    return [b"\xff", b"\x81", b"\xc3", b"\xe3\x81"]


@st.composite
def _input(draw: st.DrawFn, encoding: str) -> bytes:
    """Encoded text with malformed units and stray bytes (an odd byte in UTF-16) mixed in."""
    pieces = draw(
        st.lists(
            st.one_of(
                st.text(alphabet=ALPHABET, max_size=6),
                st.sampled_from(_units_of(encoding)),
                st.binary(min_size=1, max_size=1),
            ),
            max_size=10,
        )
    )
    return b"".join(p.encode(encoding, "replace") if isinstance(p, str) else p for p in pieces)


def _reference(data: bytes, encoding: str, newline: str | None, errors: str) -> list[ByteLine]:
    """The lines, walking the code units one at a time: a newline is a whole code unit
    (or units) at a multiple of the unit size; each line's content decoded on its own."""
    unit = UNITS[encoding]
    lf, cr = "\n".encode(encoding), "\r".encode(encoding)
    lines = []
    start = at = 0
    while at + unit <= len(data):
        if newline is not None:
            nl = newline.encode(encoding)
            end = at + len(nl) if data.startswith(nl, at) else -1
        elif data.startswith(lf, at):
            end = at + unit
        elif data.startswith(cr, at):
            end = at + unit + (unit if data.startswith(lf, at + unit) else 0)
        else:
            end = -1
        if end < 0:
            at += unit
            continue
        lines.append(ByteLine(data[start:at].decode(encoding, errors), start, end))
        start = at = end
    if start < len(data):
        lines.append(ByteLine(data[start:].decode(encoding, errors), start, len(data), False))
    return lines


class _WithoutUnits:
    """A decoder as it is, but without ``decode_units``: the engine searches the bytes."""

    def __init__(self, inner: LineDecoder) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        if name == "decode_units":
            raise AttributeError(name)
        return getattr(self._inner, name)


def _texts(engine: LineEngine, data: bytes, cuts: list[int]) -> list[object]:
    items = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        items += engine.feed(data[start:cut])
        start = max(start, cut)
    items += engine.finish()
    out: list[object] = []
    for item in items:
        try:
            out += [(r.text, r.offset, r.end, r.terminated) for r in engine.records([item])]
        except LineTooLong as exc:
            out.append(("LineTooLong", exc.partial))
    return out


@settings(max_examples=examples(300), deadline=None)
@given(
    case=st.sampled_from(sorted(UNITS)).flatmap(
        lambda encoding: st.tuples(
            st.just(encoding),
            _input(encoding),
            st.sampled_from(NEWLINES),
            # Python's surrogateescape cannot escape the bytes below 0x80 of a
            # malformed UTF-16/32 unit: it raises, the reference as well.
            st.sampled_from(ERRORS if UNITS[encoding] == 1 else ERRORS[:3]),
            st.lists(st.integers(0, 120), max_size=8),
        )
    )
)
def test_lines_against_unit_by_unit_reference(
    case: tuple[str, bytes, str | None, str, list[int]],
) -> None:
    """Every chunking (a CRLF or a code unit split across reads included), malformed
    units, surrogate pairs, every error policy: the lines and offsets the reference has."""
    encoding, data, newline, errors, cuts = case
    engine = LineEngine(line_decoder(encoding, errors), newline=newline, max_line_bytes=None)
    assert run_engine(engine, data, cuts) == _reference(data, encoding, newline, errors)


@pytest.mark.parametrize("encoding", ["utf-8", "shift_jis", "utf-16-le", "utf-32-be", "cp1252"])
@pytest.mark.parametrize("newline", [None, "\n", "\r\n"])
@pytest.mark.parametrize(
    "text", ["first\r\nsecond\r\n\r\nthird\rfourth\n" * 3, "one\r\ntwo\r\n\r\nthree"]
)
def test_crlf_split_at_every_byte(encoding: str, newline: str | None, text: str) -> None:
    data = text.encode(encoding)
    expected = _reference(data, encoding, newline, "replace")
    for cut in range(len(data) + 1):
        engine = LineEngine(line_decoder(encoding), newline=newline)
        assert run_engine(engine, data, [cut]) == expected, cut
    engine = LineEngine(line_decoder(encoding), newline=newline)
    assert run_engine(engine, data, list(range(len(data)))) == expected
    # Keeping the newlines, UTF-8 too is cut by the search in Python, not by the scanner.
    for cuts in ([], [len(data) // 3], list(range(len(data)))):
        engine = LineEngine(line_decoder(encoding), newline=newline, keepends=True)
        kept = run_engine(engine, data, cuts)
        assert [(r.offset, r.end) for r in kept] == [(r.offset, r.end) for r in expected]
        assert [r.text for r in kept] == [data[r.offset : r.end].decode(encoding) for r in kept]


@settings(max_examples=examples(200), deadline=None)
@given(
    case=st.sampled_from(["utf-16-le", "utf-16-be", "utf-32-le", "cp1252"]).flatmap(
        lambda encoding: st.tuples(
            st.just(encoding),
            _input(encoding),
            st.sampled_from(NEWLINES),
            st.sampled_from(["split", "truncate", "skip", "raise"]),
            st.booleans(),
            st.lists(st.integers(0, 120), max_size=6),
        )
    )
)
def test_overlong_lines_with_and_without_the_units_path(
    case: tuple[str, bytes, str | None, str, bool, list[int]],
) -> None:
    """Over a limit of a few units, whatever the chunking: the same lines, pieces,
    errors and overlong reports as the byte search alone gives."""
    encoding, data, newline, policy, keepends, cuts = case
    limit = 4 * UNITS[encoding]
    found: list[list[int]] = [[], []]
    engines = [
        LineEngine(
            decoder,
            newline=newline,
            keepends=keepends,
            max_line_bytes=limit,
            on_overlong=policy,
            on_overlong_line=seen.append,
        )
        for decoder, seen in (
            (line_decoder(encoding), found[0]),
            (_WithoutUnits(line_decoder(encoding)), found[1]),
        )
    ]
    assert _texts(engines[0], data, cuts) == _texts(engines[1], data, [])
    assert found[0] == found[1]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-32-le"])
def test_keepends_and_no_offsets_on_the_units_path(encoding: str) -> None:
    # CRLF only (split as "\r\n"), then mixed newlines (the regular-expression split).
    data = "one\r\ntwo\r\n".encode(encoding) + "three\nfour\rfive".encode(encoding)
    engine = LineEngine(line_decoder(encoding), keepends=True)
    assert [(r.text, r.offset) for r in run_engine(engine, data, [len(data) // 2])] == [
        (text, offset * UNITS[encoding])
        for text, offset in [("one\r\n", 0), ("two\r\n", 5), ("three\n", 10), ("four\r", 16)]
    ] + [("five", 21 * UNITS[encoding])]
    lean = LineEngine(line_decoder(encoding), each_offset=False)
    middle = 10 * UNITS[encoding]
    batches = lean.feed(data[:middle]) + lean.feed(data[middle:])
    assert [(b.texts, b.offsets) for b in batches] == [
        (["one", "two"], [10 * UNITS[encoding]]),
        (["three", "four"], [21 * UNITS[encoding]]),
    ]


def test_decode_units_only_where_a_unit_is_a_character() -> None:
    wide = CodecLineDecoder("utf-16-le")
    assert wide.decode_units("aé€\n".encode("utf-16-le")) == "aé€\n"
    assert wide.decode_units("😀\n".encode("utf-16-le")) is None  # a surrogate pair
    assert wide.decode_units(b"\x00\xd8\n\x00") == "\ufffd\n"  # a lone surrogate: one unit
    # The decoder's state is untouched: it still decodes from where it was.
    assert wide.decode("x".encode("utf-16-le")) == "x"
    wide.decode(b"a")  # half a code unit held
    assert wide.decode_units("b\n".encode("utf-16-le")) is None
    wide.mark_gap()
    assert wide.decode_units("b\n".encode("utf-16-le")) is None  # the next text has U+FFFD
    # A policy that makes several characters of one unit cannot tell by the length.
    assert CodecLineDecoder("utf-16-le", "backslashreplace").decode_units(b"a\x00") is None
    assert CodecLineDecoder("cp1252").decode_units(b"\x81a\n") == "\ufffda\n"
    assert CodecLineDecoder("shift_jis").decode_units(b"a\n") is None  # multi-byte
    bom = CodecLineDecoder("utf-16")
    assert bom.decode_units(b"a\x00") is None  # the byte order is not known yet
    bom.begin(codecs.BOM_UTF16_BE + "a".encode("utf-16-be"))
    assert bom.decode_units("a\n".encode("utf-16-be")) is None  # the mark is still ahead
    bom.decode(codecs.BOM_UTF16_BE)
    assert bom.decode_units("a\n".encode("utf-16-be")) == "a\n"


@pytest.mark.parametrize("on_overlong", ["raise", "split"])
@pytest.mark.parametrize("newline", [None, "\n", "\r\n"])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "cp1252"])
def test_a_long_line_is_searched_once(
    monkeypatch: pytest.MonkeyPatch, newline: str | None, encoding: str, on_overlong: str
) -> None:
    """Each read is searched for newlines, not the unfinished line held from before
    (with a 1 MiB limit, that was up to 1 MiB searched again per read)."""
    searched = 0
    ends, last = linesearch.line_ends, linesearch.last_unit

    def count_ends(
        buf: bytes,
        newline: bytes | tuple[bytes, bytes],
        unit: int,
        start: int = 0,
        hold_cr: bool = True,
    ) -> list[tuple[int, int]]:
        nonlocal searched
        searched += len(buf) - start
        return ends(buf, newline, unit, start, hold_cr)

    def count_last(buf: bytes, sub: bytes, start: int, end: int, unit: int, shift: int = 0) -> int:
        nonlocal searched
        searched += end - start
        return last(buf, sub, start, end, unit, shift)

    monkeypatch.setattr(linesearch, "line_ends", count_ends)
    monkeypatch.setattr(linesearch, "last_unit", count_last)
    engine = LineEngine(
        line_decoder(encoding), newline=newline, max_line_bytes=1 << 20, on_overlong=on_overlong
    )
    chunk = ("a" * 4096).encode(encoding)
    fed = 0
    for _ in range(300):
        engine.feed(chunk)
        fed += len(chunk)
    for end in ("\r", "\n"):  # a CRLF split across reads
        engine.feed(end.encode(encoding))
    lines = list(engine.records(engine.feed(chunk) + engine.finish()))
    assert lines[-1].text == "a" * 4096
    # Each byte at most once by each of the searches (the last line end, then all); a
    # split piece (the line is longer than the limit) is cut from what was searched
    # already, so at most the one piece is searched again.
    assert searched <= 3 * fed + (1 << 20 if on_overlong == "split" else 0)


def reader(fd: int) -> Callable[[int, int], bytes]:
    return lambda offset, n: os.pread(fd, n, offset)


@settings(max_examples=examples(300), deadline=None)
@given(
    encoding=st.sampled_from(["utf-8", "utf-16-le", "utf-16-be", "utf-32-le"]),
    newline=st.sampled_from(NEWLINES),
    text=st.text(alphabet="ab€😀\r\n", max_size=60),
    count=st.integers(0, 8),
    block=st.sampled_from([4, 8, 12, 16, 64, 1 << 16]),
)
# A newline of two code units cut by a block edge: a block keeps the newlines that end
# past it, or the next one would see only "\n".
@example(encoding="utf-32-le", newline="\r\n", text="\r\n", count=0, block=4)
@example(encoding="utf-8", newline="\r\n", text="ab\r\nab", count=1, block=4)
def test_start_of_the_last_lines(
    encoding: str, newline: str | None, text: str, count: int, block: int
) -> None:
    """``tail -n COUNT`` starts where the reference's last COUNT lines do (COUNT 0: after
    the last newline), whatever the size of the blocks read backwards."""
    data = text.encode(encoding)
    lines = _reference(data, encoding, newline, "replace")
    if count == 0:
        expected = 0 if not lines else lines[-1].end if lines[-1].terminated else lines[-1].offset
    else:
        expected = lines[-count].offset if count <= len(lines) else 0
    engine = LineEngine(line_decoder(encoding), newline=newline)
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        found = start_of_last_lines(reader(f.fileno()), len(data), count, engine, block=block)
    assert found == expected
    # The same search over bytes in memory (the window standard input keeps).
    in_memory = start_of_last_lines(
        lambda offset, n: data[offset : offset + n], len(data), count, engine, block=block
    )
    assert in_memory == expected


def test_start_of_the_last_lines_of_a_long_line_reads_growing_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = b"x\n" + b"a" * (20 << 20) + b"\n"
    reads: list[int] = []
    engine = LineEngine(line_decoder("utf-8"))
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        pread = os.pread

        def counted(fd: int, size: int, offset: int) -> bytes:
            reads.append(size)
            return pread(fd, size, offset)

        monkeypatch.setattr(os, "pread", counted)
        assert start_of_last_lines(reader(f.fileno()), len(data), 1, engine) == 2
    assert len(reads) < 12 and max(reads) <= (8 << 20) + 2


@pytest.mark.parametrize("newline", [None, "\r\n"])
def test_a_crlf_cut_by_the_first_block_edge_still_ends_a_line(newline: str | None) -> None:
    # The last 64 KiB block starts between the "\r" and the "\n".
    data = b"x\r\n" + b"a" * ((1 << 16) - 1)
    engine = LineEngine(line_decoder("utf-8"), newline=newline)
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        assert start_of_last_lines(reader(f.fileno()), len(data), 1, engine) == 3
        assert start_of_last_lines(reader(f.fileno()), len(data), 0, engine) == 3
        assert start_of_last_lines(reader(f.fileno()), len(data), 2, engine) == 0


@pytest.mark.parametrize("encoding", ["utf-16-be", "utf-16-le", "utf-32-le"])
@pytest.mark.parametrize("policy", ["split", "truncate", "skip"])
def test_a_held_cr_before_a_torn_code_unit_ends_its_line(encoding: str, policy: str) -> None:
    """At the end, a \\r followed by half a code unit is a newline (no \\n can follow
    it), and the torn unit a last line; the line before may be overlong."""
    for content in ("", "ab", "abcdefgh"):
        data = (content + "\r").encode(encoding) + b"\x00"
        cr = len(data) - 1
        engine = LineEngine(
            line_decoder(encoding), max_line_bytes=4 * UNITS[encoding], on_overlong=policy
        )
        lines = run_engine(engine, data, [])
        assert lines[-1] == ByteLine("\ufffd", cr, len(data), False)
        if len(content) <= 4:
            assert lines == _reference(data, encoding, None, "replace")
        elif policy == "skip":
            assert len(lines) == 1
        else:  # the last piece, or the truncated line, ended by the \r
            assert lines[-2].terminated and lines[-2].end == cr


@pytest.mark.parametrize(
    ("encoding", "newline", "data"),
    [
        ("utf-16-be", "\n", b"\x00\x00\n"),
        ("utf-16-le", None, b"a\x00\x00\r\x00"),
        ("utf-32-le", "\r\n", b"a\x00\x00\x00\x00\x00\x00\r\x00\x00\x00\n\x00\x00\x00"),
    ],
)
def test_newline_bytes_after_an_odd_byte_at_the_end_end_no_line(
    encoding: str, newline: str | None, data: bytes
) -> None:
    """At the end of the input, bytes equal to a newline's but not at a code unit are
    parts of two units: the last line keeps them (they were dropped, the line taken as
    ended by a newline)."""
    engine = LineEngine(line_decoder(encoding), newline=newline)
    expected = [ByteLine(data.decode(encoding, "replace"), 0, len(data), False)]
    assert (
        run_engine(engine, data, []) == expected == _reference(data, encoding, newline, "replace")
    )


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le"])
@pytest.mark.parametrize("policy", ["split", "truncate"])
def test_tail_n_of_a_long_line_through_the_command(
    tmp_path: Path, encoding: str, policy: str
) -> None:
    """The real command over a file whose next-to-last line is many reads long (a
    newline cut by every block edge, CRLF kept as GNU tail keeps it)."""
    unit = UNITS[encoding]
    long = "x" * (3 << 20)
    log = tmp_path / "app.log"
    log.write_bytes(f"first\r\n{long}\r\nlast é".encode(encoding))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "utf8stream",
            "tail",
            "-n",
            "2",
            "--encoding",
            encoding,
            "--max-line-bytes",
            "65536",
            "--on-overlong",
            policy,
            str(log),
        ],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    if policy == "split":  # the pieces are printed as they were
        assert done.stdout == f"{long}\r\nlast é".encode()
        assert done.stderr == b""
    else:
        assert done.stdout == f"{long[: 65536 // unit]}\nlast é".encode()
        assert done.stderr.count(b"\n") == 1  # the notice of the line cut short


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16", "utf-32-be"])
def test_surrogateescape_is_refused_for_utf16_and_utf32(tmp_path: Path, encoding: str) -> None:
    """A lone surrogate (00 D8) cannot be escaped byte by byte: refused up front with a
    clear message, where the command died with a traceback at the first such unit."""
    with pytest.raises(ValueError, match="surrogateescape"):
        CodecLineDecoder(encoding, "surrogateescape")
    log = tmp_path / "app.log"
    log.write_bytes("a\n".encode("utf-16-le") + b"\x00\xd8\n\x00")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "utf8stream", "tail", "--encoding", encoding),
            *("--errors", "surrogateescape", str(log)),
        ],
        capture_output=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert b"surrogateescape" in done.stderr and b"Traceback" not in done.stderr


def _reference_ends(
    buf: bytes, newline: bytes | tuple[bytes, bytes], unit: int, start: int, hold_cr: bool
) -> list[tuple[int, int]]:
    """Code unit by code unit: each newline's start and the next line's."""
    out = []
    k = start
    while k + unit <= len(buf):
        if isinstance(newline, tuple):
            cr, lf = newline
            if buf[k : k + unit] == lf:
                out.append((k, k + unit))
            elif buf[k : k + unit] == cr:
                if buf[k + unit : k + 2 * unit] == lf:
                    out.append((k, k + 2 * unit))
                    k += unit
                elif hold_cr and len(buf) < k + 2 * unit:
                    break
                else:
                    out.append((k, k + unit))
        elif buf[k : k + len(newline)] == newline:
            out.append((k, k + len(newline)))
            k += len(newline) - unit
        k += unit
    return out


@settings(max_examples=examples(300), deadline=None)
@example(b"\x00\n\n\x00", "\n", "utf-16-le", 0, True)  # 0A 00 at an odd offset
@example(b"\n\x00\x00\x00\x00\n\x00\x00\x00", "\n", "utf-32-le", 0, True)
@given(
    data=st.lists(
        st.sampled_from([b"\x00", b"\n", b"\r", b"a", b"\x0a\x00", b"\x00\x0a", b"\r\x00\n\x00"]),
        max_size=30,
    ).map(b"".join),
    newline=st.sampled_from([None, "\n", "\r", "\r\n"]),
    encoding=st.sampled_from(["latin-1", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]),
    start_units=st.integers(0, 3),
    hold_cr=st.booleans(),
)
def test_line_ends_finds_the_newline_units_and_only_them(
    data: bytes, newline: str | None, encoding: str, start_units: int, hold_cr: bool
) -> None:
    """Bytes full of newline bytes at offsets that are not a code unit's: the search
    finds the newlines at code units only, as a walk over the units does."""
    unit = len("\n".encode(encoding))
    units: bytes | tuple[bytes, bytes] = (
        ("\r".encode(encoding), "\n".encode(encoding))
        if newline is None
        else newline.encode(encoding)
    )
    start = min(start_units * unit, len(data) // unit * unit)
    expected = _reference_ends(data, units, unit, start, hold_cr)
    assert linesearch.line_ends(data, units, unit, start, hold_cr) == expected
