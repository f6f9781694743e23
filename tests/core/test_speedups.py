"""The optional C accelerator against the pure-Python decoder, side by side.

The accelerated path must be indistinguishable from the pure one: same text after every
call, same events, same statistics, same state after a callback raises, same checkpoints.
(The core test modules also run whole against both; see ``implementation`` in conftest.)
"""

from __future__ import annotations

import codecs
import gc
import random
import re
import sys
import tracemalloc
from contextlib import AbstractContextManager
from typing import Any

import pytest
from _helpers import CORE, FRAGMENTS, HEAVY, chunked, event_tuples
from hypothesis import given
from hypothesis import strategies as st

import utf8stream.core.decoder as decoder_module
from utf8stream import LineSplitter, LineTooLong, Malformed, MalformedKind, Utf8Decoder
from utf8stream.core._accel import use_accelerator
from utf8stream.core.lines import OVERLONG_POLICIES
from utf8stream.core.scanner import PyScanner
from utf8stream.core.variantscan import VariantScanner

pytestmark = pytest.mark.skipif(
    not decoder_module.accelerated(),
    reason="the C accelerator is not built here (pure-Python install)",
)


def pure_python() -> AbstractContextManager[bool]:
    return use_accelerator(False)


def make_pair(**kwargs: Any) -> tuple[Utf8Decoder, Utf8Decoder, list[Malformed], list[Malformed]]:
    fast_events: list[Malformed] = []
    pure_events: list[Malformed] = []
    fast = Utf8Decoder(on_malformed=fast_events.append, **kwargs)
    with pure_python():
        pure = Utf8Decoder(on_malformed=pure_events.append, **kwargs)
    return fast, pure, fast_events, pure_events


def test_the_accelerated_path_is_taken() -> None:
    decoder = Utf8Decoder()
    assert decoder_module.accelerated()
    assert not isinstance(decoder._scanner, PyScanner)
    with pure_python():
        assert isinstance(Utf8Decoder()._ready, PyScanner)
    # Every policy on plain UTF-8 goes through the same C scanner; the variants and
    # surrogatepass through the variant scanner, a policy over that same C scanner.
    for errors in ("strict", "surrogateescape", "backslashreplace", "surrogatepass"):
        scanner = Utf8Decoder(errors)._scanner
        assert isinstance(scanner, VariantScanner) == (errors == "surrogatepass")
        assert not isinstance(scanner, PyScanner)
    for variant in ("wtf-8", "cesu-8", "mutf-8", "utf-8z"):
        scanner = Utf8Decoder(variant=variant)._scanner
        assert isinstance(scanner, VariantScanner)
        assert isinstance(scanner._inner, decoder_module.accelerator().Units)
        with pure_python():
            scanner = Utf8Decoder(variant=variant)._scanner
        assert isinstance(scanner, VariantScanner)
        assert isinstance(scanner._inner, PyScanner)


@CORE
@given(chunked(), st.sampled_from(["replace", "ignore"]), st.integers(0, 1 << 40))
def test_same_text_events_and_statistics(
    case: tuple[bytes, list[bytes]], errors: str, start: int
) -> None:
    data, chunks = case
    fast, pure, fast_events, pure_events = make_pair(errors=errors, start_offset=start)
    for chunk in chunks:
        assert fast.decode(chunk) == pure.decode(chunk)
        assert fast.getstate() == pure.getstate()
    assert fast.decode(b"", True) == pure.decode(b"", True)
    assert event_tuples(fast_events) == event_tuples(pure_events)
    assert fast.statistics() == pure.statistics()
    assert fast.position == pure.position == start + len(data)


@HEAVY
@given(chunked(), st.integers(0, 6), st.booleans())
def test_a_raising_callback_leaves_the_same_state(
    case: tuple[bytes, list[bytes]], fail_at: int, mark_gaps: bool
) -> None:
    """The callback raises at the n-th event; both decoders then go on identically."""
    _, chunks = case
    outputs: list[list[object]] = []
    for accelerated in (True, False):
        seen: list[Malformed] = []

        def callback(event: Malformed, seen: list[Malformed] = seen) -> None:
            seen.append(event)
            if len(seen) == fail_at + 1:
                raise KeyError("stop")

        if accelerated:
            decoder = Utf8Decoder(on_malformed=callback)
        else:
            with pure_python():
                decoder = Utf8Decoder(on_malformed=callback)
        out: list[object] = []

        def step(chunk: bytes, final: bool, decoder: Utf8Decoder = decoder) -> object:
            try:
                return decoder.decode(chunk, final)
            except KeyError:
                return ("raised", decoder.position, decoder.getstate())

        for i, chunk in enumerate([*chunks, b""]):
            out.append(step(chunk, i == len(chunks)))
            if mark_gaps and i == 1:
                decoder.mark_gap()
        out.append(step(b"", True))
        out.append(step(b"", True))
        out.append(event_tuples(seen))
        out.append(decoder.statistics())
        out.append(decoder.checkpoint())
        outputs.append(out)
    assert outputs[0] == outputs[1]


