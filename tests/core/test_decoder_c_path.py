"""The stream's state in the C scanner: a plain UTF-8 decoder's common path.

The scanner holds the stream's position and held prefix, and with nothing held at the
boundary ``decoder.decode`` is one call of the scanner's ``decode``.  These tests cross
each boundary (held state, checkpoints, a switch of implementation, a raising callback,
gaps, the position limit, other inputs) and compare with the pure-Python decoder.
"""

from __future__ import annotations

import array
import contextlib
import gc
import inspect
import types
import weakref
from typing import Any

import pytest
from _helpers import CORE
from hypothesis import given
from hypothesis import strategies as st

import utf8stream.core.decoder as decoder_module
from utf8stream import (
    DecoderCheckpoint,
    Malformed,
    MalformedKind,
    Utf8DecodeError,
    Utf8Decoder,
)
from utf8stream.accel import use_accelerator
from utf8stream.core._accel import ACCEL_MAX_POSITION

pytestmark = pytest.mark.skipif(
    not decoder_module.accelerated(),
    reason="the C accelerator is not built here (pure-Python install)",
)


class Boom(Exception):
    pass


def pure(**kwargs: Any) -> Utf8Decoder:
    with use_accelerator(False):
        return Utf8Decoder(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"errors": "ignore"},
        {"errors": "strict"},
        {"errors": "surrogateescape"},
        {"errors": "backslashreplace"},
        {"fallback": "cp1252"},
        {"on_malformed": print},
        {"start_offset": 12345},
    ],
)
def test_plain_utf8_with_the_c_scanner(kwargs: dict[str, Any]) -> None:
    decoder = Utf8Decoder(**kwargs)
    assert decoder.decode(b"h\xc3\xa9llo") == "héllo"
    assert decoder.position == kwargs.get("start_offset", 0) + 6


def test_a_subclass_decodes_through_its_own_decode() -> None:
    class Own(Utf8Decoder):
        def decode(self, input: Any, final: bool = False) -> str:  # noqa: A002
            return super().decode(input, final).upper()

    class Inherits(Utf8Decoder):
        pass

    own = Own()
    assert own.decode(b"ab\xc3") == "AB"
    assert own.decode(b"\xa9") == "É"
    inherits = Inherits()
    assert inherits.decode(b"\xe2\x82") == ""
    assert inherits.decode(b"\xac") == "€"
    for decoder in (Utf8Decoder(variant="wtf-8"), Utf8Decoder("surrogatepass"), pure()):
        assert decoder.decode(b"a\xc3") == "a"
        assert decoder.decode(b"\xa9") == "é"


def test_the_state_is_read_from_the_c_scanner() -> None:
    decoder = Utf8Decoder(start_offset=10)
    assert decoder.decode(b"ab\xe2\x82") == "ab"
    assert decoder.position == 14
    assert decoder.buffered == 2
    assert decoder.getstate() == (b"\xe2\x82", 0)
    checkpoint = decoder.checkpoint()
    assert (checkpoint.position, checkpoint.pending, checkpoint.chars_out) == (14, b"\xe2\x82", 2)
    assert decoder.statistics().bytes_fed == 4
    assert decoder.decode(b"\xac", final=True) == "€"
    assert decoder.statistics().chars_out == 3


def test_a_gap_and_its_end() -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(on_malformed=events.append)
    decode = decoder.decode  # taken before the gap, used after it
    assert decode(b"ab\xe2\x82") == "ab"
    decoder.mark_gap(5)
    assert decode(b"\xacxy") == "\ufffdxy"  # the held prefix and \xac are the gap's
    assert [(e.offset, e.data, e.kind) for e in events] == [
        (2, b"\xe2\x82\xac", MalformedKind.LOST_BYTES)
    ]
    assert decoder.position == 12
    assert decoder.statistics().lost_bytes_declared == 5


def test_a_raising_callback_loses_nothing() -> None:
    def callback(event: Malformed) -> None:
        if event.data == b"\xff":
            raise Boom

    decoder = Utf8Decoder(on_malformed=callback)
    assert decoder.decode(b"\xf0\x9f") == ""
    with pytest.raises(Boom):
        decoder.decode(b"\x98\x80a\xffb\xfec")
    checkpoint = decoder.checkpoint()
    assert (checkpoint.carry, checkpoint.unread, checkpoint.position) == (
        "😀a\ufffd",
        b"b\xfec",
        9,
    )
    assert decoder.decode(b"d") == "😀a\ufffdb\ufffdcd"
    assert decoder.statistics().malformed == {MalformedKind.INVALID_BYTE: 2}


