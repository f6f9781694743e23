"""The follower's state machine with no file system: events in, states and actions out.

Each scenario feeds the observations a driver would make (sizes, positions, what the
path names, clock readings) and checks where the machine goes and what it asks for; the
last test checks that the scenarios together take every transition of the table.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from utf8stream.apps.follow._machine import (
    TRANSITIONS,
    Action,
    Event,
    FollowMachine,
    MachineError,
    PathSeen,
    State,
    diagram,
)

GRACE = 1.0
POLL = 0.25


def machine(state: State = State.OPENING) -> FollowMachine:
    m = FollowMachine(rotate_grace=GRACE, poll_interval=POLL)
    m.state = state
    return m


def reading() -> FollowMachine:
    m = machine()
    assert m.handle(Event.OPENED).action is Action.READ
    assert m.state is State.READING
    return m


def draining() -> FollowMachine:
    m = reading()
    step = m.at_end(size=10, position=10, path=PathSeen.OTHER)
    assert (step.event, step.state, step.action) == (
        Event.PATH_REPLACED,
        State.DRAINING_ROTATED,
        Action.READ,
    )
    return m


def moving_on() -> FollowMachine:
    m = draining()
    m.at_rotated_end(size=10, position=10, now=100.0, written_ago=5.0)
    step = m.writer_checked(may_append=False)
    assert (step.state, step.action) == (State.MOVING_ON, Action.FIND_NEXT)
    return m


def draining_copy() -> FollowMachine:
    m = machine()
    assert m.handle(Event.OPENED_COPY).state is State.DRAINING_COPY
    return m


# -- scenarios: each a story a follower lives through -----------------------------------


def opening_and_waiting_for_the_path() -> None:
    m = machine()
    step = m.handle(Event.OPEN_FAILED)
    assert (step.state, step.action, step.timeout) == (State.WAITING_FOR_PATH, Action.WAIT, POLL)
    assert m.from_start  # a file that appears now is new: read from its start
    assert m.handle(Event.OPEN_FAILED).state is State.WAITING_FOR_PATH
    assert m.handle(Event.OPENED).state is State.READING
    assert not m.from_start
    for event, state in [
        (Event.OPENED_ROTATED, State.DRAINING_ROTATED),
        (Event.OPENED_COPY, State.DRAINING_COPY),
    ]:
        for start in (State.OPENING, State.WAITING_FOR_PATH):
            m = machine(start)
            assert m.handle(event) == type(step)(event, state, Action.READ)


def reading_and_catching_up() -> None:
    m = reading()
    assert m.bytes_read().state is State.READING
    step = m.at_end(size=10, position=10, path=PathSeen.SAME)
    assert (step.event, step.state, step.action, step.timeout) == (
        Event.END_OF_FILE,
        State.CAUGHT_UP,
        Action.WAIT,
        None,
    )
    assert m.at_end(size=10, position=10, path=PathSeen.SAME).state is State.CAUGHT_UP
    assert m.bytes_read().state is State.READING
    # The path gone: told, and looked at again after poll_interval.
    step = m.at_end(size=10, position=10, path=PathSeen.GONE)
    assert (step.event, step.state, step.timeout) == (Event.PATH_GONE, State.CAUGHT_UP, POLL)
    step = m.at_end(size=10, position=10, path=PathSeen.GONE)
    assert step.event is Event.PATH_GONE
    assert m.at_end(size=10, position=10, path=PathSeen.OTHER).state is State.DRAINING_ROTATED
    assert not m.watches_path


def stop_at_end() -> None:
    for caught_up in (False, True):
        m = reading()
        if caught_up:
            m.at_end(size=5, position=5, path=PathSeen.SAME)
        m.stopping = True
        # Stopping wins over anything the end shows: read once, then the last line.
        step = m.at_end(size=0, position=5, path=PathSeen.OTHER)
        assert (step.event, step.state, step.action) == (
            Event.STOP_AT_END,
            State.DONE,
            Action.FINISH,
        )
    # A rotated file is left at once (no grace), then the next files are read.
    m = draining()
    m.stopping = True
    step = m.at_rotated_end(size=10, position=10, now=0.0, written_ago=0.0)
    assert (step.state, step.action) == (State.MOVING_ON, Action.FIND_NEXT)
    assert m.handle(Event.NEXT_IS_PATH).state is State.READING
    m = draining()
    m.at_rotated_end(size=10, position=10, now=0.0, written_ago=0.0)
    m.stopping = True
    assert m.at_rotated_end(size=10, position=10, now=0.0, written_ago=0.0).state is (
        State.MOVING_ON
    )
    # ... and with no next file, the follower stops there.
    step = m.no_next_file()
    assert (step.state, step.action) == (State.DONE, Action.FINISH)


def truncation_without_a_copy_is_a_gap() -> None:
    m = reading()
    m.at_end(size=100, position=100, path=PathSeen.SAME)
    step = m.at_end(size=3, position=100, path=PathSeen.SAME)
    assert (step.event, step.state, step.action) == (
        Event.TRUNCATED,
        State.TRUNCATED,
        Action.FIND_COPY,
    )
    step, recovered, lost = m.copy_looked_up(copy_size=None, position=100, known_size=130)
    assert (step.event, step.state, step.action) == (
        Event.NO_COPY,
        State.READING,
        Action.REOPEN_AT_START,
    )
    assert (recovered, lost, m.take_lost(), m.lost) == (0, 30, 30, 0)


def copytruncate_reads_the_copy_first() -> None:
    m = reading()
    m.handle(Event.TRUNCATED)  # the bytes before the position changed
    step, recovered, lost = m.copy_looked_up(copy_size=120, position=100, known_size=130)
    assert (step.event, step.state, step.action) == (
        Event.COPY_FOUND,
        State.READING_COPY,
        Action.TAKE_COPY,
    )
    assert (recovered, lost, m.lost) == (20, 10, 10)  # bytes written after the copy: a gap
    assert m.bytes_read().state is State.READING_COPY
    m.copy_damaged(copy_size=120, position=110)
    step = m.handle(Event.END_OF_FILE)
    assert (step.state, step.action) == (State.READING, Action.REOPEN_AT_START)
    assert m.take_lost() == 20


def copy_holding_nothing_new_is_no_copy() -> None:
    m = reading()
    m.handle(Event.TRUNCATED)
    step, recovered, lost = m.copy_looked_up(copy_size=100, position=100, known_size=100)
    assert (step.event, recovered, lost, m.lost) == (Event.NO_COPY, 0, 0, 0)


def copytruncate_between_open_and_first_read() -> None:
    # A file opened (its first bytes fingerprinted) and copytruncated before anything
    # was read from it: its copy holds what the fingerprint describes, read first.
    m = reading()
    step = m.handle(Event.SHRANK_BEFORE_FIRST_READ)
    assert (step.state, step.action) == (State.TRUNCATED, Action.FIND_COPY)
    step, recovered, _ = m.copy_looked_up(copy_size=4096, position=0, known_size=4096)
    assert (step.state, step.action, recovered, m.lost) == (
        State.READING_COPY,
        Action.TAKE_COPY,
        4096,
        0,
    )
    assert m.handle(Event.END_OF_FILE).state is State.READING
    # The same in the other states a file is read in, and a rotated file comes back to
    # being drained.
    m = reading()
    m.at_end(size=0, position=0, path=PathSeen.SAME)
    assert m.handle(Event.SHRANK_BEFORE_FIRST_READ).state is State.TRUNCATED
    m = draining()
    m.handle(Event.SHRANK_BEFORE_FIRST_READ)
    step, _, _ = m.copy_looked_up(copy_size=None, position=0, known_size=0)
    assert step.state is State.DRAINING_ROTATED
    m = draining()
    m.at_rotated_end(size=0, position=0, now=0.0, written_ago=0.0)
    assert m.handle(Event.SHRANK_BEFORE_FIRST_READ).state is State.TRUNCATED


def truncated_rotated_file_is_drained_again() -> None:
    for quiet in (False, True):
        m = draining()
        if quiet:
            m.at_rotated_end(size=50, position=50, now=0.0, written_ago=0.0)
        step = m.at_rotated_end(size=10, position=50, now=0.0, written_ago=0.0)
        assert (step.event, step.state) == (Event.TRUNCATED, State.TRUNCATED)
        m.copy_looked_up(copy_size=60, position=50, known_size=50)
        assert m.state is State.READING_COPY
        assert m.handle(Event.END_OF_FILE).state is State.DRAINING_ROTATED


def rotated_file_is_left_after_its_grace() -> None:
    m = draining()
    # Written 0.2 s ago, first seen quiet now: 0.8 s of grace left.
    step = m.at_rotated_end(size=10, position=10, now=100.0, written_ago=0.2)
    assert (step.event, step.state, step.action) == (
        Event.QUIET,
        State.ROTATED_QUIET,
        Action.WAIT,
    )
    assert step.timeout == pytest.approx(0.8)
    # Still quiet 0.5 s later: measured from when it was first seen quiet.
    step = m.at_rotated_end(size=10, position=10, now=100.5, written_ago=99.0)
    assert step.event is Event.GRACE_ELAPSED  # written long ago (a restart): at once
    assert step.action is Action.CHECK_WRITER
    # The writer still holds it and nothing was written at the path: wait again.
    step = m.writer_checked(may_append=True)
    assert (step.state, step.action, step.timeout) == (State.ROTATED_QUIET, Action.WAIT, GRACE)
    step = m.at_rotated_end(size=10, position=10, now=100.6, written_ago=0.3)
    assert step.event is Event.QUIET  # a new byte was written: quiet since then
    assert step.timeout == pytest.approx(0.4)
    assert m.bytes_read().state is State.DRAINING_ROTATED
    assert m.quiet_since is None
    assert m.bytes_read().state is State.DRAINING_ROTATED
    # A modification time in the future (a clock set back) does not hold it forever.
    step = m.at_rotated_end(size=10, position=10, now=200.0, written_ago=-50.0)
    assert step.event is Event.QUIET
    step = m.at_rotated_end(size=10, position=10, now=201.5, written_ago=-50.0)
    assert step.event is Event.GRACE_ELAPSED
    step = m.at_rotated_end(size=10, position=10, now=201.6, written_ago=-50.0)
    assert (step.event, step.state) == (Event.GRACE_ELAPSED, State.ROTATED_QUIET)
    step = m.writer_checked(may_append=False)
    assert (step.event, step.state, step.action) == (
        Event.WRITER_GONE,
        State.MOVING_ON,
        Action.FIND_NEXT,
    )


def zero_grace_waits_a_poll_for_the_writer() -> None:
    m = FollowMachine(rotate_grace=0.0, poll_interval=POLL)
    m.handle(Event.OPENED_ROTATED)
    assert m.at_rotated_end(size=1, position=1, now=0.0, written_ago=0.0).event is (
        Event.GRACE_ELAPSED
    )
    assert m.writer_checked(may_append=True).timeout == POLL


def moving_on_to_the_next_file() -> None:
    for event, state in [
        (Event.NEXT_ROTATED, State.DRAINING_ROTATED),
        (Event.NEXT_COPY, State.DRAINING_COPY),
        (Event.NEXT_IS_PATH, State.READING),
    ]:
        m = moving_on()
        m.quiet_since = 5.0
        step = m.handle(event)
        assert (step.state, step.action) == (state, Action.LEAVE)
        assert m.quiet_since is None  # the next file's grace is its own
    # The path cannot be opened now: the rotated file is kept, and left later.
    m = moving_on()
    step = m.no_next_file()
    assert (step.event, step.state, step.action) == (
        Event.NO_NEXT_FILE,
        State.ROTATED_QUIET,
        Action.WAIT,
    )
    assert m.at_rotated_end(size=1, position=1, now=300.0, written_ago=9.0).action is (
        Action.CHECK_WRITER
    )


def draining_a_copy_then_the_next_files() -> None:
    m = draining_copy()
    assert m.bytes_read().state is State.DRAINING_COPY
    step = m.handle(Event.END_OF_FILE)
    assert (step.state, step.action) == (State.LEAVING_COPY, Action.FIND_NEXT)
    for event, state in [
        (Event.NEXT_ROTATED, State.DRAINING_ROTATED),
        (Event.NEXT_COPY, State.DRAINING_COPY),
        (Event.NEXT_IS_PATH, State.READING),
    ]:
        m = draining_copy()
        m.handle(Event.END_OF_FILE)
        assert m.handle(event).state is state
    # The path cannot be opened now: opened again (from its start) at the next step,
    # even when stopping (nothing is held open to finish).
    m = draining_copy()
    m.stopping = True
    m.handle(Event.END_OF_FILE)
    step = m.no_next_file()
    assert (step.event, step.state, step.action) == (
        Event.NO_NEXT_FILE,
        State.OPENING,
        Action.LEAVE,
    )
    assert m.from_start
    assert m.handle(Event.OPENED).state is State.READING
    assert not m.from_start


def closing_from_every_state() -> None:
    for state in State:
        m = machine(state)
        step = m.handle(Event.CLOSED)
        assert (step.state, step.action) == (State.DONE, Action.RELEASE)


SCENARIOS: list[Callable[[], None]] = [
    opening_and_waiting_for_the_path,
    reading_and_catching_up,
    stop_at_end,
    truncation_without_a_copy_is_a_gap,
    copytruncate_reads_the_copy_first,
    copy_holding_nothing_new_is_no_copy,
    copytruncate_between_open_and_first_read,
    truncated_rotated_file_is_drained_again,
    rotated_file_is_left_after_its_grace,
    zero_grace_waits_a_poll_for_the_writer,
    moving_on_to_the_next_file,
    draining_a_copy_then_the_next_files,
    closing_from_every_state,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_scenario(scenario: Callable[[], None]) -> None:
    scenario()


def test_the_scenarios_take_every_transition(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: set[tuple[State, Event]] = set()
    handle = FollowMachine.handle

    def recording(self: FollowMachine, event: Event, timeout: float | None = None) -> object:
        state = self.state
        step = handle(self, event, timeout)
        taken.add((state, event))
        return step

    monkeypatch.setattr(FollowMachine, "handle", recording)
    for scenario in SCENARIOS:
        scenario()
    assert taken == set(TRANSITIONS)


def test_an_event_with_no_transition_is_refused() -> None:
    m = machine(State.DONE)
    with pytest.raises(MachineError, match="BYTES_READ in DONE"):
        m.handle(Event.BYTES_READ)
    assert m.state is State.DONE
    m = reading()
    with pytest.raises(MachineError):
        m.handle(Event.COPY_FOUND)
    assert m.state is State.READING


def test_every_state_but_done_has_a_way_out_and_every_state_is_reached() -> None:
    sources = {state for state, _ in TRANSITIONS}
    targets = {t for t, _ in TRANSITIONS.values() if isinstance(t, State)}
    assert sources == set(State)
    assert targets | {State.OPENING} == set(State)


def test_the_diagram_has_every_transition_but_closing() -> None:
    text = diagram()
    assert text.startswith("stateDiagram-v2\n")
    edges = [line for line in text.splitlines() if "-->" in line and "[*]" not in line]
    resumes = sum(isinstance(t, str) for t, _ in TRANSITIONS.values())
    closing = sum(event is Event.CLOSED for _, event in TRANSITIONS)
    assert len(edges) == len(TRANSITIONS) - closing + resumes


def test_the_machine_does_no_io_reads_no_clock_and_imports_no_event_loop() -> None:
    import ast
    from pathlib import Path

    from utf8stream.apps.follow import _machine

    tree = ast.parse(Path(_machine.__file__).read_text("utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported == {"__future__", "enum", "dataclasses"}
    # (Its ``__main__`` block prints the diagram: the machine itself never runs it.)
    machine = [
        n for n in tree.body if not (isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))
    ]
    called = {
        node.func.id
        for top in machine
        for node in ast.walk(top)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"open", "print", "input", "__import__"}
    assert len(machine) == len(tree.body) - 1