@CORE
@given(chunked(), st.data())
def test_checkpoints_cross_between_implementations(
    case: tuple[bytes, list[bytes]], data: st.DataObject
) -> None:
    """A checkpoint taken by one implementation resumes in the other."""
    whole, chunks = case
    cut = data.draw(st.integers(0, len(chunks)))
    events: list[Malformed] = []
    first = Utf8Decoder(on_malformed=events.append)
    text = "".join(first.decode(c) for c in chunks[:cut])
    with pure_python():
        second = Utf8Decoder.from_checkpoint(first.checkpoint(), on_malformed=events.append)
    text += "".join(second.decode(c) for c in chunks[cut:]) + second.decode(b"", True)
    assert text == whole.decode("utf-8", "replace")
    assert second.statistics().malformed_total == len(events)


def test_callback_replaced_midstream_keeps_the_counts() -> None:
    decoder = Utf8Decoder()
    decoder.decode(b"\xff\xfe")
    events: list[Malformed] = []
    decoder.on_malformed = events.append  # set in place: the counts carry over
    decoder.decode(b"\x80", True)
    assert decoder.statistics().malformed_total == 3
    assert decoder.statistics().chars_out == 3
    assert [e.offset for e in events] == [2]


def test_events_are_ordinary_frozen_records() -> None:
    events: list[Malformed] = []
    Utf8Decoder(on_malformed=events.append).decode(b"a\xe2\x82b\xff")
    assert events == [
        Malformed(1, b"\xe2\x82", MalformedKind.INCOMPLETE_SEQUENCE),
        Malformed(4, b"\xff", MalformedKind.INVALID_BYTE),
    ]
    assert hash(events[0]) == hash(Malformed(1, b"\xe2\x82", events[0].kind))
    with pytest.raises(AttributeError):
        events[0].offset = 7  # type: ignore[misc]


def test_units_take_one_replacement_character_or_none() -> None:
    with pytest.raises(ValueError, match="one character or none"):
        decoder_module.accelerator().Units("??", None)
    with pytest.raises(ValueError, match="one-character replacement"):
        decoder_module.accelerator().Units("", None).lines(b"", b"a\nb", 3, -1, 10)


def test_a_callback_may_run_another_decoder() -> None:
    """Re-entry: the handler of the outer decode call must not see the inner one's data."""
    inner = Utf8Decoder()
    inner_text: list[str] = []
    events: list[Malformed] = []

    def callback(event: Malformed) -> None:
        events.append(event)
        inner_text.append(inner.decode(b"x\xc0y"))

    outer = Utf8Decoder(on_malformed=callback, start_offset=100)
    assert outer.decode(b"ab\xffcd\xfe") == "ab\ufffdcd\ufffd"
    assert [(e.offset, e.data) for e in events] == [(102, b"\xff"), (105, b"\xfe")]
    assert inner_text == ["x\ufffdy", "x\ufffdy"]
    assert inner.statistics().malformed_total == 2


def test_incremental_codecs_decoder_agrees_on_a_large_damaged_stream() -> None:
    """Chunks of 64 KiB with a unit every few hundred bytes, against codecs."""
    import random

    rng = random.Random(7)
    text = "".join(rng.choice(["abc ", "é", "€", "😀", "日本", "\n"]) for _ in range(60000))
    raw = bytearray(text.encode())
    for _ in range(400):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    data = bytes(raw)
    events: list[Malformed] = []
    decoder = Utf8Decoder(on_malformed=events.append)
    peer = codecs.getincrementaldecoder("utf-8")("replace")
    for i in range(0, len(data), 65536):
        assert decoder.decode(data[i : i + 65536]) == peer.decode(data[i : i + 65536])
    assert decoder.decode(b"", True) == peer.decode(b"", True)
    assert all(data[e.offset : e.end] == e.data for e in events)
    assert len(events) == decoder.statistics().malformed_total


