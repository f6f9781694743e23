"""The ``utf8stream`` command line: iconv-like conventions, streaming in constant memory.

Exit status: 0 success (and valid input for ``validate``), 1 invalid input (``validate``,
or ``decode --errors strict``), 2 usage errors and files that cannot be read or written.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from ...core.decoder import Utf8Decoder
from . import tail, transcode, validate
from ._common import (
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
    CommandError,
    Terminated,
    warn,
)


def build_parser() -> argparse.ArgumentParser:
    from ... import __version__  # the package, fully imported by the time main() runs

    parser = argparse.ArgumentParser(
        prog="utf8stream",
        description="Validate, repair and transcode UTF-8 streams in constant memory.",
    )
    parser.add_argument("--version", action="version", version=f"utf8stream {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate.add_parser(sub)
    transcode.add_parsers(sub)
    tail.add_parser(sub)
    return parser


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Signal handlers can only be set from the main thread (main() may be called from
    # another one by a program that embeds it; SIGTERM then keeps its own handling).
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    try:
        return _run(args)
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except Terminated:
        return EXIT_SIGTERM
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    try:
        if getattr(args, "errors", None) is not None:
            Utf8Decoder(args.errors)  # reject unknown policies before touching files
        code: int = args.run(args)
    except CommandError as exc:
        warn(exc.message, exc.path)
        return exc.status
    except (LookupError, ValueError) as exc:
        if isinstance(exc, UnicodeError):
            raise
        print(f"utf8stream: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"utf8stream: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_USAGE
    return code
