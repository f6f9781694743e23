"""The follower's driver: it opens, reads and waits, tells its machine what it saw
(``_machine.py``), and does what the machine answers.

One step (``_Reader.step``) cuts the next slice of the last read, or reads (the file, or
the rotated copy standing in for it), or opens the file where reading starts; at the end
of the data it looks at the file and the path and hands the machine what it found.  The
actions it is answered with (wait, look for a copy, ask whether the writer still holds
a rotated file, move on to the next file, finish) are done in the same step.  How it
waits is the ``Waiting`` strategy it is given (``_waiting.py``): one follower watches its
path; each file of ``follow_many`` returns a ``Rest`` for the one watcher of them all.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

import anyio
import anyio.to_thread

from .._compressed import CompressedFileError
from .._holders import held_for_writing
from .._identity import head_fingerprint
from ._checkpoint import FollowCheckpoint
from ._cutting import _Cutter
from ._machine import Action, Event, FollowMachine, PathSeen, State, Step
from ._opening import _FIND_ATTEMPTS, _Opener
from ._reading import _head_holds, _in_loop_size, _Open, _Reads, _stop_reading_ahead
from ._records import FileIdentity
from ._rotation import _next_file, _open_compressed
from ._waiting import Rest, Waiting

#: The events after which an unfinished last line may be handed out (``partial_after``)
#: before the wait: the file is quiet, not being left.
_PARTIAL_WAITS = (Event.END_OF_FILE, Event.PATH_GONE, Event.NO_NEXT_FILE)


class _Reader:
    """Reads one followed file (and the rotated files and copies it leads to) into the
    cutter's queue, moved by its machine."""

    def __init__(
        self,
        path: str,
        *,
        cutter: _Cutter,
        opener: _Opener,
        machine: FollowMachine,
        waiting: Waiting,
        retry: bool,
        partial_after: float | None,
        on_wait: Callable[[], None],
    ) -> None:
        self.path = path
        #: What checkpoints record: the file followed, not the rotated file being read.
        self.followed = os.path.abspath(path)
        self.cutter = cutter
        self.opener = opener
        self.machine = machine
        self.waiting = waiting
        self._retry = retry
        self._partial_after = partial_after
        self._on_wait = on_wait
        self.file: _Open | None = None
        self._reads = _Reads()  # where each read is done
        #: The rotated files read to their end, by (device, inode): with the identity
        #: they had, since a deleted file's inode is soon another file's.
        self._visited: dict[tuple[int, int], FileIdentity] = {}
        #: Where the first file opened was opened: the checkpoint before any line.
        self.opened_at: FollowCheckpoint | None = None
        #: A wait that would go past this (the event loop's clock) returns a ``Rest``
        #: instead (a multi-line event falls due); None: no limit.
        self.until: float | None = None
        self.rotations = 0
        self.truncations = 0

    # -- the file read -------------------------------------------------------------

    def use(self, f: _Open) -> None:
        """Read ``f`` from now on (the file read until now is closed)."""
        self.release()
        self.file = f
        if self.opened_at is None:
            self.opened_at = FollowCheckpoint(self.followed, f.identity, f.read_pos)

    def release(self) -> None:
        """Close the file being read (and the copy being read for it)."""
        f = self.file
        if f is None:
            return
        if f.chunks is not None:
            f.chunks.close()
            f.chunks = None
        _stop_reading_ahead(f)
        if f.fd >= 0:
            os.close(f.fd)
            f.fd = -1

    async def aclose(self) -> None:
        if self.machine.state is not State.DONE:
            self.machine.handle(Event.CLOSED)
        self.release()
        self.file = None
        await self.waiting.aclose()

    def stop_at_end(self) -> None:
        self.machine.stopping = True
        self.waiting.stop()

    def grace_over(self) -> bool:
        """Whether the rotated file read has been quiet for ``rotate_grace``."""
        f = self.file
        if f is None:
            return True
        written_ago = math.inf if f.fd < 0 else time.time() - os.fstat(f.fd).st_mtime
        return self.machine.grace_left(time.monotonic(), written_ago) <= 0

    # -- a step --------------------------------------------------------------------

    async def step(self) -> Rest | None:
        """Cut, read or open once, and do what the machine answers; a ``Rest``: the
        caller waits (``SharedWatch``), or its deadline came (``until``)."""
        f = self.file
        if f is None:
            return await self._open()
        if f.unfed:
            self.cutter.feed_slice(f)
            return None
        if f.copy is not None:
            return await self._read_copy(f)
        return await self._read(f)

    async def _open(self) -> Rest | None:
        machine = self.machine
        try:
            event, f = await self.opener.open_start(machine.from_start)
        except OSError as exc:
            if not self._retry:
                raise
            self.opener.cannot_open(f"cannot open for reading: {exc.strerror or exc}")
            return await self._act(None, machine.handle(Event.OPEN_FAILED))
        if self.opener.inaccessible is not None:
            self.opener.opened("appeared", "")
        self.use(f)
        machine.handle(event)
        return None

    async def _read(self, f: _Open) -> Rest | None:
        # Read the anchor again with the new bytes: if the bytes before our position
        # changed, the file was truncated and rewritten (perhaps past its old size).
        # Nothing read yet (no anchor): the first bytes must still be the fingerprinted
        # ones, or the file was truncated between its open and this first read.
        n = len(f.anchor)
        size = f.policy.read_size + n
        data = await self._reads.pread(f, size, f.read_pos - n, n + 1)
        if data[:n] != f.anchor:
            _stop_reading_ahead(f)
            return await self._act(f, self.machine.handle(Event.TRUNCATED))
        if not f.read_pos and not _head_holds(f, data):
            _stop_reading_ahead(f)
            return await self._act(f, self.machine.handle(Event.SHRANK_BEFORE_FIRST_READ))
        if len(data) > n:
            f.known_size = max(os.fstat(f.fd).st_size, f.read_pos + len(data) - n)
            self.cutter.take(f, data, n)  # the anchor is skipped, not sliced off (a copy)
            self._reads.read_ahead(f, full=len(data) == _in_loop_size(f, size))
            self.machine.bytes_read()
            return None
        _stop_reading_ahead(f)  # caught up: a quiet file needs no thread
        return await self._at_end(f)

    async def _at_end(self, f: _Open) -> Rest | None:
        """Nothing more at the position: tell the machine what the file and path show."""
        machine = self.machine
        st = os.fstat(f.fd)
        if st.st_size >= f.read_pos:
            f.known_size = st.st_size
        if not machine.watches_path:
            step = machine.at_rotated_end(
                size=st.st_size,
                position=f.read_pos,
                now=time.monotonic(),
                written_ago=time.time() - st.st_mtime,
            )
            return await self._act(f, step)
        seen, gone = PathSeen.SAME, ""
        if not machine.stopping:
            try:
                seen = (
                    PathSeen.SAME if f.identity.same_inode(os.stat(self.path)) else PathSeen.OTHER
                )
            except OSError as exc:  # renamed or deleted, the new file is not there yet
                seen = PathSeen.GONE
                gone = f"has become inaccessible: {exc.strerror or exc}"
        step = machine.at_end(size=st.st_size, position=f.read_pos, path=seen)
        if step.event is Event.PATH_GONE:
            self.opener.cannot_open(gone)
        return await self._act(f, step)

    async def _act(self, f: _Open | None, step: Step) -> Rest | None:
        """Do what the machine answered (the actions that need what they find feed the
        machine again, and what it answers then is done too)."""
        action = step.action
        if action is Action.WAIT:
            return await self._wait(f, step)
        if f is None:
            return None
        if action is Action.FINISH:
            # Read once: the unfinished last line is shown, but it is not complete, so
            # the checkpoint stays at its start and a later run reads it again whole.
            self.cutter.finish(f, unfinished=True)
        elif action is Action.FIND_COPY:
            return await self._act(f, await self._truncated(f))
        elif action is Action.CHECK_WRITER:
            may_append = await anyio.to_thread.run_sync(self._writer_may_hold, f)
            return await self._act(f, self.machine.writer_checked(may_append))
        elif action is Action.FIND_NEXT:
            return await self._act(f, await self._move_on(f))
        return None

    async def _wait(self, f: _Open | None, step: Step) -> Rest | None:
        timeout = step.timeout
        if f is not None and step.event in _PARTIAL_WAITS:
            due = self._partial_due(f)
            if due is not None and due <= 0:
                self.cutter.queue_items(f, f.engine.cut_unfinished())
                if self.cutter.queue:
                    return None
                due = None  # what is held cannot be cut yet: the next bytes decide
            if due is not None:
                timeout = due if timeout is None else min(timeout, due)
        if self.until is not None:
            left = self.until - anyio.current_time()
            if left <= 0:
                return Rest(0.0, due=True)  # (before the wait: the state is complete)
            timeout = left if timeout is None else min(timeout, left)
        self._on_wait()
        return await self.waiting.wait(self.path, f, timeout, self.machine.watches_path)

    def _partial_due(self, f: _Open) -> float | None:
        """Seconds until the unfinished last line of ``f`` is handed out as it is
        (``partial_after``); None if it is not to be, or nothing is held."""
        if self._partial_after is None or not f.engine.partial or f.engine.overlong:
            return None
        return f.fed_at + self._partial_after - anyio.current_time()

    def _writer_may_hold(self, f: _Open) -> bool:
        """Whether the writer of the renamed-away ``f`` may still append to it: nothing
        has been written at the path since (empty or missing) and some process has ``f``
        open for writing (Linux; elsewhere the grace period alone decides)."""
        try:
            if os.stat(self.path).st_size > 0:
                return False  # the writer (or another) has moved on to the path
        except OSError:
            pass  # not created yet
        return held_for_writing(f.fd)

    # -- truncation and copies -------------------------------------------------------

    async def _truncated(self, f: _Open) -> Step:
        """The file shrank or was rewritten: its unread bytes are taken from the rotated
        copy (copytruncate's ``app.log.1``, perhaps compressed) when one is found, one
        chunk per read; only what no copy holds is reported lost."""
        self.truncations += 1
        opened = await self.opener.find_and_open_copy(f.identity, f.read_pos)
        step, recovered, lost = self.machine.copy_looked_up(
            copy_size=None if opened is None else opened[0].size,
            position=f.read_pos,
            known_size=f.known_size,
        )
        message = "file truncated"
        if recovered:
            message += f"; {recovered} bytes not read yet were taken from its rotated copy"
        if lost:
            message += f"; {lost} bytes not read were lost"
        self.opener.notice("truncated", message)
        if step.action is Action.TAKE_COPY:
            assert opened is not None
            f.copy, f.chunks = opened
            return step
        if opened is not None:
            opened[1].close()
        self._reopen_at_start(f)
        return step

    def _reopen_at_start(self, f: _Open) -> None:
        """Read the truncated ``f`` again from its start (its last line handed out)."""
        self.cutter.finish(f, lost=self.machine.take_lost())
        self.use(self.opener.attach(os.dup(f.fd), f.path, 0))

    async def _read_copy(self, f: _Open) -> Rest | None:
        """Read one chunk of ``f``'s file from its rotated copy; at the copy's end, go on
        with the truncated file from its start, or with the next file.

        ``f``'s engine cuts the bytes (the lines say they come from the copy).  One chunk
        at a time, as from a plain file: memory stays bounded whatever the copy holds.
        """
        copy = f.copy
        assert copy is not None
        chunk = b""
        if f.chunks is not None:
            try:
                chunk = await anyio.to_thread.run_sync(next, f.chunks, b"")
            except (CompressedFileError, OSError) as exc:
                # Changed since it was checked: what was read stands, the rest is a gap.
                self.opener.notice("damaged", f"cannot read the rotated copy {copy.path}: {exc}")
                self.machine.copy_damaged(copy.size, f.read_pos)
        if chunk:
            f.read_pos += len(chunk)
            f.known_size = max(f.known_size, f.read_pos)
            self.cutter.queue_items(f, f.engine.feed(chunk), copy.path)
            self.machine.bytes_read()
            return None
        if f.chunks is not None:
            f.chunks.close()
            f.chunks = None
        step = self.machine.handle(Event.END_OF_FILE)
        if step.action is Action.REOPEN_AT_START:
            self._reopen_at_start(f)
            return None
        return await self._act(f, step)

    # -- the next file -------------------------------------------------------------

    async def _move_on(self, f: _Open) -> Step:
        """Leave the rotated file ``f``, read to its end, for the next file: the oldest
        newer rotation (compressed or not), else the path."""
        exclude: set[str] = set()
        for _ in range(_FIND_ATTEMPTS):
            target = await anyio.to_thread.run_sync(
                _next_file, self.path, self._visited, f, exclude
            )
            if target.compression is not None:
                opened = await anyio.to_thread.run_sync(_open_compressed, target)
                if opened is None:
                    continue  # renamed meanwhile: look again
                if isinstance(opened, str):
                    self.opener.notice("damaged", opened)
                    exclude.add(target.path)
                    continue
                copy, chunks = opened
                encoding = self.opener.copy_encoding(copy, None)
                identity = FileIdentity(
                    copy.device,
                    copy.inode,
                    *head_fingerprint(copy.head),
                    encoding if self.cutter.auto else None,
                )
                self._leave(f)
                self.use(self.opener.open_copy(copy, chunks, identity, 0, encoding))
                return self.machine.handle(Event.NEXT_COPY)
            try:
                fd = await self.opener.open(target.path)
            except OSError as exc:
                if target.path == self.path:
                    self.opener.cannot_open(f"has become inaccessible: {exc.strerror or exc}")
                    return self._no_next_file(f)
                continue  # renamed or deleted since listed: look again
            st = os.fstat(fd)
            if target.inode >= 0 and (st.st_dev, st.st_ino) != (target.device, target.inode):
                os.close(fd)  # a rotation gave the name to another file meanwhile
                continue
            self._leave(f)
            self.use(self.opener.attach(fd, target.path, 0))
            if target.path != self.path:
                return self.machine.handle(Event.NEXT_ROTATED)
            self.opener.opened("replaced", "has been replaced; following new file")
            return self.machine.handle(Event.NEXT_IS_PATH)
        return self._no_next_file(f)

    def _no_next_file(self, f: _Open) -> Step:
        step = self.machine.no_next_file()
        if step.action is Action.LEAVE:
            # A copy read to its end: the path is opened (and read from its start, as a
            # file that appeared) at the next step, or waited for with ``retry``.
            self._leave(f)
            self.release()
            self.file = None
        return step

    def _leave(self, f: _Open) -> None:
        """``f`` is read to its end: remember it as read, hand out its last line."""
        copy = f.copy
        if copy is None:
            self._visited[(f.identity.device, f.identity.inode)] = f.identity
        elif copy.compression is None:
            identity = FileIdentity(
                copy.device, copy.inode, f.identity.head_length, f.identity.head_sha256
            )
            self._visited[(copy.device, copy.inode)] = identity
        self.cutter.finish(f, lost=self.machine.take_lost())
        self.rotations += 1