@pytest.mark.parametrize("seed", range(6))
def test_long_inputs_take_every_fast_path(seed: int) -> None:
    """Runs of ASCII (the 16-byte blocks), segments over 4 KiB (the ASCII guess), every
    sequence length, units near block edges: against codecs and the pure decoder."""
    import random

    rng = random.Random(seed)
    pieces = ["a" * rng.randrange(1, 70), "é", "€", "😀", "日本語", "\n", "\r\n", " "]
    text = "".join(rng.choice(pieces) for _ in range(rng.choice([50, 3000, 20000])))
    raw = bytearray(text.encode())
    for _ in range(rng.choice([0, 1, 30])):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    data = bytes(raw)
    size = rng.choice([1, 15, 16, 17, 4095, 4096, 65536])
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    fast, pure, fast_events, pure_events = make_pair()
    peer = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in chunks:
        text_out = fast.decode(chunk)
        assert text_out == pure.decode(chunk) == peer.decode(chunk)
    assert fast.decode(b"", True) == pure.decode(b"", True) == peer.decode(b"", True)
    assert event_tuples(fast_events) == event_tuples(pure_events)
    assert fast.statistics() == pure.statistics()


# -- split: decoding and cutting lines in one pass ------------------------------------

_NEWLINES = [b"\n", b"\r", b"\r\n", b"\r\r", b"\n\r", b"\x00"]
_ASCII_RUNS = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=40)
line_bytes = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(_NEWLINES), _ASCII_RUNS.map(str.encode)),
    max_size=60,
).map(b"".join)


def line_items(items: list[str | LineTooLong]) -> list[tuple[str, str]]:
    return [("line", x) if isinstance(x, str) else ("too long", x.partial) for x in items]


@CORE
@given(
    chunked(line_bytes),
    st.sampled_from([None, "\n", "\x00", "\r"]),
    st.sampled_from([None, 4, 7, 16, 64]),
    st.sampled_from(OVERLONG_POLICIES),
    st.integers(0, 1 << 40),
)
def test_feed_bytes_agrees_over_both_scanners(
    case: tuple[bytes, list[bytes]],
    newline: str | None,
    limit: int | None,
    policy: str,
    start: int,
) -> None:
    """``feed_bytes`` on the line engine: the same lines, decoder state, events and
    statistics with the accelerated and the pure scanner; without a limit, the lines
    of the whole text (the limit counts source bytes, so with one they may differ from
    ``feed(text)`` where malformed bytes are near it)."""
    whole, chunks = case
    fast, pure, fast_events, pure_events = make_pair(start_offset=start)
    options: dict[str, Any] = {"newline": newline, "max_line_bytes": limit, "on_overlong": policy}
    fast_lines, pure_lines = LineSplitter(**options), LineSplitter(**options)
    lines: list[str | LineTooLong] = []
    for chunk in chunks:
        got = fast_lines.feed_bytes(fast, chunk)
        assert line_items(got) == line_items(pure_lines.feed_bytes(pure, chunk))
        assert fast.getstate() == pure.getstate()
        lines += got
    got = fast_lines.feed_bytes(fast, b"", True) + fast_lines.flush()
    expected = pure_lines.feed_bytes(pure, b"", True) + pure_lines.flush()
    assert line_items(got) == line_items(expected)
    lines += got
    assert event_tuples(fast_events) == event_tuples(pure_events)
    assert fast.statistics() == pure.statistics()
    assert fast_lines.statistics() == pure_lines.statistics()
    if limit is None:
        oracle = LineSplitter(newline=newline, max_line_bytes=None)
        text = whole.decode("utf-8", "replace")
        assert line_items(lines) == line_items(oracle.feed(text) + oracle.flush())


@HEAVY
@given(chunked(line_bytes), st.integers(0, 6))
def test_split_with_a_raising_callback_leaves_the_same_state(
    case: tuple[bytes, list[bytes]], fail_at: int
) -> None:
    _, chunks = case
    outputs: list[list[object]] = []
    for accelerated in (True, False):
        seen: list[Malformed] = []

        def callback(event: Malformed, seen: list[Malformed] = seen) -> None:
            seen.append(event)
            if len(seen) == fail_at + 1:
                raise KeyError("stop")

        if accelerated:
            decoder = Utf8Decoder(on_malformed=callback)
        else:
            with pure_python():
                decoder = Utf8Decoder(on_malformed=callback)
        splitter = LineSplitter()
        out: list[object] = []
        for i, chunk in enumerate([*chunks, b""]):
            final = i == len(chunks)
            try:
                if accelerated:
                    items = splitter.feed_bytes(decoder, chunk, final)
                else:
                    items = splitter.feed(decoder.decode(chunk, final))
                out.append(line_items(items))
            except KeyError:
                out.append(("raised", decoder.position, decoder.getstate()))
        out.append(line_items(splitter.feed(decoder.decode(b"", True)) + splitter.flush()))
        out.append(event_tuples(seen))
        out.append(decoder.statistics())
        outputs.append(out)
    assert outputs[0] == outputs[1]


