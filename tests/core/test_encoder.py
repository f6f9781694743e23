"""Utf8Encoder (DESIGN.md section 5): CPython's ``str.encode`` is the oracle, for any chunking.

Variant encodings against an independent per-code-point reference are in
``test_variants.py``; here: UTF-8 with every policy, errors and their positions, the
surrogateescape and OPTU-8 round trips, the held WTF-8 surrogate and the codecs state.
"""

from __future__ import annotations

import codecs
import itertools
import pickle

import pytest
from _helpers import CORE, HEAVY, cut_randomly, feed
from hypothesis import example, given
from hypothesis import strategies as st

from utf8stream import Utf8Decoder, Utf8EncodeError, Utf8Encoder

# With the C accelerator, plain UTF-8 encoding is one C call (PlainEncoder); every test
# here runs with it and in pure Python.
pytestmark = pytest.mark.usefixtures("implementation")

SURROGATES = ["\ud800", "\udbff", "\udc00", "\udc80", "\udcff", "\udfff", "\ud83d", "\ude00"]
#: Any code points, surrogates (paired or not) included and often.
any_text = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=()),
        st.sampled_from([*SURROGATES, "\x00", "😀", "\uef80", "\ueff0", "é", "€"]),
    ),
    max_size=30,
)
valid_text = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(["😀", "€", "\x00"])),
    max_size=40,
)
CPYTHON_POLICIES = (
    "replace",
    "ignore",
    "backslashreplace",
    "xmlcharrefreplace",
    "namereplace",
    "surrogateescape",
    "surrogatepass",
    "strict",
)


def pieces_of(draw: st.DrawFn, text: str) -> list[str]:
    """A random cut of ``text`` (empty pieces included)."""
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=len(text) + 3))
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def all_cuts(draw: st.DrawFn, text: str) -> list[list[str]]:
    """Whole, one character per call (with empty calls between), and a random cut."""
    return [[text], [p for c in text for p in ("", c)], pieces_of(draw, text)]


def encode_all(encoder: Utf8Encoder, pieces: list[str]) -> bytes:
    return b"".join(encoder.encode(p) for p in pieces) + encoder.encode("", final=True)


def first_error(text: str, errors: str) -> UnicodeEncodeError | None:
    try:
        text.encode("utf-8", errors)
    except UnicodeEncodeError as exc:
        return exc
    return None


# -- UTF-8: the same bytes as str.encode, for any chunking --------------------------------


@CORE
@given(valid_text, st.data())
def test_valid_text_encodes_like_str_encode(text: str, draw: st.DataObject) -> None:
    for pieces in all_cuts(draw.draw, text):
        encoder = Utf8Encoder()
        assert encode_all(encoder, pieces) == text.encode("utf-8")
        assert encoder.position == len(text)
        assert encoder.getstate() == 0


@HEAVY
@given(any_text, st.sampled_from(CPYTHON_POLICIES), st.data())
def test_every_cpython_policy_with_any_code_points(
    text: str, errors: str, draw: st.DataObject
) -> None:
    expected_error = first_error(text, errors)
    for pieces in all_cuts(draw.draw, text):
        encoder = Utf8Encoder(errors)
        if expected_error is None:
            assert encode_all(encoder, pieces) == text.encode("utf-8", errors)
            continue
        out = b""
        base = 0
        with pytest.raises(UnicodeEncodeError) as info:
            for piece in pieces:
                out += encoder.encode(piece)
                base += len(piece)
        error = info.value
        assert isinstance(error, Utf8EncodeError)
        # Absolute position: where one-shot str.encode fails in the whole text.
        assert error.offset == expected_error.start
        assert error.object[error.start] == text[error.offset]
        assert error.offset == base + error.start
        assert error.encoding == "utf-8"
        # Nothing was consumed by the failing call: everything before it was encoded.
        assert encoder.position == base
        assert out + error.partial == text[: error.offset].encode("utf-8", errors)


def test_strict_error_positions_are_absolute_across_calls() -> None:
    encoder = Utf8Encoder()
    assert encoder.encode("héllo ") == "héllo ".encode()
    assert encoder.position == 6
    with pytest.raises(UnicodeEncodeError) as info:
        encoder.encode("wörld \udc80!")
    error = info.value
    assert isinstance(error, Utf8EncodeError)
    assert (error.start, error.end, error.offset) == (6, 7, 12)
    assert error.object == "wörld \udc80!" and error.partial == "wörld ".encode()
    assert "offset 12" in str(error)
    # The call had no effect: retry with corrected text and go on.
    assert encoder.position == 6
    assert encoder.encode("wörld !", final=True) == "wörld !".encode()
    assert encoder.position == 13


