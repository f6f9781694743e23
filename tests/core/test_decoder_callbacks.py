"""Callbacks that raise, replace themselves, or touch their decoder; offsets of any size.

The behaviour is documented on ``Utf8Decoder`` (``on_malformed``): a raising callback
loses nothing, a replaced one takes effect from the next unit, and inside a callback the
decoder may be read (``statistics()``) but not driven (``RuntimeError``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from _helpers import CORE, chunked, event_tuples
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import DecoderCheckpoint, Malformed, MalformedKind, Utf8Decoder

#: Every test here runs with the C accelerator and in pure Python (conftest).
pytestmark = pytest.mark.usefixtures("implementation")

K = MalformedKind


class Boom(Exception):
    pass


def raising_on(numbers: set[int], events: list[Malformed]) -> Callable[[Malformed], None]:
    """A callback that records every event and raises on the events numbered in ``numbers``."""

    def callback(event: Malformed) -> None:
        events.append(event)
        if len(events) in numbers:
            raise Boom

    return callback


def decode_retrying(decoder: Utf8Decoder, chunks: list[bytes]) -> str:
    """Decode ``chunks`` then the end, going on after each ``Boom``."""
    out: list[str] = []
    for chunk in chunks:
        with contextlib.suppress(Boom):
            out.append(decoder.decode(chunk))
    while True:
        try:
            out.append(decoder.decode(b"", final=True))
        except Boom:
            continue
        return "".join(out)


# -- a raising callback loses nothing -------------------------------------------------


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        ("replace", "a\ufffdb"),
        ("ignore", "ab"),
        ("backslashreplace", "a\\xffb"),
        ("surrogateescape", "a\udcffb"),
        ("optu-8", "a\uefffb"),
        ("strict", "ab"),  # the unit has no text; the callback's exception stands for it
    ],
)
def test_a_raising_callback_keeps_the_units_text(errors: str, expected: str) -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(errors, on_malformed=raising_on({1}, events))
    with pytest.raises(Boom):
        decoder.decode(b"a\xffb")
    assert decoder.decode(b"", final=True) == expected
    assert event_tuples(events) == [(1, b"\xff", K.INVALID_BYTE)]
    assert decoder.statistics().chars_out == len(expected)


def test_a_raising_callback_keeps_a_passed_surrogate_and_a_gap() -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder("surrogatepass", on_malformed=raising_on({1, 2}, events))
    with pytest.raises(Boom):
        decoder.decode(b"a\xed\xa0\x80b")
    decoder.mark_gap()
    with pytest.raises(Boom):
        decoder.decode(b"c")
    assert decoder.decode(b"", final=True) == "a\ud800b\ufffdc"
    assert [e.kind for e in events] == [K.SURROGATE, K.LOST_BYTES]


def test_a_raising_callback_in_a_variant_keeps_the_units_text() -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(variant="wtf-8", on_malformed=raising_on({1}, events))
    # A WTF-8 surrogate pair is malformed in both halves.
    with pytest.raises(Boom):
        decoder.decode(b"a\xed\xa0\x80\xed\xb0\x80b")
    assert decoder.decode(b"", final=True) == "a\ufffd\ufffdb"
    assert [e.offset for e in events] == [1, 4]


@CORE
@given(
    case=chunked(),
    errors=st.sampled_from(["replace", "ignore", "surrogateescape", "backslashreplace"]),
    raising=st.sets(st.integers(1, 12), max_size=6),
)
def test_raising_callbacks_give_the_same_text_and_events(
    case: tuple[bytes, list[bytes]], errors: str, raising: set[int]
) -> None:
    whole, chunks = case
    events: list[Malformed] = []
    decoder = Utf8Decoder(errors, on_malformed=raising_on(raising, events))
    assert decode_retrying(decoder, chunks) == whole.decode("utf-8", errors)
    calm: list[Malformed] = []
    Utf8Decoder(errors, on_malformed=calm.append).decode(whole, final=True)
    assert event_tuples(events) == event_tuples(calm)
    stats = decoder.statistics()
    assert stats.malformed_total == len(calm)
    assert stats.bytes_fed == len(whole)
    assert stats.chars_out == len(whole.decode("utf-8", errors))


# -- replacing the callback from inside it --------------------------------------------


def test_a_callback_replaced_from_inside_takes_effect_from_the_next_unit() -> None:
    first: list[Malformed] = []
    second: list[Malformed] = []
    decoder: Utf8Decoder

    def switch(event: Malformed) -> None:
        first.append(event)
        decoder.on_malformed = second.append

    decoder = Utf8Decoder(on_malformed=switch)
    assert decoder.decode(b"\xff\xfea\x80", final=True) == "\ufffd\ufffda\ufffd"
    assert [e.offset for e in first] == [0]
    assert [e.offset for e in second] == [1, 3]
    stats = decoder.statistics()
    assert stats.malformed_total == 3
    assert stats.chars_out == 4
    assert decoder.on_malformed == second.append


def test_a_callback_removed_from_inside_keeps_the_counts() -> None:
    seen: list[Malformed] = []
    decoder: Utf8Decoder

    def once(event: Malformed) -> None:
        seen.append(event)
        decoder.on_malformed = None

    decoder = Utf8Decoder(on_malformed=once)
    assert decoder.decode(b"\xff\xfe\xfd") == "\ufffd" * 3
    assert len(seen) == 1
    assert decoder.statistics().malformed_total == 3
    assert decoder.statistics().chars_out == 3


# -- the decoder inside its own callback ----------------------------------------------


def _touch(decoder: Utf8Decoder, action: str) -> None:
    if action == "decode":
        decoder.decode(b"\xff")
    elif action == "decode_bytearray":
        decoder.decode(bytearray(b"x"))
    elif action == "mark_gap":
        decoder.mark_gap()
    elif action == "reset":
        decoder.reset()
    elif action == "setstate":
        decoder.setstate((b"", 0))
    elif action == "getstate":
        decoder.getstate()
    else:
        decoder.checkpoint()


@pytest.mark.parametrize(
    "action",
    ["decode", "decode_bytearray", "mark_gap", "reset", "setstate", "getstate", "checkpoint"],
)
@pytest.mark.parametrize("errors", ["replace", "surrogateescape"])
def test_driving_the_decoder_from_its_callback_is_refused(action: str, errors: str) -> None:
    refusals: list[str] = []
    decoder: Utf8Decoder

    def meddle(event: Malformed) -> None:
        try:
            _touch(decoder, action)
        except RuntimeError as exc:
            refusals.append(str(exc))

    decoder = Utf8Decoder(errors, on_malformed=meddle)
    expected = b"ab\xffc\xfe".decode("utf-8", errors)
    assert decoder.decode(b"ab\xffc\xfe") == expected
    assert len(refusals) == 2
    assert "inside its own on_malformed callback" in refusals[0]
    # The refused calls changed nothing.
    assert decoder.position == 5
    assert decoder.statistics().malformed_total == 2
    assert decoder.statistics().chars_out == len(expected)
    assert decoder.decode(b"d", final=True) == "d"


def test_statistics_inside_a_callback() -> None:
    seen: list[tuple[int, int, int, int]] = []
    decoder: Utf8Decoder

    def look(event: Malformed) -> None:
        stats = decoder.statistics()
        seen.append((event.offset, stats.malformed_total, stats.bytes_fed, stats.chars_out))

    decoder = Utf8Decoder(on_malformed=look)
    assert decoder.decode(b"abc") == "abc"
    assert decoder.decode(b"\xffx\x80") == "\ufffdx\ufffd"
    # Units up to and including the one reported; the whole chunk fed; the characters
    # of the calls that returned.
    assert seen == [(3, 1, 6, 3), (5, 2, 6, 3)]
    assert decoder.statistics().chars_out == 6


def test_a_callback_may_run_another_decoder_of_the_same_kind() -> None:
    inner = Utf8Decoder()
    texts: list[str] = []
    outer = Utf8Decoder(on_malformed=lambda event: texts.append(inner.decode(b"z\xff")))
    assert outer.decode(b"a\xffb\xfe") == "a\ufffdb\ufffd"
    assert texts == ["z\ufffd", "z\ufffd"]


# -- offsets of any size ---------------------------------------------------------------


@pytest.mark.parametrize("start", [2**62 - 3, 2**63 - 2, 2**63 + 5, 2**80])
def test_offsets_past_64_bits(start: int) -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(start_offset=start, on_malformed=events.append)
    assert decoder.decode(b"ab\xffcd\xe2\x82") == "ab\ufffdcd"
    assert decoder.decode(b"\xff", final=True) == "\ufffd\ufffd"
    assert event_tuples(events) == [
        (start + 2, b"\xff", K.INVALID_BYTE),
        (start + 5, b"\xe2\x82", K.INCOMPLETE_SEQUENCE),
        (start + 7, b"\xff", K.INVALID_BYTE),
    ]
    assert decoder.position == start + 8
    decoder.mark_gap(lost=2**64)
    assert decoder.decode(b"x", final=True) == "\ufffdx"
    assert decoder.position == start + 9 + 2**64
    restored = Utf8Decoder.from_checkpoint(
        DecoderCheckpoint.from_json(decoder.checkpoint().to_json())
    )
    assert restored.position == decoder.position
    assert restored.statistics() == decoder.statistics()
