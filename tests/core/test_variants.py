"""UTF-8 variants (DESIGN.md section 5): WTF-8, CESU-8, MUTF-8 and UTF-8Z, both directions.

Expected values come from three places that share no code with ``utf8stream``: the
conformance vectors (``variants_vectors.json``), a deliberately slow per-byte reference
decoder and a per-code-point reference encoder written below from the variant rules, and
CPython's codecs for single characters.  The decoder's legacy fallback and the OPTU-8
policy, added with the variants, are tested here too.
"""

from __future__ import annotations

import codecs
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _helpers import (
    CORE,
    FRAGMENTS,
    HEAVY,
    K,
    Reference,
    Unit,
    _table_3_7,
    chunkings,
    cut_randomly,
    decode_chunks,
    event_tuples,
    every_chunking,
    feed,
    split_at,
    strict_loop,
)
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import DecoderCheckpoint, Malformed, Utf8DecodeError, Utf8Decoder, Utf8Encoder
from utf8stream.core.scanner import PyScanner, scanner_type
from utf8stream.core.variants import get_variant
from utf8stream.core.variantscan import VariantScanner

#: The variants decode over the scanner of either implementation: each test runs on both.
pytestmark = pytest.mark.usefixtures("implementation")

VARIANTS = ("utf-8", "wtf-8", "cesu-8", "mutf-8", "utf-8z")


# -- the reference: the variant rules, one byte at a time -------------------------------


@dataclass(frozen=True)
class Rules:
    four_byte: bool  # F0..F4 sequences exist
    halves: bool  # ED A0..BF 80..BF is a surrogate half, a unit of its own
    java_null_in: bool  # C0 80 decodes to U+0000
    nul_malformed: bool  # a raw 00 is malformed
    join: bool  # a high half + a low half is one character
    lone_ok: bool  # a lone half is a character
    pair_bad: bool  # a high half + a low half is malformed, both halves
    java_null_out: bool  # U+0000 encodes as C0 80
    pairs_out: bool  # U+10000.. encodes as a 6-byte pair


RULES = {
    "utf-8": Rules(True, False, False, False, False, False, False, False, False),
    "wtf-8": Rules(True, True, False, False, False, True, True, False, False),
    "cesu-8": Rules(False, True, True, False, True, False, False, False, True),
    "mutf-8": Rules(False, True, True, True, True, True, False, True, True),
    "utf-8z": Rules(True, False, True, True, False, False, False, True, False),
}


def _cont(b: int) -> bool:
    return 0x80 <= b <= 0xBF


