"""Multi-line events: lines joined by a start or continuation pattern,
bounded by ``max_event_bytes``, flushed by the caller's clock, and a checkpoint that never
passes an incomplete event."""

from __future__ import annotations

import io
import logging
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from utf8stream.core.multiline import (
    MULTILINE_PRESETS,
    MultilineEvent,
    MultilineJoiner,
)

Line = tuple[str, int, int]


def lines_of(text: str, encoding: str = "utf-8", newline: str = "\n") -> list[Line]:
    """``text`` cut at ``newline`` into ``(line, offset, end)`` in ``encoding``'s bytes."""
    pieces = text.split(newline)
    if pieces[-1] == "":
        pieces.pop()
    lines: list[Line] = []
    offset = 0
    for piece in pieces:
        end = offset + len((piece + newline).encode(encoding))
        lines.append((piece, offset, end))
        offset = end
    return lines


def run(joiner: MultilineJoiner, lines: list[Line]) -> list[MultilineEvent]:
    events = joiner.feed(lines, now=0.0)
    last = joiner.flush()
    return events + ([last] if last else [])


def test_python_tracebacks_written_by_logging_join_their_record() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger("test_multiline")
    logger.propagate = False
    logger.addHandler(handler)
    records: list[str] = []

    def logged(call: object) -> None:
        start = stream.tell()
        assert callable(call)
        call()
        records.append(stream.getvalue()[start:].removesuffix("\n"))

    def chained() -> None:
        try:
            try:
                {}["missing"]
            except KeyError as exc:
                raise ValueError("bad value\n  detail on a second line") from exc
        except ValueError:
            logger.exception("request failed")

    def during_handling() -> None:
        try:
            try:
                1 / 0  # noqa: B018
            except ZeroDivisionError:
                import json

                json.loads("{")
        except json.JSONDecodeError:
            logger.exception("parse failed")

    try:
        logged(lambda: logger.warning("starting"))
        logged(chained)
        logged(lambda: logger.error("plain error, no traceback"))
        logged(during_handling)
        logged(lambda: logger.warning("where am I", stack_info=True))
        logged(lambda: logger.warning("done"))
    finally:
        logger.removeHandler(handler)
    assert sum(record.count("\n") for record in records) > 20
    # As Python 3.11 prints an exception group (3.10 cannot make one).
    records.insert(
        3,
        "2024-05-01 12:00:00,000 ERROR batch failed\n"
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "<string>", line 4, in <module>\n'
        "  | ExceptionGroup: many (2 sub-exceptions)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | ValueError: a\n"
        "    +------------------------------------",
    )
    text = "\n".join(records) + "\n"
    events = run(MultilineJoiner.preset("python"), lines_of(text))
    assert [event.text for event in events] == records
    assert [event.lines for event in events] == [r.count("\n") + 1 for r in records]


JAVA = """\
2024-05-01 12:00:00.000 INFO  [main] c.e.App - started
2024-05-01 12:00:01.000 ERROR [http-1] c.e.Handler - request failed
java.lang.IllegalStateException: could not handle
\tat com.example.Handler.handle(Handler.java:42)
\tat com.example.Server.run(Server.java:10)
Caused by: java.io.IOException: disk full
\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)
\t... 2 more
\tSuppressed: java.lang.RuntimeException: cleanup
\t\tat com.example.Handler.close(Handler.java:50)
2024-05-01 12:00:02.000 INFO  [main] c.e.App - stopping
"""


def test_java_stack_traces_join_their_record() -> None:
    events = run(MultilineJoiner.preset("java"), lines_of(JAVA))
    lines = JAVA.splitlines()
    assert [event.text for event in events] == [lines[0], "\n".join(lines[1:10]), lines[10]]


def test_a_start_pattern_in_utf16_with_crlf_gives_exact_offsets() -> None:
    text = "2024-01-01 a\r\n  more\r\nnot a date\r\n2024-01-02 b\r\n"
    lines = lines_of(text, "utf-16-le", "\r\n")
    events = run(MultilineJoiner(start=r"^\d{4}-\d\d-\d\d "), lines)
    assert events == [
        MultilineEvent("2024-01-01 a\n  more\nnot a date", 0, 68, 3),
        MultilineEvent("2024-01-02 b", 68, 96, 1),
    ]
    data = text.encode("utf-16-le")
    assert data[68:96].decode("utf-16-le") == "2024-01-02 b\r\n"


def test_lines_before_the_first_start_are_an_event_of_their_own() -> None:
    events = run(MultilineJoiner(start="^BEGIN"), lines_of("tail of\nsomething\nBEGIN x\n"))
    assert [(e.text, e.lines) for e in events] == [("tail of\nsomething", 2), ("BEGIN x", 1)]


