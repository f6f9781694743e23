"""``utf8stream decode`` and ``transcode``: repair and convert, iconv-like.

Malformed input, as iconv: ``transcode`` stops at the first malformed unit (exit status
1, its byte offset on stderr) unless told what to do with it (``--errors``; ``-c`` and
``ENC//IGNORE`` drop it, and unmappable characters too).  ``decode`` is a decoder and
replaces by default.  Whatever repaired the input is said in one line on stderr (how
many units, where the first was) unless ``-q``: nothing is changed silently.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import encodings
import encodings.aliases
import os
import pkgutil
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ...core.autodecode import AutoDecoder, NotTextError, is_auto
from ...core.autodoubt import EncodingDoubt
from ...core.decoder import Utf8Decoder
from ...core.encoder import Utf8Encoder
from ...core.events import Malformed, Utf8DecodeError
from ...core.variants import VARIANTS
from ..files import (
    SameFileError,
    TranscodeSummary,
    UnmappableCharacterError,
    WorkerError,
    open_binary,
    open_output,
    transcode_file,
)
from ._common import (
    EXIT_INVALID,
    EXIT_OK,
    CommandError,
    Parser,
    ProgressBar,
    chunks,
    positive_int,
    progress_wanted,
    warn,
    with_final,
)
from ._dask import DEFAULT_BLOCKSIZE, add_dask_option, dask_scheduler
from ._transforms import add_transform_options, transform_of, transforms_of

if TYPE_CHECKING:
    from ...core.detector import Detection

_SAFETY = (
    "An output file is written to a temporary file in its directory and renamed over OUT "
    "only when the run succeeds: after an error, Ctrl-C or SIGTERM, OUT is as it was and "
    "the temporary file is gone (an existing OUT keeps its permission bits). OUT may not "
    "be the input file (exit status 2). Standard output is written as the run goes."
)


def _output_errors(errors: str) -> str:
    """How to encode decoded text so that the policy's escapes round-trip."""
    return errors if errors in ("surrogateescape", "surrogatepass", "optu-8") else "strict"


@contextmanager
def _file_errors(input_path: str, output_path: str) -> Iterator[None]:
    """Failures of the files themselves, as one line each (exit status 2)."""
    # Under ``ulimit -f`` a write past the limit kills the process (SIGXFSZ) before any
    # cleanup; ignored, the write fails with EFBIG and the temporary file is removed.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        yield
    except SameFileError as exc:
        raise CommandError(str(exc), output_path) from None
    except WorkerError as exc:
        raise CommandError(str(exc), input_path) from None
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise CommandError(exc.strerror or str(exc), exc.filename or input_path) from None


class _FirstMalformed:
    """``on_malformed`` keeping the first unit (the notice and the error name it)."""

    def __init__(self) -> None:
        self.event: Malformed | None = None

    def __call__(self, event: Malformed) -> None:
        if self.event is None:
            self.event = event

    @property
    def offset(self) -> int | None:
        return None if self.event is None else self.event.offset


def _illegal_input(exc: UnicodeDecodeError, first: Malformed | None) -> str:
    """iconv's message for a malformed unit under ``--errors strict``, with its bytes
    and what is wrong with them."""
    if isinstance(exc, Utf8DecodeError):
        offset, data, why = exc.offset, exc.malformed.data, exc.kind.reason
    elif first is not None:
        # Said once: some codec paths add the offset to the reason.
        why = exc.reason.split(" (the unit at byte offset")[0]
        offset, data = first.offset, first.data
    else:
        return f"illegal input sequence: {exc}"
    return f"illegal input sequence at position {offset} ({data.hex(' ')}: {why})"


def _repair_notice(count: int, first: int | None, errors: str, how: str) -> str:
    """The one line that says malformed input was repaired, and how."""
    done = {"replace": "replaced with U+FFFD", "ignore": "dropped"}.get(errors, "handled")
    units = "unit" if count == 1 else "units"
    where = "" if first is None else f", the first at byte offset {first}"
    return f"{count} malformed input {units} {done} ({how}){where}"


