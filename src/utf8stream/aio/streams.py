"""anyio adapters: byte streams in, text and lines out (and text back to bytes).

Each adapter is a thin loop around a core state machine: await bytes (or text), feed the
core, hand out what it returns.  Decoding lives in ``Utf8Decoder``, line splitting in
``LineSplitter``; nothing here looks at individual bytes or characters.

Contracts shared by every class here (they run unchanged on asyncio and trio):

* **Cancellation**: a cancelled ``receive()`` loses and duplicates nothing.  The only
  ``await`` is the read from the source, and state changes only after it returns.
* **Busy**: a second ``receive()`` (or ``send()``) while one is waiting raises
  ``anyio.BusyResourceError``.
* **Closing**: ``aclose()`` closes the transport; ``extra_attributes`` are the transport's.
* **Errors**: a strict-mode ``Utf8DecodeError`` (or ``LineTooLong``) is raised where the bad
  unit (or line) is; the text before it was returned by earlier calls, and the next call
  continues after it.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from anyio import BusyResourceError, EndOfStream
from anyio.abc import (
    AnyByteReceiveStream,
    AnyByteSendStream,
    AnyByteStream,
    ObjectReceiveStream,
    ObjectSendStream,
    ObjectStream,
)
from anyio.lowlevel import checkpoint

from ..core.autodecode import DEFAULT_MAX_LOOKAHEAD, AutoDecoder, is_auto
from ..core.autodoubt import OnDoubt
from ..core.decoder import OnMalformed, Utf8Decoder
from ..core.encoder import Utf8Encoder
from ..core.events import MalformedKind, Utf8DecodeError
from ..core.lines import LineTooLong
from ..core.transformed import as_transform
from ..core.transformingdecoder import TransformingDecoder

if TYPE_CHECKING:
    from ..core.transform import TextTransform
    from ..core.transformed import Transforms

__all__ = [
    "LineTooLong",
    "StreamStatistics",
    "Utf8ReceiveStream",
    "Utf8SendStream",
    "Utf8Stream",
]


@dataclass(frozen=True)
class StreamStatistics:
    """A snapshot of what a stream has done so far.

    ``bytes_in``: bytes received from the transport (0 for a line stream over text).
    ``chars_out``: characters decoded (for a line stream: characters it received, newlines
    included).  ``malformed``: malformed units by kind (gaps appear as ``LOST_BYTES``).
    ``gaps``: gaps marked.  ``lines``: lines returned (pieces of split lines included).
    ``overlong_lines``: lines longer than ``max_line_bytes``, whatever the policy did.
    """

    bytes_in: int = 0
    chars_out: int = 0
    malformed: Mapping[MalformedKind, int] = field(default_factory=lambda: MappingProxyType({}))
    gaps: int = 0
    lines: int = 0
    overlong_lines: int = 0

    @property
    def malformed_total(self) -> int:
        """Malformed units of every kind except gaps."""
        return sum(n for k, n in self.malformed.items() if k is not MalformedKind.LOST_BYTES)


def _check_transport(owner: str, transport: object, *methods: str) -> None:
    """``TypeError`` at construction for what is not an anyio stream (an asyncio
    ``StreamReader``, a trio stream, a number...), which would otherwise fail at the first
    read with an ``AttributeError`` far from the mistake."""
    if all(callable(getattr(transport, method, None)) for method in methods):
        return
    needed = " and ".join(f"{method}()" for method in methods)
    raise TypeError(
        f"{owner} needs an anyio stream (with {needed}), not {type(transport).__name__}: "
        f"wrap an asyncio StreamReader or StreamWriter, a trio stream or an anyio AsyncFile "
        f"in as_byte_stream(), e.g. {owner}(as_byte_stream(reader))"
    )


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None


def _make_encoder(errors: str) -> Utf8Encoder:
    """The encoder behind ``Utf8SendStream``: the project's own, strict by default.

    On a strict error it raises ``Utf8EncodeError`` and the failing call changes
    nothing, so nothing is half-sent.
    """
    return Utf8Encoder(errors)


@dataclass(eq=False)
class Utf8ReceiveStream(ObjectReceiveStream[str]):
    """Text from a byte stream, decoded by ``Utf8Decoder``.

    ``transport``: any anyio byte source (``ByteReceiveStream`` or
    ``ObjectReceiveStream[bytes]``; see ``as_byte_stream`` for trio and asyncio streams).
    ``errors``, ``gap`` and ``on_malformed`` are the decoder's.  ``start_offset`` is the
    absolute offset of the transport's first byte (for a file opened mid-way); it only
    shifts offsets.  If that byte may not be a character start, call ``mark_gap()`` before
    the first ``receive()``: that choice is the caller's.

    ``receive()`` returns non-empty text as soon as a chunk completes some.  At the end of
    the transport it flushes the decoder (a cut-off final sequence becomes U+FFFD, or a
    ``Utf8DecodeError`` in strict mode) and then raises ``anyio.EndOfStream``.  In strict
    mode the text before a malformed unit is returned first, the next call raises the
    error (its ``partial`` is then empty: that text was already returned), and the call
    after that continues right after the unit.

    ``encoding="auto"``: the encoding is detected (``utf8stream.detect``) on the first
    bytes, at most ``max_lookahead`` of them, which are then decoded with the rest in the
    encoding chosen (``decoder`` is then an ``AutoDecoder``; its ``encoding`` says which).
    Input that is not text raises ``NotTextError`` (a ``ValueError``) from ``receive()``;
    ``on_doubt`` hears of later bytes the encoding chosen cannot decode (``EncodingDoubt``).

    ``transforms``: a ``TextTransform`` (``utf8stream.transforms``: ``Normalizer``,
    ``MojibakeRepairer``...) or a sequence of them, done in order, on the decoded text
    (``transform``, ``None`` without): each carries at most its ``max_carry`` between
    chunks, and the end of the transport ends its text.  A ``TransformingDecoder`` over
    ``decoder`` and ``transform`` checkpoints both at once.
    """

    transport: AnyByteReceiveStream
    _: KW_ONLY
    errors: InitVar[str] = "replace"
    start_offset: InitVar[int] = 0
    gap: InitVar[str] = "replace"
    on_malformed: InitVar[OnMalformed | None] = None
    encoding: InitVar[str] = "utf-8"
    max_lookahead: InitVar[int] = DEFAULT_MAX_LOOKAHEAD
    on_doubt: InitVar[OnDoubt | None] = None
    transforms: InitVar[Transforms] = None
    decoder: Utf8Decoder | AutoDecoder = field(init=False)
    #: What the decoded text goes through (``transforms=``), if anything.
    transform: TextTransform | None = field(init=False)
    _decode: Callable[[bytes, bool], str] = field(init=False, repr=False)
    _error: BaseException | None = field(init=False, repr=False, default=None)
    _resume: bool = field(init=False, repr=False, default=False)
    _eof: bool = field(init=False, repr=False, default=False)
    # Any of the three above: receive() looks at them before reading.
    _pending: bool = field(init=False, repr=False, default=False)
    _busy: bool = field(init=False, repr=False, default=False)

    def __post_init__(
        self,
        errors: str,
        start_offset: int,
        gap: str,
        on_malformed: OnMalformed | None,
        encoding: str,
        max_lookahead: int,
        on_doubt: OnDoubt | None,
        transforms: Transforms,
    ) -> None:
        _check_transport(type(self).__name__, self.transport, "receive")
        if is_auto(encoding):
            self.decoder = AutoDecoder(
                errors,
                start_offset=start_offset,
                on_malformed=on_malformed,
                max_lookahead=max_lookahead,
                on_doubt=on_doubt,
            )
        elif _is_utf8(encoding):
            self.decoder = Utf8Decoder(
                errors, start_offset=start_offset, gap=gap, on_malformed=on_malformed
            )
        else:
            raise ValueError(
                f"{type(self).__name__} decodes UTF-8 or encoding='auto', not {encoding!r}:"
                " LineReceiveStream(encoding=...) reads lines in any other"
            )
        self.transform = as_transform(transforms)
        self._decode = (
            self.decoder.decode
            if self.transform is None
            else TransformingDecoder(self.decoder, self.transform).decode
        )
        # In the instance, not only as the class's defaults (a dataclass leaves a field
        # with ``init=False`` and a default to the class attribute): the interpreter
        # reads an instance's own attribute at a fixed place, and ``__anext__`` reads
        # two of these per chunk; a class attribute is a lookup in the class and in the
        # instance's dictionary each time.
        self._error = None
        self._resume = self._eof = self._pending = self._busy = False

    async def receive(self) -> str:
        if self._busy:
            raise BusyResourceError("reading from")
        if self._pending:
            text = self._take_pending()
            if text:
                return text
        self._busy = True
        try:
            transport = self.transport
            decode = self._decode
            while True:
                try:
                    chunk = await transport.receive()
                except EndOfStream:
                    self._eof = self._pending = True
                    break
                try:
                    text = decode(chunk, False)
                except Exception as exc:
                    text = self._failed(exc)
                if text:
                    return text
        finally:
            self._busy = False
        return self._flush()

    async def __anext__(self) -> str:
        # receive() inlined, so that ``async for`` costs one coroutine per chunk, not two
        # (and no local names: the loop mostly runs once per call).
        if self._busy or self._pending:
            try:
                return await self.receive()
            except EndOfStream:
                raise StopAsyncIteration from None
        self._busy = True
        try:
            while True:
                try:
                    chunk = await self.transport.receive()
                except EndOfStream:
                    self._eof = self._pending = True
                    break
                try:
                    text = self._decode(chunk, False)
                except Exception as exc:
                    text = self._failed(exc)
                if text:
                    return text
        finally:
            self._busy = False
        try:
            return self._flush()
        except EndOfStream:
            raise StopAsyncIteration from None

    def _take_pending(self) -> str:
        """Raise a held error, decode input the decoder kept after one, or flush at EOF.

        Returns "" when the transport has to be read.
        """
        error = self._error
        if error is not None:
            self._error = None
            raise error
        if self._resume:
            self._resume = False
            try:
                text = self._decode(b"", False)
            except Exception as exc:
                text = self._failed(exc)
            if text:
                return text
        if self._eof:
            return self._flush()
        self._pending = False
        return ""

    def _flush(self) -> str:
        """At the end of the transport: the decoder's last text, else ``EndOfStream``."""
        try:
            text = self._decode(b"", True)
        except Exception as exc:
            text = self._failed(exc)
        if text:
            return text
        raise EndOfStream

    def _failed(self, exc: Exception) -> str:
        """After the decoder raised: hand out the text before the failure first."""
        self._resume = self._pending = True
        if isinstance(exc, Utf8DecodeError) and exc.partial:
            text = exc.partial
            exc.partial = ""
            self._error = exc
            return text
        raise exc

    def mark_gap(self, lost: int | None = None) -> None:
        """Declare that bytes were lost between the data received so far and what follows.

        See ``Utf8Decoder.mark_gap``: one U+FFFD (with ``gap="replace"``) and one
        ``LOST_BYTES`` event stand for the gap.
        """
        self.decoder.mark_gap(lost)
        self._resume = self._pending = True

    def statistics(self) -> StreamStatistics:
        stats = self.decoder.statistics()
        return StreamStatistics(
            bytes_in=stats.bytes_fed,
            chars_out=stats.chars_out,
            malformed=stats.malformed,
            gaps=stats.gaps,
        )

    async def aclose(self) -> None:
        await self.transport.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self.transport.extra_attributes


