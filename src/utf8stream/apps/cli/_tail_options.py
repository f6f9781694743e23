"""``utf8stream tail``'s options: the parser, GNU tail's forms of them, their types.

Apart from the command itself (``tail.py``, whose ``add_parser`` gives this one's the
function that runs it), so that the options are not buried in the following.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass

from ...core.linecodec import line_decoder
from ...core.lines import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG, OVERLONG_POLICIES
from ...core.multiline import MULTILINE_PRESETS
from .._defaults import (
    DEFAULT_MULTILINE_TIMEOUT,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_ROTATE_GRACE,
    FOLLOW_ERRORS,
)
from ._common import Parser, non_negative_int, positive_float, positive_int

#: The followers' policies for malformed bytes (from apps/_defaults.py, which imports
#: nothing, so that building the parser does not load the async layers).
ERROR_POLICIES = FOLLOW_ERRORS


@dataclass(frozen=True)
class Count:
    """The value of -n or -c: the last ``number``, or from the ``number``-th on (+N)."""

    number: int
    from_start: bool = False


#: GNU tail's multiplier suffixes for N: b (512), and K, M, G, T, P, E, Z, Y, R, Q (k and
#: m too) in powers of 1024, also written KiB, MiB, ..., or in powers of 1000 as kB, MB, ...
_POWERS = {letter: power for power, letter in enumerate("KMGTPEZYRQ", 1)} | {"k": 1, "m": 2}
_SUFFIXES = {
    "": 1,
    "b": 512,
    **{letter: 1024**power for letter, power in _POWERS.items()},
    **{letter + "iB": 1024**power for letter, power in _POWERS.items()},
    **{letter + "B": 1000**power for letter, power in _POWERS.items()},
}
_COUNT = re.compile(r"([+-]?)([0-9]+)([A-Za-z]*)")


def _count(text: str) -> Count:
    """``type=`` for -n and -c: N or -N (the last N), +N (from the Nth on, 1-based); N
    may end in a multiplier suffix, as GNU tail's (``1K`` = 1024, ``1kB`` = 1000)."""
    match = _COUNT.fullmatch(text) if text.isascii() else None
    if match is None or match.group(3) not in _SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"must be N (the last N) or +N (from the Nth on), with an optional multiplier "
            f"suffix (b, K, kB, KiB, M, MB, MiB, G, ...), not {text!r}"
        )
    sign, digits, suffix = match.groups()
    return Count(int(digits) * _SUFFIXES[suffix], from_start=sign == "+")


#: GNU tail's obsolete form of ``-n N``: ``-N``.
_OBSOLETE_LINES = re.compile(r"-([0-9]+)")


def _gnu_short_forms(parser: Parser, args: list[str]) -> list[str]:
    """``tail -3`` as ``tail -n 3``, as GNU tail takes it: a ``-N`` that is not the
    value of an option (``-n -3`` keeps its own meaning) and comes before ``--``."""
    actions = parser._actions  # noqa: SLF001  (argparse lists a parser's options nowhere else)
    takes_value = {option for a in actions if a.nargs != 0 for option in a.option_strings}
    rewritten: list[str] = []
    value_next = False
    for i, arg in enumerate(args):
        if arg == "--" and not value_next:
            return rewritten + args[i:]
        obsolete = None if value_next else _OBSOLETE_LINES.fullmatch(arg)
        rewritten += ["-n", obsolete.group(1)] if obsolete else [arg]
        if value_next or obsolete:
            value_next = False
        elif arg.startswith("--"):
            value_next = "=" not in arg and any(o.startswith(arg) for o in takes_value)
        elif arg.startswith("-"):
            # A cluster (-fn 3): a value follows when its last option takes one.
            for k in range(1, len(arg)):
                if f"-{arg[k]}" in takes_value:
                    value_next = k == len(arg) - 1
                    break
    return rewritten


