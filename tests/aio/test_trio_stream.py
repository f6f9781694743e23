"""ValidUtf8ReceiveStream: trio's stream conformance checks, and valid UTF-8 out."""

from __future__ import annotations

import random

import pytest
import trio
import trio.testing
from _helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import MalformedKind
from utf8stream.aio.trio_stream import ValidUtf8ReceiveStream


async def memory_maker() -> tuple[trio.abc.SendStream, ValidUtf8ReceiveStream]:
    send, receive = trio.testing.memory_stream_one_way_pair()
    return send, ValidUtf8ReceiveStream(receive)


async def lockstep_maker() -> tuple[trio.abc.SendStream, ValidUtf8ReceiveStream]:
    send, receive = trio.testing.lockstep_stream_one_way_pair()
    return send, ValidUtf8ReceiveStream(receive)


def test_passes_check_one_way_stream() -> None:
    async def main() -> None:
        await trio.testing.check_one_way_stream(memory_maker, lockstep_maker)
        await trio.testing.check_one_way_stream(lockstep_maker, lockstep_maker)

    trio.run(main)


async def pump_through(data: bytes, sizes: list[int], max_bytes: int) -> list[bytes]:
    """Move ``data`` to the stream a few bytes at a time (``sizes``, then one by one)."""
    send = trio.testing.MemorySendStream()
    receive = trio.testing.MemoryReceiveStream()
    stream = ValidUtf8ReceiveStream(receive)
    await send.send_all(data)
    await send.aclose()
    results: list[bytes] = []

    async def consumer() -> None:
        while piece := await stream.receive_some(max_bytes):
            results.append(piece)
        results.append(b"")

    steps = iter(sizes)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer)
        while not results or results[-1] != b"":
            trio.testing.memory_stream_pump(send, receive, max_bytes=next(steps, 1) or 1)
            await trio.testing.wait_all_tasks_blocked()
    return results


BYTES = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.too_slow])
@given(data=BYTES, sizes=st.lists(st.integers(1, 7), max_size=10), max_bytes=st.integers(4, 9))
def test_byte_at_a_time_output_is_valid_utf8_in_every_piece(
    data: bytes, sizes: list[int], max_bytes: int
) -> None:
    results = trio.run(pump_through, data, sizes, max_bytes)
    assert results[-1] == b""
    assert b"".join(results) == data.decode("utf-8", "replace").encode()
    for piece in results:
        assert len(piece) <= max_bytes
        piece.decode("utf-8")  # strict: no piece splits a character


def test_large_random_stream_with_small_reads() -> None:
    rng = random.Random(7)
    alphabet = b"ab\n\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff\x80"
    data = bytes(rng.choice(alphabet) for _ in range(5000))

    async def main() -> list[bytes]:
        send, receive = trio.testing.memory_stream_one_way_pair()
        stream = ValidUtf8ReceiveStream(receive)
        out: list[bytes] = []
        async with trio.open_nursery() as nursery:

            async def producer() -> None:
                pos = 0
                while pos < len(data):
                    step = rng.randint(1, 50)
                    await send.send_all(data[pos : pos + step])
                    pos += step
                await send.aclose()

            nursery.start_soon(producer)
            while piece := await stream.receive_some(rng.randint(4, 16)):
                piece.decode("utf-8")
                out.append(piece)
        return out

    out = trio.run(main)
    assert b"".join(out) == data.decode("utf-8", "replace").encode()


def test_cut_off_final_sequence_is_flushed_and_counted() -> None:
    async def main() -> tuple[bytes, ValidUtf8ReceiveStream]:
        send, receive = trio.testing.memory_stream_one_way_pair()
        stream = ValidUtf8ReceiveStream(receive)
        await send.send_all(b"ok\xf0\x9f\x98")
        await send.aclose()
        out = b""
        while piece := await stream.receive_some():
            out += piece
        assert await stream.receive_some() == b""
        return out, stream

    out, stream = trio.run(main)
    assert out == "ok\ufffd".encode()
    assert stream.decoder.statistics().malformed == {MalformedKind.TRUNCATED_AT_END: 1}


@pytest.mark.parametrize("max_bytes", [1, 2, 3])
def test_max_bytes_below_a_character_still_delivers_everything(max_bytes: int) -> None:
    async def main() -> list[bytes]:
        send, receive = trio.testing.memory_stream_one_way_pair()
        stream = ValidUtf8ReceiveStream(receive)
        await send.send_all("a😀b".encode())
        await send.aclose()
        out = []
        while piece := await stream.receive_some(max_bytes):
            out.append(piece)
        return out

    out = trio.run(main)
    assert b"".join(out) == "a😀b".encode()
    assert all(len(piece) <= max_bytes for piece in out)