def _half(data: bytes, i: int) -> int:
    return ((data[i] & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)


def variant_reference(
    data: bytes, variant: str, *, final: bool = True, start_offset: int = 0
) -> Reference:
    """Characters and malformed units of ``data`` in ``variant``, per the rules above."""
    r = RULES[variant]
    pieces: list[str | Unit] = []
    held = b""
    n = len(data)
    i = 0
    orphan = False  # the previous unit was the high half of a malformed WTF-8 pair

    def unit(end: int, kind: K) -> None:
        pieces.append(Unit(start_offset + i, data[i:end], kind))

    while i < n:
        b = data[i]
        was_orphan, orphan = orphan, False
        if b == 0 and r.nul_malformed:
            unit(i + 1, K.INVALID_BYTE)
            i += 1
        elif b < 0x80:
            pieces.append(chr(b))
            i += 1
        elif b == 0xC0 and r.java_null_in:
            if i + 1 == n:
                if final:
                    unit(n, K.TRUNCATED_AT_END)
                else:
                    held = data[i:]
                break
            if data[i + 1] == 0x80:
                pieces.append("\x00")
                i += 2
            else:
                unit(i + 1, K.OVERLONG if _cont(data[i + 1]) else K.INCOMPLETE_SEQUENCE)
                i += 1
        elif 0xF0 <= b <= 0xF4 and not r.four_byte:
            unit(i + 1, K.INVALID_BYTE)
            i += 1
        elif b == 0xED and r.halves and i + 1 < n and 0xA0 <= data[i + 1] <= 0xBF:
            if i + 2 == n:
                if final:
                    unit(n, K.TRUNCATED_AT_END)
                else:
                    held = data[i:]
                break
            if not _cont(data[i + 2]):
                unit(i + 2, K.INCOMPLETE_SEQUENCE)
                i += 2
                continue
            cp = _half(data, i)
            if cp < 0xDC00:
                nxt = data[i + 3 : i + 6]
                low_follows = (
                    (len(nxt) < 1 or nxt[0] == 0xED)
                    and (len(nxt) < 2 or 0xB0 <= nxt[1] <= 0xBF)
                    and (len(nxt) < 3 or _cont(nxt[2]))
                )
                if low_follows and len(nxt) < 3 and not final:
                    held = data[i:]  # what follows decides
                    break
                if low_follows and len(nxt) == 3:
                    if r.join:
                        low = _half(data, i + 3)
                        pieces.append(chr(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)))
                        i += 6
                        continue
                    if r.pair_bad:
                        unit(i + 3, K.SURROGATE)
                        orphan = True
                        i += 3
                        continue
            elif was_orphan:
                unit(i + 3, K.SURROGATE)
                i += 3
                continue
            if r.lone_ok:
                pieces.append(chr(cp))
            else:
                unit(i + 3, K.SURROGATE)
            i += 3
        else:  # everything else: Unicode Table 3-7, one maximal subpart
            rule = _table_3_7(b)
            if rule is None:
                kind = K.OVERLONG if b in (0xC0, 0xC1) else K.UNEXPECTED_CONTINUATION
                if b >= 0xF5:
                    kind = K.OUT_OF_RANGE if b < 0xF8 else K.INVALID_BYTE
                unit(i + 1, kind)
                i += 1
                continue
            length, lo, hi = rule
            j = i + 1
            while j < i + length:
                if j == n:
                    if final:
                        unit(n, K.TRUNCATED_AT_END)
                    else:
                        held = data[i:]
                    i = n
                    break
                if not lo <= data[j] <= hi:
                    if j == i + 1 and _cont(data[j]):
                        bad = {0xE0: K.OVERLONG, 0xED: K.SURROGATE, 0xF0: K.OVERLONG}
                        unit(j, bad.get(b, K.OUT_OF_RANGE))
                    else:
                        unit(j, K.INCOMPLETE_SEQUENCE)
                    i = j
                    break
                lo, hi = 0x80, 0xBF
                j += 1
            else:
                pieces.append(data[i:j].decode("utf-8"))
                i = j
    return Reference(pieces, held)


def _high(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDBFF


def _low(cp: int) -> bool:
    return 0xDC00 <= cp <= 0xDFFF


def joined(text: str) -> str:
    """``text`` with every adjacent high+low surrogate pair made one character."""
    out: list[str] = []
    i = 0
    while i < len(text):
        cp = ord(text[i])
        if _high(cp) and i + 1 < len(text) and _low(ord(text[i + 1])):
            cp = 0x10000 + ((cp - 0xD800) << 10) + (ord(text[i + 1]) - 0xDC00)
            i += 1
        out.append(chr(cp))
        i += 1
    return "".join(out)


def reference_encode(text: str, variant: str) -> bytes:
    """``text`` in ``variant``, one code point at a time (surrogates must be encodable)."""
    r = RULES[variant]
    out = []
    for ch in joined(text) if variant == "wtf-8" else text:
        cp = ord(ch)
        if cp == 0 and r.java_null_out:
            out.append(b"\xc0\x80")
        elif cp >= 0x10000 and r.pairs_out:
            cp -= 0x10000
            pair = chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))
            out.append(pair.encode("utf-8", "surrogatepass"))
        else:
            out.append(ch.encode("utf-8", "surrogatepass"))
    return b"".join(out)


# -- strategies ---------------------------------------------------------------------------

