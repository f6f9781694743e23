"""The worker side of a parallel run: a piece transcoded, then written in its turn."""

from __future__ import annotations

import io
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any

from ...core.events import Malformed, MalformedKind, Utf8DecodeError
from .results import EventCounter, UnmappableCharacterError
from .runs import new_run
from .streaming import transcode_stream

__all__ = ["Job", "Options", "PieceResult", "Turns", "init_worker", "transcode_piece"]

#: (source codec, target codec, errors, bom, unmappable, chunk size)
Options = tuple[str, str, str, str, str, int]


@dataclass(frozen=True)
class PieceResult:
    size: int  # bytes written to the piece's part file
    characters: int
    counts: dict[MalformedKind, int]
    events: list[Malformed] | None  # all events, when the caller wants them
    last: Malformed | None  # the piece's last event (may need renaming)
    error: Utf8DecodeError | UnmappableCharacterError | None
    unmappable: int


#: (source path, start, end, options, whether events are wanted, piece index, where to
#:  write: the temporary output file)
Job = tuple[str, int, int, Options, bool, int, str]


class Turns:
    """Whose turn it is to write, shared by the worker processes.

    Pieces are transcoded in parallel but written in order: the worker of piece ``k``
    waits until every piece before it is written, then writes its output at the current
    end of the output file with ``os.pwrite``.  The output is written once, by the
    workers; the parent never touches it.  ``stopped`` ends the run for everybody: set
    by a piece that failed (the others must not wait for its turn) or by the parent.
    """

    def __init__(self, ctx: Any) -> None:
        self.cond = ctx.Condition()
        self.turn = ctx.Value("q", 0, lock=False)  # the next piece allowed to write
        self.offset = ctx.Value("q", 0, lock=False)  # where it writes
        self.stopped = ctx.Value("b", 0, lock=False)  # a piece failed: nobody writes


class Stopped(Exception):
    """The run was stopped elsewhere: this piece gives up."""


_turns: Turns | None = None
_PR_SET_PDEATHSIG = 1


def init_worker(turns: Turns, parent: int) -> None:
    global _turns
    _turns = turns
    # The parent handles Ctrl-C and stops the workers itself; a SIGTERM sent to a worker
    # ends it (the parent then stops the run), without the parent's handler.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes  # only here: the library itself needs no ctypes

        # Die with the parent, even if it is killed with SIGKILL: no orphan spins on.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _write_in_turn(index: int, dst: str, data: bytes | memoryview, failed: bool) -> None:
    turns = _turns
    assert turns is not None
    with turns.cond:
        try:
            while turns.turn.value != index and not turns.stopped.value:
                turns.cond.wait(1.0)
            if turns.stopped.value:
                raise Stopped
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
        except BaseException:
            turns.stopped.value = 1  # wake the others: nobody waits for a failed turn
            raise
        finally:
            turns.turn.value = index + 1
            turns.cond.notify_all()


def _check_stopped(done: int) -> None:
    if _turns is not None and _turns.stopped.value:
        raise Stopped


def transcode_piece(job: Job) -> PieceResult | None:
    """Worker: transcode ``src[start:end]`` and write it in its turn (child process).

    None when the run was stopped meanwhile."""
    path, start, end, options, want_events, index, dst = job
    source, target, errors, bom, unmappable, chunk_size = options
    events: list[Malformed] = []
    last: list[Malformed] = []

    def keep(event: Malformed) -> None:
        if want_events:
            events.append(event)
        last[:] = [event]

    if want_events:
        counter = EventCounter(keep)
        run = new_run(source, target, errors, bom, unmappable, counter, start)
    else:
        # Counted by the decoder; only the last call's events are seen, for ``last``
        # (a unit cut by the piece's end is in that call).
        counter = EventCounter(None)
        run = new_run(source, target, errors, bom, unmappable, counter, start, on_final=keep)
    error: Utf8DecodeError | UnmappableCharacterError | None = None
    out = io.BytesIO()
    try:
        written = False
        try:
            with open(path, "rb") as f:
                f.seek(start)
                try:
                    transcode_stream(f, out, run, chunk_size, end - start, _check_stopped)
                except Utf8DecodeError as exc:
                    error = Utf8DecodeError(
                        Malformed(exc.offset + start, exc.malformed.data, exc.kind), exc.partial
                    )
                except UnmappableCharacterError as exc:
                    error = exc  # its index is within the piece: the parent adds the rest
            size = out.tell()
            with out.getbuffer() as piece:  # written from where it is, not copied first
                _write_in_turn(index, dst, piece, error is not None)
            written = True
        finally:
            if not written and _turns is not None and not _turns.stopped.value:
                _write_in_turn(index, dst, b"", True)  # failed: stop the run, wake the rest
    except Stopped:
        return None
    return PieceResult(
        size,
        run.text_characters,
        run.counts(),
        events if want_events else None,
        last[0] if last else None,
        error,
        run.unmappable,
    )
