"""UTF-8 variants (DESIGN.md section 5): WTF-8, CESU-8, MUTF-8 and UTF-8Z, both directions.

Expected values come from three places that share no code with ``utf8stream``: the
conformance vectors (``variants_vectors.json``), a deliberately slow per-byte reference
decoder and a per-code-point reference encoder written below from the variant rules, and
CPython's codecs for single characters.  The decoder's legacy fallback and the OPTU-8
policy, added with the variants, are tested here too.
"""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path
from typing import Any

import pytest
from _helpers import (
    CORE,
    HEAVY,
    K,
    chunkings,
    cut_randomly,
    decode_chunks,
    event_tuples,
    every_chunking,
    feed,
    strict_loop,
)
from _variant_reference import (
    VARIANTS,
    encode_pieces,
    reference_encode,
    scalar_text,
    variant_bytes,
    variant_reference,
)
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import DecoderCheckpoint, Malformed, Utf8DecodeError, Utf8Decoder

#: The variants decode over the scanner of either implementation: each test runs on both.
pytestmark = pytest.mark.usefixtures("implementation")

# -- the reference itself, against CPython where CPython has the answer ------------------


@CORE
@given(st.binary(max_size=60))
def test_reference_is_cpython_for_utf8(data: bytes) -> None:
    assert variant_reference(data, "utf-8").render() == data.decode("utf-8", "replace")


@CORE
@given(scalar_text)
def test_reference_encoder_matches_cpython_utf16_units(text: str) -> None:
    # CESU-8 is UTF-8 applied to each UTF-16 code unit (Unicode TR #26).
    units = text.encode("utf-16-be")
    one_by_one = "".join(
        chr(int.from_bytes(units[i : i + 2], "big")) for i in range(0, len(units), 2)
    )
    assert reference_encode(text, "cesu-8") == one_by_one.encode("utf-8", "surrogatepass")


# -- the conformance vectors ---------------------------------------------------------------

DIRECTIONS = {
    "both",
    "encode",
    "decode",
    "concatenate",
    "from_ill_formed_utf16",
    "to_ill_formed_utf16",
    "to_utf8_lossy",
    "rule",
    "validate",
}


def _vectors(corpus_dir: Path) -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads((corpus_dir / "variants_vectors.json").read_text())
    return vectors


def _variant_of(vector: dict[str, Any]) -> str:
    """``"cesu-8 (ftfy utf-8-variants)"`` -> ``cesu-8``; ``"mutf8 (TUTOR)"`` -> ``mutf-8``."""
    return codecs.lookup(vector["variant"].split(" (")[0]).name


def _text(code_points: list[str]) -> str:
    return "".join(chr(int(cp, 16)) for cp in code_points)


def _units(text: str) -> list[str]:
    """UTF-16 code units of ``text``, as the vectors spell them (``"D83D"``)."""
    raw = text.encode("utf-16-be", "surrogatepass")
    return [raw[i : i + 2].hex().upper() for i in range(0, len(raw), 2)]


def _decode_all_ways(data: bytes, variant: str, errors: str) -> str:
    """Decode whole, byte by byte and every 2-chunk split; all must agree."""
    results = set()
    for chunks in [*chunkings(data), *([data[:k], data[k:]] for k in range(len(data) + 1))]:
        results.add("".join(feed(Utf8Decoder(errors, variant=variant), chunks)))
    assert len(results) == 1, (data.hex(), results)
    return results.pop()


def _encode_all_ways(text: str, variant: str) -> bytes:
    """Encode whole, character by character and every 2-piece split; all must agree."""
    results = {encode_pieces([text], variant), encode_pieces(list(text), variant)}
    results |= {encode_pieces([text[:k], text[k:]], variant) for k in range(len(text) + 1)}
    assert len(results) == 1, (text, results)
    return results.pop()


def test_every_vector_direction_is_covered(corpus_dir: Path) -> None:
    vectors = _vectors(corpus_dir)
    assert len(vectors) == 150
    assert {v["direction"] for v in vectors} == DIRECTIONS
    assert {_variant_of(v) for v in vectors} == {"wtf-8", "cesu-8", "mutf-8", "utf-8z"}


