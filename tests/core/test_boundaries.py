"""Boundary helpers: splitting anywhere they say is invisible to the decoder."""

from __future__ import annotations

import itertools
import mmap
import re

import pytest
from _helpers import FRAGMENTS, examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from utf8stream import Malformed, MalformedKind, Utf8Decoder
from utf8stream.core.boundaries import (
    char_start,
    cut_at_boundary,
    next_char_start,
    rejoined_event,
    split_points,
    variant_char_start,
)

interesting = st.lists(st.sampled_from(FRAGMENTS), max_size=30).map(b"".join)
any_bytes = st.one_of(st.binary(max_size=64), interesting)


def decode_with_events(data: bytes, start: int = 0) -> tuple[str, list[Malformed]]:
    events: list[Malformed] = []
    decoder = Utf8Decoder(start_offset=start, on_malformed=events.append)
    return decoder.decode(data, final=True), events


def decode_pieces(data: bytes, points: list[int]) -> tuple[str, list[Malformed]]:
    """Decode each piece to its own end, as a parallel worker would, then rejoin events."""
    text, events = "", []
    for a, b in itertools.pairwise(points):
        t, e = decode_with_events(data[a:b], start=a)
        text += t
        next_byte = data[b] if b < len(data) else None
        events += [rejoined_event(ev, next_byte) for ev in e]
    return text, events


@settings(max_examples=examples(400))
@given(any_bytes, st.data())
def test_char_start_is_a_boundary_at_most_three_back(data: bytes, draw: st.DataObject) -> None:
    pos = draw.draw(st.integers(0, len(data)))
    start = char_start(data, pos)
    assert pos - 3 <= start <= pos
    assert decode_pieces(data, [0, start, len(data)]) == decode_with_events(data)


@settings(max_examples=examples(400))
@given(any_bytes, st.data())
def test_next_char_start_is_the_first_boundary_after(data: bytes, draw: st.DataObject) -> None:
    pos = draw.draw(st.integers(0, len(data)))
    nxt = next_char_start(data, pos)
    assert (nxt == pos == len(data)) or pos < nxt <= pos + 4
    assert decode_pieces(data, [0, nxt, len(data)]) == decode_with_events(data)
    # Nothing strictly between pos and nxt is a boundary.
    for q in range(pos + 1, nxt):
        assert char_start(data, q) < q


@settings(max_examples=examples(300))
@given(st.text(max_size=40), st.integers(0, 200))
def test_cut_never_breaks_a_character(text: str, budget: int) -> None:
    data = text.encode()
    cut = cut_at_boundary(data, budget)
    assert cut <= min(budget, len(data))
    assert data[:cut].decode("utf-8") == text[: len(data[:cut].decode("utf-8"))]
    if budget >= len(data):
        assert cut == len(data)
    else:
        # The next whole character would not have fit.
        assert next_char_start(data, cut) > budget


@settings(max_examples=examples(300))
@given(any_bytes, st.integers(1, 9))
def test_split_points_decode_like_the_whole(data: bytes, pieces: int) -> None:
    points = split_points(data, pieces)
    assert len(points) == pieces + 1
    assert points[0] == 0 and points[-1] == len(data)
    assert points == sorted(points)
    assert decode_pieces(data, points) == decode_with_events(data)


def test_examples() -> None:
    euro = "a€b".encode()  # 61 e2 82 ac 62
    assert [char_start(euro, p) for p in range(6)] == [0, 1, 1, 1, 4, 5]
    assert [next_char_start(euro, p) for p in range(6)] == [1, 4, 4, 4, 5, 5]
    assert cut_at_boundary(euro, 3) == 1
    # A run of stray continuation bytes: each is its own unit.
    stray = b"\x80\x80\x80\x80\x80"
    assert [char_start(stray, p) for p in range(5)] == [0, 1, 2, 3, 4]
    # E1 80 80 is a character; the fourth 80 is stray.
    run = b"\xe1\x80\x80\x80"
    assert [char_start(run, p) for p in range(4)] == [0, 0, 0, 3]
    # ED A0 80 is three units: the A0 is not inside the ED unit.
    assert char_start(b"\xed\xa0\x80", 1) == 1


def test_works_on_mmap(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "f.txt"  # type: ignore[operator]
    data = ("žluťoučký kůň 🐴 " * 1000).encode()
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        points = split_points(mm, 7)
    assert decode_pieces(data, points)[0] == data.decode()


def test_bad_arguments() -> None:
    with pytest.raises(IndexError):
        char_start(b"abc", 4)
    with pytest.raises(ValueError):
        split_points(b"abc", 0)
    with pytest.raises(ValueError):
        cut_at_boundary(b"abc", -1)


def test_rejoined_event_names_the_kind_from_the_next_byte() -> None:
    cut = Malformed(7, b"\xe0", MalformedKind.TRUNCATED_AT_END)
    assert rejoined_event(cut, 0x80).kind is MalformedKind.OVERLONG
    assert rejoined_event(cut, 0x41).kind is MalformedKind.INCOMPLETE_SEQUENCE
    assert rejoined_event(cut, None) is cut
    surrogate = Malformed(0, b"\xed", MalformedKind.TRUNCATED_AT_END)
    assert rejoined_event(surrogate, 0xA0).kind is MalformedKind.SURROGATE


surrogate_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["😀", "𝄞", "\x00", "é", "\ud800", "\udc00", "\udbff"]),
    ),
    max_size=30,
)


_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _supplementary(pair: re.Match[str]) -> str:
    high, low = (ord(half) for half in pair[0])
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


@settings(max_examples=examples(200))
@given(st.sampled_from(["wtf-8", "cesu-8", "mutf-8"]), surrogate_text, st.integers(1, 9))
@example("wtf-8", "\ud800\udc00", 2)
@example("mutf-8", "\udc00\ud800\udc00\ud800", 3)
def test_variant_split_points_keep_units_together(variant: str, text: str, pieces: int) -> None:
    # A high half directly followed by a low half in a str stands for one supplementary
    # character: every variant writes it as that character (WTF-8 as the 4-byte form,
    # F0 90 80 80 for "\ud800\udc00"), so it decodes as that character.
    expected = _SURROGATE_PAIR.sub(_supplementary, text)
    if variant == "cesu-8":  # WTF-8 and MUTF-8 write lone halves too, CESU-8 refuses them
        expected = "".join(c for c in expected if not 0xD800 <= ord(c) <= 0xDFFF)
        text = expected
    data = text.encode(variant)
    points = split_points(data, pieces, variant=variant)
    decoded = "".join(
        Utf8Decoder("strict", variant=variant).decode(data[a:b], final=True)
        for a, b in itertools.pairwise(points)
    )
    assert decoded == expected
    for q in range(len(data) + 1):
        assert variant_char_start(data, q, variant) <= q