def _cmd_decode(args: argparse.Namespace) -> int:
    first = _FirstMalformed()
    auto = is_auto(args.from_code)
    if not auto and _variant(args.from_code) != "utf-8":
        raise CommandError(f"decode reads UTF-8 or -f auto, not {args.from_code!r}: see transcode")
    rescan = not auto and args.errors != "strict" and _regular_file(args.file)  # _first_unit
    decoder: Utf8Decoder | AutoDecoder = (
        AutoDecoder(
            args.errors, on_malformed=first, on_doubt=lambda d: warn(_doubted(d), args.file)
        )
        if auto
        else Utf8Decoder(args.errors, on_malformed=None if rescan else first)
    )
    encode = Utf8Encoder(_output_errors(args.errors)).encode
    transform = transform_of(args)
    with (
        _file_errors(args.file, args.output),
        open_binary(args.file, "rb") as src,
        open_output(args.output, args.file) as output,
    ):
        dst = sys.stdout.buffer if output is None else output.file
        for chunk, final in with_final(chunks(src)):
            try:
                text = decoder.decode(chunk, final)
            except Utf8DecodeError as exc:
                if output is not None:
                    raise _Invalid(exc) from None  # the output file stays as it was
                partial = (
                    exc.partial if transform is None else transform.transform(exc.partial, True)
                )
                dst.write(encode(partial, True))
                dst.flush()
                warn(_illegal_input(exc, None), args.file)
                return EXIT_INVALID
            if transform is not None:
                text = transform.transform(text, final)
            dst.write(encode(text, final))
    if isinstance(decoder, AutoDecoder) and args.verbose and decoder.detection is not None:
        warn(_detected(decoder.detection), args.file)
    repaired = decoder.statistics().malformed_total
    if repaired and not args.quiet:
        offset = _first_unit(args.file, "utf-8") if rescan else first.offset
        warn(_repair_notice(repaired, offset, args.errors, f"--errors {args.errors}"), args.file)
    return EXIT_OK


class _Invalid(Exception):
    """Invalid input under a strict policy: leave the output block, then exit 1."""

    def __init__(self, error: Utf8DecodeError) -> None:
        super().__init__(str(error))
        self.error = error


def _decode_command(args: argparse.Namespace) -> int:
    try:
        return _cmd_decode(args)
    except _Invalid as exc:
        warn(_illegal_input(exc.error, None), args.file)
        return EXIT_INVALID
    except UnicodeDecodeError as exc:  # a codec detected by -f auto, under --errors strict
        warn(_illegal_input(exc, None), args.file)
        return EXIT_INVALID
    except NotTextError as exc:  # the output file, if any, was left as it was
        warn(str(exc), args.file)
        return EXIT_INVALID


def _detected(detection: Detection) -> str:
    """What ``-f auto`` found, for ``--verbose``."""
    return (
        f"detected {detection.encoding} (confidence {detection.confidence:.2f}, "
        f"{detection.looked_at} bytes looked at: {detection.reason})"
    )


def _doubted(doubt: EncodingDoubt) -> str:
    """What ``-f auto`` doubts about its choice (``EncodingDoubt``)."""
    return (
        f"byte {doubt.offset} is not valid {doubt.chosen}, the encoding detected;"
        f" {doubt.candidate} would decode it: {doubt.chosen} is kept"
    )


def _target_and_policies(args: argparse.Namespace) -> tuple[str, str, str, str]:
    """The target encoding, the policy for malformed input, iconv's ``ENC//TRANSLIT``,
    ``ENC//IGNORE`` and ``-c`` as a policy for unmappable characters, and what chose
    the input policy (for the notice).

    As iconv: malformed input stops the run, unless ``-c`` or ``//IGNORE`` drop it (and
    unmappable characters with it); ``--errors`` chooses for malformed input whatever
    the rest says."""
    name, *suffixes = args.to_code.split("//")
    flags = {s.upper() for s in suffixes if s}
    unknown = flags - {"TRANSLIT", "IGNORE"}
    if unknown:
        raise CommandError(f"unknown suffix //{min(unknown)} in {args.to_code!r}")
    drop = args.drop or "IGNORE" in flags
    if "TRANSLIT" in flags:
        unmappable = "translit-ignore" if drop else "translit"
    else:
        unmappable = "ignore" if drop else "strict"
    if args.errors is not None:
        return name, args.errors, unmappable, f"--errors {args.errors}"
    if drop:
        return name, "ignore", unmappable, "-c" if args.drop else "//IGNORE"
    return name, "strict", unmappable, ""


