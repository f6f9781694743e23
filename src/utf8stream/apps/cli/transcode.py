"""``utf8stream decode`` and ``transcode``: repair and convert, iconv-like."""

from __future__ import annotations

import argparse
import codecs
import encodings
import encodings.aliases
import pkgutil
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ...core.decoder import Utf8Decoder
from ...core.encoder import Utf8Encoder
from ...core.events import Utf8DecodeError
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
    ProgressBar,
    chunks,
    positive_int,
    progress_wanted,
    warn,
    with_final,
)
from ._dask import DEFAULT_BLOCKSIZE, add_dask_option, dask_scheduler

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


def _cmd_decode(args: argparse.Namespace) -> int:
    decoder = Utf8Decoder(args.errors)
    encode = Utf8Encoder(_output_errors(args.errors)).encode
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
                dst.write(encode(exc.partial, True))
                dst.flush()
                warn(str(exc), args.file)
                return EXIT_INVALID
            dst.write(encode(text, final))
    return EXIT_OK


class _Invalid(Exception):
    """Invalid input under a strict policy: leave the output block, then exit 1."""

    def __init__(self, error: UnicodeError) -> None:
        super().__init__(str(error))
        self.error = error


def _decode_command(args: argparse.Namespace) -> int:
    try:
        return _cmd_decode(args)
    except _Invalid as exc:
        warn(str(exc.error), args.file)
        return EXIT_INVALID


def _target_and_policy(to_code: str, drop: bool) -> tuple[str, str]:
    """iconv's ``ENC//TRANSLIT``, ``ENC//IGNORE`` and ``-c``, as an unmappable policy."""
    name, *suffixes = to_code.split("//")
    flags = {s.upper() for s in suffixes if s}
    unknown = flags - {"TRANSLIT", "IGNORE"}
    if unknown:
        raise CommandError(f"unknown suffix //{min(unknown)} in {to_code!r}")
    drop = drop or "IGNORE" in flags
    if "TRANSLIT" in flags:
        return name, "translit-ignore" if drop else "translit"
    return name, "ignore" if drop else "strict"


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
        f"{summary.bytes_in} bytes in, {summary.bytes_out} bytes out, "
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
    target, policy = _target_and_policy(args.to_code, args.drop)
    source = args.from_code.split("//")[0]
    if args.dask is not None:
        return _transcode_on_dask(args, output, source, target, policy)
    if args.blocksize is not None:
        raise CommandError("--blocksize is for --dask")
    bar = ProgressBar() if args.input != "-" and progress_wanted(output) else None
    try:
        with _file_errors(args.input, output):
            summary = transcode_file(
                args.input,
                output,
                source=source,
                target=target,
                errors=args.errors,
                bom=args.bom,
                unmappable=policy,
                workers=args.jobs,
                progress=bar,
            )
    except UnicodeError as exc:
        # Invalid input under --errors strict, or a character the target lacks.
        if isinstance(exc, (Utf8DecodeError, UnmappableCharacterError)):
            warn(str(exc), args.input)
        else:
            warn(f"{type(exc).__name__}: {exc}", args.input)
        return EXIT_INVALID
    finally:
        if bar is not None:
            bar.close()
    if args.verbose:
        warn(_summary_line(summary, policy))
    return EXIT_OK


def _transcode_on_dask(
    args: argparse.Namespace, output: str, source: str, target: str, policy: str
) -> int:
    """``--dask``: IN (files, a glob, fsspec URLs) transcoded in blocks on the cluster,
    into OUT (a pattern with {name}, {stem} or {index} for several inputs)."""
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
                errors=args.errors,
                bom=args.bom,
                unmappable=policy,
                blocksize=args.blocksize or DEFAULT_BLOCKSIZE,
            )
    except (Utf8DecodeError, UnmappableCharacterError) as exc:
        warn(str(exc), args.input)
        return EXIT_INVALID
    if args.verbose:
        for name, summary in summaries.items():
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


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    decode = sub.add_parser(
        "decode",
        help="write repaired UTF-8",
        description="Decode the input and write it back as UTF-8, malformed units "
        "handled by the error policy (default: replace each with U+FFFD). Exit status 1 "
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
    decode.set_defaults(run=_decode_command)

    transcode = sub.add_parser(
        "transcode",
        help="convert between encodings, lazily",
        description="Convert IN from one encoding to another, as iconv does (IN and "
        "OUT default to stdin and stdout; - names them too). The UTF-8 side (utf-8, "
        "wtf-8, cesu-8, mutf-8, utf-8z) goes through utf8stream's own decoder and "
        "encoder. Two policies: --errors for malformed input (default replace: U+FFFD), "
        "and, for a character the target encoding cannot represent, iconv's: stop with "
        "its position (default), -c or ENC//IGNORE to drop it, ENC//TRANSLIT to write "
        "an approximation (its NFKD decomposition without combining marks, e.g. é as e "
        "and ① as 1, or ? when that cannot be encoded either; ENC//TRANSLIT//IGNORE or "
        "-c drops those instead). Exit status: 0 success (also when -c dropped "
        "characters, as GNU iconv -c does; -v counts them), 1 invalid input under "
        "--errors strict or an unmappable character under the default policy, 2 "
        "unknown or non-text encodings, unusable policies, bad options, files that "
        "cannot be read or written, a failed worker process. " + _SAFETY,
    )
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
        help="source encoding (default: utf-8; -l lists the encodings)",
    )
    transcode.add_argument(
        "-t",
        "--to-code",
        default="utf-8",
        metavar="ENC",
        help="target encoding (default: utf-8), optionally with //TRANSLIT and/or //IGNORE",
    )
    transcode.add_argument(
        "-c",
        dest="drop",
        action="store_true",
        help="drop characters the target encoding cannot represent",
    )
    transcode.add_argument(
        "-l", "--list", action="store_true", help="list the known encodings and exit"
    )
    transcode.add_argument(
        "--errors",
        default="replace",
        metavar="POLICY",
        help="policy for malformed input (default: replace); one that cannot decode "
        "(xmlcharrefreplace, namereplace) is refused",
    )
    transcode.add_argument(
        "--bom",
        default="keep",
        choices=["keep", "strip", "add", "detect"],
        help="what to do with a byte order mark (default: keep)",
    )
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
    add_dask_option(transcode)
    transcode.set_defaults(run=_cmd_transcode)
