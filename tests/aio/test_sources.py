"""as_byte_stream and real transports.

TCP over loopback, a subprocess's stdout, files, a trio ``SocketStream`` and asyncio
streams, each carrying multibyte text cut mid-character.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import anyio
import pytest
import trio
import trio.testing
from _stream_helpers import ChunkStream, cut
from anyio import ClosedResourceError, EndOfStream
from anyio.abc import ByteReceiveStream, ByteStream, SocketAttribute
from anyio.streams.memory import MemoryObjectReceiveStream

from utf8stream import (
    LineReceiveStream,
    Utf8ReceiveStream,
    Utf8SendStream,
    Utf8Stream,
    as_byte_stream,
)
from utf8stream.aio.sources import AsyncFileByteStream

TEXT = "Příliš žluťoučký kůň\r\nСъешь же ещё\n日本語のテキスト\n😀 emoji 👍🏽 end"
DATA = TEXT.encode()
LINES = ["Příliš žluťoučký kůň", "Съешь же ещё", "日本語のテキスト", "😀 emoji 👍🏽 end"]
# Cut points that fall inside multibyte characters.
ODD_CUTS = list(range(1, len(DATA), 7))


async def read_text(stream: Utf8ReceiveStream | Utf8Stream) -> str:
    pieces = []
    while True:
        try:
            pieces.append(await stream.receive())
        except EndOfStream:
            return "".join(pieces)


async def read_lines(stream: LineReceiveStream) -> list[str]:
    return [line async for line in stream]


# -- anyio ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_anyio_streams_are_returned_unchanged() -> None:
    chunks = ChunkStream([b"x"])
    assert as_byte_stream(chunks) is chunks
    send, receive = anyio.create_memory_object_stream[bytes](1)
    assert as_byte_stream(receive) is receive
    assert as_byte_stream(send) is send
    assert isinstance(receive, MemoryObjectReceiveStream)
    send.close()
    receive.close()


@pytest.mark.parametrize("obj", [42, b"bytes", "text", (1, 2), object()])
def test_other_objects_are_refused(obj: object) -> None:
    with pytest.raises(TypeError):
        as_byte_stream(obj)  # type: ignore[call-overload]


@pytest.mark.anyio
async def test_tcp_echo_over_loopback() -> None:
    async def echo(client: ByteStream) -> None:
        async with client:
            async for chunk in client:
                await client.send(chunk)
            await client.send_eof()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, echo)
        raw = await anyio.connect_tcp("127.0.0.1", port)
        stream = Utf8Stream(raw)
        assert stream.extra(SocketAttribute.remote_port) == port
        for piece in cut(DATA, ODD_CUTS):
            await raw.send(piece)  # bytes cut inside characters
            await anyio.sleep(0.001)
        await stream.send("\n✓ sent as text")
        await stream.send_eof()
        lines = await read_lines(LineReceiveStream(stream))
        assert lines == [*LINES[:-1], LINES[-1], "✓ sent as text"]
        assert stream.statistics().bytes_in == len(DATA) + len("\n✓ sent as text".encode())
        await stream.aclose()
        tg.cancel_scope.cancel()


CHILD = r"""
import sys, time
data = sys.argv[1].encode()
out = sys.stdout.buffer
i, step = 0, 1
while i < len(data):
    out.write(data[i:i + step]); out.flush()
    i += step
    step = step % 5 + 2   # 1, 3, 5, 2, 4, 6, ... odd-sized pieces
    time.sleep(0.001)
