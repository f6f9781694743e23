"""``utf8stream tail``: the last lines of logs, and following them across rotation.

Lines are cut at ``\\n`` only, as GNU tail does, and written back with the ending they had
(``\\r\\n`` and a lone ``\\r`` pass through; a last line without a newline gets none).
With ``--checkpoint`` every way the command stops saves the checkpoint (the end of the
input, Ctrl-C, SIGTERM, a closed output pipe), and while following it is also saved right
after every write to stdout; a saved checkpoint covers exactly the lines written to
stdout, so a restart repeats none and loses none.  After a SIGKILL none is lost, and only
the lines of one write can repeat: lines go out in one ``write`` of at most 64 KiB
(``_Output.BATCH_BYTES``) and the line that filled it, and a kill during that write, or
after it returned and before the save that follows it, leaves the checkpoint before them.
That window cannot be closed: to a pipe, writing lines and recording that they were
written are two steps, and no reader can tell the run that repeats them which it got.
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
import contextlib
import glob
import os
import signal
import stat
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO

from ...core.lines import LineTooLong
from ...core.multiline import DEFAULT_MAX_EVENT_BYTES, MultilineJoiner
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

if TYPE_CHECKING:
    from ..follow import FollowCheckpoint, Follower, Line, Notice
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
    # A pattern, or one checkpoint for several FILEs: one follower of them all, whose
    # checkpoint store (SQLite) records them together.  Otherwise each FILE is followed
    # by a follower of its own, and one FILE's checkpoint is a JSON file.
    several = args.checkpoint and len(args.files) > 1
    if args.follow and (several or any(map(glob.has_magic, args.files))):
        return anyio.run(_tail_many, args)
    if args.checkpoint and len(args.files) > 1:
        raise CommandError(
            "--checkpoint records one file: give each FILE its own run and checkpoint"
        )
    return anyio.run(_tail, args)


def _start(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """``follow()``'s arguments for where to start, and the line to show first (``-n +N``:
    N; 0 for all)."""
    if args.offset is not None:
        return {"start": args.offset}, 0
    if args.bytes is not None:
        count: Count = args.bytes
        if count.from_start:
            return {"start": max(count.number - 1, 0), "gap_at_start": False}, 0
        return {"last_bytes": count.number, "gap_at_start": False}, 0
    count = args.lines
    if count.from_start:
        return {"start": "beginning"}, count.number
    return {"last_lines": count.number}, 0


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


def _partial_after(args: argparse.Namespace, joiner: MultilineJoiner | None) -> float | None:
    """Following, an unfinished line is shown as soon as it is read, as GNU tail shows
    it (its rest follows when written; a checkpoint saved meanwhile covers what was
    shown); an event is shown whole."""
    return 0.0 if args.follow and joiner is None else None


def _load_follower(
    args: argparse.Namespace, name: str, shown: str | None = None
) -> tuple[Follower, int]:
    """The follower of one FILE, and the line it shows first (``-n +N``: N; 0 for all)."""
    from ..follow import CheckpointError, follow, read_checkpoint

    checkpoint = None
    start, first = _start(args)
    joiner = _joiner(args)
    try:
        if args.checkpoint and os.path.exists(args.checkpoint):
            checkpoint = read_checkpoint(args.checkpoint)
            first = 0  # the checkpoint says where to go on
        follower = follow(
            name,
            **start,
            checkpoint=checkpoint,
            poll_interval=args.poll_interval,
            rotate_grace=args.rotate_grace,
            encoding=args.encoding,
            # Cut at "\n" only, as GNU tail: a "\r" stays in the text it ends (CRLF) or
            # sits in (a lone CR), so writing each line back with "\n" passes it through.
            newline=_newline(args),
            max_line_bytes=args.max_line_bytes,
            on_overlong=args.on_overlong,
            errors=args.errors,
            until_eof=not args.follow,
            retry=args.retry and args.follow,
            on_notice=lambda notice: _tell(notice, shown or name, args.checkpoint),
            multiline=joiner,
            multiline_timeout=args.multiline_timeout,
            partial_after=_partial_after(args, joiner),
        )
    except CheckpointError as exc:
        raise CommandError(f"not a usable checkpoint: {exc}", args.checkpoint) from None
    return follower, first


class _Output:
    """Lines to stdout, with ``==> FILE <==`` headers, and the checkpoint of what stdout
    has really been given.

    Lines are gathered here and go out in one write at ``flush`` (when the follower has
    nothing more ready, or ``BATCH_BYTES`` are gathered).  With a checkpoint, each flush
    that wrote lines is followed at once by a save of the position just past them
    (without fsync: a process killed with SIGKILL loses nothing the kernel was given), so
    a SIGKILL repeats at most the lines of the one write between its return and the save.
    """

    BATCH_BYTES = 1 << 16

    def __init__(
        self,
        out: BinaryIO,
        headers: bool,
        follower: Follower | None,
        checkpoint_path: str | None,
        many: ManyFollower | None = None,
        following: bool = True,
    ):
        self.out = out
        self.following = following  # saved after every flush, not only on stopping
        self.headers = headers
        self.current: str | None = None  # the file whose lines are being written
        self.follower = follower
        self.checkpoint_path = checkpoint_path
        self.batch: list[bytes] = []
        self.batch_size = 0
        self.delivered: FollowCheckpoint | None = None  # as of the last good flush
        self.saved: FollowCheckpoint | None = None  # what the checkpoint file says
        #: With several files (-f), their store and checkpoints as of the last good flush.
        self.many = many
        self.many_delivered: dict[str, FollowCheckpoint] | None = None
        self.broken = False

    def switch_to(self, name: str) -> None:
        """Lines of ``name`` come next: a header if they are not the previous ones'."""
        if self.headers and name != self.current:
            blank = b"" if self.current is None else b"\n"
            self.write(blank + b"==> " + os.fsencode(name) + b" <==\n")
        self.current = name

    def write(self, data: bytes) -> bool:
        """Gather ``data``; True once a batch is full (time to flush)."""
        self.batch.append(data)
        self.batch_size += len(data)
        return self.batch_size >= self.BATCH_BYTES

    def flush(self) -> None:
        """Send the lines handed out so far to stdout: they are delivered (and recorded
        in a checkpoint file at once)."""
        if self.batch:
            self.out.write(b"".join(self.batch))
            self.out.flush()
            self.batch.clear()
            self.batch_size = 0
        if self.follower is not None:
            # RuntimeError: the file could not be opened, there is no position to record.
            with contextlib.suppress(RuntimeError):
                self.delivered = self.follower.checkpoint()
            if self.following:
                self.record(durable=False)
        if self.many is not None:
            self.many_delivered = self.many.checkpoints()

    def record(self, durable: bool) -> None:
        """Write the checkpoint of what was delivered, if it moved (or ``durable``)."""
        if not self.checkpoint_path or self.delivered is None:
            return
        if durable or self.delivered != self.saved:
            from ..follow import write_checkpoint

            try:
                write_checkpoint(self.delivered, self.checkpoint_path, durable=durable)
            except OSError as exc:  # not the FILE's error: said of the checkpoint
                raise CommandError(exc.strerror or str(exc), self.checkpoint_path) from None
            self.saved = self.delivered

    async def commit(self) -> None:
        """``flush``, and with several files, one transaction for what they delivered."""
        self.flush()
        if self.many is not None and self.many_delivered is not None:
            await self.many.save(self.many_delivered)

    def save(self) -> None:
        """Flush, and record the position after the last line delivered (on disk)."""
        if not self.broken:
            try:
                self.flush()
            except BrokenPipeError:
                self.broken = True
        self.record(durable=True)

    async def save_all(self) -> None:
        """``save``, and with several files, one transaction for what they delivered."""
        self.save()
        if self.many is not None and self.many_delivered is not None:
            await self.many.save(self.many_delivered)


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


