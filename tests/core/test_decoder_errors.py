"""Error policies (DESIGN.md section 2) and strict mode that loses nothing and never poisons."""

from __future__ import annotations

import codecs
from collections import Counter

import pytest
from _helpers import (
    CORE,
    HEAVY,
    K,
    Unit,
    chunked,
    chunkings,
    decode_chunks,
    event_tuples,
    every_chunking,
    feed,
    reference_decode,
    split_at,
    strict_loop,
)
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import Malformed, Utf8DecodeError, Utf8Decoder

#: Every test here runs with the C accelerator and in pure Python (conftest).
pytestmark = pytest.mark.usefixtures("implementation")

# -- policies CPython also has, over any bytes and any chunking -------------------------

SIMPLE_POLICIES = ("replace", "ignore", "backslashreplace", "surrogateescape")


@HEAVY
@given(chunked())
def test_simple_policies_match_cpython_and_report_every_unit(
    case: tuple[bytes, list[bytes]],
) -> None:
    data, random_chunks = case
    ref = reference_decode(data)
    for policy in SIMPLE_POLICIES:
        expected = data.decode("utf-8", policy)
        assert ref.render(policy) == expected  # the two oracles agree
        for chunks in chunkings(data, random_chunks):
            text, events = decode_chunks(chunks, errors=policy)
            assert text == expected, (policy, chunks)
            assert events == ref.units, (policy, chunks)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("replace", "a\ufffd\ufffdb\ufffd"),
        ("ignore", "ab"),
        ("backslashreplace", "a\\xff\\xe2\\x82b\\xc0"),
        ("surrogateescape", "a\udcff\udce2\udc82b\udcc0"),
    ],
)
def test_policy_examples(policy: str, expected: str) -> None:
    data = b"a\xff\xe2\x82b\xc0"
    assert data.decode("utf-8", policy) == expected
    for chunks in every_chunking(data):
        text, events = decode_chunks(chunks, errors=policy)
        assert text == expected
        assert events == [
            (1, b"\xff", K.INVALID_BYTE),
            (2, b"\xe2\x82", K.INCOMPLETE_SEQUENCE),
            (5, b"\xc0", K.OVERLONG),
        ]


@CORE
@given(chunked(st.binary(max_size=120)))
def test_surrogateescape_round_trips_any_bytes(case: tuple[bytes, list[bytes]]) -> None:
    data, random_chunks = case
    for chunks in chunkings(data, random_chunks):
        text, _ = decode_chunks(chunks, errors="surrogateescape")
        assert text.encode("utf-8", "surrogateescape") == data, chunks


# -- surrogatepass ----------------------------------------------------------------------

_pieces = st.lists(
    st.one_of(st.text(max_size=3), st.integers(0xD800, 0xDFFF).map(chr)), max_size=12
)


@CORE
@given(_pieces, st.data())
def test_surrogatepass_decodes_lone_surrogates_like_cpython(
    pieces: list[str], draw: st.DataObject
) -> None:
    data = b"".join(p.encode("utf-8", "surrogatepass") for p in pieces)
    expected_text = "".join(pieces)
    assert data.decode("utf-8", "surrogatepass") == expected_text
    # Every encoded surrogate is still reported, as one 3-byte SURROGATE unit.
    expected_units = []
    offset = 0
    for piece in pieces:
        encoded = piece.encode("utf-8", "surrogatepass")
        if len(piece) == 1 and 0xD800 <= ord(piece) <= 0xDFFF:
            expected_units.append(Unit(offset, encoded, K.SURROGATE))
        offset += len(encoded)
    random_chunks = split_at(data, draw.draw(st.lists(st.integers(0, len(data)), max_size=12)))
    for chunks in chunkings(data, random_chunks):
        assert decode_chunks(chunks, errors="surrogatepass") == (expected_text, expected_units)


@pytest.mark.parametrize("hex_input", ["eda041", "ff", "eda0", "c0af", "41f4908080"])
def test_surrogatepass_is_strict_for_everything_else(hex_input: str) -> None:
    data = bytes.fromhex(hex_input)
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8", "surrogatepass")  # CPython fails here too
    for chunks in every_chunking(data):
        decoder = Utf8Decoder("surrogatepass")
        with pytest.raises(Utf8DecodeError) as info:
            for chunk in chunks:
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
        first = reference_decode(data).units[0]
        assert (info.value.offset, info.value.malformed.data) == (first.offset, first.data)


_SURROGATEPASS_OR_DROP = "utf8stream-tests.surrogatepass-or-drop"
_passed_or_dropped: list[tuple[int, bytes, bool]] = []


def _surrogatepass_or_drop(exc: UnicodeError) -> tuple[str, int]:
    """CPython's surrogatepass for encoded surrogates; any other unit is dropped, which is
    what a strict-mode caller that goes on after each error gets.  Logs each unit."""
    assert isinstance(exc, UnicodeDecodeError)
    obj, start = exc.object, exc.start
    triple = bytes(obj[start : start + 3])
    if (
        len(triple) == 3
        and triple[0] == 0xED
        and 0xA0 <= triple[1] <= 0xBF
        and 0x80 <= triple[2] <= 0xBF
    ):
        _passed_or_dropped.append((start, triple, True))
        return triple.decode("utf-8", "surrogatepass"), start + 3
    _passed_or_dropped.append((start, bytes(obj[start : exc.end]), False))
    return "", exc.end