def test_a_strict_error_keeps_the_rest() -> None:
    decoder = Utf8Decoder("strict")
    with pytest.raises(Utf8DecodeError) as info:
        decoder.decode(b"ab\xffcd")
    assert info.value.partial == "ab"
    assert info.value.offset == 2
    assert decoder.getstate() == (b"cd", 0)
    assert decoder.decode(b"e") == "cde"


def test_a_callback_cannot_drive_its_decoder() -> None:
    seen: list[Any] = []

    def callback(event: Malformed) -> None:
        with pytest.raises(RuntimeError):
            decoder.decode(b"zz")
        seen.append((decoder.position, decoder.statistics().bytes_fed))

    decoder = Utf8Decoder(on_malformed=callback)
    assert decoder.decode(b"a\xffb") == "a\ufffdb"
    assert seen == [(3, 3)]  # the chunk counts while its units are reported
    assert decoder.position == 3


@pytest.mark.parametrize("restore_accelerated", [True, False])
def test_a_checkpoint_continues_exactly(restore_accelerated: bool) -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(on_malformed=events.append)
    assert decoder.decode(b"x\xff\xe6\x97") == "x\ufffd"
    checkpoint = DecoderCheckpoint.from_json(decoder.checkpoint().to_json())
    later: list[Malformed] = []
    with use_accelerator(restore_accelerated):
        restored = Utf8Decoder.from_checkpoint(checkpoint, on_malformed=later.append)
    for d in (decoder, restored):
        assert d.decode(b"\xa5y\xc3") == "日y"
        assert d.decode(b"(", final=True) == "\ufffd("
    assert [(e.offset, e.kind) for e in later] == [(6, MalformedKind.INCOMPLETE_SEQUENCE)]
    assert restored.statistics() == decoder.statistics()
    assert restored.checkpoint() == decoder.checkpoint()


def test_a_decoder_keeps_its_implementation_across_a_switch() -> None:
    fast = Utf8Decoder()
    with use_accelerator(False):
        slow = Utf8Decoder()
        assert fast.decode(b"\xe2\x82") == ""
    assert slow.decode(b"\xe2\x82") == ""
    assert fast.decode(b"\xac") == slow.decode(b"\xac") == "€"


def test_setstate_and_reset() -> None:
    decoder = Utf8Decoder(start_offset=3)
    decoder.decode(b"abc\xf0")
    decoder.setstate((b"\xe2\x82", 0))
    assert decoder.decode(b"\xac") == "€"
    assert decoder.position == 8
    decoder.decode(b"\xc3")
    decoder.reset()
    assert (decoder.position, decoder.buffered) == (3, 0)
    assert decoder.decode(b"\xa9") == "\ufffd"


def test_the_position_limit_hands_over_to_the_python_scanner() -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(start_offset=ACCEL_MAX_POSITION - 4, on_malformed=events.append)
    assert decoder.decode(b"a\xffb") == "a\ufffdb"
    assert decoder.decode(b"cd\xfee") == "cd\ufffde"  # reaches the limit
    assert [e.offset for e in events] == [ACCEL_MAX_POSITION - 3, ACCEL_MAX_POSITION + 1]
    assert decoder.position == ACCEL_MAX_POSITION + 3
    assert decoder.decode(b"f") == "f"
    # Offsets past 64 bits: a gap that long, a checkpoint that far.
    decoder.mark_gap(1 << 64)
    assert decoder.decode(b"\x80g\xff") == "\ufffdg\ufffd"
    far = ACCEL_MAX_POSITION + 4 + (1 << 64)
    assert [e.offset for e in events[2:]] == [far, far + 2]  # the gap takes \x80
    restored = Utf8Decoder.from_checkpoint(decoder.checkpoint(), on_malformed=events.append)
    assert restored.decode(b"\xfe") == "\ufffd"
    assert events[-1].offset == far + 3 == restored.position - 1


