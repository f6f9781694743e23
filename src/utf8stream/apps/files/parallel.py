"""The parent side of a parallel run: the split, the pool, the results in order."""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Iterator
from types import MappingProxyType
from typing import TYPE_CHECKING

from ...core.boundaries import rejoined_event, variant_char_start
from ...core.events import Malformed, MalformedKind, Utf8DecodeError
from .directrun import WITHOUT_BOM
from .pieces import Job, Options, PieceResult, Turns, init_worker, transcode_piece
from .results import (
    OnMalformed,
    Progress,
    TranscodeSummary,
    UnmappableCharacterError,
    WorkerError,
)

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

# multiprocessing and concurrent.futures are imported where they are used: a one-worker
# run (the CLI's default) does not pay for them at start-up.

__all__ = [
    "PIECE_BYTES",
    "piece_points",
    "plan",
    "stop",
    "submit",
    "transcode_parallel",
    "usable_cores",
    "workers_for",
]

#: Largest piece a worker transcodes at once (bounds the parent's memory).
PIECE_BYTES = 8 << 20
#: The model ``plan`` decides by, for a codec run (figures in docs/benchmarks.md): the
#: cores one worker keeps busy (its thread holds the interpreter's lock while it decodes
#: and encodes, a writer thread writes beside it); the processor time a parallel run
#: spends over one worker's for the same work (processes, pieces read and written
#: apart); the seconds its processes take to start; the least processor time a codec
#: run spends on a byte (a C decoder and encoder: costlier codecs gain more).
ONE_WORKER_CORES = 1.3
PARALLEL_COST = 1.3
START_SECONDS = 0.05
SECONDS_PER_BYTE = 3e-9


def plan(workers: int, cores: int, size: int, *, direct: bool) -> int:
    """How many worker processes to use, at most ``workers``, for ``size`` bytes on
    ``cores`` usable cores; 1: no split, one worker (the sequential run).

    The rule, so that more workers are never slower than one:

    * A direct run (``directrun``: UTF-8 into UTF-16/32 or repaired into UTF-8) is never
      split.  One worker already reads ahead, transcodes and writes in three threads at
      once, and the writing (of an output as large as the input or larger) keeps the
      busiest of them busy; a parallel run writes its pieces into the one output in
      turn, one after another, so it cannot finish before that same writing does, and
      it adds the processes' start and more processor time.
    * A codec run is split into ``k = min(workers, cores)`` workers when that is faster
      by the model above: one worker takes ``work / ONE_WORKER_CORES``, ``k`` workers
      ``START_SECONDS + work * PARALLEL_COST / k``, ``work`` being ``size`` bytes at
      ``SECONDS_PER_BYTE``.  On two cores that takes some 140 MB; on four, 38 MB.
    """
    count = min(workers, cores)
    if direct or count < 2:
        return 1
    work = size * SECONDS_PER_BYTE
    faster = START_SECONDS + work * PARALLEL_COST / count < work / ONE_WORKER_CORES
    return count if faster else 1


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity masks (macOS, Windows)
        return os.cpu_count() or 1


def workers_for(workers: int, size: int, *, direct: bool) -> int:
    """``plan`` on this machine."""
    return plan(workers, usable_cores(), size, direct=direct)


#: Bytes read on each side of a cut to find the character boundary before it (a
#: boundary is at most 7 bytes back: a CESU-8 surrogate pair, an MUTF-8 C0 80).
_CUT_WINDOW = 16


