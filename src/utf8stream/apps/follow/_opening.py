"""How the follower opens a file: where reading starts (``start``, ``last_lines``,
``last_bytes``, a checkpoint, which may be in a rotated file or a copy of it now), and
the notices about the path (inaccessible, appeared, a checkpoint that does not fit)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Generator
from pathlib import Path

import anyio.to_thread

from ...core.autolines import detect_line_codec, line_codec
from ...core.lastlines import start_of_last_lines
from ._checkpoint import FollowCheckpoint
from ._cutting import ANCHOR_BYTES, _Cutter
from ._machine import Event
from ._reading import (
    _detect,
    _detection,
    _identity_of,
    _matches,
    _Open,
    _open_regular,
    _resume_offset,
    _unit_of,
    in_memory,
)
from ._readpolicy import ReadPolicy
from ._records import FileIdentity, Notice
from ._rotation import _Copy, _find_copy, _find_rotated, _open_copy

#: How many times a file is looked for when rotations keep renaming it away.
_FIND_ATTEMPTS = 5


class _Opener:
    """Opens the files a follower reads, and tells about the path."""

    def __init__(
        self,
        path: str,
        cutter: _Cutter,
        *,
        start: str | int,
        last_lines: int,
        last_bytes: int | None,
        gap_at_start: bool,
        checkpoint: FollowCheckpoint | None,
        on_notice: Callable[[Notice], object] | None,
        reading: ReadPolicy,
    ) -> None:
        self.path = path
        self._cutter = cutter
        self._policy = reading
        self._start = start
        self._last_lines = last_lines
        self._last_bytes = last_bytes
        self._gap_at_start = gap_at_start
        #: The checkpoint to resume from, until the first open.
        self._resume = checkpoint
        self._on_notice = on_notice
        #: The last "inaccessible" notice while the path cannot be opened, else None.
        self.inaccessible: str | None = None

    # -- notices -------------------------------------------------------------------

    def notice(self, kind: str, message: str) -> None:
        if self._on_notice is not None:
            self._on_notice(Notice(kind, self.path, message))

    def cannot_open(self, message: str) -> None:
        """Tell once that the path cannot be opened (again only if the reason changes)."""
        if message != self.inaccessible:
            self.inaccessible = message
            self.notice("inaccessible", message)

    def opened(self, kind: str, message: str) -> None:
        """The path was opened after a rotation (or after being inaccessible)."""
        if self.inaccessible is not None:
            kind, message = "appeared", "has appeared; following new file"
            self.inaccessible = None
        self.notice(kind, message)

    # -- opening -------------------------------------------------------------------

    async def open(self, path: str) -> int:
        return await anyio.to_thread.run_sync(_open_regular, path)

    def attach(self, fd: int, path: str, offset: int, encoding: str | None = None) -> _Open:
        """The file open as ``fd``, to read from ``offset``; ``encoding``: the one detected
        for it before (a checkpoint's), else it is detected now."""
        cutter, policy = self._cutter, self._policy
        st = os.fstat(fd)
        found = None
        if not cutter.auto:
            encoding = cutter.encoding
        elif encoding is None:
            found = _detection(fd)
            encoding = None if found is None else line_codec(found)
        offset = min(offset, st.st_size)
        offset -= offset % _unit_of(encoding or "utf-8")  # lines start on a code unit
        anchor_len = min(ANCHOR_BYTES, offset)
        identity = _identity_of(fd)
        if cutter.auto:
            identity = dataclasses.replace(identity, encoding=encoding)
        return _Open(
            fd=fd,
            path=path,
            identity=identity,
            engine=cutter.engine_for(offset, fd, encoding=encoding),
            read_pos=offset,
            policy=policy,
            known_size=st.st_size,
            anchor=os.pread(fd, anchor_len, offset - anchor_len),
            undecided=encoding is None,
            doubt=cutter.doubt_tracker(found) if offset == 0 else None,
            in_memory=in_memory(st) if policy.in_memory is None else policy.in_memory,
        )

    def copy_encoding(self, copy: _Copy, known: str | None) -> str:
        """The encoding of a rotated copy: ``known`` (its checkpoint's), else detected."""
        if not self._cutter.auto:
            return self._cutter.encoding
        return known or detect_line_codec(copy.head)

    def open_copy(
        self,
        copy: _Copy,
        chunks: Generator[bytes, None, None],
        identity: FileIdentity,
        offset: int,
        encoding: str,
    ) -> _Open:
        """The copy ``copy``, whose bytes from ``offset`` on are ``chunks``, read as the
        file ``identity`` describes."""
        return _Open(
            fd=-1,
            path=copy.path,
            identity=identity,
            engine=self._cutter.engine_for(offset, head=copy.head, encoding=encoding),
            read_pos=offset,
            policy=self._policy,
            known_size=copy.size,
            copy=copy,
            chunks=chunks,
        )

    async def open_start(self, from_start: bool) -> tuple[Event, _Open]:
        """Open the file where reading starts: the event that says which it is, and it.

        ``from_start``: the path is read from its start (a file that appeared)."""
        if self._resume is not None:
            found = await self._open_from_checkpoint(self._resume)
            self._resume = None
            return found
        fd = await self.open(self.path)
        size = os.fstat(fd).st_size
        start = self._start
        if start == "beginning" or from_start:
            # A file that appeared while we waited is new: all of it is unread.
            return Event.OPENED, self.attach(fd, self.path, 0)
        if start == "end" and self._last_bytes is None:
            cutter = self._cutter
            encoding = _detect(fd) if cutter.auto else cutter.encoding
            engine = cutter.engine_for(0, fd, encoding=encoding)
            offset = start_of_last_lines(
                lambda at, n: os.pread(fd, n, at), size, self._last_lines, engine
            )
            return Event.OPENED, self.attach(fd, self.path, offset, encoding)
        if start == "end":
            assert self._last_bytes is not None
            offset = max(0, size - self._last_bytes)
        else:
            assert isinstance(start, int)
            offset = start
        f = self.attach(fd, self.path, offset)
        if self._gap_at_start and f.read_pos and not f.engine.starts_line(f.anchor):
            # Joined mid-line: the first line starts with U+FFFD.
            f.engine.decoder.mark_gap()
        return Event.OPENED, f

    async def _open_from_checkpoint(self, cp: FollowCheckpoint) -> tuple[Event, _Open]:
        # The path followed is ours, never the checkpoint's: the follower checked they agree.
        try:
            fd = await self.open(self.path)
        except OSError:
            fd = -1  # perhaps rotated away and not there again yet: look for ours
        if fd >= 0 and cp.file.same_inode(os.fstat(fd)):
            offset = _resume_offset(fd, cp)
            if offset != cp.offset:
                # Truncated while we were stopped: its copy holds the rest, and the copies
                # made at later truncations (copytruncate again) come before the path.
                copied = await self._resume_from_copy(cp)
                if copied is not None:
                    os.close(fd)
                    return Event.OPENED_COPY, copied
            self._misfit(fd, cp, offset)
            encoding = cp.file.encoding if offset else None
            return Event.OPENED, self.attach(fd, self.path, offset, encoding)
        # The path names another file now: was ours rotated away while we were stopped?
        rotated = await anyio.to_thread.run_sync(_find_rotated, Path(self.path), cp.file)
        if rotated is not None:
            rfd = await self.open(str(rotated))
            offset = _resume_offset(rfd, cp)
            # Other first bytes: a new rotation on our file's inode, if a copy (compressed
            # after its rotation) holds our file; else our file, rewritten.
            copied = None if offset == cp.offset else await self._resume_from_copy(cp)
            if fd >= 0:
                os.close(fd)
            if copied is not None:
                os.close(rfd)
                return Event.OPENED_COPY, copied
            self._misfit(rfd, cp, offset)
            encoding = cp.file.encoding if offset else None
            # Drained, then its successors, then the path.
            return Event.OPENED_ROTATED, self.attach(rfd, str(rotated), offset, encoding)
        copied = await self._resume_from_copy(cp)
        if copied is not None:
            # Compressed after its rotation: read from there, then the rotations made
            # after it (compressed or not), then the path.
            if fd >= 0:
                os.close(fd)
            return Event.OPENED_COPY, copied
        if fd < 0:
            fd = await self.open(self.path)
        # Our file is gone: the path is a new file.
        self.notice(
            "checkpoint",
            f"checkpoint at byte {cp.offset} does not fit {self.path}: its file is neither"
            " there nor among its rotations (what it held past that byte is lost);"
            " reading the file there now from the beginning",
        )
        return Event.OPENED, self.attach(fd, self.path, 0)

    async def _resume_from_copy(self, cp: FollowCheckpoint) -> _Open | None:
        """The checkpoint's file read on from a rotated copy, if one holds it.

        The copy is copytruncate's, or the rotated file compressed while we were
        stopped.  It is read one chunk at a time like any file, then the files rotated
        after it, then the path.
        """
        # A unit of every encoding divides the offset of a line: it is the checkpoint's.
        opened = await self.find_and_open_copy(cp.file, cp.offset)
        if opened is None:
            return None
        copy, chunks = opened
        encoding = self.copy_encoding(copy, cp.file.encoding)
        offset = cp.offset - cp.offset % _unit_of(encoding)
        if offset != cp.offset:  # another encoding than the checkpoint's file had
            chunks.close()
            opened = await self.find_and_open_copy(cp.file, offset)
            if opened is None:
                return None
            copy, chunks = opened
        auto = self._cutter.auto
        identity = dataclasses.replace(cp.file, encoding=encoding) if auto else cp.file
        return self.open_copy(copy, chunks, identity, offset, encoding)

    async def find_and_open_copy(
        self, identity: FileIdentity, offset: int
    ) -> tuple[_Copy, Generator[bytes, None, None]] | None:
        """A rotated copy holding ``identity``'s file past ``offset``, opened at ``offset``.

        Found again if a rotation renamed it between finding and opening.
        """
        for _ in range(_FIND_ATTEMPTS):
            copy = await self.find_copy_of(identity, offset)
            if copy is None:
                return None
            try:
                read_size = self._policy.read_size
                chunks = await anyio.to_thread.run_sync(_open_copy, copy, offset, read_size)
            except (ValueError, OSError):  # CompressedFileError is a ValueError
                # Gone or changed since it was checked (its name may name the next
                # rotation's file, not compressed yet): look again.
                chunks = None
            if chunks is not None:
                return copy, chunks
        return None

    async def find_copy_of(self, identity: FileIdentity, offset: int) -> _Copy | None:
        """A rotated copy holding ``identity``'s file past ``offset``; damaged ones told."""
        problems: list[str] = []
        copy = await anyio.to_thread.run_sync(
            _find_copy, Path(self.path), identity, offset, problems
        )
        for problem in problems:
            self.notice("damaged", problem)
        return copy

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
        self.notice(
            "checkpoint",
            f"checkpoint at byte {cp.offset} does not fit {self.path}: {why};"
            " reading it from the beginning",
        )
