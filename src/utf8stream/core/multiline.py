"""Multi-line events: lines joined into one event each (stack traces, indented continuations).

Theory of operation
-------------------
A stage after the line engine, with no I/O and no clock.  Lines come in as ``(text,
offset, end)``: the line without its ending, the byte offset of its first byte, and the
byte offset just after its ending, as the engine gives them in any encoding.  Events go out
as ``MultilineEvent``: the lines joined with ``"\\n"`` (whatever ended them in the file),
the offset of the first line, the end of the last, and how many lines.

Which lines belong together is decided by each line alone, so the same lines always give
the same events however they are cut into batches:

* ``start=REGEX``: a line the pattern matches starts a new event; any other line continues
  the current one (log records that begin with a timestamp: ``start=r"^\\d{4}-\\d\\d-\\d\\d"``);
* ``continuation=REGEX``: a line the pattern matches continues the current event; any
  other line starts a new one (indented lines, the frames of a stack trace).

Patterns are *searched* (``re.search``), as grep and log shippers do: anchor them with ``^``.
``MultilineJoiner.preset(name)`` gives the continuation patterns of ``MULTILINE_PRESETS``
(``"indented"``, ``"python"``, ``"java"``).  The presets join a traceback to the log
record before it, because that is where ``logging.exception`` and the Java loggers put it:
the record's own line starts the event, and the traceback lines continue it.

An event is complete when a line arrives that does not continue it.  The last event of a
quiet file would wait for ever, so the caller, who owns the clock, flushes it: ``feed``
takes the caller's ``now`` and ``pending_since`` is the ``now`` of the last line added to
the incomplete event; once ``now - pending_since`` passes the caller's timeout,
``flush()`` hands it out.

A line the line engine cut into pieces (longer than its ``max_line_bytes``) comes as its
first piece through ``feed`` and the rest through ``extend``: joined with nothing between,
the pattern tested on the line's start only.

Memory is bounded by ``max_event_bytes`` (the size of the event's lines in the file, line
endings included): a line that would make the event larger cuts it there; the event so far
goes out with ``cut=True`` and the line begins the next piece, which continues it (nothing
is dropped; a single line longer than the limit is a piece of its own, bounded by the line
engine's ``max_line_bytes``).

Checkpoints: an event is delivered only once complete, so the position that may be saved
is ``safe_offset()``: the offset of the first line of the incomplete event (or the end of
the last line, when none is incomplete).  A restart from there reads the incomplete event's
lines again and produces exactly the events one uninterrupted run would have.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "MULTILINE_PRESETS",
    "MultilineEvent",
    "MultilineJoiner",
]

DEFAULT_MAX_EVENT_BYTES = 1 << 20

#: Continuation patterns for common multi-line records, by name.
MULTILINE_PRESETS: Mapping[str, str] = MappingProxyType(
    {
        # Anything indented by a space or a tab.
        "indented": r"^[ \t]",
        # A traceback as ``logging`` writes it after the record: the header (or that of
        # ``stack_info=True``), the indented frames and source lines, the sentences and
        # blank lines between chained exceptions, and the final "SomeError: message" line
        # (a name ending in Error, Exception, Warning, Exit, Interrupt, Iteration or Group,
        # optionally dotted; an exception class named otherwise is not recognised).
        "python": (
            r"^(?:[ \t]|$|(?:Traceback|Stack) \(most recent call last\):"
            r"|During handling of the above exception, another exception occurred:"
            r"|The above exception was the direct cause of the following exception:"
            r"|(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
            r"(?:Error|Exception|Warning|Exit|Interrupt|Iteration|Group)(?::|$))"
        ),
        # A Java stack trace: the exception line (a dotted class name ending in Exception,
        # Error or Throwable), "at" frames, "... N more", "Caused by:", "Suppressed:".
        "java": (
            r"^(?:[ \t]+(?:at |\.\.\. \d+ (?:more|common frames omitted)|Caused by: |Suppressed: )"
            r"|Caused by: "
            r"|(?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?:Exception|Error|Throwable)(?::|$))"
        ),
    }
)


@dataclass(frozen=True, slots=True)
class MultilineEvent:
    """Lines joined with ``"\\n"``: from the first byte of the first line (``offset``) to
    just after the ending of the last (``end``).

    ``cut`` is true when the event reached ``max_event_bytes`` and was cut after this
    piece: the next event continues it.
    """

    text: str
    offset: int
    end: int
    lines: int
    cut: bool = False


def _compiled(pattern: str | re.Pattern[str], option: str) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        return pattern
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid {option} pattern {pattern!r}: {exc}") from None


class MultilineJoiner:
    """Joins lines into multi-line events; see the module's documentation.

    Exactly one of ``start`` and ``continuation`` is given.  ``offset`` is where the first
    line fed will start (a restart passes the checkpoint's offset): it is
    ``safe_offset()`` until a line is fed.
    """

    def __init__(
        self,
        *,
        start: str | re.Pattern[str] | None = None,
        continuation: str | re.Pattern[str] | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        offset: int = 0,
    ) -> None:
        if type(max_event_bytes) is not int or max_event_bytes < 1:
            raise ValueError(
                f"max_event_bytes must be a positive integer, not {max_event_bytes!r}"
            )
        self._starts_event: Callable[[str], bool]
        #: The patterns given (compiled), for ``empty_copy``.
        self.start: re.Pattern[str] | None = None
        self.continuation: re.Pattern[str] | None = None
        if start is not None and continuation is None:
            self.start = _compiled(start, "start")
            starts = self.start.search
            self._starts_event = lambda text: starts(text) is not None
        elif continuation is not None and start is None:
            self.continuation = _compiled(continuation, "continuation")
            continues = self.continuation.search
            self._starts_event = lambda text: continues(text) is None
        else:
            raise ValueError("give exactly one of start and continuation")
        self.max_event_bytes = max_event_bytes
        self._texts: list[str] = []
        self._first = offset  # of the first line held, when one is
        self._end = offset  # of the last line fed
        self._size = 0  # bytes of the lines held
        self._pending_since: float | None = None

    @classmethod
    def preset(
        cls, name: str, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, offset: int = 0
    ) -> MultilineJoiner:
        """A joiner with the continuation pattern ``MULTILINE_PRESETS[name]``."""
        try:
            pattern = MULTILINE_PRESETS[name]
        except KeyError:
            names = ", ".join(MULTILINE_PRESETS)
            raise ValueError(f"unknown multi-line preset {name!r} (known: {names})") from None
        return cls(continuation=pattern, max_event_bytes=max_event_bytes, offset=offset)

    def empty_copy(self, *, offset: int = 0) -> MultilineJoiner:
        """A joiner with this one's pattern and ``max_event_bytes``, holding nothing.

        One joiner holds one file's incomplete event: ``follow_many()`` gives each file
        an empty copy of the joiner it was given.
        """
        return MultilineJoiner(
            start=self.start,
            continuation=self.continuation,
            max_event_bytes=self.max_event_bytes,
            offset=offset,
        )

    def feed(self, lines: Iterable[tuple[str, int, int]], now: float) -> list[MultilineEvent]:
        """The events these lines complete; the rest is held.  ``now`` is the caller's clock."""
        events: list[MultilineEvent] = []
        starts_event = self._starts_event
        limit = self.max_event_bytes
        texts = self._texts
        fed = False
        for text, offset, end in lines:
            fed = True
            size = end - offset
            if texts:
                if starts_event(text):
                    events.append(self._take(cut=False))
                    texts = self._texts
                elif self._size + size > limit:
                    events.append(self._take(cut=True))
                    texts = self._texts
            if not texts:
                self._first = offset
            texts.append(text)
            self._size += size
            self._end = end
        if fed:
            self._pending_since = now
        return events

    def extend(self, text: str, offset: int, end: int, now: float) -> list[MultilineEvent]:
        """The rest of the last line fed, from ``offset`` to ``end``: a piece of a line
        longer than the line engine's ``max_line_bytes``, which cut it.  It is joined to
        that line with nothing between and never matched against the pattern (it is not
        the start of a line); like a line, it cuts the event first if it would make it
        larger than ``max_event_bytes`` (the cut piece ends inside the line).  The events
        this completes (a cut piece, or none).
        """
        events: list[MultilineEvent] = []
        size = end - offset
        if self._texts and self._size + size > self.max_event_bytes:
            events.append(self._take(cut=True))
        texts = self._texts
        if texts:
            texts[-1] += text
        else:  # the line's start went out (cut, or flushed): the piece begins an event
            self._first = offset
            texts.append(text)
        self._size += size
        self._end = end
        self._pending_since = now
        return events

    def _take(self, cut: bool) -> MultilineEvent:
        texts = self._texts
        event = MultilineEvent("\n".join(texts), self._first, self._end, len(texts), cut)
        self._texts = []
        self._size = 0
        return event

    def flush(self) -> MultilineEvent | None:
        """The incomplete event, as it is (the caller's timeout passed, or the input ended)."""
        return self._take(cut=False) if self._texts else None

    @property
    def pending_since(self) -> float | None:
        """The ``now`` of the last line added to the incomplete event; None when none is."""
        return self._pending_since if self._texts else None

    def safe_offset(self) -> int:
        """Where a restart must begin: the first line of the incomplete event, if any."""
        return self._first if self._texts else self._end