VARIANT_FRAGMENTS = [
    *FRAGMENTS,
    b"\x00",
    b"\xc0\x80",
    b"\xc0\x81",
    b"\xed\xa0\x80",  # high halves
    b"\xed\xaf\xbf",
    b"\xed\xb0\x80",  # low halves
    b"\xed\xbf\xbf",
    b"\xed\xa0\xbd\xed\xb8\x80",  # a pair (U+1F600)
    b"\xed\xa0\xbd\xed",
    b"\xed\xa0\xbd\xed\xb8",
    b"\xed\xb0",
    b"\xf0\x9f\x98\x80",
]
variant_bytes = st.one_of(
    st.binary(max_size=40),
    st.lists(
        st.one_of(st.sampled_from(VARIANT_FRAGMENTS), st.binary(min_size=1, max_size=2)),
        max_size=20,
    ).map(b"".join),
)

SURROGATE_CHARS = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"]
#: Any code point, surrogates included, with the interesting ones often.
any_code_points = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=()),
        st.sampled_from([*SURROGATE_CHARS, "\x00", "😀", "\U0010ffff", "\uffff", "€"]),
    ),
    max_size=30,
)
#: Text a variant can encode whatever its policy: no surrogates.
scalar_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"), st.sampled_from(["\x00", "😀", "\U0010ffff", "\uef80", "€"])
    ),
    max_size=30,
)


def text_for(variant: str) -> st.SearchStrategy[str]:
    return any_code_points if RULES[variant].lone_ok else scalar_text


def cut_text(draw: Callable[..., Any], text: str) -> list[str]:
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=len(text) + 3))
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def encode_pieces(pieces: list[str], variant: str, errors: str = "strict") -> bytes:
    encoder = Utf8Encoder(errors, variant=variant)
    return b"".join(encoder.encode(p) for p in pieces) + encoder.encode("", final=True)


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


# -- the legacy fallback and OPTU-8 ---------------------------------------------------------

CP1252_UNDEFINED = {0x81, 0x8D, 0x8F, 0x90, 0x9D}


@HEAVY
@given(variant_bytes, st.data(), st.sampled_from(["cp1252", "latin-1"]), st.sampled_from(VARIANTS))
def test_fallback_decodes_each_unit_with_the_legacy_codec(
    data: bytes, draw: st.DataObject, fallback: str, variant: str
) -> None:
    ref = variant_reference(data, variant)

    def legacy(unit: Unit) -> str:
        if fallback == "cp1252" and CP1252_UNDEFINED & set(unit.data):
            return "\ufffd"  # the errors policy, as without a fallback
        return unit.data.decode(fallback)

    for chunks in chunkings(data, cut_randomly(draw.draw, data)):
        text, events = decode_chunks(chunks, variant=variant, fallback=fallback)
        assert text == ref.render(legacy)
        assert events == ref.units


def test_fallback_on_a_file_that_mixes_utf8_and_cp1252() -> None:
    data = "naïve café, ".encode() + "prix: 5€, crème brûlée".encode("cp1252") + b" \x81"
    events: list[Malformed] = []
    decoder = Utf8Decoder("strict", fallback="cp1252", on_malformed=events.append)
    with pytest.raises(Utf8DecodeError) as info:  # 81 is undefined in cp1252 too
        decoder.decode(data, final=True)
    assert info.value.partial == "naïve café, prix: 5€, crème brûlée "
    assert info.value.offset == len(data) - 1
    assert len(events) == 5  # €, è, û and é are one unit each, and so is 81
    assert Utf8Decoder(fallback="latin-1").decode(b"\x81") == "\x81"


@pytest.mark.parametrize("codec", ["utf-16", "shift_jis", "no-such-codec"])
def test_fallback_must_be_a_single_byte_codec(codec: str) -> None:
    with pytest.raises((ValueError, LookupError)):
        Utf8Decoder(fallback=codec)