def test_vectors_both_directions(corpus_dir: Path) -> None:
    checked = 0
    for v in _vectors(corpus_dir):
        if v["direction"] != "both":
            continue
        variant, text, data = (
            _variant_of(v),
            _text(v["code_points"]),
            bytes.fromhex(v["bytes_hex"]),
        )
        assert _encode_all_ways(text, variant) == data, v
        assert _decode_all_ways(data, variant, "strict") == text, v
        assert data.decode(variant) == text and text.encode(variant) == data
        checked += 1
    assert checked == 100


def test_vectors_encode(corpus_dir: Path) -> None:
    for v in _vectors(corpus_dir):
        if v["direction"] == "encode":
            text, data = _text(v["code_points"]), bytes.fromhex(v["bytes_hex"])
            assert _encode_all_ways(text, _variant_of(v)) == data, v
            assert reference_encode(text, _variant_of(v)) == data, v


def test_vectors_decode(corpus_dir: Path) -> None:
    for v in _vectors(corpus_dir):
        if v["direction"] != "decode":
            continue
        variant, data = _variant_of(v), bytes.fromhex(v["bytes_hex"])
        errors = v.get("errors", "strict")
        if "error" in v:  # MUTF-8: a raw 00 is malformed
            with pytest.raises(Utf8DecodeError) as info:
                Utf8Decoder(errors, variant=variant).decode(data, final=True)
            assert (info.value.offset, info.value.kind) == (0, K.INVALID_BYTE)
            with pytest.raises(UnicodeDecodeError):
                data.decode(variant)
            continue
        text = _decode_all_ways(data, variant, errors)
        if "expected_utf16" in v:
            assert _units(text) == v["expected_utf16"], v
        else:
            assert text == v["expected"], v
        assert variant_reference(data, variant).render() == text, v


def test_vectors_validate(corpus_dir: Path) -> None:
    # CESU-8 has no four-byte forms: F0 9F 94 94 is invalid (four units: the lead byte
    # that never occurs and three stray continuation bytes).
    for v in _vectors(corpus_dir):
        if v["direction"] == "validate":
            assert v["expected"] is None
            data = bytes.fromhex(v["bytes_hex"])
            text, events = decode_chunks([data], variant=_variant_of(v))
            assert text == "\ufffd" * 4
            assert [e[2] for e in events] == [K.INVALID_BYTE] + [K.UNEXPECTED_CONTINUATION] * 3
            with pytest.raises(Utf8DecodeError) as info:
                Utf8Decoder("strict", variant=_variant_of(v)).decode(data, final=True)
            assert (info.value.offset, info.value.kind) == (0, K.INVALID_BYTE)


def test_vectors_wtf8_concatenate(corpus_dir: Path) -> None:
    # Wtf8Buf::extend and push_wtf8: a high surrogate at the end of the left part and a
    # low one at the start of the right part are joined.  Here: two encode() calls, and
    # decoding each piece on its own then encoding the pieces one call each.
    checked = 0
    for v in _vectors(corpus_dir):
        if v["direction"] != "concatenate":
            continue
        expected = bytes.fromhex(v["bytes_hex"])
        if "pieces_hex" in v:
            texts = [bytes.fromhex(p).decode("wtf-8") for p in v["pieces_hex"]]
        else:
            texts = [_text(v["left_code_points"]), _text(v["right_code_points"])]
        assert encode_pieces(texts, "wtf-8") == expected, v
        assert encode_pieces(["".join(texts)], "wtf-8") == expected, v
        checked += 1
    assert checked == 15


def test_vectors_wtf8_ill_formed_utf16(corpus_dir: Path) -> None:
    for v in _vectors(corpus_dir):
        data = bytes.fromhex(v.get("bytes_hex", ""))
        if v["direction"] == "from_ill_formed_utf16":
            assert _encode_all_ways(_text(v["utf16"]), "wtf-8") == data
        elif v["direction"] == "to_ill_formed_utf16":
            assert _units(_decode_all_ways(data, "wtf-8", "strict")) == v["utf16"]


def test_vectors_wtf8_lossy_conversion(corpus_dir: Path) -> None:
    # The WTF-8 spec's lossy conversion to UTF-8 turns each surrogate into one U+FFFD;
    # a UTF-8 decoder gives three for the same bytes (maximal subparts).  Both hold.
    for v in _vectors(corpus_dir):
        if v["direction"] == "to_utf8_lossy":
            data = bytes.fromhex(v["bytes_hex"])
            wtf = data.decode("wtf-8")
            assert re.sub("[\ud800-\udfff]", "\ufffd", wtf) == v["expected"]
            assert Utf8Decoder().decode(data, final=True) == v["expected"] + "\ufffd" * 2


