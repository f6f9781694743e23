"""The core decoder with ``errors="replace"``: exact output, exact events, eager output.

Every behaviour is checked over many chunkings.  Expected text comes from CPython's
``bytes.decode("utf-8", "replace")``; expected events from the reference walker in
``_helpers`` (Unicode Table 3-7, written independently of ``utf8stream``).
"""

from __future__ import annotations

import array
import contextlib
import gc
import weakref
from collections import Counter

import pytest
from _helpers import (
    CORE,
    K,
    Unit,
    any_bytes,
    chunked,
    chunkings,
    decode_chunks,
    event_tuples,
    every_chunking,
    feed,
    fragment_bytes,
    reference_decode,
    split_at,
    trailing_proper_prefix,
)
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import Malformed, MalformedKind, Utf8DecodeError, Utf8Decoder

#: Every test here runs with the C accelerator and in pure Python (conftest).
pytestmark = pytest.mark.usefixtures("implementation")

# -- the oracle itself --------------------------------------------------------------


@CORE
@given(any_bytes)
def test_reference_walker_agrees_with_cpython(data: bytes) -> None:
    # The reference is only an oracle if it is right: its U+FFFD text must be CPython's.
    ref = reference_decode(data)
    assert ref.render("replace") == data.decode("utf-8", "replace")
    assert ref.render("ignore") == data.decode("utf-8", "ignore")
    assert "".join(u.data.hex() for u in ref.units) == "".join(
        data[u.offset : u.offset + len(u.data)].hex() for u in ref.units
    )


def test_malformed_kind_has_exactly_the_design_members() -> None:
    assert [k.name for k in MalformedKind] == [
        "UNEXPECTED_CONTINUATION",
        "OVERLONG",
        "SURROGATE",
        "OUT_OF_RANGE",
        "INVALID_BYTE",
        "INCOMPLETE_SEQUENCE",
        "TRUNCATED_AT_END",
        "LOST_BYTES",
    ]


def test_decoder_is_an_incremental_decoder() -> None:
    import codecs

    assert issubclass(Utf8Decoder, codecs.IncrementalDecoder)
    assert Utf8Decoder().errors == "replace"


# -- readable examples, every chunking ------------------------------------------------

U = Unit
EXAMPLES: list[tuple[str, str, list[Unit]]] = [
    ("41", "A", []),
    ("c3a9", "é", []),
    ("e0a080", "\u0800", []),
    ("ed9fbf", "\ud7ff", []),
    ("f09f9880", "😀", []),
    ("f48fbfbf", "\U0010ffff", []),
    ("efbbbf41", "\ufeffA", []),  # a BOM is kept as U+FEFF, like CPython's utf-8
    ("ff", "\ufffd", [U(0, b"\xff", K.INVALID_BYTE)]),
    ("f8", "\ufffd", [U(0, b"\xf8", K.INVALID_BYTE)]),
    ("fd", "\ufffd", [U(0, b"\xfd", K.INVALID_BYTE)]),
    ("80", "\ufffd", [U(0, b"\x80", K.UNEXPECTED_CONTINUATION)]),
    ("f5", "\ufffd", [U(0, b"\xf5", K.OUT_OF_RANGE)]),
    ("f7", "\ufffd", [U(0, b"\xf7", K.OUT_OF_RANGE)]),
    (
        "c0af",
        "\ufffd\ufffd",
        [U(0, b"\xc0", K.OVERLONG), U(1, b"\xaf", K.UNEXPECTED_CONTINUATION)],
    ),
    (
        "c1bf",
        "\ufffd\ufffd",
        [U(0, b"\xc1", K.OVERLONG), U(1, b"\xbf", K.UNEXPECTED_CONTINUATION)],
    ),
    (
        "e080af",
        "\ufffd" * 3,
        [
            U(0, b"\xe0", K.OVERLONG),
            U(1, b"\x80", K.UNEXPECTED_CONTINUATION),
            U(2, b"\xaf", K.UNEXPECTED_CONTINUATION),
        ],
    ),
    (
        "f08f",
        "\ufffd\ufffd",
        [U(0, b"\xf0", K.OVERLONG), U(1, b"\x8f", K.UNEXPECTED_CONTINUATION)],
    ),
    (
        "eda080",
        "\ufffd" * 3,
        [
            U(0, b"\xed", K.SURROGATE),
            U(1, b"\xa0", K.UNEXPECTED_CONTINUATION),
            U(2, b"\x80", K.UNEXPECTED_CONTINUATION),
        ],
    ),
    (
        "f49080",
        "\ufffd" * 3,
        [
            U(0, b"\xf4", K.OUT_OF_RANGE),
            U(1, b"\x90", K.UNEXPECTED_CONTINUATION),
            U(2, b"\x80", K.UNEXPECTED_CONTINUATION),
        ],
    ),
    ("e141", "\ufffdA", [U(0, b"\xe1", K.INCOMPLETE_SEQUENCE)]),
    ("e0c3a9", "\ufffdé", [U(0, b"\xe0", K.INCOMPLETE_SEQUENCE)]),
    ("f0908041", "\ufffdA", [U(0, b"\xf0\x90\x80", K.INCOMPLETE_SEQUENCE)]),
    ("e180e180", "\ufffd\ufffd", [
        U(0, b"\xe1\x80", K.INCOMPLETE_SEQUENCE),
        U(2, b"\xe1\x80", K.TRUNCATED_AT_END),
    ]),
    ("61e180", "a\ufffd", [U(1, b"\xe1\x80", K.TRUNCATED_AT_END)]),
    ("f09080", "\ufffd", [U(0, b"\xf0\x90\x80", K.TRUNCATED_AT_END)]),
    ("c3", "\ufffd", [U(0, b"\xc3", K.TRUNCATED_AT_END)]),
]  # fmt: skip


