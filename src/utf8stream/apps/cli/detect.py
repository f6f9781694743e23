"""``utf8stream detect``: which encoding each input is in, from as few bytes as make it safe."""

from __future__ import annotations

import argparse
import sys

from ...detect import DEFAULT_MAX_LOOKAHEAD, Detection, EncodingDetector
from ..files import open_binary
from ._common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Parser,
    chunks,
    warn,
)


def _detect_one(path: str, max_lookahead: int) -> Detection:
    """Read ``path`` until the detector decides (at most ``max_lookahead`` bytes and one
    chunk more), never to its end."""
    detector = EncodingDetector(max_lookahead)
    with open_binary(path, "rb") as stream:
        for chunk in chunks(stream):
            found = detector.feed(chunk)
            if found is not None:
                return found
    return detector.finish()


def _format(name: str, found: Detection, as_json: bool) -> str:
    if as_json:
        import json  # here: the other commands start without it

        record = {
            "file": name,
            "encoding": found.encoding,
            "is_text": found.is_text,
            "confidence": found.confidence,
            "looked_at": found.looked_at,
            "bom_length": found.bom_length,
            "reason": found.reason,
        }
        return json.dumps(record, ensure_ascii=False) + "\n"
    what = found.encoding if found.encoding is not None else "not text"
    bom = f", byte-order mark of {found.bom_length} bytes" if found.bom_length else ""
    return (
        f"{name}: {what} (confidence {found.confidence:.2f}, looked at {found.looked_at} "
        f"bytes{bom}): {found.reason}\n"
    )


def _cmd_detect(args: argparse.Namespace) -> int:
    files: list[str] = args.files or ["-"]
    status = EXIT_OK
    for path in files:
        name = "<stdin>" if path == "-" else path
        try:
            found = _detect_one(path, args.max_lookahead)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            warn(exc.strerror or str(exc), path)
            status = EXIT_USAGE
            continue
        sys.stdout.write(_format(name, found, args.json))
        sys.stdout.flush()
        if not found.is_text:
            warn("not text", path)
            if status == EXIT_OK:
                status = EXIT_INVALID
    return status


def _lookahead(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 4:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of bytes, 4 or more, not {text!r}"
        )
    return value


def add_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    detect = sub.add_parser(
        "detect",
        help="say which encoding each input is in",
        description="Print, for each input, the encoding it is in (a Python codec name), "
        "the confidence, how many bytes the decision rests on and why: a byte-order mark, "
        "the rules that always hold (ASCII and valid UTF-8 are UTF-8), the bytes that ruled "
        "the other encodings out, the statistics that chose among the rest. Only as much of "
        "each input is read as the decision needs.",
        epilog="Exit status: 0 every input is text, 1 one is not (binary: said on stderr "
        "too), 2 one cannot be read (it wins over 1). Errors go to stderr as "
        "'utf8stream: FILE: what went wrong'.",
    )
    detect.add_argument(
        "files", nargs="*", metavar="FILE", help="input files, or - for stdin (the default)"
    )
    detect.add_argument("--json", action="store_true", help="one JSON object per input")
    detect.add_argument(
        "--max-lookahead",
        type=_lookahead,
        default=DEFAULT_MAX_LOOKAHEAD,
        metavar="BYTES",
        help=f"decide after at most this many bytes (default: {DEFAULT_MAX_LOOKAHEAD})",
    )
    detect.set_defaults(run=_cmd_detect)