# -- lines: complete lines only, for the follower ------------------------------------


def reference_lines(
    buf: bytes, start: int, sep: int, limit: int
) -> tuple[list[str], list[int], bytes]:
    """What ``Units.lines`` must return, found with re and decoded by CPython's codec.

    CPython's ``replace`` follows the same maximal-subpart practice, so each line's bytes
    decoded alone are the expected text (a newline byte never belongs to a sequence).
    """
    pattern = rb"\r\n|\r|\n" if sep == -1 else re.escape(bytes([sep]))
    parts: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in re.finditer(pattern, buf):
        if sep == -1 and m.group() == b"\r" and m.end() == len(buf):
            break  # may be the first half of \r\n
        if m.start() - pos > limit:
            break
        offsets.append(start + pos)
        parts.append(buf[pos : m.start()].decode("utf-8", "replace"))
        pos = m.end()
    offsets.append(start + pos)
    return parts, offsets, buf[:pos]


@CORE
@given(
    line_bytes,
    st.data(),
    st.sampled_from([-1, ord("\n"), 0, ord("\r")]),
    st.integers(0, 80),
    st.integers(0, 1 << 40),
)
def test_lines_decodes_complete_lines_as_the_codec_does(
    buf: bytes, data: st.DataObject, sep: int, limit: int, start: int
) -> None:
    cut = data.draw(st.integers(0, len(buf)))
    head, tail = buf[:cut], buf[cut:]
    events: list[Malformed] = []
    decoder = Utf8Decoder(start_offset=start, on_malformed=events.append)
    got = decoder.decode_lines(head, tail, sep, limit)
    assert got is not None
    parts, offsets, consumed = reference_lines(buf, start, sep, limit)
    assert got == (parts, offsets)
    assert decoder.position == offsets[-1]
    # The events and statistics of a plain decode() of exactly the consumed bytes.
    peer_events: list[Malformed] = []
    peer = Utf8Decoder(start_offset=start, on_malformed=peer_events.append)
    peer.decode(consumed)
    assert event_tuples(events) == event_tuples(peer_events)
    assert decoder.statistics() == peer.statistics()


def test_lines_is_only_for_replace_with_nothing_held() -> None:
    assert Utf8Decoder("ignore").decode_lines(b"", b"a\n", -1, 10) is None
    decoder = Utf8Decoder()
    decoder.decode(b"\xe2\x82")  # a pending prefix: decode() territory
    assert decoder.decode_lines(b"", b"\xac\n", -1, 10) is None
    with pure_python():  # the Python scanner cuts lines too
        assert Utf8Decoder().decode_lines(b"", b"a\n", -1, 10) == (["a"], [0, 2])
    units = Utf8Decoder()._scanner
    with pytest.raises(TypeError):
        units.lines("a", b"", 0, -1, 10)
    with pytest.raises(TypeError, match=r"\[, each_offset: int\]"):  # 0, 1 or 2
        units.lines(b"", b"a\n", 0, -1)
    with pytest.raises(ValueError, match="sep"):
        units.lines(b"", b"", 0, 300, 10)
    with pytest.raises(ValueError, match="limit"):
        units.lines(b"", b"", 0, -1, -1)


def test_lines_reports_a_long_buffer_in_one_pass() -> None:
    """Many lines over every fast path (ASCII chunks, long ASCII lines, wide text)."""
    rng = random.Random(7)
    pieces = [b"a" * 5000, "日本語".encode(), "🐴".encode(), b"\xff", b"plain", b"\xe2\x82"]
    buf = b"".join(rng.choice(pieces) + rng.choice([b"\n", b"\r\n", b"\r"]) for _ in range(3000))
    decoder = Utf8Decoder(start_offset=10)
    got = decoder.decode_lines(buf[:777], buf[777:], -1, 1 << 20)
    assert got == reference_lines(buf, 10, -1, 1 << 20)[:2]
    ascii_only = b"".join(b"x" * rng.randrange(300) + b"\n" for _ in range(500))
    got = Utf8Decoder().decode_lines(b"", ascii_only, ord("\n"), 200)
    assert got == reference_lines(ascii_only, 0, ord("\n"), 200)[:2]


