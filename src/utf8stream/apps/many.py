"""Follow every file some glob patterns match, with one watcher and one checkpoint store.

Theory of operation
-------------------
Each matched file is followed by its own ``Follower`` (rotation, copies, compressed
rotations, encodings: all of ``follow()``, one state machine per file), but none of them
waits: each is given the ``SharedWatch`` strategy, so where it would wait for its file to
change it returns a ``Rest`` instead (at that point, as at a cancelled wait, its state is
complete), and ``ManyFollower`` waits for all of them on ONE
``Watcher`` that stays open for the life of the ``async with`` block: a notifier per
file per wait would cost a thread and a kernel watch each (1,000 quiet files must cost
next to nothing).  The directories of the patterns are watched; a change to a followed
file (or to the rotated file it drains) wakes that file's follower, any other change in
them, and every ``rescan_interval``, looks for new matches, which are read from their
start.  So is a file found on a restart that the store holds no checkpoint of while it
holds one of another file of the same pattern: it was created since the last save.  A
file whose name is gone (deleted, or rotated with nothing new at the name) is read to its
end, kept for ``rotate_grace`` in case its writer still appends, then dropped.

Fairness: followers take turns.  A follower hands out what one read gave it (at most
``ReadPolicy.read_size`` bytes, and at most ``_QUANTUM`` lines) and goes to the back of the line; a
busy file never holds the others back by more than one read.  While some are busy, the
watcher is still asked every ``_BUSY_LOOK`` seconds (``poll_interval`` when polling)
which quiet files have changed.

Checkpoints: with ``store=``, the checkpoints of all files are saved in one SQLite
transaction (``CheckpointStore.save``, in a worker thread), each covering exactly the
lines handed out, like ``Follower.checkpoint()``.  A save costs an fsync, so it is not
made per line: it is made when the next line is asked for after ``save_every`` lines or
``save_interval`` seconds (also when no line comes: the wait ends in time for it), when a
file is dropped (its key is forgotten in the same transaction) and at the end of the
block (``save()`` makes one at any time).  Lines are therefore handed out *at least
once*: after ``kill -9`` only the lines handed out since the last save come again, none
is lost.  A program that saves right after it has committed what it did with the lines
(``autosave=False``, ``save(checkpoints)`` with the checkpoints of what it wrote out, as
``utf8stream tail`` does) repeats only what it wrote after that save.  A program that
writes the lines into a table of the store's database passes that write as ``save(...,
also=write)``: rows and checkpoints are one transaction, and every line is written
*exactly once* (the soak of tests/test_soak_many.py kills such a program with SIGKILL).

Multi-line events (``multiline=``): each member's follower joins its lines into events,
with its own empty copy of the joiner, so an event holds lines of one file only.  Where it
would wait while its joiner holds an event, it rests until that event's timeout at the
latest (each file's own clock); woken then, it looks at its file once more and, with
nothing new, hands the event out (``_multiline._Joining``).  Its checkpoint stands before the
first line of the first event not handed out, so the store never records a position
inside an incomplete event: a restart reads its lines again and gives it whole, once.
"""

from __future__ import annotations

import contextlib
import glob
import math
import os
import sqlite3
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, replace
from fnmatch import fnmatchcase
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread

from ..core.events import Malformed
from ..core.multiline import MultilineJoiner
from ..core.transformed import as_transform, fresh_copy
from ._watch import Watcher
from .checkpoints import CheckpointStore
from .follow._checkpoint import FollowCheckpoint
from .follow._follower import Follower
from .follow._options import FollowOptions, option_of, refuse_not_taken
from .follow._readpolicy import ReadPolicy
from .follow._records import Line, Notice
from .follow._waiting import Rest, SharedWatch

if TYPE_CHECKING:
    from ..core.transformed import Transforms

__all__ = ["ManyFollower", "follow_many"]

#: At most this many lines from one file before the next file's turn.
_QUANTUM = 1024
#: While some file is busy, how often the kernel watcher is asked about the quiet ones.
_BUSY_LOOK = 0.05