@pytest.mark.parametrize(("hex_input", "expected_text", "expected_units"), EXAMPLES)
def test_examples_over_every_chunking(
    hex_input: str, expected_text: str, expected_units: list[Unit]
) -> None:
    data = bytes.fromhex(hex_input)
    assert data.decode("utf-8", "replace") == expected_text  # the table agrees with CPython
    assert reference_decode(data).units == expected_units  # ... and with the reference
    for chunks in every_chunking(data):
        for with_last in (False, True):
            text, events = decode_chunks(chunks, flush_with_last=with_last)
            assert (text, events) == (expected_text, expected_units), chunks
        spaced = [p for c in chunks for p in (b"", c)] + [b""]
        assert decode_chunks(spaced) == (expected_text, expected_units), spaced


def test_event_fields() -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(on_malformed=events.append, start_offset=7)
    assert decoder.decode(b"ab\xe1\x80") == "ab"
    assert events == []
    assert decoder.decode(b"c", final=True) == "\ufffdc"
    (event,) = events
    assert event == Malformed(9, b"\xe1\x80", K.INCOMPLETE_SEQUENCE)
    assert event.end == 11
    with pytest.raises(AttributeError):
        event.offset = 3  # type: ignore[misc]


# -- point 1: any bytes, any chunking -------------------------------------------------


def _check_exact(data: bytes, random_chunks: list[bytes], start_offset: int = 0) -> None:
    expected_text = data.decode("utf-8", "replace")
    expected_units = reference_decode(data, start_offset=start_offset).units
    for chunks in chunkings(data, random_chunks):
        for with_last in (False, True):
            text, events = decode_chunks(
                chunks, start_offset=start_offset, flush_with_last=with_last
            )
            assert text == expected_text, chunks
            assert events == expected_units, chunks


@CORE
@given(chunked(st.binary(max_size=80)))
def test_arbitrary_bytes_any_chunking(case: tuple[bytes, list[bytes]]) -> None:
    _check_exact(*case)


@CORE
@given(chunked(fragment_bytes))
def test_interesting_fragments_any_chunking(case: tuple[bytes, list[bytes]]) -> None:
    _check_exact(*case)


@CORE
@given(chunked(), st.integers(min_value=1, max_value=2**40))
def test_start_offset_shifts_every_event(
    case: tuple[bytes, list[bytes]], start_offset: int
) -> None:
    data, chunks = case
    _check_exact(data, chunks, start_offset)
    plain = reference_decode(data).units
    shifted = reference_decode(data, start_offset=start_offset).units
    assert [u.offset + start_offset for u in plain] == [u.offset for u in shifted]


