"""``utf8stream tail``: the last lines of a log, and following it across rotation."""

from __future__ import annotations

import argparse
import os
import sys
import time

from ._common import EXIT_OK, CommandError


def _cmd_tail(args: argparse.Namespace) -> int:
    import anyio  # the async layers load only for the commands that need them

    return anyio.run(_tail, args)


async def _tail(args: argparse.Namespace) -> int:
    """Print lines of a log file; with -f/-F keep following it (by name)."""
    from ..follow import CheckpointError, follow, read_checkpoint, write_checkpoint

    checkpoint = None
    try:
        if args.checkpoint and os.path.exists(args.checkpoint):
            checkpoint = read_checkpoint(args.checkpoint)
        start: str | int = args.offset if args.offset is not None else "end"
        follower = follow(
            args.file,
            start=start,
            last_lines=args.lines if args.offset is None else 0,
            checkpoint=checkpoint,
            poll_interval=args.interval,
            until_eof=not args.follow,
        )
    except CheckpointError as exc:
        raise CommandError(f"not a usable checkpoint: {exc}", args.checkpoint) from None
    out = sys.stdout.buffer
    last_saved = time.monotonic()

    def save() -> None:
        if args.checkpoint:
            out.flush()
            write_checkpoint(follower.checkpoint(), args.checkpoint)

    try:
        async with follower:
            async for line in follower:
                out.write(line.text.encode("utf-8", "surrogateescape") + b"\n")
                if args.checkpoint and time.monotonic() - last_saved > 0.5:
                    save()
                    last_saved = time.monotonic()
                elif not args.checkpoint and args.follow:
                    out.flush()
            save()
    except KeyboardInterrupt:
        save()
        return 130
    finally:
        out.flush()
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tail = sub.add_parser(
        "tail",
        help="print the last lines of a log, and follow it",
        description="Print the last lines of FILE (default 10). With -f or -F, keep "
        "following it by name, surviving rotation (rename and create, copytruncate) and "
        "truncation; malformed bytes become U+FFFD and never stop the reader.",
    )
    tail.add_argument("file", metavar="FILE")
    follow_group = tail.add_mutually_exclusive_group()
    follow_group.add_argument(
        "-f", dest="follow", action="store_true", help="follow (by name; same as -F)"
    )
    follow_group.add_argument(
        "-F", dest="follow", action="store_true", help="follow by name, across rotation"
    )
    tail.add_argument("-n", "--lines", type=int, default=10, metavar="N", help="default 10")
    tail.add_argument(
        "--checkpoint",
        metavar="CPFILE",
        help="resume after the lines a previous run printed, and record progress there "
        "(written atomically)",
    )
    tail.add_argument(
        "--offset", type=int, metavar="N", help="start at byte N (mid-line: one U+FFFD)"
    )
    tail.add_argument(
        "--interval", type=float, default=0.25, metavar="SECONDS", help="poll interval"
    )
    tail.set_defaults(run=_cmd_tail)