@pytest.mark.parametrize("variant", ["utf-8", "cesu-8"])
def test_an_encoder_resuming_a_stream_counts_from_its_start_position(variant: str) -> None:
    encoder = Utf8Encoder(variant=variant, start_position=6)
    assert encoder.position == 6
    with pytest.raises(Utf8EncodeError) as info:
        encoder.encode("wörld \udc80!")
    assert (info.value.start, info.value.offset) == (6, 12)
    assert encoder.encode("ab") == b"ab"
    assert encoder.position == 8
    with pytest.raises(ValueError, match="start_position must not be negative"):
        Utf8Encoder(start_position=-1)


def test_utf8_does_not_hold_a_high_surrogate() -> None:
    # Only WTF-8 joins a pair split between calls; UTF-8 fails where str.encode fails.
    encoder = Utf8Encoder()
    with pytest.raises(UnicodeEncodeError) as info:
        encoder.encode("ab\ud83d")
    assert info.value.start == 2
    assert Utf8Encoder("surrogatepass").encode("\ud83d") == b"\xed\xa0\xbd"


def test_error_pickles_with_its_fields() -> None:
    with pytest.raises(Utf8EncodeError) as info:
        Utf8Encoder(variant="cesu-8").encode("ok\udfff")
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.encoding, copy.object, copy.start, copy.end) == ("cesu-8", "ok\udfff", 2, 3)
    assert (copy.offset, copy.partial) == (2, b"ok")


# -- surrogateescape and OPTU-8: bytes survive a decode/encode round trip -----------------


@HEAVY
@given(st.binary(max_size=80), st.data())
def test_surrogateescape_restores_any_bytes_for_any_chunking(
    data: bytes, draw: st.DataObject
) -> None:
    text = "".join(feed(Utf8Decoder("surrogateescape"), cut_randomly(draw.draw, data)))
    assert text == data.decode("utf-8", "surrogateescape")
    for pieces in all_cuts(draw.draw, text):
        assert encode_all(Utf8Encoder("surrogateescape"), pieces) == data


@HEAVY
@given(
    st.one_of(
        st.binary(max_size=40),
        st.lists(
            st.sampled_from(
                [b"\xf0\x9f\x98\x80", b"\xed\xa0\x80", b"\xed\xb0\x80", b"\xff", b"a"]
            ),
            max_size=8,
        ).map(b"".join),
    ),
    st.sampled_from(["cesu-8", "utf-8z"]),
    st.data(),
)
@example(b"\xf0\x9f\x98\x80\xed\xa0\x80", "cesu-8", None).via("4-byte form, lone half")
@example(b"a\x00b\xc0", "utf-8z", None).via("a raw NUL is malformed in UTF-8Z")
def test_surrogateescape_restores_bytes_in_cesu8_and_utf8z(
    data: bytes, variant: str, draw: st.DataObject | None
) -> None:
    # Every malformed byte comes back (a raw 00 in UTF-8Z as U+DC00, which the encoder
    # turns back into 00 there); the only bytes that do not are the lenient Java null
    # (C0 80 read as U+0000, which CESU-8 writes as 00).
    if variant == "cesu-8":
        data = data.replace(b"\xc0\x80", b"")
    text = Utf8Decoder("surrogateescape", variant=variant).decode(data, final=True)
    cuts = all_cuts(draw.draw, text) if draw is not None else [[text], list(text)]
    for pieces in cuts:
        assert encode_all(Utf8Encoder("surrogateescape", variant=variant), pieces) == data


@CORE
@given(any_text, st.data())
def test_optu8_maps_ef80_to_efff_back_to_bytes(text: str, draw: st.DataObject) -> None:
    def expected(ch: str) -> bytes:
        if 0xEF80 <= ord(ch) <= 0xEFFF:
            return bytes((ord(ch) - 0xEF00,))
        return ch.encode("utf-8")

    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        with pytest.raises(UnicodeEncodeError):
            encode_all(Utf8Encoder("optu-8"), pieces_of(draw.draw, text))
        return
    want = b"".join(expected(c) for c in text)
    for pieces in all_cuts(draw.draw, text):
        assert encode_all(Utf8Encoder("optu-8"), pieces) == want


