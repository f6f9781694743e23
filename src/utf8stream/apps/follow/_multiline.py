"""The multi-line stage: a follower's lines joined into events (``multiline=``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

import anyio

from ...core.multiline import MultilineEvent, MultilineJoiner
from ._checkpoint import FollowCheckpoint
from ._records import FileIdentity, Line
from ._waiting import Rest


class _Joining:
    """The stage that joins a follower's lines into multi-line events.

    The lines come from the plain follower, with the offset just past each (its
    checkpoint); they go through the joiner, which holds the incomplete event.  A line
    from another file (another inode, or an offset before the last: a truncation) ends
    the event held.  Each event keeps the checkpoint taken just before its first line:
    the checkpoint is that of the first event not handed out (queued or held), else the
    plain one.  The pieces of a line longer than ``max_line_bytes`` (``on_overlong=
    "split"``) are joined to its start (``MultilineJoiner.extend``), not as lines.  An
    event is ``terminated`` as its last line is; one that ends in the
    unfinished last line of ``until_eof`` (or ``stop_at_end()``), which the plain
    checkpoint stays before, is not complete either: handed out, it leaves the checkpoint
    before its first line, and a later run reads it again whole.

    The timeout is kept where the follower waits: a line is asked for with the held
    event's due time as the deadline of any wait, so the wait ends when the event is
    due, and once due the next wait returns a due ``Rest`` instead of waiting: the file
    is always looked at first.  Lines that reached the file in time join the event even
    when the consumer came back late; only a file with nothing more ends it.
    """

    def __init__(
        self,
        joiner: MultilineJoiner,
        timeout: float,
        *,
        followed: str,
        next_line: Callable[[float | None], Awaitable[Line | Rest]],
        line_checkpoint: Callable[[], FollowCheckpoint],
    ) -> None:
        self._joiner = joiner
        self._timeout = timeout
        self._followed = followed
        self._next_line = next_line
        self._line_checkpoint = line_checkpoint
        #: Complete events not handed out, each with the checkpoint before its first line.
        self._events: deque[tuple[Line, FollowCheckpoint]] = deque()
        #: The event held by the joiner: the checkpoint before it, its file and path.
        self._held: tuple[FollowCheckpoint, FileIdentity, str] | None = None
        self._last: tuple[int, int, int] | None = None  # device, inode, end of last line
        self._line_end: FollowCheckpoint | None = None  # the plain checkpoint after it
        self._last_terminated = True  # whether the last line read had its newline
        self._last_open = False  # ... and whether the plain checkpoint stayed before it
        #: Before an event handed out whose last line was unfinished (at the end).
        self._unfinished: FollowCheckpoint | None = None

    async def next(self) -> Line | Rest:
        """The next event, or the ``Rest`` of a follower that does not wait itself."""
        events = self._events
        while not events:
            try:
                rest = await self._join_line()
            except StopAsyncIteration:
                self._flush()
                if not events:
                    raise
                break
            if rest is not None:
                if not rest.due:
                    return rest
                self._flush()  # due, and the file had nothing more: hand it out
        return events.popleft()[0]

    def has_events(self) -> bool:
        return bool(self._events)

    def hand_out_held(self) -> bool:
        """Queue the held event now (its file is gone); whether events wait to go out."""
        self._flush()
        return bool(self._events)

    async def _join_line(self) -> Rest | None:
        """Take one more line and queue the events it completes."""
        since = self._joiner.pending_since
        until = None if since is None else since + self._timeout
        before = self._line_end
        line = await self._next_line(until)
        if isinstance(line, Rest):
            return line
        after = self._line_checkpoint()
        self._line_end = after
        self._unfinished = None
        where = (line.file.device, line.file.inode)
        piece = before is not None and before.mid_line  # the rest of a line cut in pieces
        if self._last is not None and (where != self._last[:2] or line.offset < self._last[2]):
            self._flush()  # another file: the event held is complete
            piece = False
        self._last = (*where, after.offset)
        held = self._held is not None
        previous = self._last_terminated  # of the last line of the events this completes
        self._last_terminated = line.terminated
        self._last_open = not line.terminated and after.offset <= line.offset
        now = anyio.current_time()
        if piece:
            events = self._joiner.extend(line.text, line.offset, after.offset, now)
        else:
            events = self._joiner.feed([(line.text, line.offset, after.offset)], now)
        for event in events:
            self._queue_event(event, previous)
        if self._joiner.pending_since is None:
            self._held = None
        elif events or not held:  # this line began the event now held
            start = before or FollowCheckpoint(self._followed, line.file, line.offset)
            self._held = (start, line.file, line.path)
        return None

    def _flush(self) -> None:
        event = self._joiner.flush()
        if event is not None:
            assert self._held is not None
            if self._last_open:  # the unfinished last line: the event is not complete
                self._unfinished = self._held[0]
            self._queue_event(event, self._last_terminated)
        self._held = None

    def _queue_event(self, event: MultilineEvent, terminated: bool) -> None:
        """Queue an event: the one held until now."""
        assert self._held is not None
        start, file, path = self._held
        self._events.append((Line(event.text, event.offset, file, path, terminated), start))

    def checkpoint(self) -> FollowCheckpoint:
        """Where a new follower resumes: before the first line of the first event not
        handed out, else just past the last line read."""
        if self._events:
            return self._events[0][1]
        if self._held is not None:
            return self._held[0]
        if self._unfinished is not None:
            return self._unfinished
        return self._line_checkpoint()
