"""``utf8stream tail``: the last lines of a log, and following it across rotation.

Every way the command stops saves the checkpoint: the end of the input, Ctrl-C, SIGTERM,
a closed output pipe; while following, it is also saved whenever the output went quiet.
A saved checkpoint covers exactly the lines flushed to stdout, so a restart repeats none
and loses none.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

from ...core.lines import OVERLONG_POLICIES, LineTooLong
from ._common import (
    EXIT_BROKEN_PIPE,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    CommandError,
    positive_int,
    silence_stdout,
    warn,
)

if TYPE_CHECKING:
    from ..follow import FollowCheckpoint, Follower, Line

# follow.py's default limit and policies, named here so that building the parser does
# not load the async layers (a test checks they agree).
#: A line longer than this is handled by --on-overlong.
DEFAULT_MAX_LINE_BYTES = 1 << 20
ERROR_POLICIES = ("replace", "ignore", "backslashreplace", "surrogateescape")
#: A file that cannot be opened or read: 1, as GNU tail (other commands say 2).
EXIT_UNREADABLE = 1
#: While following, how long the output stays quiet before the checkpoint is saved.
IDLE_SAVE_SECONDS = 0.5


def _load_follower(args: argparse.Namespace) -> Follower:
    from ..follow import CheckpointError, follow, read_checkpoint

    checkpoint = None
    try:
        if args.checkpoint and os.path.exists(args.checkpoint):
            checkpoint = read_checkpoint(args.checkpoint)
        start: str | int = args.offset if args.offset is not None else "end"
        return follow(
            args.file,
            start=start,
            last_lines=args.lines if args.offset is None else 0,
            checkpoint=checkpoint,
            poll_interval=args.interval,
            # Cut at "\n" only, as GNU tail: a "\r" stays in the text it ends (CRLF) or
            # sits in (a lone CR), so writing each line back with "\n" passes it through.
            newline="\n",
            max_line_bytes=args.max_line_bytes,
            on_overlong=args.on_overlong,
            errors=args.errors,
            until_eof=not args.follow,
            retry=args.retry and args.follow,
            on_notice=lambda notice: warn(notice.message, args.file),
        )
    except CheckpointError as exc:
        raise CommandError(f"not a usable checkpoint: {exc}", args.checkpoint) from None


class _Output:
    """Lines to stdout, and the checkpoint of what stdout has really been given.

    Lines are gathered here and go out only at ``flush``, so that the position recorded
    after a flush that succeeded is exactly the end of what went out.
    """

    BATCH_BYTES = 1 << 16

    def __init__(self, out: BinaryIO, follower: Follower, checkpoint_path: str | None):
        self.out = out
        self.follower = follower
        self.checkpoint_path = checkpoint_path
        self.batch: list[bytes] = []
        self.batch_size = 0
        self.unsaved = False  # lines written since the last save
        self.delivered: FollowCheckpoint | None = None  # as of the last good flush
        self.broken = False

    def write(self, data: bytes) -> None:
        self.batch.append(data)
        self.batch_size += len(data)
        self.unsaved = True
        if self.batch_size >= self.BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Send the lines handed out so far to stdout: they are delivered."""
        self.out.write(b"".join(self.batch))
        self.out.flush()
        self.batch.clear()
        self.batch_size = 0
        if self.checkpoint_path:
            # RuntimeError: the file could not be opened, there is no position to record.
            with contextlib.suppress(RuntimeError):
                self.delivered = self.follower.checkpoint()

    def save(self) -> None:
        """Flush, and record the position after the last line delivered."""
        if not self.broken:
            try:
                self.flush()
            except BrokenPipeError:
                self.broken = True
        if self.checkpoint_path and self.delivered is not None:
            from ..follow import write_checkpoint

            write_checkpoint(self.delivered, self.checkpoint_path)
        self.unsaved = False


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
    """Print lines of a log file; with -f/-F keep following it (by name)."""
    import anyio

    follower = _load_follower(args)
    output = _Output(sys.stdout.buffer, follower, args.checkpoint)
    status = EXIT_OK
    # Raised again once the task group is left, as itself: a task group would wrap it.
    failure: Exception | None = None

    async def print_lines() -> None:
        nonlocal status, failure
        write = output.write
        try:
            async for line in follower:
                # Surrogate escapes (--errors surrogateescape) become their bytes again.
                text = line.text.encode("utf-8", "surrogateescape")
                if line.terminated:
                    write(text + b"\n")
                elif not (args.checkpoint and _left_for_later(follower, line)):
                    write(text)
                if not follower.has_pending():
                    output.flush()  # the file has nothing more yet: show what came
        except BrokenPipeError:
            output.broken = True
            status = EXIT_BROKEN_PIPE
        except LineTooLong as exc:  # --on-overlong raise
            failure = CommandError(str(exc), args.file, EXIT_UNREADABLE)
        except Exception as exc:
            failure = exc

    async def save_when_quiet() -> None:
        nonlocal failure
        try:
            while True:
                await anyio.sleep(IDLE_SAVE_SECONDS)
                if output.unsaved:
                    output.save()
        except Exception as exc:
            failure = exc
            group.cancel_scope.cancel()

    async def stop_on_signal(signals: AsyncIterator[signal.Signals]) -> None:
        nonlocal status
        async for signum in signals:
            status = EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM
            group.cancel_scope.cancel()

    try:
        with _stop_signals() as signals:
            async with follower, anyio.create_task_group() as group:
                if signals is not None:
                    group.start_soon(stop_on_signal, signals)
                if args.follow and args.checkpoint:
                    group.start_soon(save_when_quiet)
                await print_lines()
                group.cancel_scope.cancel()
        if isinstance(failure, OSError) and failure.filename in (None, args.file):
            what = "error reading" if _has_opened(follower) else "cannot open for reading"
            reason = failure.strerror or str(failure)
            raise CommandError(f"{what}: {reason}", args.file, EXIT_UNREADABLE)
        if failure is not None:
            raise failure
    finally:
        # Whatever stopped us, the lines handed out were written: record them.
        output.save()
        if output.broken:
            silence_stdout()
            status = EXIT_BROKEN_PIPE if status == EXIT_OK else status
    return status


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tail = sub.add_parser(
        "tail",
        help="print the last lines of a log, and follow it",
        description="Print the last lines of FILE (default 10). With -f or -F, keep "
        "following it by name, surviving rotation (rename and create, copytruncate) and "
        "truncation; malformed bytes become U+FFFD and never stop the reader.",
    )
    tail.add_argument("file", metavar="FILE")
    tail.add_argument(
        "-f",
        "--follow",
        dest="follow",
        action="store_true",
        help="output lines as the file grows; follows the name across rotation",
    )
    tail.add_argument(
        "-F",
        dest="follow_retry",
        action="store_true",
        help="same as --follow --retry",
    )
    tail.add_argument(
        "--retry",
        action="store_true",
        help="while following, wait for a file that cannot be opened (missing, "
        "unreadable) instead of failing; notices go to stderr",
    )
    tail.add_argument("-n", "--lines", type=int, default=10, metavar="N", help="default 10")
    tail.add_argument(
        "--checkpoint",
        metavar="CPFILE",
        help="resume after the lines a previous run printed, and record progress there "
        "(written atomically, on every stop and whenever the output goes quiet)",
    )
    tail.add_argument(
        "--offset", type=int, metavar="N", help="start at byte N (mid-line: one U+FFFD)"
    )
    tail.add_argument(
        "--interval", type=float, default=0.25, metavar="SECONDS", help="poll interval"
    )
    tail.add_argument(
        "--max-line-bytes",
        type=_line_limit,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help="longest line handled whole, in bytes (default 1 MiB; GNU tail has no "
        "limit): memory stays bounded by it; see --on-overlong",
    )
    tail.add_argument(
        "--on-overlong",
        choices=sorted(OVERLONG_POLICIES),
        default="split",
        help="a longer line is: split (default: read in pieces, printed unchanged), "
        "truncate (its first N bytes, and a notice), skip (a notice), raise (an error, "
        "exit 1)",
    )
    tail.add_argument(
        "--errors",
        choices=ERROR_POLICIES,
        default="replace",
        help="malformed bytes become: replace (U+FFFD, default), ignore (dropped), "
        "backslashreplace (\\xNN), surrogateescape (the original bytes, unchanged)",
    )
    tail.set_defaults(run=_cmd_tail)


def _line_limit(text: str) -> int:
    """``type=`` for --max-line-bytes: room for one character at least."""
    value = positive_int(text)
    if value < 4:
        raise argparse.ArgumentTypeError(f"must be at least 4 (one character), not {text!r}")
    return value


def _cmd_tail(args: argparse.Namespace) -> int:
    import anyio  # the async layers load only for the commands that need them

    if args.follow_retry:
        args.follow = args.retry = True
    if args.retry and not args.follow:
        warn("warning: --retry ignored; --retry is useful only when following")
    return anyio.run(_tail, args)