@CORE
@given(st.text(max_size=40), st.data())
def test_valid_text_round_trips_without_events(text: str, draw: st.DataObject) -> None:
    # st.text() never yields lone surrogates, so this is always valid UTF-8.
    data = text.encode("utf-8")
    chunks = split_at(data, draw.draw(st.lists(st.integers(0, len(data)), max_size=10)))
    assert decode_chunks(chunks) == (text, [])


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_accepts_any_bytes_like_chunk(kind: type) -> None:
    data = "añ€😀".encode() + b"\xff\xe1\x80" + b"z"
    chunks = [kind(c) for c in split_at(data, [2, 3, 5, 9, 11])]
    expected = (data.decode("utf-8", "replace"), reference_decode(data).units)
    assert decode_chunks(chunks) == expected


def test_accepts_a_memoryview_of_wider_items() -> None:
    # A buffer of 16-bit items is decoded as its raw bytes, like bytes(buffer) would be.
    words = array.array("H", [0x4141, 0xA9C3, 0x80E2])  # native order: bytes vary
    raw = words.tobytes()
    text, events = decode_chunks([memoryview(words)])
    assert text == raw.decode("utf-8", "replace")
    assert events == reference_decode(raw).units


def test_decode_does_not_keep_a_reference_to_a_mutable_chunk() -> None:
    decoder = Utf8Decoder()
    buf = bytearray(b"x\xe2\x82")
    assert decoder.decode(buf) == "x"
    buf[:] = b"\xff\xff\xff"  # the caller reuses its buffer
    assert decoder.decode(b"\xac", final=True) == "€"


# -- point 2: eager output ------------------------------------------------------------


@CORE
@given(chunked())
def test_output_so_far_is_everything_already_certain(case: tuple[bytes, list[bytes]]) -> None:
    data, random_chunks = case
    for chunks in chunkings(data, random_chunks):
        decoder = Utf8Decoder()
        fed = b""
        out = ""
        for chunk in chunks:
            out += decoder.decode(chunk)
            fed += chunk
            held = trailing_proper_prefix(fed)
            assert out == fed[: len(fed) - len(held)].decode("utf-8", "replace"), chunks
            assert decoder.getstate() == (held, 0)
            assert decoder.buffered == len(held) <= 3
            assert decoder.position == len(fed)
        out += decoder.decode(b"", final=True)
        assert out == data.decode("utf-8", "replace")
        assert decoder.buffered == 0


@pytest.mark.parametrize(
    ("first", "now", "held"),
    [
        ("eda0", "\ufffd\ufffd", ""),  # no byte can complete ED A0: both units at once
        ("e080", "\ufffd\ufffd", ""),
        ("f490", "\ufffd\ufffd", ""),
        ("f080", "\ufffd\ufffd", ""),
        ("f4a0", "\ufffd\ufffd", ""),
        ("c0", "\ufffd", ""),
        ("f5", "\ufffd", ""),
        ("e180", "", "e180"),
        ("ed9f", "", "ed9f"),
        ("f09080", "", "f09080"),
        ("f48fbf", "", "f48fbf"),
        ("41c3", "A", "c3"),
        ("e1e180", "\ufffd", "e180"),
        ("f0908041e0", "\ufffdA", "e0"),
    ],
)
def test_eager_examples(first: str, now: str, held: str) -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(on_malformed=events.append)
    assert decoder.decode(bytes.fromhex(first)) == now
    assert decoder.getstate() == (bytes.fromhex(held), 0)
    assert len(events) == now.count("\ufffd")  # reported in the same call


def test_eager_surrogate_events_come_at_once() -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(on_malformed=events.append, start_offset=5)
    assert decoder.decode(b"\xed\xa0") == "\ufffd\ufffd"
    assert event_tuples(events) == [
        (5, b"\xed", K.SURROGATE),
        (6, b"\xa0", K.UNEXPECTED_CONTINUATION),
    ]
    assert decoder.decode(b"\x80", final=True) == "\ufffd"
    assert event_tuples(events)[2] == (7, b"\x80", K.UNEXPECTED_CONTINUATION)


def test_held_prefix_completes_in_the_next_call() -> None:
    decoder = Utf8Decoder()
    assert decoder.decode(b"\xf0") == ""
    assert decoder.decode(b"\x90") == ""
    assert decoder.decode(b"\x80") == ""
    assert decoder.decode(b"\x80") == "\U00010000"
    assert decoder.getstate() == (b"", 0)


# -- point 7: no crash, bounded memory ------------------------------------------------


