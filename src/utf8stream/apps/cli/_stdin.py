"""``tail -`` (or no FILE): standard input when it is a pipe or a terminal.

Such an input cannot be read again or from its end, so it is read once, to its end, as
GNU tail does (``-f`` does not keep it open).  ``-n N``: the bytes from the start of the
last N lines are kept as they pass, found by the search that finds a FILE's
(``core/lastlines.py``), so a pipe and the same bytes in a FILE show the same lines; a
line longer than ``--max-line-bytes`` is kept only that long unless it is shown whole
(``split``).  With ``--multiline*`` the last N events are kept instead (an event is known
only once its lines are joined).  ``-c N``: the last N bytes likewise; ``+N`` shows
everything from line or byte N on as it comes.  The lines are cut by the core's
``LineEngine`` with the same options as a FILE's (encoding, ``auto`` included, error
policy, line limit and its policy, multi-line events), so a line of standard input is
shown exactly as the same line of a file.  A standard input that is a regular file
(``< app.log``) is not read here: ``tail`` follows it as a FILE.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.autodecode import AUTO
from ...core.autolines import detect_line_codec
from ...core.lastlines import start_of_last_lines
from ...core.linecodec import ByteLine, LineEngine, line_decoder
from ...core.multiline import MultilineJoiner
from ...core.transformed import LineTransform, as_transform

if TYPE_CHECKING:
    from ...core.transform import TextTransform

#: How much is asked of standard input at a time.
READ_SIZE = 1 << 16


@dataclass(frozen=True)
class Piece:
    """What ``tail`` writes: a line's text, and whether a newline follows it."""

    text: str
    terminated: bool = True


@dataclass(frozen=True)
class StdinOptions:
    """The options of ``tail`` that say what of standard input is shown, and how."""

    encoding: str
    errors: str
    max_line_bytes: int
    on_overlong: str
    #: The last ``number`` lines or bytes, or from the ``number``-th on (``from_start``).
    number: int
    from_start: bool
    in_bytes: bool
    joiner: MultilineJoiner | None = None
    #: What ends a line: "\n", or "\0" (-z).
    newline: str = "\n"
    #: What each line's text goes through (``--normalize``, ``--fix-mojibake``).
    transforms: tuple[TextTransform, ...] = ()


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """The bytes of ``fd`` as they come.

    A blocking read cannot be interrupted, and the interpreter waits for anyio's worker
    threads at exit, so the reads are made by a daemon thread of their own, a few reads
    ahead at most; a worker thread only waits for the next one, and is released when
    the command stops.
    """
    import anyio

    ahead: queue.Queue[bytes | OSError] = queue.Queue(maxsize=4)

    def read() -> None:
        while True:
            try:
                data = os.read(fd, READ_SIZE)
            except OSError as exc:
                ahead.put(exc)
                return
            ahead.put(data)
            if not data:
                return

    threading.Thread(target=read, name="utf8stream tail: standard input", daemon=True).start()
    try:
        while True:
            item = await anyio.to_thread.run_sync(ahead.get, abandon_on_cancel=True)
            if isinstance(item, OSError):
                raise item
            if not item:
                return
            yield item
    finally:
        with contextlib.suppress(queue.Full):  # full: nobody waits
            ahead.put_nowait(b"")  # a worker left waiting, when stopped, goes free


class FromLine:
    """``-n +N``: the lines before line ``N`` (1-based) are left out; a line split in
    pieces (an overlong line, an unfinished one shown early) counts once, at its end."""

    def __init__(self, number: int) -> None:
        self._skip = max(number - 1, 0)

    def keeps(self, terminated: bool) -> bool:
        """Whether the next line or piece (``terminated``: its line ends there) is shown."""
        if not self._skip:
            return True
        if terminated:
            self._skip -= 1
        return False


