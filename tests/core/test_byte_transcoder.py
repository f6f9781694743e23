"""The byte-to-byte transcoder (``core/direct.py``: ``_transcode.c`` and its twin in
``core/_native.py``) against the str path.

Oracles: for a UTF-8 source, ``Utf8Decoder`` then ``str.encode`` (the path the
transcoder replaces) and CPython's ``bytes.decode("utf-8", errors)`` for the text; for a
UTF-16/32 source, CPython's one-shot decoder with an error handler that records each
unit (``codec_error_kind`` names it, as ``transcode_file`` does).  Both implementations
must give those results for every chunking, and the same results as each other, step
by step (output, failure, held bytes, position, counts).
"""

from __future__ import annotations

import codecs
import random
from typing import Any

import pytest
from _helpers import CORE, FRAGMENTS, examples, split_at
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream import Malformed, MalformedKind, Utf8Decoder
from utf8stream.core import _accel, _native
from utf8stream.core._accel import ACCEL_KINDS
from utf8stream.core.direct import DIRECT_ENCODINGS, byte_transcoder, direct
from utf8stream.core.events import codec_error_kind

K = MalformedKind

IMPLEMENTATIONS: list[Any] = [_native.ByteTranscoder]
if _accel.accelerator() is not None:
    IMPLEMENTATIONS.append(_accel.accelerator().ByteTranscoder)
IDS = ["python", "c"][: len(IMPLEMENTATIONS)]

#: UTF-8 fragments, with ASCII runs long enough for the 16-byte SIMD blocks.
UTF8_FRAGMENTS = [*FRAGMENTS, b"x" * 16, b"0123456789abcdefghij", b"\x7f" * 33]
utf8_data = st.lists(
    st.one_of(st.sampled_from(UTF8_FRAGMENTS), st.binary(min_size=1, max_size=3)), max_size=40
).map(b"".join)
#: Code units of interest: ASCII, BMP, both surrogate halves, past U+10FFFF.
UNITS = [0x41, 0x7F, 0x80, 0xE9, 0x7FF, 0x800, 0x20AC, 0xD7FF, 0xD800, 0xD83D, 0xDBFF,
         0xDC00, 0xDE00, 0xDFFF, 0xE000, 0xFEFF, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF,
         0x110000, 0xFFFFFFFF]  # fmt: skip


@st.composite
def wide_data(draw: st.DrawFn, encoding: str) -> bytes:
    """UTF-16 or UTF-32 bytes in ``encoding``: code units of interest (in UTF-16, only
    their low 16 bits), ASCII runs, perhaps a stray byte or two at the end."""
    width = 2 if "16" in encoding else 4
    order = "little" if encoding.endswith("le") else "big"
    units = draw(st.lists(st.one_of(st.sampled_from(UNITS), st.just(-1)), max_size=30))
    out = b"".join(
        ("abcdefghijklmnopq".encode(encoding) if u < 0 else (u % (1 << 8 * width)).to_bytes(
            width, order))
        for u in units
    )  # fmt: skip
    return out + draw(st.binary(max_size=3))


def str_path(data: bytes, source: str, target: str, errors: str) -> tuple[bytes, list[Malformed]]:
    """The output and events of the str path, for the whole input at once."""
    events: list[Malformed] = []
    if source == "utf-8":
        text = Utf8Decoder(errors, on_malformed=events.append).decode(data, final=True)
        assert text == data.decode("utf-8", errors)  # the second, independent oracle
        return text.encode(target), events

    def record(exc: UnicodeError) -> tuple[str, int]:
        assert isinstance(exc, UnicodeDecodeError)
        unit = bytes(exc.object[exc.start : exc.end])
        events.append(Malformed(exc.start, unit, codec_error_kind(exc.reason)))
        return ("\ufffd" if errors == "replace" else ""), exc.end

    codecs.register_error("test.byte-transcoder.record", record)
    return data.decode(source, "test.byte-transcoder.record").encode(target), events


def transcode_into(transcoder: Any, buffer: bytearray, chunk: bytes, final: bool) -> bytes:
    """``transcode`` through ``transcode_into``, at an offset of a reused buffer of
    exactly the room ``bound`` asks for (the bytes around it must stay untouched)."""
    need = transcoder.bound(len(chunk))
    offset = len(chunk) % 3  # 0, 1 or 2: unaligned as well
    if len(buffer) < offset + need + 1:
        buffer.extend(b"\xaa" * (offset + need + 1 - len(buffer)))
    view = memoryview(buffer)[: offset + need]
    buffer[offset + need] = 0xAA
    try:
        written = transcoder.transcode_into(chunk, view, offset, final)
    finally:
        view.release()
    assert 0 <= written <= need
    assert buffer[offset + need] == 0xAA
    return bytes(buffer[offset : offset + written])


