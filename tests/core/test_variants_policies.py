"""UTF-8 variants: the decoder's legacy fallback and the OPTU-8 policy, and the variant
scanner's fast path held to its item-by-item path and the reference."""

from __future__ import annotations

import re

import pytest
from _helpers import (
    CORE,
    HEAVY,
    Unit,
    chunkings,
    cut_randomly,
    decode_chunks,
    feed,
    split_at,
)
from _variant_reference import (
    VARIANTS,
    cut_text,
    encode_pieces,
    variant_bytes,
    variant_reference,
)
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import Malformed, Utf8DecodeError, Utf8Decoder
from utf8stream.core.scanner import scanner_type
from utf8stream.core.variants import get_variant
from utf8stream.core.variantscan import VariantScanner

#: The variants decode over the scanner of either implementation: each test runs on both.
pytestmark = pytest.mark.usefixtures("implementation")

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