def test_runs_of_two_and_three_byte_characters_with_intruders_at_every_alignment() -> None:
    """The C loops take two-byte and three-byte characters two at a time; what breaks a
    run (an edge lead such as E0 or ED, an overlong, a surrogate, a cut sequence) may sit
    at any position of such a pair."""
    runs = ["ж", "ß", "日", "\u1000", "\uefff", "\u0800"]
    intruders = [
        *(c.encode() for c in ["\u0800", "\ud7ff", "\ue000", "\uffff", "\u0080", "\u07ff", "a"]),
        *(c.encode() for c in ["€", "🐴", "\U00010000"]),
        b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\x80",
        b"\xc1\xbf", b"\xe1\x80", b"\xc2", b"\x80", b"\xbf\xbf", b"\xef\xbf", b"\xf0\x90\x80",
    ]  # fmt: skip
    for run in runs:
        unit = run.encode()
        for intruder in intruders:
            for k in range(8):
                data = unit * k + intruder + unit * 9 + b"\n" + unit * k + intruder
                expected = data.decode("utf-8", "replace")
                events: list[Malformed] = []
                decoder = Utf8Decoder(on_malformed=events.append)
                assert decoder.decode(data, True) == expected, (run, intruder, k)
                with pure_python():
                    pure_events: list[Malformed] = []
                    Utf8Decoder(on_malformed=pure_events.append).decode(data, True)
                assert event_tuples(events) == event_tuples(pure_events)
                got = Utf8Decoder().decode_lines(b"", data, ord("\n"), len(data))
                assert got is not None and got.texts == expected.split("\n")[:-1]


def same_str(got: str, expected: str) -> bool:
    """Equal, and stored alike: str equality compares kinds, not the ASCII flag, and a
    string wider than its characters would be non-canonical (the C code picks the kind
    before it decodes)."""
    return (
        got == expected
        and got.isascii() == expected.isascii()
        and sys.getsizeof(got) == sys.getsizeof(expected)
    )


_FOUR_BYTE_INTRUDERS = [
    *(c.encode() for c in ["a", "\n", "é", "€", "\uffff", "\U00010000", "\U0010ffff", "😀"]),
    b"\xf0\x9f\x98", b"\xf0\x9f", b"\xf0", b"\xf4\x8f\xbf", b"\xf3\xbf",
    b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf4\x90\x80\x80",
    b"\xf4\x8f\xbf\xbf", b"\xf5\x80\x80\x80", b"\xf7\xbf\xbf\xbf", b"\xf8\x88\x80\x80",
    b"\xff", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\x80", b"\xe0\x80\x80", b"\x80",
    b"\xbf\xbf\xbf", b"\xf0\x9f\x98\x80\x80",
]  # fmt: skip


def test_runs_of_four_byte_characters_with_intruders_at_every_alignment() -> None:
    """The C loop takes a run of four-byte characters four at a time (one 16-byte load),
    then one at a time (one 32-bit load): one mask for the lead and continuation bits,
    one range check for F0's overlong forms and F4 90.. up.  What breaks a run may sit
    at any position of a block, and a chunk may end anywhere inside it."""
    runs = ["😀", "\U00010000", "\U0010ffff", "\U0001f3fb", "\U000e0001"]
    for run in runs:
        unit = run.encode()
        for intruder in _FOUR_BYTE_INTRUDERS:
            for k in range(9):
                data = unit * k + intruder + unit * 9 + b"\n" + unit * k + intruder
                expected = data.decode("utf-8", "replace")
                events: list[Malformed] = []
                decoder = Utf8Decoder(on_malformed=events.append)
                assert same_str(decoder.decode(data, True), expected), (run, intruder, k)
                with pure_python():
                    pure_events: list[Malformed] = []
                    Utf8Decoder(on_malformed=pure_events.append).decode(data, True)
                assert event_tuples(events) == event_tuples(pure_events)
                assert same_str(Utf8Decoder("ignore").decode(data, True),
                                data.decode("utf-8", "ignore"))  # fmt: skip
                got = Utf8Decoder().decode_lines(b"", data, ord("\n"), len(data))
                assert got is not None and got.texts == expected.split("\n")[:-1]
            data = unit * 2 + intruder + unit * 2
            expected = data.decode("utf-8", "replace")
            for cut in range(len(data) + 1):
                decoder = Utf8Decoder()
                got = decoder.decode(data[:cut]) + decoder.decode(data[cut:], True)
                assert got == expected, (run, intruder, cut)


