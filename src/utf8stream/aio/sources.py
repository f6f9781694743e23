"""``as_byte_stream``: anyio byte streams from what users actually hold.

* anyio byte streams (``ByteReceiveStream``, ``ByteSendStream``, ``ByteStream`` and object
  streams of bytes) are returned unchanged;
* trio ``ReceiveStream`` / ``SendStream`` / ``Stream`` (use them under anyio's trio
  backend; trio is the optional extra ``pip install 'utf8stream[trio]'``);
* asyncio ``StreamReader``, ``StreamWriter`` and a ``(StreamReader, StreamWriter)`` pair
  (asyncio backend);
* anyio ``AsyncFile`` opened in binary mode.

The wrappers translate calls and exceptions and nothing else: ``b""`` from a trio or asyncio
read becomes ``anyio.EndOfStream``, trio's resource errors become anyio's.  Every one is
cancellation-safe as far as the wrapped object is: a cancelled read returns nothing and
consumes nothing.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, overload

import anyio
from anyio import (
    BrokenResourceError,
    BusyResourceError,
    ClosedResourceError,
    EndOfStream,
    TypedAttributeProvider,
)
from anyio.abc import (
    ByteReceiveStream,
    ByteSendStream,
    ByteStream,
    ObjectReceiveStream,
    ObjectSendStream,
    SocketAttribute,
)

from ._trio import import_trio

if TYPE_CHECKING:
    import trio
    from anyio import AsyncFile

__all__ = [
    "AsyncFileByteStream",
    "AsyncioByteReceiveStream",
    "AsyncioByteSendStream",
    "AsyncioByteStream",
    "TrioByteReceiveStream",
    "TrioByteSendStream",
    "TrioByteStream",
    "as_byte_stream",
]

DEFAULT_MAX_BYTES = 65536


class _Guard:
    """One task at a time per direction (``anyio.BusyResourceError`` otherwise)."""

    __slots__ = ("_action", "_busy")

    def __init__(self, action: str) -> None:
        self._action = action
        self._busy = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        if self._busy:
            raise BusyResourceError(self._action)
        self._busy = True
        try:
            yield
        finally:
            self._busy = False


def _socket_attributes(sock: Any) -> dict[Any, Callable[[], Any]]:
    """anyio socket attributes for an object with ``getsockname`` (a socket), if any."""
    if sock is None or not hasattr(sock, "getsockname"):
        return {}
    attributes: dict[Any, Callable[[], Any]] = {
        SocketAttribute.family: lambda: sock.family,
        SocketAttribute.local_address: lambda: sock.getsockname(),
    }
    if isinstance(sock, socket.socket):
        attributes[SocketAttribute.raw_socket] = lambda: sock
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        attributes[SocketAttribute.local_port] = lambda: sock.getsockname()[1]
    try:
        peer = sock.getpeername()
    except OSError:
        return attributes
    attributes[SocketAttribute.remote_address] = lambda: peer
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        attributes[SocketAttribute.remote_port] = lambda: peer[1]
    return attributes


# -- trio --------------------------------------------------------------------------------


def _from_trio(exc: Exception) -> Exception:
    """trio's resource errors as anyio's (the same situations, other classes)."""
    trio = import_trio("adapting a trio stream")

    if isinstance(exc, trio.BusyResourceError):
        return BusyResourceError(str(exc) or "using")
    if isinstance(exc, trio.ClosedResourceError):
        return ClosedResourceError()
    if isinstance(exc, trio.BrokenResourceError):
        return BrokenResourceError()
    return exc


class TrioByteReceiveStream(ByteReceiveStream):
    """An anyio ``ByteReceiveStream`` over a trio ``ReceiveStream``."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        import_trio(type(self).__name__)
        self.stream = stream

    async def receive(self, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        try:
            data = await self.stream.receive_some(max_bytes)
        except Exception as exc:
            mapped = _from_trio(exc)
            if mapped is exc:
                raise
            raise mapped from exc
        if not data:
            raise EndOfStream
        return bytes(data)

    async def aclose(self) -> None:
        await self.stream.aclose()  # trio's aclose raises no resource errors

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return _socket_attributes(getattr(self.stream, "socket", None))


class TrioByteSendStream(ByteSendStream):
    """An anyio ``ByteSendStream`` over a trio ``SendStream``."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        import_trio(type(self).__name__)
        self.stream = stream

    async def send(self, item: bytes) -> None:
        try:
            await self.stream.send_all(item)
        except Exception as exc:
            mapped = _from_trio(exc)
            if mapped is exc:
                raise
            raise mapped from exc

    async def aclose(self) -> None:
        await self.stream.aclose()  # trio's aclose raises no resource errors

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return _socket_attributes(getattr(self.stream, "socket", None))


class TrioByteStream(ByteStream):
    """An anyio ``ByteStream`` over a trio ``Stream`` (``send_eof`` needs a
    ``HalfCloseableStream``)."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        import_trio(type(self).__name__)
        self.stream = stream
        self._receive = TrioByteReceiveStream(stream)
        self._send = TrioByteSendStream(stream)

    async def receive(self, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        return await self._receive.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        await self._send.send(item)

    async def send_eof(self) -> None:
        trio = import_trio(type(self).__name__)
        if not isinstance(self.stream, trio.abc.HalfCloseableStream):
            raise NotImplementedError(f"{type(self.stream).__name__} cannot half-close")
        try:
            await self.stream.send_eof()
        except Exception as exc:
            mapped = _from_trio(exc)
            if mapped is exc:
                raise
            raise mapped from exc

    async def aclose(self) -> None:
        await self._receive.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self._receive.extra_attributes


# -- asyncio -----------------------------------------------------------------------------


class AsyncioByteReceiveStream(ByteReceiveStream):
    """An anyio ``ByteReceiveStream`` over an ``asyncio.StreamReader``.

    ``aclose()`` only stops this wrapper (a reader cannot be closed on its own); closing
    the connection is the writer's job.
    """

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self._guard = _Guard("reading from")
        self._closed = False

    async def receive(self, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        with self._guard():
            if self._closed:
                raise ClosedResourceError
            try:
                data = await self.reader.read(max_bytes)
            except (ConnectionError, OSError) as exc:
                raise BrokenResourceError from exc
        if not data:
            raise EndOfStream
        return data

    async def aclose(self) -> None:
        self._closed = True
        await anyio.lowlevel.checkpoint()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        transport = getattr(self.reader, "_transport", None)
        sock = transport.get_extra_info("socket") if transport is not None else None
        return _socket_attributes(sock)


class AsyncioByteSendStream(ByteSendStream):
    """An anyio ``ByteSendStream`` over an ``asyncio.StreamWriter`` (``send`` drains)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self._guard = _Guard("writing to")

    async def send(self, item: bytes) -> None:
        with self._guard():
            writer = self.writer
            if writer.is_closing():
                raise ClosedResourceError
            try:
                writer.write(item)
                await writer.drain()
            except (ConnectionError, OSError) as exc:
                raise BrokenResourceError from exc

    async def send_eof(self) -> None:
        if not self.writer.can_write_eof():
            raise NotImplementedError("this asyncio transport cannot half-close")
        self.writer.write_eof()
        await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        writer = self.writer
        if not writer.is_closing():
            writer.close()
        with suppress(ConnectionError, OSError):  # the peer may have broken it already
            await writer.wait_closed()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return _socket_attributes(self.writer.get_extra_info("socket"))


class AsyncioByteStream(ByteStream):
    """An anyio ``ByteStream`` over a ``(StreamReader, StreamWriter)`` pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._receive = AsyncioByteReceiveStream(reader)
        self._send = AsyncioByteSendStream(writer)

    async def receive(self, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        return await self._receive.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        await self._send.send(item)

    async def send_eof(self) -> None:
        await self._send.send_eof()

    async def aclose(self) -> None:
        await self._receive.aclose()
        await self._send.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self._send.extra_attributes


# -- anyio files -------------------------------------------------------------------------


class AsyncFileByteStream(ByteStream):
    """An anyio ``ByteStream`` over an ``anyio.AsyncFile`` opened in binary mode.

    ``receive`` reads up to ``max_bytes`` (``EndOfStream`` at the end of the file), ``send``
    writes, ``send_eof`` flushes, ``aclose`` closes the file.
    """

    def __init__(self, file: AsyncFile[bytes]) -> None:
        mode = getattr(file.wrapped, "mode", "b")
        if isinstance(mode, str) and "b" not in mode:
            raise TypeError(f"as_byte_stream needs a file opened in binary mode, not {mode!r}")
        self.file = file
        self._read_guard = _Guard("reading from")
        self._write_guard = _Guard("writing to")

    async def receive(self, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        with self._read_guard():
            try:
                data = await self.file.read(max_bytes)
            except ValueError as exc:  # I/O on a closed file
                raise ClosedResourceError from exc
        if not data:
            raise EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        with self._write_guard():
            try:
                await self.file.write(item)
            except ValueError as exc:
                raise ClosedResourceError from exc

    async def send_eof(self) -> None:
        await self.file.flush()

    async def aclose(self) -> None:
        await self.file.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {}


# -- dispatch ----------------------------------------------------------------------------

_Anyio = (ByteReceiveStream, ByteSendStream, ObjectReceiveStream, ObjectSendStream)


@overload
def as_byte_stream(obj: ByteStream) -> ByteStream: ...
@overload
def as_byte_stream(obj: ByteReceiveStream) -> ByteReceiveStream: ...
@overload
def as_byte_stream(obj: ByteSendStream) -> ByteSendStream: ...
@overload
def as_byte_stream(obj: ObjectReceiveStream[bytes]) -> ObjectReceiveStream[bytes]: ...
@overload
def as_byte_stream(obj: ObjectSendStream[bytes]) -> ObjectSendStream[bytes]: ...
@overload
def as_byte_stream(obj: AsyncFile[bytes]) -> AsyncFileByteStream: ...
@overload
def as_byte_stream(obj: asyncio.StreamReader) -> AsyncioByteReceiveStream: ...
@overload
def as_byte_stream(obj: asyncio.StreamWriter) -> AsyncioByteSendStream: ...
@overload
def as_byte_stream(
    obj: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> AsyncioByteStream: ...
@overload
def as_byte_stream(obj: trio.abc.Stream) -> ByteStream: ...
@overload
def as_byte_stream(obj: trio.abc.ReceiveStream) -> ByteReceiveStream: ...
@overload
def as_byte_stream(obj: trio.abc.SendStream) -> ByteSendStream: ...
def as_byte_stream(obj: object) -> TypedAttributeProvider:
    """An anyio byte stream for ``obj``, which the streams of this package read and write.

    ``obj``: an anyio byte stream or object stream of bytes (returned as it is), an
    asyncio ``StreamReader``, ``StreamWriter`` or ``(reader, writer)`` pair, a trio
    ``ReceiveStream``, ``SendStream`` or ``Stream``, or an anyio ``AsyncFile`` opened in
    binary mode.  ``TypeError`` for anything else.  With asyncio::

        reader, writer = await asyncio.open_connection("example.org", 7)
        async for line in LineReceiveStream(as_byte_stream(reader)):
            print(line)
        text = Utf8Stream(as_byte_stream((reader, writer)))  # both directions

    and with trio (under anyio's trio backend)::

        stream = await trio.open_tcp_stream("example.org", 7)
        async for text in Utf8ReceiveStream(as_byte_stream(stream)):
            print(text, end="")
    """
    if isinstance(obj, _Anyio):
        return obj
    if isinstance(obj, anyio.AsyncFile):
        return AsyncFileByteStream(obj)
    if isinstance(obj, asyncio.StreamReader):
        return AsyncioByteReceiveStream(obj)
    if isinstance(obj, asyncio.StreamWriter):
        return AsyncioByteSendStream(obj)
    if (
        isinstance(obj, tuple)
        and len(obj) == 2
        and isinstance(obj[0], asyncio.StreamReader)
        and isinstance(obj[1], asyncio.StreamWriter)
    ):
        return AsyncioByteStream(obj[0], obj[1])
    # Only look for trio streams if trio is in use: importing it costs time.
    trio_module = sys.modules.get("trio")
    if trio_module is not None:
        abc = trio_module.abc
        if isinstance(obj, abc.Stream):
            return TrioByteStream(obj)
        if isinstance(obj, abc.ReceiveStream):
            return TrioByteReceiveStream(obj)
        if isinstance(obj, abc.SendStream):
            return TrioByteSendStream(obj)
    raise TypeError(f"cannot adapt {type(obj).__name__} to an anyio byte stream")
