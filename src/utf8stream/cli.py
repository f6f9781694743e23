"""The ``utf8stream`` command line: iconv-like conventions, streaming in constant memory.

Exit status: 0 success (and valid input for ``validate``), 1 invalid input (``validate``,
or ``decode --errors strict``), 2 usage errors and files that cannot be read or written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from .decoder import Utf8Decoder
from .encoder import Utf8Encoder
from .events import DecoderStatistics, Malformed, MalformedKind, Utf8DecodeError
from .files import open_binary, transcode_file

__all__ = ["LineColumnTracker", "main"]

CHUNK_SIZE = 1 << 16
EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
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


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK_SIZE):
        yield chunk


def _validate_one(path: str, args: argparse.Namespace, prefix: str) -> DecoderStatistics:
    """Report every unit of one input; return the decoder's statistics."""
    events: list[Malformed] = []
    decoder = Utf8Decoder("replace", on_malformed=events.append)
    tracker = LineColumnTracker()
    out = sys.stdout
    name = "<stdin>" if path == "-" else path
    quiet = args.summary
    with open_binary(path, "rb") as stream:
        for chunk, final in _with_final(_chunks(stream)):
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


def _with_final(chunks: Iterator[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Pair each chunk with whether it is the last, so the last decode flushes."""
    previous: bytes | None = None
    for chunk in chunks:
        if previous is not None:
            yield previous, False
        previous = chunk
    yield (previous or b""), True


def _output_errors(errors: str) -> str:
    """How to encode decoded text so that the policy's escapes round-trip."""
    return errors if errors in ("surrogateescape", "surrogatepass", "optu-8") else "strict"


def _cmd_decode(args: argparse.Namespace) -> int:
    decoder = Utf8Decoder(args.errors)
    encode = Utf8Encoder(_output_errors(args.errors)).encode
    with open_binary(args.file, "rb") as src, open_binary(args.output, "wb") as dst:
        for chunk, final in _with_final(_chunks(src)):
            try:
                text = decoder.decode(chunk, final)
            except Utf8DecodeError as exc:
                dst.write(encode(exc.partial, True))
                dst.flush()
                print(f"utf8stream: {args.file}: {exc}", file=sys.stderr)
                return EXIT_INVALID
            dst.write(encode(text, final))
    return EXIT_OK


class _ProgressBar:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.drawn < 0.1 and done < total:
            return
        self.drawn = now
        rate = done / max(now - self.started, 1e-9) / 2**20
        if total:
            width = 30
            filled = width * done // total
            bar = "#" * filled + "-" * (width - filled)
            sys.stderr.write(
                f"\r[{bar}] {100 * done // total:3d}% {done / 2**20:8.1f} MiB {rate:7.1f} MiB/s"
            )
        else:
            sys.stderr.write(f"\r{done / 2**20:8.1f} MiB {rate:7.1f} MiB/s")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


def _cmd_transcode(args: argparse.Namespace) -> int:
    bar = _ProgressBar() if sys.stderr.isatty() and args.input != "-" else None
    try:
        summary = transcode_file(
            args.input,
            args.output,
            source=args.from_code,
            target=args.to_code,
            errors=args.errors,
            bom=args.bom,
            workers=args.jobs,
            progress=bar,
        )
    except Utf8DecodeError as exc:
        print(f"utf8stream: {args.input}: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except UnicodeError as exc:
        print(f"utf8stream: {args.input}: {exc}", file=sys.stderr)
        return EXIT_INVALID
    finally:
        if bar is not None:
            bar.close()
    if args.verbose:
        kinds = ", ".join(f"{k.name} {n}" for k, n in summary.malformed.items())
        print(
            f"utf8stream: {summary.bytes_in} bytes in, {summary.bytes_out} bytes out, "
            f"{summary.characters} characters, {summary.malformed_total} malformed"
            + (f" ({kinds})" if kinds else ""),
            file=sys.stderr,
        )
    return EXIT_OK


def _cmd_tail(args: argparse.Namespace) -> int:
    import anyio  # the async layers load only for the commands that need them

    return anyio.run(_tail, args)


async def _tail(args: argparse.Namespace) -> int:
    """Print lines of a log file; with -f/-F keep following it (by name)."""
    from .tail import FollowCheckpoint, follow, write_checkpoint

    checkpoint = None
    if args.checkpoint and os.path.exists(args.checkpoint):
        with open(args.checkpoint, encoding="utf-8") as f:
            checkpoint = FollowCheckpoint.from_json(f.read())
    start: str | int = args.offset if args.offset is not None else "end"
    follower = follow(
        args.file,
        start=start,
        last_lines=args.lines if args.offset is None else 0,
        checkpoint=checkpoint,
        poll_interval=args.interval,
        until_eof=not args.follow,
    )
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="utf8stream",
        description="Validate, repair and transcode UTF-8 streams in constant memory.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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

    decode = sub.add_parser(
        "decode",
        help="write repaired UTF-8",
        description="Decode the input and write it back as UTF-8, malformed units "
        "handled by the error policy (default: replace each with U+FFFD).",
    )
    decode.add_argument("file", metavar="FILE", help="input file, or - for stdin")
    decode.add_argument(
        "--errors",
        default="replace",
        metavar="POLICY",
        help="replace (default), strict, ignore, backslashreplace, surrogateescape, "
        "surrogatepass, or a registered codecs error handler",
    )
    decode.add_argument("-o", "--output", default="-", metavar="OUT", help="default: stdout")
    decode.set_defaults(run=_cmd_decode)

    transcode = sub.add_parser(
        "transcode",
        help="convert between encodings, lazily",
        description="Convert IN from one encoding to another (iconv-like; - is stdin or "
        "stdout). The UTF-8 side (utf-8, wtf-8, cesu-8, mutf-8) goes through utf8stream's "
        "own decoder and encoder. Exit status 1 if --errors strict meets a malformed "
        "sequence, 2 for unknown encodings, bad options or unreadable files.",
    )
    transcode.add_argument("input", metavar="IN", help="input file, or - for stdin")
    transcode.add_argument("output", metavar="OUT", help="output file, or - for stdout")
    transcode.add_argument("-f", "--from-code", default="utf-8", metavar="ENC")
    transcode.add_argument("-t", "--to-code", default="utf-8", metavar="ENC")
    transcode.add_argument(
        "--errors", default="replace", metavar="POLICY", help="default: replace"
    )
    transcode.add_argument(
        "--bom",
        default="keep",
        choices=["keep", "strip", "add", "detect"],
        help="what to do with a byte order mark (default: keep)",
    )
    transcode.add_argument(
        "-j", "--jobs", type=int, default=1, metavar="N", help="worker processes"
    )
    transcode.add_argument(
        "-v", "--verbose", action="store_true", help="print a summary on stderr"
    )
    transcode.set_defaults(run=_cmd_transcode)

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "errors", None) is not None:
            Utf8Decoder(args.errors)  # reject unknown policies before touching files
        code: int = args.run(args)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
