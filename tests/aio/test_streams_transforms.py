"""``transforms=`` on ``Utf8ReceiveStream`` and ``LineReceiveStream``, over any
chunking, against the core decoder and line oracle (asyncio and trio)."""

from __future__ import annotations

import anyio
import pytest
from _helpers import examples
from _stream_helpers import ChunkStream, cut, decode_all, reference_byte_lines
from _transform_helpers import Pairs, paired, paired_lines
from anyio import EndOfStream
from anyio.streams.stapled import StapledObjectStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import (
    LineReceiveStream,
    Utf8DecodeError,
    Utf8Decoder,
    Utf8ReceiveStream,
    Utf8Stream,
)
from utf8stream.transforms import TextChange, TransformingDecoder, chain

pytestmark = pytest.mark.anyio

SETTINGS = settings(
    max_examples=examples(100),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
DATA = st.lists(
    st.sampled_from([b"a", b"b", b"ab", b"\n", b"\r\n", b"\xc3\xa9", b"\xff", b"\xe2\x82"]),
    max_size=30,
).map(b"".join)
POINTS = st.lists(st.integers(0, 80), max_size=10)


async def _texts(stream: Utf8ReceiveStream) -> list[str]:
    pieces = []
    while True:
        try:
            pieces.append(await stream.receive())
        except EndOfStream:
            return pieces


@SETTINGS
@given(data=DATA, points=POINTS)
async def test_the_text_of_any_chunking_is_transformed_as_one_run(
    data: bytes, points: list[int]
) -> None:
    stream = Utf8ReceiveStream(ChunkStream(cut(data, points)), transforms=[Pairs(), Pairs()])
    pieces = await _texts(stream)
    assert all(pieces), "receive() never returns empty text"
    assert "".join(pieces) == paired(paired(decode_all(data)))
    assert stream.transform is not None and stream.transform.checkpoint().parts[0].carry == ""


async def test_async_iteration_transforms_too() -> None:
    stream = Utf8ReceiveStream(ChunkStream([b"xa", b"b", b"a"]), transforms=Pairs())
    assert [text async for text in stream] == ["x", "X", "a"]


async def test_a_transform_and_decoder_checkpoint_resumes_a_stream_as_one_run() -> None:
    data = "xab€aab".encode()
    send, receive = anyio.create_memory_object_stream[bytes](4)
    stream = Utf8ReceiveStream(receive, transforms=Pairs())
    async with send:
        await send.send(data[:5])  # "xab" and the first byte of "€"
        head = await stream.receive()
        decoder = stream.decoder
        assert stream.transform is not None and isinstance(decoder, Utf8Decoder)
        saved = TransformingDecoder(decoder, stream.transform).checkpoint()
    resumed = TransformingDecoder.from_checkpoint(saved)
    assert head + resumed.decode(data[5:], True) == paired(data.decode())


async def test_a_strict_error_comes_after_the_transformed_text_before_it() -> None:
    stream = Utf8ReceiveStream(ChunkStream([b"ab\xffab"]), errors="strict", transforms=Pairs())
    assert await stream.receive() == "X"
    with pytest.raises(Utf8DecodeError):
        await stream.receive()
    assert await stream.receive() == "X"


async def test_events_have_offsets_in_the_decoded_text() -> None:
    changes: list[TextChange] = []
    stream = Utf8ReceiveStream(
        ChunkStream([b"\xc3\xa9a", b"b"]), transforms=chain(Pairs(changes.append))
    )
    assert "".join(await _texts(stream)) == "éX"
    assert changes == [TextChange(1, "ab", "X", 1, "test-pairs")]


@SETTINGS
@given(data=DATA, points=POINTS, keepends=st.booleans())
async def test_lines_of_any_chunking_are_transformed_each_whole(
    data: bytes, points: list[int], keepends: bool
) -> None:
    expected = paired_lines(
        [str(x) for x in reference_byte_lines(data, None, keepends)],
        ("\r\n", "\n", "\r") if keepends else (),
    )
    stream = LineReceiveStream(
        ChunkStream(cut(data, points)), keepends=keepends, transforms=Pairs()
    )
    assert [line async for line in stream] == expected
    assert stream.splitter.line_transform is not None
    assert stream.splitter.line_transform.transform.checkpoint().carry == ""


async def test_lines_over_a_text_stream_and_in_utf16_are_transformed() -> None:
    text_source = Utf8ReceiveStream(ChunkStream([b"xa", b"b\nab"]))
    lines = LineReceiveStream(text_source, transforms=Pairs())
    assert [line async for line in lines] == ["xX", "X"]
    utf16 = "ab\nxa\nb".encode("utf-16-le")
    lines = LineReceiveStream(
        ChunkStream(cut(utf16, [3, 7])), encoding="utf-16-le", transforms=[Pairs()]
    )
    assert [line async for line in lines] == ["X", "xa", "b"]


async def test_lines_from_a_memory_stream_are_transformed() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](4)
    async with send:
        await send.send(b"a")
        await send.send(b"b\n")
    assert [line async for line in LineReceiveStream(receive, transforms=Pairs())] == ["X"]


async def test_a_utf8_stream_transforms_what_it_receives_not_what_it_sends() -> None:
    to_us, incoming = anyio.create_memory_object_stream[bytes](4)
    outgoing, sent = anyio.create_memory_object_stream[bytes](4)
    stream = Utf8Stream(StapledObjectStream(outgoing, incoming), transforms=Pairs())
    async with to_us:
        await to_us.send(b"xa")
        await to_us.send(b"b")
    await stream.send("ab")
    assert await sent.receive() == b"ab"
    assert "".join(await _texts(stream.receive_stream)) == "xX"
    await stream.aclose()
    sent.close()
