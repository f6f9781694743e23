"""The ``utf8stream`` command line (one module per subcommand)."""

from __future__ import annotations

import signal
import threading

TYPE_CHECKING = False  # ``typing`` itself is not imported for this
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

__all__ = ["build_parser", "main"]

#: Ctrl-C and SIGTERM, as shells report them (``_common``'s, not imported for two numbers).
_EXIT_SIGINT, _EXIT_SIGTERM = 130, 143


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; ``argv`` None: ``sys.argv``, as the program itself.

    The command line's own modules load here, under a guard: a Ctrl-C or SIGTERM that
    lands before ``_main.main`` has its handling in place ends the program as one that
    lands after does, with status 130 or 143 and no traceback (nothing is open yet).
    """
    program = False
    try:
        program = argv is None and threading.current_thread() is threading.main_thread()
        if program:
            signal.signal(signal.SIGTERM, _exit_terminated)
        from ._main import main as run

        return run(argv)
    except BaseException as exc:
        status = _signal_status(exc)
        if status is None:
            raise
        if program:  # the program is exiting: a second signal must not change that
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return status


def _exit_terminated(signum: int, frame: object) -> None:
    raise SystemExit(_EXIT_SIGTERM)


def _signal_status(exc: BaseException | None) -> int | None:
    """130 or 143 if ``exc`` is Ctrl-C or SIGTERM, or was raised because of one: Python
    3.11 wraps an exception raised while a class is made (a descriptor's ``__set_name__``,
    in a module being imported) in a ``RuntimeError`` whose cause it is."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return _EXIT_SIGINT
        if isinstance(exc, SystemExit) and exc.code == _EXIT_SIGTERM:
            return _EXIT_SIGTERM
        exc = exc.__cause__ or exc.__context__
    return None


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    from ._main import build_parser as build

    return build()
