"""``utf8stream tail``: the last lines of logs, and following them across rotation.

Lines are cut at ``\\n`` only, as GNU tail does, and written back with the ending they had
(``\\r\\n`` and a lone ``\\r`` pass through; a last line without a newline gets none).
With ``--checkpoint`` every way the command stops saves the checkpoint (the end of the
input, Ctrl-C, SIGTERM, a closed output pipe), and while following it is also saved right
after every write to stdout; a saved checkpoint covers exactly the lines written to
stdout, so a restart repeats none and loses none.  After a SIGKILL none is lost: lines go
out in one ``write`` of at most 64 KiB (``_tail_output.Output.BATCH_BYTES``) and the line
that filled it, and a kill during that write, or after it returned and before the save
that follows it, leaves the checkpoint before them.  Into a regular file they are not
repeated either: each save records how far the file was written (``OutputMark``), and the
restart skips what lies past that as it writes those lines again, checking byte for byte
that they are the same (``_output_mark``).  Into a pipe the lines of that one write come
again: writing lines and recording that they were written are two steps, and no reader
can tell the run that repeats them which it got.
The saves are not fsynced (``write_checkpoint(durable=False)``, the store's
``synchronous=NORMAL``): a killed process loses nothing the kernel was given; a power
loss can bring back older checkpoints (more repeats).  One FILE's checkpoint saved on
stopping is fsynced.

With ``-f``, a FILE holding wildcards (quoted: a glob pattern) or one ``--checkpoint`` for
several FILEs follows them all with ``follow_many``: one watcher, ``==> FILE <==`` headers
whenever the lines change file, new files announced on stderr, and ``--checkpoint`` a
checkpoint store (SQLite) saved in one transaction as of what reached stdout.  With
``--multiline*`` each file's lines are joined on their own (``follow_many`` gives each file
an empty copy of the joiner), and the store never records a position inside an event not
printed.
"""

from __future__ import annotations

import argparse
import glob
import os
import signal
import stat
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from ...core.lines import LineTooLong
from ...core.multiline import DEFAULT_MAX_EVENT_BYTES, MultilineJoiner
from ..follow._options import FollowOptions, option_of
from . import _tail_options
from ._common import (
    EXIT_BROKEN_PIPE,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    CommandError,
    Parser,
    silence_stdout,
    warn,
)
from ._stdin import FromLine, Piece, StdinOptions, stdin_pieces
from ._tail_options import Count
from ._tail_output import Output
from ._transforms import transforms_of

if TYPE_CHECKING:
    import asyncio

    import anyio.abc

    from ..checkpoints import CheckpointStore
    from ..follow import FollowCheckpoint, Follower, Line, Notice, OutputMark
    from ..many import ManyFollower

#: The FILE that means standard input, and what headers and messages call it.
STDIN = "-"
STDIN_NAME = "standard input"
#: A file that cannot be opened or read: 1, as GNU tail (other commands say 2).
EXIT_UNREADABLE = 1


def _joiner(args: argparse.Namespace) -> MultilineJoiner | None:
    """The multi-line joiner the options ask for (one per FILE: it holds an event; with
    PATTERNs, ``follow_many`` gives each file an empty copy)."""
    limit = DEFAULT_MAX_EVENT_BYTES if args.max_event_bytes is None else args.max_event_bytes
    if args.multiline_start is not None:
        return MultilineJoiner(start=args.multiline_start, max_event_bytes=limit)
    if args.multiline_continuation is not None:
        return MultilineJoiner(continuation=args.multiline_continuation, max_event_bytes=limit)
    if args.multiline is not None:
        return MultilineJoiner.preset(args.multiline, max_event_bytes=limit)
    return None


def _newline(args: argparse.Namespace) -> str:
    """What ends a line: \\n, or NUL with -z (GNU's --zero-terminated)."""
    return "\0" if args.zero_terminated else "\n"


def add_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    """The parser of ``tail`` (its options: ``_tail_options.py``)."""
    _tail_options.add_parser(sub, run_tail)


