"""``utf8stream decode`` and ``transcode``: repair and convert, iconv-like."""

from __future__ import annotations

import argparse
import sys

from ...core.decoder import Utf8Decoder
from ...core.encoder import Utf8Encoder
from ...core.events import Utf8DecodeError
from ..files import open_binary, transcode_file
from ._common import EXIT_INVALID, EXIT_OK, ProgressBar, chunks, with_final


def _output_errors(errors: str) -> str:
    """How to encode decoded text so that the policy's escapes round-trip."""
    return errors if errors in ("surrogateescape", "surrogatepass", "optu-8") else "strict"


def _cmd_decode(args: argparse.Namespace) -> int:
    decoder = Utf8Decoder(args.errors)
    encode = Utf8Encoder(_output_errors(args.errors)).encode
    with open_binary(args.file, "rb") as src, open_binary(args.output, "wb") as dst:
        for chunk, final in with_final(chunks(src)):
            try:
                text = decoder.decode(chunk, final)
            except Utf8DecodeError as exc:
                dst.write(encode(exc.partial, True))
                dst.flush()
                print(f"utf8stream: {args.file}: {exc}", file=sys.stderr)
                return EXIT_INVALID
            dst.write(encode(text, final))
    return EXIT_OK


def _cmd_transcode(args: argparse.Namespace) -> int:
    bar = ProgressBar() if sys.stderr.isatty() and args.input != "-" else None
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


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