def test_other_inputs_and_arguments() -> None:
    decoder = Utf8Decoder()
    assert decoder.decode(bytearray(b"a\xc3")) == "a"
    assert decoder.decode(memoryview(b"x\xa9b")[1:]) == "éb"
    # A memoryview of 16-bit items: its bytes, by decoder.py's path.
    assert decoder.decode(memoryview(array.array("H", [0x6261]))) == "ab"
    assert decoder.decode(input=b"\xe2\x82") == ""
    assert decoder.decode(b"\xac", True) == "€"
    assert decoder.decode(b"\xc3", final=1) == "\ufffd"
    with pytest.raises(TypeError):
        decoder.decode()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        decoder.decode(b"a", False, True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        decoder.decode(b"a", flush=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        decoder.decode("text")  # type: ignore[arg-type]
    assert decoder.position == 10
    assert decoder.decode(b"z") == "z"


def test_decode_is_a_bound_method_that_keeps_its_decoder() -> None:
    gc.disable()
    try:
        decoder = Utf8Decoder(on_malformed=lambda event: None)
        decode = decoder.decode
        assert type(decode) is types.MethodType
        ref = weakref.ref(decoder)
        del decoder
        assert ref() is not None
        assert decode(b"a\xff") == "a\ufffd"
        assert decode.__self__ is ref()
        del decode
        assert ref() is None
    finally:
        gc.enable()
    assert list(inspect.signature(Utf8Decoder().decode).parameters) == ["input", "final"]


def test_decode_lines_and_decode_share_the_state() -> None:
    decoder = Utf8Decoder()
    assert decoder.decode(b"ab") == "ab"
    lines = decoder.decode_lines(b"x\n", b"y\xffz\nrest", -1, 100)
    assert lines is not None
    assert lines.texts == ["x", "y\ufffdz"]
    assert lines.offsets == [2, 4, 8]
    assert decoder.position == 8
    decoder.decode(b"\xc3")
    assert decoder.decode_lines(b"", b"\xa9\n", -1, 100) is None  # a prefix is held


# -- against the pure-Python decoder -------------------------------------------------------

_BYTES = st.lists(
    st.sampled_from(
        [
            b"a",
            b"\n",
            b"\xc3\xa9",
            b"\xe2\x82\xac",
            b"\xf0\x9f\x98\x80",
            b"\xff",
            b"\xc3",
            b"\xe2\x82",
            b"\xf0\x9f",
            b"\x80",
            b"\xed\xa0\x80",
            b"\xfe",
        ]
    ),
    max_size=12,
).map(b"".join)
_STEP = st.one_of(
    st.tuples(st.just("decode"), _BYTES, st.booleans()),
    st.tuples(st.just("gap"), st.none() | st.integers(0, 3)),
    st.tuples(st.just("checkpoint")),
    st.tuples(st.just("state")),
    st.tuples(st.just("reset")),
    st.tuples(st.just("bytearray"), _BYTES),
)


class Side:
    def __init__(self, accelerated: bool, errors: str, raising: bool) -> None:
        self.accelerated = accelerated
        self.raising = raising
        self.events: list[tuple[int, bytes, MalformedKind]] = []
        self.count = 0
        with use_accelerator(accelerated):
            self.decoder = Utf8Decoder(errors, on_malformed=self.callback)

    def callback(self, event: Malformed) -> None:
        self.events.append((event.offset, event.data, event.kind))
        self.count += 1
        if self.raising and self.count % 3 == 0:
            raise Boom

    def step(self, step: tuple[Any, ...]) -> Any:
        d = self.decoder
        with contextlib.suppress(Boom, Utf8DecodeError):
            kind = step[0]
            if kind == "decode":
                return d.decode(step[1], step[2])
            if kind == "bytearray":
                return d.decode(bytearray(step[1]))
            if kind == "gap":
                return d.mark_gap(step[1])
            if kind == "checkpoint":
                checkpoint = DecoderCheckpoint.from_json(d.checkpoint().to_json())
                with use_accelerator(self.accelerated):
                    self.decoder = Utf8Decoder.from_checkpoint(
                        checkpoint, on_malformed=self.callback
                    )
                return checkpoint
            if kind == "state":
                state = d.getstate()
                d.setstate(state)
                return state
            return d.reset()
        return "raised"

    def observed(self) -> Any:
        d = self.decoder
        return (d.position, d.buffered, d.statistics(), d.getstate(), self.events)


@CORE
@given(
    st.sampled_from(["replace", "ignore", "strict", "backslashreplace"]),
    st.booleans(),
    st.lists(_STEP, max_size=12),
)
def test_the_c_scanner_agrees_with_the_pure_decoder(
    errors: str, raising: bool, steps: list[tuple[Any, ...]]
) -> None:
    fast = Side(True, errors, raising)
    slow = Side(False, errors, raising)
    for step in [*steps, ("decode", b"", True)]:
        assert fast.step(step) == slow.step(step), step
        assert fast.observed() == slow.observed(), step


def test_a_released_memoryview_is_refused_as_before() -> None:
    decoder = Utf8Decoder()
    view = memoryview(b"abc")
    view.release()
    with pytest.raises(ValueError, match="released"):
        decoder.decode(view)
    assert decoder.decode(memoryview(b"abc")[::2]) == "ac"  # a strided view: its bytes
    assert decoder.position == 2


def test_line_splitter_chunk_is_one_engine_call() -> None:
    """``LineSplitter.feed_bytes`` over a decoder with the C scanner (what
    ``LineReceiveStream`` pays per chunk): below it, the decoder's public seam
    (``on_malformed``, ``stream_mark`` before and after) and the engine's ``feed_cut``,
    which calls the decoder's ``decode_lines``, one call of the C scanner's ``lines``.
    Same lines, counts and positions; a held ``\\r`` and a line over the limit too."""
    import sys

    from utf8stream import LineSplitter, LineTooLong

    names: list[str] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call":
            names.append(frame.f_code.co_name)

    decoder = Utf8Decoder()
    splitter = LineSplitter(max_line_bytes=12, on_overlong="raise")
    out: list[object] = list(splitter.feed_bytes(decoder, b"first li"))
    SEAM = ["feed_bytes", "on_malformed", "stream_mark", "feed_cut", "decode_lines"]
    SEAM += ["<lambda>", "stream_mark"]  # (decode_lines' DecodedLines, a NamedTuple)
    for chunk, calls in (
        (b"ne\nsecond\r\nthi", SEAM),
        (b"rd\r", SEAM),
        (memoryview(b"\nfourth \xc3\xa9\n"), SEAM),
        # A rest longer than the limit: the engine's general code takes it.
        (b"much too long a line\nok\n", None),
    ):
        names.clear()
        sys.setprofile(profile)
        try:
            out += splitter.feed_bytes(decoder, chunk)
        finally:
            sys.setprofile(None)
        if calls is not None:
            assert names == calls
        else:
            assert names[:5] == SEAM[:5] and "_take_rest" in names
    assert out[:4] == ["first line", "second", "third", "fourth é"]
    assert isinstance(out[4], LineTooLong) and out[5:] == ["ok"]
    assert decoder.position == 8 + 14 + 3 + 11 + 24
    assert splitter.statistics().lines == 5
    assert decoder.statistics().chars_out == 60 - 1  # é: two bytes


@pytest.mark.anyio
async def test_line_stream_chunk_costs_a_few_python_calls() -> None:
    """``async for`` over ``LineReceiveStream``: per chunk of its byte source, the
    iterator's refill, the source's ``receive``, the splitter's ``feed_bytes``, the
    engine's ``feed_cut`` and the decoder's ``decode_lines``, and no wrapper coroutine or
    helper between them; the lines themselves cost none."""
    import sys

    from anyio import EndOfStream
    from anyio.abc import ByteReceiveStream

    from utf8stream import LineReceiveStream

    class Chunks(ByteReceiveStream):
        def __init__(self, chunks: list[bytes]) -> None:
            self._chunks = iter(chunks)

        async def receive(self, max_bytes: int = 65536) -> bytes:
            for chunk in self._chunks:
                return chunk
            raise EndOfStream

        async def aclose(self) -> None:
            pass

    data = b"".join(b"line %d\r\n" % k for k in range(60))
    chunks = [data[k : k + 25] for k in range(0, len(data), 25)]  # cut inside lines
    names: list[str] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call":
            names.append(frame.f_code.co_name)

    lines = []
    try:
        async for line in LineReceiveStream(Chunks(chunks)):
            lines.append(line)
            if len(lines) == 3:
                sys.setprofile(profile)
            elif len(lines) == 50:
                sys.setprofile(None)
    finally:
        sys.setprofile(None)
    assert lines == [f"line {k}" for k in range(60)]
    # Per chunk: the refill, the source, the splitter, the decoder's seam, the engine.
    per_chunk = ["_refill", "receive", "feed_bytes", "on_malformed", "stream_mark"]
    per_chunk += ["feed_cut", "decode_lines", "<lambda>", "stream_mark"]
    refills = len(names) // len(per_chunk)
    assert refills > 10
    assert names == per_chunk * refills
