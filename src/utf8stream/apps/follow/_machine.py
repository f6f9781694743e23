"""The follower's state machine: which file is read, and what happens at its end.

Theory of operation
-------------------
Everything that affects the follower's state lives in this file.  The follower is a
small driver (``_follower.py``) that does the opens, the reads and the waits; after each
it tells the machine what it observed (an ``Event``), and the machine, consulting
``TRANSITIONS``, moves to its next ``State`` and answers with the ``Action`` the driver
takes.  The machine does no I/O, reads no clock and imports no event loop: what it needs
to know (a file's size, whether the path still names the file read, the time now, how
long ago the file was written) is passed in, and what it decides is plain data.

The machine decides:

- what the end of the data means (``at_end``): stop (``stop_at_end()``), a truncation
  (the file is shorter than the position), a rotation (the path names another file), a
  path gone, or nothing new;
- when a rotated file is left (``at_rotated_end``): once it has been quiet for
  ``rotate_grace`` (measured from the later of its last write and the moment it was first
  seen with nothing new) and its writer no longer holds it; at once when stopping;
- whether a shrink was a copytruncate (``copy_looked_up``): a rotated copy holds the
  bytes not read yet, read before the file starts again from its beginning; else those
  bytes are a gap, reported when the file is left (``lost``);
- which kind of file is read next (the driver finds it by name, ``_rotation._next_file``,
  and tells what it found): a rotated file, a compressed copy, or the path;
- where a truncated file's reading goes on: in the state it was read in before
  (``RESUME``: the path, or a rotated file being drained).

One follower of one path and each file of ``follow_many`` drive one machine each.
``diagram()`` draws ``TRANSITIONS`` as a Mermaid state diagram (``docs/layout.md``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "TRANSITIONS",
    "Action",
    "Event",
    "FollowMachine",
    "MachineError",
    "PathSeen",
    "State",
    "Step",
    "diagram",
]


class State(enum.Enum):
    #: No file open yet: the first open, or the path once a drained copy is left.
    OPENING = "opening"
    #: The path cannot be opened (``retry``): tried again after a wait.
    WAITING_FOR_PATH = "waiting for the path"
    #: Reading the file the path names.
    READING = "reading"
    #: At its end: waiting for it (or the path) to change.
    CAUGHT_UP = "caught up"
    #: The file shrank or was rewritten: a rotated copy of the bytes not read is looked for.
    TRUNCATED = "truncated"
    #: Reading a truncated file's unread bytes from its rotated copy (copytruncate).
    READING_COPY = "reading a copy"
    #: Reading a file renamed away from the path (its writer may still append).
    DRAINING_ROTATED = "draining a rotated file"
    #: A rotated file at its end, waiting out ``rotate_grace`` (and its writer).
    ROTATED_QUIET = "rotated file quiet"
    #: Leaving a rotated file: the next file (a newer rotation, or the path) is looked for.
    MOVING_ON = "moving on"
    #: Reading a rotated file from a copy (compressed, or copytruncate's from a restart).
    DRAINING_COPY = "draining a copy"
    #: Leaving a copy read to its end: the next file is looked for.
    LEAVING_COPY = "leaving a copy"
    #: Stopped: at the end with ``stop_at_end()``, or closed.
    DONE = "done"


#: The target of a transition that goes back to the state the file was read in before
#: it was truncated (``READING`` or ``DRAINING_ROTATED``).
RESUME = "resume"


class Event(enum.Enum):
    OPENED = "path opened"
    OPENED_ROTATED = "checkpoint's file found rotated"
    OPENED_COPY = "checkpoint's file found in a copy"
    OPEN_FAILED = "path cannot be opened"
    BYTES_READ = "bytes read"
    END_OF_FILE = "end of file"
    PATH_REPLACED = "path names another file"
    PATH_GONE = "path gone"
    TRUNCATED = "file truncated"
    #: The first bytes are not the fingerprinted ones and nothing was read yet: the file
    #: under the open descriptor shrank (a copytruncate) between its open and first read.
    SHRANK_BEFORE_FIRST_READ = "shrank before its first read"
    COPY_FOUND = "copy found"
    NO_COPY = "no copy"
    QUIET = "quiet, grace left"
    GRACE_ELAPSED = "grace elapsed"
    WRITER_MAY_APPEND = "writer may append"
    WRITER_GONE = "writer gone"
    NEXT_ROTATED = "next is a rotated file"
    NEXT_COPY = "next is a compressed copy"
    NEXT_IS_PATH = "next is the path"
    NO_NEXT_FILE = "path cannot be opened now"
    STOP_AT_END = "stop requested"
    CLOSED = "closed"


class Action(enum.Enum):
    #: Read (more of) the file or copy being read.
    READ = "read"
    #: Wait for a change (``Step.timeout`` at most), then read.
    WAIT = "wait"
    #: Look for a rotated copy holding the truncated file's unread bytes.
    FIND_COPY = "find copy"
    #: Read the copy found before the truncated file.
    TAKE_COPY = "take copy"
    #: Read the truncated file again from its start (unread bytes no copy held: a gap).
    REOPEN_AT_START = "reopen at start"
    #: Ask whether a process still holds the rotated file open for writing.
    CHECK_WRITER = "check writer"
    #: Look for the next file.
    FIND_NEXT = "find next"
    #: Leave the file read to its end (its last line handed out) for the one found.
    LEAVE = "leave"
    #: Hand out the unfinished last line and stop.
    FINISH = "finish"
    #: Close the file.
    RELEASE = "release"


class PathSeen(enum.Enum):
    """What a look at the path found, against the file read."""

    SAME = "same"
    OTHER = "other"
    GONE = "gone"


_S, _E, _A = State, Event, Action
_OPEN = {
    _E.OPENED: (_S.READING, _A.READ),
    _E.OPENED_ROTATED: (_S.DRAINING_ROTATED, _A.READ),
    _E.OPENED_COPY: (_S.DRAINING_COPY, _A.READ),
    _E.OPEN_FAILED: (_S.WAITING_FOR_PATH, _A.WAIT),
}
_LIVE = {
    _E.BYTES_READ: (_S.READING, _A.READ),
    _E.END_OF_FILE: (_S.CAUGHT_UP, _A.WAIT),
    _E.PATH_REPLACED: (_S.DRAINING_ROTATED, _A.READ),
    _E.PATH_GONE: (_S.CAUGHT_UP, _A.WAIT),
    _E.TRUNCATED: (_S.TRUNCATED, _A.FIND_COPY),
    _E.SHRANK_BEFORE_FIRST_READ: (_S.TRUNCATED, _A.FIND_COPY),
    _E.STOP_AT_END: (_S.DONE, _A.FINISH),
}
_ROTATED = {
    _E.BYTES_READ: (_S.DRAINING_ROTATED, _A.READ),
    _E.QUIET: (_S.ROTATED_QUIET, _A.WAIT),
    _E.GRACE_ELAPSED: (_S.ROTATED_QUIET, _A.CHECK_WRITER),
    _E.TRUNCATED: (_S.TRUNCATED, _A.FIND_COPY),
    _E.SHRANK_BEFORE_FIRST_READ: (_S.TRUNCATED, _A.FIND_COPY),
    _E.STOP_AT_END: (_S.MOVING_ON, _A.FIND_NEXT),
}
_NEXT = {
    _E.NEXT_ROTATED: (_S.DRAINING_ROTATED, _A.LEAVE),
    _E.NEXT_COPY: (_S.DRAINING_COPY, _A.LEAVE),
    _E.NEXT_IS_PATH: (_S.READING, _A.LEAVE),
}

#: ``(state, event) -> (next state, action)``: every move the follower makes.  A next
#: state of ``RESUME`` is the state the truncated file was read in.
TRANSITIONS: dict[tuple[State, Event], tuple[State | str, Action]] = {
    **{(_S.OPENING, e): t for e, t in _OPEN.items()},
    **{(_S.WAITING_FOR_PATH, e): t for e, t in _OPEN.items()},
    **{(_S.READING, e): t for e, t in _LIVE.items()},
    **{(_S.CAUGHT_UP, e): t for e, t in _LIVE.items()},
    (_S.TRUNCATED, _E.COPY_FOUND): (_S.READING_COPY, _A.TAKE_COPY),
    (_S.TRUNCATED, _E.NO_COPY): (RESUME, _A.REOPEN_AT_START),
    (_S.READING_COPY, _E.BYTES_READ): (_S.READING_COPY, _A.READ),
    (_S.READING_COPY, _E.END_OF_FILE): (RESUME, _A.REOPEN_AT_START),
    **{(_S.DRAINING_ROTATED, e): t for e, t in _ROTATED.items()},
    **{(_S.ROTATED_QUIET, e): t for e, t in _ROTATED.items()},
    (_S.ROTATED_QUIET, _E.WRITER_MAY_APPEND): (_S.ROTATED_QUIET, _A.WAIT),
    (_S.ROTATED_QUIET, _E.WRITER_GONE): (_S.MOVING_ON, _A.FIND_NEXT),
    **{(_S.MOVING_ON, e): t for e, t in _NEXT.items()},
    # The path cannot be opened now: the rotated file is kept (its writer may append).
    (_S.MOVING_ON, _E.NO_NEXT_FILE): (_S.ROTATED_QUIET, _A.WAIT),
    (_S.MOVING_ON, _E.STOP_AT_END): (_S.DONE, _A.FINISH),
    (_S.DRAINING_COPY, _E.BYTES_READ): (_S.DRAINING_COPY, _A.READ),
    (_S.DRAINING_COPY, _E.END_OF_FILE): (_S.LEAVING_COPY, _A.FIND_NEXT),
    **{(_S.LEAVING_COPY, e): t for e, t in _NEXT.items()},
    # A copy holds nothing more to wait for: the path is opened again (from its start).
    (_S.LEAVING_COPY, _E.NO_NEXT_FILE): (_S.OPENING, _A.LEAVE),
    # ``aclose()`` ends the follower from any state.
    **{(s, _E.CLOSED): (_S.DONE, _A.RELEASE) for s in State},
}
#: The states a truncated file can have been read in (``RESUME`` leads back to them).
_RESUMABLE = (_S.READING, _S.DRAINING_ROTATED)
_LIVE_STATES = (_S.READING, _S.CAUGHT_UP)
_FRESH = (_A.READ, _A.LEAVE, _A.REOPEN_AT_START, _A.TAKE_COPY)
_ROTATED_STATES = (_S.DRAINING_ROTATED, _S.ROTATED_QUIET)


class MachineError(RuntimeError):
    """An event the table has no transition for in the current state (a driver bug)."""


@dataclass(frozen=True)
class Step:
    """What the machine decided: the event it took, the state it moved to, the action."""

    event: Event
    state: State
    action: Action
    #: ``WAIT``: seconds to wait at most (None: until a change).
    timeout: float | None = None


class FollowMachine:
    """One followed file's state, moved only by ``handle`` (and the methods that work out
    an event from an observation and hand it to ``handle``)."""

    def __init__(self, *, rotate_grace: float, poll_interval: float) -> None:
        self.rotate_grace = rotate_grace
        self.poll_interval = poll_interval
        self.state = State.OPENING
        #: ``stop_at_end()``: at the end of the data, stop (rotated files drained first).
        self.stopping = False
        #: The next open reads the path from its start: a file that appeared after it
        #: could not be opened, or after a copy was left, is new.
        self.from_start = False
        #: When the rotated file was first seen with nothing new (the driver's monotonic
        #: clock); None while it gives bytes.
        self.quiet_since: float | None = None
        #: Bytes of the file read that no copy held: reported when it is left.
        self.lost = 0
        #: The state the file being read was in before its truncation.
        self._resume_in = State.READING

    # -- the table -----------------------------------------------------------------

    def handle(self, event: Event, timeout: float | None = None) -> Step:
        """Move by ``event``; the ``Step`` says what the driver does next."""
        state = self.state
        try:
            target, action = TRANSITIONS[state, event]
        except KeyError:
            raise MachineError(f"no transition for {event.name} in {state.name}") from None
        if event in (Event.TRUNCATED, Event.SHRANK_BEFORE_FIRST_READ):
            self._resume_in = State.DRAINING_ROTATED if state in _ROTATED_STATES else State.READING
        if isinstance(target, str):
            target = self._resume_in
        if action in _FRESH:
            self.quiet_since = None  # bytes came, or another file (or its start) is read
        if target in (State.OPENING, State.WAITING_FOR_PATH):
            # A file that appears at the path now is new: all of it is unread.
            self.from_start = True
        elif state in (State.OPENING, State.WAITING_FOR_PATH):
            self.from_start = False
        if event is Event.OPEN_FAILED or event is Event.PATH_GONE:
            # Nothing to be woken by (the writer may append under a name nobody
            # watches): look again after ``poll_interval``, as a poller would.
            timeout = self.poll_interval
        elif event is Event.WRITER_MAY_APPEND:
            timeout = self.rotate_grace or self.poll_interval
        self.state = target
        return Step(event, target, action, timeout if action is Action.WAIT else None)

    # -- observations worked out into events -----------------------------------------

    @property
    def watches_path(self) -> bool:
        """Whether the path is compared with the file read (not while draining)."""
        return self.state in _LIVE_STATES

    def bytes_read(self) -> Step:
        return self.handle(Event.BYTES_READ)

    def at_end(self, *, size: int, position: int, path: PathSeen) -> Step:
        """The file the path names (``READING``, ``CAUGHT_UP``) has nothing more at
        ``position``; ``size`` is its size now, ``path`` what the path names."""
        if self.stopping:
            # Read once: the unfinished last line is handed out (not complete, so the
            # checkpoint stays before it).
            return self.handle(Event.STOP_AT_END)
        if size < position:
            return self.handle(Event.TRUNCATED)
        if path is PathSeen.GONE:
            return self.handle(Event.PATH_GONE)
        if path is PathSeen.OTHER:
            return self.handle(Event.PATH_REPLACED)
        return self.handle(Event.END_OF_FILE)

    def grace_left(self, now: float, written_ago: float) -> float:
        """Seconds the rotated file must still stay unchanged before it is left.

        Quiet is measured from the later of its last modification (``written_ago``
        seconds before ``now``) and the moment it was first seen with nothing new,
        whichever ends sooner: a file rotated long ago (a restart) is left at once, and
        one whose modification time is in the future (a clock set back) is still left
        ``rotate_grace`` after its last new byte.
        """
        if self.quiet_since is None:
            self.quiet_since = now
        return self.rotate_grace - max(now - self.quiet_since, written_ago)

    def at_rotated_end(self, *, size: int, position: int, now: float, written_ago: float) -> Step:
        """A rotated file (``DRAINING_ROTATED``, ``ROTATED_QUIET``) has nothing more."""
        if size < position:
            return self.handle(Event.TRUNCATED)
        if self.stopping:
            return self.handle(Event.STOP_AT_END)
        left = self.grace_left(now, written_ago)
        if left > 0:
            return self.handle(Event.QUIET, left)
        return self.handle(Event.GRACE_ELAPSED)

    def writer_checked(self, may_append: bool) -> Step:
        """``CHECK_WRITER``'s answer: a process holds the rotated file for writing and
        nothing was written at the path since."""
        return self.handle(Event.WRITER_MAY_APPEND if may_append else Event.WRITER_GONE)

    def no_next_file(self) -> Step:
        """The next file is the path and it cannot be opened now."""
        if self.stopping and self.state is State.MOVING_ON:
            return self.handle(Event.STOP_AT_END)
        return self.handle(Event.NO_NEXT_FILE)

    def copy_looked_up(
        self, *, copy_size: int | None, position: int, known_size: int
    ) -> tuple[Step, int, int]:
        """``FIND_COPY``'s answer: ``copy_size``, the size of a rotated copy holding the
        truncated file up to past ``position``, or None.  The bytes up to ``known_size``
        (the size the file was last seen with) that the copy does not hold are lost.
        Returns the step, the bytes the copy recovers and the bytes lost."""
        recovered = 0 if copy_size is None else max(0, copy_size - position)
        lost = max(0, known_size - position - recovered)
        self.lost += lost
        return self.handle(Event.COPY_FOUND if recovered else Event.NO_COPY), recovered, lost

    def copy_damaged(self, copy_size: int, position: int) -> None:
        """The copy could not be read past ``position``: the rest of it is a gap."""
        self.lost += max(0, copy_size - position)

    def take_lost(self) -> int:
        """The gap to report as the file is left (and forget)."""
        lost, self.lost = self.lost, 0
        return lost


def diagram() -> str:
    """``TRANSITIONS`` as a Mermaid ``stateDiagram-v2`` (``aclose()``'s edges, from
    every state to ``DONE``, are one note)."""
    names = {state: state.name for state in State}
    lines = ["stateDiagram-v2", f"    [*] --> {names[State.OPENING]}"]
    for (state, event), (target, action) in TRANSITIONS.items():
        if event is Event.CLOSED:
            continue
        targets = _RESUMABLE if isinstance(target, str) else (target,)
        for each in targets:
            lines.append(f"    {names[state]} --> {names[each]}: {event.value} / {action.value}")
    lines.append(f"    {names[State.DONE]} --> [*]")
    lines.append(f"    note right of {names[State.DONE]} : aclose() leads here from every state")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # ``python -m utf8stream.apps.follow._machine``: the diagram
    print(diagram(), end="")
