"""``utf8stream validate``: report every malformed unit, with its line and column."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

from ...core.decoder import Utf8Decoder
from ...core.events import DecoderStatistics, Malformed, MalformedKind
from ...core.variants import VARIANTS, get_variant
from .._linecol import LineColumnTracker
from ..files import open_binary
from ._common import (
    EXIT_BROKEN_PIPE,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    Parser,
    chunks,
    positive_int,
    silence_stdout,
    warn,
)
from ._dask import DEFAULT_BLOCKSIZE, add_dask_option, dask_scheduler


class _LimitReached(Exception):
    """Raised from the decoder's callback: the units asked for are all reported."""


@dataclass
class _FileReport:
    """What one input turned out to be (``stopped``: reading ended at the limit)."""

    statistics: DecoderStatistics | None = None
    counts: Counter[str] = field(default_factory=Counter)
    stopped_at: int | None = None

    @property
    def malformed(self) -> int:
        return sum(self.counts.values())


def _validate_one(path: str, args: argparse.Namespace, prefix: str, report: _FileReport) -> None:
    """Report the units of one input into ``report`` (and on stdout), up to the limit."""
    events: list[Malformed] = []
    limit: int | None = 1 if args.quiet else args.max_errors

    def collect(event: Malformed) -> None:
        events.append(event)
        if limit is not None and report.malformed + len(events) >= limit:
            raise _LimitReached

    decoder = Utf8Decoder("replace", on_malformed=collect, variant=args.variant)
    tracker = LineColumnTracker(joins_pairs=get_variant(args.variant).join_pairs)
    out = sys.stdout
    name = "<stdin>" if path == "-" else path
    listing = not (args.summary or args.quiet)

    # The bytes from where the tracker stands to the end of what was read: it only
    # passes bytes whose units are reported (a CESU-8 decoder holds a high surrogate
    # until it sees what follows, maybe in the next chunk), so that each unit is
    # located where it starts.
    window, window_offset = b"", 0

    def feed(chunk: bytes, final: bool) -> bool:
        """Decode and report one chunk; False once the limit is reached."""
        nonlocal window, window_offset
        window += chunk
        try:
            decoder.decode(chunk, final)
        except _LimitReached:
            last = events[-1]
            report.stopped_at = last.offset + len(last.data)
        for event in events:
            report.counts[event.kind.name] += 1
            if listing:
                tracker.advance(window, window_offset, event.offset)
                out.write(_format_unit(event, tracker.locate(event), name, prefix, args.json))
        events.clear()
        settled = decoder.position - decoder.buffered
        tracker.advance(window, window_offset, settled)
        window, window_offset = window[settled - window_offset :], settled
        return report.stopped_at is None

    # Each chunk is decoded as soon as it is read (not held back to learn whether it is
    # the last), so that a pipe or FIFO is reported as it comes and -q stops at once.
    with open_binary(path, "rb") as stream:
        for chunk in chunks(stream):
            if not feed(chunk, False):
                return
        if not feed(b"", True):
            return
    report.statistics = decoder.statistics()


def _format_unit(
    event: Malformed, where: tuple[int, int], name: str, prefix: str, as_json: bool
) -> str:
    line, column = where
    if as_json:
        record = {
            "file": name,
            "offset": event.offset,
            "line": line,
            "column": column,
            "kind": event.kind.name,
            "bytes": event.data.hex(" "),
        }
        return _json(record) + "\n"
    return f"{prefix}{event.offset} {line}:{column} {event.kind.name} {event.data.hex(' ')}\n"


def _print_summary(name: str, report: _FileReport, as_json: bool) -> None:
    stats = report.statistics
    counts = dict(report.counts)
    if as_json:
        record: dict[str, object] = {"file": name, "summary": True}
        if stats is None:  # stopped at --max-errors: the rest was not read
            record.update(stopped_at=report.stopped_at)
        else:
            record.update(bytes=stats.bytes_fed, characters=stats.chars_out)
        record.update(malformed=report.malformed, by_kind=counts)
        print(_json(record))
        return
    detail = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
    if stats is None:
        head = f"{report.malformed} malformed, stopped at byte {report.stopped_at}"
    else:
        verdict = "valid" if not report.malformed else f"{report.malformed} malformed"
        head = f"{verdict}; {stats.bytes_fed} bytes, {stats.chars_out} characters"
    print(f"{name}: {head}" + (f" ({detail})" if detail else ""))