class _Member:
    """One file of a ``ManyFollower``: its ``Follower``, driven through its
    ``SharedWatch`` (the follower never waits: it returns a ``Rest`` where it would), and
    its place among the others."""

    def __init__(self, follower: Follower, watch: SharedWatch) -> None:
        self.follower = follower
        self.watch = watch
        assert watch.reader is not None
        self.reader = watch.reader
        self.path = follower.path
        #: The absolute path followed: the file's key in the store.
        self.followed = self.reader.followed
        #: Waiting for a change to its file, or for ``wake_at``.
        self.resting = False
        self.wake_at = math.inf
        #: Its name is gone: read to the end, then dropped.
        self.ending = False

    async def open_now(self) -> None:
        """Open the file now, so that ``start="end"`` means the end when the block began."""
        if self.reader.file is None:
            with contextlib.suppress(OSError):  # told, or dropped, at the first step
                await self.reader.step()

    def cannot_open(self, message: str) -> None:
        self.reader.opener.cannot_open(message)

    def drop_when_drained(self) -> bool:
        """Whether the file, its name gone, has been quiet for ``rotate_grace``."""
        return self.reader.grace_over()

    def reading(self) -> str | None:
        """The file being read (the path, or a rotated file being drained)."""
        f = self.reader.file
        return None if f is None else os.path.abspath(f.path)