def test_vectors_wtf8_rule(corpus_dir: Path) -> None:
    (rule,) = [v for v in _vectors(corpus_dir) if v["direction"] == "rule"]
    assert "ILL-FORMED" in rule["rule"]
    # Every high half followed by every low half: two malformed 3-byte units, while
    # each half alone, and the pair in the other order, decode to the surrogates.
    for lead in range(0xD800, 0xDC00, 0x3F):
        for trail in range(0xDC00, 0xE000, 0x3F):
            high = chr(lead).encode("utf-8", "surrogatepass")
            low = chr(trail).encode("utf-8", "surrogatepass")
            text, events = decode_chunks([high + low], variant="wtf-8")
            assert text == "\ufffd\ufffd"
            assert events == [(0, high, K.SURROGATE), (3, low, K.SURROGATE)]
            assert (low + high).decode("wtf-8") == chr(trail) + chr(lead)
            assert high.decode("wtf-8") + low.decode("wtf-8") == chr(lead) + chr(trail)


# -- decoding: any bytes, any chunking -----------------------------------------------------


@HEAVY
@given(st.sampled_from(VARIANTS), variant_bytes, st.data())
def test_decoding_matches_the_reference_for_any_chunking(
    variant: str, data: bytes, draw: st.DataObject
) -> None:
    ref = variant_reference(data, variant, start_offset=7)
    for chunks in chunkings(data, cut_randomly(draw.draw, data)):
        text, events = decode_chunks(chunks, variant=variant, start_offset=7)
        assert text == ref.render(), (variant, chunks)
        assert events == ref.units, (variant, chunks)


@HEAVY
@given(st.sampled_from(VARIANTS), variant_bytes, st.data())
def test_decoding_is_eager_and_holds_at_most_five_bytes(
    variant: str, data: bytes, draw: st.DataObject
) -> None:
    decoder = Utf8Decoder(variant=variant)
    fed = b""
    out = ""
    for chunk in cut_randomly(draw.draw, data):
        out += decoder.decode(chunk)
        fed += chunk
        ref = variant_reference(fed, variant, final=False)
        assert out == ref.render()
        assert decoder.getstate() == (ref.held, 0)
        assert decoder.buffered == len(ref.held) <= 5


@HEAVY
@given(st.sampled_from(VARIANTS), variant_bytes, st.data())
def test_strict_variants_lose_nothing_but_the_bad_units(
    variant: str, data: bytes, draw: st.DataObject
) -> None:
    ref = variant_reference(data, variant)
    for chunks in chunkings(data, cut_randomly(draw.draw, data)):
        events: list[Malformed] = []
        decoder = Utf8Decoder("strict", variant=variant, on_malformed=events.append)
        text, errors = strict_loop(decoder, chunks, limit=len(data))
        assert text == ref.render("ignore"), (variant, chunks)
        assert [(e.offset, e.malformed.data, e.kind) for e in errors] == ref.units
        assert event_tuples(events) == ref.units
        assert all(e.encoding == variant for e in errors)


