"""One run over a stream, chunk by chunk: a writer thread, a reader thread ahead."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from .._readahead import chunks
from .codecrun import CodecRun
from .directrun import DirectRun
from .results import UnmappableCharacterError

if TYPE_CHECKING:
    from .repairrun import RepairRun

__all__ = ["transcode_stream"]


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
    """Writes in a thread of its own, so the next chunk is read and transcoded meanwhile.

    The file system call releases the GIL (and so does the C transcoder): on two cores
    writing the output (often the larger side: UTF-16 doubles ASCII) overlaps reading
    and transcoding.  ``write`` returns an event set once the data is written (or given
    up after a failed write): a reused buffer may be filled again only then.  At most
    two writes wait, so memory stays bounded.  A failed write is raised by the next
    ``write`` or by ``close``; after one, nothing more is written.
    """

    def __init__(self, dst: BinaryIO) -> None:
        import queue
        import threading

        self._dst = dst
        self._jobs: queue.SimpleQueue[tuple[Any, threading.Event] | None] = queue.SimpleQueue()
        self._pending: deque[threading.Event] = deque()
        self._error: BaseException | None = None
        self._event = threading.Event
        self._thread = threading.Thread(target=self._run, name="utf8stream-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            data, done = job
            try:
                if self._error is None:
                    self._dst.write(data)
            except BaseException as exc:  # raised in the caller's thread
                self._error = exc
            finally:
                del data
                done.set()

    def write(self, data: bytes | memoryview) -> Any:
        """Queue ``data``; the event set when it is written."""
        while len(self._pending) >= 2:
            self._pending.popleft().wait()
        self._check()
        done = self._event()
        self._pending.append(done)
        self._jobs.put((data, done))
        return done

    def _check(self) -> None:
        if self._error is not None:
            raise self._error  # and later writes are given up too

    def close(self) -> None:
        """Wait for every write (re-raising a failed one)."""
        self._jobs.put(None)
        self._thread.join()
        self._pending.clear()
        self._check()


def transcode_stream(
    src: BinaryIO,
    dst: BinaryIO,
    run: CodecRun | DirectRun | RepairRun,
    chunk_size: int,
    limit: int | None,
    progress: Callable[[int], object] | None,
) -> tuple[int, int]:
    """Copy ``src`` to ``dst`` through ``run``; return (bytes in, bytes out)."""
    if isinstance(run, DirectRun) and hasattr(src, "readinto"):
        return _transcode_direct(src, dst, run, chunk_size, limit, progress)
    bytes_in = bytes_out = 0
    writer = _Writer(dst)
    try:
        for chunk in _chunks(src, chunk_size, limit):
            out = _step(run, writer, chunk, False)
            bytes_in += len(chunk)
            bytes_out += len(out)
            if progress is not None:
                progress(bytes_in)
        out = _step(run, writer, b"", True)
    finally:
        writer.close()
    return bytes_in, bytes_out + len(out)


def _read_ahead(src: BinaryIO, size: int) -> tuple[Generator[bytes, None, None], int] | None:
    """``src``'s bytes from its position to its end through the read-ahead, and that
    position; None where it cannot be read ahead (no descriptor, not a regular file)."""
    try:
        fd, offset = src.fileno(), src.tell()
    except (AttributeError, OSError, ValueError):  # a file-like object: read in turn
        return None
    found = chunks(fd, offset, size)
    return None if found is None else (found, offset)


def _transcode_direct(
    src: BinaryIO,
    dst: BinaryIO,
    run: DirectRun,
    chunk_size: int,
    limit: int | None,
    progress: Callable[[int], object] | None,
) -> tuple[int, int]:
    """``transcode_stream`` for a ``DirectRun``: each chunk is transcoded into one of two
    output buffers, which alternate: the writer thread writes one while the next chunk
    is read and transcoded (without the GIL) into the other.  A regular file read to
    its end (no ``limit``) is read ahead (``_readahead.chunks``: each chunk a bytes
    object the read filled, the next read started as it is handed out), and ``src`` is
    left at its end; else each chunk is read in turn into one reused input buffer
    (``readinto``: a file cut short under us just ends sooner).  No fresh output pages
    to fault in per chunk."""
    bytes_in = bytes_out = 0
    readinto: Callable[[memoryview], int | None] = cast(Any, src).readinto
    ahead = _read_ahead(src, chunk_size) if limit is None else None
    inbuf = bytearray(chunk_size if ahead is None else 0)
    inview = memoryview(inbuf)
    outs = [bytearray(), bytearray()]
    written: list[Any] = [None, None]  # the pending write of each output buffer
    writer = _Writer(dst)
    k = 0
    try:
        final = False
        while not final:
            data: bytes | memoryview
            if ahead is not None:
                data = next(ahead[0], b"")
                n = len(data)
            else:
                want = chunk_size if limit is None else min(chunk_size, limit - bytes_in)
                got = readinto(inview[:want]) if want > 0 else 0
                if got is None:  # a non-blocking source with nothing to read
                    raise BlockingIOError("the input would block")
                n = got
                data = inview[:n]
            final = n == 0
            if written[k] is not None:
                written[k].wait()  # the buffer is free again
                written[k] = None
            need = run.bound(n)
            if len(outs[k]) < need:
                outs[k] = bytearray(need)
            out = outs[k]
            try:
                size = run.transcode_into(memoryview(data), out, final)
            except UnicodeDecodeError:
                writer.write(run.partial_output)  # all before the error, as iconv
                raise
            del data
            if size:
                written[k] = writer.write(memoryview(out)[:size])
            bytes_in += n
            bytes_out += size
            k ^= 1
            if progress is not None and n:
                progress(bytes_in)
        if ahead is not None:
            src.seek(ahead[1] + bytes_in)  # where reading it to its end leaves it
    finally:
        if ahead is not None:
            ahead[0].close()
        writer.close()
        inview.release()
    return bytes_in, bytes_out


def _step(
    run: CodecRun | DirectRun | RepairRun, writer: _Writer, chunk: bytes, final: bool
) -> bytes:
    try:
        out = run.transcode(chunk, final)
    except UnicodeDecodeError:
        writer.write(run.partial_output)  # all before the error, as iconv
        raise
    except UnmappableCharacterError as exc:
        writer.write(exc.partial)
        raise
    writer.write(out)
    return out