class ManyFollower:
    """Async iterator of ``Line`` records from many files; an async context manager.

    Built by ``follow_many()``; iterate it inside its ``async with`` block (the one
    watcher of all the files lives there).  ``Line.path`` is the file a line was read
    from: the matched file, or a rotated file of it being drained.
    """

    def __init__(
        self,
        patterns: Iterable[str | os.PathLike[str]],
        options: FollowOptions | None = None,
    ) -> None:
        if options is None:
            options = FollowOptions()
        else:
            refuse_not_taken(options, "many")
        self.patterns = [os.fspath(p) for p in patterns]
        if not self.patterns:
            raise ValueError("follow_many needs at least one pattern")
        self._absolute = [os.path.abspath(p) for p in self.patterns]
        for pattern in self._absolute:
            if glob.has_magic(os.path.dirname(pattern)):
                raise ValueError(
                    f"{pattern}: only the file name may hold wildcards (its directory is watched)"
                )
        self._encodings = dict(options.encodings or {})
        self._transforms = {
            pattern: as_transform(each)
            for pattern, each in (options.transforms_by_pattern or {}).items()
        }
        # Each file gets a fresh copy: one made now says at once if a transform cannot
        # be copied (a kind not registered), not when a file appears.
        for transform in (as_transform(options.transforms), *self._transforms.values()):
            if transform is not None:
                fresh_copy(transform)
        # Each file gets an empty copy: a joiner holds one file's incomplete event.
        self._joiner = FollowOptions.joiner_of(options.multiline)
        self._joiners = {
            pattern: FollowOptions.joiner_of(each)
            for pattern, each in (options.multilines or {}).items()
        }
        _check_per_pattern(self.patterns, self._encodings, self._joiners)
        _check_per_pattern(self.patterns, {}, self._transforms, "transforms_by_pattern")
        self._options = options
        #: What each file's follower is given: the options, less those of many files.
        self._one_file = replace(options, **_MANY_ONLY)
        self._save_every = options.save_every
        self._save_interval = options.save_interval
        self._autosave = options.autosave
        #: The followed file of the last line handed out.
        self.current: str | None = None
        self._rescan_interval = options.rescan_interval
        self._poll_interval = options.poll_interval
        self._on_notice = options.on_notice
        self._store: CheckpointStore | None = None
        self._owns_store = False
        self._resumed: dict[str, FollowCheckpoint] = {}
        self._members: dict[str, _Member] = {}
        self._active: deque[_Member] = deque()
        self._turn = 0
        self._watcher: Watcher | None = None
        self._entered = False
        self._closed = False
        self._next_look = 0.0
        self._next_rescan = 0.0
        self._saved: dict[str, FollowCheckpoint] = {}
        self._forget: set[str] = set()
        self._unsaved = 0
        self._last_save = 0.0

    # -- public API ----------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        """The files followed now (absolute paths), in the order they were found."""
        return list(self._members)

    async def __aenter__(self) -> ManyFollower:
        if self._entered:
            raise RuntimeError("a ManyFollower can be entered once")
        self._entered = True
        store = self._options.store
        if store is not None:
            if isinstance(store, CheckpointStore):
                self._store = store
            else:
                self._store = await anyio.to_thread.run_sync(CheckpointStore, store)
                self._owns_store = True
        try:
            if self._store is not None:
                self._resumed = await anyio.to_thread.run_sync(self._store.load_all)
                self._saved = dict(self._resumed)
            directories = sorted({os.path.dirname(p) for p in self._absolute})
            watcher = Watcher(
                directories,
                poll_interval=self._poll_interval,
                force_polling=self._options.force_polling,
            )
            await watcher.__aenter__()
        except BaseException:
            await self._close_all()
            raise
        self._watcher = watcher
        try:
            # Watched first, listed second: a file created in between is in both.
            found = await anyio.to_thread.run_sync(_matches, self._absolute)
            resumable = [key for key in self._resumed if self._pattern_of(key) is not None]
            # A pattern the store holds a file of was followed before: a file of it that
            # the store does not know is new since the last save, and read from its start.
            known = {self._pattern_of(key) for key in resumable}
            for path in dict.fromkeys([*resumable, *found]):
                self._add(path, at_start=self._pattern_of(path) not in known)
            for member in self._members.values():
                await member.open_now()
        except BaseException:
            await self._close_all()
            raise
        now = anyio.current_time()
        self._next_rescan = now + self._rescan_interval
        self._last_save = now
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> ManyFollower:
        return self

    async def __anext__(self) -> Line:
        if self._watcher is None:
            raise RuntimeError("iterate a ManyFollower inside its 'async with' block")
        while True:
            if self._closed:
                raise StopAsyncIteration
            # Everything handed out before this call has been dealt with by the caller.
            if (
                self._autosave
                and self._unsaved
                and (
                    self._unsaved >= self._save_every
                    or anyio.current_time() - self._last_save >= self._save_interval
                )
            ):
                await self.save()
            if anyio.current_time() >= self._next_look:
                await self._look(0)
            if not self._active:
                timeout = self._quiet_timeout()
                if self._autosave and self._unsaved:
                    # Saved soon even if no line comes, but not at every quiet moment: many
                    # files each writing now and then would cost an fsync each time.
                    due = self._last_save + self._save_interval - anyio.current_time()
                    timeout = min(timeout, max(due, 0.0))
                await self._look(timeout)
                continue
            member = self._active[0]
            try:
                line = await member.watch.step()
            except StopAsyncIteration:
                await self._drop(member)
                continue
            except OSError as exc:
                await self._cannot_read(member, exc)
                continue
            if isinstance(line, Rest):
                self._rest(member, line)
                continue
            self._unsaved += 1
            self._turn += 1
            self.current = member.followed
            if self._turn >= _QUANTUM or not member.follower.has_pending():
                self._active.rotate(-1)
                self._turn = 0
            return line

    def checkpoints(self) -> dict[str, FollowCheckpoint]:
        """Each followed file's checkpoint, covering exactly the lines handed out."""
        found: dict[str, FollowCheckpoint] = {}
        for key, member in self._members.items():
            try:
                found[key] = member.follower.checkpoint()
            except RuntimeError:  # not opened yet: its stored checkpoint (if any) stands
                continue
        return found

    def has_pending(self) -> bool:
        """Whether the next line is already read (a writer of the lines can flush when
        this turns false)."""
        return bool(self._active) and self._active[0].follower.has_pending()

    async def save(
        self,
        checkpoints: Mapping[str, FollowCheckpoint] | None = None,
        *,
        also: Callable[[sqlite3.Connection], object] | None = None,
    ) -> None:
        """Save every file's checkpoint that moved, in one transaction, and forget the
        files dropped since the last save.

        ``checkpoints``: what to save instead of ``checkpoints()`` now, e.g. as they were
        when the lines were last written out (with ``autosave=False``).

        ``also``: ``CheckpointStore.save``'s: called (in a worker thread) with the
        store's connection inside the same transaction, to write the lines these
        checkpoints cover into the program's own tables of that database: then every
        line is written exactly once, whatever instant a ``kill -9`` hits.  Use it with
        ``autosave=False`` (an automatic save would record lines not yet written).
        """
        if also is not None and self._store is None:
            raise ValueError("save(also=...) needs a checkpoint store (store=)")
        self._unsaved = 0
        self._last_save = anyio.current_time()
        if self._store is None:
            return
        current = self.checkpoints() if checkpoints is None else checkpoints
        forget = set(self._forget)
        batch = {
            key: cp
            for key, cp in current.items()
            if self._saved.get(key) != cp and key not in forget
        }
        if not batch and not forget and also is None:
            return
        store = self._store
        await anyio.to_thread.run_sync(lambda: store.save(batch, forget=forget, also=also))
        self._saved.update(batch)
        for key in forget:
            self._saved.pop(key, None)
        self._forget -= forget

    async def aclose(self) -> None:
        """Save (with a store), close every file and the watcher; iteration ends."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._watcher is not None and self._autosave:
                with anyio.CancelScope(shield=True):
                    await self.save()
        finally:
            await self._close_all()

    # -- members -------------------------------------------------------------------

    def _pattern_of(self, path: str) -> str | None:
        return _pattern_of(path, self.patterns, self._absolute)

    def _add(self, path: str, *, at_start: bool) -> None:
        pattern = self._pattern_of(path)
        assert pattern is not None
        joiner = self._joiners.get(pattern, self._joiner)
        checkpoint = self._resumed.pop(path, None)
        where: dict[str, Any]
        if checkpoint is not None:
            where = {"checkpoint": checkpoint, "start": "end", "last_lines": 0}
        elif at_start:
            where = {}  # at ``start``, with ``last_lines``
        else:
            # Created while we follow, or since the last save: every line of it is new.
            where = {"start": "beginning", "last_lines": 0}
            if self._on_notice is not None:
                self._on_notice(Notice("appeared", path, "has appeared; following new file"))
        transform = self._transforms.get(pattern, as_transform(self._options.transforms))
        options = replace(
            self._one_file,
            encoding=self._encodings.get(pattern, self._options.encoding),
            transforms=None if transform is None else fresh_copy(transform),
            multiline=None if joiner is None else joiner.empty_copy(),
            **where,
        )
        watch = SharedWatch(self._poll_interval)
        member = _Member(Follower(path, options, waiting=watch), watch)
        self._members[path] = member
        self._active.append(member)

    def _rest(self, member: _Member, idle: Rest) -> None:
        """``member`` waits for a change; a file whose name is gone is finished once quiet."""
        self._remove_active(member)
        if idle.gone and not member.ending and member.drop_when_drained():
            # Read to its end (its unfinished last line too), then dropped.
            member.ending = True
            member.follower.stop_at_end()
            self._active.append(member)
            return
        timeout = math.inf if idle.timeout is None else idle.timeout
        member.resting = True
        member.wake_at = anyio.current_time() + max(timeout, 0.0)

    def _remove_active(self, member: _Member) -> None:
        if self._active and self._active[0] is member:
            self._active.popleft()
            self._turn = 0
        elif member in self._active:
            self._active.remove(member)

    def _wake(self, member: _Member) -> None:
        if member.resting:
            member.resting = False
            self._active.append(member)

    async def _drop(self, member: _Member) -> None:
        self._remove_active(member)
        key = member.followed
        self._members.pop(key, None)
        self._forget.add(key)
        self._saved.pop(key, None)
        await member.follower.aclose()
        if self._autosave:
            await self.save()

    async def _cannot_read(self, member: _Member, exc: OSError) -> None:
        if not await anyio.to_thread.run_sync(os.path.exists, member.path):
            if member.watch.hand_out_held():
                return  # its last event goes out first; dropped at its next step
            await self._drop(member)  # gone before it could be opened
            return
        member.cannot_open(f"cannot open for reading: {exc.strerror or exc}")
        self._rest(member, Rest(self._poll_interval))

    async def _close_all(self) -> None:
        members, self._members = list(self._members.values()), {}
        self._active.clear()
        for member in members:
            await member.follower.aclose()
        if self._watcher is not None:
            watcher, self._watcher = self._watcher, None
            # Not under a shield: the watcher's task group must be the innermost scope.
            await watcher.__aexit__(None, None, None)
        if self._owns_store and self._store is not None:
            self._store.close()

    # -- waiting -------------------------------------------------------------------

    def _quiet_timeout(self) -> float:
        now = anyio.current_time()
        due = min((m.wake_at for m in self._members.values() if m.resting), default=math.inf)
        return max(0.0, min(due, self._next_rescan) - now)

    async def _look(self, timeout: float) -> None:
        """Wake the members whose files changed or whose time came; find new files."""
        watcher = self._watcher
        assert watcher is not None
        changed = await watcher.wait(timeout)
        now = anyio.current_time()
        self._next_look = now + (_BUSY_LOOK if watcher.mode == "kernel" else self._poll_interval)
        resting = [m for m in self._members.values() if m.resting]
        by_path = _by_path(resting)
        rescan = now >= self._next_rescan
        for path in changed:
            absolute = os.path.abspath(path)
            woken = by_path.get(absolute)
            if woken:
                for member in woken:
                    self._wake(member)
            elif absolute not in self._members and self._pattern_of(absolute) is not None:
                rescan = True
        for member in resting:
            if member.resting and member.wake_at <= now:
                self._wake(member)
        if rescan:
            self._next_rescan = now + self._rescan_interval
            for path in await anyio.to_thread.run_sync(_matches, self._absolute):
                if path not in self._members:
                    self._add(path, at_start=False)


def _pattern_of(path: str, patterns: list[str], absolute: list[str]) -> str | None:
    """The first of ``patterns`` (``absolute``: made absolute) matching ``path`` (an
    absolute path), as given."""
    directory, name = os.path.split(path)
    for given, pattern in zip(patterns, absolute, strict=True):
        pattern_dir, pattern_name = os.path.split(pattern)
        # As glob: a wildcard does not match a leading dot.
        hidden = name.startswith(".") and not pattern_name.startswith(".")
        if directory == pattern_dir and fnmatchcase(name, pattern_name) and not hidden:
            return given
    return None


def _matches(absolute: list[str]) -> list[str]:
    """The regular files the patterns match now, in the patterns' order."""
    found: dict[str, None] = {}
    for pattern in absolute:
        for path in sorted(glob.glob(pattern)):
            if os.path.isfile(path):
                found[os.path.abspath(path)] = None
    return list(found)


