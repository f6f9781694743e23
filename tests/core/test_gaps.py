"""``mark_gap()`` and the self-synchronisation bound (DESIGN.md section 4)."""

from __future__ import annotations

import pytest
from _helpers import (
    CORE,
    K,
    Unit,
    char_spans,
    cut_randomly,
    event_tuples,
    feed,
    reference_decode,
)
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import Malformed, Utf8DecodeError, Utf8Decoder

#: Every test here runs with the C accelerator and in pure Python (conftest).
pytestmark = pytest.mark.usefixtures("implementation")


def _decoder(**kwargs: object) -> tuple[Utf8Decoder, list[Malformed]]:
    events: list[Malformed] = []
    return Utf8Decoder(on_malformed=events.append, **kwargs), events  # type: ignore[arg-type]


# -- examples ---------------------------------------------------------------------------


def test_gap_inside_a_held_partial_sequence() -> None:
    decoder, events = _decoder()
    assert decoder.decode(b"a\xe2\x82") == "a"
    decoder.mark_gap()
    assert "".join(feed(decoder, [b"b"])) == "\ufffdb"
    assert event_tuples(events) == [(1, b"\xe2\x82", K.LOST_BYTES)]


def test_gap_swallows_the_rest_of_the_broken_character() -> None:
    decoder, events = _decoder()
    assert decoder.decode(b"a\xe2") == "a"
    decoder.mark_gap()
    assert "".join(feed(decoder, [b"\x82", b"\xacb"])) == "\ufffdb"
    assert event_tuples(events) == [(1, b"\xe2\x82\xac", K.LOST_BYTES)]


def test_gap_takes_at_most_three_continuation_bytes() -> None:
    decoder, events = _decoder()
    decoder.mark_gap()
    assert "".join(feed(decoder, [b"\x80\x80\x80\x80z"])) == "\ufffd\ufffdz"
    assert event_tuples(events) == [
        (0, b"\x80\x80\x80", K.LOST_BYTES),
        (3, b"\x80", K.UNEXPECTED_CONTINUATION),
    ]


def test_held_prefix_and_three_continuation_bytes_make_one_gap() -> None:
    decoder, events = _decoder()
    assert decoder.decode(b"\xe2") == ""
    decoder.mark_gap()
    assert "".join(feed(decoder, [b"\x80\x80", b"\x80\x80"])) == "\ufffd\ufffd"
    assert event_tuples(events) == [
        (0, b"\xe2\x80\x80\x80", K.LOST_BYTES),
        (4, b"\x80", K.UNEXPECTED_CONTINUATION),
    ]


@pytest.mark.parametrize(
    ("data", "expected_text", "gap_bytes"),
    [
        (b"\x80\xbfxyz", "\ufffdxyz", b"\x80\xbf"),  # joined inside a 3-byte character
        (b"\xa9 caf\xc3\xa9", "\ufffd café", b"\xa9"),
        (b"xyz", "\ufffdxyz", b""),  # joined at a character boundary: still one gap
        (b"", "\ufffd", b""),
    ],
)
def test_stream_joined_mid_way_starts_with_a_gap(
    data: bytes, expected_text: str, gap_bytes: bytes
) -> None:
    for cut in range(len(data) + 1):
        decoder, events = _decoder(start_offset=4096)
        decoder.mark_gap()
        assert "".join(feed(decoder, [data[:cut], data[cut:]])) == expected_text
        assert event_tuples(events) == [(4096, gap_bytes, K.LOST_BYTES)]
        assert decoder.position == 4096 + len(data)


def test_gap_skip_emits_nothing_but_reports_the_gap() -> None:
    decoder, events = _decoder(gap="skip", start_offset=10)
    decoder.mark_gap()
    assert "".join(feed(decoder, [b"\x80\xbfxyz"])) == "xyz"
    assert event_tuples(events) == [(10, b"\x80\xbf", K.LOST_BYTES)]
    assert decoder.statistics().gaps == 1
    assert decoder.statistics().malformed == {K.LOST_BYTES: 1}


def test_gap_policy_is_validated() -> None:
    with pytest.raises(ValueError):
        Utf8Decoder(gap="drop")