def run(
    kind: Any,
    source: str,
    target: str,
    errors: str,
    chunks: list[bytes],
    events: bool,
    into: bool = False,
) -> tuple[list[Any], list[Malformed], tuple[int, ...]]:
    """Every step of a run: each call's output, failure, held bytes, position and bound
    for the next chunk; a call that failed (strict) is followed by empty calls until none
    fails.  ``into``: the output is written by ``transcode_into`` into a reused buffer."""
    seen: list[Malformed] = []
    transcoder = kind(
        source, target, errors, seen.append if events else None, 0, Malformed, ACCEL_KINDS
    )
    steps: list[Any] = []
    buffer = bytearray()
    for i, chunk in enumerate([*chunks, b""]):
        final = i == len(chunks)
        while True:
            bound = transcoder.bound(len(chunk))
            if into:
                out = transcode_into(transcoder, buffer, chunk, final)
            else:
                out = transcoder.transcode(chunk, final)
            assert len(out) <= bound
            steps.append(
                (out, transcoder.failure, transcoder.buffered, transcoder.position, bound)
            )
            if transcoder.failure is None:
                break
            chunk = b""
    return steps, seen, transcoder.drain()


def both(source: str, target: str, errors: str, chunks: list[bytes], events: bool) -> Any:
    """The run of each implementation; they must agree on every step."""
    runs = [
        run(kind, source, target, errors, chunks, events, into)
        for kind in IMPLEMENTATIONS
        for into in (False, True)
    ]
    for other in runs[1:]:
        assert other == runs[0]
    return runs[0]


def check(
    source: str, target: str, data: bytes, chunks: list[bytes], errors: str, events: bool
) -> None:
    steps, seen, drained = both(source, target, errors, chunks, events)
    output = b"".join(out for out, *_ in steps)
    failures = [failure for _, failure, *_ in steps if failure is not None]
    # Stepping past every strict failure gives the output of "ignore", one failure per unit.
    expected, expected_events = str_path(
        data, source, target, "ignore" if errors == "strict" else errors
    )
    if errors == "strict":
        assert output == expected
        assert failures == expected_events
    else:
        assert output == expected
        assert failures == []
    assert seen == (expected_events if events else [])
    counts = {kind: n for kind, n in zip(ACCEL_KINDS, drained, strict=False) if n}
    expected_counts: dict[MalformedKind, int] = {}
    for event in expected_events:
        expected_counts[event.kind] = expected_counts.get(event.kind, 0) + 1
    assert counts == expected_counts
    text = output.decode(target)
    assert drained[-1] == len(text)
    assert steps[-1][2:4] == (0, len(data))  # nothing held at the end; every byte counted


#: Each example draws its encoding, policy, chunking and whether events are wanted.
DIFFERENTIAL = settings(CORE, max_examples=examples(800))