@dataclass(eq=False)
class Utf8SendStream(ObjectSendStream[str]):
    """Sends text to a byte stream as UTF-8.

    ``errors`` is the encoder's policy (``strict`` by default: a lone surrogate raises
    ``UnicodeEncodeError`` and nothing of that item is sent).  ``aclose()`` flushes the
    encoder, then closes the transport (even if the flush fails).
    """

    transport: AnyByteSendStream
    _: KW_ONLY
    errors: InitVar[str] = "strict"
    _encoder: Utf8Encoder = field(init=False, repr=False)
    _busy: bool = field(init=False, repr=False, default=False)

    def __post_init__(self, errors: str) -> None:
        _check_transport(type(self).__name__, self.transport, "send")
        self._encoder = _make_encoder(errors)

    async def send(self, item: str) -> None:
        await self._send(self._encoder.encode(item))

    async def _send(self, data: bytes) -> None:
        if self._busy:
            raise BusyResourceError("writing to")
        self._busy = True
        try:
            if data:
                await self.transport.send(data)
            else:
                await checkpoint()
        finally:
            self._busy = False

    async def flush(self) -> None:
        """Send whatever the encoder still holds (nothing, for the stdlib encoder)."""
        await self._send(self._encoder.encode("", True))

    async def aclose(self) -> None:
        try:
            data = self._encoder.encode("", True)
            if data:
                await self.transport.send(data)
        finally:
            await self.transport.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self.transport.extra_attributes