@CORE
@given(chunked(st.binary(max_size=200)), st.booleans())
def test_never_crashes_and_holds_at_most_three_bytes(
    case: tuple[bytes, list[bytes]], final_mid_way: bool
) -> None:
    _, chunks = case
    decoder = Utf8Decoder()
    for k, chunk in enumerate(chunks):
        # A final=True in the middle ends one stream; the next chunk starts another.
        result = decoder.decode(chunk, final=final_mid_way and k == len(chunks) // 2)
        assert isinstance(result, str)
        assert decoder.buffered <= 3
        assert len(decoder.getstate()[0]) <= 3
    decoder.decode(b"", final=True)
    assert decoder.buffered == 0


def test_final_mid_stream_flushes_and_the_decoder_goes_on() -> None:
    # final=True flushes a held prefix as TRUNCATED_AT_END; later input decodes normally.
    events: list[Malformed] = []
    decoder = Utf8Decoder(on_malformed=events.append)
    assert decoder.decode(b"a\xe2\x82", final=True) == "a\ufffd"
    assert decoder.decode(b"\xac", final=True) == "\ufffd"
    assert event_tuples(events) == [
        (1, b"\xe2\x82", K.TRUNCATED_AT_END),
        (3, b"\xac", K.UNEXPECTED_CONTINUATION),
    ]


def test_large_input_with_small_and_large_chunks() -> None:
    block = "ascii, ñandú, 水, 😀\n".encode() + b"\xff\xed\xa0\x80\xe2\x82"
    data = block * 2000
    expected_text = data.decode("utf-8", "replace")
    expected_units = reference_decode(data).units
    for size in (1 << 16, 4093, 256, 7):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert decode_chunks(chunks) == (expected_text, expected_units), size


# -- position and statistics ------------------------------------------------------------


@CORE
@given(chunked(), st.integers(0, 1000))
def test_position_counts_bytes_fed(case: tuple[bytes, list[bytes]], start: int) -> None:
    data, chunks = case
    decoder = Utf8Decoder(start_offset=start)
    assert decoder.position == start
    fed = 0
    for chunk in chunks:
        decoder.decode(chunk)
        fed += len(chunk)
        assert decoder.position == start + fed
    decoder.decode(b"", final=True)
    assert decoder.position == start + len(data)


@CORE
@given(chunked())
def test_statistics_match_the_reference(case: tuple[bytes, list[bytes]]) -> None:
    data, chunks = case
    decoder = Utf8Decoder(start_offset=3)
    text = "".join(feed(decoder, chunks))
    stats = decoder.statistics()
    expected_kinds = Counter(u.kind for u in reference_decode(data).units)
    assert stats.bytes_fed == len(data)
    assert stats.chars_out == len(text) == len(data.decode("utf-8", "replace"))
    assert dict(stats.malformed) == dict(expected_kinds)
    assert stats.malformed_total == sum(expected_kinds.values())
    assert stats.gaps == 0
    assert stats.lost_bytes_declared == 0


def test_statistics_is_an_immutable_snapshot() -> None:
    decoder = Utf8Decoder()
    decoder.decode(b"\xff")
    before = decoder.statistics()
    decoder.decode(b"\xffab")
    assert before.malformed == {K.INVALID_BYTE: 1}
    assert before.bytes_fed == 1
    assert decoder.statistics().malformed == {K.INVALID_BYTE: 2}
    with pytest.raises(AttributeError):
        before.bytes_fed = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        before.malformed[K.OVERLONG] = 1  # type: ignore[index]


@pytest.mark.parametrize("variant", ["utf-8", "wtf-8"])
@pytest.mark.parametrize("errors", ["replace", "strict", "surrogateescape", "surrogatepass"])
def test_a_decoder_is_freed_without_the_cycle_collector(errors: str, variant: str) -> None:
    # The scanner calls the policy back for each unit; were that the decoder itself, a
    # dropped decoder (and its scanner's scratch array) would wait for the collector.
    gc.disable()
    try:
        decoder = Utf8Decoder(errors, variant=variant, on_malformed=lambda event: None)
        with contextlib.suppress(Utf8DecodeError):
            decoder.decode(b"a\xffb" * 3)
        ref = weakref.ref(decoder)
        del decoder
        assert ref() is None
    finally:
        gc.enable()


# -- the pure-Python path's cost per call ----------------------------------------------


def python_calls(run: object) -> list[str]:
    """The names of the Python functions ``run()`` calls (C functions left out)."""
    import sys

    assert callable(run)
    names: list[str] = []

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call":
            names.append(frame.f_code.co_name)  # type: ignore[attr-defined]

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return names


#: The Python frames of a clean chunk in pure Python: the decoder's ``decode`` and its
#: scanner's, which decodes it with CPython's codec and nothing else.
CLEAN = ["<lambda>", "decode", "decode"]


def test_pure_decode_of_a_clean_chunk_is_two_python_frames() -> None:
    """In pure Python a clean chunk (whole characters, or one cut at its end) costs two
    Python frames, the decoder's ``decode`` and its scanner's (codecs' incremental
    decoder costs one): what ``Utf8ReceiveStream`` pays per chunk."""
    from utf8stream.accel import use_accelerator

    with use_accelerator(False):
        decoder = Utf8Decoder()
    for chunk, text in ((b"plain ascii", "plain ascii"), (b"caf\xc3", "caf"), (b"\xa9!", "\xe9!")):
        out: list[str] = []
        calls = python_calls(lambda chunk=chunk, out=out: out.append(decoder.decode(chunk)))
        assert calls == CLEAN
        assert out == [text]
    assert decoder.position == 17
    assert decoder.statistics().chars_out == 16
    # Damage still goes to the scanner, which decides the units.
    calls = python_calls(lambda: decoder.decode(b"\xff"))
    assert len(calls) > len(CLEAN)
    assert decoder.statistics().malformed_total == 1


def test_pure_decode_takes_the_clean_path_again_after_the_dirty_window() -> None:
    """After damage the scanner decides every chunk for a while (the dirty window: a
    failed strict attempt costs an exception), then a clean chunk is two frames again;
    ``decode_lines`` damage opens the window as ``decode``'s does."""
    from utf8stream.accel import use_accelerator
    from utf8stream.core.scanner import _DIRTY_WINDOW

    with use_accelerator(False):
        decoder = Utf8Decoder()
    clean = b"x" * 4096
    for damage in (
        lambda: decoder.decode(b"\xff"),
        lambda: decoder.decode_lines(b"", b"\xff\n", 10, 99),
    ):
        damage()
        seen = 0
        while seen < _DIRTY_WINDOW:
            assert len(python_calls(lambda: decoder.decode(clean))) > len(CLEAN)
            seen += len(clean)
        assert python_calls(lambda: decoder.decode(clean)) == CLEAN
    assert decoder.statistics().malformed_total == 2


def test_a_callback_of_decode_lines_cannot_decode_on_the_clean_path() -> None:
    """The pure decoder's clean path is closed while its scanner cuts lines, as while it
    decodes: a callback's own ``decode`` is refused (and changes nothing)."""
    from utf8stream.accel import use_accelerator

    refused: list[str] = []
    decoders: list[Utf8Decoder] = []

    def callback(event: Malformed) -> None:
        try:
            decoders[0].decode(b"clean")
        except RuntimeError as exc:
            refused.append(str(exc))

    with use_accelerator(False):
        decoders.append(Utf8Decoder(on_malformed=callback))
    decoder = decoders[0]
    lines = decoder.decode_lines(b"", b"one\n\xfftwo\n", 10, 99)
    assert lines is not None
    assert lines.texts == ["one", "\ufffdtwo"]
    assert len(refused) == 1
    assert "inside its own on_malformed callback" in refused[0]
    assert decoder.position == 9
    assert decoder.decode(b"clean") == "clean"


def test_the_decoder_keeps_its_state_in_slots() -> None:
    """A ``Utf8Decoder`` has more attributes than CPython's shared-key instance
    dictionaries hold, so in a ``__dict__`` every attribute the pure ``decode`` touches
    per call would be a hashed lookup; in slots each is read at a fixed offset."""
    from utf8stream.accel import use_accelerator
    from utf8stream.core._accel import built_accelerator

    for accelerated in (False, True) if built_accelerator() is not None else (False,):
        with use_accelerator(accelerated):
            decoder = Utf8Decoder(on_malformed=lambda event: None)
        decoder.decode(b"caf\xc3")
        decoder.decode(b"\xa9 \xff \xe2")
        decoder.mark_gap()
        decoder.decode(b"\x82 more", True)
        decoder.statistics()
        decoder.checkpoint()
        assert vars(decoder) == {}