_LONE_TWO_BYTE = ["é", "ß", "\u0080", "\u00ff", "\u0100", "ж", "\u07ff"]
_AFTER_LONE = [
    *(c.encode() for c in ["a", "\n", "é", "€", "😀"]),
    b"\xc3", b"\xc3(", b"\x80", b"\xc0\x80", b"\xe0\x80\x80", b"\xff", b"\xf0\x9f\x98",
]  # fmt: skip


def test_lone_two_byte_characters_among_ascii_at_every_alignment() -> None:
    """The C loop that copies ASCII 16 bytes at a time decodes a lone two-byte character
    between two ASCII stretches itself (European text) and leaves everything else to the
    dispatch: a character at any place of a block, what follows it (ASCII, a run, a
    malformed unit, a cut sequence), in every kind of string, and every chunk end."""
    for lone in _LONE_TWO_BYTE:
        for after in _AFTER_LONE:
            for k in range(34):
                data = b"x" * k + lone.encode() + after + b"y" * k + lone.encode() + b"z" * 20
                expected = data.decode("utf-8", "replace")
                events: list[Malformed] = []
                decoder = Utf8Decoder(on_malformed=events.append)
                assert same_str(decoder.decode(data, True), expected), (lone, after, k)
                with pure_python():
                    pure_events: list[Malformed] = []
                    Utf8Decoder(on_malformed=pure_events.append).decode(data, True)
                assert event_tuples(events) == event_tuples(pure_events)
                assert same_str(Utf8Decoder("ignore").decode(data, True),
                                data.decode("utf-8", "ignore"))  # fmt: skip
            data = b"x" * 16 + lone.encode() + after + b"y" * 9 + lone.encode() + b"z" * 17
            expected = data.decode("utf-8", "replace")
            for cut in range(len(data) + 1):
                decoder = Utf8Decoder()
                got = decoder.decode(data[:cut]) + decoder.decode(data[cut:], True)
                assert got == expected, (lone, after, cut)


_RUN_JOINERS = [
    *(c.encode() for c in [" ", "\n", "\u200d", "\ufe0f", "\u0800", "\uffff", "é"]),
    b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xe2\x80", b"\xe2", b"\x80",
    b"  ", b"\xc0\x80",
]  # fmt: skip
_RUN_FOLLOWERS = [
    *(c.encode() for c in ["a", "é", "ж", "日", "😀", "\U0010ffff"]),
    b"\xf0\x9f\x98", b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
    b"\xc3", b"\xe6\x97", b"\xff",
]  # fmt: skip


def test_runs_go_on_across_a_space_or_a_joiner_and_emoji_among_words() -> None:
    """A run of two-, three- or four-byte characters goes on across one ASCII byte (the
    space between two words), a four-byte run also across a three-byte character (a
    joiner, a variation selector), and the ASCII loop decodes a run of emoji between two
    words itself: whatever sits in between or after (a malformed unit, a cut sequence),
    at any place of a block, gives the same text, events and string kind as the
    pure-Python decoder."""
    for run in ["ж", "日", "😀", "\U0010ffff"]:
        unit = run.encode()
        for joiner in _RUN_JOINERS:
            for follower in _RUN_FOLLOWERS:
                for k in (0, 1, 3, 13, 16):
                    for count in (1, 2, 5):
                        data = (
                            b"x" * k + unit * count + joiner + follower + unit * count
                            + b" ok " + unit + follower + b"w" * 17
                        )  # fmt: skip
                        expected = data.decode("utf-8", "replace")
                        events: list[Malformed] = []
                        decoder = Utf8Decoder(on_malformed=events.append)
                        got = decoder.decode(data, True)
                        assert same_str(got, expected), (run, joiner, follower, k, count)
                        with pure_python():
                            pure_events: list[Malformed] = []
                            Utf8Decoder(on_malformed=pure_events.append).decode(data, True)
                        assert event_tuples(events) == event_tuples(pure_events)
                        assert same_str(Utf8Decoder("ignore").decode(data, True),
                                        data.decode("utf-8", "ignore"))  # fmt: skip
            data = b"x" * 20 + unit * 3 + joiner + unit * 2 + b" ok " + unit + b"w" * 20
            expected = data.decode("utf-8", "replace")
            for cut in range(len(data) + 1):
                decoder = Utf8Decoder()
                got = decoder.decode(data[:cut]) + decoder.decode(data[cut:], True)
                assert got == expected, (run, joiner, cut)