def run_tail(args: argparse.Namespace) -> int:
    """The command (its options: ``_tail_options.py``)."""
    import anyio  # the async layers load only for the commands that need them

    _check_arguments(args)
    # A pattern, or one checkpoint for several FILEs: one follower of them all, whose
    # checkpoint store (SQLite) records them together.  Otherwise each FILE is followed
    # by a follower of its own, and one FILE's checkpoint is a JSON file.
    several = args.checkpoint and len(args.files) > 1
    if args.follow and (several or any(map(glob.has_magic, args.files))):
        return anyio.run(_tail_many, args, backend_options=_LOOP)
    if several:
        raise CommandError(
            "--checkpoint records one file: give each FILE its own run and checkpoint"
        )
    return anyio.run(_tail_files, args, backend_options=_LOOP)


def _event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop, made with Ctrl-C and SIGTERM held back: a signal whose handler
    raised inside the loop's construction would leave a half-made loop whose ``__del__``
    prints a traceback as the program exits.  Held, the signal is handled at once after,
    in ordinary code."""
    import asyncio

    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        return asyncio.new_event_loop()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


_LOOP = {"loop_factory": _event_loop}


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuse what cannot be done, warn of what is ignored, as GNU tail does."""
    if not args.files:
        args.files = [STDIN]  # as GNU tail: no FILE is standard input
    if STDIN in args.files:
        if args.follow_retry:
            raise CommandError(f"cannot follow {STDIN!r} by name", status=EXIT_UNREADABLE)
        if args.checkpoint:
            raise CommandError("--checkpoint records a FILE: standard input cannot be resumed")
    if args.follow_retry:
        args.follow = args.retry = True
    if args.retry and not args.follow:
        warn("warning: --retry ignored; --retry is useful only when following")
    if args.pid is not None and not args.follow:
        warn("warning: PID ignored; --pid=PID is useful only when following")
    if args.zero_terminated and _joiner(args) is not None:
        raise CommandError("-z and --multiline* cannot be combined: events join lines with \\n")
    if args.max_event_bytes is not None and _joiner(args) is None:
        warn("warning: --max-event-bytes ignored; it is useful only with --multiline*")


# -- where the lines shown start: the modes of -n, -c and --offset ----------------------


