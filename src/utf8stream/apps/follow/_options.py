"""The follower's options, once: ``FollowOptions`` holds them, their defaults and their
checks; ``follow()``, ``follow_many()`` and ``utf8stream tail``'s parser are built from it.

Each field's metadata (``Option``) says which of the two functions takes it (one file's
``follow()``, ``follow_many()``, or both) and, for the options ``tail`` has, its command
line: flags, help, how its text is read.  A value out of range is a ``ValueError`` when the
options are made, naming the option: never a surprise at a follower's first read.
Nothing here loads the async layers, so that the command line builds its parser from it.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from ...core.autodecode import AUTO
from ...core.linecodec import Utf8LineDecoder, line_decoder
from ...core.lineoptions import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG, OVERLONG_POLICIES
from ...core.multiline import MULTILINE_PRESETS, MultilineJoiner
from ...core.transformed import as_transform
from ._public import public
from ._readpolicy import ReadPolicy

if TYPE_CHECKING:
    from ...core.events import Malformed
    from ...core.transformed import Transforms
    from ..checkpoints import CheckpointStore
    from ._checkpoint import FollowCheckpoint
    from ._records import Notice

__all__ = ["FOLLOW_ERRORS", "FollowOptions", "Option", "option_of", "refuse_not_taken"]

#: Which function takes an option: ``follow()``, ``follow_many()``, or both.
Takes = Literal["follow", "many", "both"]
#: Policies under which a follower never stops (and whose replacements hold no newline).
FOLLOW_ERRORS = ("replace", "ignore", "backslashreplace", "surrogateescape")


class Option:
    """What a field of ``FollowOptions`` says besides its type and default (a plain class:
    a dataclass more would cost every ``tail`` run its making)."""

    __slots__ = ("choices", "flags", "group", "help", "metavar", "parse", "problem", "takes")

    def __init__(
        self,
        *,
        takes: Takes = "both",
        problem: Callable[[Any], str | None] | None = None,
        flags: tuple[str, ...] = (),
        help: str = "",  # noqa: A002  (argparse's name)
        metavar: str | None = None,
        choices: tuple[str, ...] | None = None,
        parse: Callable[[str], Any] | None = None,
        group: str | None = None,
    ) -> None:
        #: The function that takes it: ``follow()``, ``follow_many()`` or both.
        self.takes = takes
        #: What is wrong with a value (``None``: nothing), said after the option's name.
        self.problem = problem
        #: ``utf8stream tail``'s flags for it (none: the command sets it otherwise), help,
        #: metavar and choices.
        self.flags = flags
        self.help = help
        self.metavar = metavar
        self.choices = choices
        #: The value of the command line's text; a ``ValueError`` says what is wrong.
        self.parse = parse
        #: The mutually exclusive group of the command line it belongs to.
        self.group = group


def _meta(**option: Any) -> dict[str, Option]:
    return {"option": Option(**option)}


def option_of(name: str) -> Option:
    """The metadata of ``FollowOptions``'s field ``name``."""
    return _FIELDS[name]


# -- what a value must be --------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _positive(value: Any) -> str | None:
    return None if _is_number(value) and value > 0 else "must be a positive number"


def _seconds(value: Any) -> str | None:
    return None if _is_number(value) and value >= 0 else "must be a number of seconds >= 0"