@dataclass(eq=False)
class Utf8Stream(ObjectStream[str]):
    """Both directions over one byte stream, plus ``send_eof()``.

    ``errors`` applies to receiving (default ``replace``), ``send_errors`` to sending
    (default ``strict``); ``start_offset``, ``gap``, ``on_malformed`` and ``transforms``
    (on the text received) are as for ``Utf8ReceiveStream``.
    """

    transport: AnyByteStream
    _: KW_ONLY
    errors: InitVar[str] = "replace"
    send_errors: InitVar[str] = "strict"
    start_offset: InitVar[int] = 0
    gap: InitVar[str] = "replace"
    on_malformed: InitVar[OnMalformed | None] = None
    transforms: InitVar[Transforms] = None
    receive_stream: Utf8ReceiveStream = field(init=False)
    send_stream: Utf8SendStream = field(init=False)

    def __post_init__(
        self,
        errors: str,
        send_errors: str,
        start_offset: int,
        gap: str,
        on_malformed: OnMalformed | None,
        transforms: Transforms,
    ) -> None:
        _check_transport(type(self).__name__, self.transport, "receive", "send", "send_eof")
        self.receive_stream = Utf8ReceiveStream(
            self.transport,
            errors=errors,
            start_offset=start_offset,
            gap=gap,
            on_malformed=on_malformed,
            transforms=transforms,
        )
        self.send_stream = Utf8SendStream(self.transport, errors=send_errors)

    @property
    def decoder(self) -> Utf8Decoder:
        decoder = self.receive_stream.decoder
        assert isinstance(decoder, Utf8Decoder)  # a Utf8Stream decodes UTF-8
        return decoder

    def mark_gap(self, lost: int | None = None) -> None:
        self.receive_stream.mark_gap(lost)

    def statistics(self) -> StreamStatistics:
        return self.receive_stream.statistics()

    async def receive(self) -> str:
        return await self.receive_stream.receive()

    async def send(self, item: str) -> None:
        await self.send_stream.send(item)

    async def send_eof(self) -> None:
        """Flush the encoder, then close the sending direction of the transport."""
        await self.send_stream.flush()
        await self.transport.send_eof()

    async def aclose(self) -> None:
        await self.send_stream.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self.transport.extra_attributes