@CORE
@given(variant_bytes, st.data(), st.sampled_from(VARIANTS))
def test_optu8_decodes_each_bad_byte_to_ef00_plus_byte(
    data: bytes, draw: st.DataObject, variant: str
) -> None:
    ref = variant_reference(data, variant)
    expected = ref.render(lambda u: "".join(chr(0xEF00 + b) for b in u.data))
    chunks = cut_randomly(draw.draw, data)
    text, events = decode_chunks(chunks, errors="optu-8", variant=variant)
    assert (text, events) == (expected, ref.units)
    if variant == "utf-8":
        assert data.decode("utf-8", "optu-8") == expected  # the codecs error handler


_OPTU8_VALID = re.compile(rb"\xee[\xbc\xbe\xbf][\x80-\xbf]")


@CORE
@given(variant_bytes, st.data(), st.sampled_from(VARIANTS))
def test_optu8_round_trips_bytes(data: bytes, draw: st.DataObject, variant: str) -> None:
    # Lossless unless the input itself holds the characters OPTU-8 uses (U+EF80..U+EFFF,
    # U+EF00), which come back as bytes: the known limit of a private-use escape.  And
    # CESU-8 reads C0 80 as U+0000 but writes U+0000 as 00.
    data = _OPTU8_VALID.sub(b"?", data)
    if variant == "cesu-8":
        data = data.replace(b"\xc0\x80", b"?")
    text = "".join(feed(Utf8Decoder("optu-8", variant=variant), cut_randomly(draw.draw, data)))
    assert encode_pieces(cut_text(draw.draw, text), variant, "optu-8") == data


def test_split_at_helper_sanity() -> None:
    assert split_at(b"abc", [1, 1]) == [b"a", b"", b"bc"]


# -- the variant scanner's fast path ------------------------------------------------------

#: Well-formed items of each variant (what ``VariantScanner._decode_fast`` takes whole).
CLEAN_ITEMS = {
    "wtf-8": [b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\xb0\x80 ", "😀".encode(), b"\x00"],
    "cesu-8": [b"\xed\xa0\xbd\xed\xb8\x80", b"\xc0\x80", b"\x00"],
    "mutf-8": [b"\xed\xa0\xbd\xed\xb8\x80", b"\xc0\x80", b"\xed\xa0\x80", b"\xed\xb0\x80"],
    "utf-8z": [b"\xc0\x80", "😀".encode()],
}


@given(st.sampled_from(sorted(CLEAN_ITEMS)), st.data())
def test_the_variant_fast_path_gives_the_item_by_item_text(
    variant: str, draw: st.DataObject
) -> None:
    """Clean text with the variant's items, and any bytes: the C-speed passes of the fast
    path and the item-by-item path both give the reference's text (the fast path is taken
    for the clean text, and gives up on anything malformed)."""
    clean = draw.draw(
        st.lists(st.sampled_from([*CLEAN_ITEMS[variant], b"ab", "é日".encode()]), max_size=12)
    )
    for data in (b"".join(clean), draw.draw(variant_bytes)):
        ref = variant_reference(data, variant).render()
        texts = []
        for fast in (True, False):
            scanner = VariantScanner(get_variant(variant), False, "\ufffd", None, scanner_type())
            scanner._fast = fast
            texts.append(scanner.feed(b"", data, True, len(data))[0])
        assert texts == [ref, ref], (variant, data)
    if variant == "wtf-8":
        clean = [item for item in clean if item != b"\xed\xa0\x80"]  # no pair by chance
    data = b"".join(clean)

    class NoInner:
        def feed(self, *args: object) -> tuple[str, bytes]:
            raise AssertionError("the fast path took clean text to the inner scanner")

    scanner = VariantScanner(get_variant(variant), False, "\ufffd", None, scanner_type())
    if b"\xed" in data or b"\xc0" in data:
        scanner._inner = NoInner()  # type: ignore[assignment]
    assert scanner.feed(b"", data, True, len(data))[0] == variant_reference(data, variant).render()
