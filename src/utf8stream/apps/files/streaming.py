"""One run over a stream, chunk by chunk: a writer thread, a reader thread ahead."""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, cast

from .codecrun import CodecRun
from .directrun import DirectRun
from .results import UnmappableCharacterError

__all__ = ["ReadAhead", "transcode_stream"]


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
    run: CodecRun | DirectRun,
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


class ReadAhead:
    """Reads a regular file in a thread of its own, a chunk ahead: two input buffers take
    turns, one read while the other is transcoded.  On two cores the copy of the read
    (as long as the transcoding, or longer) does not wait for the transcoding, nor the
    transcoding for it; the writer thread overlaps both.  Only for regular files, whose
    reads end at once: after an error or an interruption, ``close`` stops the thread
    after its current read (a pipe's could wait for ever).  A failed read is raised by
    ``get``."""

    def __init__(self, readinto: Callable[[memoryview], int | None], size: int) -> None:
        import queue
        import threading

        self._free: queue.SimpleQueue[bytearray | None] = queue.SimpleQueue()
        self._full: queue.SimpleQueue[tuple[bytearray, int] | BaseException] = queue.SimpleQueue()
        for _ in range(2):
            self._free.put(bytearray(size))
        self._thread = threading.Thread(
            target=self._run, args=(readinto,), name="utf8stream-reader", daemon=True
        )
        self._thread.start()

    def _run(self, readinto: Callable[[memoryview], int | None]) -> None:
        try:
            while (buffer := self._free.get()) is not None:
                n = readinto(memoryview(buffer))
                if n is None:  # a non-blocking descriptor with nothing to read
                    raise BlockingIOError("the input would block")
                self._full.put((buffer, n))
                if not n:
                    return
        except BaseException as exc:  # raised in the caller's thread
            self._full.put(exc)

    def get(self) -> tuple[bytearray, int]:
        """The next chunk: its buffer and length (0: the end of the file)."""
        item = self._full.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def give_back(self, buffer: bytearray) -> None:
        """``buffer`` may be filled again."""
        self._free.put(buffer)

    def close(self) -> None:
        self._free.put(None)
        self._thread.join()


def _regular_file(f: BinaryIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # no descriptor: a file-like object
        return False


def _transcode_direct(
    src: BinaryIO,
    dst: BinaryIO,
    run: DirectRun,
    chunk_size: int,
    limit: int | None,
    progress: Callable[[int], object] | None,
) -> tuple[int, int]:
    """``transcode_stream`` for a ``DirectRun``, in reused memory: each chunk is read
    into an input buffer (``readinto``: a file cut short under us just ends sooner) and
    transcoded into one of two output buffers, which alternate: the writer thread writes
    one while the next chunk is read and transcoded (without the GIL) into the other.
    A regular file read to its end (no ``limit``) is read ahead by a ``ReadAhead``.
    No bytes object per chunk, no fresh pages to fault in."""
    bytes_in = bytes_out = 0
    readinto: Callable[[memoryview], int | None] = cast(Any, src).readinto
    ahead = ReadAhead(readinto, chunk_size) if limit is None and _regular_file(src) else None
    inbuf = bytearray(chunk_size if ahead is None else 0)
    inview = memoryview(inbuf)
    outs = [bytearray(), bytearray()]
    written: list[Any] = [None, None]  # the pending write of each output buffer
    writer = _Writer(dst)
    k = 0
    try:
        final = False
        while not final:
            if ahead is not None:
                buffer, n = ahead.get()
                data = memoryview(buffer)[:n]
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
                size = run.transcode_into(data, out, final)
            except UnicodeDecodeError:
                writer.write(run.partial_output)  # all before the error, as iconv
                raise
            if ahead is not None:
                data.release()
                ahead.give_back(buffer)
            if size:
                written[k] = writer.write(memoryview(out)[:size])
            bytes_in += n
            bytes_out += size
            k ^= 1
            if progress is not None and n:
                progress(bytes_in)
    finally:
        if ahead is not None:
            ahead.close()
        writer.close()
        inview.release()
    return bytes_in, bytes_out


def _step(run: CodecRun | DirectRun, writer: _Writer, chunk: bytes, final: bool) -> bytes:
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