async def _tail(args: argparse.Namespace) -> int:
    """Print lines of the files; with -f/-F keep following them (by name)."""
    import anyio

    files = [_load(args, name) for name in args.files]
    line_end = _newline(args).encode()
    headers = args.verbose or (len(files) > 1 and not args.quiet)
    output = _Output(
        sys.stdout.buffer,
        headers,
        files[0][1] if args.checkpoint else None,  # never standard input
        args.checkpoint,
        following=args.follow,
    )
    status = EXIT_OK
    unreadable = 0
    # Raised again once the task group is left, as itself: a task group would wrap it.
    failure: Exception | None = None

    # -f with several files: each is followed by a task of its own, but, as GNU tail
    # does, the lines each file holds at the start are shown in argument order: a file's
    # lines wait (in ``held``) until the files before it have caught up.
    turns = [anyio.Event() for _ in files]
    held: list[list[Line]] = [[] for _ in files]

    def show(i: int, line: Line | Piece) -> bool:
        """Write ``line`` of file ``i``; whether the output buffer is full."""
        name, follower, _ = files[i]
        output.switch_to(name)
        # Surrogate escapes (--errors surrogateescape) become their bytes again.
        text = line.text.encode("utf-8", "surrogateescape")
        if line.terminated:
            return output.write(text + line_end)
        # With --checkpoint, the unfinished last line waits for the run that sees it whole
        # (standard input, never checkpointed, has none of its own).
        if (
            args.checkpoint
            and follower is not None
            and not isinstance(line, Piece)
            and _left_for_later(follower, line)
        ):
            return False
        return output.write(text)

    def show_held(i: int) -> None:
        waiting, held[i] = held[i], []
        for line in waiting:
            show(i, line)

    async def pass_turn(i: int) -> None:
        """File ``i``'s turn: show what it read meanwhile, then, once it has caught up,
        give the turn to the next file."""
        nonlocal status
        name, follower, _ = files[i]
        assert follower is not None
        await turns[i].wait()
        try:
            show_held(i)
            await follower.caught_up()
            show_held(i)
            if _has_opened(follower):
                output.switch_to(name)  # an empty file has its header too
            output.flush()
        except BrokenPipeError:
            output.broken = True
            status = EXIT_BROKEN_PIPE
            group.cancel_scope.cancel()
        if i + 1 < len(files):
            turns[i + 1].set()

    async def print_stdin(i: int) -> None:
        """Standard input, read to its end once its turn has come."""
        name = files[i][0]
        await turns[i].wait()
        async for pieces in stdin_pieces(_stdin_options(args)):
            for piece in pieces:
                show(i, piece)
            if pieces:
                output.flush()  # what one read brought (-n +N shows a pipe as it comes)
        output.switch_to(name)  # an empty input has its header too
        output.flush()
        if i + 1 < len(files):
            turns[i + 1].set()

    async def print_file(i: int) -> None:
        nonlocal status, failure, unreadable
        name, follower, first = files[i]
        from_line = FromLine(first)
        turn = turns[i]
        try:
            if follower is None:
                await print_stdin(i)
                return
            async for line in follower:
                if not from_line.keeps(line.terminated):
                    continue
                if not turn.is_set():
                    held[i].append(line)
                    continue
                if held[i]:
                    show_held(i)
                if show(i, line) or not follower.has_pending():
                    output.flush()  # the file has nothing more yet: show what came
            if _has_opened(follower) and turn.is_set():
                output.switch_to(name)  # an empty file has its header too
        except BrokenPipeError:
            output.broken = True
            status = EXIT_BROKEN_PIPE
            group.cancel_scope.cancel()
        except LineTooLong as exc:  # --on-overlong raise
            unreadable += 1
            warn(str(exc), name)
        except OSError as exc:  # this FILE (or a file rotated away from it); not stdout
            unreadable += 1
            opened = follower is None or _has_opened(follower)
            what = "error reading" if opened else "cannot open for reading"
            warn(f"{what}: {exc.strerror or exc}", name)
        except Exception as exc:
            failure = exc
            group.cancel_scope.cancel()

    async def save_first() -> None:
        nonlocal failure
        try:
            # The first save as soon as the file is open, before any line: a run killed
            # before then would leave no checkpoint, and the next run would start at the
            # end of whatever file the path names by then (after a rotation, a new one).
            # Every flush saves after that.
            follower = output.follower
            while follower is not None and output.delivered is None:
                with contextlib.suppress(RuntimeError):  # not open yet
                    output.delivered = follower.checkpoint()
                if output.delivered is None:
                    await anyio.sleep(0.01)
            output.record(durable=False)
        except Exception as exc:
            failure = exc
            group.cancel_scope.cancel()

    async def stop_on_signal(signals: AsyncIterator[signal.Signals]) -> None:
        nonlocal status
        async for signum in signals:
            status = EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM
            group.cancel_scope.cancel()

    async def stop_after_pid(pid: int) -> None:
        while _alive(pid):
            await anyio.sleep(args.poll_interval)
        for _, follower, _ in files:
            if follower is not None:
                follower.stop_at_end()

    # The final save is made while signals are still events: a second Ctrl-C or SIGTERM
    # meanwhile is ignored instead of killing the process half-way.
    with _stop_signals() as signals:
        try:
            async with anyio.create_task_group() as group:
                if signals is not None:
                    group.start_soon(stop_on_signal, signals)
                if args.follow and args.checkpoint:
                    group.start_soon(save_first)
                if args.follow and args.pid is not None:
                    group.start_soon(stop_after_pid, args.pid)
                turns[0].set()
                if args.follow:
                    async with anyio.create_task_group() as following:
                        for i, (_, follower, _) in enumerate(files):
                            following.start_soon(print_file, i)
                            if follower is not None:
                                following.start_soon(pass_turn, i)
                else:
                    for i in range(len(files)):
                        turns[i].set()
                        await print_file(i)
                group.cancel_scope.cancel()
            if failure is not None:
                raise failure
        finally:
            for _, follower, _ in files:
                if follower is not None:
                    await follower.aclose()
            # Whatever stopped us, the lines handed out were written: record them.
            output.save()
            if output.broken:
                silence_stdout()
                status = EXIT_BROKEN_PIPE if status == EXIT_OK else status
    if status == EXIT_OK and unreadable:
        return EXIT_UNREADABLE
    return status


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


