"""UTF-8 variants: round trips through the encoder and the decoder, the decoder's state and
checkpoints in the middle of a pair, offsets, lines and the scanner's arguments, against
the reference of ``_variant_reference``."""

from __future__ import annotations

from typing import Any

import pytest
from _helpers import (
    CORE,
    HEAVY,
    K,
    cut_randomly,
    decode_chunks,
    event_tuples,
    feed,
)
from _variant_reference import (
    VARIANTS,
    any_code_points,
    cut_text,
    encode_pieces,
    joined,
    reference_encode,
    text_for,
    variant_bytes,
)
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import DecoderCheckpoint, Malformed, Utf8DecodeError, Utf8Decoder, Utf8Encoder
from utf8stream.core.scanner import PyScanner
from utf8stream.core.variants import get_variant
from utf8stream.core.variantscan import VariantScanner

#: The variants decode over the scanner of either implementation: each test runs on both.
pytestmark = pytest.mark.usefixtures("implementation")

# -- round trips ------------------------------------------------------------------------


@HEAVY
@given(st.sampled_from(VARIANTS), st.data())
def test_round_trip_any_text_any_chunking(variant: str, draw: st.DataObject) -> None:
    text = draw.draw(text_for(variant), label="text")
    expected_bytes = reference_encode(text, variant)
    pieces = cut_text(draw.draw, text)
    data = encode_pieces(pieces, variant)
    assert data == expected_bytes
    back = joined(text)  # no-op unless a surrogate pair was given as two code points
    chunks = cut_randomly(draw.draw, data)
    for way in (chunks, [data], [data[i : i + 1] for i in range(len(data))]):
        assert "".join(feed(Utf8Decoder("strict", variant=variant), way)) == back


@CORE
@given(any_code_points.filter(lambda t: joined(t) == t), st.data())
def test_wtf8_round_trips_every_code_point_sequence_without_pairs(
    text: str, draw: st.DataObject
) -> None:
    # WTF-8 gives back every lone surrogate exactly; only an adjacent high+low pair comes
    # back as the character it stands for (decode(encode(s)) == s for these s).
    data = encode_pieces(cut_text(draw.draw, text), "wtf-8")
    assert (
        "".join(feed(Utf8Decoder("strict", variant="wtf-8"), cut_randomly(draw.draw, data)))
        == text
    )


@CORE
@given(any_code_points, any_code_points, st.data())
def test_wtf8_split_pair_joins_exactly_as_if_together(
    left: str, right: str, draw: st.DataObject
) -> None:
    left += "\ud83d"
    right = "\ude00" + right
    together = Utf8Encoder(variant="wtf-8").encode(left + right, final=True)
    assert b"\xf0\x9f\x98\x80" in together
    encoder = Utf8Encoder(variant="wtf-8")
    first = encoder.encode(left)
    assert encoder.getstate() == 0xD83D and encoder.buffered == 1
    assert (
        first + encoder.encode(right, final=True)
        == together
        == reference_encode(left + right, "wtf-8")
    )
    assert first == reference_encode(left[:-1], "wtf-8")  # everything but the held half


def test_cesu8_and_mutf8_write_supplementary_characters_as_pairs() -> None:
    for variant in ("cesu-8", "mutf-8"):
        assert "😀".encode(variant) == b"\xed\xa0\xbd\xed\xb8\x80"
        assert "\U0010ffff".encode(variant) == b"\xed\xaf\xbf\xed\xbf\xbf"
    assert "\x00".encode("mutf-8") == b"\xc0\x80" == "\x00".encode("utf-8z")
    assert "\x00".encode("cesu-8") == b"\x00"
    assert "😀".encode("utf-8z") == "😀".encode() == "😀".encode("wtf-8")


# -- state: getstate/setstate and checkpoints in the middle of a pair -----------------------


SETTINGS = [
    {"errors": "replace"},
    {"errors": "surrogatepass", "fallback": "latin-1"},  # surrogatepass is strict otherwise
    {"errors": "optu-8"},
    {"errors": "replace", "fallback": "cp1252"},
]