def _first_unit(path: str, source: str) -> int | None:
    """Where the first malformed unit of a UTF-8-family file is: read again up to it.

    A file that can be read again is, rather than an ``on_malformed`` callback kept for
    the whole run: a call in Python for each of what can be millions of units, where the
    decoder otherwise counts them in C (``benchmarks/bench_files.py``'s repair of the
    corrupted corpus), and the workers of a parallel run would send the parent them all.
    """
    decoder = Utf8Decoder("strict", variant=source)
    with open(path, "rb") as f:
        for chunk, final in with_final(chunks(f)):
            try:
                decoder.decode(chunk, final)
            except Utf8DecodeError as exc:
                return exc.offset
    return None


def _regular_file(path: str) -> bool:
    """Whether ``path`` names a file that can be read again (``-`` is standard input)."""
    return path != "-" and os.path.isfile(path)


def _variant(encoding: str) -> str | None:
    """The UTF-8 variant ``encoding`` names, if it names one."""
    with contextlib.suppress(LookupError):
        name = codecs.lookup(encoding).name.replace("_", "-")
        return name if name in VARIANTS else None
    return None


def _summary_line(summary: TranscodeSummary, policy: str) -> str:
    kinds = ", ".join(
        f"{k.name} {n}"
        for k, n in sorted(summary.malformed.items(), key=lambda item: item[0].name)
    )
    done = {
        "ignore": "dropped",
        "translit": "transliterated",
        "translit-ignore": "transliterated or dropped",
    }.get(policy, "")
    return (
        (_detected(summary.detection) + "; " if summary.detection is not None else "")
        + f"{summary.bytes_in} bytes in, {summary.bytes_out} bytes out, "
        f"{summary.characters} characters, {summary.malformed_total} malformed input units"
        + (f" ({kinds})" if kinds else "")
        + f", {summary.unmappable} unmappable characters"
        + (f" {done}" if done else "")
    )


def _cmd_transcode(args: argparse.Namespace) -> int:
    if args.list:
        for names in _known_encodings():
            print(", ".join(names))
        return EXIT_OK
    if args.output is not None and args.out is not None:
        raise CommandError(f"two outputs given: {args.out} and -o {args.output}")
    output = args.output or args.out or "-"
    target, errors, policy, how = _target_and_policies(args)
    source = args.from_code.split("//")[0]
    if args.dask is not None:
        if is_auto(source):
            raise CommandError("-f auto is not available with --dask: name the encoding")
        if args.fix_mojibake or args.normalize is not None:
            raise CommandError("--fix-mojibake and --normalize are not available with --dask")
        return _transcode_on_dask(args, output, (source, target), (errors, policy, how))
    if args.blocksize is not None:
        raise CommandError("--blocksize is for --dask")
    bar = ProgressBar() if args.input != "-" and progress_wanted(output) else None
    variant = _variant(source)
    detected = args.bom == "detect"  # the codec a byte-order mark chooses may be another
    utf8 = variant is not None and not detected
    # The first repaired unit of a file is found again afterwards (see _first_unit); a
    # UTF-8 family decoder's strict error says where it is; other codecs' say where in
    # the chunk: the callback keeps the unit, with its offset in the input.
    rescan = utf8 and errors != "strict" and _regular_file(args.input)
    first = _FirstMalformed()
    try:
        with _file_errors(args.input, output):
            summary = transcode_file(
                args.input,
                output,
                source=source,
                target=target,
                errors=errors,
                bom=args.bom,
                unmappable=policy,
                workers=args.jobs,
                progress=bar,
                on_malformed=None if rescan or (utf8 and errors == "strict") else first,
                on_doubt=lambda doubt: warn(_doubted(doubt), args.input),
                transforms=transforms_of(args),
            )
    except NotTextError as exc:
        warn(str(exc))  # it names the input
        return EXIT_INVALID
    except UnicodeError as exc:
        # Malformed input under --errors strict, or a character the target lacks.
        if isinstance(exc, UnmappableCharacterError):
            warn(str(exc), args.input)
        elif isinstance(exc, UnicodeDecodeError):
            warn(_illegal_input(exc, first.event), args.input)
        else:
            warn(f"{type(exc).__name__}: {exc}", args.input)
        return EXIT_INVALID
    finally:
        if bar is not None:
            bar.close()
    if summary.malformed_total and not args.quiet:
        offset = _first_unit(args.input, variant) if rescan and variant else first.offset
        warn(_repair_notice(summary.malformed_total, offset, errors, how), args.input)
    if args.verbose:
        warn(_summary_line(summary, policy))
    return EXIT_OK