codecs.register_error(_SURROGATEPASS_OR_DROP, _surrogatepass_or_drop)


@CORE
@given(chunked())
def test_surrogatepass_on_any_bytes(case: tuple[bytes, list[bytes]]) -> None:
    data, random_chunks = case
    _passed_or_dropped.clear()
    expected = data.decode("utf-8", _SURROGATEPASS_OR_DROP)
    # Every unit is reported: a passed surrogate as one 3-byte SURROGATE event, any other
    # unit as the reference cuts and classifies it (it also raises).
    kinds = {u.offset: u for u in reference_decode(data).units}
    expected_events = []
    expected_errors = []
    for start, unit, passed in _passed_or_dropped:
        if passed:
            expected_events.append((start, unit, K.SURROGATE))
        else:
            assert kinds[start].data == unit
            expected_events.append(kinds[start])
            expected_errors.append(kinds[start])
    for chunks in chunkings(data, random_chunks):
        events: list[Malformed] = []
        decoder = Utf8Decoder("surrogatepass", on_malformed=events.append)
        text, errors = strict_loop(decoder, chunks, limit=len(data))
        assert text == expected, chunks
        assert [(e.offset, e.malformed.data, e.kind) for e in errors] == expected_errors
        assert event_tuples(events) == expected_events, chunks


# -- a handler registered with codecs.register_error ------------------------------------

_HANDLER = "utf8stream-tests.angle-hex"
_handler_calls: list[tuple[type, bytes]] = []