@HEAVY
@given(
    st.sampled_from(["utf-8", "wtf-8", "cesu-8", "mutf-8", "utf-8z"]),
    variant_bytes,
    st.sampled_from(SETTINGS),
    st.data(),
)
def test_state_and_checkpoint_resume_anywhere(
    variant: str, data: bytes, settings: dict[str, str], draw: st.DataObject
) -> None:
    k = draw.draw(st.integers(0, len(data)), label="split")
    options: dict[str, Any] = {"variant": variant, **settings}
    whole, whole_events = decode_chunks([data], **options)
    events: list[Malformed] = []
    first = Utf8Decoder(on_malformed=events.append, **options)
    head = first.decode(data[:k])
    buffered, flags = first.getstate()
    cp = DecoderCheckpoint.from_json(first.checkpoint().to_json())
    resumed = Utf8Decoder.from_checkpoint(cp, on_malformed=events.append)
    tail = resumed.decode(data[k:], final=True)
    assert head + tail == whole
    assert event_tuples(events) == whole_events
    # The codecs contract io.TextIOWrapper relies on: setstate((b"", flags)), then feed
    # the buffered bytes, and the decoder continues as the original would.
    other = Utf8Decoder(**options)
    other.setstate((b"", flags))
    assert head + other.decode(buffered) + other.decode(data[k:], final=True) == whole


def test_a_gap_decides_a_held_high_half() -> None:
    # The high half was complete: a gap after it makes it lone (a character in WTF-8 and
    # MUTF-8, a malformed unit in CESU-8); only what follows it belongs to the gap.
    for variant, expected in (("wtf-8", "a\ud800\ufffdz"), ("cesu-8", "a\ufffd\ufffdz")):
        events: list[Malformed] = []
        decoder = Utf8Decoder(variant=variant, on_malformed=events.append)
        out = decoder.decode(b"a\xed\xa0\x80\xed")
        decoder.mark_gap(5)
        out += decoder.decode(b"\xbf\x80z", final=True)
        assert out == expected
        gap = (4, b"\xed\xbf\x80", K.LOST_BYTES)
        if variant == "cesu-8":
            assert event_tuples(events) == [(1, b"\xed\xa0\x80", K.SURROGATE), gap]
        else:
            assert event_tuples(events) == [gap]


@pytest.mark.parametrize("start", [2**62 - 4, 2**63 - 2, 2**64 + 5])
def test_variant_offsets_past_64_bits(start: int) -> None:
    # The C scanner counts in 64-bit integers: past 2**62 the decoder's variant scanner
    # wraps the Python one, so both implementations accept every offset.
    events: list[Malformed] = []
    decoder = Utf8Decoder(variant="wtf-8", start_offset=start, on_malformed=events.append)
    assert decoder.decode(b"a\xed\xa0\x80\xed\xb0") == "a"
    assert decoder.decode(b"\x80\xff\xed\xa0\x80z", final=True) == "\ufffd\ufffd\ufffd\ud800z"
    assert event_tuples(events) == [
        (start + 1, b"\xed\xa0\x80", K.SURROGATE),
        (start + 4, b"\xed\xb0\x80", K.SURROGATE),
        (start + 7, b"\xff", K.INVALID_BYTE),
    ]
    assert decoder.position == start + 12
    cesu = Utf8Decoder("strict", variant="cesu-8", start_offset=start)
    assert cesu.decode(b"\xed\xa0\xbd\xed\xb8\x80\xc0\x80", final=True) == "\U0001f600\x00"
    with pytest.raises(Utf8DecodeError) as caught:
        cesu.decode(b"\xf0\x9f\x98\x80", final=True)
    assert (caught.value.offset, caught.value.kind) == (start + 8, K.INVALID_BYTE)


def test_a_variant_decoder_leaves_the_lines_to_the_line_engine() -> None:
    # The one-pass line cut of the UTF-8 scanner reads UTF-8; the variant scanner
    # refuses it (the line engine cuts the text of decode()).
    decoder = Utf8Decoder(variant="cesu-8")
    assert decoder.decode_lines(b"", b"a\xc0\x80\nb\n", -1, 100) is None
    assert decoder.position == 0
    scanner = decoder._scanner
    assert scanner is not None
    with pytest.raises(ValueError, match="cuts no lines"):
        scanner.lines(b"", b"a\xc0\x80\nb\n", 0, -1, 100)


def test_the_variant_scanner_checks_its_arguments() -> None:
    # As the UTF-8 scanners do: a mapping scanner needs a callback, a constant is one
    # character or none.
    wtf8 = get_variant("wtf-8")
    with pytest.raises(TypeError, match="maps units"):
        VariantScanner(wtf8, False, None, None, PyScanner)
    with pytest.raises(ValueError, match="one character"):
        VariantScanner(wtf8, False, "ab", None, PyScanner)
    scanner = VariantScanner(wtf8, False, "", None, PyScanner)
    assert scanner.feed(b"a\xed\xa0\x80\xed\xb0\x80\xff", b"", True, 8) == ("a", b"")
    assert scanner.drain()[2] == 2  # the two halves of a WTF-8 pair, as SURROGATE