def _transcode_on_dask(
    args: argparse.Namespace,
    output: str,
    source_target: tuple[str, str],
    policies: tuple[str, str, str],
) -> int:
    """``--dask``: IN (files, a glob, fsspec URLs) transcoded in blocks on the cluster,
    into OUT (a pattern with {name}, {stem} or {index} for several inputs).  The notice
    of repaired input names the first unit's offset where the input is a local file."""
    (source, target), (errors, policy, how) = source_target, policies
    variant = _variant(source) if args.bom != "detect" else None
    if "-" in (args.input, output):
        raise CommandError("--dask reads and writes files or URLs, not stdin or stdout")
    if args.jobs > 1:
        raise CommandError("--dask and -j are two ways to run in parallel: choose one")
    from ..dask import transcode_files  # imports Dask: only for --dask

    try:
        with _file_errors(args.input, output), dask_scheduler(args.dask):
            summaries = transcode_files(
                args.input,
                output,
                source=source,
                target=target,
                errors=errors,
                bom=args.bom,
                unmappable=policy,
                blocksize=args.blocksize or DEFAULT_BLOCKSIZE,
            )
    except UnmappableCharacterError as exc:
        warn(str(exc), args.input)
        return EXIT_INVALID
    except Utf8DecodeError as exc:
        warn(_illegal_input(exc, None), args.input)
        return EXIT_INVALID
    for name, summary in summaries.items():
        shown = name if len(summaries) > 1 else args.input
        if summary.malformed_total and not args.quiet:
            local = variant is not None and _regular_file(name)
            first = _first_unit(name, variant) if local and variant else None
            warn(_repair_notice(summary.malformed_total, first, errors, how), shown)
        if args.verbose:
            warn(_summary_line(summary, policy), name if len(summaries) > 1 else None)
    return EXIT_OK


def _known_encodings() -> list[list[str]]:
    """Every text encoding Python and utf8stream know: its name first, then aliases."""
    groups: dict[str, set[str]] = {name: set(v.aliases) for name, v in VARIANTS.items()}
    modules = {m.name for m in pkgutil.iter_modules(encodings.__path__)}
    aliases = encodings.aliases.aliases
    for name in sorted(modules | set(aliases.values())):
        try:
            info = codecs.lookup(name)
        except LookupError:
            continue  # a helper module of the package, not a codec
        canonical = info.name.replace("_", "-")
        if canonical in VARIANTS or not getattr(info, "_is_text_encoding", True):
            continue
        group = groups.setdefault(canonical, set())
        group.update(a for a, module in aliases.items() if module == name)
        if name.replace("_", "-") != canonical:
            group.add(name)
    return [[name, *sorted(groups[name] - {name})] for name in sorted(groups)]


def add_parsers(sub: argparse._SubParsersAction[Parser]) -> None:
    """The parsers of ``decode`` and ``transcode``."""
    _add_decode(sub)
    _add_transcode(sub)


