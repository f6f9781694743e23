"""The ``utf8stream`` command line (one module per subcommand)."""

from __future__ import annotations

TYPE_CHECKING = False  # ``typing`` itself is not imported for this
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

__all__ = ["build_parser", "main"]

#: Ctrl-C, as shells report it (``_common.EXIT_SIGINT``, not imported for one number).
_EXIT_SIGINT = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; ``argv`` None: ``sys.argv``, as the program itself.

    The command line's own modules load here, under the guard: a Ctrl-C that lands
    before ``_main.main`` has its handling in place ends the program as one that lands
    after does, with status 130 and no traceback.
    """
    try:
        from ._main import main as run

        return run(argv)
    except KeyboardInterrupt:
        return _EXIT_SIGINT


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    from ._main import build_parser as build

    return build()