def test_consecutive_gaps_merge() -> None:
    decoder, events = _decoder()
    assert decoder.decode(b"ab\xf0\x9f") == "ab"
    decoder.mark_gap()
    decoder.mark_gap(lost=5)
    assert decoder.decode(b"") == ""
    decoder.mark_gap()
    assert "".join(feed(decoder, [b"\x98\x80cd"])) == "\ufffdcd"
    assert event_tuples(events) == [(2, b"\xf0\x9f\x98\x80", K.LOST_BYTES)]
    assert decoder.statistics().gaps == 1
    assert decoder.position == 4 + 5 + 4


def test_lost_advances_position_and_later_offsets() -> None:
    decoder, events = _decoder()
    assert decoder.decode(b"ab") == "ab"
    decoder.mark_gap(lost=10)
    assert decoder.position == 12
    assert "".join(feed(decoder, [b"c\xff"])) == "\ufffdc\ufffd"
    assert event_tuples(events) == [(12, b"", K.LOST_BYTES), (13, b"\xff", K.INVALID_BYTE)]
    stats = decoder.statistics()
    assert stats.lost_bytes_declared == 10
    assert stats.bytes_fed == 4
    assert stats.gaps == 1


def test_mark_gap_rejects_a_negative_count() -> None:
    with pytest.raises(ValueError):
        Utf8Decoder().mark_gap(lost=-1)


def test_gap_at_the_end_of_the_stream() -> None:
    decoder, events = _decoder()
    assert decoder.decode(b"a\xe2") == "a"
    decoder.mark_gap()
    assert decoder.decode(b"", final=True) == "\ufffd"
    assert event_tuples(events) == [(1, b"\xe2", K.LOST_BYTES)]  # not TRUNCATED_AT_END


def test_gap_between_malformed_units() -> None:
    decoder, events = _decoder()
    assert decoder.decode(b"\xff\xe0\x80") == "\ufffd" * 3
    decoder.mark_gap()
    assert "".join(feed(decoder, [b"\x80\xc0"])) == "\ufffd\ufffd"
    assert event_tuples(events) == [
        (0, b"\xff", K.INVALID_BYTE),
        (1, b"\xe0", K.OVERLONG),
        (2, b"\x80", K.UNEXPECTED_CONTINUATION),
        (3, b"\x80", K.LOST_BYTES),
        (4, b"\xc0", K.OVERLONG),
    ]


# -- the bound, as a property -----------------------------------------------------------


def _expected_around_gap(text: str, encoded: bytes, i: int, j: int) -> tuple[str, str, int, int]:
    """Characters ending at or before i; characters starting at or after j; and where the
    gap's bytes start (the held partial character) and end (the skipped continuations)."""
    spans = char_spans(encoded)
    assert len(spans) == len(text)
    before = "".join(c for c, (_, end) in zip(text, spans, strict=True) if end <= i)
    after = "".join(c for c, (start, _) in zip(text, spans, strict=True) if start >= j)
    held_from = next((s for s, e in spans if s < i < e), i)
    skipped_to = min((s for s, _ in spans if s >= j), default=len(encoded))
    return before, after, held_from, skipped_to


@CORE
@given(st.text(max_size=25), st.data(), st.sampled_from(["replace", "skip"]), st.booleans())
def test_resynchronisation_bound(
    text: str, draw: st.DataObject, gap_policy: str, declare_lost: bool
) -> None:
    encoded = text.encode("utf-8")
    i = draw.draw(st.integers(0, len(encoded)), label="i")
    j = draw.draw(st.integers(i, len(encoded)), label="j")
    before, after, held_from, skipped_to = _expected_around_gap(text, encoded, i, j)
    lost = j - i if declare_lost else None
    first = cut_randomly(draw.draw, encoded[:i])
    second = cut_randomly(draw.draw, encoded[j:])
    gap_text = "\ufffd" if gap_policy == "replace" else ""

    decoder, events = _decoder(gap=gap_policy)
    out = "".join(feed(decoder, first, flush=False))
    assert out == before  # nothing after the last complete character is emitted yet
    decoder.mark_gap(lost)
    out += "".join(feed(decoder, second))

    assert out == before + gap_text + after
    gap_bytes = encoded[held_from:i] + encoded[j:skipped_to]
    resume = j if declare_lost else i  # the position right after the gap
    offset = held_from if held_from < i else resume
    assert event_tuples(events) == [(offset, gap_bytes, K.LOST_BYTES)]
    assert decoder.position == len(encoded) - (j - i) + (lost or 0)
    stats = decoder.statistics()
    assert (stats.gaps, stats.lost_bytes_declared) == (1, lost or 0)
    assert stats.malformed == {K.LOST_BYTES: 1}
    assert stats.chars_out == len(out)