def test_indented_continuations_and_a_leading_continuation_line() -> None:
    events = run(MultilineJoiner.preset("indented"), lines_of("  orphan\na\n  b\n\tc\nd\n"))
    assert [e.text for e in events] == ["  orphan", "a\n  b\n\tc", "d"]


def test_an_event_past_max_event_bytes_is_cut_into_flagged_pieces() -> None:
    # Each line is 5 bytes with its newline: 3 lines fit in 16 bytes, a 4th does not.
    text = "a000\n 001\n 002\n 003\n 004\nb000\n" + "x" * 40 + "\n"
    joiner = MultilineJoiner(continuation="^ ", max_event_bytes=16)
    events = run(joiner, lines_of(text))
    assert events == [
        MultilineEvent("a000\n 001\n 002", 0, 15, 3, cut=True),
        MultilineEvent(" 003\n 004", 15, 25, 2),
        MultilineEvent("b000", 25, 30, 1),
        MultilineEvent("x" * 40, 30, 71, 1),  # one line is never split here
    ]


def test_the_pieces_of_a_line_extend_it_and_cut_the_event_like_lines() -> None:
    joiner = MultilineJoiner(start=r"^\d", max_event_bytes=10)
    assert joiner.feed([("1 ab", 0, 4)], now=0.0) == []  # a line's first piece
    # Joined with nothing between; "5" would start an event as a line, not as a piece.
    assert joiner.extend("5cd", 4, 7, now=1.0) == []
    assert (joiner.pending_since, joiner.safe_offset()) == (1.0, 0)
    # 7 + 4 bytes > 10: the event so far is cut inside the line.
    assert joiner.extend("efg", 7, 11, now=2.0) == [MultilineEvent("1 ab5cd", 0, 7, 1, True)]
    assert joiner.safe_offset() == 7
    assert joiner.feed([(" m", 11, 14), ("2", 14, 16)], now=3.0) == [
        MultilineEvent("efg\n m", 7, 14, 2, False)
    ]
    assert joiner.flush() == MultilineEvent("2", 14, 16, 1, False)
    # With nothing held (the line's start went out), a piece begins an event.
    assert joiner.extend("tail", 16, 20, now=4.0) == []
    assert joiner.flush() == MultilineEvent("tail", 16, 20, 1, False)


def test_the_caller_flushes_an_event_after_its_own_timeout() -> None:
    joiner = MultilineJoiner.preset("indented", offset=100)
    assert (joiner.pending_since, joiner.safe_offset()) == (None, 100)
    assert joiner.feed([("record", 100, 107), ("  more", 107, 114)], now=5.0) == []
    assert (joiner.pending_since, joiner.safe_offset()) == (5.0, 100)
    assert joiner.feed([], now=9.0) == []
    assert joiner.pending_since == 5.0  # no line came: the event is as old as before
    assert joiner.feed([("  again", 114, 122)], now=6.5) == []
    assert joiner.pending_since == 6.5
    assert joiner.flush() == MultilineEvent("record\n  more\n  again", 100, 122, 3)
    assert (joiner.pending_since, joiner.safe_offset()) == (None, 122)
    assert joiner.flush() is None
    # A continuation arriving after the flush has nothing left to continue.
    assert joiner.feed([("  late", 122, 129), ("next", 129, 134)], now=7.0) == [
        MultilineEvent("  late", 122, 129, 1)
    ]
    assert joiner.safe_offset() == 129