def test_a_prefix_completed_by_the_next_chunk_then_a_raising_callback() -> None:
    """A held prefix and the first bytes of the next chunk make one character, which the
    C scanner puts first without copying the chunk behind the prefix; when a callback
    then raises, where it stopped and the text before it are still those of pending +
    chunk: both decoders go on identically."""
    whole = "€😀ж".encode() + b"ab\xffcd\xc3(\xed\xa0\x80" + "日".encode() * 3
    for cut in (1, 2, 4, 5, 6, 8):  # inside €, inside 😀, inside ж
        for fail_at in (0, 1, 2, 9):
            outputs: list[list[object]] = []
            for accelerated in (True, False):
                seen: list[Malformed] = []

                def callback(
                    event: Malformed, seen: list[Malformed] = seen, fail_at: int = fail_at
                ) -> None:
                    seen.append(event)
                    if len(seen) == fail_at + 1:
                        raise KeyError("stop")

                with use_accelerator(accelerated):
                    decoder = Utf8Decoder(on_malformed=callback)
                out: list[object] = []
                for chunk, final in ((whole[:cut], False), (whole[cut:], False), (b"", True)):
                    try:
                        out.append(decoder.decode(chunk, final))
                    except KeyError:
                        out.append(("raised", decoder.position, decoder.getstate()))
                out.append(decoder.decode(b"", True))
                out.append(event_tuples(seen))
                out.append(decoder.statistics())
                outputs.append(out)
            assert outputs[0] == outputs[1], (cut, fail_at)


@pytest.mark.parametrize("seed", range(8))
def test_long_runs_of_one_sequence_length_with_random_damage(seed: int) -> None:
    """Runs long enough for the block kernels (four characters per load) in every
    script width, a few bytes damaged anywhere, any chunk size: against codecs and the
    pure decoder, events included."""
    import random

    rng = random.Random(seed)
    alphabets = [
        [chr(c) for c in range(0x400, 0x450)],
        [chr(c) for c in range(0x4E00, 0x4F00)] + ["\ud7ff", "\ue000", "\uffff", "\u0800"],
        [chr(c) for c in range(0x1F300, 0x1F400)] + ["\U00010000", "\U0010ffff"],
    ]
    text = "".join(
        "".join(rng.choice(rng.choice(alphabets)) for _ in range(rng.randrange(1, 40)))
        + rng.choice(["", " ", "\n", "a"])
        for _ in range(400)
    )
    raw = bytearray(text.encode())
    for _ in range(rng.choice([0, 3, 40])):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    data = bytes(raw)
    size = rng.choice([7, 16, 255, 4096, len(data)])
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    fast, pure, fast_events, pure_events = make_pair()
    peer = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in chunks:
        got = fast.decode(chunk)
        expected = peer.decode(chunk)
        assert same_str(got, expected)
        assert pure.decode(chunk) == expected
    assert fast.decode(b"", True) == pure.decode(b"", True) == peer.decode(b"", True)
    assert event_tuples(fast_events) == event_tuples(pure_events)


@pytest.mark.parametrize(
    ("head", "bad"),
    [
        (head, bad)
        for head in ["", "a", "é", "ÿ", "€", "日", "😀", "é😀"]
        for bad in [b"\x80", b"\xbf\x80", b"\xc0", b"\xc1\xbf", b"\xc3", b"\xe2\x82",
                    b"\xf0\x9f\x98", b"\xff", b"\xed\xa0\x80"]
    ],
)  # fmt: skip
def test_malformed_units_break_the_guessed_kind_and_length(head: str, bad: bytes) -> None:
    """The string is allocated before decoding, its kind from the largest byte and its
    length from the bytes that start a character.  A replacement wider than the guess
    (U+FFFD among Latin-1) widens it, lone continuation bytes (a character each, with no
    lead) grow it, and a guess left unused (the wide sequences all malformed and
    dropped) is narrowed: every result equals CPython's, stored alike."""
    for n in (1, 2, 7, 40):
        for repeat in (1, 3, 50):
            data = (head * n).encode() + bad * repeat + (head * n).encode() + bad
            for errors in ("replace", "ignore", "backslashreplace", "surrogateescape"):
                expected = data.decode("utf-8", errors)
                got = Utf8Decoder(errors).decode(data, True)
                assert same_str(got, expected), (head, bad, n, repeat, errors)
                with pure_python():
                    assert Utf8Decoder(errors).decode(data, True) == expected


def test_a_replacement_wider_than_the_text_widens_the_string() -> None:
    # Through the decoder the constant replacement is U+FFFD or nothing; the C scanner
    # takes any one character, so a supplementary one widens UCS-2 text to UCS-4.
    units_type = type(Utf8Decoder()._scanner)
    for text in ("abc", "é", "€ж"):
        data = text.encode() + b"\xff" + text.encode()
        got, pending = units_type("😀", None).feed(b"", data, True, len(data))
        assert pending == b""
        assert same_str(got, text + "😀" + text)