class _Lines:
    """Bytes in, ``Piece``s out: the line engine, then the multi-line joiner if any."""

    def __init__(self, options: StdinOptions, head: bytes, offset: int) -> None:
        """``head``: the input's first bytes, which ``auto`` decides on and whose
        byte-order mark tells the byte order; ``offset``: where in the input the bytes
        fed start."""
        encoding = options.encoding
        if encoding == AUTO:
            encoding = detect_line_codec(head, "stdin")
        self._engine = LineEngine(
            line_decoder(encoding, options.errors, start_offset=offset),
            # As for a FILE: cut at "\n" only; a "\r" stays in the text.
            newline=options.newline,
            max_line_bytes=options.max_line_bytes,
            on_overlong=options.on_overlong,
            offset=offset,
            head=head if offset else None,
        )
        self._joiner = options.joiner
        self._rest_of_line = False  # the last record was a piece of a line cut in pieces

    def feed(self, data: bytes) -> list[Piece]:
        return self._pieces(list(self._engine.records(self._engine.feed(data))), end=False)

    def finish(self) -> list[Piece]:
        return self._pieces(list(self._engine.records(self._engine.finish())), end=True)

    def _pieces(self, records: list[ByteLine], end: bool) -> list[Piece]:
        joiner = self._joiner
        if joiner is None:
            return [Piece(r.text, r.terminated) for r in records]
        now = time.monotonic()
        pieces: list[Piece] = []
        lines: list[tuple[str, int, int]] = []
        for r in records:
            if self._rest_of_line:  # joined to the line's start, not a line of its own
                if lines:
                    pieces += [Piece(event.text) for event in joiner.feed(lines, now)]
                    lines = []
                cut = joiner.extend(r.text, r.offset, r.end, now)  # cut inside the line
                pieces += [Piece(event.text, terminated=False) for event in cut]
            else:
                lines.append((r.text, r.offset, r.end))
            self._rest_of_line = not r.terminated
        if lines:
            pieces += [Piece(event.text) for event in joiner.feed(lines, now)]
        if end:
            last = joiner.flush()
            if last is not None:
                terminated = records[-1].terminated if records else True
                pieces.append(Piece(last.text, terminated))
        return pieces


def _scan_engine(options: StdinOptions, head: bytes) -> LineEngine:
    """The line engine whose newlines ``start_of_last_lines`` counts: the input's encoding
    (its byte order told by ``head``) and newline, as for a FILE."""
    encoding = options.encoding
    if encoding == AUTO:
        encoding = detect_line_codec(head, "stdin")
    decoder = line_decoder(encoding, options.errors)
    return LineEngine(decoder, newline=options.newline, head=head if decoder.prelude else None)