out.write(b"\xff bad byte\n"); out.flush()
"""


@pytest.mark.anyio
async def test_subprocess_stdout_lines() -> None:
    async with await anyio.open_process([sys.executable, "-c", CHILD, TEXT]) as process:
        assert process.stdout is not None
        lines = await read_lines(LineReceiveStream(process.stdout))
    assert process.returncode == 0
    assert lines == [*LINES[:-1], LINES[-1] + "\ufffd bad byte"]


@pytest.mark.anyio
async def test_file_through_anyio_open_file(tmp_path: Path) -> None:
    # Large enough that anyio's 64 KiB reads end inside characters.
    text = (TEXT + "\n") * 3000
    path = tmp_path / "text.txt"
    async with await anyio.open_file(path, "wb") as out:
        sender = Utf8SendStream(as_byte_stream(out))
        for piece in (text[i : i + 1000] for i in range(0, len(text), 1000)):
            await sender.send(piece)
        await sender.flush()
    assert path.read_bytes() == text.encode()

    async with await anyio.open_file(path, "rb") as file:
        stream = as_byte_stream(file)
        assert isinstance(stream, AsyncFileByteStream)
        assert await read_text(Utf8ReceiveStream(stream)) == text
    with pytest.raises(ClosedResourceError):
        await stream.receive()


@pytest.mark.anyio
async def test_text_mode_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("x")
    async with await anyio.open_file(path, "r") as file:
        with pytest.raises(TypeError):
            as_byte_stream(file)  # type: ignore[call-overload]


# -- trio ------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_socket_stream_through_as_byte_stream() -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listeners[0].accept()
    async with client, server:
        stream = as_byte_stream(client)
        assert stream.extra(SocketAttribute.remote_port) == port
        for piece in cut(DATA, ODD_CUTS):
            await server.send_all(piece)
            await trio.sleep(0.001)
        await server.send_eof()
        lines = await read_lines(LineReceiveStream(stream))
        assert lines == LINES
        # And back: text to bytes through the same adapter.
        sender = Utf8SendStream(stream)
        await sender.send("réponse")
        assert await server.receive_some(100) == "réponse".encode()
    for listener in listeners:
        await listener.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_memory_streams_and_errors() -> None:
    left, right = trio.testing.memory_stream_pair()
    stream = as_byte_stream(left)
    assert isinstance(stream, ByteStream)
    text = Utf8Stream(stream)
    await text.send("ça")
    assert await right.receive_some() == "ça".encode()
    await right.send_all(b"\xc3")
    await right.send_all(b"\xa7a")
    await right.aclose()
    assert await read_text(text) == "ça"
    await text.send_eof()
    await text.aclose()
    with pytest.raises(ClosedResourceError):  # trio's error, as anyio's
        await stream.receive()

    send, receive = trio.testing.memory_stream_one_way_pair()
    one_way = as_byte_stream(receive)
    assert isinstance(one_way, ByteReceiveStream)
    await send.send_all(b"a\xff")
    await send.aclose()
    assert await read_text(Utf8ReceiveStream(one_way)) == "a\ufffd"


# -- asyncio ---------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asyncio_open_connection_pair() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.read())  # echo what the client sent, up to its EOF
        for piece in cut(DATA, ODD_CUTS):
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.001)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        stream = as_byte_stream((reader, writer))
        assert stream.extra(SocketAttribute.remote_port) == port
        text = Utf8Stream(stream)
        await text.send("fin ✓ ")
        await text.send_eof()
        assert await read_text(text) == "fin ✓ " + TEXT
        await text.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asyncio_stream_reader_alone() -> None:
    reader = asyncio.StreamReader()
    for piece in cut(DATA, ODD_CUTS):
        reader.feed_data(piece)
    reader.feed_eof()
    stream = as_byte_stream(reader)
    assert await read_lines(LineReceiveStream(stream)) == LINES
    await stream.aclose()
    with pytest.raises(ClosedResourceError):
        await stream.receive()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_busy_error_becomes_anyios() -> None:
    _send, receive = trio.testing.memory_stream_one_way_pair()
    stream = as_byte_stream(receive)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stream.receive)
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(anyio.BusyResourceError):
            await stream.receive()
        tg.cancel_scope.cancel()


class _OneWayTrioStream(trio.abc.Stream):
    """A trio two-way stream that cannot half-close (not a HalfCloseableStream)."""

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        return b""

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_send_eof_on_a_trio_stream_that_cannot_half_close() -> None:
    stream = as_byte_stream(_OneWayTrioStream())
    with pytest.raises(NotImplementedError, match="cannot half-close"):
        await stream.send_eof()
    # A half-closeable one passes send_eof through: the peer sees end of stream.
    left, right = trio.testing.memory_stream_pair()
    await as_byte_stream(left).send_eof()
    assert await right.receive_some() == b""


class _NoEofWriter:
    """The part of asyncio.StreamWriter an SSL transport offers: no write_eof."""

    def can_write_eof(self) -> bool:
        return False


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_send_eof_on_an_asyncio_transport_that_cannot_half_close() -> None:
    from utf8stream.aio.sources import AsyncioByteSendStream

    stream = AsyncioByteSendStream(_NoEofWriter())  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="cannot half-close"):
        await stream.send_eof()


# -- what is not a byte stream, said at construction -----------------------------------


def _wrong_transports(backend: str) -> dict[str, object]:
    """What users pass by mistake: a number, and the event loop's own stream objects."""
    wrong: dict[str, object] = {"int": 123, "bytes": b"data"}
    if backend == "asyncio":
        wrong["StreamReader"] = asyncio.StreamReader()
    else:
        send, receive = trio.testing.memory_stream_one_way_pair()
        wrong["MemoryReceiveStream"], wrong["MemorySendStream"] = receive, send
        wrong["StapledStream"] = trio.testing.memory_stream_pair()[0]
    return wrong


_ADAPTERS = {
    "Utf8ReceiveStream": ("receive()", Utf8ReceiveStream),
    "LineReceiveStream": ("receive()", LineReceiveStream),
    "Utf8SendStream": ("send()", Utf8SendStream),
    "Utf8Stream": ("receive() and send() and send_eof()", Utf8Stream),
}


@pytest.mark.anyio
@pytest.mark.parametrize("adapter", sorted(_ADAPTERS))
async def test_what_is_not_a_byte_stream_is_refused_at_construction(
    anyio_backend: str, adapter: str
) -> None:
    needed, cls = _ADAPTERS[adapter]
    for name, wrong in _wrong_transports(anyio_backend).items():
        with pytest.raises(TypeError) as caught:
            cls(wrong)
        assert str(caught.value) == (
            f"{adapter} needs an anyio stream (with {needed}), not {name}: wrap an asyncio "
            f"StreamReader or StreamWriter, a trio stream or an anyio AsyncFile in "
            f"as_byte_stream(), e.g. {adapter}(as_byte_stream(reader))"
        )


@pytest.mark.anyio
async def test_the_wrapped_stream_the_error_suggests_is_read(anyio_backend: str) -> None:
    if anyio_backend == "asyncio":
        reader = asyncio.StreamReader()
        reader.feed_data(DATA)
        reader.feed_eof()
        lines = LineReceiveStream(as_byte_stream(reader))
    else:
        send, receive = trio.testing.memory_stream_one_way_pair()
        await send.send_all(DATA)
        await send.aclose()
        lines = LineReceiveStream(as_byte_stream(receive))
    assert await read_lines(lines) == LINES


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_valid_utf8_stream_refuses_what_is_not_a_trio_stream() -> None:
    from utf8stream.aio.trio_stream import ValidUtf8ReceiveStream

    _send, receive = anyio.create_memory_object_stream[bytes](1)
    for wrong in (123, receive):
        with pytest.raises(TypeError, match=r"needs a trio ReceiveStream \(with receive_some"):
            ValidUtf8ReceiveStream(wrong)  # type: ignore[arg-type]
    _send.close()
    receive.close()