def _by_path(members: list[_Member]) -> dict[str, list[_Member]]:
    """The members woken by a change to each path: the file followed, and the rotated
    file it drains."""
    by_path: dict[str, list[_Member]] = {}
    for member in members:
        by_path.setdefault(member.followed, []).append(member)
        reading = member.reading()
        if reading is not None and reading != member.followed:
            by_path.setdefault(reading, []).append(member)
    return by_path


def _check_per_pattern(
    patterns: list[str],
    encodings: Mapping[str, str],
    joiners: Mapping[str, object],
    what_joiners: str = "multilines",
) -> None:
    for what, given in (("encodings", encodings), (what_joiners, joiners)):
        unknown = set(given) - set(patterns)
        if unknown:
            raise ValueError(f"{what} for patterns not followed: {sorted(unknown)}")


#: The options of many files, at their defaults in each file's own options.
_MANY_ONLY: dict[str, Any] = {
    field.name: field.default
    for field in fields(FollowOptions)
    if option_of(field.name).takes == "many"
}
#: ``follow_many()``'s ``start``: ``FollowOptions``'s, which for it is never a byte offset.
_START = cast(str, FollowOptions.start)


def follow_many(
    patterns: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    store: CheckpointStore | str | os.PathLike[str] | None = FollowOptions.store,
    encoding: str = FollowOptions.encoding,
    encodings: Mapping[str, str] | None = FollowOptions.encodings,
    start: str = _START,
    last_lines: int = FollowOptions.last_lines,
    save_every: int = FollowOptions.save_every,
    save_interval: float = FollowOptions.save_interval,
    autosave: bool = FollowOptions.autosave,
    rescan_interval: float = FollowOptions.rescan_interval,
    poll_interval: float = FollowOptions.poll_interval,
    rotate_grace: float = FollowOptions.rotate_grace,
    force_polling: bool = FollowOptions.force_polling,
    on_notice: Callable[[Notice], object] | None = FollowOptions.on_notice,
    multiline: MultilineJoiner | str | None = FollowOptions.multiline,
    multilines: Mapping[str, MultilineJoiner | str | None] | None = FollowOptions.multilines,
    multiline_timeout: float = FollowOptions.multiline_timeout,
    newline: str | None = FollowOptions.newline,
    max_line_bytes: int = FollowOptions.max_line_bytes,
    on_overlong: str = FollowOptions.on_overlong,
    errors: str = FollowOptions.errors,
    on_malformed: Callable[[Malformed], object] | None = FollowOptions.on_malformed,
    gap_at_start: bool = FollowOptions.gap_at_start,
    partial_after: float | None = FollowOptions.partial_after,
    reading: ReadPolicy = FollowOptions.reading,
    transforms: Transforms = FollowOptions.transforms,
    transforms_by_pattern: Mapping[str, Transforms] | None = FollowOptions.transforms_by_pattern,
) -> ManyFollower:
    """Follow every file the glob ``patterns`` match, like ``tail -F`` on each.

    Use as ``async with follow_many(["/var/log/app/*.log"], store="tail.db") as lines:
    async for line in lines: ...``.  Only the file name part of a pattern may hold
    wildcards.  Files matching when the block is entered start at ``start`` (``"end"``,
    with ``last_lines``, or ``"beginning"``); files that appear later are read from
    their start, and so are, on a restart, the files ``store`` holds no checkpoint of
    while it holds one of another file of their pattern (created since the last save;
    a pattern the store knows no file of, as on the first run with an empty store,
    starts its files at ``start``); a file whose name is removed is read to its end and
    dropped once quiet for ``rotate_grace``.  Each file is followed as ``follow()``
    follows one (rotation, copytruncate, compressed rotations); ``newline``,
    ``max_line_bytes``, ``on_overlong``, ``errors``, ``on_malformed``, ``gap_at_start``,
    ``partial_after`` and ``reading`` are as ``follow()``'s.  ``encodings`` maps a
    pattern (as given) to its files' encoding; the others use ``encoding``.  A file
    matched by several patterns belongs to the first.  The options, their defaults and
    their checks are ``FollowOptions``'s (``follow_many(patterns,
    **options.as_kwargs("many"))``, or ``ManyFollower(patterns, options)``).

    ``multiline``: a ``MultilineJoiner`` or a preset name, as for ``follow()``: each
    ``Line`` is then a multi-line event of one file (each file has its own empty copy of
    the joiner; lines of two files are never joined), at the offset of its first line.
    A file's last event is handed out once ``multiline_timeout`` seconds pass with no
    line from that file, at its rotation or truncation, and when it is dropped.
    ``multilines`` maps a pattern (as given) to its files' joiner or preset (``None``:
    plain lines), as ``encodings`` does; the others use ``multiline``.

    ``transforms`` (on each line, as ``follow()``'s) and ``transforms_by_pattern`` (as
    ``encodings``): ``FollowOptions``'s; each file gets a fresh copy of them.

    ``store``: a ``CheckpointStore`` or its path.  Each file resumes just after its last
    line handed out before the last save; saves are one transaction for all files, made
    every ``save_every`` lines or ``save_interval`` seconds (when the next line is asked
    for, or waited for), and at the end; ``save()`` forces one.  ``autosave=False``: only
    ``save()`` saves (a program that writes the lines out in batches saves what it wrote).  After a
    ``kill -9`` the lines handed out since the last save come again; none is lost.
    ``save(also=write)`` writes the program's rows in the save's transaction: exactly once.
    """
    options = FollowOptions(
        store=store,
        encoding=encoding,
        encodings=encodings,
        start=start,
        last_lines=last_lines,
        save_every=save_every,
        save_interval=save_interval,
        autosave=autosave,
        rescan_interval=rescan_interval,
        poll_interval=poll_interval,
        rotate_grace=rotate_grace,
        force_polling=force_polling,
        on_notice=on_notice,
        multiline=multiline,
        multilines=multilines,
        multiline_timeout=multiline_timeout,
        newline=newline,
        max_line_bytes=max_line_bytes,
        on_overlong=on_overlong,
        errors=errors,
        on_malformed=on_malformed,
        gap_at_start=gap_at_start,
        partial_after=partial_after,
        reading=reading,
        transforms=transforms,
        transforms_by_pattern=transforms_by_pattern,
    )
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    return ManyFollower(patterns, options)