def test_optu8_with_legacy_codecs_through_the_error_handler() -> None:
    # The same policy registered with codecs: bytes a legacy codec cannot decode come
    # through as U+EF00+b and go back out unchanged.
    data = b"caf\xe9 \x81\x8d"
    text = data.decode("cp1252", "optu-8")
    assert text == "café \uef81\uef8d"
    assert text.encode("cp1252", "optu-8") == data
    with pytest.raises(UnicodeEncodeError):
        "\u4e00".encode("cp1252", "optu-8")


# -- WTF-8: the held high surrogate --------------------------------------------------------


@CORE
@given(any_text, st.data())
def test_wtf8_any_cut_gives_the_one_shot_bytes(text: str, draw: st.DataObject) -> None:
    whole = Utf8Encoder(variant="wtf-8").encode(text, final=True)
    # Oracle: UTF-16 joins pairs (CPython), then each code point in its own UTF-8 form.
    units = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    assert whole == b"".join(c.encode("utf-8", "surrogatepass") for c in units)
    for pieces in all_cuts(draw.draw, text):
        encoder = Utf8Encoder(variant="wtf-8")
        outputs = [encoder.encode(p) for p in pieces]
        assert b"".join(outputs) + encoder.encode("", final=True) == whole
        assert encoder.position == len(text)


def test_wtf8_state_is_the_held_code_point() -> None:
    encoder = Utf8Encoder(variant="wtf-8")
    assert encoder.encode("x\udbff") == b"x"
    assert (encoder.getstate(), encoder.buffered, encoder.position) == (0xDBFF, 1, 2)
    other = Utf8Encoder(variant="wtf-8")
    other.setstate(encoder.getstate())
    assert other.encode("\udfff") == encoder.encode("\udfff") == "\U0010ffff".encode()
    encoder.encode("\ud800")
    encoder.reset()
    assert (encoder.getstate(), encoder.position) == (0, 0)
    assert encoder.encode("", final=True) == b""
    encoder.setstate(0xD800)
    assert encoder.encode("", final=True) == b"\xed\xa0\x80"  # final flushes it
    with pytest.raises(ValueError):
        encoder.setstate(0x41)


def test_wtf8_never_fails_and_ignores_policies() -> None:
    text = "\udc80\ud800a\ud83d\ude00"
    expected = b"\xed\xb2\x80\xed\xa0\x80a\xf0\x9f\x98\x80"
    for errors in ("strict", "surrogateescape", "replace"):
        assert Utf8Encoder(errors, variant="wtf-8").encode(text, final=True) == expected


# -- CESU-8 and UTF-8Z: surrogates go to the policy ----------------------------------------


def _escapes_nul(errors: str, variant: str) -> bool:
    """Whether ``errors`` turns U+DC00 into 00: ``surrogateescape`` in UTF-8Z, whose decoder
    escapes the raw 00 it reads as malformed (the ``Utf8Encoder`` docstring)."""
    return errors == "surrogateescape" and variant == "utf-8z"


def _cesu_char(ch: str, errors: str, variant: str) -> bytes:
    """One character in CESU-8 or UTF-8Z, built from CPython's codecs."""
    cp = ord(ch)
    if cp == 0xDC00 and _escapes_nul(errors, variant):
        return b"\x00"
    if 0xD800 <= cp <= 0xDFFF:
        if errors == "surrogatepass":
            return ch.encode("utf-8", "surrogatepass")
        return ch.encode("utf-8", errors)  # the policy, as CPython applies it
    if cp == 0 and variant == "utf-8z":
        return b"\xc0\x80"
    if cp >= 0x10000 and variant == "cesu-8":
        units = ch.encode("utf-16-be")
        pair = chr(int.from_bytes(units[:2], "big")) + chr(int.from_bytes(units[2:], "big"))
        return pair.encode("utf-8", "surrogatepass")
    return ch.encode("utf-8")