@CORE
@given(st.text(max_size=25), st.data(), st.integers(0, 10**9))
def test_joining_mid_way_is_the_bound_at_zero(
    text: str, draw: st.DataObject, start_offset: int
) -> None:
    encoded = text.encode("utf-8")
    k = draw.draw(st.integers(0, len(encoded)), label="k")
    _, after, _, skipped_to = _expected_around_gap(text, encoded, k, k)
    decoder, events = _decoder(start_offset=start_offset + k)
    decoder.mark_gap()
    out = "".join(feed(decoder, cut_randomly(draw.draw, encoded[k:])))
    assert out == "\ufffd" + after
    assert event_tuples(events) == [(start_offset + k, encoded[k:skipped_to], K.LOST_BYTES)]


# -- anything at all, with gaps: no crash, bounded state --------------------------------

_ops = st.lists(
    st.one_of(
        st.binary(max_size=12).map(lambda b: ("feed", b)),
        st.one_of(st.none(), st.integers(0, 100)).map(lambda n: ("gap", n)),
        st.just(("final", b"")),
    ),
    max_size=20,
)


@CORE
@given(_ops, st.sampled_from(["replace", "skip"]))
def test_any_sequence_of_chunks_and_gaps_is_safe(
    ops: list[tuple[str, object]], gap_policy: str
) -> None:
    decoder, events = _decoder(gap=gap_policy)
    expected_position = 0
    for op, arg in ops:
        if op == "gap":
            assert arg is None or isinstance(arg, int)
            decoder.mark_gap(arg)
            expected_position += arg or 0
        else:
            assert isinstance(arg, bytes)
            decoder.decode(arg, final=op == "final")
            expected_position += len(arg)
        # At most a 3-byte partial character, plus (while a gap is open) up to three
        # continuation bytes kept for the LOST_BYTES event.
        assert decoder.buffered <= 6
        assert decoder.position == expected_position
    decoder.decode(b"", final=True)
    assert decoder.buffered == 0
    assert sum(e.kind is K.LOST_BYTES for e in events) == decoder.statistics().gaps
    assert all(len(e.data) <= (6 if e.kind is K.LOST_BYTES else 3) for e in events)
    assert [e.offset for e in events] == sorted(e.offset for e in events)


def test_gap_after_a_strict_error_comes_after_the_unread_rest() -> None:
    # The rest of a failed call was fed before the gap, so its text comes first.
    decoder = Utf8Decoder("strict")
    with pytest.raises(Utf8DecodeError):
        decoder.decode(b"\xffab")
    decoder.mark_gap()
    assert decoder.decode(b"cd", final=True) == "ab\ufffdcd"


@CORE
@given(
    st.binary(max_size=30),
    st.binary(max_size=30),
    st.data(),
    st.one_of(st.none(), st.integers(0, 1000)),
)
def test_single_gap_in_arbitrary_bytes(
    before: bytes, after: bytes, draw: st.DataObject, lost: int | None
) -> None:
    # The gap takes the held proper prefix of the bytes before it and at most three
    # continuation bytes after it; everything else decodes as if on its own.
    head = reference_decode(before, final=False)
    skip = 0
    while skip < min(3, len(after)) and 0x80 <= after[skip] <= 0xBF:
        skip += 1
    resume = len(before) + (lost or 0)
    tail = reference_decode(after[skip:], start_offset=resume + skip)
    gap_offset = len(before) - len(head.held) if head.held else resume
    expected_text = head.render() + "\ufffd" + tail.render()
    expected_events = [
        *head.units,
        Unit(gap_offset, head.held + after[:skip], K.LOST_BYTES),
        *tail.units,
    ]
    decoder, events = _decoder()
    out = "".join(feed(decoder, cut_randomly(draw.draw, before), flush=False))
    decoder.mark_gap(lost)
    out += "".join(feed(decoder, cut_randomly(draw.draw, after)))
    assert out == expected_text
    assert event_tuples(events) == expected_events
    assert decoder.position == resume + len(after)
