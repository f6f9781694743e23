"""Helpers for the adapter tests: in-memory transports and an independent line oracle."""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import anyio
from anyio import ClosedResourceError, EndOfStream
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.lowlevel import checkpoint

from utf8stream import LineTooLong, Utf8Decoder


class ChunkStream(ByteReceiveStream):
    """Hands out the given chunks, one per ``receive()``, then ``EndOfStream``.

    Every ``receive()`` is a checkpoint before it takes a chunk, so a cancelled call
    consumes nothing (the contract the adapters rely on).
    """

    def __init__(self, chunks: Iterable[bytes], attributes: Mapping[Any, Any] | None = None):
        self._chunks = list(chunks)
        self._next = 0
        self._attributes = dict(attributes or {})
        self.closed = False
        self.receives = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await checkpoint()
        if self.closed:
            raise ClosedResourceError
        self.receives += 1
        if self._next == len(self._chunks):
            raise EndOfStream
        chunk = self._chunks[self._next]
        self._next += 1
        return chunk

    async def aclose(self) -> None:
        self.closed = True
        await checkpoint()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {key: (lambda value=value: value) for key, value in self._attributes.items()}


class ByteSink(ByteSendStream):
    """Collects what is sent; ``send_eof`` and ``aclose`` are recorded."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.sends: list[bytes] = []
        self.closed = False
        self.eof = False

    async def send(self, item: bytes) -> None:
        await checkpoint()
        if self.closed or self.eof:
            raise ClosedResourceError
        self.sends.append(bytes(item))
        self.data += item

    async def send_eof(self) -> None:
        self.eof = True
        await checkpoint()

    async def aclose(self) -> None:
        self.closed = True
        await checkpoint()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {}


def cut(data: bytes, points: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given offsets (any order, duplicates and out-of-range ignored)."""
    edges = sorted({p for p in points if 0 < p < len(data)})
    return [data[a:b] for a, b in zip([0, *edges], [*edges, len(data)], strict=True)]


def all_chunkings(data: bytes) -> Iterator[list[bytes]]:
    """Every way to cut ``data`` into non-empty chunks (keep ``data`` short)."""
    n = len(data)
    for mask in range(1 << max(0, n - 1)):
        yield cut(data, [i + 1 for i in range(n - 1) if mask >> i & 1])


def decode_all(data: bytes, errors: str = "replace") -> str:
    """What the core decoder makes of ``data`` in one piece."""
    decoder = Utf8Decoder(errors)
    return decoder.decode(data) + decoder.decode(b"", final=True)


def feed_slowly(
    chunks: Sequence[bytes], seed: int
) -> tuple[anyio.abc.ObjectReceiveStream[bytes], Callable[[], Any]]:
    """A memory object stream and the task that feeds it ``chunks``, pausing at random."""
    import random

    send, receive = anyio.create_memory_object_stream[bytes](0)
    rng = random.Random(seed)

    async def feeder() -> None:
        async with send:
            for chunk in chunks:
                if rng.random() < 0.5:
                    await anyio.sleep(rng.random() * 0.0005)
                else:
                    await checkpoint()
                await send.send(chunk)

    return receive, feeder


_UNIVERSAL = re.compile("(\r\n|\r|\n)")


def reference_lines(
    text: str,
    newline: str | None = None,
    keepends: bool = False,
    limit: int | None = None,
    policy: str = "raise",
) -> list[object]:
    """Lines of ``text`` by a plain regex split; overlong lines as the policy says.

    A raised error appears as ``("LineTooLong", partial)``.  Written independently of
    ``utf8stream.core.lines`` (a slow byte walk for the cuts).
    """
    pattern = _UNIVERSAL if newline is None else re.compile("(" + re.escape(newline) + ")")
    parts = pattern.split(text)
    items = [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
    if parts[-1]:
        items.append((parts[-1], ""))
    out: list[object] = []
    for content, ending in items:
        end = ending if keepends else ""
        data = content.encode("utf-8", "surrogatepass")
        if limit is None or len(data) <= limit:
            out.append(content + end)
            continue
        pieces = []
        start = 0
        while len(data) - start > limit:
            stop = start + limit
            while 0x80 <= data[stop] <= 0xBF:
                stop -= 1
            pieces.append(data[start:stop].decode("utf-8", "surrogatepass"))
            start = stop
        pieces.append(data[start:].decode("utf-8", "surrogatepass"))
        if policy == "raise":
            out.append(("LineTooLong", pieces[0]))
        elif policy == "truncate":
            out.append(pieces[0] + end)
        elif policy == "split":
            pieces[-1] += end
            out.extend(pieces)
    return out


def _unit_boundary(data: bytes, pos: int) -> bool:
    """Whether decoding ``data`` in two parts at ``pos`` gives the text of the whole: no
    character and no malformed unit (a maximal subpart, one U+FFFD) is cut there."""
    halves = data[:pos].decode("utf-8", "replace") + data[pos:].decode("utf-8", "replace")
    return halves == data.decode("utf-8", "replace")


def _held(data: bytes) -> int:
    """How many bytes at the end of ``data`` CPython's incremental decoder holds."""
    peer = codecs.getincrementaldecoder("utf-8")("replace")
    peer.decode(data)
    return len(peer.getstate()[0])


def reference_byte_lines(
    data: bytes,
    newline: str | None = None,
    keepends: bool = False,
    limit: int | None = None,
    policy: str = "raise",
) -> list[object]:
    """Lines of UTF-8 ``data`` (malformed bytes replaced) with ``limit`` counting source
    bytes: ``reference_lines`` on the bytes, cut only where the decoded text allows, and
    before a truncated sequence that ends the piece (the decoder knows it is one only
    when it sees the next byte)."""
    sep = rb"(\r\n|\r|\n)" if newline is None else b"(" + re.escape(newline.encode()) + b")"
    parts = re.split(sep, data)
    items = [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
    if parts[-1]:
        items.append((parts[-1], b""))
    out: list[object] = []
    for content, ending in items:
        end = ending.decode() if keepends else ""
        if limit is None or len(content) <= limit:
            out.append(content.decode("utf-8", "replace") + end)
            continue
        pieces = []
        while len(content) > limit:
            stop = limit
            while not _unit_boundary(content, stop):
                stop -= 1
            # A truncated sequence at the cut: the piece ends before it (the decoder knows
            # it is malformed only at the next byte), unless it is the whole piece, which
            # the next byte ends: its U+FFFD is the piece's.
            while (held := _held(content[:stop])) and held < stop:
                stop -= held
            pieces.append(content[:stop].decode("utf-8", "replace"))
            content = content[stop:]
        pieces.append(content.decode("utf-8", "replace"))
        if policy == "raise":
            out.append(("LineTooLong", pieces[0]))
        elif policy == "truncate":
            out.append(pieces[0] + end)
        elif policy == "split":
            pieces[-1] += end
            out.extend(pieces)
    return out


def as_comparable(items: Iterable[str | LineTooLong]) -> list[object]:
    """Splitter output in ``reference_lines`` form."""
    return [("LineTooLong", x.partial) if isinstance(x, LineTooLong) else x for x in items]