@pytest.mark.parametrize(
    "joiner",
    [
        MultilineJoiner(start=r"^\d", max_event_bytes=9),
        MultilineJoiner(continuation=re.compile(r"^ "), max_event_bytes=9),
    ],
    ids=["start", "continuation"],
)
def test_an_empty_copy_has_the_rules_and_limit_but_not_the_event(
    joiner: MultilineJoiner,
) -> None:
    text = "1 a\n  b\n  c\n2 d\n"
    original = run(joiner.empty_copy(), lines_of(text))
    assert [(e.text, e.offset, e.cut) for e in original] == [
        ("1 a\n  b", 0, True),  # cut: 4 + 4 + 4 bytes > 9
        ("  c", 8, False),
        ("2 d", 12, False),
    ]
    joiner.feed(lines_of("1 held\n"), now=1.0)
    copy = joiner.empty_copy(offset=100)
    assert (copy.pending_since, copy.safe_offset(), copy.flush()) == (None, 100, None)
    assert (copy.start, copy.continuation, copy.max_event_bytes) == (
        joiner.start,
        joiner.continuation,
        9,
    )
    assert run(copy, lines_of(text)) == original
    assert joiner.safe_offset() == 0  # the original still holds its event


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "exactly one of start and continuation"),
        ({"start": "a", "continuation": "b"}, "exactly one of start and continuation"),
        ({"start": "("}, r"invalid start pattern '\(': missing \)"),
        ({"continuation": "[z-a]"}, "invalid continuation pattern"),
        ({"start": "a", "max_event_bytes": 0}, "max_event_bytes must be a positive integer"),
    ],
)
def test_bad_arguments_are_clear_errors(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MultilineJoiner(**arguments)  # type: ignore[arg-type]


def test_an_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(
        ValueError, match=r"unknown multi-line preset 'ruby' \(known: indented, python, java\)"
    ):
        MultilineJoiner.preset("ruby")


# Lines drawn from a few shapes that the patterns below tell apart, with one- or two-byte
# endings and gaps (bytes the engine skipped), so that offsets are not just a running sum.
shapes = st.sampled_from(["E rec", "  at x", "", "Traceback", "x", "é" * 7, "BEGIN", "\tz"])
PATTERNS = [
    {"start": r"^E "},
    {"start": "^BEGIN|^E"},
    {"continuation": r"^\s"},
    *({"continuation": pattern} for pattern in MULTILINE_PRESETS.values()),
]


@st.composite
def line_lists(draw: st.DrawFn) -> list[Line]:
    lines: list[Line] = []
    offset = draw(st.integers(0, 1000))
    for text in draw(st.lists(shapes, max_size=25)):
        end = offset + len(text.encode()) + draw(st.sampled_from([1, 2]))
        lines.append((text, offset, end))
        offset = end + draw(st.sampled_from([0, 0, 0, 3]))
    return lines


# Also patterns made up on the spot: a random prefix, anchored or searched anywhere.
made_up = st.builds(
    lambda mode, anchor, prefix: {mode: anchor + re.escape(prefix)},
    st.sampled_from(["start", "continuation"]),
    st.sampled_from(["^", ""]),
    st.text(alphabet=" \tEBTxaé", max_size=2),
)
joiners = st.tuples(st.sampled_from(PATTERNS) | made_up, st.integers(1, 60))


def starts(pattern: dict[str, str], text: str) -> bool:
    if "start" in pattern:
        return re.search(pattern["start"], text) is not None
    return re.search(pattern["continuation"], text) is None


@given(lines=line_lists(), setup=joiners)
def test_events_partition_the_lines_as_the_rules_say(
    lines: list[Line], setup: tuple[dict[str, str], int]
) -> None:
    pattern, limit = setup
    events = run(MultilineJoiner(**pattern, max_event_bytes=limit), lines)
    position = 0
    for number, event in enumerate(events):
        members = lines[position : position + event.lines]
        assert event.lines >= 1 and len(members) == event.lines
        assert event.text == "\n".join(text for text, _, _ in members)
        assert (event.offset, event.end) == (members[0][1], members[-1][2])
        # Within an event every line continues it, and it fits (or is one line).
        assert not any(starts(pattern, text) for text, _, _ in members[1:])
        size = sum(end - offset for _, offset, end in members)
        assert size <= limit or event.lines == 1
        # It ended because the next line starts an event, or the next line would not fit.
        following = position + event.lines
        if following < len(lines):
            text, offset, end = lines[following]
            if event.cut:
                assert not starts(pattern, text) and size + end - offset > limit
            else:
                assert starts(pattern, text)
        else:
            assert not event.cut and number == len(events) - 1
        position = following
    assert position == len(lines)


@given(lines=line_lists(), setup=joiners, data=st.data())
def test_a_restart_from_the_safe_offset_gives_the_same_events(
    lines: list[Line], setup: tuple[dict[str, str], int], data: st.DataObject
) -> None:
    pattern, limit = setup
    start = lines[0][1] if lines else 0
    whole = run(MultilineJoiner(**pattern, max_event_bytes=limit, offset=start), lines)
    for cut in range(len(lines) + 1):
        first = MultilineJoiner(**pattern, max_event_bytes=limit, offset=start)
        # Fed in batches of any size: batching changes nothing.
        events: list[MultilineEvent] = []
        batch_ends = sorted(data.draw(st.sets(st.integers(0, cut), max_size=3)) | {cut})
        begin = 0
        for batch_end in batch_ends:
            events += first.feed(lines[begin:batch_end], now=0.0)
            begin = batch_end
        safe = first.safe_offset()
        assert safe <= (lines[cut][1] if cut < len(lines) else safe)
        # The checkpoint is a line's start (or the end of everything delivered).
        resume = next((i for i, line in enumerate(lines) if line[1] == safe), cut)
        assert resume <= cut
        delivered_lines = sum(event.lines for event in events)
        assert resume == delivered_lines
        second = MultilineJoiner(**pattern, max_event_bytes=limit, offset=safe)
        assert events + run(second, lines[resume:]) == whole
