"""Follow a growing log file: no line lost, none repeated, across rotation and restarts.

Theory of operation
-------------------
The follower reads the file with positional reads, so the only position is ours: a
cancelled read changes nothing, and a checkpoint is just a file identity and a byte
offset.  A read the page cache holds is done at once in the event loop's thread
(``preadv`` with ``RWF_NOWAIT``, on Linux: a copy from memory, cheaper than a worker
thread's round trip; the bytes land in a buffer that becomes the bytes object read, with
no second copy), and so is any read of a file held in memory (tmpfs, which refuses
``RWF_NOWAIT``); any other (storage to wait for, or a file system that cannot tell) in
a worker thread.  A long read ends at its last newline: the start of a line after it is
read again with what follows.  Lines are cut by one ``LineEngine`` per file (the
core's line engine: newline modes, the limit, the overlong policies, the exact byte
offset of every line, in any encoding it has a ``LineDecoder`` for); every byte goes
through its decoder in order, so malformed units are reported with their absolute
offsets and never stop the reader.  The follower keeps files, rotation and checkpoints.
A read is cut ``ReadPolicy.feed_size`` bytes at a time as its lines are handed out; in the common
case (the accelerator, nothing held or pending) a slice is one C call that cuts and
decodes its lines (``LineEngine.feed_slice``) and one that makes them ``Line`` records,
and the checkpoint is worked out only when asked (each record holds its offset).

Only complete lines are delivered (the last line of a file is delivered when the file is
left behind by rotation or truncation).  A line longer than ``max_line_bytes`` is handled
as soon as it passes the limit, so memory stays bounded by one read plus the limit.

At the end of the data the follower waits for the kernel to say the file or its
directory changed (``Watcher``; it polls where no notification exists), then looks: it
compares the file it holds open with what the path now names (device and inode, plus a
fingerprint of the first bytes, because inodes are reused), checks the size against its
position (truncation), and re-reads the few bytes before its position (a file truncated
and regrown past the old size between two looks no longer has them).  On rotation the old
file is read until it has been quiet for ``rotate_grace`` (its writer appends to it until
it reopens the path), and while the new file is empty and a process still has the old one
open for writing (``_holders.py``).  On truncation the bytes not read yet are taken from
the rotated copy (copytruncate's ``app.log.1``, plain or compressed), known by the
fingerprint of its head; a copy is read one chunk per step, as a file is, so memory stays
bounded whatever it holds.  A restart from a checkpoint whose file was rotated away while
stopped looks for it among the path's rotations, plain (same inode) or compressed (same
decompressed head), and drains it first.  After a rotated file, the next one is the oldest
rotation named newer than it (logrotate's ``app.log.N``, ``N`` = 1 the newest, or names
of fixed width such as ``dateext``'s), compressed or not: a compressed one is read
decompressed, so a rotation compressed before the follower reached it is not skipped;
where the names follow no scheme, the plain files by modification time.  One ``Watcher``
serves the follower from its first wait to ``aclose``.  With ``encoding="auto"`` each
file's encoding is told by its first bytes (``detect_line_codec``) and kept in its
``FileIdentity``, so in the checkpoint.  With ``multiline=`` a stage after the lines
joins them into events; with ``transforms=`` each line's (or event's) text goes
through them whole, as it is handed out.

Which file is read and what the end of its data means is decided by the follower's state
machine (``_machine.py``: the states, the events and the table of transitions); the
driver (``_driver.py``) does the opens, reads and waits it asks for, the opener
(``_opening.py``) finds where reading starts, the cutter (``_cutting.py``) cuts the bytes
into lines, and a waiting strategy (``_waiting.py``) waits.  This module hands the lines
out and keeps the checkpoint of what was handed out.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import anyio

from ...core._accel import implementation
from ...core.lines import LineTooLong
from ...core.transformed import LineTransform, as_transform
from ._checkpoint import CheckpointError, FollowCheckpoint, _validated
from ._cutting import _Cutter
from ._driver import _Reader
from ._feed import _Block, _Item, _slice_records
from ._machine import FollowMachine, State
from ._multiline import _Joining
from ._opening import _Opener
from ._options import FollowOptions, refuse_not_taken
from ._records import FollowerStatistics, Line, Notice
from ._waiting import PathWatch, Rest, Waiting

__all__ = ["Follower"]

#: The options of a follower given none.
_DEFAULTS = FollowOptions()


class Follower:
    """Async iterator of ``Line`` records; also an async context manager.

    Built by ``follow()``: ``Follower(path, options)`` follows ``path`` with a
    ``FollowOptions`` (a ``ValueError`` if they set an option for ``follow_many()``
    only).  ``checkpoint()`` covers exactly the lines already yielded.  Cancelling a
    pending ``__anext__`` loses nothing: reads are positional, and the position moves
    only when a line is handed out.  ``waiting``: how it waits at the end of the data (by
    default it watches its path; ``follow_many``'s files share one watcher).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        options: FollowOptions | None = None,
        *,
        waiting: Waiting | None = None,
    ) -> None:
        if options is None:
            options = _DEFAULTS
        else:
            refuse_not_taken(options, "follow")
        self.path = os.fspath(path)
        on_notice = options.on_notice

        def notice(kind: str, message: str) -> None:
            if on_notice is not None:
                on_notice(Notice(kind, self.path, message))

        cutter = _Cutter(
            newline=options.newline,
            max_line_bytes=options.max_line_bytes,
            on_overlong=options.on_overlong,
            errors=options.errors,
            encoding=options.encoding,
            on_malformed=options.on_malformed,
            notice=notice,
            doubt=on_notice is not None,
        )
        checkpoint = options.checkpoint
        if checkpoint is not None:
            checkpoint = _validated(checkpoint)
            if os.path.realpath(checkpoint.path) != os.path.realpath(self.path):
                raise CheckpointError(
                    f"it is for another file ({checkpoint.path}), not {self.path}"
                )
        opener = _Opener(
            self.path,
            cutter,
            start=options.start,
            last_lines=options.last_lines,
            last_bytes=options.last_bytes,
            gap_at_start=options.gap_at_start,
            checkpoint=checkpoint,
            on_notice=on_notice,
            reading=options.reading,
        )
        poll_interval = options.poll_interval
        machine = FollowMachine(rotate_grace=options.rotate_grace, poll_interval=poll_interval)
        self._reader = _Reader(
            self.path,
            cutter=cutter,
            opener=opener,
            machine=machine,
            waiting=PathWatch(poll_interval) if waiting is None else waiting,
            retry=options.retry,
            partial_after=options.partial_after,
            on_wait=self._note_caught_up,
        )
        if options.until_eof:
            self._reader.stop_at_end()
        self._reader.waiting.bind(self._reader, self._next_or_rest, self._hand_out_held)
        self._followed = self._reader.followed
        self._cutter = cutter
        self._queue = cutter.queue
        self._done: _Item | None = None  # the last item handed out, if not from a block
        self._block: _Block | None = None  # the block lines are being handed out from
        self._ready: list[Line] = []  # its lines not handed out yet, last first
        self._lines = 0
        # Before the first line, a resumed follower stands where its checkpoint says.
        self._checkpoint: FollowCheckpoint | None = checkpoint
        self._closed = False
        #: Set once everything the file held has been handed out and the follower waits
        #: for more, or has stopped (``caught_up``); the event is made on first use.
        self._has_caught_up = False
        self._caught_up_event: anyio.Event | None = None
        #: What each line's text goes through (``transforms=``), if anything.
        transform = as_transform(options.transforms)
        self._transform = (
            None if transform is None else LineTransform(transform, options.newline, False)
        )
        #: The multi-line stage the lines go through (``multiline=``), if any.
        joiner = FollowOptions.joiner_of(options.multiline)
        self._joining: _Joining | None = None
        if joiner is not None:
            self._joining = _Joining(
                joiner,
                options.multiline_timeout,
                followed=self._followed,
                next_line=self._plain_next,
                line_checkpoint=self._plain_checkpoint,
            )

    # -- public API ----------------------------------------------------------------

    async def __aenter__(self) -> Follower:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncIterator[Line]:
        if self._joining is not None or self._transform is not None:
            return self
        # ``async for``: an iterator that hands out the ready lines of a block (with the
        # C accelerator, with no Python frame per line) and calls ``_next_for`` when they
        # run out.  All state stays here, so leaving the loop, mixing in ``__anext__()``
        # or a cancelled step loses nothing.
        iterator: AsyncIterator[Line] = implementation().BufferedAsyncIterator(self._next_for)
        iterator.feed(self._ready)  # type: ignore[attr-defined]
        return iterator

    async def __anext__(self) -> Line:
        if self._joining is not None or self._transform is not None:
            return _line(await self._next_or_rest())
        ready = self._ready
        if ready:
            return ready.pop()
        line = self._next_block()
        return line if line is not None else _line(await self._advance())

    async def _next_for(self, iterator: Any) -> Line:
        ready = self._ready
        if ready:
            line = ready.pop()
        else:
            found = self._next_block()
            line = found if found is not None else _line(await self._advance())
        iterator.feed(self._ready)
        return line

    async def _next_or_rest(self) -> Line | Rest:
        """The next line (a multi-line event, with a joiner), or a ``Rest`` where the
        follower would wait (``SharedWatch``): ``follow_many``'s step."""
        if self._joining is not None:
            found = await self._joining.next()
        else:
            found = await self._plain_next()
        transform = self._transform
        if transform is None or isinstance(found, Rest):
            return found
        text = transform.line(found.text)
        return Line(text, found.offset, found.file, found.path, found.terminated)

    def _hand_out_held(self) -> bool:
        """Queue the multi-line event held now (its file is gone); whether events wait."""
        return self._joining is not None and self._joining.hand_out_held()

    async def _plain_next(self, until: float | None = None) -> Line | Rest:
        """The next line, or a ``Rest`` (a wait would pass ``until``, or is the
        caller's)."""
        ready = self._ready
        if ready:
            return ready.pop()
        line = self._next_block()
        if line is not None:
            return line
        self._reader.until = until
        return await self._advance()

    def _next_block(self) -> Line | None:
        """The hot path, when the ready lines ran out: the next slice of the last read
        cut into a block of records in one call (``LineEngine.feed_slice``), with no
        queue, no item and no checkpoint made; None where it does not apply (the next
        slice goes the general way, ``_advance``): anything queued or pending, the
        lines before not a block of this file that ends where the engine stands.
        """
        block = self._block
        f = self._reader.file
        if (
            block is None
            or f is None
            or not f.unfed
            or block.file is not f.identity
            or self._queue
            or self._done is not None
            or self._closed
        ):
            return None
        if f.engine.position != block.end:
            return None
        found = _slice_records(f)
        if found is None:
            return None
        lines, after, items = found
        self._lines += block.count
        new = _Block(lines, after, f.identity, resumes=True)
        cutter = self._cutter
        error = cutter.callback_error
        if items or error is not None or not lines:
            # The rest of the slice went the general way, or on_malformed raised: what
            # was cut goes through the queue, as ``feed_slice`` would have queued it.
            self._block = None
            self._checkpoint = FollowCheckpoint(self._followed, f.identity, block.end)
            if lines:
                self._queue.append(new)
            cutter.queue_items(f, items)
            if error is not None:
                # Raised once the read is taken in, as ``_fill`` does.
                cutter.callback_error = None
                self._note_caught_up()
                raise error
            return None
        self._block = new
        self._ready = lines
        line: Line = lines.pop()
        return line

    async def _advance(self) -> Line | Rest:
        """The next line once the ready ones are handed out: the next queued item; or
        a ``Rest`` from the driver's wait."""
        queue = self._queue
        while True:
            while not queue:
                if self._closed or self._reader.machine.state is State.DONE:
                    self._note_caught_up()
                    raise StopAsyncIteration
                try:
                    rest = await self._fill()
                except BaseException:
                    self._note_caught_up()  # stopped: a reader waiting for its turn goes on
                    raise
                if rest is not None:
                    return rest
            if self._closed:
                raise StopAsyncIteration
            item = queue.popleft()
            self._settle()
            if type(item) is _Block:
                self._block = item
                self._ready = item.lines
                return item.lines.pop()
            assert isinstance(item, tuple)
            self._done = item
            text = item[0]
            if type(text) is str:
                self._lines += 1
                return Line(text, item[1], item[3], item[4], item[6])
            if isinstance(text, LineTooLong):
                raise text

    async def _fill(self) -> Rest | None:
        """Read more (or wait, or move to another file: one step of the driver).

        An exception from ``on_malformed`` is raised here, once the read is taken in
        (the lines read with it are delivered next; nothing is lost).
        """
        rest = await self._reader.step()
        cutter = self._cutter
        error, cutter.callback_error = cutter.callback_error, None
        if error is not None:
            raise error
        return rest

    def _settle(self) -> None:
        """Fold what was handed out so far into the checkpoint and the line count.

        Called when the current block's lines have all been handed out (or dropped by
        ``aclose``), before the next item.
        """
        block = self._block
        if block is not None:
            self._lines += block.handed()
            at = block.position()
            if at is not None:
                self._checkpoint = FollowCheckpoint(self._followed, block.file, at)
            self._block = None
        self._fold_done()

    def _fold_done(self) -> None:
        if self._done is not None:
            _, _, end, identity, _, mid_line, _ = self._done
            self._checkpoint = FollowCheckpoint(self._followed, identity, end, mid_line)
            self._done = None

    def checkpoint(self) -> FollowCheckpoint:
        """Where a new follower resumes: no yielded line repeats, none is lost."""
        if self._joining is not None:
            return self._joining.checkpoint()
        return self._plain_checkpoint()

    def _plain_checkpoint(self) -> FollowCheckpoint:
        """Just past the last line handed out by the plain follower."""
        block = self._block
        if block is not None:
            at = block.position()
            if at is not None:
                return FollowCheckpoint(self._followed, block.file, at)
        self._fold_done()
        checkpoint = self._checkpoint or self._reader.opened_at
        if checkpoint is None:
            raise RuntimeError("the follower has not opened its file yet: iterate first")
        return checkpoint

    def stop_at_end(self) -> None:
        """Read what there is now (rotated files drained first), then end the iteration.

        As with ``until_eof``, the unfinished last line is delivered, unterminated, and
        the checkpoint stays at its start.  ``tail --pid``: the writer has exited.
        """
        self._reader.stop_at_end()

    async def caught_up(self) -> None:
        """Return once the lines the file held have all been handed out and the follower
        waits for more (or cannot open the file yet, or has stopped).

        ``tail -f A B`` shows A's last lines before B's, as GNU tail does, by waiting for
        this before B's turn.
        """
        if self._has_caught_up:
            return
        if self._caught_up_event is None:
            self._caught_up_event = anyio.Event()
        await self._caught_up_event.wait()

    def _note_caught_up(self) -> None:
        if not self._has_caught_up:
            self._has_caught_up = True
            if self._caught_up_event is not None:
                self._caught_up_event.set()

    def has_pending(self) -> bool:
        """Whether lines already read wait to be handed out (the next comes at once).

        A writer of the lines can flush its output when this turns false: the next
        step may wait for the file to grow.
        """
        if self._joining is not None and self._joining.has_events():
            return True
        f = self._reader.file
        return bool(self._ready or self._queue or (f is not None and f.unfed))

    def statistics(self) -> FollowerStatistics:
        """Lines yielded, overlong and skipped lines, rotations, truncations, units."""
        lines = self._lines + (self._block.handed() if self._block is not None else 0)
        cutter, reader = self._cutter, self._reader
        return FollowerStatistics(
            lines=lines,
            skipped=cutter.skipped,
            overlong=cutter.overlong,
            rotations=reader.rotations,
            truncations=reader.truncations,
            malformed=cutter.malformed,
        )

    async def aclose(self) -> None:
        """Close the file; iteration ends (lines read but not handed out are not)."""
        self._closed = True
        self._note_caught_up()
        self._settle()
        self._ready.clear()
        await self._reader.aclose()


def _line(found: Line | Rest) -> Line:
    """A line of a follower that waits for itself (its ``Rest`` is never returned)."""
    if isinstance(found, Rest):
        raise RuntimeError("this follower's waits are its ManyFollower's: iterate that")
    return found