def piece_points(path: str, total: int, workers: int, source: str) -> list[int]:
    """``boundaries.split_points`` of the file, from a few bytes read around each cut
    (not a memory map, which kills the process with SIGBUS when the file, a log, is
    truncated under us; here a file cut short just gives pieces that end sooner)."""
    pieces = max(workers, -(-total // PIECE_BYTES))
    points = [0]
    with open(path, "rb", buffering=0) as f:
        for k in range(1, pieces):
            cut = total * k // pieces
            lo = max(0, cut - _CUT_WINDOW)
            window = os.pread(f.fileno(), cut - lo + _CUT_WINDOW, lo)
            if len(window) <= cut - lo:  # the file shrank: the cut is past its end,
                points.append(max(points[-1], cut))  # and the pieces after it are empty
                continue
            start = lo + variant_char_start(window, cut - lo, source)
            points.append(max(points[-1], start))
    points.append(total)
    return sorted(set(points))


def transcode_parallel(
    src: str,
    dst: str,
    options: Options,
    workers: int,
    progress: Progress | None,
    on_malformed: OnMalformed | None,
    total: int,
) -> TranscodeSummary:
    points = piece_points(src, total, workers, options[0])
    want_events = on_malformed is not None
    # Only the start of the stream is special: the later pieces keep a U+FEFF they hold,
    # and a target codec that writes a BOM first writes it in the first piece only.
    source, target = options[:2]
    rest = (source, WITHOUT_BOM.get(target, target), options[2], "keep", *options[4:])
    jobs: list[Job] = [
        (
            src,
            a,
            b,
            options if i == 0 else rest,
            want_events,
            i,
            dst,
        )
        for i, (a, b) in enumerate(itertools.pairwise(points))
    ]
    return _run_pieces(jobs, total, workers, progress, on_malformed)


def _run_pieces(
    jobs: list[Job],
    total: int,
    workers: int,
    progress: Progress | None,
    on_malformed: OnMalformed | None,
) -> TranscodeSummary:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context()
    turns = Turns(ctx)
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        initializer=init_worker,
        initargs=(turns, os.getpid()),
    )
    try:
        summary = _collect(pool, jobs, total, workers, progress, on_malformed)
    except BaseException:
        stop(pool, turns)
        raise
    pool.shutdown(wait=True)
    return summary


def stop(pool: ProcessPoolExecutor, turns: Turns) -> None:
    """End a failed or interrupted run now: no worker goes on, none is left behind."""
    turns.stopped.value = 1
    # The executor has no public way to end its workers before Python 3.14
    # (terminate_workers); waiting for them could take a whole piece each, or forever
    # if one died holding the turn lock.
    processes = dict(getattr(pool, "_processes", None) or {})
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes.values():
        process.kill()
    for process in processes.values():
        process.join()
    # The executor's own thread sees its workers gone and closes its wake-up pipe; wait
    # for that, or the executor's exit hook may write to the pipe while it is closed
    # ("Bad file descriptor" and a traceback at exit, seen when stopped at start-up).
    if manager is not None and manager.ident is not None:
        manager.join(timeout=10)
    # (Interrupted between the executor making its thread and starting it, there is no
    # thread to wait for, and join() would raise "cannot join thread before it is
    # started": a traceback on Ctrl-C, seen once in CI.)


def _collect(
    pool: ProcessPoolExecutor,
    jobs: list[Job],
    total: int,
    workers: int,
    progress: Progress | None,
    on_malformed: OnMalformed | None,
) -> TranscodeSummary:
    from concurrent.futures.process import BrokenProcessPool

    counts: dict[MalformedKind, int] = {}
    characters = bytes_out = unmappable = 0
    next_byte = _NextByte(jobs[0][0])
    window: deque[tuple[int, Future[PieceResult | None]]] = deque()
    queue = iter(enumerate(jobs))
    for _ in range(workers * 2):
        submit(pool, queue, window)
    while window:
        index, future = window.popleft()
        try:
            result = future.result()
        except BrokenProcessPool:
            raise WorkerError(
                "a worker process died (killed, or out of memory); the run was stopped"
            ) from None
        except (OSError, Utf8DecodeError, UnmappableCharacterError):
            raise
        except Exception as exc:
            raise WorkerError(f"a worker process failed: {exc!r}") from exc
        if result is None:  # stopped, though no piece before it failed
            raise WorkerError("the run was stopped")
        submit(pool, queue, window)
        end = jobs[index][2]
        follower = next_byte(end) if end < total else None
        if isinstance(result.error, UnmappableCharacterError):
            error = result.error
            error.index += characters
            raise error
        if result.error is not None:
            raise _rejoined_error(result.error, end, follower)
        bytes_out += result.size
        characters += result.characters
        unmappable += result.unmappable
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
        total,
        bytes_out,
        characters,
        MappingProxyType(counts),
        pieces=len(jobs),
        unmappable=unmappable,
    )


def submit(
    pool: ProcessPoolExecutor,
    queue: Iterator[tuple[int, Job]],
    window: deque[tuple[int, Future[PieceResult | None]]],
) -> None:
    from concurrent.futures.process import BrokenProcessPool

    item = next(queue, None)
    if item is not None:
        index, job = item
        try:
            future = pool.submit(transcode_piece, job)
        except BrokenProcessPool:
            # A worker died after the result just collected was sent: the pool
            # refuses new pieces (this raised, a traceback, before).
            raise WorkerError(
                "a worker process died (killed, or out of memory); the run was stopped"
            ) from None
        window.append((index, future))


class _NextByte:
    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, offset: int) -> int | None:
        """The byte at ``offset``; None past the end (a file cut short under us)."""
        with open(self.path, "rb") as f:
            f.seek(offset)
            byte = f.read(1)
            return byte[0] if byte else None


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