def _encoding(text: str) -> str:
    """``type=`` for --encoding: one lines can be cut in (the core's line decoders), or
    ``auto``."""
    if text == "auto":
        return text
    try:
        line_decoder(text, "replace")
    except (LookupError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _regex(text: str) -> str:
    """``type=`` for --multiline-start and --multiline-continuation."""
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a valid regular expression: {exc}") from None
    return text


def _grace(text: str) -> float:
    """``type=`` for --rotate-grace: seconds, 0 included."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, not {text!r}")
    return value


def _line_limit(text: str) -> int:
    """``type=`` for --max-line-bytes: room for one character at least."""
    value = positive_int(text)
    if value < 4:
        raise argparse.ArgumentTypeError(f"must be at least 4 (one character), not {text!r}")
    return value


def add_parser(
    sub: argparse._SubParsersAction[Parser], run: Callable[[argparse.Namespace], int]
) -> None:
    """The parser of ``tail``, whose arguments go to ``run``."""
    tail = sub.add_parser(
        "tail",
        rewrite=_gnu_short_forms,
        help="print the last lines of logs, and follow them",
        description="Print the last 10 lines of each FILE, as GNU tail does (with "
        "'==> FILE <==' headers when there are several). Lines are cut at \\n only and "
        "printed with the ending they had (CRLF and CR pass through, a last line without "
        "a newline gets none); malformed UTF-8 becomes U+FFFD (see --errors) and never "
        "stops the reader. With -f or -F, keep following each FILE by name, across "
        "rotation (rename and create, copytruncate: the lines written just before are "
        "taken from the copy), truncation and restarts (--checkpoint; a file rotated and "
        "compressed meanwhile is read decompressed, never printed as bytes). Input in "
        "another encoding (--encoding) is printed as UTF-8. Notices (rotation, "
        "truncation, a file gone or back, a damaged compressed copy, a line cut short) "
        "go to stderr.",
        epilog="Exit status: 0 success, 1 a FILE could not be opened or read (as GNU "
        "tail; the others are still printed), 2 usage error or unusable checkpoint, 130 "
        "/ 143 Ctrl-C / SIGTERM, 141 the reader of stdout went away. Errors and notices "
        "are 'utf8stream: FILE: what happened' on stderr.",
    )
    tail.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="files to show; '-' or none: standard input (a pipe is read to its end)",
    )
    tail.add_argument(
        "-f",
        "--follow",
        dest="follow",
        action="store_true",
        help="output lines as the files grow; each is followed by name, across rotation",
    )
    tail.add_argument(
        "-F", dest="follow_retry", action="store_true", help="same as --follow --retry"
    )
    tail.add_argument(
        "--retry",
        action="store_true",
        help="while following, wait for a file that cannot be opened (missing, "
        "unreadable) instead of giving it up; notices go to stderr",
    )
    start = tail.add_mutually_exclusive_group()
    start.add_argument(
        "-n",
        "--lines",
        type=_count,
        default=Count(10),
        metavar="[+]N",
        help="the last N lines (default 10; -N is -n N, as in GNU tail); +N: from line N "
        "on (+1: all); N may have a multiplier suffix, as for -c",
    )
    start.add_argument(
        "-c",
        "--bytes",
        type=_count,
        metavar="[+]N",
        help="the last N bytes; +N: from byte N on (a cut character is a malformed unit, "
        "see --errors); N may end in a multiplier as in GNU tail: b 512, K 1024, kB 1000, "
        "KiB 1024, M, MB, MiB, G, ...",
    )
    start.add_argument(
        "--offset",
        type=non_negative_int,
        metavar="N",
        help="start at byte offset N (0-based; mid-line: the line starts with one U+FFFD)",
    )
    tail.add_argument(
        "-s",
        "--sleep-interval",
        dest="interval",
        type=positive_float,
        default=DEFAULT_POLL_INTERVAL,
        metavar="SECONDS",
        help="while following without kernel notification (no watchfiles, a network "
        "file system), look for changes this often (default %(default)g)",
    )
    tail.add_argument("--interval", dest="interval", type=positive_float, help=argparse.SUPPRESS)
    tail.add_argument(
        "--pid",
        type=positive_int,
        metavar="PID",
        help="with -f: stop once process PID has exited (after reading what it wrote)",
    )
    headers = tail.add_mutually_exclusive_group()
    headers.add_argument(
        "-q",
        "--quiet",
        "--silent",
        action="store_true",
        help="never print '==> FILE <==' headers",
    )
    headers.add_argument(
        "-v", "--verbose", action="store_true", help="always print '==> FILE <==' headers"
    )
    tail.add_argument(
        "--checkpoint",
        metavar="CPFILE",
        help="resume after the lines a previous run printed, and record progress there "
        "(atomically, on every stop and after every write to stdout while following: "
        "after kill -9 at most one write of lines is printed again); it belongs to "
        "one FILE (a JSON file), and an unfinished last line is left for the run that "
        "sees it whole; with -f and PATTERNs or several FILEs, a checkpoint store "
        "(SQLite) of them all",
    )
    tail.add_argument(
        "-z",
        "--zero-terminated",
        action="store_true",
        help="lines end with NUL, not newline (read and written; headers keep theirs)",
    )
    tail.add_argument(
        "--max-line-bytes",
        type=_line_limit,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help="longest line handled whole, in bytes (default 1 MiB; GNU tail has no "
        "limit): memory stays bounded by it; see --on-overlong",
    )
    tail.add_argument(
        "--on-overlong",
        choices=sorted(OVERLONG_POLICIES),
        default=DEFAULT_ON_OVERLONG,
        help="a longer line is: split (default: read in pieces, printed unchanged), "
        "truncate (its first N bytes, and a notice), skip (a notice), raise (an error, "
        "exit 1)",
    )
    tail.add_argument(
        "--encoding",
        type=_encoding,
        default="utf-8",
        metavar="ENC",
        help="the files' encoding (default utf-8; utf-16, utf-16-le, cp1252, ...), or "
        "auto (each file's own, told by its first bytes: a byte-order mark, UTF-16's "
        "zero bytes, valid UTF-8, else cp1252; kept in the checkpoint): lines are "
        "printed in UTF-8, offsets and checkpoints stay exact",
    )
    tail.add_argument(
        "--rotate-grace",
        type=_grace,
        default=DEFAULT_ROTATE_GRACE,
        metavar="SECONDS",
        help="a file renamed away is read until unchanged this long, since its writer "
        "goes on until it reopens the name (default %(default)g)",
    )
    multiline = tail.add_mutually_exclusive_group()
    multiline.add_argument(
        "--multiline-start",
        type=_regex,
        metavar="REGEX",
        help="join lines into events: a line REGEX matches (searched, anchor it with ^) "
        "starts one, the others continue it; each event is printed as its lines",
    )
    multiline.add_argument(
        "--multiline-continuation",
        type=_regex,
        metavar="REGEX",
        help="join lines into events: a line REGEX matches continues the event before it",
    )
    multiline.add_argument(
        "--multiline",
        choices=sorted(MULTILINE_PRESETS),
        metavar="PRESET",
        help="join lines into events by a preset: "
        + ", ".join(sorted(MULTILINE_PRESETS))
        + " (a Python or Java stack trace joins the record before it)",
    )
    tail.add_argument(
        "--multiline-timeout",
        type=positive_float,
        default=DEFAULT_MULTILINE_TIMEOUT,
        metavar="SECONDS",
        help="while following, print a file's last event once no line came to it for "
        "this long (default %(default)g); a checkpoint never passes an event not printed",
    )
    tail.add_argument(
        "--max-event-bytes",
        type=positive_int,
        metavar="N",
        help="with --multiline*: an event larger than N bytes (its lines in the file, "
        "endings included; default 1 MiB) is printed in pieces as it comes, each at most "
        "N bytes unless one line is longer; memory stays bounded by it",
    )
    tail.add_argument(
        "--errors",
        choices=ERROR_POLICIES,
        default="replace",
        help="malformed bytes become: replace (U+FFFD, default), ignore (dropped), "
        "backslashreplace (\\xNN), surrogateescape (the original bytes, unchanged)",
    )
    tail.set_defaults(run=run)