def _start(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """``follow()``'s options for where to start, and the line to show first (``-n +N``:
    N; 0 for all)."""
    if args.offset is not None:
        return {"start": args.offset}, 0
    if args.bytes is not None:
        return _start_bytes(args.bytes), 0
    return _start_lines(args.lines)


def _start_bytes(count: Count) -> dict[str, Any]:
    """``-c N``: the last N bytes; ``-c +N``: from byte N on (1-based).  A cut character
    is a malformed unit, as GNU tail prints its bytes (no U+FFFD for the gap)."""
    if count.from_start:
        return {"start": max(count.number - 1, 0), "gap_at_start": False}
    return {"last_bytes": count.number, "gap_at_start": False}


def _start_lines(count: Count) -> tuple[dict[str, Any], int]:
    """``-n N``: the last N lines (the follower finds where they start); ``-n +N``: from
    the beginning, showing from line N on (``FromLine``, over the line engine's lines)."""
    if count.from_start:
        return {"start": "beginning"}, count.number
    return {"last_lines": count.number}, 0


def _follow_options(args: argparse.Namespace, **given: Any) -> FollowOptions:
    """The follower's options the command line gives (``FollowOptions``'s own flags, and
    what -z and --multiline* say), with ``given``: the rest."""
    joiner = _joiner(args)
    flagged = {
        f.name: getattr(args, f.name) for f in fields(FollowOptions) if option_of(f.name).flags
    }
    return FollowOptions(
        **{
            **flagged,
            # Cut at "\n" only, as GNU tail: a "\r" stays in the text it ends (CRLF) or
            # sits in (a lone CR), so writing each line back with "\n" passes it through.
            "newline": _newline(args),
            "multiline": joiner,
            # Following, an unfinished line is shown as soon as it is read, as GNU tail
            # shows it (its rest follows when written; a checkpoint saved meanwhile covers
            # what was shown); an event is shown whole.
            "partial_after": 0.0 if args.follow and joiner is None else None,
            "transforms": transforms_of(args),
            **given,
        }
    )


# -- one FILE, several FILEs, standard input --------------------------------------------


def _stdin_is_a_file() -> bool:
    try:
        return stat.S_ISREG(os.fstat(0).st_mode)
    except OSError:  # closed: reading it says so
        return False


def _stdin_options(args: argparse.Namespace) -> StdinOptions:
    count: Count = args.lines if args.bytes is None else args.bytes
    return StdinOptions(
        encoding=args.encoding,
        errors=args.errors,
        max_line_bytes=args.max_line_bytes,
        on_overlong=args.on_overlong,
        number=count.number,
        from_start=count.from_start,
        in_bytes=args.bytes is not None,
        joiner=_joiner(args),
        newline=_newline(args),
        transforms=tuple(transforms_of(args)),
    )


def _load(args: argparse.Namespace, name: str) -> tuple[str, Follower | None, int]:
    """What ``tail`` reads for one FILE: the name its header shows, its follower (None
    for standard input that is not a regular file, read by ``stdin_pieces``), and the
    line it shows first (``FromLine``)."""
    if name != STDIN:
        return (name, *_load_follower(args, name))
    if _stdin_is_a_file():  # ``< app.log``: a file, followed through the descriptor
        return (STDIN_NAME, *_load_follower(args, "/dev/stdin", shown=STDIN_NAME))
    if args.offset is not None:
        raise CommandError("--offset needs a FILE, not a pipe or terminal", STDIN_NAME)
    return STDIN_NAME, None, 0


def _tell(notice: Notice, name: str, checkpoint: str | None) -> None:
    """A notice on stderr, under the name of what it is about: the FILE, or for a
    checkpoint that does not fit its FILE, the checkpoint (the message names the FILE)."""
    warn(notice.message, checkpoint if notice.kind == "checkpoint" and checkpoint else name)


def _load_follower(
    args: argparse.Namespace, name: str, shown: str | None = None
) -> tuple[Follower, int]:
    """The follower of one FILE, and the line it shows first (``-n +N``: N; 0 for all)."""
    from ..follow import CheckpointError, Follower, read_checkpoint

    checkpoint = None
    start, first = _start(args)
    try:
        if args.checkpoint and os.path.exists(args.checkpoint):
            checkpoint = read_checkpoint(args.checkpoint)
            first = 0  # the checkpoint says where to go on
        options = _follow_options(
            args,
            **start,
            checkpoint=checkpoint,
            until_eof=not args.follow,
            retry=args.retry and args.follow,
            on_notice=lambda notice: _tell(notice, shown or name, args.checkpoint),
        )
        follower = Follower(name, options)
    except CheckpointError as exc:
        raise CommandError(f"not a usable checkpoint: {exc}", args.checkpoint) from None
    return follower, first


def _saved(args: argparse.Namespace) -> FollowCheckpoint | None:
    """One FILE's checkpoint as saved (its follower has read and checked it already)."""
    from ..follow import CheckpointError, read_checkpoint

    if not args.checkpoint:
        return None
    try:
        return read_checkpoint(args.checkpoint)
    except (OSError, CheckpointError):  # none yet (or gone since): nothing to resume
        return None


def _stored_marks(store: CheckpointStore | None) -> list[OutputMark]:
    """The marks of the output file in a checkpoint store's rows (``Output`` takes the
    last save's)."""
    from ..follow import CheckpointError

    if store is None:
        return []
    try:
        saved = store.load_all()
    except CheckpointError:  # said by the follower as it loads the store
        return []
    return [cp.output for cp in saved.values() if cp.output is not None]


def _left_for_later(follower: Follower, line: Line) -> bool:
    """Whether the checkpoint stands before ``line``: the unfinished last line, shown
    by GNU tail, is left for the run that sees it whole (no line printed twice)."""
    return follower.checkpoint().offset <= line.offset


def _has_opened(follower: Follower) -> bool:
    try:
        follower.checkpoint()
    except RuntimeError:  # what it says before its file is open
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    return True


@contextmanager
def _stop_signals() -> Iterator[AsyncIterator[signal.Signals] | None]:
    """Ctrl-C and SIGTERM as events of the event loop, not exceptions thrown into it.

    An exception raised by a signal handler at an arbitrary point of the loop could
    leave anyio's worker thread waiting forever, so that the process never exited.
    Signal handlers belong to the main thread; elsewhere (an embedding program) there
    are none.
    """
    import anyio

    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        yield signals


async def _stop_on_signal(
    signals: AsyncIterator[signal.Signals], stop: Callable[[int], None]
) -> None:
    """``stop`` with the exit status of the first Ctrl-C or SIGTERM."""
    async for signum in signals:
        stop(EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM)


def _line_bytes(line: Line | Piece, line_end: bytes) -> bytes:
    """What a line is written as: surrogate escapes (--errors surrogateescape) become
    their bytes again; a line that had its newline gets one."""
    text = line.text.encode("utf-8", "surrogateescape")
    return text + line_end if line.terminated else text


async def _tail_files(args: argparse.Namespace) -> int:
    """Print lines of the FILEs; with -f/-F keep following them (by name)."""
    return await _Files(args, [_load(args, name) for name in args.files]).run()


class _Files:
    """``tail`` of FILEs, each by a follower of its own, and of standard input.

    Without -f they are printed one after the other.  With -f each is followed by a task
    of its own, but, as GNU tail does, the lines each file holds at the start are shown
    in argument order: a file's lines wait (in ``held``) until the files before it have
    caught up (``turns``).
    """

    def __init__(self, args: argparse.Namespace, files: list[tuple[str, Follower | None, int]]):
        import anyio

        self.args = args
        self.files = files
        self.line_end = _newline(args).encode()
        saved = _saved(args)
        self.output = Output(
            sys.stdout.buffer,
            args.verbose or (len(files) > 1 and not args.quiet),
            files[0][1] if args.checkpoint else None,  # never standard input
            args.checkpoint,
            following=args.follow,
            marks=args.checkpoint,
            resume=[saved.output] if saved is not None and saved.output is not None else [],
            line_end=self.line_end,
        )
        # Saved again once it moves (or on stopping).
        self.output.saved = saved
        self.status = EXIT_OK
        self.unreadable = 0
        # Raised again once the task group is left, as itself: a task group would wrap it.
        self.failure: Exception | None = None
        self.group: anyio.abc.TaskGroup | None = None
        self.turns = [anyio.Event() for _ in files]
        self.held: list[list[Line]] = [[] for _ in files]

    def stop(self, status: int | None = None) -> None:
        if status is not None:
            self.status = status
        assert self.group is not None
        self.group.cancel_scope.cancel()

    def fail(self, exc: Exception) -> None:
        self.failure = exc
        self.stop()

    def broken_pipe(self) -> None:
        self.output.broken = True
        self.stop(EXIT_BROKEN_PIPE)

    def show(self, i: int, line: Line | Piece) -> bool:
        """Write ``line`` of file ``i``; whether the output buffer is full."""
        name, follower, _ = self.files[i]
        self.output.switch_to(name)
        # With --checkpoint, the unfinished last line waits for the run that sees it whole
        # (standard input, never checkpointed, has none of its own).
        if (
            not line.terminated
            and self.args.checkpoint
            and follower is not None
            and not isinstance(line, Piece)
            and _left_for_later(follower, line)
        ):
            return False
        return self.output.write(_line_bytes(line, self.line_end))

    def show_held(self, i: int) -> None:
        waiting, self.held[i] = self.held[i], []
        for line in waiting:
            self.show(i, line)

    def next_turn(self, i: int) -> None:
        if i + 1 < len(self.files):
            self.turns[i + 1].set()

    async def pass_turn(self, i: int) -> None:
        """File ``i``'s turn: show what it read meanwhile, then, once it has caught up,
        give the turn to the next file."""
        name, follower, _ = self.files[i]
        assert follower is not None
        await self.turns[i].wait()
        try:
            self.show_held(i)
            await follower.caught_up()
            self.show_held(i)
            if _has_opened(follower):
                self.output.switch_to(name)  # an empty file has its header too
            self.output.flush()
        except BrokenPipeError:
            self.broken_pipe()
        self.next_turn(i)

    async def print_stdin(self, i: int) -> None:
        """Standard input, read to its end once its turn has come."""
        await self.turns[i].wait()
        async for pieces in stdin_pieces(_stdin_options(self.args)):
            for piece in pieces:
                self.show(i, piece)
            if pieces:
                self.output.flush()  # what one read brought (-n +N shows a pipe as it comes)
        self.output.switch_to(self.files[i][0])  # an empty input has its header too
        self.output.flush()
        self.next_turn(i)

    async def print_lines(self, i: int, follower: Follower) -> None:
        """The lines of file ``i`` from its line ``first`` on (``-n +N``), as they come."""
        name, _, first = self.files[i]
        from_line = FromLine(first)
        turn = self.turns[i]
        async for line in follower:
            if not from_line.keeps(line.terminated):
                continue
            if not turn.is_set():
                self.held[i].append(line)
                continue
            if self.held[i]:
                self.show_held(i)
            if self.show(i, line) or not follower.has_pending():
                self.output.flush()  # the file has nothing more yet: show what came
        if _has_opened(follower) and turn.is_set():
            self.output.switch_to(name)  # an empty file has its header too

    async def print_file(self, i: int) -> None:
        """File ``i`` (or standard input), its errors said under its name."""
        name, follower, _ = self.files[i]
        try:
            if follower is None:
                await self.print_stdin(i)
            else:
                await self.print_lines(i, follower)
        except BrokenPipeError:
            self.broken_pipe()
        except LineTooLong as exc:  # --on-overlong raise
            self.unreadable += 1
            warn(str(exc), name)
        except OSError as exc:  # this FILE (or a file rotated away from it); not stdout
            self.unreadable += 1
            opened = follower is None or _has_opened(follower)
            what = "error reading" if opened else "cannot open for reading"
            warn(f"{what}: {exc.strerror or exc}", name)
        except Exception as exc:
            self.fail(exc)

    async def save_first(self) -> None:
        """The first save as soon as the file is open: a run killed before then would
        leave no checkpoint, and the next run would start at the end of whatever file
        the path names by then (after a rotation, a new one).  A flush (of the lines
        gathered so far, if any) makes it; every flush saves after that."""
        import anyio

        output = self.output
        try:
            while output.follower is not None and output.delivered is None:
                output.flush()
                if output.delivered is None:  # not open yet
                    await anyio.sleep(0.01)
        except Exception as exc:
            self.fail(exc)

    async def stop_after_pid(self, pid: int) -> None:
        import anyio

        while _alive(pid):
            await anyio.sleep(self.args.poll_interval)
        for _, follower, _ in self.files:
            if follower is not None:
                follower.stop_at_end()

    async def print_all(self) -> None:
        """Without -f, each in turn; with -f, all at once (in argument order first)."""
        import anyio

        if not self.args.follow:
            for i in range(len(self.files)):
                self.turns[i].set()
                await self.print_file(i)
            return
        async with anyio.create_task_group() as following:
            for i, (_, follower, _) in enumerate(self.files):
                following.start_soon(self.print_file, i)
                if follower is not None:
                    following.start_soon(self.pass_turn, i)

    async def run(self) -> int:
        import anyio

        args = self.args
        # The final save is made while signals are still events: a second Ctrl-C or
        # SIGTERM meanwhile is ignored instead of killing the process half-way.
        with _stop_signals() as signals:
            try:
                async with anyio.create_task_group() as self.group:
                    if signals is not None:
                        self.group.start_soon(_stop_on_signal, signals, self.stop)
                    if args.follow and args.checkpoint:
                        self.group.start_soon(self.save_first)
                    if args.follow and args.pid is not None:
                        self.group.start_soon(self.stop_after_pid, args.pid)
                    self.turns[0].set()
                    await self.print_all()
                    self.stop()
                if self.failure is not None:
                    raise self.failure
            finally:
                for _, follower, _ in self.files:
                    if follower is not None:
                        await follower.aclose()
                # Whatever stopped us, the lines handed out were written: record them.
                self.output.save()
                if self.output.broken:
                    silence_stdout()
                    self.status = EXIT_BROKEN_PIPE if self.status == EXIT_OK else self.status
        return EXIT_UNREADABLE if self.status == EXIT_OK and self.unreadable else self.status


# -- several FILEs or PATTERNs followed together ----------------------------------------


def _many_start(args: argparse.Namespace) -> dict[str, Any]:
    """``follow_many()``'s start for the files found at the start: -n N or -n +1."""
    only_n = "files followed together start at their last N lines (-n N) or first (-n +1)"
    unsupported = [
        f"{option} ({why})"
        for option, given, why in (
            (
                "--pid",
                args.pid is not None,
                "stopping when PID exits is implemented for separate FILEs only",
            ),
            ("--bytes", args.bytes is not None, only_n),
            ("--offset", args.offset is not None, "a byte offset belongs to one file"),
            ("-n +N (N > 1)", args.lines.from_start and args.lines.number > 1, only_n),
        )
        if given
    ]
    if unsupported:
        raise CommandError(
            "not with several FILEs or PATTERNs followed at once: " + "; ".join(unsupported)
        )
    if args.lines.from_start:
        return {"start": "beginning"}
    return {"start": "end", "last_lines": args.lines.number}


def _open_many(
    args: argparse.Namespace, shown: Callable[[str], str]
) -> tuple[ManyFollower, CheckpointStore | None]:
    """The follower of the FILEs and PATTERNs, and its checkpoint store (``--checkpoint``),
    saved here as of what reached stdout."""
    from ..checkpoints import CheckpointStore
    from ..follow import CheckpointError
    from ..many import ManyFollower

    start = _many_start(args)
    store = None
    if args.checkpoint:
        try:
            # Saved after every write to stdout: no fsync each time (see Output).
            store = CheckpointStore(args.checkpoint, durable=False)
        except CheckpointError as exc:
            raise CommandError(f"not a usable checkpoint store: {exc}") from None
    try:
        options = _follow_options(
            args,
            **start,
            store=store,
            autosave=False,  # saved here, as of what reached stdout
            retry=False,  # each file found is followed until its name is gone
            on_notice=lambda notice: _tell(notice, shown(notice.path), args.checkpoint),
        )
        return ManyFollower(args.files, options), store
    except ValueError as exc:
        if store is not None:
            store.close()
        raise CommandError(str(exc)) from None


async def _tail_many(args: argparse.Namespace) -> int:
    """Follow several FILEs or PATTERNs at once: one watcher, one checkpoint store."""
    relative = not any(map(os.path.isabs, args.files))

    def shown(path: str) -> str:
        # Files are followed by absolute path; shown as the user spelled the patterns.
        return os.path.relpath(path) if relative else path

    return await _Many(args, *_open_many(args, shown), shown).run()


class _Many:
    """``tail -f`` of several FILEs or PATTERNs by one ``follow_many``: a header whenever
    the lines change file, and the store saved as of what reached stdout."""

    def __init__(
        self,
        args: argparse.Namespace,
        many: ManyFollower,
        store: CheckpointStore | None,
        shown: Callable[[str], str],
    ) -> None:
        self.args = args
        self.many = many
        self.store = store
        self.shown = shown
        self.line_end = _newline(args).encode()
        self.output = Output(
            sys.stdout.buffer,
            not args.quiet,
            None,
            None,
            many=many,
            marks=args.checkpoint if store is not None else None,
            resume=_stored_marks(store),
            line_end=self.line_end,
        )
        self.status = EXIT_OK
        self.unreadable = 0
        self.failure: Exception | None = None
        self.group: anyio.abc.TaskGroup | None = None

    def stop(self, status: int) -> None:
        self.status = status
        assert self.group is not None
        self.group.cancel_scope.cancel()

    async def print_lines(self) -> None:
        many, output = self.many, self.output
        try:
            async for line in many:
                assert many.current is not None
                output.switch_to(self.shown(many.current))
                if output.write(_line_bytes(line, self.line_end)) or not many.has_pending():
                    await output.commit()
        except BrokenPipeError:
            output.broken = True
            self.status = EXIT_BROKEN_PIPE
        except LineTooLong as exc:  # --on-overlong raise
            self.unreadable += 1
            warn(str(exc))
        except Exception as exc:
            self.failure = exc

    async def follow(self, signals: AsyncIterator[signal.Signals] | None) -> None:
        import anyio

        async with self.many:
            try:
                # The lines are read in this task, the one that entered ``many``.
                async with anyio.create_task_group() as self.group:
                    if signals is not None:
                        self.group.start_soon(_stop_on_signal, signals, self.stop)
                    if self.args.checkpoint:
                        await self.output.commit()  # where each file starts, before any line
                    await self.print_lines()
                    self.group.cancel_scope.cancel()
            finally:
                # Whatever stopped us, the lines handed out were written: record them
                # (while ``many`` still knows its files).
                with anyio.CancelScope(shield=True):
                    await self.output.save_all()

    async def run(self) -> int:
        from ..follow import CheckpointError

        with _stop_signals() as signals:
            try:
                try:
                    await self.follow(signals)
                except CheckpointError as exc:
                    raise CommandError(f"not a usable checkpoint store: {exc}") from None
                if self.failure is not None:
                    raise self.failure
            finally:
                if self.store is not None:
                    self.store.close()
                if self.output.broken:
                    silence_stdout()
                    self.status = EXIT_BROKEN_PIPE if self.status == EXIT_OK else self.status
        return EXIT_UNREADABLE if self.status == EXIT_OK and self.unreadable else self.status