@pytest.mark.parametrize(
    ("variant", "data", "units"),
    [
        # CESU-8 and MUTF-8: a four-byte form is a lead byte that never occurs and three
        # stray continuation bytes, like the obsolete five-byte forms in UTF-8.
        ("cesu-8", b"a\xf0\x9f\x98\x80b", [(1, b"\xf0", K.INVALID_BYTE),
                                          (2, b"\x9f", K.UNEXPECTED_CONTINUATION),
                                          (3, b"\x98", K.UNEXPECTED_CONTINUATION),
                                          (4, b"\x80", K.UNEXPECTED_CONTINUATION)]),
        ("mutf-8", b"\xf4\x8f", [(0, b"\xf4", K.INVALID_BYTE),
                                 (1, b"\x8f", K.UNEXPECTED_CONTINUATION)]),
        ("mutf-8", b"a\x00b", [(1, b"\x00", K.INVALID_BYTE)]),
        ("utf-8z", b"\x00", [(0, b"\x00", K.INVALID_BYTE)]),
        ("cesu-8", b"x\x00", []),  # a raw NUL is fine in CESU-8
        # A lone half: malformed in CESU-8 (three bytes, one unit), fine in MUTF-8.
        ("cesu-8", b"\xed\xa0\x80A", [(0, b"\xed\xa0\x80", K.SURROGATE)]),
        ("cesu-8", b"\xed\xb0\x80", [(0, b"\xed\xb0\x80", K.SURROGATE)]),
        ("mutf-8", b"\xed\xa0\x80A\xed\xb0\x80", []),
        ("wtf-8", b"\xed\xa0\x80\xed\xa0\x80\xed\xb0\x80", [(3, b"\xed\xa0\x80", K.SURROGATE),
                                                         (6, b"\xed\xb0\x80", K.SURROGATE)]),
        ("cesu-8", b"\xed\xa0A", [(0, b"\xed\xa0", K.INCOMPLETE_SEQUENCE)]),
        ("cesu-8", b"\xed\xa0\x80\xed\xb0", [(0, b"\xed\xa0\x80", K.SURROGATE),
                                            (3, b"\xed\xb0", K.TRUNCATED_AT_END)]),
        ("utf-8z", b"\xed\xa0\x80", [(0, b"\xed", K.SURROGATE),
                                     (1, b"\xa0", K.UNEXPECTED_CONTINUATION),
                                     (2, b"\x80", K.UNEXPECTED_CONTINUATION)]),
        # The Java null: C0 80 only; C0 before anything else is a cut-short sequence.
        ("mutf-8", b"\xc0\x81", [(0, b"\xc0", K.OVERLONG),
                                 (1, b"\x81", K.UNEXPECTED_CONTINUATION)]),
        ("utf-8z", b"\xc0A", [(0, b"\xc0", K.INCOMPLETE_SEQUENCE)]),
        ("cesu-8", b"A\xc0", [(1, b"\xc0", K.TRUNCATED_AT_END)]),
        ("wtf-8", b"\xc0\x80", [(0, b"\xc0", K.OVERLONG),
                                (1, b"\x80", K.UNEXPECTED_CONTINUATION)]),
    ],
)  # fmt: skip
def test_malformed_units_of_the_variants(
    variant: str, data: bytes, units: list[tuple[int, bytes, K]]
) -> None:
    offset = 1000
    shifted = [(o + offset, d, k) for o, d, k in units]
    for chunks in every_chunking(data):
        text, events = decode_chunks(chunks, variant=variant, start_offset=offset)
        assert events == shifted, chunks
        assert text == variant_reference(data, variant).render()


def test_strict_error_reports_variant_offset_and_kind() -> None:
    decoder = Utf8Decoder("strict", variant="cesu-8", start_offset=10)
    with pytest.raises(Utf8DecodeError) as info:
        decoder.decode(b"ok \xf0\x9f\x98\x80", final=True)
    error = info.value
    assert (error.offset, error.kind, error.partial) == (13, K.INVALID_BYTE, "ok ")
    assert "'cesu-8' codec" in str(error)


def test_wtf8_strict_failure_at_a_high_half_still_condemns_the_low_half() -> None:
    # The first unit of a malformed pair raises; the low half, left unread, must not come
    # back as a lone surrogate on the next call (nor after setstate/checkpoint).
    data = b"a\xed\xa0\x80\xed\xb0\x80b"
    decoder = Utf8Decoder("strict", variant="wtf-8")
    with pytest.raises(Utf8DecodeError) as first:
        decoder.decode(data)
    assert (first.value.offset, first.value.partial) == (1, "a")
    state = decoder.getstate()
    cp = decoder.checkpoint()
    for resumed in (
        decoder,
        Utf8Decoder.from_checkpoint(DecoderCheckpoint.from_json(cp.to_json())),
    ):
        with pytest.raises(Utf8DecodeError) as second:
            resumed.decode(b"")
        assert (second.value.offset, second.value.kind) == (4, K.SURROGATE)
        assert resumed.decode(b"", final=True) == "b"
    fresh = Utf8Decoder("replace", variant="wtf-8")
    fresh.setstate((b"", state[1]))
    assert fresh.decode(state[0], final=True) == "\ufffdb"