async def _tail_many(args: argparse.Namespace) -> int:
    """Follow several FILEs or PATTERNs at once: one watcher, one checkpoint store."""
    import anyio

    from ..checkpoints import CheckpointStore
    from ..follow import CheckpointError
    from ..many import follow_many

    start = _many_start(args)
    relative = not any(map(os.path.isabs, args.files))

    def shown(path: str) -> str:
        # Files are followed by absolute path; shown as the user spelled the patterns.
        return os.path.relpath(path) if relative else path

    store = None
    if args.checkpoint:
        try:
            # Saved after every write to stdout: no fsync each time (see _Output).
            store = CheckpointStore(args.checkpoint, durable=False)
        except CheckpointError as exc:
            raise CommandError(f"not a usable checkpoint store: {exc}") from None
    joiner = _joiner(args)
    try:
        many = follow_many(
            args.files,
            store=store,
            autosave=False,  # saved here, as of what reached stdout
            **start,
            poll_interval=args.poll_interval,
            rotate_grace=args.rotate_grace,
            encoding=args.encoding,
            newline=_newline(args),
            max_line_bytes=args.max_line_bytes,
            on_overlong=args.on_overlong,
            errors=args.errors,
            on_notice=lambda notice: _tell(notice, shown(notice.path), args.checkpoint),
            multiline=joiner,
            multiline_timeout=args.multiline_timeout,
            partial_after=_partial_after(args, joiner),
        )
    except ValueError as exc:
        if store is not None:
            store.close()
        raise CommandError(str(exc)) from None
    output = _Output(sys.stdout.buffer, not args.quiet, None, None, many=many)
    line_end = _newline(args).encode()
    status = EXIT_OK
    unreadable = 0
    failure: Exception | None = None

    async def print_lines() -> None:
        nonlocal status, failure, unreadable
        write = output.write
        try:
            async for line in many:
                assert many.current is not None
                output.switch_to(shown(many.current))
                text = line.text.encode("utf-8", "surrogateescape")
                full = write(text + line_end if line.terminated else text)
                if full or not many.has_pending():
                    await output.commit()
        except BrokenPipeError:
            output.broken = True
            status = EXIT_BROKEN_PIPE
        except LineTooLong as exc:  # --on-overlong raise
            unreadable += 1
            warn(str(exc))
        except Exception as exc:
            failure = exc

    async def stop_on_signal(signals: AsyncIterator[signal.Signals]) -> None:
        nonlocal status
        async for signum in signals:
            status = EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM
            group.cancel_scope.cancel()

    with _stop_signals() as signals:
        try:
            try:
                async with many:
                    try:
                        # The lines are read in this task, the one that entered ``many``.
                        async with anyio.create_task_group() as group:
                            if signals is not None:
                                group.start_soon(stop_on_signal, signals)
                            if store is not None:
                                # Where each file starts, before any line is printed.
                                await output.commit()
                            await print_lines()
                            group.cancel_scope.cancel()
                    finally:
                        # Whatever stopped us, the lines handed out were written: record
                        # them (while ``many`` still knows its files).
                        with anyio.CancelScope(shield=True):
                            await output.save_all()
            except CheckpointError as exc:
                raise CommandError(f"not a usable checkpoint store: {exc}") from None
            if failure is not None:
                raise failure
        finally:
            if store is not None:
                store.close()
            if output.broken:
                silence_stdout()
                status = EXIT_BROKEN_PIPE if status == EXIT_OK else status
    if status == EXIT_OK and unreadable:
        return EXIT_UNREADABLE
    return status