def _angle_hex(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    unit = bytes(exc.object[exc.start : exc.end])
    _handler_calls.append((type(exc), unit))
    return f"<{unit.hex()}>", exc.end


codecs.register_error(_HANDLER, _angle_hex)


@HEAVY
@given(chunked())
def test_registered_handler_sees_exactly_each_unit_in_order(
    case: tuple[bytes, list[bytes]],
) -> None:
    data, random_chunks = case
    ref = reference_decode(data)
    _handler_calls.clear()
    expected = data.decode("utf-8", _HANDLER)
    assert expected == ref.render(lambda u: f"<{u.data.hex()}>")
    for chunks in chunkings(data, random_chunks):
        _handler_calls.clear()
        events: list[Malformed] = []
        text = "".join(feed(Utf8Decoder(_HANDLER, on_malformed=events.append), chunks))
        assert text == expected, chunks
        assert event_tuples(events) == ref.units
        assert all(issubclass(t, UnicodeDecodeError) for t, _ in _handler_calls)
        assert [unit for _, unit in _handler_calls] == [u.data for u in ref.units], chunks


def test_unknown_policy_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        Utf8Decoder("no-such-policy-in-this-test").decode(b"\xff", final=True)


# -- strict -----------------------------------------------------------------------------


def test_strict_error_fields() -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder("strict", start_offset=1000, on_malformed=events.append)
    assert decoder.decode(b"ok ") == "ok "
    with pytest.raises(Utf8DecodeError) as info:
        decoder.decode(b"caf\xc3\xa9 \xe0\x80!")
    err = info.value
    assert isinstance(err, UnicodeDecodeError)
    assert err.offset == 1009
    assert err.kind is K.OVERLONG
    assert err.malformed == Malformed(1009, b"\xe0", K.OVERLONG)
    assert err.partial == "café "  # only this call's text, up to the unit
    assert err.object[err.start : err.end] == b"\xe0"
    assert err.encoding == "utf-8"
    assert events == [err.malformed]
    # The rest of the call's input is kept: the next call continues right after the unit.
    with pytest.raises(Utf8DecodeError) as info:
        decoder.decode(b"")
    assert info.value.malformed == Malformed(1010, b"\x80", K.UNEXPECTED_CONTINUATION)
    assert info.value.partial == ""
    assert decoder.decode(b"") == "!"
    assert decoder.decode(b" more", final=True) == " more"
    assert decoder.position == 1000 + 3 + 9 + 5


def test_strict_unit_broken_by_the_next_chunk() -> None:
    decoder = Utf8Decoder("strict")
    assert decoder.decode(b"x\xe1") == "x"
    with pytest.raises(Utf8DecodeError) as info:
        decoder.decode(b"Ay")
    assert info.value.malformed == Malformed(1, b"\xe1", K.INCOMPLETE_SEQUENCE)
    assert info.value.partial == ""
    assert decoder.decode(b"") == "Ay"


def test_strict_truncated_at_end() -> None:
    decoder = Utf8Decoder("strict")
    assert decoder.decode(b"ab\xf0\x9f") == "ab"
    with pytest.raises(Utf8DecodeError) as info:
        decoder.decode(b"\x98", final=True)
    assert info.value.malformed == Malformed(2, b"\xf0\x9f\x98", K.TRUNCATED_AT_END)
    assert decoder.decode(b"", final=True) == ""
    assert decoder.buffered == 0


def test_strict_rest_of_a_final_call_is_still_the_end_of_the_stream() -> None:
    # The rest of the failing call's input is kept and decoded by the next call, even
    # decode(b""); that input ended the stream, so its truncated tail is a unit too.
    decoder = Utf8Decoder("strict")
    with pytest.raises(Utf8DecodeError) as info:
        decoder.decode(b"\xffab\xe2", final=True)
    assert info.value.malformed == Malformed(0, b"\xff", K.INVALID_BYTE)
    with pytest.raises(Utf8DecodeError) as info:
        decoder.decode(b"")
    assert info.value.malformed == Malformed(3, b"\xe2", K.TRUNCATED_AT_END)
    assert info.value.partial == "ab"
    assert decoder.buffered == 0
    assert decoder.decode(b"") == ""


def test_strict_does_not_poison_later_chunks() -> None:
    # CPython's incremental decoder raises again on every later chunk; ours does not.
    decoder = Utf8Decoder("strict")
    with pytest.raises(Utf8DecodeError):
        decoder.decode(b"\xff")
    assert decoder.decode(b"fine") == "fine"
    assert decoder.decode(b"", final=True) == ""


@pytest.mark.parametrize(
    ("flush_with_last", "retry_final"),
    # The two mixed ways run in the soak step: each way is a whole property run.
    [
        pytest.param(False, True, id="apart"),
        pytest.param(True, True, id="with-last", marks=pytest.mark.soak),
        pytest.param(False, False, id="apart-plain-retry", marks=pytest.mark.soak),
        pytest.param(True, False, id="with-last-plain-retry"),
    ],
)
@CORE
@given(case=chunked(), start=st.integers(0, 50))
def test_strict_loop_loses_nothing_but_the_bad_units(
    case: tuple[bytes, list[bytes]], start: int, flush_with_last: bool, retry_final: bool
) -> None:
    # The caller catches each error, keeps e.partial and calls decode(b"") again.  With a
    # "plain retry", a final call that raised is retried with decode(b"") alone: the rest
    # of that call's input still ends the stream, so a truncated tail is still reported.
    data, random_chunks = case
    ref = reference_decode(data, start_offset=start)
    expected = data.decode("utf-8", "ignore")
    assert expected == ref.render("ignore")
    for chunks in chunkings(data, random_chunks):
        events: list[Malformed] = []
        decoder = Utf8Decoder("strict", start_offset=start, on_malformed=events.append)
        text, errors = strict_loop(
            decoder,
            chunks,
            limit=len(data),
            flush_with_last=flush_with_last,
            retry_final=retry_final,
        )
        assert text == expected, chunks
        assert [(e.offset, e.malformed.data, e.kind) for e in errors] == ref.units, chunks
        assert all(e.malformed.offset == e.offset for e in errors)
        assert all(e.object[e.start : e.end] == e.malformed.data for e in errors)
        assert event_tuples(events) == ref.units
        assert decoder.buffered == 0
        assert decoder.position == start + len(data)
        stats = decoder.statistics()
        assert dict(stats.malformed) == dict(Counter(u.kind for u in ref.units))
        assert stats.chars_out == len(text)
        assert stats.bytes_fed == len(data)
        # Without on_malformed the errors must carry the same offsets and units.
        unobserved = Utf8Decoder("strict", start_offset=start)
        text, errors = strict_loop(
            unobserved,
            chunks,
            limit=len(data),
            flush_with_last=flush_with_last,
            retry_final=retry_final,
        )
        assert text == expected, chunks
        assert [(e.offset, e.malformed.data, e.kind) for e in errors] == ref.units, chunks


@CORE
@given(st.text(max_size=50), st.data())
def test_strict_never_raises_on_valid_text(text: str, draw: st.DataObject) -> None:
    data = text.encode("utf-8")
    chunks = split_at(data, draw.draw(st.lists(st.integers(0, len(data)), max_size=8)))
    assert decode_chunks(chunks, errors="strict") == (text, [])


def test_callback_exception_loses_nothing() -> None:
    # Documented on Utf8Decoder: the exception propagates, the unit counts as consumed,
    # and the text decoded before it, the unit's own U+FFFD included, comes with the
    # next call.
    seen: list[Malformed] = []

    def explode_once(event: Malformed) -> None:
        seen.append(event)
        if len(seen) == 1:
            raise RuntimeError("callback failed")

    decoder = Utf8Decoder(on_malformed=explode_once)
    with pytest.raises(RuntimeError):
        decoder.decode(b"ab\xffcd\xfee")
    rest = decoder.decode(b"", final=True)
    assert rest == "ab\ufffdcd\ufffde"
    assert event_tuples(seen) == [(2, b"\xff", K.INVALID_BYTE), (5, b"\xfe", K.INVALID_BYTE)]
