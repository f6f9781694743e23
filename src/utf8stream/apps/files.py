"""Large files: lazy transcoding in constant memory, in parallel at character boundaries.

A file is read in chunks and each chunk goes through a ``Transcoder``; memory is one chunk
(plus what the codecs hold, a few bytes).  With ``workers > 1`` and a UTF-8-family source,
the file is cut at character boundaries (``boundaries.split_points`` on an ``mmap``) into
pieces of at most ``PIECE_BYTES``; worker processes transcode the pieces and the parent
writes their output in order, so the output file is the sequential one byte for byte.

Only the start of the stream is special: the BOM policy applies to the first piece, and
the other pieces keep whatever they contain.  A unit cut by a piece's end is reported by
that piece's decoder as ``TRUNCATED_AT_END``; the parent renames it from the next byte
(``boundaries.rejoined_event``), as the sequential decoder would have.
"""

from __future__ import annotations

import codecs
import io
import itertools
import mmap
import multiprocessing
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from ..core.boundaries import rejoined_event, split_points
from ..core.decoder import Utf8Decoder
from ..core.events import Malformed, MalformedKind, Utf8DecodeError
from ..core.transcoder import Transcoder

if TYPE_CHECKING:
    from ..aio.streams import Utf8ReceiveStream

__all__ = ["TranscodeSummary", "atranscode_file", "open_text", "transcode_file"]

Progress = Callable[[int, int], object]
OnMalformed = Callable[[Malformed], object]

#: Largest piece a worker transcodes at once (bounds the parent's memory).
PIECE_BYTES = 8 << 20
#: Sources whose bytes can be cut at UTF-8 character boundaries.
_SPLITTABLE = {"utf-8", "wtf-8", "cesu-8", "mutf-8"}


@dataclass(frozen=True)
class TranscodeSummary:
    """What a transcoding run did."""

    bytes_in: int
    bytes_out: int
    characters: int
    malformed: Mapping[MalformedKind, int] = field(default_factory=lambda: MappingProxyType({}))
    pieces: int = 1

    @property
    def malformed_total(self) -> int:
        return sum(n for k, n in self.malformed.items() if k is not MalformedKind.LOST_BYTES)


def _canonical(encoding: str) -> str:
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise LookupError(f"unknown encoding: {encoding}") from None
    return name.replace("_", "-")


class _Counter:
    """Counts events by kind and passes them on."""

    def __init__(self, forward: OnMalformed | None) -> None:
        self.counts: dict[MalformedKind, int] = {}
        self.forward = forward

    def __call__(self, event: Malformed) -> None:
        self.counts[event.kind] = self.counts.get(event.kind, 0) + 1
        if self.forward is not None:
            self.forward(event)


def _chunks(f: BinaryIO, size: int, limit: int | None = None) -> Iterator[bytes]:
    left = limit
    while left is None or left > 0:
        chunk = f.read(size if left is None else min(size, left))
        if not chunk:
            return
        if left is not None:
            left -= len(chunk)
        yield chunk


class _Writer:
    """Writes in a background thread, so the next chunk is transcoded meanwhile.

    The file system call releases the GIL; on two cores writing the output (often the
    larger side: UTF-16 doubles ASCII) then overlaps decoding and encoding.  At most
    two chunks wait, so memory stays bounded.
    """

    def __init__(self, dst: BinaryIO) -> None:
        self._dst = dst
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="utf8stream-writer")
        self._pending: deque[Future[int]] = deque()

    def write(self, data: bytes) -> None:
        if len(self._pending) >= 2:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(self._dst.write, data))

    def close(self) -> None:
        """Wait for every write (re-raising a failed one)."""
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._pool.shutdown(wait=True)


def _transcode_stream(
    src: BinaryIO,
    dst: BinaryIO,
    transcoder: Transcoder,
    chunk_size: int,
    limit: int | None,
    progress: Callable[[int], object] | None,
) -> tuple[int, int]:
    """Copy ``src`` to ``dst`` through ``transcoder``; return (bytes in, bytes out)."""
    bytes_in = bytes_out = 0
    writer = _Writer(dst)
    try:
        for chunk in _chunks(src, chunk_size, limit):
            try:
                out = transcoder.transcode(chunk)
            except Utf8DecodeError:
                writer.write(transcoder.partial_output)  # all before the error, as iconv
                raise
            writer.write(out)
            bytes_in += len(chunk)
            bytes_out += len(out)
            if progress is not None:
                progress(bytes_in)
        try:
            out = transcoder.transcode(b"", final=True)
        except Utf8DecodeError:
            writer.write(transcoder.partial_output)
            raise
        writer.write(out)
    finally:
        writer.close()
    return bytes_in, bytes_out + len(out)