def _optional(problem: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda value: None if value is None else problem(value)


def _count(least: int, words: str) -> Callable[[Any], str | None]:
    def problem(value: object) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return "must be an integer"
        return None if value >= least else words

    return problem


def _one_of(choices: tuple[str, ...], why: str = "") -> Callable[[Any], str | None]:
    return lambda value: None if value in choices else f"must be one of {choices}{why}"


def _start(value: object) -> str | None:
    if value in ("end", "beginning") or (
        isinstance(value, int) and not isinstance(value, bool) and value >= 0
    ):
        return None
    return "must be 'end', 'beginning' or a byte offset"


def _newline(value: object) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return None
    return "must be None or a non-empty string"


def _encoding(value: object) -> str | None:
    if value == AUTO:
        return None
    if not isinstance(value, str):
        return "must be the name of an encoding, or 'auto'"
    return _codec_problem(value)


@functools.lru_cache(maxsize=64)
def _codec_problem(name: str) -> str | None:
    """Why lines cannot be cut in the encoding ``name`` (None: they can).  Asked for each
    follower ``follow_many`` makes: known once per name."""
    try:
        line_decoder(name, "replace")
    except (LookupError, ValueError) as exc:
        return str(exc)
    return None


def _read_policy(value: object) -> str | None:
    return None if isinstance(value, ReadPolicy) else "must be a ReadPolicy"


def _joiner(value: object) -> str | None:
    if value is None or isinstance(value, MultilineJoiner):
        return None
    if not isinstance(value, str):
        return "must be a MultilineJoiner or the name of a preset"
    try:
        MultilineJoiner.preset(value)
    except ValueError as exc:
        return str(exc)
    return None


def _transforms(value: object) -> str | None:
    try:
        as_transform(value)  # type: ignore[arg-type]
    except TypeError as exc:
        return f"must be a text transform or a sequence of them ({exc})"
    return None


def _each(problem: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """A mapping of patterns to values, each checked by ``problem``."""

    def each(value: object) -> str | None:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            return "must be a mapping of patterns"
        for pattern, one in value.items():
            wrong = problem(one)
            if wrong is not None:
                return f"{pattern!r}: {wrong}"
        return None

    return each


# -- how the command line reads one ----------------------------------------------------


def _number_text(problem: Callable[[Any], str | None]) -> Callable[[str], float]:
    """A number of seconds from the command line, in the range ``problem`` checks, and
    finite (``inf`` and ``nan`` are refused in its words: -1 is out of every range)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"must be a number, not {text!r}") from None
        wrong = problem(value) if math.isfinite(value) else problem(-1.0)
        if wrong is not None:
            raise ValueError(f"{wrong}, not {text!r}")
        return value

    return parse


_line_limit = _count(4, "must be at least 4 (one character)")


def _line_limit_text(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise ValueError(f"must be an integer, not {text!r}") from None
    wrong = _line_limit(value)
    if wrong is not None:
        raise ValueError(f"{wrong}, not {text!r}")
    return value


def _encoding_text(text: str) -> str:
    problem = None if text == AUTO else _codec_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


@public("utf8stream.follower")
@dataclass(frozen=True)
class FollowOptions:
    """The options of ``follow()`` and ``follow_many()``: one value, checked when made.

    ``Follower(path, options)`` (or ``follow(path, **options.as_kwargs("follow"))``)
    follows one file with them, ``ManyFollower(patterns, options)`` (or
    ``follow_many(patterns, **options.as_kwargs("many"))``) many; each function's keyword
    parameters are exactly the fields it takes, with the same defaults (the fields whose
    metadata says ``takes="follow"`` are for one file only, ``takes="many"`` for
    ``follow_many()`` only: its docstring tells those).  A value out of range raises
    ``ValueError`` naming the option.

    ``start``: ``"end"`` (default; with ``last_lines=N`` the last N complete lines first),
    ``"beginning"``, or a byte offset (joined mid-line or mid-character: the first line
    starts with one U+FFFD for the gap, as after lost bytes).  ``last_bytes=N`` with
    ``start="end"``: start N bytes before the end (``tail -c``).  ``gap_at_start=False``:
    no U+FFFD for joining mid-line; the bytes from there are decoded as they are (those
    of a cut character are malformed units, handled by ``errors``).  ``checkpoint`` resumes
    exactly after the lines a previous follower yielded, draining files rotated away meanwhile.
    ``until_eof=True`` reads to the current end once, unfinished last line included,
    and stops (``tail`` without ``-f``).  ``on_malformed`` sees every malformed unit; an
    exception it raises comes out of the ``__anext__`` that read the unit (the lines
    read with it follow; nothing is lost, and iteration may go on).  ``retry=True``
    waits for a file that cannot be opened yet (``tail -F``/``--retry``); without it that
    is an ``OSError`` from the first step.  ``on_notice`` is told of each ``Notice``:
    the path inaccessible or back, a rotation, a truncation, an overlong line.
    At the end of the data the follower is woken by the kernel when the file or its
    directory changes (inotify and its kin, through the ``watch`` extra's ``watchfiles``);
    where that is not available (no ``watchfiles``, a network file system) it polls
    every ``poll_interval`` seconds.  While it catches up with a file the page cache
    holds, the accelerator reads the next chunk ahead in a thread of its own (one per
    file being caught up with, at most ``max(2, os.cpu_count())`` in a process; stopped
    once caught up).  A file renamed away (rotation) is read until it has stayed
    unchanged for ``rotate_grace`` seconds, since its writer appends to it until it
    reopens the path, and longer while nothing was written at the path and some process
    still has the old file open for writing (Linux, from ``/proc``); then the new file
    is read.
    ``partial_after``: seconds; an unfinished last line that has waited that long for its
    newline is handed out as it is (``terminated=False``), the checkpoint just past it
    (``mid_line``), its rest as the next ``Line``: the pieces joined are the line, no byte
    lost or repeated (``LineEngine.cut_unfinished``; not with ``multiline``).
    ``multiline``: a ``MultilineJoiner`` or the name of one of its presets
    (``"python"``, ``"java"``, ``"indented"``): each ``Line`` is then an event, its lines
    joined with ``"\\n"`` at the offset of its first line.  An event never spans two
    files; the last one is handed out once ``multiline_timeout`` seconds pass with no
    line, at a rotation or truncation, and at the end with ``until_eof``.  The checkpoint
    never passes an event not handed out: a restart reads its lines again.  An event is
    ``terminated`` as its last line is; one ending in ``until_eof``'s unfinished last line
    leaves the checkpoint before it, as that line alone would (a later run reads it whole).
    ``encoding``: UTF-8 by default, or any encoding ``line_decoder`` takes (UTF-16/32,
    legacy codecs; offsets stay exact source byte offsets, a byte offset to start at is
    rounded down to a code unit; ``on_malformed`` is for UTF-8 only), or ``"auto"``:
    each file's encoding is told by its first 64 KiB (or what it holds when its first
    bytes are read; an empty file waits for them) by the encoding detector
    (``utf8stream.detect``: a byte-order mark, valid UTF-8, else the legacy encoding or
    UTF-16/32 its statistics choose; a file that is not text raises ``NotTextError``, one in
    ISO-2022-JP a ``ValueError``); ``Line.file.encoding`` says it, the
    checkpoint keeps it for a restart, and a new file after a rotation is told again
    (``on_malformed`` then sees the files told UTF-8).
    ``reading``: a ``ReadPolicy``, how files are read (read sizes, read-ahead, files
    held in memory): a tuning seam, whose default chooses per file system.
    ``transforms``: a ``TextTransform`` or a sequence of them (``utf8stream.transforms``:
    ``Normalizer``, ``MojibakeRepairer``...) done on each line's text whole (a
    multi-line event's text whole), as ``LineSplitter``'s: nothing is carried from one
    line to the next, so a checkpoint needs no transform state (a piece handed out by
    ``partial_after`` or ``on_overlong="split"`` is transformed as a line of its own, so
    that nothing is held past the checkpoint that covers it).  ``follow_many()``
    gives each file a fresh copy (``fresh_copy``: same kind and options, the same
    ``on_change``); ``transforms_by_pattern`` maps a pattern (as given) to its files'
    transforms, as ``encodings`` does (an empty sequence: none).
    """

    # -- where to start --
    start: str | int = field(default="end", metadata=_meta(problem=_start))
    last_lines: int = field(default=0, metadata=_meta(problem=_count(0, "must be non-negative")))
    last_bytes: int | None = field(
        default=None,
        metadata=_meta(takes="follow", problem=_optional(_count(0, "must be non-negative"))),
    )
    gap_at_start: bool = field(default=True, metadata=_meta())
    checkpoint: FollowCheckpoint | None = field(default=None, metadata=_meta(takes="follow"))
    # -- waiting --
    poll_interval: float = field(
        default=0.25,
        metadata=_meta(
            problem=_positive,
            flags=("-s", "--sleep-interval"),
            metavar="SECONDS",
            parse=_number_text(_positive),
            help="while following without kernel notification (no watchfiles, a network "
            "file system), look for changes this often (default %(default)g)",
        ),
    )
    rotate_grace: float = field(
        default=1.0,
        metadata=_meta(
            problem=_seconds,
            flags=("--rotate-grace",),
            metavar="SECONDS",
            parse=_number_text(_seconds),
            help="a file renamed away is read until unchanged this long, since its writer "
            "goes on until it reopens the name (default %(default)g)",
        ),
    )
    # -- lines --
    newline: str | None = field(default=None, metadata=_meta(problem=_newline))
    max_line_bytes: int = field(
        default=DEFAULT_MAX_LINE_BYTES,
        metadata=_meta(
            problem=_line_limit,
            flags=("--max-line-bytes",),
            metavar="N",
            parse=_line_limit_text,
            help="longest line handled whole, in bytes (default 1 MiB; GNU tail has no "
            "limit): memory stays bounded by it; see --on-overlong",
        ),
    )
    on_overlong: str = field(
        default=DEFAULT_ON_OVERLONG,
        metadata=_meta(
            problem=_one_of(OVERLONG_POLICIES),
            flags=("--on-overlong",),
            choices=tuple(sorted(OVERLONG_POLICIES)),
            help="a longer line is: split (default: read in pieces, printed unchanged), "
            "truncate (its first N bytes, and a notice), skip (a notice), raise (an error, "
            "exit 1)",
        ),
    )
    errors: str = field(
        default="replace",
        metadata=_meta(
            problem=_one_of(FOLLOW_ERRORS, ": one bad byte never stops a follower"),
            flags=("--errors",),
            choices=FOLLOW_ERRORS,
            help="malformed bytes become: replace (U+FFFD, default), ignore (dropped), "
            "backslashreplace (\\xNN), surrogateescape (the original bytes, unchanged)",
        ),
    )
    encoding: str = field(
        default="utf-8",
        metadata=_meta(
            problem=_encoding,
            flags=("--encoding",),
            metavar="ENC",
            parse=_encoding_text,
            help="the files' encoding (default utf-8; utf-16, utf-16-le, cp1252, ...), or "
            "auto (each file's own, told by its first bytes: a byte-order mark, UTF-16's "
            "zero bytes, valid UTF-8, else cp1252; kept in the checkpoint): lines are "
            "printed in UTF-8, offsets and checkpoints stay exact",
        ),
    )
    on_malformed: Callable[[Malformed], object] | None = field(default=None, metadata=_meta())
    # -- one file's run --
    until_eof: bool = field(default=False, metadata=_meta(takes="follow"))
    retry: bool = field(
        default=False,
        metadata=_meta(
            takes="follow",
            flags=("--retry",),
            help="while following, wait for a file that cannot be opened (missing, "
            "unreadable) instead of giving it up; notices go to stderr",
        ),
    )
    on_notice: Callable[[Notice], object] | None = field(default=None, metadata=_meta())
    # -- multi-line events --
    multiline: MultilineJoiner | str | None = field(
        default=None,
        metadata=_meta(
            problem=_joiner,
            flags=("--multiline",),
            group="multiline",
            metavar="PRESET",
            choices=tuple(sorted(MULTILINE_PRESETS)),
            help="join lines into events by a preset: "
            + ", ".join(sorted(MULTILINE_PRESETS))
            + " (a Python or Java stack trace joins the record before it)",
        ),
    )
    multiline_timeout: float = field(
        default=5.0,
        metadata=_meta(
            problem=_positive,
            flags=("--multiline-timeout",),
            metavar="SECONDS",
            parse=_number_text(_positive),
            help="while following, print a file's last event once no line came to it for "
            "this long (default %(default)g); a checkpoint never passes an event not printed",
        ),
    )
    partial_after: float | None = field(default=None, metadata=_meta(problem=_optional(_seconds)))
    transforms: Transforms = field(default=None, metadata=_meta(problem=_transforms))
    # -- how files are read --
    reading: ReadPolicy = field(default=ReadPolicy(), metadata=_meta(problem=_read_policy))
    # -- many files: ``follow_many()`` --
    store: CheckpointStore | str | os.PathLike[str] | None = field(
        default=None, metadata=_meta(takes="many")
    )
    encodings: Mapping[str, str] | None = field(
        default=None, metadata=_meta(takes="many", problem=_each(_encoding))
    )
    multilines: Mapping[str, MultilineJoiner | str | None] | None = field(
        default=None, metadata=_meta(takes="many", problem=_each(_joiner))
    )
    transforms_by_pattern: Mapping[str, Transforms] | None = field(
        default=None, metadata=_meta(takes="many", problem=_each(_transforms))
    )
    save_every: int = field(
        default=1000, metadata=_meta(takes="many", problem=_count(1, "must be >= 1"))
    )
    save_interval: float = field(default=1.0, metadata=_meta(takes="many", problem=_positive))
    autosave: bool = field(default=True, metadata=_meta(takes="many"))
    rescan_interval: float = field(default=5.0, metadata=_meta(takes="many", problem=_positive))
    force_polling: bool = field(default=False, metadata=_meta(takes="many"))

    def __post_init__(self) -> None:
        for name, problem in _CHECKS:
            _check(name, getattr(self, name), problem)
        joined = self.multiline is not None or any(
            each is not None for each in (self.multilines or {}).values()
        )
        if joined and self.partial_after is not None:
            raise ValueError("partial_after is for lines: a multi-line event is handed out whole")
        if self.on_malformed is not None:
            encodings = [self.encoding, *(self.encodings or {}).values()]
            if any(not _is_utf8(each) for each in encodings):
                raise ValueError("on_malformed is reported for UTF-8 only")

    def as_kwargs(self, function: Literal["follow", "many"]) -> dict[str, Any]:
        """The keyword arguments of ``follow()`` (``"follow"``) or ``follow_many()``
        (``"many"``) that these options are; a ``ValueError`` if they set an option the
        function does not take (none is dropped unseen)."""
        refuse_not_taken(self, function)
        return {name: getattr(self, name) for name in _TAKEN[function]}

    @staticmethod
    def joiner_of(multiline: MultilineJoiner | str | None) -> MultilineJoiner | None:
        """The joiner a ``multiline`` option names (a preset's name, or the joiner)."""
        return MultilineJoiner.preset(multiline) if isinstance(multiline, str) else multiline


_FIELDS: dict[str, Option] = {each.name: each.metadata["option"] for each in fields(FollowOptions)}
#: The fields each function takes, and those it does not (with their defaults).
_TAKEN = {
    function: [each.name for each in fields(FollowOptions) if _FIELDS[each.name].takes != other]
    for function, other in (("follow", "many"), ("many", "follow"))
}
_NOT_TAKEN = {
    function: [(e.name, e.default) for e in fields(FollowOptions) if e.name not in taken]
    for function, taken in _TAKEN.items()
}
#: The fields whose values have a range, and what says a value is out of it.
_CHECKS = [(name, option.problem) for name, option in _FIELDS.items() if option.problem]


def refuse_not_taken(options: FollowOptions, function: Literal["follow", "many"]) -> None:
    """A ``ValueError`` if ``options`` set an option ``function`` does not take (the
    classes behind ``follow()`` and ``follow_many()`` drop none unseen either)."""
    for name, default in _NOT_TAKEN[function]:
        if getattr(options, name) != default:
            caller = "follow()" if function == "follow" else "follow_many()"
            raise ValueError(f"{caller} does not take {name}=")
    if function == "many" and options.start not in ("end", "beginning"):
        raise ValueError("follow_many()'s start must be 'end' or 'beginning'")


def _is_utf8(encoding: str) -> bool:
    return encoding == AUTO or isinstance(line_decoder(encoding, "replace"), Utf8LineDecoder)


def _check(name: str, value: object, problem: Callable[[Any], str | None]) -> None:
    wrong = problem(value)
    if wrong is not None:
        raise ValueError(f"{name}={value!r}: {wrong}")