def _shorten_overlong(window: bytearray, engine: LineEngine, keep: int) -> None:
    """Drop the bytes past the first ``keep`` of each line of ``window`` (which starts a
    line) longer than that, the unfinished last one too: ``truncate``, ``skip`` and
    ``raise`` show none of them, the line needs only stay too long.  Whole code units
    are dropped, so the bytes that follow stay aligned."""
    unit = engine.decoder.unit
    keep = -(-keep // unit) * unit
    newlines = engine.newlines(bytes(window))
    starts = [0, *[end for _, end in newlines]]
    ends = [at for at, _ in newlines]
    # The unfinished last line: what is past ``keep`` of it, in whole code units.
    last = starts[-1] + keep
    if len(window) > last:
        del window[last : len(window) - (len(window) - last) % unit]
    for start, end in reversed(list(zip(starts, ends, strict=False))):
        if end - start > keep:
            del window[start + keep : end - (end - start - keep) % unit]


async def _last_lines_bytes(
    chunks: AsyncIterator[bytes],
    head: bytes,
    number: int,
    engine: LineEngine,
    keep: int | None = None,
) -> tuple[bytearray, int]:
    """The input's end from the start of its last ``number`` lines (all of it when it has
    fewer), read to its end, and where that starts in the input: the search of a FILE's
    last lines (``start_of_last_lines``), over a window of the bytes kept as they pass.
    ``keep``: a line longer than that is kept only that long (``_shorten_overlong``)."""
    window = bytearray(head)
    start = 0
    limit = 4 * READ_SIZE

    def trim() -> None:
        nonlocal start
        # The last line so far counts even unfinished: the bytes still to come only
        # add to it.
        at = start_of_last_lines(
            lambda offset, n: bytes(window[offset : offset + n]), len(window), number, engine
        )
        del window[:at]
        start += at
        if keep is not None:
            _shorten_overlong(window, engine, keep)

    async for data in chunks:
        window += data
        if len(window) >= limit:
            trim()
            limit = 2 * len(window) + 4 * READ_SIZE  # a trim costs what it keeps
    trim()
    return window, start


async def stdin_pieces(options: StdinOptions, fd: int = 0) -> AsyncIterator[list[Piece]]:
    """What ``tail`` shows of the input ``fd``, in batches, in order."""
    chunks = _chunks(fd)
    # What ``auto`` decides on: the first read (a pipe's writer may be slow to write
    # more, and nothing is shown before the decision).
    head = await anext(chunks, b"")
    if options.in_bytes and options.from_start:
        shown = _from_byte(options, chunks, head)
    elif options.in_bytes:
        shown = _last_bytes(options, chunks, head)
    elif options.from_start:
        shown = _from_line(options, chunks, head)
    elif options.joiner is not None:
        shown = _last_events(options, chunks, head)
    else:
        shown = _last_lines(options, chunks, head)
    transform = as_transform(options.transforms)
    lines = None if transform is None else LineTransform(transform, options.newline, False)
    async for pieces in shown:
        if lines is not None:
            pieces = [Piece(lines.line(p.text), p.terminated) for p in pieces]
        yield pieces


async def _from_byte(
    options: StdinOptions, chunks: AsyncIterator[bytes], head: bytes
) -> AsyncIterator[list[Piece]]:
    """``-c +N``: from byte N on (1-based), as it comes."""
    skip = max(options.number - 1, 0)
    lines = _Lines(options, head, skip)
    yield lines.feed(head[skip:])
    seen = len(head)
    async for data in chunks:
        before, seen = seen, seen + len(data)
        yield lines.feed(data[skip - before :] if before < skip else data)
    yield lines.finish()


async def _last_bytes(
    options: StdinOptions, chunks: AsyncIterator[bytes], head: bytes
) -> AsyncIterator[list[Piece]]:
    """``-c N``: the last N bytes, kept as they pass."""
    number = options.number
    last = bytearray(head)
    seen = len(head)
    async for data in chunks:
        seen += len(data)
        last += data
        if len(last) > 2 * number + READ_SIZE:
            del last[: len(last) - number]
    tail = bytes(last[len(last) - number :]) if number else b""
    lines = _Lines(options, head, seen - len(tail))
    yield lines.feed(tail) + lines.finish()


async def _from_line(
    options: StdinOptions, chunks: AsyncIterator[bytes], head: bytes
) -> AsyncIterator[list[Piece]]:
    """``-n +N``: the line engine's lines from line N on (``FromLine``), as they come."""
    lines = _Lines(options, head, 0)
    from_line = FromLine(options.number)

    def after_skip(pieces: list[Piece]) -> list[Piece]:
        return [piece for piece in pieces if from_line.keeps(piece.terminated)]

    yield after_skip(lines.feed(head))
    async for data in chunks:
        yield after_skip(lines.feed(data))
    yield after_skip(lines.finish())


async def _last_lines(
    options: StdinOptions, chunks: AsyncIterator[bytes], head: bytes
) -> AsyncIterator[list[Piece]]:
    """``-n N``: the last N lines, found as a FILE's are (``start_of_last_lines``, lines
    as the line engine counts them before any policy), then cut and decoded."""
    if not options.number:
        async for _ in chunks:
            pass
        yield []
        return
    engine = _scan_engine(options, head)
    # A line longer than the limit is shown whole (split) or never past it: then only
    # its start is kept, and memory stays bounded by the limit.
    keep = None if options.on_overlong == "split" else options.max_line_bytes + 8
    window, start = await _last_lines_bytes(chunks, head, options.number, engine, keep)
    lines = _Lines(options, head, start)
    yield lines.feed(bytes(window)) + lines.finish()


async def _last_events(
    options: StdinOptions, chunks: AsyncIterator[bytes], head: bytes
) -> AsyncIterator[list[Piece]]:
    """``-n N`` with ``--multiline*``: the last N events, each with its pieces (an event
    cut at ``--max-event-bytes`` counts once per piece).  Events are known only once
    joined, so every line is cut and joined, and the last N kept as they pass."""
    number = options.number
    lines = _Lines(options, head, 0)
    kept: deque[list[Piece]] = deque(maxlen=number)
    open_event: list[Piece] | None = None

    def keep(pieces: list[Piece]) -> None:
        nonlocal open_event
        if not number:
            return
        for piece in pieces:
            if open_event is None:
                open_event = []
                kept.append(open_event)
            open_event.append(piece)
            if piece.terminated:
                open_event = None

    keep(lines.feed(head))
    async for data in chunks:
        keep(lines.feed(data))
    keep(lines.finish())
    yield [piece for event in kept for piece in event]