def _make_transcoder(
    source: str, target: str, errors: str, bom: str, counter: _Counter, start: int = 0
) -> Transcoder:
    transcoder = Transcoder(source, target, errors=errors, bom=bom)
    decoder = transcoder.decoder
    if isinstance(decoder, Utf8Decoder):
        decoder.on_malformed = counter if not start else _Shift(counter, start)
    return transcoder


class _Shift:
    """Make a piece's event offsets absolute."""

    def __init__(self, forward: Callable[[Malformed], object], by: int) -> None:
        self.forward, self.by = forward, by

    def __call__(self, event: Malformed) -> None:
        self.forward(Malformed(event.offset + self.by, event.data, event.kind))


def transcode_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    source: str = "utf-8",
    target: str = "utf-8",
    errors: str = "replace",
    bom: str = "keep",
    chunk_size: int = 1048576,
    workers: int = 1,
    progress: Progress | None = None,
    on_malformed: OnMalformed | None = None,
) -> TranscodeSummary:
    """Transcode the file ``src`` into ``dst`` (``"-"``: stdin/stdout), lazily.

    ``progress(bytes_done, bytes_total)`` is called as the work advances (``bytes_total``
    is 0 when the size is unknown).  ``on_malformed`` receives every malformed unit of a
    UTF-8-family source, with absolute offsets, in stream order.  With ``workers > 1`` a
    UTF-8-family regular file is transcoded in parallel processes; the output and the
    events are exactly those of the sequential run.
    """
    source_name, target_name = _canonical(source), _canonical(target)
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    if workers < 1:
        raise ValueError("workers must be at least 1")
    Transcoder(source_name, target_name, errors=errors, bom=bom)  # validate the options
    src_path = os.fspath(src)
    dst_path = os.fspath(dst)
    total = 0 if src_path == "-" else os.path.getsize(src_path)
    if (
        workers > 1
        and src_path != "-"
        and source_name in _SPLITTABLE
        and bom != "detect"  # a BOM may say the file is not UTF-8 at all
        and _seekable_destination(dst_path)
        and total > chunk_size
    ):
        return _transcode_parallel(
            src_path,
            dst_path,
            source_name,
            target_name,
            errors,
            bom,
            chunk_size,
            workers,
            progress,
            on_malformed,
            total,
        )
    counter = _Counter(on_malformed)
    transcoder = _make_transcoder(source_name, target_name, errors, bom, counter)
    report = (lambda done: progress(done, total)) if progress is not None else None
    with open_binary(src_path, "rb") as fin, open_binary(dst_path, "wb") as fout:
        bytes_in, bytes_out = _transcode_stream(fin, fout, transcoder, chunk_size, None, report)
    return TranscodeSummary(
        bytes_in, bytes_out, transcoder.characters, MappingProxyType(dict(counter.counts))
    )


def _seekable_destination(path: str) -> bool:
    """Workers write pieces at offsets: the destination must be a regular file."""
    if path == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


@contextmanager
def open_binary(path: str, mode: str) -> Iterator[BinaryIO]:
    """``open`` for paths; the standard streams (left open) for ``"-"``."""
    if path == "-":
        stream = sys.stdin.buffer if "r" in mode else sys.stdout.buffer
        yield stream
        if "w" in mode:
            stream.flush()
        return
    with open(path, mode) as f:
        yield cast(BinaryIO, f)


# -- parallel ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _PieceResult:
    size: int  # bytes written to the piece's part file
    characters: int
    counts: dict[MalformedKind, int]
    events: list[Malformed] | None  # all events, when the caller wants them
    last: Malformed | None  # the piece's last event (may need renaming)
    error: Utf8DecodeError | None


#: (source path, start, end, source codec, target codec, errors, bom, chunk size,
#:  whether events are wanted, piece index, destination path)
_Job = tuple[str, int, int, str, str, str, str, int, bool, int, str]


class _Turns:
    """Whose turn it is to write, shared by the worker processes.

    Pieces are transcoded in parallel but written in order: the worker of piece ``k``
    waits until every piece before it is written, then writes its output at the current
    end of the destination with ``os.pwrite``.  The output is written once, by the
    workers; the parent never touches it.
    """

    def __init__(self, ctx: Any) -> None:
        self.cond = ctx.Condition()
        self.turn = ctx.Value("q", 0, lock=False)  # the next piece allowed to write
        self.offset = ctx.Value("q", 0, lock=False)  # where it writes
        self.stopped = ctx.Value("b", 0, lock=False)  # a piece failed: nobody writes


