"""anyio adapter: lines from a byte source or a text stream (``LineReceiveStream``).

A thin loop around the core: await bytes (or text), feed the ``LineSplitter`` (or, for
another encoding than UTF-8, the ``LineEngine``), hand out the lines.  The contracts of
``utf8stream.aio.streams`` (cancellation, busy, closing, errors) hold here too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import TYPE_CHECKING, Any, cast

from anyio import BusyResourceError, EndOfStream
from anyio.abc import AnyByteReceiveStream, ByteReceiveStream, ObjectReceiveStream

from ..core._accel import implementation
from ..core.autodecode import DEFAULT_MAX_LOOKAHEAD, is_auto
from ..core.autodoubt import OnDoubt
from ..core.autolines import AutoLineEngine
from ..core.decoder import Utf8Decoder
from ..core.linecodec import LineBatch, LineEngine, Utf8LineDecoder, line_decoder
from ..core.lines import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG, LineSplitter, LineTooLong
from .streams import StreamStatistics, Utf8ReceiveStream, Utf8Stream, _check_transport

if TYPE_CHECKING:
    from ..core.transformed import Transforms

__all__ = ["LineReceiveStream", "LineTooLong"]


@dataclass(eq=False)
class _Pushback(ObjectReceiveStream[Any]):
    """A source with one item put back in front (after sniffing its type)."""

    source: ObjectReceiveStream[Any]
    item: object

    async def receive(self) -> Any:
        item = self.item
        if item is None:
            return await self.source.receive()
        self.item = None
        return item

    async def aclose(self) -> None:
        await self.source.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self.source.extra_attributes


@dataclass(eq=False)
class LineReceiveStream(ObjectReceiveStream[str]):
    """Lines from a byte source or a text stream.

    ``source``: an anyio byte source (decoded with ``Utf8Decoder`` and ``errors``) or an
    ``ObjectReceiveStream[str]`` such as a ``Utf8ReceiveStream``.  A plain object stream is
    treated as text or bytes by the type of its first item.

    ``newline``, ``keepends``, ``max_line_bytes`` and ``on_overlong`` are the
    ``LineSplitter``'s: universal newlines by default (a ``\\r`` at the end of a chunk is
    held until the next chunk, or the end, decides), or any fixed delimiter.  The limit is
    on the line's content in source bytes (a malformed byte counts one; over a text
    stream, the text's UTF-8 bytes), so the same data gives the same lines and errors
    however it was chunked; memory is bounded by one chunk plus ``max_line_bytes``.  With
    ``on_overlong="raise"`` an overlong line raises ``LineTooLong`` (``partial`` holds its
    first ``max_line_bytes`` bytes) in its place, and the next ``receive()`` returns the
    line after it.  A final line without newline is returned at the end of the source; then
    ``receive()`` raises ``anyio.EndOfStream``.

    Lines already split from a chunk are returned without waiting on the source (like
    ``anyio.streams.buffered.BufferedByteReceiveStream``), so iteration costs little per
    line.

    ``encoding``: the encoding of a byte source (UTF-8 by default).  Any other is read
    by the core's ``LineEngine`` through ``line_decoder(encoding, errors)`` (UTF-16/32,
    legacy codecs; see ``CodecLineDecoder``): the newlines are found in the bytes, and
    ``max_line_bytes`` counts the line's bytes in that encoding.  ``keepends`` is for
    UTF-8 only.  ``encoding="auto"``: the encoding is detected on the first bytes (at most
    ``max_lookahead``), which are then cut into lines with the rest (``AutoLineEngine``;
    ``keepends`` works in any encoding detected); input that is not text raises
    ``NotTextError``, and ISO-2022-JP (stateful: lines cannot be cut in its bytes) a
    ``ValueError``, from ``receive()``.  ``source_encoding`` says what was detected;
    ``on_doubt`` is ``Utf8ReceiveStream``'s.

    ``transforms``: a ``TextTransform`` or a sequence of them (``utf8stream.transforms``)
    done on each line, as ``LineSplitter``'s ``transforms``: the line's text whole, its
    newline kept out, nothing carried from one line to the next (a newline is a boundary
    for every transform utf8stream ships), so a line boundary needs no transform state.
    """

    source: AnyByteReceiveStream | ObjectReceiveStream[str]
    _: KW_ONLY
    newline: InitVar[str | None] = None
    keepends: InitVar[bool] = False
    max_line_bytes: InitVar[int | None] = DEFAULT_MAX_LINE_BYTES
    on_overlong: InitVar[str] = DEFAULT_ON_OVERLONG
    errors: InitVar[str] = "replace"
    encoding: InitVar[str] = "utf-8"
    max_lookahead: InitVar[int] = DEFAULT_MAX_LOOKAHEAD
    on_doubt: InitVar[OnDoubt | None] = None
    transforms: InitVar[Transforms] = None
    splitter: LineSplitter = field(init=False)
    #: The text layer lines are split from: ``source`` itself, or a ``Utf8ReceiveStream``
    #: over it (``None`` until a plain object stream's first item tells which).
    text_stream: ObjectReceiveStream[str] | None = field(init=False)
    # Lines ready to hand out, last first; and, after a LineTooLong, the mixed remainder.
    _ready: list[str] = field(init=False, repr=False, default_factory=list)
    _later: list[str | LineTooLong] = field(init=False, repr=False, default_factory=list)
    _errors: str = field(init=False, repr=False)
    #: The Utf8ReceiveStream this stream made over a byte source: while it holds nothing,
    #: chunks go from its transport straight to ``splitter.feed_bytes``.
    _direct: Utf8ReceiveStream | None = field(init=False, repr=False, default=None)
    _eof: bool = field(init=False, repr=False, default=False)
    _busy: bool = field(init=False, repr=False, default=False)
    #: Another encoding than UTF-8: the line engine that reads the byte source.
    _engine: LineEngine | AutoLineEngine | None = field(init=False, repr=False, default=None)
    _engine_bytes: int = field(init=False, repr=False, default=0)
    _engine_lines: int = field(init=False, repr=False, default=0)
    _engine_overlong: int = field(init=False, repr=False, default=0)

    def __post_init__(
        self,
        newline: str | None,
        keepends: bool,
        max_line_bytes: int | None,
        on_overlong: str,
        errors: str,
        encoding: str,
        max_lookahead: int,
        on_doubt: OnDoubt | None,
        transforms: Transforms,
    ) -> None:
        _check_transport(type(self).__name__, self.source, "receive")
        self.splitter = LineSplitter(
            newline=newline,
            keepends=keepends,
            max_line_bytes=max_line_bytes,
            on_overlong=on_overlong,
            transforms=transforms,
        )
        self._errors = errors
        # In the instance, not only as class defaults (see Utf8ReceiveStream): read per
        # chunk.
        self._direct = self._engine = None
        self._eof = self._busy = False
        source = self.source
        if is_auto(encoding):
            if isinstance(source, (Utf8ReceiveStream, Utf8Stream, LineReceiveStream)):
                raise TypeError("encoding='auto' needs a byte source, not a text stream")
            self.text_stream = None
            self._engine = AutoLineEngine(
                errors,
                max_lookahead=max_lookahead,
                on_doubt=on_doubt,
                newline=newline,
                keepends=keepends,
                max_line_bytes=max_line_bytes,
                on_overlong=on_overlong,
                on_overlong_line=self._count_overlong,
            )
            return
        decoder = line_decoder(encoding, errors)
        if not isinstance(decoder, Utf8LineDecoder):
            if keepends:
                raise ValueError("keepends is for UTF-8 only")
            if isinstance(source, (Utf8ReceiveStream, Utf8Stream, LineReceiveStream)):
                raise TypeError(f"encoding={encoding!r} needs a byte source, not a text stream")
            self.text_stream = None
            self._engine = LineEngine(
                decoder,
                newline=newline,
                max_line_bytes=max_line_bytes,
                on_overlong=on_overlong,
                on_overlong_line=self._count_overlong,
            )
            return
        if isinstance(source, (Utf8ReceiveStream, Utf8Stream, LineReceiveStream)):
            self.text_stream = cast(ObjectReceiveStream[str], source)
        elif isinstance(source, ByteReceiveStream):
            self.text_stream = self._direct = Utf8ReceiveStream(source, errors=errors)
        else:
            self.text_stream = None
            Utf8Decoder(errors)  # reject a bad policy now, not at the first item

    async def receive(self) -> str:
        ready = self._ready
        if ready:
            return ready.pop()
        return await self._refill()

    def __aiter__(self) -> AsyncIterator[str]:  # type: ignore[override]
        # Per line, ``async for`` costs a coroutine for each ``__anext__`` in Python; the
        # C accelerator's iterator hands out ready lines with no Python frame at all (its
        # pure-Python twin is an iterator, not an async generator, which a cancelled step
        # would end).  All state stays in the stream, so leaving the loop early, mixing
        # ``receive()`` with iteration, or a cancelled step loses nothing.
        iterator: AsyncIterator[str] = implementation().BufferedAsyncIterator(self._refill)
        iterator.feed(self._ready)  # type: ignore[attr-defined]
        return iterator

    async def _refill(self, iterator: Any = None) -> str:
        """Wait for the next line (the ready list is empty).

        With ``iterator``, the accelerated iterator's refill (its list is empty, or
        stale): it is handed the stream's list, and the end of the stream is
        ``StopAsyncIteration`` (one coroutine per chunk, no wrapper around this one).
        """
        if iterator is not None:
            ready = self._ready
            if ready:
                iterator.feed(ready)  # ``receive()`` installed a new list meanwhile
                return ready.pop()
        if self._busy:
            raise BusyResourceError("reading from")
        self._busy = True
        try:
            splitter = self.splitter
            while True:
                later = self._later
                if later:
                    item = later.pop()
                    if isinstance(item, LineTooLong):
                        raise item
                    return item
                if self._eof:
                    raise EndOfStream
                if self._engine is not None:
                    items = await self._lines_from_engine(self._engine)
                    if items is None:
                        continue
                    if not any(isinstance(item, LineTooLong) for item in items):
                        ready = self._ready = cast(list[str], items)
                        return ready.pop()
                    self._later = items
                    continue
                # A LineTooLong among the items (only with "raise"): they wait in _later.
                raised = splitter.overlong_lines if splitter.on_overlong == "raise" else -1
                direct = self._direct
                if direct is not None and not direct._pending:  # noqa: SLF001
                    # The text stream holds nothing: decode and split in one step.
                    try:
                        chunk = await direct.transport.receive()
                    except EndOfStream:
                        direct._eof = direct._pending = True  # noqa: SLF001
                        chunk, final = b"", True
                    else:
                        final = False
                    decoder = direct.decoder
                    assert isinstance(decoder, Utf8Decoder)  # made so in __post_init__
                    try:
                        items = splitter.feed_bytes(decoder, chunk, final)
                    except Exception as exc:
                        # The text before the error; the text stream raises it next, and
                        # then ends (after the flush).
                        items = splitter.feed(direct._failed(exc))  # noqa: SLF001
                    else:
                        if final:  # the last line, judged in source bytes like the others
                            items += splitter.flush()
                            self._eof = True
                else:
                    text_stream = self.text_stream
                    try:
                        if text_stream is None:
                            text = await self._sniff()
                        else:
                            text = await text_stream.receive()
                    except EndOfStream:
                        self._eof = True
                        items = splitter.flush()
                        items.reverse()
                        self._later = items
                        continue
                    items = splitter.feed(text)
                if raised < 0 or splitter.overlong_lines == raised:
                    if items:
                        items.reverse()
                        ready = self._ready = items  # type: ignore[assignment]
                        return ready.pop()
                    continue
                items.reverse()
                self._later = items
        except EndOfStream:
            if iterator is not None:
                raise StopAsyncIteration from None
            raise
        finally:
            self._busy = False
            if iterator is not None:
                iterator.feed(self._ready)

    def _count_overlong(self, offset: int) -> None:
        self._engine_overlong += 1

    async def _lines_from_engine(
        self, engine: LineEngine | AutoLineEngine
    ) -> list[str | LineTooLong] | None:
        """The next lines the engine cuts from the byte source, last first (``None``: no
        line yet)."""
        source = cast(ObjectReceiveStream[bytes], self.source)
        try:
            chunk = await source.receive()
        except EndOfStream:
            self._eof = True
            items = engine.finish()
        else:
            self._engine_bytes += len(chunk)
            items = engine.feed(bytes(chunk))
        out: list[str | LineTooLong] = []
        for item in items:
            if isinstance(item, LineBatch):
                out += item.texts
            elif item.line is not None:
                out.append(item.line)
        self._engine_lines += sum(isinstance(line, str) for line in out)
        if self.splitter.line_transform is not None:
            self.splitter.line_transform.lines(out)
        out.reverse()
        return out or None

    async def _sniff(self) -> str:
        """Receive the first item of a plain object stream and decide: text or bytes."""
        source = cast(ObjectReceiveStream[Any], self.source)
        item = await source.receive()
        if isinstance(item, str):
            self.text_stream = source
            return item
        # Bytes: the item goes back, and from there the bytes go to the line splitter as a
        # byte source's do, so the limit counts source bytes (a malformed byte is one).
        self.text_stream = self._direct = Utf8ReceiveStream(
            _Pushback(source, item), errors=self._errors
        )
        return ""

    @property
    def decoder(self) -> Utf8Decoder | None:
        """The decoder of the text layer, if it is a ``Utf8ReceiveStream``."""
        text_stream = self.text_stream
        if isinstance(text_stream, (Utf8ReceiveStream, Utf8Stream)):
            decoder = text_stream.decoder
            return decoder if isinstance(decoder, Utf8Decoder) else decoder.utf8
        return None

    @property
    def source_encoding(self) -> str | None:
        """The encoding read: the one given, or with ``"auto"`` the one detected (None
        until decided)."""
        engine = self._engine
        if isinstance(engine, AutoLineEngine):
            return engine.encoding
        if engine is not None:
            return engine.decoder.encoding
        return "utf-8"

    def mark_gap(self, lost: int | None = None) -> None:
        """Mark a gap in the underlying byte stream (see ``Utf8ReceiveStream.mark_gap``)."""
        text_stream = self.text_stream
        if not isinstance(text_stream, (Utf8ReceiveStream, Utf8Stream)):
            raise TypeError("mark_gap() needs a byte source or a Utf8ReceiveStream")
        self.splitter.sync_decoder()  # the gap comes after the bytes the splitter holds
        text_stream.mark_gap(lost)

    def statistics(self) -> StreamStatistics:
        if self._engine is not None:
            pending = len(self._ready) + sum(isinstance(x, str) for x in self._later)
            return StreamStatistics(
                bytes_in=self._engine_bytes,
                lines=self._engine_lines - pending,
                overlong_lines=self._engine_overlong,
            )
        text_stream = self.text_stream
        base = (
            text_stream.statistics()
            if isinstance(text_stream, (Utf8ReceiveStream, Utf8Stream))
            else StreamStatistics()
        )
        lines = self.splitter.statistics()
        waiting = len(self._ready) + sum(isinstance(x, str) for x in self._later)
        return StreamStatistics(
            bytes_in=base.bytes_in,
            chars_out=lines.chars_in,
            malformed=base.malformed,
            gaps=base.gaps,
            lines=lines.lines - waiting,
            overlong_lines=lines.overlong_lines,
        )

    async def aclose(self) -> None:
        # Lines already split are dropped too: after this, receive() raises the
        # source's ClosedResourceError.
        self._ready.clear()
        self._later.clear()
        await self.source.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self.source.extra_attributes
