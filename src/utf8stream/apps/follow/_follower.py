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
A read is cut ``FEED_SIZE`` bytes at a time as its lines are handed out; in the common
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
file's encoding is told by its first bytes (``_sniff``) and kept in its ``FileIdentity``,
so in the checkpoint.  With ``multiline=`` a stage after the lines joins them into events.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from ...core._accel import implementation
from ...core.events import Malformed
from ...core.lastlines import start_of_last_lines
from ...core.linecodec import LineBatch, LineEngine, LineItem, Utf8LineDecoder, line_decoder
from ...core.lines import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_ON_OVERLONG,
    LineTooLong,
    check_line_options,
)
from .._compressed import (
    CompressedFileError,
)
from .._defaults import (
    DEFAULT_POLL_INTERVAL,
    DEFAULT_ROTATE_GRACE,
)
from .._holders import held_for_writing
from .._identity import FINGERPRINT_BYTES, head_fingerprint
from .._sniff import AUTO, sniff_encoding
from .._watch import Watcher
from ._checkpoint import CheckpointError, FollowCheckpoint, _validated
from ._feed import FEED_SIZE, _Block, _fed_to, _Item, _records, _slice_records
from ._options import check_options
from ._reading import (
    READ_SIZE,
    _detect,
    _head_holds,
    _identity_of,
    _in_loop_size,
    _in_memory,
    _is_utf8,
    _matches,
    _Open,
    _open_regular,
    _read_ahead,
    _Reads,
    _resume_offset,
    _stop_reading_ahead,
    _unit_of,
)
from ._records import FileIdentity, FollowerStatistics, Line, Notice
from ._rotation import (
    _Copy,
    _find_copy,
    _find_rotated,
    _next_file,
    _open_compressed,
    _open_copy,
)

__all__ = ["Follower"]

#: How often a follower woken by the kernel looks whether ``stop_at_end()`` was called.
_FLAG_CHECK_INTERVAL = 0.25
ANCHOR_BYTES = 32
#: How many times the next file is looked for when rotations keep renaming it away.
_FIND_ATTEMPTS = 5