def _cmd_validate(args: argparse.Namespace) -> int:
    if args.dask is not None:
        return _validate_on_dask(args)
    if args.blocksize is not None:
        raise CommandError("--blocksize is for --dask")
    unreadable = invalid = False
    many = len(args.files) > 1
    try:
        for path in args.files:
            name = "<stdin>" if path == "-" else path
            report = _FileReport()
            try:
                _validate_one(path, args, f"{name}: " if many else "", report)
            except OSError as exc:
                if isinstance(exc, BrokenPipeError):
                    raise
                unreadable = True
                _report_unreadable(path, name, exc, args)
                continue
            finally:
                invalid = invalid or report.malformed > 0
            if args.summary and not args.quiet:
                _print_summary(name, report, args.json)
            sys.stdout.flush()  # a closed pipe shows up here, while the verdict is known
            if args.quiet and invalid:
                break  # the answer is known: the rest cannot make it valid
    except BrokenPipeError:
        # Like ``grep -q``: invalid input already seen is a sure answer, whatever the rest
        # holds.  Otherwise the reading or the report did not finish, and the cut pipe
        # must not pass for "valid": 141, as for a program killed by SIGPIPE.
        silence_stdout()
        return EXIT_USAGE if unreadable else EXIT_INVALID if invalid else EXIT_BROKEN_PIPE
    return EXIT_USAGE if unreadable else EXIT_INVALID if invalid else EXIT_OK


def _validate_on_dask(args: argparse.Namespace) -> int:
    """``--dask``: every file read in blocks on the cluster, then reported in order.

    Each file is read whole (``-q`` and ``--max-errors`` limit what is printed, not what
    is read); a name that matches nothing is reported and the others go on.
    """
    if "-" in args.files:
        raise CommandError("--dask reads files or URLs, not the standard input")
    from ..dask import validation_reports  # imports Dask: only for --dask

    limit: int | None = 0 if args.quiet or args.summary else args.max_errors
    reports: list[Any] = []
    unreadable = False
    with dask_scheduler(args.dask):
        for name in args.files:
            try:
                reports += validation_reports(
                    name,
                    variant=args.variant,
                    blocksize=args.blocksize or DEFAULT_BLOCKSIZE,
                    limit=limit,
                )
            except OSError as exc:
                unreadable = True
                _report_unreadable(name, name, exc, args)
        results: list[tuple[Any, list[Any]]] = list(_compute(*reports))
    many = len(results) > 1
    invalid = False
    for summary, records in results:
        invalid = invalid or not summary.valid
        if args.quiet:
            continue
        prefix = f"{summary.path}: " if many else ""
        for record in records:
            event = Malformed(record.offset, record.data, MalformedKind[record.kind])
            where = (record.line, record.column)
            sys.stdout.write(_format_unit(event, where, summary.path, prefix, args.json))
        if args.summary:
            report = _FileReport(counts=Counter(summary.malformed))
            report.statistics = DecoderStatistics(
                bytes_fed=summary.bytes, chars_out=summary.characters
            )
            _print_summary(summary.path, report, args.json)
    sys.stdout.flush()
    return EXIT_USAGE if unreadable else EXIT_INVALID if invalid else EXIT_OK


def _compute(*delayed: Any) -> Any:
    import dask

    return cast(Any, dask).compute(*delayed)


def _json(record: dict[str, object]) -> str:
    import json  # here: the other commands start without it

    return json.dumps(record)


def _report_unreadable(path: str, name: str, exc: OSError, args: argparse.Namespace) -> None:
    message = exc.strerror or str(exc)
    warn(message, path)
    if args.json and not args.quiet:
        print(_json({"file": name, "error": message, "errno": exc.errno}))


def add_parser(sub: argparse._SubParsersAction[Parser]) -> None:
    validate = sub.add_parser(
        "validate",
        help="report every malformed unit",
        description="Print each malformed unit as 'offset line:column kind hex-bytes' "
        "(prefixed with 'FILE: ' when several files are given; the column counts "
        "characters, a malformed unit as one).",
        epilog="Exit status: 0 every input is valid, 1 one is not, 2 one cannot be read "
        "(it wins over 1), 130 / 143 interrupted by Ctrl-C / SIGTERM. When stdout is a "
        "pipe closed early (| head -1): 1 if invalid input was already seen, else 141 "
        "(the input was not all read, so it is not called valid). Errors go to stderr as "
        "'utf8stream: FILE: what went wrong'; with --json an unreadable file is also a "
        'record {"file": ..., "error": ..., "errno": ...} on stdout.',
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="input files, or - for stdin")
    validate.add_argument("--json", action="store_true", help="one JSON object per line")
    validate.add_argument(
        "--summary", action="store_true", help="print counts by kind instead of each unit"
    )
    validate.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print nothing on stdout, only set the exit status; stop reading at the first "
        "malformed unit (errors about unreadable files still go to stderr)",
    )
    validate.add_argument(
        "--max-errors",
        type=positive_int,
        metavar="N",
        help="stop reporting and reading a file after its first N malformed units (like "
        "grep -m); the exit status is 1",
    )
    validate.add_argument(
        "--variant",
        default="utf-8",
        choices=list(VARIANTS),
        help="the UTF-8 flavour the input must follow (default: utf-8)",
    )
    add_dask_option(validate)
    validate.set_defaults(run=_cmd_validate)
