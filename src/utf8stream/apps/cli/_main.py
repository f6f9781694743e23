"""The ``utf8stream`` command line: iconv-like conventions, streaming in constant memory.

Every error is one line on stderr, ``utf8stream: FILE: what went wrong``, never a
traceback.  Exit status: 0 success (and valid input for ``validate``), 1 invalid input
(``validate``, ``transcode`` as iconv, ``decode --errors strict``), 2 usage errors (one
line too) and files that cannot be read or written, 130 / 143 stopped by Ctrl-C /
SIGTERM, 141 the reader of stdout went away (``| head``; ``validate`` says 1 instead when
it has already seen invalid input).
"""

from __future__ import annotations

import _thread
import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence

from ._common import (
    EXIT_BROKEN_PIPE,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
    CommandError,
    Parser,
    Terminated,
    silence_stdout,
    warn,
)

TYPE_CHECKING = False  # ``typing`` itself is not imported: ``--version`` needs nothing
if TYPE_CHECKING:
    from typing import Any

_EPILOG = (
    "Errors are reported as 'utf8stream: FILE: what went wrong'. Exit status: 0 success, "
    "1 invalid input, 2 usage error or unreadable/unwritable file, 130 Ctrl-C, 143 SIGTERM, "
    "141 output pipe closed by its reader (e.g. | head)."
)


#: The commands, in the order of the help.
_COMMANDS = ("validate", "transcode", "decode", "tail", "detect")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    return _build_parser(None)


def _build_parser(command: str | None) -> argparse.ArgumentParser:
    """The parser; with ``command`` (the first argument) a command's name, only the
    parser of that command (and of its sibling, for "transcode" and "decode"), which
    parses that command line exactly as the whole parser does (the top-level usage names
    no command), without importing the modules of the others; with "--version", none.
    Start-up is the whole cost of a command run on a small file."""
    from ... import __version__

    parser = Parser(
        prog="utf8stream",
        description="Validate, repair and transcode UTF-8 streams in constant memory.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"utf8stream {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    if command == "--version":
        return parser
    every = command not in _COMMANDS
    if every or command == "validate":
        from . import validate

        validate.add_parser(sub)
    if every or command in ("transcode", "decode"):
        from . import transcode

        transcode.add_parsers(sub)
    if every or command == "tail":
        from . import tail

        tail.add_parser(sub)
    if every or command == "detect":
        from . import detect

        detect.add_parser(sub)
    return parser


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


class _RedeliverLostInterrupts:
    """A ``sys.unraisablehook`` for the time a command runs.

    A signal's handler runs wherever the main thread is, and where it is may be code
    whose exceptions the interpreter only prints, "Exception ignored in ...": a callback
    run after ``fork()`` (a worker pool starting), a ``__del__``, a weak reference's
    callback.  There ``KeyboardInterrupt`` or ``Terminated`` would be lost: a traceback
    on stderr, and the command running on to the end as if never stopped.  This marks
    the signal as arrived again instead, so that its handler raises once more, at the
    next point of ordinary code; any other unraisable exception goes to the hook in
    place before.
    """

    def __init__(self, previous: Callable[[Any], object]) -> None:
        self.previous = previous

    def __call__(self, unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, KeyboardInterrupt):
            _thread.start_new_thread(_interrupt_main_soon, (signal.SIGINT,))
        elif isinstance(exc, Terminated):
            _thread.start_new_thread(_interrupt_main_soon, (signal.SIGTERM,))
        else:
            self.previous(unraisable)


def _interrupt_main_soon(signum: signal.Signals) -> None:
    """Mark ``signum`` as arrived for the main thread, a moment from now.

    Not at once from the hook: the main thread runs a signal's handler at its next
    instruction, which would be in the hook, or in the rest of the callback it
    interrupted, whose exceptions are dropped too.  By the time this thread gets the
    interpreter (the main thread gives it up every few milliseconds) the main thread
    has left them, and the handler raises in ordinary code.  Should it land in such a
    place again, the hook starts over.
    """
    time.sleep(0.001)
    _thread.interrupt_main(signum)


def _ignore_further_signals() -> None:
    """After an interruption: another Ctrl-C or SIGTERM while the program exits must
    neither print a traceback nor kill it with another status."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; ``argv`` None: ``sys.argv``, as the program itself."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    # The handling of Ctrl-C and SIGTERM is in place before the parser is built: that
    # imports the command's modules, the longest part of a start-up.
    # Signal handlers can only be set from the main thread (main() may be called from
    # another one by a program that embeds it; SIGTERM then keeps its own handling).
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_int = signal.getsignal(signal.SIGINT) if in_main_thread else None
    previous_term = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    previous_hook = sys.unraisablehook
    if in_main_thread:
        sys.unraisablehook = _RedeliverLostInterrupts(previous_hook)
    status: int | None = None
    try:
        # A second Ctrl-C during a command's cleanup raises KeyboardInterrupt again, out
        # of that cleanup: it lands here too.  One arriving while the first is handled
        # here is caught by the outer ``try``; the first one decides the status.
        try:
            status = _parse_and_run(arguments)
        except KeyboardInterrupt:
            status = EXIT_SIGINT
        except Terminated:
            status = EXIT_SIGTERM
        if status in (EXIT_SIGINT, EXIT_SIGTERM):
            _ignore_further_signals()
    except KeyboardInterrupt:
        status = status or EXIT_SIGINT
        _ignore_further_signals()
    except Terminated:
        status = status or EXIT_SIGTERM
        _ignore_further_signals()
    finally:
        # As the program, stay deaf to signals after an interruption: the process is
        # about to exit, and a handler put back now would let a late Ctrl-C through.
        # A program that embeds main() gets its own handlers back.
        interrupted = status in (EXIT_SIGINT, EXIT_SIGTERM)
        if in_main_thread:
            sys.unraisablehook = previous_hook
        if argv is not None or not interrupted:
            # None: a handler installed from C, which Python cannot put back.
            if previous_int is not None:
                signal.signal(signal.SIGINT, previous_int)
            if previous_term is not None:
                signal.signal(signal.SIGTERM, previous_term)
    return status


def _input_name(args: argparse.Namespace) -> str | None:
    """The file a command reads, for messages about errors that name none."""
    files: list[str] = getattr(args, "files", None) or []
    name: str | None = getattr(args, "file", None) or getattr(args, "input", None)
    return name if name is not None else (files[0] if len(files) == 1 else None)


def _parse_and_run(arguments: list[str]) -> int:
    parser = _build_parser(arguments[0] if arguments else None)
    return _run(parser.parse_args(arguments))


def _run(args: argparse.Namespace) -> int:
    try:
        if getattr(args, "errors", None) is not None:
            from ...core.decoder import Utf8Decoder

            Utf8Decoder(args.errors)  # reject unknown policies before touching files
        code: int = args.run(args)
    except CommandError as exc:
        warn(exc.message, exc.path)
        return exc.status
    except (LookupError, ValueError) as exc:
        if isinstance(exc, UnicodeError):
            raise
        warn(str(exc), _input_name(args))
        return EXIT_USAGE
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        name = exc.filename
        where = (
            None if name is None else os.fsdecode(name) if isinstance(name, bytes) else str(name)
        )
        warn(exc.strerror or str(exc), where)
        return EXIT_USAGE
    return code
