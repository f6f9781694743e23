"""Utf8ReceiveStream, Utf8SendStream, Utf8Stream.

Every test runs on asyncio and on trio (the ``anyio_backend`` fixture in conftest.py).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable

import anyio
import pytest
from _helpers import examples
from _stream_helpers import (
    ByteSink,
    ChunkStream,
    cut,
    decode_all,
    feed_slowly,
    reference_byte_lines,
)
from anyio import BusyResourceError, ClosedResourceError, EndOfStream
from anyio.streams.stapled import StapledObjectStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import (
    LineReceiveStream,
    LineTooLong,
    Malformed,
    MalformedKind,
    Utf8DecodeError,
    Utf8Decoder,
    Utf8ReceiveStream,
    Utf8SendStream,
    Utf8Stream,
)

pytestmark = pytest.mark.anyio

SETTINGS = settings(
    max_examples=examples(150),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


async def read_all(stream: Utf8ReceiveStream) -> list[str]:
    pieces = []
    while True:
        try:
            pieces.append(await stream.receive())
        except EndOfStream:
            return pieces


# -- 1. any bytes, any chunking: the core decoder's text -----------------------------

# Bytes that make every kind of unit likely: ASCII, leads, continuations, never-bytes.
BYTE = st.sampled_from(
    [0x41, 0x0A, 0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xC3, 0xE0, 0xE2, 0xED, 0xF0, 0xF4, 0xF5, 0xFF]
)
DATA = st.one_of(
    st.binary(max_size=80),
    st.lists(BYTE, max_size=80).map(bytes),
    st.text(max_size=30).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


@SETTINGS
@given(data=DATA, points=st.lists(st.integers(0, 80), max_size=12))
async def test_any_chunking_gives_the_core_decoders_text(data: bytes, points: list[int]) -> None:
    for errors in ("replace", "surrogateescape"):
        stream = Utf8ReceiveStream(ChunkStream(cut(data, points)), errors=errors)
        pieces = await read_all(stream)
        assert all(pieces), "receive() never returns empty text"
        assert "".join(pieces) == decode_all(data, errors)
        assert "".join(pieces) == data.decode("utf-8", errors)


async def test_byte_at_a_time_delivery() -> None:
    data = "naïve café 😀 € ok".encode() + b"\xe2\x82"
    stream = Utf8ReceiveStream(ChunkStream(cut(data, range(len(data)))))
    pieces = await read_all(stream)
    assert "".join(pieces) == "naïve café 😀 € ok\ufffd"
    assert "😀" in pieces  # a character is handed out whole, once complete


async def test_eof_flushes_a_cut_off_sequence_then_ends() -> None:
    transport = ChunkStream([b"ok\xf0\x9f"])
    stream = Utf8ReceiveStream(transport)
    assert await stream.receive() == "ok"
    assert await stream.receive() == "\ufffd"
    for _ in range(2):
        with pytest.raises(EndOfStream):
            await stream.receive()
    assert transport.receives == 2  # the transport is not asked again after its end


async def test_object_stream_of_bytes_is_a_transport() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](4)
    for chunk in (b"\xe2", b"\x82\xac", b"!"):
        send.send_nowait(chunk)
    send.close()
    assert "".join(await read_all(Utf8ReceiveStream(receive))) == "€!"


# -- 2. cancellation: nothing lost, nothing duplicated -------------------------------


def lossy_sample(seed: int, size: int = 12000) -> bytes:
    """Multibyte text with newlines of every kind and some malformed bytes."""
    rng = random.Random(seed)
    words = ["alpha", "βeta", "гамма", "δέλτα", "€", "😀", "日本語", "\n", "\r\n", "\r", " "]
    data = bytearray("".join(rng.choice(words) for _ in range(size // 4)).encode())
    for _ in range(len(data) // 300):
        data[rng.randrange(len(data))] = rng.choice([0x80, 0xC3, 0xE2, 0xF0, 0xFF])
    return bytes(data)


async def receive_under_cancellation(receive: object, rng: random.Random) -> tuple[list, int]:
    """Call ``receive()`` until EOF, most calls under a tiny or zero deadline."""
    assert callable(receive)
    got: list = []
    cancelled = 0
    while True:
        roll = rng.random()
        timeout = 0 if roll < 0.4 else (rng.random() * 0.0003 if roll < 0.85 else None)
        with anyio.move_on_after(timeout) as scope:
            try:
                got.append(await receive())
            except (EndOfStream, StopAsyncIteration):
                return got, cancelled
        cancelled += scope.cancelled_caught


#: The second way in of each cancellation test is timing-bound like the first (thousands of
#: real cancel scopes): it runs with the soaks.
@pytest.mark.parametrize("seed", [1])
@pytest.mark.parametrize("method", ["receive", pytest.param("__anext__", marks=pytest.mark.soak)])
async def test_cancelled_receives_lose_and_duplicate_nothing(seed: int, method: str) -> None:
    data = lossy_sample(seed)
    rng = random.Random(seed)
    chunks = cut(data, rng.sample(range(len(data)), 2500))
    receive, feeder = feed_slowly(chunks, seed)
    stream = Utf8ReceiveStream(receive)
    async with anyio.create_task_group() as tg:
        tg.start_soon(feeder)
        got, cancelled = await receive_under_cancellation(getattr(stream, method), rng)
    assert "".join(got) == decode_all(data)
    assert cancelled > 1000  # the scopes really did cancel receives, thousands of times


@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize("seed", [3])
@pytest.mark.parametrize("method", ["receive", pytest.param("iteration", marks=pytest.mark.soak)])
async def test_cancelled_line_receives_lose_and_duplicate_nothing(seed: int, method: str) -> None:
    """Also through ``async for`` (a loop ended by a cancellation is started again)."""
    data = lossy_sample(seed)
    rng = random.Random(seed)
    chunks = cut(data, rng.sample(range(len(data)), 2500))
    receive, feeder = feed_slowly(chunks, seed)
    stream = LineReceiveStream(
        receive, keepends=rng.random() < 0.5, max_line_bytes=40, on_overlong="split"
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(feeder)
        if method == "receive":
            got, cancelled = await receive_under_cancellation(stream.receive, rng)
        else:

            def next_line() -> Awaitable[str]:
                return aiter(stream).__anext__()

            got, cancelled = await receive_under_cancellation(next_line, rng)
    # The limit counts source bytes (a malformed byte one, not its U+FFFD's three).
    expected = reference_byte_lines(data, None, stream.splitter.keepends, 40, "split")
    assert got == expected
    assert cancelled > 1000


async def test_cancelled_receive_before_any_data_changes_nothing() -> None:
    transport = ChunkStream([b"abc"])
    stream = Utf8ReceiveStream(transport)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await stream.receive()
    assert transport.receives == 0
    assert stream.decoder.position == 0
    assert await stream.receive() == "abc"


# -- 3. strict mode ------------------------------------------------------------------


async def test_strict_delivers_text_raises_at_the_unit_and_continues() -> None:
    data = b"good \xffrest \xed\xa0\x80 end\xe2\x82"
    for chunks in ([data], cut(data, [3, 6, 13, 14]), cut(data, range(len(data)))):
        stream = Utf8ReceiveStream(ChunkStream(chunks), errors="strict")
        text, errors = [], []
        while True:
            try:
                text.append(await stream.receive())
            except Utf8DecodeError as exc:
                errors.append((exc.offset, exc.kind, exc.partial))
            except EndOfStream:
                break
        assert "".join(text) == "good rest  end"
        assert [e[:2] for e in errors] == [
            (5, MalformedKind.INVALID_BYTE),
            (11, MalformedKind.SURROGATE),
            (12, MalformedKind.UNEXPECTED_CONTINUATION),
            (13, MalformedKind.UNEXPECTED_CONTINUATION),
            (18, MalformedKind.TRUNCATED_AT_END),
        ]
        # The text before each unit was returned by receive(), not hidden in the error.
        assert all(e[2] == "" for e in errors)


async def test_strict_order_of_text_and_error_in_one_chunk() -> None:
    stream = Utf8ReceiveStream(ChunkStream([b"ab\xffcd"]), errors="strict")
    assert await stream.receive() == "ab"
    with pytest.raises(Utf8DecodeError) as info:
        await stream.receive()
    assert info.value.offset == 2
    assert await stream.receive() == "cd"
    with pytest.raises(EndOfStream):
        await stream.receive()


async def test_on_malformed_sees_every_unit_with_its_offset() -> None:
    events: list[Malformed] = []
    data = b"x\xc0y\xe2\x82"
    stream = Utf8ReceiveStream(
        ChunkStream(cut(data, [2, 4])), start_offset=100, on_malformed=events.append
    )
    assert "".join(await read_all(stream)) == "x\ufffdy\ufffd"
    assert [(e.offset, e.kind) for e in events] == [
        (101, MalformedKind.OVERLONG),
        (103, MalformedKind.TRUNCATED_AT_END),
    ]
    assert stream.decoder.position == 105


# -- 4. busy, close, attributes, statistics -------------------------------------------


async def test_concurrent_receive_raises_busy() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](1)
    stream = Utf8ReceiveStream(receive)
    line_stream = LineReceiveStream(
        Utf8ReceiveStream(anyio.create_memory_object_stream[bytes](1)[1])
    )
    for target in (stream, line_stream):
        async with anyio.create_task_group() as tg:
            tg.start_soon(target.receive)
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(BusyResourceError):
                await target.receive()
            tg.cancel_scope.cancel()
    send.send_nowait(b"ok")
    assert await stream.receive() == "ok"  # the cancelled reader left it usable


async def test_aclose_closes_the_transport_and_attributes_pass_through() -> None:
    marker = object()
    transport = ChunkStream([b"a"], attributes={"peer": marker})
    stream = Utf8ReceiveStream(transport)
    lines = LineReceiveStream(stream)
    assert stream.extra_attributes["peer"]() is marker
    assert lines.extra_attributes["peer"]() is marker
    await lines.aclose()
    assert transport.closed
    with pytest.raises(ClosedResourceError):
        await stream.receive()


async def test_statistics_count_bytes_characters_units_and_gaps() -> None:
    stream = Utf8ReceiveStream(ChunkStream([b"h\xc3\xa9", b"\xff\x80!"]))
    assert "".join(await read_all(stream)) == "hé\ufffd\ufffd!"
    stats = stream.statistics()
    assert (stats.bytes_in, stats.chars_out, stats.gaps, stats.lines) == (6, 5, 0, 0)
    assert stats.malformed == {
        MalformedKind.INVALID_BYTE: 1,
        MalformedKind.UNEXPECTED_CONTINUATION: 1,
    }
    assert stats.malformed_total == 2


async def test_start_offset_and_gap_are_the_callers_choice() -> None:
    # Joining a stream mid-way: the first bytes continue a character we never saw.
    data = "日本".encode()[2:]  # 0xA5 then 本
    plain = Utf8ReceiveStream(ChunkStream([data]), start_offset=2)
    assert "".join(await read_all(plain)) == "\ufffd本"
    assert plain.decoder.position == 2 + len(data)
    gapped = Utf8ReceiveStream(ChunkStream([data]), start_offset=2, gap="skip")
    gapped.mark_gap()
    assert "".join(await read_all(gapped)) == "本"
    stats = gapped.statistics()
    assert stats.gaps == 1
    assert stats.malformed == {MalformedKind.LOST_BYTES: 1}


async def test_bad_decoder_options_are_rejected_at_construction() -> None:
    with pytest.raises(LookupError):
        Utf8ReceiveStream(ChunkStream([]), errors="no-such-policy")
    with pytest.raises(ValueError):
        Utf8ReceiveStream(ChunkStream([]), gap="keep")
    with pytest.raises(ValueError):
        LineReceiveStream(ChunkStream([]), on_overlong="explode")


# -- sending ---------------------------------------------------------------------------


async def test_send_stream_encodes_strictly_and_closes() -> None:
    sink = ByteSink()
    stream = Utf8SendStream(sink)
    await stream.send("héllo ")
    await stream.send("")
    await stream.send("😀")
    with pytest.raises(UnicodeEncodeError):
        await stream.send("bad \udcff")
    await stream.aclose()
    assert bytes(sink.data) == "héllo 😀".encode()
    assert sink.sends == [b"h\xc3\xa9llo ", "😀".encode()]
    assert sink.closed


async def test_send_stream_with_surrogateescape_round_trips_bytes() -> None:
    data = b"ok \xff\xc3 done"
    text = decode_all(data, "surrogateescape")
    sink = ByteSink()
    stream = Utf8SendStream(sink, errors="surrogateescape")
    await stream.send(text)
    await stream.aclose()
    assert bytes(sink.data) == data


async def test_concurrent_send_raises_busy() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](0)
    stream = Utf8SendStream(send)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stream.send, "first")
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(BusyResourceError):
            await stream.send("second")
        assert await receive.receive() == b"first"


async def test_utf8_stream_both_ways_with_send_eof() -> None:
    to_peer_send, to_peer_receive = anyio.create_memory_object_stream[bytes](10)
    from_peer_send, from_peer_receive = anyio.create_memory_object_stream[bytes](10)
    stream = Utf8Stream(StapledObjectStream(to_peer_send, from_peer_receive))
    await stream.send("ça va ")
    await stream.send("😀")
    await stream.send_eof()
    assert b"".join([to_peer_receive.receive_nowait() for _ in range(2)]) == "ça va 😀".encode()
    with pytest.raises(EndOfStream):
        to_peer_receive.receive_nowait()
    for chunk in (b"r\xc3", b"\xa9ponse \xff"):
        from_peer_send.send_nowait(chunk)
    from_peer_send.close()
    assert [await stream.receive() for _ in range(2)] == ["r", "éponse \ufffd"]
    with pytest.raises(EndOfStream):
        await stream.receive()
    assert stream.statistics().malformed_total == 1
    assert isinstance(stream.decoder, Utf8Decoder)
    await stream.aclose()
    with pytest.raises(ClosedResourceError):
        await stream.send("x")


# -- other encodings: LineReceiveStream(encoding=...) through the core's line engine ----------


def _memory_byte_source(chunks: list[bytes]) -> anyio.abc.ObjectReceiveStream[bytes]:
    send, receive = anyio.create_memory_object_stream[bytes](len(chunks) + 1)
    for chunk in chunks:
        send.send_nowait(chunk)
    send.close()
    return receive


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16", "utf-32-be", "shift_jis", "cp1252"])
async def test_line_stream_in_another_encoding(encoding: str) -> None:
    last = {"cp1252": "tw\u00f6", "shift_jis": "二"}.get(encoding, "二😀")
    texts = ["one", "", last]
    data = ("\r\n".join(texts) + "\r").encode(encoding)
    chunks = [data[i : i + 3] for i in range(0, len(data), 3)]  # cut inside code units
    stream = LineReceiveStream(_memory_byte_source(chunks), encoding=encoding)
    assert [line async for line in stream] == texts
    stats = stream.statistics()
    assert (stats.bytes_in, stats.lines, stats.overlong_lines) == (len(data), 3, 0)


async def test_line_stream_in_another_encoding_limits_its_bytes() -> None:
    data = "short\nway too long a line\nok\n".encode("utf-16-le")
    source = _memory_byte_source([data])
    stream = LineReceiveStream(
        source, encoding="utf-16-le", max_line_bytes=12, on_overlong="raise"
    )
    assert await stream.receive() == "short"
    with pytest.raises(LineTooLong) as info:
        await stream.receive()
    assert info.value.partial == "way to"  # 12 bytes: six UTF-16 code units
    assert await stream.receive() == "ok"
    with pytest.raises(EndOfStream):
        await stream.receive()
    assert stream.statistics().overlong_lines == 1


def test_line_stream_encoding_refusals() -> None:
    source = _memory_byte_source([])
    with pytest.raises(ValueError, match="keepends is for UTF-8 only"):
        LineReceiveStream(source, encoding="utf-16-le", keepends=True)
    with pytest.raises(ValueError, match="not self-delimiting"):
        LineReceiveStream(source, encoding="iso2022_jp")
    with pytest.raises(TypeError, match="needs a byte source"):
        LineReceiveStream(Utf8ReceiveStream(source), encoding="utf-16-le")


async def test_the_state_read_per_chunk_is_the_streams_own() -> None:
    """What ``receive``/``__anext__`` read per chunk is set in the instance,
    not left to the dataclass's class defaults (each read of a class attribute through
    an instance is a lookup in the class and in the instance's dictionary; an instance's
    own is read at a fixed place), and stays so after a stream has been read."""
    per_chunk = {"_busy", "_pending", "_eof", "_error", "_resume"}
    stream = Utf8ReceiveStream(ChunkStream([b"a\n", b"b"]))
    assert per_chunk <= set(vars(stream))
    lines = LineReceiveStream(ChunkStream([b"a\n", b"b"]))
    assert {"_busy", "_eof", "_direct", "_engine"} <= set(vars(lines))
    assert lines._direct is not None
    assert per_chunk <= set(vars(lines._direct))
    assert [text async for text in stream] == ["a\n", "b"]
    assert [line async for line in lines] == ["a", "b"]
