"""``utf8stream validate``: report every malformed unit, with its line and column."""

from __future__ import annotations

import argparse
import json
import sys

from ...core.decoder import Utf8Decoder
from ...core.events import DecoderStatistics, Malformed, MalformedKind
from ..files import open_binary
from ._common import EXIT_INVALID, EXIT_OK, EXIT_USAGE, chunks, with_final

_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


class LineColumnTracker:
    """Turns absolute byte offsets into 1-based ``line:column`` (column in characters).

    Fed the raw bytes in order; never holds more than counters.  A malformed unit counts
    as one character, like the U+FFFD that replaces it: every character and every unit
    starts with a byte that is not a continuation byte, except an unexpected
    continuation byte, which the caller reports with ``note_unit``.
    """

    def __init__(self) -> None:
        self.line = 1
        self._chars_in_line = 0
        self._pos = 0

    def advance(self, data: bytes, data_offset: int, to: int) -> None:
        """Count the bytes of ``data`` (starting at ``data_offset``) up to offset ``to``."""
        if to <= self._pos:
            return
        segment = data[self._pos - data_offset : to - data_offset]
        newlines = segment.count(b"\n")
        if newlines:
            self.line += newlines
            segment = segment[segment.rfind(b"\n") + 1 :]
            self._chars_in_line = 0
        self._chars_in_line += len(segment.translate(None, _CONTINUATION_BYTES))
        self._pos = to

    def locate(self, event: Malformed) -> tuple[int, int]:
        """Line and column of ``event``; call after ``advance`` up to its offset."""
        # A unit that began in the previous chunk has its lead byte counted already.
        column = self._chars_in_line + (event.offset >= self._pos)
        if event.kind is MalformedKind.UNEXPECTED_CONTINUATION:
            self._chars_in_line += 1
        return self.line, column


def _validate_one(path: str, args: argparse.Namespace, prefix: str) -> DecoderStatistics:
    """Report every unit of one input; return the decoder's statistics."""
    events: list[Malformed] = []
    decoder = Utf8Decoder("replace", on_malformed=events.append)
    tracker = LineColumnTracker()
    out = sys.stdout
    name = "<stdin>" if path == "-" else path
    quiet = args.summary
    with open_binary(path, "rb") as stream:
        for chunk, final in with_final(chunks(stream)):
            offset = decoder.position
            decoder.decode(chunk, final)
            for event in events if not quiet else ():
                tracker.advance(chunk, offset, event.offset)
                line, column = tracker.locate(event)
                if args.json:
                    record = {
                        "file": name,
                        "offset": event.offset,
                        "line": line,
                        "column": column,
                        "kind": event.kind.name,
                        "bytes": event.data.hex(" "),
                    }
                    out.write(json.dumps(record) + "\n")
                else:
                    out.write(
                        f"{prefix}{event.offset} {line}:{column} {event.kind.name} "
                        f"{event.data.hex(' ')}\n"
                    )
            tracker.advance(chunk, offset, offset + len(chunk))
            events.clear()
    return decoder.statistics()


def _print_summary(name: str, stats: DecoderStatistics, as_json: bool) -> None:
    counts = {kind.name: n for kind, n in stats.malformed.items()}
    if as_json:
        record = {
            "file": name,
            "summary": True,
            "bytes": stats.bytes_fed,
            "characters": stats.chars_out,
            "malformed": stats.malformed_total,
            "by_kind": counts,
        }
        print(json.dumps(record))
        return
    verdict = "valid" if not stats.malformed_total else f"{stats.malformed_total} malformed"
    detail = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
    print(
        f"{name}: {verdict}; {stats.bytes_fed} bytes, {stats.chars_out} characters"
        + (f" ({detail})" if detail else "")
    )


def _cmd_validate(args: argparse.Namespace) -> int:
    status = EXIT_OK
    many = len(args.files) > 1
    for path in args.files:
        name = "<stdin>" if path == "-" else path
        try:
            stats = _validate_one(path, args, f"{name}: " if many else "")
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            print(f"utf8stream: {name}: {exc.strerror or exc}", file=sys.stderr)
            status = EXIT_USAGE
            continue
        if args.summary:
            _print_summary(name, stats, args.json)
        if stats.malformed_total and status == EXIT_OK:
            status = EXIT_INVALID
    return status


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = sub.add_parser(
        "validate",
        help="report every malformed unit",
        description="Print each malformed unit as 'offset line:column kind hex-bytes' "
        "(prefixed with 'FILE: ' when several files are given). Exit status 0 when every "
        "input is valid UTF-8, 1 when one is not, 2 when one cannot be read.",
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="input files, or - for stdin")
    validate.add_argument("--json", action="store_true", help="one JSON object per line")
    validate.add_argument(
        "--summary", action="store_true", help="print counts by kind instead of each unit"
    )
    validate.set_defaults(run=_cmd_validate)
