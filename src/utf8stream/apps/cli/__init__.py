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
    except KeyboardInterrupt:
        if program:  # the program is exiting: a second signal must not change that
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return _EXIT_SIGINT


def _exit_terminated(signum: int, frame: object) -> None:
    raise SystemExit(_EXIT_SIGTERM)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    from ._main import build_parser as build

    return build()
