"""The ``utf8stream`` command line: iconv-like conventions, streaming in constant memory.

Exit status: 0 success (and valid input for ``validate``), 1 invalid input (``validate``,
or ``decode --errors strict``), 2 usage errors and files that cannot be read or written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ...core.decoder import Utf8Decoder
from . import tail, transcode, validate
from ._common import EXIT_OK, EXIT_USAGE, CommandError, warn


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="utf8stream",
        description="Validate, repair and transcode UTF-8 streams in constant memory.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate.add_parser(sub)
    transcode.add_parsers(sub)
    tail.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
