"""``utf8stream tail``'s options: the parser, GNU tail's forms of them, their types.

Apart from the command itself (``tail.py``, whose ``add_parser`` gives this one's the
function that runs it), so that the options are not buried in the following.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..follow._options import FollowOptions, option_of
from ._common import Parser, non_negative_int, positive_int
from ._transforms import add_transform_options


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


def _regex(text: str) -> str:
    """``type=`` for --multiline-start and --multiline-continuation."""
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a valid regular expression: {exc}") from None
    return text


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``type=`` for a follower option: ``FollowOptions``'s reading of its text, whose
    ``ValueError`` says what is wrong with it."""

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return typed


def _add_follower_options(
    parser: Parser, groups: Mapping[str, argparse._MutuallyExclusiveGroup]
) -> None:
    """The options ``FollowOptions`` gives a command-line form: its flags, help, type,
    choices and default (``args.NAME`` is the field ``NAME``)."""
    for each in fields(FollowOptions):
        option = option_of(each.name)
        if not option.flags:
            continue
        target = groups[option.group] if option.group is not None else parser
        if isinstance(each.default, bool):
            target.add_argument(
                *option.flags, dest=each.name, action="store_true", help=option.help
            )
            continue
        typed: dict[str, Any] = {} if option.parse is None else {"type": _typed(option.parse)}
        target.add_argument(
            *option.flags,
            dest=each.name,
            default=each.default,
            choices=option.choices,
            metavar=option.metavar,
            help=option.help,
            **typed,
        )
    # An older name of -s, kept working.
    parser.add_argument(
        "--interval",
        dest="poll_interval",
        type=_typed(option_of("poll_interval").parse or float),
        help=argparse.SUPPRESS,
    )


def add_parser(
    sub: argparse._SubParsersAction[Parser], run: Callable[[argparse.Namespace], int]
) -> None:
    """The parser of ``tail``, whose arguments go to ``run``: its own options, and the
    follower's from ``FollowOptions``."""
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
    _add_what_to_show(tail)
    _add_following(tail)
    _add_output(tail)
    multiline = _add_multiline(tail)
    _add_follower_options(tail, {"multiline": multiline})
    add_transform_options(tail, "each line (each event with --multiline)")
    tail.set_defaults(run=run)


def _add_what_to_show(tail: Parser) -> None:
    """The FILEs, and where in each the lines shown start."""
    tail.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="files to show; '-' or none: standard input (a pipe is read to its end)",
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


def _add_following(tail: Parser) -> None:
    """-f, -F, --pid and --checkpoint (--retry and the waits: ``FollowOptions``)."""
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
        "--pid",
        type=positive_int,
        metavar="PID",
        help="with -f: stop once process PID has exited (after reading what it wrote)",
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


def _add_output(tail: Parser) -> None:
    """Headers, and what ends a line."""
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
        "-z",
        "--zero-terminated",
        action="store_true",
        help="lines end with NUL, not newline (read and written; headers keep theirs)",
    )


def _add_multiline(tail: Parser) -> argparse._MutuallyExclusiveGroup:
    """The joiners of lines into events given by a pattern (the presets, --multiline,
    and the timeout: ``FollowOptions``), in one group with --multiline."""
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
    tail.add_argument(
        "--max-event-bytes",
        type=positive_int,
        metavar="N",
        help="with --multiline*: an event larger than N bytes (its lines in the file, "
        "endings included; default 1 MiB) is printed in pieces as it comes, each at most "
        "N bytes unless one line is longer; memory stays bounded by it",
    )
    return multiline