@HEAVY
@given(
    any_text, st.sampled_from(CPYTHON_POLICIES), st.sampled_from(["cesu-8", "utf-8z"]), st.data()
)
@example("\udc00", "surrogateescape", "utf-8z", None).via("U+DC00 is the escaped raw 00")
@example("a\udc00\ud800", "surrogateescape", "utf-8z", None).via("fails after U+DC00")
@example("\udc00", "surrogateescape", "cesu-8", None).via("a raw 00 is valid CESU-8")
def test_cesu8_and_utf8z_apply_the_policy_to_surrogates(
    text: str, errors: str, variant: str, draw: st.DataObject | None
) -> None:
    # CPython's UTF-8 rule, except for the U+DC00 that UTF-8Z escapes: U+DC80 stands in for
    # it, a character that CPython's surrogateescape takes too.
    accepted = text.replace("\udc00", "\udc80") if _escapes_nul(errors, variant) else text
    expected_error = first_error(accepted, errors)
    cuts = all_cuts(draw.draw, text) if draw is not None else [[text], list(text)]
    for pieces in cuts:
        encoder = Utf8Encoder(errors, variant=variant)
        if expected_error is None:
            want = b"".join(_cesu_char(c, errors, variant) for c in text)
            assert encode_all(encoder, pieces) == want
        else:
            with pytest.raises(Utf8EncodeError) as info:
                encode_all(encoder, pieces)
            assert info.value.offset == expected_error.start
            assert info.value.encoding == variant


@pytest.mark.parametrize("variant", ["cesu-8", "mutf-8"])
@pytest.mark.parametrize("every", [1, 3, 39, 41, 1000])
def test_supplementary_characters_dense_and_sparse(variant: str, every: int) -> None:
    # Dense and sparse supplementary characters take different paths in the encoder.
    text = "".join("😀" if i % every == 0 else "aé€\x00\U0010ffff"[i % 5] for i in range(2000))
    text = text.replace("\x00", "0") if variant == "mutf-8" else text
    want = b"".join(_cesu_char(c, "strict", "cesu-8") for c in text)
    for size in (len(text), 7, 1):
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        assert encode_all(Utf8Encoder(variant=variant), pieces) == want
    lone = "\ud83d\ude00\udfff" + text  # MUTF-8 writes surrogates as they are
    if variant == "mutf-8":
        out = Utf8Encoder(variant=variant).encode(lone, final=True)
        assert out == b"\xed\xa0\xbd\xed\xb8\x80\xed\xbf\xbf" + want


_calls: list[tuple[str, str, int, int]] = []


def _angle(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeEncodeError)
    _calls.append((exc.encoding, exc.object, exc.start, exc.end))
    return "".join(f"<{ord(c):x}>" for c in exc.object[exc.start : exc.end]), exc.end


codecs.register_error("utf8stream-tests.encode-angle", _angle)


@pytest.mark.parametrize("variant", ["utf-8", "cesu-8", "utf-8z"])
def test_registered_policy_sees_the_call_text(variant: str) -> None:
    _calls.clear()
    encoder = Utf8Encoder("utf8stream-tests.encode-angle", variant=variant)
    assert encoder.encode("ab") == b"ab"
    assert encoder.encode("x\ud800\udc00y", final=True) == b"x<d800><dc00>y"
    assert _calls == [(variant, "x\ud800\udc00y", 1, 3)]


def test_unknown_policy_or_variant_is_rejected() -> None:
    with pytest.raises(LookupError):
        Utf8Encoder("no-such-policy")
    with pytest.raises(ValueError, match="unknown UTF-8 variant"):
        Utf8Encoder(variant="utf-7")
    assert Utf8Encoder(variant="WTF_8").variant == "wtf-8"


def test_keyword_calls_policy_changes_and_errors_keep_the_position() -> None:
    """The C path hands keyword calls and failures to the Python method; the position
    counts every character either way."""
    encoder = Utf8Encoder()
    assert encoder.encode("héllo") == "héllo".encode()
    assert encoder.encode(input="ab", final=False) == b"ab"
    assert encoder.position == 7
    with pytest.raises(Utf8EncodeError) as info:
        encoder.encode("xy\udc80z")
    assert info.value.offset == 9
    assert info.value.partial == b"xy"
    assert encoder.position == 7  # a failed call consumes nothing
    encoder.errors = "surrogateescape"
    assert encoder.encode("\udc80z", True) == b"\x80z"
    assert encoder.position == 9
    encoder.reset()
    assert encoder.position == 0
    assert encoder.encode("é") == b"\xc3\xa9" and encoder.position == 1