def _add_decode(sub: argparse._SubParsersAction[Parser]) -> None:
    decode = sub.add_parser(
        "decode",
        help="write repaired UTF-8",
        description="Decode the input and write it back as UTF-8, malformed units "
        "handled by the error policy (default: replace each with U+FFFD; one line on "
        "stderr then says how many, and where the first was, unless -q). Exit status 1 "
        "if --errors strict meets a malformed unit (standard output then holds "
        "everything before it; an output file is left as it was), 2 for bad options "
        "and files that cannot be read or written. " + _SAFETY,
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
    decode.add_argument(
        "-f",
        "--from-code",
        default="utf-8",
        metavar="ENC",
        help="utf-8 (default), or auto: the encoding is detected on the first 64 KiB and the "
        "input decoded from it (input that is not text: exit status 1, no output file)",
    )
    decode.add_argument(
        "-v", "--verbose", action="store_true", help="with -f auto: say what was detected"
    )
    decode.add_argument(
        "-q", "--quiet", action="store_true", help="no notice of repaired input on stderr"
    )
    add_transform_options(decode, "the decoded text")
    decode.set_defaults(run=_decode_command)


def _add_transcode(sub: argparse._SubParsersAction[Parser]) -> None:
    transcode = sub.add_parser(
        "transcode",
        help="convert between encodings, lazily",
        description="Convert IN from one encoding to another, as iconv does (IN and "
        "OUT default to stdin and stdout; - names them too). The UTF-8 side (utf-8, "
        "wtf-8, cesu-8, mutf-8, utf-8z) goes through utf8stream's own decoder and "
        "encoder. As iconv: malformed input stops the run with its byte offset (exit "
        "status 1) unless -c or ENC//IGNORE drop it or --errors says what to do (replace: "
        "U+FFFD); input so repaired is said in one line on stderr (how many units, the "
        "first one's offset) unless -q. For a character the target encoding cannot "
        "represent, iconv's rules too: stop with its position (default), -c or "
        "ENC//IGNORE to drop it, ENC//TRANSLIT to write an approximation as glibc does "
        "(ü as u, ß as ss, — as --, € as EUR, ™ as (TM), or ? when there is none; "
        "ENC//TRANSLIT//IGNORE or -c drops those instead). Exit status: 0 success (also "
        "when -c dropped characters, as GNU iconv -c does; -v counts them), 1 malformed "
        "input or an unmappable character that stopped the run, 2 "
        "unknown or non-text encodings, unusable policies, bad options, files that "
        "cannot be read or written, a failed worker process. " + _SAFETY,
    )
    _add_files_and_encodings(transcode)
    _add_policies(transcode)
    transcode.add_argument(
        "-j",
        "--jobs",
        type=positive_int,
        default=1,
        metavar="N",
        help="at most N worker processes (a UTF-8-family input file into an output file), "
        "used only where they are faster than one: never for UTF-8 into UTF-16/32 or the "
        "repair, which one worker does as fast as it writes; if one fails or dies the "
        "whole run stops (exit status 2)",
    )
    transcode.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print a summary on stderr: malformed input units by kind, unmappable characters",
    )
    transcode.add_argument(
        "-q", "--quiet", action="store_true", help="no notice of repaired input on stderr"
    )
    add_transform_options(transcode, "the decoded text (then one worker does the run)")
    add_dask_option(transcode)
    transcode.set_defaults(run=_cmd_transcode)


def _add_files_and_encodings(transcode: Parser) -> None:
    """IN and OUT, and the encodings from and to."""
    transcode.add_argument(
        "input", metavar="IN", nargs="?", default="-", help="input file (default: stdin)"
    )
    transcode.add_argument(
        "out", metavar="OUT", nargs="?", default=None, help="output file (default: stdout)"
    )
    transcode.add_argument("-o", "--output", metavar="OUT", help="output file, as OUT")
    transcode.add_argument(
        "-f",
        "--from-code",
        default="utf-8",
        metavar="ENC",
        help="source encoding (default: utf-8; -l lists the encodings), or auto: detected on "
        "the first 64 KiB (-v says what was found; input that is not text: exit status 1, "
        "no output file)",
    )
    transcode.add_argument(
        "-t",
        "--to-code",
        default="utf-8",
        metavar="ENC",
        help="target encoding (default: utf-8), optionally with //TRANSLIT and/or //IGNORE",
    )
    transcode.add_argument(
        "-l", "--list", action="store_true", help="list the known encodings and exit"
    )


def _add_policies(transcode: Parser) -> None:
    """What malformed input, unmappable characters and a byte order mark become."""
    transcode.add_argument(
        "-c",
        dest="drop",
        action="store_true",
        help="drop malformed input and characters the target encoding cannot "
        "represent, as iconv -c (--errors still chooses for malformed input)",
    )
    transcode.add_argument(
        "--errors",
        metavar="POLICY",
        help="policy for malformed input: strict (default: stop, as iconv; ignore with "
        "-c), replace (U+FFFD), ignore, backslashreplace, surrogateescape, ...; one that "
        "cannot decode (xmlcharrefreplace, namereplace) is refused",
    )
    transcode.add_argument(
        "--bom",
        default="keep",
        choices=["keep", "strip", "add", "detect"],
        help="what to do with a byte order mark (default: keep)",
    )