_turns: _Turns | None = None


def _init_worker(turns: _Turns) -> None:
    global _turns
    _turns = turns


def _write_in_turn(index: int, dst: str, data: bytes, failed: bool) -> None:
    turns = _turns
    assert turns is not None
    with turns.cond:
        while turns.turn.value != index and not turns.stopped.value:
            turns.cond.wait(1.0)
        if not turns.stopped.value:
            fd = os.open(dst, os.O_WRONLY)
            try:
                view, offset = memoryview(data), turns.offset.value
                while view:
                    written = os.pwrite(fd, view, offset)
                    view, offset = view[written:], offset + written
            finally:
                os.close(fd)
            turns.offset.value = offset
            if failed:
                turns.stopped.value = 1  # the output ends where the error is
        turns.turn.value = index + 1
        turns.cond.notify_all()


def _transcode_piece(job: _Job) -> _PieceResult:
    """Worker: transcode ``src[start:end]`` and write it in its turn (child process)."""
    path, start, end, source, target, errors, bom, chunk_size, want_events, index, dst = job
    events: list[Malformed] = []
    last: list[Malformed] = []

    def keep(event: Malformed) -> None:
        if want_events:
            events.append(event)
        last[:] = [event]

    counter = _Counter(keep)
    transcoder = _make_transcoder(source, target, errors, bom, counter, start)
    error = None
    out = io.BytesIO()
    try:
        with open(path, "rb") as f:
            f.seek(start)
            try:
                _transcode_stream(f, out, transcoder, chunk_size, end - start, None)
            except Utf8DecodeError as exc:
                error = Utf8DecodeError(
                    Malformed(exc.offset + start, exc.malformed.data, exc.kind), exc.partial
                )
    finally:
        _write_in_turn(index, dst, out.getvalue(), error is not None)
    return _PieceResult(
        out.tell(),
        transcoder.characters,
        counter.counts,
        events if want_events else None,
        last[0] if last else None,
        error,
    )


def _piece_points(path: str, total: int, workers: int, source: str) -> list[int]:
    pieces = max(workers, -(-total // PIECE_BYTES))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        points = split_points(mm, pieces, variant=source)
    return sorted(set(points))


def _transcode_parallel(
    src: str,
    dst: str,
    source: str,
    target: str,
    errors: str,
    bom: str,
    chunk_size: int,
    workers: int,
    progress: Progress | None,
    on_malformed: OnMalformed | None,
    total: int,
) -> TranscodeSummary:
    points = _piece_points(src, total, workers, source)
    want_events = on_malformed is not None
    first_bom = {0: bom}  # only the start of the stream is special
    jobs: list[_Job] = [
        (
            src,
            a,
            b,
            source,
            target,
            errors,
            first_bom.get(i, "keep"),
            chunk_size,
            want_events,
            i,
            dst,
        )
        for i, (a, b) in enumerate(itertools.pairwise(points))
    ]
    return _run_pieces(jobs, dst, total, workers, progress, on_malformed)


def _run_pieces(
    jobs: list[_Job],
    dst: str,
    total: int,
    workers: int,
    progress: Progress | None,
    on_malformed: OnMalformed | None,
) -> TranscodeSummary:
    counts: dict[MalformedKind, int] = {}
    characters = bytes_out = 0
    next_byte = _NextByte(jobs[0][0])
    open(dst, "wb").close()  # the workers write into it, each piece in its turn
    ctx = multiprocessing.get_context()
    turns = _Turns(ctx)
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(turns,)
    ) as pool:
        window: list[tuple[int, Future[_PieceResult]]] = []
        queue = iter(enumerate(jobs))
        for _ in range(workers * 2):
            _submit(pool, queue, window)
        while window:
            index, future = window.pop(0)
            result = future.result()
            _submit(pool, queue, window)
            end = jobs[index][2]
            follower = next_byte(end) if end < total else None
            if result.error is not None:
                raise _rejoined_error(result.error, end, follower)
            bytes_out += result.size
            characters += result.characters
            for kind, n in result.counts.items():
                counts[kind] = counts.get(kind, 0) + n
            renamed = _renamed_last(result.last, end, follower)
            if renamed is not None and result.last is not None:
                counts[result.last.kind] -= 1
                counts[renamed.kind] = counts.get(renamed.kind, 0) + 1
            if on_malformed is not None and result.events is not None:
                for event in result.events:
                    if renamed is not None and event is result.events[-1]:
                        event = renamed
                    on_malformed(event)
            if progress is not None:
                progress(end, total)
    counts = {k: n for k, n in counts.items() if n}
    return TranscodeSummary(
        total, bytes_out, characters, MappingProxyType(counts), pieces=len(jobs)
    )


def _submit(
    pool: ProcessPoolExecutor,
    queue: Iterator[tuple[int, tuple[Any, ...]]],
    window: list[tuple[int, Future[_PieceResult]]],
) -> None:
    item = next(queue, None)
    if item is not None:
        index, job = item
        window.append((index, pool.submit(_transcode_piece, job)))


class _NextByte:
    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, offset: int) -> int:
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(1)[0]


