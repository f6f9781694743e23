"""The scanner seam: its two implementations (C ``Units``, Python ``PyScanner``) agree.

Driven directly, call by call, with random bytes and chunkings, both separators modes,
line limits and callbacks that raise or try to re-enter, with a constant replacement or
as *mapping* scanners (no replacement: the callback returns each unit's text, as the
decoder's error policies do): same text, held prefix, parts, flags, offsets, events,
counts, and the same ``fail_start``/``resume_at``/``partial`` after a raise.  Both are
also held to ``bytes.decode``, across raises (the test resumes after the failed unit as
the decoder does).
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _helpers import CORE, FRAGMENTS, any_bytes, event_tuples
from hypothesis import given
from hypothesis import strategies as st

import utf8stream.core.scanner as scanner_module
from utf8stream import Malformed, Utf8DecodeError, Utf8Decoder
from utf8stream.core import _accel
from utf8stream.core._bytes import is_proper_prefix
from utf8stream.core.scanner import PyScanner, scanner_type

pytestmark = pytest.mark.skipif(
    not _accel.accelerated(), reason="the C accelerator is not built here (pure-Python install)"
)

_NEWLINES = [b"\n", b"\r", b"\r\n", b"\n\r"]
line_bytes = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(_NEWLINES), st.binary(max_size=2)),
    max_size=30,
).map(b"".join)


class Boom(Exception):
    pass


#: How a mapping scanner's callback turns a unit into text, as ``bytes.decode`` would.
MAPPINGS: dict[str, Callable[[bytes], str]] = {
    "replace": lambda data: "\ufffd",
    "surrogateescape": lambda data: "".join(chr(0xDC00 + b) for b in data),
    "backslashreplace": lambda data: "".join(f"\\x{b:02x}" for b in data),
}


@dataclass
class Side:
    """One implementation, with a callback that records, raises or re-enters."""

    scanner: Any
    raise_at: frozenset[int]
    reenter: bool
    mapping: Callable[[bytes], str] | None = None
    events: list[Malformed] = field(default_factory=list)
    reentry_errors: int = 0

    def callback(self, event: Malformed) -> str | None:
        self.events.append(event)
        if self.reenter:
            try:
                self.scanner.feed(b"", b"x", False, 0)
            except RuntimeError:
                self.reentry_errors += 1
        if len(self.events) in self.raise_at:
            raise Boom
        return None if self.mapping is None else self.mapping(event.data)

    def call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.scanner, method)(*args)
        except Boom:
            scanner = self.scanner
            return ("boom", scanner.fail_start, scanner.resume_at, scanner.partial)


def make_sides(
    replacement: str | None,
    raise_at: frozenset[int],
    reenter: bool,
    mapping: Callable[[bytes], str] | None = None,
) -> list[Side]:
    sides = []
    for accelerated in (True, False):
        with _accel.use_accelerator(accelerated):
            make = scanner_type()
        side = Side(None, raise_at, reenter, mapping)
        side.scanner = make(replacement, side.callback)
        assert isinstance(side.scanner, PyScanner) != accelerated
        sides.append(side)
    return sides


def assert_same(sides: list[Side], results: list[Any]) -> None:
    assert results[0] == results[1]
    assert event_tuples(sides[0].events) == event_tuples(sides[1].events)
    assert sides[0].reentry_errors == sides[1].reentry_errors
    assert sides[0].scanner.drain() == sides[1].scanner.drain()


@CORE
@given(
    data=st.one_of(any_bytes, line_bytes),
    cuts=st.lists(st.integers(0, 200), max_size=6),
    policy=st.sampled_from(["replace", "ignore", *(f"map-{name}" for name in MAPPINGS)]),
    raise_at=st.frozensets(st.integers(1, 8), max_size=3),
    reenter=st.booleans(),
    start=st.integers(0, 1 << 40),
)
def test_feed_agrees(
    data: bytes,
    cuts: list[int],
    policy: str,
    raise_at: frozenset[int],
    reenter: bool,
    start: int,
) -> None:
    errors = policy.removeprefix("map-")
    mapping = MAPPINGS[errors] if policy.startswith("map-") else None
    replacement = None if mapping else "\ufffd" if errors == "replace" else ""
    sides = make_sides(replacement, raise_at, reenter, mapping)
    bounds = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    pending = b""
    position = start
    texts: list[str] = []
    for a, b in zip(bounds, [*bounds[1:], len(data)], strict=True):
        chunk = pending + data[a:b]
        position += b - a
        final = b == len(data)
        while True:
            results = [side.call("feed", b"", chunk, final, position) for side in sides]
            assert_same(sides, results)
            if results[0][0] != "boom":
                break
            # Resume after the failed unit, as the decoder does: the text before it,
            # the unit's own text, then the rest of the chunk.
            _, fail_start, resume_at, partial = results[0]
            unit = sides[0].events[-1]
            assert unit.offset == position - len(chunk) + fail_start
            assert resume_at == unit.offset + len(unit.data)
            texts += [partial, MAPPINGS[errors](unit.data) if errors != "ignore" else ""]
            chunk = chunk[len(chunk) - (position - resume_at) :]
        texts.append(results[0][0])
        pending = results[0][1]
    assert "".join(texts) == data.decode("utf-8", errors)


@CORE
@given(data=any_bytes, cut=st.integers(0, 40), final=st.booleans())
def test_a_mapping_callback_must_return_text(data: bytes, cut: int, final: bool) -> None:
    results = []
    for accelerated in (True, False):
        with _accel.use_accelerator(accelerated):
            scanner = scanner_type()(None, lambda event: event.data)
        try:
            results.append(scanner.feed(data[:cut], data[cut:], final, 1000))
        except TypeError as exc:
            assert "must return str, not bytes" in str(exc)
            results.append(("type", scanner.fail_start, scanner.partial))
    assert results[0] == results[1]
    if results[0][0] != "type":  # no unit: well-formed up to the held prefix
        text, held = results[0]
        assert text == data[: len(data) - len(held)].decode("utf-8")


@CORE
@given(
    head=line_bytes,
    data=line_bytes,
    sep=st.sampled_from([-1, 10]),
    limit=st.integers(0, 12),
    raise_at=st.frozensets(st.integers(1, 8), max_size=2),
    reenter=st.booleans(),
)
def test_lines_agree(
    head: bytes, data: bytes, sep: int, limit: int, raise_at: frozenset[int], reenter: bool
) -> None:
    sides = make_sides("\ufffd", raise_at, reenter)
    results = [side.call("lines", head, data, 1000, sep, limit) for side in sides]
    assert_same(sides, results)
    if raise_at or results[0][0] == "boom":
        return
    texts, offsets = results[0]
    buf = head + data
    consumed = buf[: offsets[-1] - 1000]
    newline = "\n" if sep == 10 else "\r\n|\r|\n"
    expected = re.split(newline, consumed.decode("utf-8", "replace"))[:-1]
    assert texts == expected
    assert len(offsets) == len(texts) + 1
    # Without each line's offset: the same lines, and only where they end.
    for make in (PyScanner, _accel.accelerator().Units):
        assert make("\ufffd", None).lines(head, data, 1000, sep, limit, False) == (
            texts,
            offsets[-1:],
        )


@pytest.mark.parametrize("sep", [-1, 10])
def test_lines_agree_far_into_a_long_buffer(sep: int) -> None:
    """The accelerator looks for ``\r`` and for non-ASCII bytes line by line, not over the
    whole buffer at once (it once looked a few KiB ahead): a ``\r``, ``\r\n``, a character
    or a malformed byte anywhere (before, at and past the ends of those looks; in lines
    of every length, one longer than two looks) is where it was, as Python finds it."""
    plain = b"".join(b"x" * (k % 97) + b"\n" for k in range(400))  # ~19 KiB of lines
    plain += b"y" * 9000 + b"\n" + b"z" * 50 + b"\n"
    features = [b"\r", b"\r\n", "é".encode(), "😀".encode(), b"\xff", b"\xe6\x97"]
    for at in (0, 1, 4095, 4096, 4097, 5000, 8191, 8192, 8193, 12289, 20000, 25000):
        for feature in features:
            data = plain[:at] + feature + plain[at:]
            for head in (b"", b"lead "):
                results = [
                    make("\ufffd", None).lines(head, data, 1000, sep, 1 << 20)
                    for make in (PyScanner, _accel.accelerator().Units)
                ]
                assert results[0] == results[1], (at, feature, head)
                texts, offsets = results[0]
                newline = "\n" if sep == 10 else "\r\n|\r|\n"
                consumed = (head + data)[: offsets[-1] - 1000]
                assert texts == re.split(newline, consumed.decode("utf-8", "replace"))[:-1]


#: Lines of up to ~170 bytes (the accelerator cuts ASCII 32 bytes at a time): runs of
#: ASCII around a character, a malformed unit or a cut one, then a newline (or none).
long_lines = st.lists(
    st.tuples(
        st.integers(0, 80),
        st.sampled_from(
            [b"", "\u00e9".encode(), "\U0001f600".encode(), b"\xff", b"\xe2\x82", b"\x98\x80"]
        ),
        st.integers(0, 80),
        st.sampled_from([*_NEWLINES, b"", b"\x00"]),
    ),
    max_size=8,
).map(lambda parts: b"".join(b"a" * x + mid + b"b" * y + nl for x, mid, y, nl in parts))

#: The unfinished line a reader holds: it may end with a \r (the start of a \r\n) or
#: with the start of a character that data completes; or hold a newline after all.
held_heads = st.tuples(
    st.integers(0, 60),
    st.sampled_from([b"", b"\r", b"\n", b"x\ry", b"\r\n", b"\xf0\x9f", b"\xc3", b"\x00"]),
).map(lambda t: b"h" * t[0] + t[1])


@CORE
@given(
    head=held_heads,
    data=long_lines,
    sep=st.sampled_from([-1, 10, 13, 0]),
    limit=st.integers(0, 200),
    raise_at=st.frozensets(st.integers(1, 8), max_size=2),
    each_offset=st.sampled_from([0, 1, 2]),
)
def test_long_lines_agree(
    head: bytes, data: bytes, sep: int, limit: int, raise_at: frozenset[int], each_offset: int
) -> None:
    """Long lines, a held head joined to the first line only (or, holding a newline, to
    all of data), ASCII cut in blocks: the two scanners agree, with ``bytes.decode``
    too, and on where a raising callback stopped (of head + data)."""
    sides = make_sides("\ufffd", raise_at, False)
    results = [side.call("lines", head, data, 1000, sep, limit, each_offset) for side in sides]
    results = [r if r[0] == "boom" else (r[0], list(r[1])) for r in results]
    assert_same(sides, results)
    if results[0][0] == "boom":
        return
    texts, offsets = results[0]
    consumed = (head + data)[: offsets[-1] - 1000]
    newline = "\r\n|\r|\n" if sep == -1 else re.escape(chr(sep))
    assert texts == re.split(newline, consumed.decode("utf-8", "replace"))[:-1]
    assert len(offsets) == (len(texts) + 1 if each_offset else 1)


def test_short_non_ascii_lines_at_every_lead_and_second_byte() -> None:
    """Short lines with one sequence of every lead byte and a second byte at each edge of
    Table 3-7 (the accelerator decodes a well-formed short line on a path of its own and
    leaves a malformed one to the general decoder): the same lines, events and counts as
    the pure scanner, and the text of ``bytes.decode``."""
    seconds = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]
    lines = [
        b"ab" + bytes([lead, second]) + tail + b"c" * pad + b"\n"
        for lead in range(0x80, 0x100)
        for second in seconds
        for tail in (b"", b"\x80", b"\x80\xbf", b"\x80\xbf\x80")
        for pad in (0, 20)
    ]
    lines += ["\u00e9\u0100\u07ff\u0800\uffff\U00010000\U0010ffff\n".encode()]
    data = b"".join(lines)
    for cut in (0, 1, 3, 40):
        head, rest = data[:cut], data[cut:]
        sides = make_sides("\ufffd", frozenset(), False)
        results = [side.call("lines", head, rest, 7, -1, 300, 1) for side in sides]
        assert_same(sides, results)
        texts, offsets = results[0]
        assert texts == data.decode("utf-8", "replace").split("\n")[:-1]
        assert offsets[-1] == 7 + len(data)


def test_short_non_ascii_lines_of_every_length_and_their_last_block() -> None:
    """Short non-ASCII lines of every length up to past two blocks, and near the
    256-byte bound, with a character of each width (or a malformed unit) at every place,
    each followed by lines that start with continuation or lead bytes: the accelerator
    reads the last bytes of such a line as a block of the buffer with the lanes past the
    line masked (the next line's bytes must not count), and the last line of a buffer
    byte by byte.  Same lines, events and counts as the pure scanner, and the text of
    ``bytes.decode``."""
    chars = [b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\x80", b"\xc0"]
    nexts = [b"\x80\x80\x80\x80", b"\xf0\x9f\x98\x80", b"\xbf\xe2\x82\xac", b"z"]
    lines = []
    for size in [*range(1, 40), *range(240, 257)]:
        for char in chars:
            for at in sorted({0, size // 2, size - 1}):
                if at + len(char) <= size:
                    body = b"a" * at + char + b"b" * (size - at - len(char))
                    lines.append(body + b"\n" + nexts[len(lines) % len(nexts)] + b"\r\n")
    for end in (False, True):
        for k in range(0, len(lines), 97):
            data = b"".join(lines[k : k + 97])
            if end:  # the last line's block would pass the end of the buffer
                data = data[: data.rindex(b"\n", 0, -3) + 1]
            sides = make_sides("\ufffd", frozenset(), False)
            results = [side.call("lines", b"", data, 0, -1, 300, 1) for side in sides]
            assert_same(sides, results)
            texts, offsets = results[0]
            assert texts == data.decode("utf-8", "replace").splitlines()
            assert offsets[-1] == len(data)


def test_short_lines_of_the_four_byte_kind_in_blocks() -> None:
    """Short lines that need four bytes a character, dense mixes of every width (emoji
    with joiners and skin tones among words, in random order), of every length from one
    block to the 256-byte bound: the accelerator decodes their 32-byte blocks with the
    vector kernel and the bytes after the last block one by one.  A malformed unit put
    at the block edges and elsewhere (the kernel stops in front of it, the line goes to
    the general decoder).  Same lines, events and counts as the pure scanner, and the
    text of ``bytes.decode``."""
    import random

    rnd = random.Random(19)
    pieces = [b"a", b" ", b"\xc3\xa9", b"\xe2\x80\x8d", b"\xf0\x9f\x98\x80", b"\xf0\x9f\x8f\xbd"]
    bad = [b"\x80", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xff"]
    lines = []
    for size in range(28, 257):
        body = b"\xf0\x9f\x9a\x80"
        while len(body) < size:
            body += rnd.choice(pieces)
        lines.append(body)
        for at in {0, 15, 16, 31, 32, 33, 63, 64, size // 2, len(body) - 1}:
            if at <= len(body):
                lines.append(body[:at] + bad[at % len(bad)] + body[at:])
    for k in range(0, len(lines), 101):
        data = b"\n".join(lines[k : k + 101]) + b"\n"
        sides = make_sides("\ufffd", frozenset(), False)
        results = [side.call("lines", b"", data, 0, -1, 300, 1) for side in sides]
        assert_same(sides, results)
        texts, offsets = results[0]
        assert texts == data.decode("utf-8", "replace").split("\n")[:-1]
        assert offsets[-1] == len(data)


def test_lines_of_the_two_byte_kind_in_blocks() -> None:
    """Lines whose string is UCS-2 (CJK with ASCII and CJK punctuation, Cyrillic words
    among spaces, the edges of the three-byte range: U+0800, U+D7FF, U+E000, U+FFFF),
    of every length from under one block to past the short-line bound, and up to and
    past 2048 bytes: the accelerator decodes their 32-byte blocks with the UCS-2 vector
    kernel into a buffer, and the bytes after the last block as one more block with the
    bytes after the line masked when the buffer holds 32 bytes from them (else one by
    one).  A malformed unit (an overlong form, a surrogate, a cut sequence, a four-byte
    lead, a continuation byte) put at the block edges, near the end and elsewhere: the
    kernel stops in front of it and the line goes to the general decoder.  Lines of
    the one- and four-byte kinds of the same lengths (counted once, then decoded by the
    general decoder).  Same lines, events and counts as the pure scanner, and the text
    of ``bytes.decode``."""
    import random

    rnd = random.Random(20)
    cjk = [b"\xe6\x97\xa5", b"\xe3\x81\x82", b"\xea\xb0\x80", b"\xe3\x80\x82"]
    edges = [b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf"]
    mixes = [
        cjk * 4 + edges,  # nearly all three-byte characters (the ten-character step)
        cjk + edges + [b" ", b"a", b"\xd0\xb6", b"\xc3\xa9"],  # every width
        [b"\xd0\xb6", b"\xd1\x8f", b" "],  # Cyrillic words
        [b"a", b"b", b" ", b"\xc3\xa9"],  # Latin-1
        [*cjk, b"a", b" ", b"\xf0\x9f\x98\x80"],  # four bytes a character
    ]
    bad = [b"\x80", b"\xe6\x97", b"\xed\xa0\x80", b"\xe0\x9f\xbf", b"\xc1\xbf", b"\xff", b"\xf0"]
    lines = []
    sizes = [*range(20, 300), *range(300, 800, 11), *range(2030, 2070, 3)]
    for size in sizes:
        for mix in mixes:
            body = rnd.choice([b"\xe4\xb8\x80", b"\xd0\xb6", b"\xc3\xa9", b"a"])
            while len(body) < size:
                body += rnd.choice(mix)
            lines.append(body)
            ats = {0, 15, 16, 29, 30, 31, 32, 33, 63, 64, size // 2}
            ats |= {len(body) - k for k in (1, 2, 3, 15, 16, 17, 30, 31, 32)}
            for at in ats:
                if 0 <= at <= len(body):
                    lines.append(body[:at] + bad[(at + size) % len(bad)] + body[at:])
            # a four-byte character: the line is of the four-byte kind
            third = size // 3 * 3
            lines.append(body[:third] + b"\xf0\x9f\x98\x80" + body[third:])
    rnd.shuffle(lines)
    for k in range(0, len(lines), 101):
        data = b"\n".join(lines[k : k + 101]) + b"\n"
        # the last line's last block read from the buffer or not
        for cut, tail in ((0, b""), (45, b"\xe4\xb8\x80 unterminated")):
            sides = make_sides("\ufffd", frozenset(), False)
            head, rest = data[:cut], data[cut:] + tail
            results = [side.call("lines", head, rest, 0, -1, 3000, 1) for side in sides]
            assert_same(sides, results)
            texts, offsets = results[0]
            assert texts == data.decode("utf-8", "replace").split("\n")[:-1]
            assert offsets[-1] == len(data)


def _cut_by_bytes(buf: bytes, sep: int, limit: int) -> list[int]:
    """Where each complete line of ``buf`` starts, then where the last one ends, walking
    the bytes one by one and stopping before a line longer than ``limit`` (a ``\\r`` at
    the end may be the first half of ``\\r\\n``)."""
    starts, start, i = [], 0, 0
    while i < len(buf):
        byte = buf[i]
        if byte == sep or (sep < 0 and byte in b"\r\n"):
            width = 2 if sep < 0 and buf[i : i + 2] == b"\r\n" else 1
            if sep < 0 and byte == 0x0D and i == len(buf) - 1:
                break
            if i - start > limit:
                break
            starts.append(start)
            start = i = i + width
        else:
            i += 1
    return [*starts, start]


@CORE
@given(
    buf=line_bytes,
    position=st.integers(0, 1 << 40),
    sep=st.sampled_from([-1, 10, 13, 0]),
    limit=st.integers(0, 12),
    each_offset=st.booleans(),
)
def test_the_pure_line_cut_is_the_byte_by_byte_cut(
    buf: bytes, position: int, sep: int, limit: int, each_offset: bool
) -> None:
    """The pure-Python scanner cuts lines with the line engine's search, and stops before
    the first line over the limit: where a walk of the bytes one by one stops."""
    _, offsets = PyScanner("\ufffd", None).lines(b"", buf, position, sep, limit, each_offset)
    expected = [position + at for at in _cut_by_bytes(buf, sep, limit)]
    assert list(offsets) == (expected if each_offset else expected[-1:])


def test_what_cpythons_decoder_holds_is_a_proper_prefix_but_for_ed_a0() -> None:
    """The pure-Python scanner's fast path trusts CPython's strict decoder to hold back,
    at a chunk's end, exactly the proper prefixes of a well-formed sequence, and ED A0..BF
    besides (which it then decodes as units): every tail of one to three bytes."""
    tails = [bytes([a]) for a in range(256)]
    tails += [bytes([a, b]) for a in range(0xC0, 0x100) for b in range(256)]
    tails += [
        bytes([a, b, c]) for a in range(0xE0, 0x100) for b in range(0x80, 0xC0) for c in range(256)
    ]
    held = 0
    for tail in tails:
        try:
            _, used = codecs.utf_8_decode(tail, "strict", False)
        except UnicodeDecodeError:
            continue
        if used == 0:
            held += 1
            surrogate_start = tail[0] == 0xED and len(tail) >= 2 and tail[1] >= 0xA0
            assert is_proper_prefix(tail) is not surrogate_start, tail
    assert held > 10_000  # the check saw the prefixes


def test_the_argument_checks_agree() -> None:
    for make in (PyScanner, _accel.accelerator().Units):
        with pytest.raises(ValueError, match="one character or none"):
            make("ab", None)
        with pytest.raises(TypeError, match="callback maps units"):
            make(None, None)
        with pytest.raises(ValueError, match="one-character replacement"):
            make(None, str).lines(b"", b"a\nb", 3, -1, 10)
        with pytest.raises(ValueError, match="one-character replacement"):
            make("", None).lines(b"", b"a\nb", 3, -1, 10)
        with pytest.raises(ValueError, match="sep must be"):
            make("\ufffd", None).lines(b"", b"a\nb", 0, 128, 10)
        with pytest.raises(ValueError, match="limit must be non-negative"):
            make("\ufffd", None).lines(b"", b"a\nb", 0, 10, -1)


# -- one path: the decoder decodes through its scanner, whatever the policy ---------------


class CountingScanner:
    """A scanner that counts the calls made to the one it wraps (``feed``, ``decode``)."""

    def __init__(self, inner: Any) -> None:
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "feeds", 0)

    def feed(self, *args: Any) -> Any:
        object.__setattr__(self, "feeds", self.feeds + 1)
        return self.inner.feed(*args)

    def decode(self, *args: Any) -> Any:
        object.__setattr__(self, "feeds", self.feeds + 1)
        return self.inner.decode(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.inner, name, value)  # the decoder's on_malformed setter


@pytest.mark.parametrize("accelerated", [True, False])
@pytest.mark.parametrize(
    "errors", ["replace", "ignore", "strict", "surrogateescape", "backslashreplace", "optu-8"]
)
def test_every_decode_is_one_scanner_call(accelerated: bool, errors: str) -> None:
    """Held state (unread input, carried text, an open gap) is the boundary's work:
    then the same one scanner call as always, with every policy."""
    events: list[Malformed] = []

    def callback(event: Malformed) -> None:
        events.append(event)
        if event.data == b"\xfe":
            raise Boom  # leaves unread input and carried text behind

    with _accel.use_accelerator(accelerated):
        decoder = Utf8Decoder(errors, on_malformed=callback)
    counting = CountingScanner(decoder._scanner)
    decoder._scanner = counting
    decoder._sync()
    script = [b"ab\xffcd\xe2\x82", "gap", b"\x82\xacxy\xfe", b"z\xf0\x9f", b"\x98\x80", b""]
    calls = 0
    for step in [*script, b"\xc3", b"", b"", b""]:
        if step == "gap":
            # Unread input left by a failure is decoded first: one scanner call.
            calls += bool(decoder._unread)
            decoder.mark_gap()
            assert counting.feeds == calls
            continue
        assert isinstance(step, bytes)
        final = not step
        with contextlib.suppress(Boom, Utf8DecodeError):
            decoder.decode(step, final)
        calls += 1
        assert counting.feeds == calls
        assert decoder._scanner is counting
    assert not decoder.buffered


def test_only_the_python_scanners_use_a_codec_error_handler() -> None:
    """No process-global codec error handler or thread-local in the decoder: it asks its
    scanner, and only the Python scanners (and the byte transcoder's Python twin) drive
    CPython's decoder with one."""
    core = Path(scanner_module.__file__).parent
    for path in sorted(core.glob("*.py")):
        names = {
            node.attr if isinstance(node, ast.Attribute) else node.id
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.Attribute, ast.Name))
        }
        uses = names & {"register_error", "utf_8_decode", "local"}
        if path.name == "scanner.py":
            assert uses == {"register_error", "utf_8_decode", "local"}
        elif path.name == "registry.py":
            assert uses == {"register_error"}  # the optu-8 policy, for every codec
        elif path.name == "_native.py":
            # The byte transcoder's pure-Python twin drives the source codec's decoder
            # with a handler that reports each unit, as the Python scanner does.
            assert uses == {"register_error", "utf_8_decode", "local"}
        else:
            assert not uses, path.name