def test_a_decoder_keeps_no_buffer_and_peaks_within_twice_the_chunk() -> None:
    """Memory: nothing retained after a call; while decoding, at most twice the chunk
    beyond the output (DESIGN.md), in fact much less."""
    chunk = "é€😀日".encode() * (1 << 16)  # 768 KiB, wider than any allocator cache
    # Each measured call decodes one chunk: the first with nothing held, the second after
    # a held prefix (日 cut after two bytes) that its first byte completes.
    for before_it, data in ((chunk, chunk), (chunk[:-1], chunk[-1:] + chunk[:-1])):
        decoder = Utf8Decoder()
        decoder.decode(before_it)
        gc.collect()
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            text = decoder.decode(data)
            after, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        output = sys.getsizeof(text)
        assert after - before <= output + 4096, "the decoder kept memory after the call"
        assert peak - before <= output + 2 * len(data)
        # Neither a scratch array nor a copy of the chunk behind a held prefix: the
        # string itself, with some room for lone continuation bytes, is all there is.
        assert peak - before <= output + len(data) // 8
        del text


def test_offsets_past_63_bits_are_refused_by_the_c_line_cutter() -> None:
    # The decoder leaves the accelerator well before 2**63 (both paths then accept any
    # offset); the C code itself refuses arithmetic that would overflow (UBSan).
    units = decoder_module.accelerator().Units("\ufffd", None)
    with pytest.raises(OverflowError):
        units.lines(b"", b"a\nb\n", 2**63 - 3, 10, 100)
    assert units.lines(b"", b"a\nb\n", 2**63 - 5, 10, 100) == (
        ["a", "b"],
        [2**63 - 5, 2**63 - 3, 2**63 - 1],
    )
    assert isinstance(Utf8Decoder(start_offset=2**62)._scanner, PyScanner)
    assert not isinstance(Utf8Decoder(start_offset=2**62 - 1)._scanner, PyScanner)


def test_the_pure_fast_path_agrees_at_its_edges() -> None:
    """The pure decoder decodes a clean chunk itself (CPython's strict decoder, no
    scanner frame).  Where that stops (a malformed unit, a surrogate's start ED A0..BF
    cut by the chunk's end, a held prefix at the end, the dirty window after damage, a
    memoryview) the scanner decides: the C decoder agrees call by call."""
    script: list[tuple[bytes | memoryview, bool]] = [
        (b"plain", False),
        (b"caf\xc3", False),
        (b"\xa9 \xe2\x82", False),
        (b"\xac", False),
        (b"x\xed", False),
        (b"\xa0\x80 after", False),
        (b"ab\xed\xa0", False),
        (b"z", False),
        (memoryview(b"view \xe2\x82\xac"), False),
        (b"clean " * 20, False),
        (b"\xff bad", False),
        (b"dirty window " * 10, False),
        (b"\xf0\x9f\x98", False),
        (b"", True),
        (b"again \xc3", True),
    ]
    fast, pure, fast_events, pure_events = make_pair(start_offset=7)
    for chunk, final in script:
        assert fast.decode(chunk, final) == pure.decode(chunk, final), chunk
        assert fast.getstate() == pure.getstate()
        assert fast.position == pure.position
        assert fast.statistics() == pure.statistics()
    assert event_tuples(fast_events) == event_tuples(pure_events)
    assert len(pure_events) == 8  # ED A0 80: three units; ED A0 + z: two; FF; two cut ends


def test_a_callback_cannot_decode_with_its_own_decoder_on_the_fast_path() -> None:
    """The pure fast path does not bypass the refusal of a call from inside the
    decoder's own callback (the scanner is dirty while it reports a unit)."""
    outputs = []
    for accelerated in (True, False):
        refused: list[str] = []
        decoders: list[Utf8Decoder] = []

        def callback(
            event: Malformed, refused: list[str] = refused, decoders: list[Utf8Decoder] = decoders
        ) -> None:
            try:
                decoders[0].decode(b"clean")
            except RuntimeError as exc:
                refused.append(str(exc))

        with use_accelerator(accelerated):
            decoders.append(Utf8Decoder(on_malformed=callback))
        decoder = decoders[0]
        texts = [decoder.decode(b"ok \xff ok"), decoder.decode(b"clean")]
        outputs.append((texts, refused, decoder.statistics(), decoder.position))
    assert outputs[0] == outputs[1]
    assert len(outputs[0][1]) == 1