class Follower:
    """Async iterator of ``Line`` records; also an async context manager.

    Built by ``follow()``.  ``checkpoint()`` covers exactly the lines already yielded.
    Cancelling a pending ``__anext__`` loses nothing: reads are positional, and the
    position moves only when a line is handed out.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        start: str | int = "end",
        last_lines: int = 0,
        last_bytes: int | None = None,
        gap_at_start: bool = True,
        checkpoint: FollowCheckpoint | None = None,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        rotate_grace: float = DEFAULT_ROTATE_GRACE,
        newline: str | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        on_overlong: str = DEFAULT_ON_OVERLONG,
        errors: str = "replace",
        encoding: str = "utf-8",
        on_malformed: Callable[[Malformed], object] | None = None,
        until_eof: bool = False,
        retry: bool = False,
        on_notice: Callable[[Notice], object] | None = None,
        partial_after: float | None = None,
    ) -> None:
        check_line_options(newline, max_line_bytes, on_overlong)
        check_options(
            start, last_lines, last_bytes, poll_interval, rotate_grace, errors, partial_after
        )
        #: "auto": each file's encoding is detected from its first bytes (``_detect``).
        self._auto = encoding == AUTO
        self._encoding = "utf-8" if self._auto else encoding
        self._newline = newline
        self._max = max_line_bytes
        self._on_overlong = on_overlong
        self._errors = errors
        # The encoding is checked now (and the newline in it), not at the first read.
        probe = line_decoder(self._encoding, errors)
        if on_malformed is not None and not isinstance(probe, Utf8LineDecoder):
            raise ValueError("on_malformed is reported for UTF-8 only")
        if not probe.prelude:
            self._engine_for(0, encoding=self._encoding)
        self.path = os.fspath(path)
        #: What checkpoints record: the file followed, not the rotated file being read.
        self._followed = os.path.abspath(self.path)
        if checkpoint is not None:
            checkpoint = _validated(checkpoint)
            if os.path.realpath(checkpoint.path) != os.path.realpath(self.path):
                raise CheckpointError(
                    f"it is for another file ({checkpoint.path}), not {self.path}"
                )
        self._start = start
        self._last_lines = last_lines
        self._last_bytes = last_bytes
        self._gap_at_start = gap_at_start
        self._resume = checkpoint
        self._poll_interval = poll_interval
        self._rotate_grace = rotate_grace
        #: The watcher of the paths waited on: one for the follower's life, entered at the
        #: first wait, re-targeted when the paths change, closed by ``aclose``.
        self._watcher: Watcher | None = None
        self._on_malformed = on_malformed
        self._until_eof = until_eof
        self._partial_after = partial_after
        self._retry = retry
        self._on_notice = on_notice
        #: The last "inaccessible" notice while the path cannot be opened, else None.
        self._inaccessible: str | None = None
        self._at_eof = False
        self._file: _Open | None = None
        self._reads = _Reads()  # where each read is done
        # True while reading a file that was rotated away from ``path``: at its end, go
        # on with the next rotated file (by modification time), then with ``path``.
        self._draining = False
        #: The rotated files read to their end, by (device, inode): with the identity
        #: they had, since a deleted file's inode is soon another file's.
        self._visited: dict[tuple[int, int], FileIdentity] = {}
        self._queue: deque[_Item | _Block] = deque()
        self._done: _Item | None = None  # the last item handed out, if not from a block
        self._block: _Block | None = None  # the block lines are being handed out from
        self._ready: list[Line] = []  # its lines not handed out yet, last first
        self._lines = 0
        self._callback_error: Exception | None = None
        # Before the first line, a resumed follower stands where its checkpoint says.
        self._checkpoint: FollowCheckpoint | None = checkpoint
        self._closed = False
        #: Set once everything the file held has been handed out and the follower waits
        #: for more, or has stopped (``caught_up``); the event is made on first use.
        self._has_caught_up = False
        self._caught_up_event: anyio.Event | None = None
        self._skipped = 0
        self._overlong = 0
        self._rotations = 0
        self._truncations = 0
        self._malformed = 0

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
        # ``async for``: an iterator that hands out the ready lines of a block (with the
        # C accelerator, with no Python frame per line) and calls ``_next_for`` when they
        # run out.  All state stays here, so leaving the loop, mixing in ``__anext__()``
        # or a cancelled step loses nothing.
        iterator: AsyncIterator[Line] = implementation().BufferedAsyncIterator(self._next_for)
        iterator.feed(self._ready)  # type: ignore[attr-defined]
        return iterator

    async def __anext__(self) -> Line:
        ready = self._ready
        if ready:
            return ready.pop()
        line = self._next_block()
        return line if line is not None else await self._advance()

    async def _next_for(self, iterator: Any) -> Line:
        ready = self._ready
        if ready:
            line = ready.pop()
        else:
            found = self._next_block()
            line = found if found is not None else await self._advance()
        iterator.feed(self._ready)
        return line

    def _next_block(self) -> Line | None:
        """The hot path, when the ready lines ran out: the next slice of the last read
        cut into a block of records in one call (``LineEngine.feed_slice``), with no
        queue, no item and no checkpoint made; None where it does not apply (the next
        slice goes the general way, ``_advance``): anything queued or pending, the
        lines before not a block of this file that ends where the engine stands.
        """
        block = self._block
        f = self._file
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
        error = self._callback_error
        if items or error is not None or not lines:
            # The rest of the slice went the general way, or on_malformed raised: what
            # was cut goes through the queue, as ``_feed_slice`` would have queued it.
            self._block = None
            self._checkpoint = FollowCheckpoint(self._followed, f.identity, block.end)
            if lines:
                self._queue.append(new)
            self._queue_items(f, items)
            if error is not None:
                # Raised once the read is taken in, as ``_fill`` does.
                self._callback_error = None
                self._note_caught_up()
                raise error
            return None
        self._block = new
        self._ready = lines
        line: Line = lines.pop()
        return line

    async def _advance(self) -> Line:
        """The next line once the ready ones are handed out: the next queued item."""
        queue = self._queue
        while True:
            while not queue:
                if self._closed or self._at_eof:
                    self._note_caught_up()
                    raise StopAsyncIteration
                try:
                    await self._fill()
                except BaseException:
                    self._note_caught_up()  # stopped: a reader waiting for its turn goes on
                    raise
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
        block = self._block
        if block is not None:
            at = block.position()
            if at is not None:
                return FollowCheckpoint(self._followed, block.file, at)
        self._fold_done()
        if self._checkpoint is None:
            raise RuntimeError("the follower has not opened its file yet: iterate first")
        return self._checkpoint

    def stop_at_end(self) -> None:
        """Read what there is now (rotated files drained first), then end the iteration.

        As with ``until_eof``, the unfinished last line is delivered, unterminated, and
        the checkpoint stays at its start.  ``tail --pid``: the writer has exited.
        """
        self._until_eof = True

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
        return bool(self._ready or self._queue or (self._file is not None and self._file.unfed))

    def statistics(self) -> FollowerStatistics:
        """Lines yielded, overlong and skipped lines, rotations, truncations, units."""
        lines = self._lines + (self._block.handed() if self._block is not None else 0)
        return FollowerStatistics(
            lines=lines,
            skipped=self._skipped,
            overlong=self._overlong,
            rotations=self._rotations,
            truncations=self._truncations,
            malformed=self._malformed,
        )

    async def aclose(self) -> None:
        """Close the file; iteration ends (lines read but not handed out are not)."""
        self._closed = True
        self._note_caught_up()
        self._settle()
        self._ready.clear()
        self._release()
        self._file = None
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            await watcher.__aexit__(None, None, None)

    # -- opening -------------------------------------------------------------------

    def _release(self) -> None:
        """Close the file being read (and the copy being read for it)."""
        f = self._file
        if f is None:
            return
        if f.chunks is not None:
            f.chunks.close()
            f.chunks = None
        _stop_reading_ahead(f)
        if f.fd >= 0:
            os.close(f.fd)
            f.fd = -1

    def _count(self, event: Malformed) -> None:
        self._malformed += 1
        if self._on_malformed is not None:
            try:
                self._on_malformed(event)
            except Exception as exc:  # raised once the read is taken in, see _fill
                if self._callback_error is None:
                    self._callback_error = exc

    def _attach(self, fd: int, path: str, offset: int, encoding: str | None = None) -> _Open:
        """Read the file open as ``fd`` from ``offset``; ``encoding``: the one detected
        for it before (a checkpoint's), else it is detected now."""
        self._release()
        st = os.fstat(fd)
        if not self._auto:
            encoding = self._encoding
        elif encoding is None:
            encoding = _detect(fd)
        offset = min(offset, st.st_size)
        offset -= offset % _unit_of(encoding or "utf-8")  # lines start on a code unit
        anchor_len = min(ANCHOR_BYTES, offset)
        identity = _identity_of(fd)
        if self._auto:
            identity = dataclasses.replace(identity, encoding=encoding)
        f = _Open(
            fd=fd,
            path=path,
            identity=identity,
            engine=self._engine_for(offset, fd, encoding=encoding),
            read_pos=offset,
            known_size=st.st_size,
            anchor=os.pread(fd, anchor_len, offset - anchor_len),
            undecided=encoding is None,
            in_memory=_in_memory(st),
        )
        self._file = f
        if self._checkpoint is None:
            self._checkpoint = FollowCheckpoint(self._followed, f.identity, offset)
        return f

    def _engine_for(
        self,
        offset: int,
        fd: int = -1,
        head: bytes | None = None,
        *,
        encoding: str | None,
    ) -> LineEngine:
        """The line engine for a file in ``encoding`` (None: not known yet, UTF-8 until
        the first bytes come) read from ``offset`` (``fd``'s first bytes, or ``head``,
        tell a byte-order mark)."""
        encoding = encoding or "utf-8"
        decoder = line_decoder(
            encoding,
            self._errors,
            start_offset=offset,
            on_malformed=self._count if _is_utf8(encoding) else None,
        )
        if head is None and fd >= 0 and decoder.prelude:
            head = os.pread(fd, decoder.prelude, 0)
        return LineEngine(
            decoder,
            newline=self._newline,
            max_line_bytes=self._max,
            on_overlong=self._on_overlong,
            on_overlong_line=self._found_overlong,
            offset=offset,
            head=head,
            # The offsets of a block stay packed (the C ``Line`` makes each int on use).
            packed_offsets=True,
        )

    async def _open(self, path: str) -> int:
        return await anyio.to_thread.run_sync(_open_regular, path)

    def _copy_encoding(self, copy: _Copy, known: str | None) -> str:
        """The encoding of a rotated copy: ``known`` (its checkpoint's), else detected."""
        if not self._auto:
            return self._encoding
        return known or sniff_encoding(copy.head, whole=copy.size <= len(copy.head))

    def _notice(self, kind: str, message: str) -> None:
        if self._on_notice is not None:
            self._on_notice(Notice(kind, self.path, message))

    def _cannot_open(self, message: str) -> None:
        """Tell once that the path cannot be opened (again only if the reason changes)."""
        if message != self._inaccessible:
            self._inaccessible = message
            self._notice("inaccessible", message)

    def _opened(self, kind: str, message: str) -> None:
        """The path was opened after a rotation (or after being inaccessible)."""
        if self._inaccessible is not None:
            kind, message = "appeared", "has appeared; following new file"
            self._inaccessible = None
        self._notice(kind, message)

    async def _open_first(self) -> None:
        """Open the file where reading starts; with ``retry``, wait until it can be."""
        while True:
            try:
                await self._open_start()
            except OSError as exc:
                if not self._retry:
                    raise
                self._cannot_open(f"cannot open for reading: {exc.strerror or exc}")
                self._note_caught_up()
                await anyio.sleep(self._poll_interval)
                continue
            if self._inaccessible is not None:
                self._opened("appeared", "")
            return

    async def _open_start(self) -> None:
        if self._resume is not None:
            await self._open_from_checkpoint(self._resume)
            self._resume = None
            return
        fd = await self._open(self.path)
        size = os.fstat(fd).st_size
        start = self._start
        if start == "beginning" or self._inaccessible is not None:
            # A file that appeared while we waited is new: all of it is unread.
            self._attach(fd, self.path, 0)
        elif start == "end" and self._last_bytes is None:
            encoding = _detect(fd) if self._auto else self._encoding
            engine = self._engine_for(0, fd, encoding=encoding)
            offset = start_of_last_lines(
                lambda at, n: os.pread(fd, n, at), size, self._last_lines, engine
            )
            self._attach(fd, self.path, offset, encoding)
        else:
            if start == "end":
                assert self._last_bytes is not None
                offset = max(0, size - self._last_bytes)
            else:
                assert isinstance(start, int)
                offset = start
            f = self._attach(fd, self.path, offset)
            if self._gap_at_start and f.read_pos and not self._at_line_start(f):
                # Joined mid-line: the first line starts with U+FFFD.
                f.engine.decoder.mark_gap()

    def _at_line_start(self, f: _Open) -> bool:
        return f.engine.starts_line(f.anchor)

    async def _open_from_checkpoint(self, cp: FollowCheckpoint) -> None:
        # The path followed is ours, never the checkpoint's: __init__ checked they agree.
        try:
            fd = await self._open(self.path)
        except OSError:
            fd = -1  # perhaps rotated away and not there again yet: look for ours
        if fd >= 0 and cp.file.same_inode(os.fstat(fd)):
            offset = _resume_offset(fd, cp)
            if offset != cp.offset and await self._resume_from_copy(cp):
                # Truncated while we were stopped: its copy holds the rest, and the copies
                # made at later truncations (copytruncate again) come before the path.
                os.close(fd)
                return
            self._misfit(fd, cp, offset)
            self._attach(fd, self.path, offset, cp.file.encoding if offset else None)
            return
        # The path names another file now: was ours rotated away while we were stopped?
        rotated = await anyio.to_thread.run_sync(_find_rotated, Path(self.path), cp.file)
        if rotated is not None:
            rfd = await self._open(str(rotated))
            offset = _resume_offset(rfd, cp)
            # Other first bytes: a new rotation on our file's inode, if a copy (compressed
            # after its rotation) holds our file; else our file, rewritten.
            if offset == cp.offset or not await self._resume_from_copy(cp):
                if fd >= 0:
                    os.close(fd)
                self._misfit(rfd, cp, offset)
                self._attach(rfd, str(rotated), offset, cp.file.encoding if offset else None)
                self._draining = True  # drain it and its successors, then the path
                return
            os.close(rfd)
            if fd >= 0:
                os.close(fd)
            return
        if await self._resume_from_copy(cp):
            # Compressed after its rotation: read from there, then the rotations made
            # after it (compressed or not), then the path.
            if fd >= 0:
                os.close(fd)
            return
        if fd < 0:
            fd = await self._open(self.path)
        # Our file is gone: the path is a new file.
        self._notice(
            "checkpoint",
            f"checkpoint at byte {cp.offset} does not fit {self.path}: its file is neither"
            " there nor among its rotations (what it held past that byte is lost);"
            " reading the file there now from the beginning",
        )
        self._attach(fd, self.path, 0)

    async def _resume_from_copy(self, cp: FollowCheckpoint) -> bool:
        """Go on reading the checkpoint's file from a rotated copy, if one holds it.

        The copy is copytruncate's, or the rotated file compressed while we were
        stopped.  It is read one chunk at a time like any file, then the files rotated
        after it, then the path (``_move_on``).
        """
        # A unit of every encoding divides the offset of a line: it is the checkpoint's.
        opened = await self._find_and_open_copy(cp.file, cp.offset)
        if opened is None:
            return False
        copy, chunks = opened
        encoding = self._copy_encoding(copy, cp.file.encoding)
        offset = cp.offset - cp.offset % _unit_of(encoding)
        if offset != cp.offset:  # another encoding than the checkpoint's file had
            chunks.close()
            opened = await self._find_and_open_copy(cp.file, offset)
            if opened is None:
                return False
            copy, chunks = opened
        self._file = _Open(
            fd=-1,
            path=copy.path,
            identity=dataclasses.replace(cp.file, encoding=encoding) if self._auto else cp.file,
            engine=self._engine_for(offset, head=copy.head, encoding=encoding),
            read_pos=offset,
            known_size=copy.size,
            copy=copy,
            chunks=chunks,
        )
        self._draining = True
        return True

    async def _find_and_open_copy(
        self, identity: FileIdentity, offset: int
    ) -> tuple[_Copy, Generator[bytes, None, None]] | None:
        """A rotated copy holding ``identity``'s file past ``offset``, opened at ``offset``.

        Found again if a rotation renamed it between finding and opening.
        """
        for _ in range(_FIND_ATTEMPTS):
            copy = await self._find_copy_of(identity, offset)
            if copy is None:
                return None
            try:
                chunks = await anyio.to_thread.run_sync(_open_copy, copy, offset)
            except (ValueError, OSError):  # CompressedFileError is a ValueError
                # Gone or changed since it was checked (its name may name the next
                # rotation's file, not compressed yet): look again.
                chunks = None
            if chunks is not None:
                return copy, chunks
        return None

    def _misfit(self, fd: int, cp: FollowCheckpoint, offset: int) -> None:
        """Tell that the checkpoint does not fit the file open as ``fd``, read from
        ``offset`` (0) instead of the checkpoint's."""
        if offset == cp.offset:
            return
        size = os.fstat(fd).st_size
        if not _matches(fd, cp.file):
            why = (
                f"the file's first {cp.file.head_length} bytes are not the checkpoint's"
                " (rewritten, or another file)"
            )
        else:
            why = f"it is past the end of the file ({size} bytes)"
        self._notice(
            "checkpoint",
            f"checkpoint at byte {cp.offset} does not fit {self.path}: {why};"
            " reading it from the beginning",
        )

    # -- reading -------------------------------------------------------------------

    async def _fill(self) -> None:
        """Read more; at the end, look for rotation or truncation, else wait.

        An exception from ``on_malformed`` is raised here, once the read is taken in
        (the lines read with it are delivered next; nothing is lost).
        """
        await self._read_more()
        error, self._callback_error = self._callback_error, None
        if error is not None:
            raise error

    async def _read_more(self) -> None:
        if self._file is None:
            await self._open_first()
        f = self._file
        assert f is not None
        if f.unfed:
            self._feed_slice(f)
            return
        if f.copy is not None:
            await self._read_copy(f)
            return
        # Read the anchor again with the new bytes: if the bytes before our position
        # changed, the file was truncated and rewritten (perhaps past its old size).
        # Nothing read yet (no anchor): the first bytes must still be the fingerprinted
        # ones, or the file was truncated between its open and this first read.
        n = len(f.anchor)
        data = await self._reads.pread(f, READ_SIZE + n, f.read_pos - n, n + 1)
        if data[:n] != f.anchor or (not f.read_pos and not _head_holds(f, data)):
            _stop_reading_ahead(f)
            await self._truncated(f)
            return
        if len(data) > n:
            f.known_size = max(os.fstat(f.fd).st_size, f.read_pos + len(data) - n)
            self._take(f, data, n)  # the anchor is skipped, not sliced off (a copy)
            _read_ahead(f, full=len(data) == _in_loop_size(READ_SIZE + n))
            return
        _stop_reading_ahead(f)  # caught up: a quiet file needs no thread
        if self._until_eof and not self._draining:
            # Read once: the unfinished last line is shown, but it is not complete, so
            # the checkpoint stays at its start and a later run reads it again whole.
            self._finish(f, unfinished=True)
            self._at_eof = True
        elif not await self._look_around(f):
            if self._until_eof:
                self._finish(f, unfinished=True)
                self._at_eof = True
                return
            due = self._partial_due(f)
            if due is not None and due <= 0:
                self._queue_items(f, f.engine.cut_unfinished())
                if self._queue:
                    return
                due = None  # what is held cannot be cut yet: the next bytes decide
            await self._wait_for_change(f, due)

    async def _look_around(self, f: _Open) -> bool:
        """At the end of the data: handle truncation and rotation; True if acted."""
        st = os.fstat(f.fd)
        if st.st_size < f.read_pos:
            await self._truncated(f)
            return True
        f.known_size = st.st_size
        if not self._draining:
            try:
                st_path = os.stat(self.path)
            except OSError as exc:  # renamed or deleted, the new file is not there yet
                self._cannot_open(f"has become inaccessible: {exc.strerror or exc}")
                return False
            if f.identity.same_inode(st_path):
                return False
            self._draining = True  # rotated away
        # Writes may have reached the rotated file since the last read: drain it.
        data = await anyio.to_thread.run_sync(os.pread, f.fd, READ_SIZE, f.read_pos)
        if data:
            self._take(f, data)
            return True
        if not self._until_eof:
            grace_left = self._grace_left(f)
            if grace_left > 0:
                await self._wait_for_change(f, grace_left)
                return True
            if f.copy is None and await anyio.to_thread.run_sync(self._writer_may_hold, f):
                # Quiet, but its writer has not reopened the path yet: it may still append.
                await self._wait_for_change(f, self._rotate_grace or self._poll_interval)
                return True
        return await self._move_on(f)

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

    async def _move_on(self, f: _Open) -> bool:
        """Leave the rotated file ``f``, read to its end, for the next file; False (and
        ``f`` kept) if that is the path and it cannot be opened now."""
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
                    self._notice("damaged", opened)
                    exclude.add(target.path)
                    continue
                copy, chunks = opened
                self._leave(f)
                self._release()
                encoding = self._copy_encoding(copy, None)
                identity = FileIdentity(
                    copy.device,
                    copy.inode,
                    *head_fingerprint(copy.head),
                    encoding if self._auto else None,
                )
                self._file = _Open(
                    fd=-1,
                    path=copy.path,
                    identity=identity,
                    engine=self._engine_for(0, head=copy.head, encoding=encoding),
                    read_pos=0,
                    known_size=copy.size,
                    copy=copy,
                    chunks=chunks,
                )
                self._draining = True
                return True
            try:
                fd = await self._open(target.path)
            except OSError as exc:
                if target.path == self.path:
                    self._cannot_open(f"has become inaccessible: {exc.strerror or exc}")
                    return False
                continue  # renamed or deleted since listed: look again
            st = os.fstat(fd)
            if target.inode >= 0 and (st.st_dev, st.st_ino) != (target.device, target.inode):
                os.close(fd)  # a rotation gave the name to another file meanwhile
                continue
            self._leave(f)
            self._attach(fd, target.path, 0)
            self._draining = target.path != self.path
            if not self._draining:
                self._opened("replaced", "has been replaced; following new file")
            return True
        return False

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
        self._finish(f, lost=f.lost)
        f.lost = 0
        self._rotations += 1

    def _grace_left(self, f: _Open) -> float:
        """Seconds the rotated-away ``f`` must still stay unchanged before it is left.

        Quiet is measured from the later of its last modification and the moment it was
        first seen with nothing new, whichever ends sooner: a file rotated long ago (a
        restart) is left at once, and one whose modification time is in the future (a
        clock set back) is still left ``rotate_grace`` after its last new byte.
        """
        now = time.monotonic()
        if f.quiet_since is None:
            f.quiet_since = now
        since_read = now - f.quiet_since
        since_write = time.time() - os.fstat(f.fd).st_mtime
        return self._rotate_grace - max(since_read, since_write)

    async def _wait_for_change(self, f: _Open, timeout: float | None = None) -> None:
        """Wait until ``f``, the path followed, or its directory may have changed.

        The kernel wakes the follower (``Watcher``); where it cannot, the directory is
        polled every ``poll_interval``.  The watcher is armed before the last look (it
        stays armed from the first wait on), so a change made between the read that
        found nothing and the wait is not missed.
        Returns after ``timeout`` seconds too, and soon after ``stop_at_end()``.
        """
        self._note_caught_up()
        paths = tuple(dict.fromkeys((self.path, f.path)))
        watcher = self._watcher
        if watcher is None:
            watcher = Watcher(paths, poll_interval=self._poll_interval)
            await watcher.__aenter__()
            self._watcher = watcher
        elif watcher.paths != paths:
            watcher.retarget(paths)
        deadline = None if timeout is None else anyio.current_time() + timeout
        look = await anyio.to_thread.run_sync(self._look_again, f)
        if look == "changed":
            return
        if look == "path gone":
            # The writer may go on writing to our file under a name nobody
            # watches: look again after ``poll_interval``, as a poller would.
            gone_deadline = anyio.current_time() + self._poll_interval
            deadline = gone_deadline if deadline is None else min(deadline, gone_deadline)
        while not self._until_eof and not self._closed:
            # Woken by the kernel, the follower still looks at ``stop_at_end()`` often.
            step = self._poll_interval
            if watcher.mode == "kernel":
                step = min(step, _FLAG_CHECK_INTERVAL)
            if deadline is not None:
                step = min(step, deadline - anyio.current_time())
                if step <= 0:
                    return
            if await watcher.wait(step):
                return

    def _look_again(self, f: _Open) -> str:
        """``"changed"`` if ``f`` or the path differs from what the last look saw,
        ``"path gone"`` if the path names nothing, else ``"same"``."""
        if os.fstat(f.fd).st_size != f.read_pos:
            return "changed"
        if self._draining:
            return "same"
        try:
            st = os.stat(self.path)
        except OSError:
            return "path gone"
        return "same" if f.identity.same_inode(st) else "changed"

    async def _truncated(self, f: _Open) -> None:
        """The file shrank or was rewritten: restart at 0, reporting vanished bytes.

        The bytes not read yet are first taken from the rotated copy (copytruncate's
        ``app.log.1``, perhaps compressed) when one is found, one chunk per read; only
        what no copy holds is reported lost.
        """
        self._truncations += 1
        opened = await self._find_and_open_copy(f.identity, f.read_pos)
        recovered = 0 if opened is None else opened[0].size - f.read_pos
        lost = max(0, f.known_size - f.read_pos - recovered)
        message = "file truncated"
        if recovered:
            message += f"; {recovered} bytes not read yet were taken from its rotated copy"
        if lost:
            message += f"; {lost} bytes not read were lost"
        self._notice("truncated", message)
        if opened is not None and recovered:
            f.copy, f.chunks = opened
            f.resume_live = True
            f.lost = lost
            return
        if opened is not None:
            opened[1].close()
        self._finish(f, lost=lost)
        self._attach(os.dup(f.fd), f.path, 0)

    async def _find_copy_of(self, identity: FileIdentity, offset: int) -> _Copy | None:
        """A rotated copy holding ``identity``'s file past ``offset``; damaged ones told."""
        problems: list[str] = []
        copy = await anyio.to_thread.run_sync(
            _find_copy, Path(self.path), identity, offset, problems
        )
        for problem in problems:
            self._notice("damaged", problem)
        return copy

    async def _read_copy(self, f: _Open) -> None:
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
                self._notice("damaged", f"cannot read the rotated copy {copy.path}: {exc}")
                f.lost += max(0, copy.size - f.read_pos)
        if chunk:
            f.read_pos += len(chunk)
            f.known_size = max(f.known_size, f.read_pos)
            self._queue_items(f, f.engine.feed(chunk), copy.path)
            return
        if f.chunks is not None:
            f.chunks.close()
            f.chunks = None
        if f.resume_live:
            self._finish(f, lost=f.lost)
            self._attach(os.dup(f.fd), f.path, 0)
            return
        if not await self._move_on(f):
            # The path cannot be opened now: it is opened (and read from its start, as
            # a file that appeared) at the next step, or waited for with ``retry``.
            self._leave(f)
            self._file = None
            self._draining = False
            self._start = "beginning"

    def _finish(self, f: _Open, lost: int = 0, unfinished: bool = False) -> None:
        """Leaving a file: its unfinished last line is complete now."""
        self._queue_items(f, f.engine.finish(lost=lost, unfinished=unfinished))

    def _take(self, f: _Open, data: bytes, start: int = 0) -> None:
        """Cut newly read bytes (``data`` from ``start`` on) into lines and queue the
        complete ones (those of the first ``FEED_SIZE`` bytes; the rest when asked)."""
        if f.undecided:
            # The first bytes of a file that was empty: its encoding is told now.
            encoding = _detect(f.fd) or sniff_encoding(data[start:], whole=False)
            f.engine = self._engine_for(f.read_pos, f.fd, encoding=encoding)
            f.identity = dataclasses.replace(f.identity, encoding=encoding)
            f.undecided = False
        end = len(data)
        if end - start > FEED_SIZE:
            # A long read ends at a line's end: the rest, the start of a line, is read
            # again with the next bytes (positional reads), so no slice holds a line
            # that the engine must join to the next read's (that costs the general path
            # twice per read).  A read with no newline is taken whole.
            end = f.engine.slice_end(data, start, end)
        f.read_pos += end - start
        f.quiet_since = None
        f.fed_at = anyio.current_time()
        f.anchor = (f.anchor + data[max(start, end - ANCHOR_BYTES) : end])[-ANCHOR_BYTES:]
        if f.identity.head_length < FINGERPRINT_BYTES and f.read_pos > f.identity.head_length:
            # A young file: fingerprint more of it, so a reused inode is recognised.
            head = os.pread(f.fd, FINGERPRINT_BYTES, 0)[: f.read_pos]
            length, digest = head_fingerprint(head)
            f.identity = dataclasses.replace(f.identity, head_length=length, head_sha256=digest)
        f.unfed, f.unfed_at, f.unfed_end = data, start, end
        self._feed_slice(f)

    def _feed_slice(self, f: _Open) -> None:
        """Cut the next ``FEED_SIZE`` bytes of the last read into lines, and queue them.

        The slice ends just past a newline where it can: the engine then holds nothing
        to join to the next slice (a copy of it), and the slice is not copied either."""
        found = _slice_records(f)
        if found is not None:
            # In one call where it can: the slice cut straight into records.
            lines, after, items = found
            if lines:
                self._queue.append(_Block(lines, after, f.identity))
            self._queue_items(f, items)
            return
        data, at, limit = f.unfed, f.unfed_at, f.unfed_end
        stop = min(at + FEED_SIZE, limit)
        end = f.engine.slice_end(data, at, stop) if stop < limit else limit
        _fed_to(f, end)
        # A slice is a view: the engine's fast path reads it where it lies (no copy).
        piece = memoryview(data)[at:end] if at or end < len(data) else data
        self._queue_items(f, f.engine.feed(piece))

    def _queue_items(
        self, f: _Open, items: list[LineBatch | LineItem], path: str | None = None
    ) -> None:
        queue = self._queue
        identity = f.identity
        path = f.path if path is None else path
        for item in items:
            if isinstance(item, LineBatch):
                texts, offsets = item
                records = _records(texts, offsets, identity, path)
                queue.append(_Block(records, offsets[-1], identity))
            else:
                line, offset, end, mid_line, terminated = item
                if line is None and self._on_overlong == "skip":
                    self._skipped += 1  # (under "raise", None only moves the checkpoint)
                queue.append((line, offset, end, identity, path, mid_line, terminated))

    def _found_overlong(self, offset: int) -> None:
        """Truncated or skipped: text is lost, so say so (a split loses nothing)."""
        self._overlong += 1
        done = {"truncate": "truncated", "skip": "skipped"}.get(self._on_overlong)
        if done is not None:
            self._notice(
                "overlong", f"line at byte {offset} longer than {self._max} bytes: {done}"
            )