def _renamed_last(last: Malformed | None, end: int, follower: int | None) -> Malformed | None:
    """The piece's last event as the sequential decoder names it, if that differs."""
    if last is None or follower is None or last.kind is not MalformedKind.TRUNCATED_AT_END:
        return None
    if last.offset + len(last.data) != end:
        return None
    renamed = rejoined_event(last, follower)
    return renamed if renamed.kind is not last.kind else None


def _rejoined_error(error: Utf8DecodeError, end: int, follower: int | None) -> Utf8DecodeError:
    renamed = _renamed_last(error.malformed, end, follower)
    if renamed is None:
        return error
    return Utf8DecodeError(renamed, error.partial)


# -- async ------------------------------------------------------------------------------


async def atranscode_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    source: str = "utf-8",
    target: str = "utf-8",
    errors: str = "replace",
    bom: str = "keep",
    chunk_size: int = 1048576,
    workers: int = 1,
    progress: Progress | None = None,
    on_malformed: OnMalformed | None = None,
) -> TranscodeSummary:
    """``transcode_file`` for async code: anyio file I/O, the event loop stays free.

    With ``workers > 1`` the parallel run happens in a worker thread.
    """
    import anyio.to_thread  # the async layer loads only when used

    source_name, target_name = _canonical(source), _canonical(target)
    if workers > 1:
        return await anyio.to_thread.run_sync(
            lambda: transcode_file(
                src,
                dst,
                source=source_name,
                target=target_name,
                errors=errors,
                bom=bom,
                chunk_size=chunk_size,
                workers=workers,
                progress=progress,
                on_malformed=on_malformed,
            )
        )
    counter = _Counter(on_malformed)
    transcoder = _make_transcoder(source_name, target_name, errors, bom, counter)
    total = (await anyio.Path(src).stat()).st_size
    bytes_in = bytes_out = 0
    async with await anyio.open_file(src, "rb") as fin, await anyio.open_file(dst, "wb") as fout:
        while chunk := await fin.read(chunk_size):
            out = transcoder.transcode(chunk)
            await fout.write(out)
            bytes_in += len(chunk)
            bytes_out += len(out)
            if progress is not None:
                progress(bytes_in, total)
        out = transcoder.transcode(b"", final=True)
        await fout.write(out)
    return TranscodeSummary(
        bytes_in,
        bytes_out + len(out),
        transcoder.characters,
        MappingProxyType(dict(counter.counts)),
    )


async def open_text(
    path: str | os.PathLike[str],
    *,
    start_offset: int = 0,
    errors: str = "replace",
    gap: str = "replace",
    on_malformed: OnMalformed | None = None,
) -> Utf8ReceiveStream:
    """An async text stream over a UTF-8 file (a ``Utf8ReceiveStream`` on anyio's file).

    A non-zero ``start_offset`` starts with a gap, as after lost bytes (``mark_gap()``):
    opened in the middle of a character, the stream yields one U+FFFD, then clean text;
    opened at a character start it still yields one U+FFFD, which says the text did not
    start at the file's beginning.
    """
    import anyio

    from ..aio.sources import as_byte_stream
    from ..aio.streams import Utf8ReceiveStream

    f = await anyio.open_file(path, "rb")
    try:
        if start_offset:
            await f.seek(start_offset)
        stream = Utf8ReceiveStream(
            as_byte_stream(f),
            errors=errors,
            start_offset=start_offset,
            gap=gap,
            on_malformed=on_malformed,
        )
    except BaseException:
        await f.aclose()
        raise
    if start_offset:
        stream.mark_gap()
    return stream