@DIFFERENTIAL
@given(
    data=st.data(),
    target=st.sampled_from([*DIRECT_ENCODINGS, "utf-8"]),  # utf-8: the repair
    errors=st.sampled_from(["replace", "ignore", "strict"]),
    events=st.booleans(),
)
def test_from_utf8_is_the_str_path(data: Any, target: str, errors: str, events: bool) -> None:
    raw = data.draw(utf8_data)
    chunks = split_at(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    check("utf-8", target, raw, chunks, errors, events)


@DIFFERENTIAL
@given(
    data=st.data(),
    source=st.sampled_from(DIRECT_ENCODINGS),
    errors=st.sampled_from(["replace", "ignore", "strict"]),
    events=st.booleans(),
)
def test_to_utf8_is_the_codec_path(data: Any, source: str, errors: str, events: bool) -> None:
    raw = data.draw(wide_data(source))
    chunks = split_at(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    check(source, "utf-8", raw, chunks, errors, events)


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
def test_every_kind_of_unit_and_its_offset(kind: Any) -> None:
    events: list[Malformed] = []
    t = kind("utf-8", "utf-16-le", "replace", events.append, 100, Malformed, ACCEL_KINDS)
    data = b"a\x80\xc0\xaf\xed\xa0\x80\xf4\x90\xff\xe2\x82b\xf0\x9f"
    out = t.transcode(data[:13]) + t.transcode(data[13:], True)
    assert out == "a\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffdb\ufffd".encode(
        "utf-16-le"
    )
    assert [(e.offset, e.data, e.kind) for e in events] == [
        (101, b"\x80", K.UNEXPECTED_CONTINUATION),
        (102, b"\xc0", K.OVERLONG),
        (103, b"\xaf", K.UNEXPECTED_CONTINUATION),
        (104, b"\xed", K.SURROGATE),
        (105, b"\xa0", K.UNEXPECTED_CONTINUATION),
        (106, b"\x80", K.UNEXPECTED_CONTINUATION),
        (107, b"\xf4", K.OUT_OF_RANGE),
        (108, b"\x90", K.UNEXPECTED_CONTINUATION),
        (109, b"\xff", K.INVALID_BYTE),
        (110, b"\xe2\x82", K.INCOMPLETE_SEQUENCE),
        (113, b"\xf0\x9f", K.TRUNCATED_AT_END),
    ]
    events.clear()
    back = kind("utf-16-be", "utf-8", "replace", events.append, 0, Malformed, ACCEL_KINDS)
    # A lone low half, a high half before "A", a pair, a high half and an odd byte cut.
    data = b"\xdc\x00\xd8\x3d\x00A\xd8\x3d\xde\x00\xd8\x3d!"
    out = back.transcode(data[:7]) + back.transcode(data[7:], True)
    assert out == "\ufffd\ufffdA😀\ufffd".encode()
    assert [(e.offset, e.data, e.kind) for e in events] == [
        (0, b"\xdc\x00", K.INVALID_BYTE),
        (2, b"\xd8\x3d", K.SURROGATE),
        (10, b"\xd8\x3d!", K.TRUNCATED_AT_END),
    ]


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
@pytest.mark.parametrize("target", DIRECT_ENCODINGS)
def test_long_text_in_odd_chunks(kind: Any, target: str) -> None:
    """Long ASCII runs (the SIMD blocks) between every kind of sequence, cut anywhere,
    there and back."""
    rng = random.Random(14)
    text = "".join(
        rng.choice(["plain ASCII text, long enough for blocks. ", "é", "€", "😀", "\x7f"])
        for _ in range(2000)
    )
    data = text.encode()
    cuts = sorted(rng.sample(range(len(data)), 60))
    there = kind("utf-8", target, "strict", None, 0, Malformed, ACCEL_KINDS)
    out = b"".join(there.transcode(piece) for piece in split_at(data, cuts))
    out += there.transcode(b"", True)
    assert out == text.encode(target)
    back = kind(target, "utf-8", "strict", None, 0, Malformed, ACCEL_KINDS)
    again = b"".join(back.transcode(piece) for piece in split_at(out, cuts))
    assert again + back.transcode(b"", True) == data
    assert there.drain() == back.drain() == (0,) * 7 + (len(text),)


class Boom(Exception):
    pass


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
@pytest.mark.parametrize(("source", "target", "data"), [
    ("utf-8", "utf-32-be", b"ab\xffcd\xfeef"),
    ("utf-16-le", "utf-8", b"a\x00b\x00\x00\xdcc\x00d\x00\x00\xdce\x00f\x00"),
])  # fmt: skip
def test_a_raising_callback_loses_nothing(
    kind: Any, source: str, target: str, data: bytes
) -> None:
    seen: list[Malformed] = []

    def callback(event: Malformed) -> None:
        seen.append(event)
        raise Boom

    t = kind(source, target, "replace", callback, 0, Malformed, ACCEL_KINDS)
    with pytest.raises(Boom):
        t.transcode(data)
    with pytest.raises(Boom):
        t.transcode(b"")  # the rest of the first call, up to the second unit
    out = t.transcode(b"", True)
    # The output of both calls that raised comes first, none of it lost.
    assert out == "ab\ufffdcd\ufffdef".encode(target)
    assert len(seen) == 2
    assert t.buffered == 0


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
def test_the_output_before_a_raising_callback_comes_first_next_time(kind: Any) -> None:
    def callback(event: Malformed) -> None:
        raise Boom

    t = kind("utf-8", "utf-16-le", "ignore", callback, 0, Malformed, ACCEL_KINDS)
    with pytest.raises(Boom):
        t.transcode(b"abc\x80def")
    assert t.transcode(b"g", True) == "abcdefg".encode("utf-16-le")


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
def test_a_callback_cannot_transcode_with_its_own_transcoder(kind: Any) -> None:
    errors: list[BaseException] = []

    def callback(event: Malformed) -> None:
        try:
            t.transcode(b"x")
        except RuntimeError as exc:
            errors.append(exc)

    t = kind("utf-8", "utf-16-le", "replace", callback, 0, Malformed, ACCEL_KINDS)
    assert t.transcode(b"a\xffb", True) == "a\ufffdb".encode("utf-16-le")
    assert len(errors) == 1
    assert "own callback" in str(errors[0])


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
@pytest.mark.parametrize(("args", "error", "message"), [
    (("utf-16-le", "utf-32-le", "replace"), ValueError, "source or target must be utf-8"),
    (("utf-16-le", "utf-16-le", "replace"), ValueError, "source or target must be utf-8"),
    (("utf-8", "latin-1", "replace"), ValueError, "unsupported target encoding 'latin-1'"),
    (("cp1252", "utf-8", "replace"), ValueError, "unsupported source encoding 'cp1252'"),
    (("utf-8", "utf-16-le", "surrogateescape"), ValueError, "errors must be replace, ignore"),
])  # fmt: skip
def test_what_it_refuses(kind: Any, args: tuple[str, ...], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        kind(*args, None, 0, Malformed, ACCEL_KINDS)


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
def test_a_callback_must_be_callable_and_a_position_not_negative(kind: Any) -> None:
    with pytest.raises(TypeError, match="callable"):
        kind("utf-8", "utf-16-le", "replace", 3, 0, Malformed, ACCEL_KINDS)
    with pytest.raises(ValueError, match="negative"):
        kind("utf-8", "utf-16-le", "replace", None, -1, Malformed, ACCEL_KINDS)


def test_direct_names_the_pairs_it_can_do() -> None:
    assert direct("utf-8", "utf-16-le", "strict")
    assert direct("utf-32-be", "utf-8", "ignore")
    assert not direct("utf-8", "utf-16-le", "surrogateescape")
    assert direct("utf-8", "utf-8", "replace")  # the repair
    assert not direct("utf-8", "utf-8", "surrogateescape")
    assert not direct("wtf-8", "utf-8", "replace")
    assert not direct("utf-16-le", "utf-16-be", "replace")
    assert not direct("utf-8", "utf-16", "replace")  # a BOM writer: the codec path
    with pytest.raises(ValueError, match="no byte transcoder"):
        byte_transcoder("utf-8", "latin-1")


@pytest.mark.usefixtures("implementation")
def test_byte_transcoder_follows_the_switch() -> None:
    made = byte_transcoder("utf-8", "utf-16-le")
    expected = _accel.implementation().ByteTranscoder
    assert type(made) is expected
    assert made.transcode("ž".encode(), True) == "ž".encode("utf-16-le")


def test_past_the_accelerators_offsets_python_takes_over() -> None:
    events: list[Malformed] = []
    far = _accel.ACCEL_MAX_POSITION + 5
    made = byte_transcoder("utf-8", "utf-32-le", "replace", events.append, far)
    assert isinstance(made, _native.ByteTranscoder)
    assert made.transcode(b"\xff", True) == "\ufffd".encode("utf-32-le")
    assert events == [Malformed(far, b"\xff", K.INVALID_BYTE)]


# -- transcode_into: the caller's reused buffer ---------------------------------------


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
def test_transcode_into_refuses_too_little_room_and_does_nothing(kind: Any) -> None:
    t = kind("utf-8", "utf-16-le", "replace", None, 0, Malformed, ACCEL_KINDS)
    assert t.bound(3) == 6
    out = bytearray(10)
    for offset in (-1, 5, 11):
        with pytest.raises(ValueError, match="room"):
            t.transcode_into(b"abc", out, offset)
    with pytest.raises(BufferError):
        t.transcode_into(b"abc", bytes(8))
    assert (t.position, t.buffered, out) == (0, 0, bytearray(10))
    assert t.transcode_into(b"ab\xe2\x82", out, 2) == 4  # "ab", the cut euro sign held
    assert out == bytearray(b"\0\0a\0b\0\0\0\0\0")
    assert t.bound(1) == 2 * (1 + 2)  # the two held bytes count
    assert t.transcode_into(b"\xac", out, 0, True) == 2
    assert out[:2] == "€".encode("utf-16-le")


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
def test_transcode_into_keeps_the_output_before_a_raising_callback(kind: Any) -> None:
    def callback(event: Malformed) -> None:
        raise Boom

    t = kind("utf-8", "utf-32-le", "replace", callback, 0, Malformed, ACCEL_KINDS)
    out = bytearray(64)
    with pytest.raises(Boom):
        t.transcode_into(b"ab\xffc", out)
    assert t.bound(1) == len("ab\ufffd".encode("utf-32-le")) + 4 * (1 + 1)  # carry, "c", "d"
    n = t.transcode_into(b"d", out, 0, True)
    assert bytes(out[:n]) == "ab\ufffdcd".encode("utf-32-le")


@pytest.mark.parametrize("kind", IMPLEMENTATIONS, ids=IDS)
def test_transcode_into_the_buffer_that_holds_the_input(kind: Any) -> None:
    """Input and output in one buffer, overlapping: the input is read as it was."""
    text = "žluťoučký kůň 🐴 " * 3
    data = text.encode("utf-16-le")
    buffer = bytearray(data) + bytearray(len(data) * 3)
    t = kind("utf-16-le", "utf-8", "strict", None, 0, Malformed, ACCEL_KINDS)
    with memoryview(buffer) as view:
        n = t.transcode_into(view[: len(data)], buffer, 1, True)
    assert bytes(buffer[1 : 1 + n]) == text.encode("utf-8")


def _big_chunk_cases() -> list[Any]:
    # The pure-Python twin never releases the GIL: its threads are one case of big chunks,
    # each target of it a repeat of that case for the soak step.
    return [
        pytest.param(kind, target, id=f"{target}-{name}", marks=pytest.mark.soak)
        if name == "python" and target != DIRECT_ENCODINGS[0]
        else pytest.param(kind, target, id=f"{target}-{name}")
        for kind, name in zip(IMPLEMENTATIONS, IDS, strict=True)
        for target in DIRECT_ENCODINGS
    ]


@pytest.mark.parametrize(("kind", "target"), _big_chunk_cases())
def test_big_chunks_from_several_threads(kind: Any, target: str) -> None:
    """Chunks past the size where C releases the GIL, four transcoders in four threads at
    once, each through both entry points: the str path's output and counts."""
    import threading

    unit = "ASCII text, žluťoučký kůň, 日本語, 🐴🐴 ".encode() + b"\xff\xe2\x82"
    data = unit * 20_000  # about 1 MiB
    chunk = 100_000
    expected, events = str_path(data, "utf-8", target, "replace")
    results: dict[int, Any] = {}

    def work(index: int) -> None:
        try:
            results[index] = transcode_all(index)
        except BaseException as exc:  # the test sees it
            results[index] = exc

    def transcode_all(index: int) -> tuple[bytes, tuple[int, ...]]:
        there = kind("utf-8", target, "replace", None, 0, Malformed, ACCEL_KINDS)
        buffer = bytearray()
        out = []
        for i in range(0, len(data), chunk):
            if index % 2:
                buffer.extend(bytes(max(0, there.bound(chunk) - len(buffer))))
                n = there.transcode_into(data[i : i + chunk], buffer)
                out.append(bytes(buffer[:n]))
            else:
                out.append(there.transcode(data[i : i + chunk]))
        out.append(there.transcode(b"", True))
        return b"".join(out), there.drain()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts = [0] * len(ACCEL_KINDS)
    for event in events:
        counts[ACCEL_KINDS.index(event.kind)] += 1
    chars = len(data.decode("utf-8", "replace"))
    assert results == {i: (expected, (*counts, chars)) for i in range(4)}


@pytest.mark.parametrize("kind", IMPLEMENTATIONS[1:], ids=IDS[1:])  # C only
def test_a_call_without_the_gil_keeps_other_threads_out(kind: Any) -> None:
    """While a long call runs without the GIL, its transcoder refuses other threads'
    calls (RuntimeError) instead of racing it; the long call's result is untouched."""
    import threading

    t = kind("utf-8", "utf-32-be", "replace", None, 0, Malformed, ACCEL_KINDS)
    data = "é🐴x".encode() * 2_000_000  # 14 MB: long enough to be caught running
    done = threading.Event()
    refused: list[str] = []
    result: list[bytes] = []

    def long_call() -> None:
        result.append(t.transcode(data, True))
        done.set()

    thread = threading.Thread(target=long_call)
    thread.start()
    while not done.is_set():
        for call in (lambda: t.transcode(b"a"), t.drain, lambda: t.transcode_into(b"", b"")):
            try:
                call()
            except RuntimeError as exc:
                refused.append(str(exc))
                continue
            except (ValueError, BufferError):
                pass
    thread.join()
    assert set(refused) <= {"the ByteTranscoder is in use by another thread"}
    assert result[0][: 12 * 4] == "é🐴x".encode("utf-32-be") * 4
