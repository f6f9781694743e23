"""Wake a follower when a followed file may have changed: kernel notification, else polling.

A follower at the end of its files waits for them to change.  Polling every quarter of a
second costs a stat per file per poll (1,000 idle files: 4,000 stats a second) and widens
every window in which a rotation can race a read.  :class:`Watcher` waits on the kernel
instead (inotify, FSEvents, kqueue, ReadDirectoryChangesW, all through ``watchfiles``,
whose notifier runs in a thread of its own, so asyncio and trio alike), and falls back to
polling per directory where no notification exists: ``watchfiles`` not installed, a
network file system (the kernel there sees only this machine's changes), a directory that
does not exist (yet), ``force_polling``, or a notifier that fails to start.

The *directories* are watched, not the files: a rotation renames the followed name away
and creates it again, which only the directory sees.  Changes are reduced to the names of
interest: a file given by name, or any entry of a directory given as a directory.

Nothing is missed.  Kernel changes are collected by the notifier's thread between waits
(it hands them to the event loop through its token) and handed out by the next
:meth:`Watcher.wait`; no task group is held, so a watcher may be entered, waited on and
closed by different tasks, and kept open across a follower's steps (``retarget`` changes
the files without a new notifier while their directories stay).  Polling compares a
snapshot of stat results
that only a completed wait replaces, so a cancelled wait loses nothing.  A kernel can
still drop events (a full inotify queue, a watched directory deleted and made again), so
every ``rescan_interval`` a kernel-watched directory is also compared with its snapshot,
and a directory replaced under the notifier gets a new one.

The notifier is ``watchfiles.watch`` (its public API: non-recursive, no filter, no
timeout, stopped by ``stop_event``), run in a thread of its own.  Two things the follower
needs that API does not say, and how they are had from what it documents:

* *when the kernel watches are in place*: the snapshot must be taken after that, or a
  change between the two would be in neither.  ``stop_event`` may be any object with an
  ``is_set()`` method, which the notifier asks at every ``step`` once it is watching;
  the first ask tells that it is (``_StopEvent``), and entering waits for it.
* *a notifier that cannot start* (inotify's watch limit, a directory gone meanwhile):
  the generator raises at its first step, in the notifier's thread, not where it was
  made; the thread reports it, and the directories are polled until the next rescan.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

if TYPE_CHECKING:
    from anyio.lowlevel import EventLoopToken

__all__ = ["NETWORK_FILESYSTEMS", "Watcher", "filesystem_type"]

#: Where the kernel cannot say a file changed, how often the watcher looks (seconds): its
#: own default (the followers pass ``FollowOptions.poll_interval``).
DEFAULT_POLL_INTERVAL = 0.25

#: File systems whose changes are made on other machines, unseen by this kernel's
#: notifications (FUSE included: sshfs, s3fs, rclone and their like are remote).
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "9p", "ceph", "glusterfs"}
    | {"lustre", "gpfs", "ocfs2", "gfs2", "virtiofs", "fuse", "fuseblk"}
)

#: Once the notifier sees a change it waits this long for more (a burst of writes is one
#: wake-up) but never longer than ``_DEBOUNCE_MS`` in all: a writer that never pauses
#: still wakes the follower every ``_DEBOUNCE_MS``.
_STEP_MS = 20
_DEBOUNCE_MS = 50
#: How long entering waits for a notifier to say it is watching (it says so within a
#: step; this bounds a notifier that never does).
_START_TIMEOUT = 5.0

#: What a poll compares: device, inode, size, modification and change times.
_Signature = tuple[int, int, int, int, int]
_Snapshot = dict[str, "_Signature | None"]


def _signature(st: os.stat_result) -> _Signature:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _unescape_mount_field(field: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as three octal digits.
    parts = field.split("\\")
    out = [parts[0]]
    for part in parts[1:]:
        if len(part) >= 3 and all(c in "01234567" for c in part[:3]):
            out.append(chr(int(part[:3], 8)) + part[3:])
        else:
            out.append("\\" + part)
    return "".join(out)


def filesystem_type(directory: str, mounts: str | None = None) -> str | None:
    """The type of the file system ``directory`` is on, from ``/proc/self/mounts``.

    None where that file does not exist (not Linux) or names no mount above it.
    ``mounts`` stands for the file's text (for tests).
    """
    if mounts is None:
        try:
            with open("/proc/self/mounts", encoding="utf-8", errors="surrogateescape") as f:
                mounts = f.read()
        except OSError:
            return None
    target = os.path.realpath(directory)
    best: tuple[int, str] | None = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = _unescape_mount_field(fields[1])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        # The last of several mounts on one point is the visible one: >= keeps it.
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), fields[2])
    return None if best is None else best[1]


def _is_network(fs_type: str | None) -> bool:
    return fs_type is not None and (fs_type in NETWORK_FILESYSTEMS or fs_type.startswith("fuse."))


#: ``watchfiles.watch``'s signature: the directories, then keywords.
WatchFunction = Callable[..., Iterator[set[tuple[Any, str]]]]


def _watch_function() -> WatchFunction | None:
    """``watchfiles.watch``, or None where the ``utf8stream[watch]`` extra is missing."""
    try:
        module = importlib.import_module("watchfiles")
    except ImportError:
        return None
    watch: WatchFunction = module.watch
    return watch


def _directory_identity(directory: str) -> tuple[int, int] | None:
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if os.path.isdir(directory) else None


class _StopEvent:
    """The notifier's ``stop_event``, which it asks ``is_set()`` at every step once its
    kernel watches are in place: the first ask sets ``watching``."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.watching = threading.Event()
        self._told = False

    def is_set(self) -> bool:
        if not self._told:
            self._told = True
            self.watching.set()
        return self.stop.is_set()

    def set(self) -> None:
        self.stop.set()


class _Notifier:
    """One running kernel notifier over some directories, stopped by its own event."""

    def __init__(self, watch: WatchFunction, directories: dict[str, tuple[int, int]]) -> None:
        self.watch = watch
        self.directories = directories
        self.stop = _StopEvent()
        # Its own thread, not one of the pool the follower's reads share, which it would
        # hold for as long as it runs.
        self.thread: threading.Thread | None = None


@dataclass(frozen=True)
class _Survey:
    links: dict[str, str]
    observed: frozenset[str]
    #: The directories the kernel can watch, with their device and inode.
    kernel: dict[str, tuple[int, int]]
    #: Why the others cannot be.
    reason: str | None


class Watcher:
    """Waits until one of some files (or the entries of some directories) may have changed.

    ``paths``: files to follow (their directory is watched, for creation and renames
    too) and directories whose every entry is of interest (given as existing
    directories).  ``poll_interval``: how often polled directories are compared.
    ``rescan_interval``: how often kernel-watched ones are compared too, in case the
    kernel dropped an event.  ``force_polling``: never use kernel notification.

    Use as an async context manager (or ``__aenter__`` and ``__aexit__`` from any tasks:
    it holds no task group); ``retarget`` changes the paths.
    """

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        rescan_interval: float = 5.0,
        force_polling: bool = False,
    ) -> None:
        if not poll_interval > 0 or not rescan_interval > 0:
            raise ValueError("poll_interval and rescan_interval must be > 0")
        self._poll_interval = poll_interval
        self._rescan_interval = rescan_interval
        self._force_polling = force_polling
        #: Directories given as such: absolute path -> the caller's spelling.
        self._directories: dict[str, str] = {}
        #: Files given by name: absolute path -> the caller's spellings.
        self._files: dict[str, list[str]] = {}
        #: The directories of the files and the directories given: always observed.
        self._given: frozenset[str] = frozenset()
        #: Those, and the directories of the files that followed symbolic links lead to.
        self._observed = self._given
        #: A followed symbolic link -> the file it leads to, and back (to the spellings).
        self._links: dict[str, str] = {}
        self._targets: dict[str, list[str]] = {}
        self._fs_types: dict[tuple[int, int], str | None] = {}
        self._notifier: _Notifier | None = None
        self._polled = self._observed
        self._fallback_reason: str | None = None
        self._snapshot: _Snapshot = {}
        self._pending: set[str] = set()
        self._woken: anyio.Event | None = None
        self._replan_due = False
        self._kernel_retry_at = 0.0
        self._last_scan = 0.0
        self._last_survey = 0.0
        #: The event loop entered in, for the notifier threads to hand changes to.
        self._token: EventLoopToken | None = None
        #: Notifier threads started and not joined yet (stopped ones finish in a step).
        self._threads: list[threading.Thread] = []
        self._set_paths(paths)

    def _set_paths(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        self._directories = {}
        self._files = {}
        for given in paths:
            spelling = os.fspath(given)
            absolute = os.path.abspath(spelling)
            if os.path.isdir(absolute):
                self._directories[absolute] = spelling
            else:
                self._files.setdefault(absolute, []).append(spelling)
        self._given = frozenset(self._directories) | {os.path.dirname(f) for f in self._files}
        self._observed = self._given  # and the links' directories, from the next survey
        self.paths = tuple(os.fspath(p) for p in self._spelled())

    def _spelled(self) -> Iterator[str]:
        yield from self._directories.values()
        for spellings in self._files.values():
            yield from spellings

    def retarget(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        """Watch ``paths`` instead, from the next wait on: the notifier stays while their
        directories are the ones watched (a change to a name not watched before is
        reported by the next wait, which compares the snapshot)."""
        self._set_paths(paths)
        self._replan_due = True

    # -- what callers see -------------------------------------------------------------

    @property
    def mode(self) -> str:
        """``"kernel"``, ``"polling"``, or ``"mixed"`` (some directories polled)."""
        if not self._polled:
            return "kernel"
        return "polling" if self._polled == self._observed else "mixed"

    @property
    def polled_directories(self) -> frozenset[str]:
        """The observed directories compared by polling, as absolute paths."""
        return self._polled

    @property
    def fallback_reason(self) -> str | None:
        """Why some directory is polled, when that is not ``force_polling``'s doing."""
        return self._fallback_reason

    async def __aenter__(self) -> Watcher:
        self._token = anyio.lowlevel.current_token()
        self._woken = anyio.Event()
        try:
            # The notifier first, the snapshot second: a change between the two is in
            # the notifier's queue, so none falls between them.
            self._apply(await anyio.to_thread.run_sync(self._survey, self._kernel_allowed()))
            await self._until_watching()
            self._snapshot = await anyio.to_thread.run_sync(self._take_snapshot)
            self._last_scan = self._last_survey = anyio.current_time()
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._close()

    async def _close(self) -> None:
        """Stop the notifier and wait for its thread (a step: it looks at its stop event
        every ``_STEP_MS``), also when cancelled: it closes the notifier as it ends."""
        self._stop_notifier()
        self._token = None
        with anyio.CancelScope(shield=True):
            await self._join_stopped()

    async def _until_watching(self) -> None:
        """Return once the notifier just started watches (or has failed to start)."""
        notifier = self._notifier
        if notifier is not None and not notifier.stop.watching.is_set():
            await anyio.to_thread.run_sync(
                notifier.stop.watching.wait, _START_TIMEOUT, abandon_on_cancel=True
            )

    async def _join_stopped(self) -> None:
        for thread in list(self._threads):
            if self._notifier is not None and thread is self._notifier.thread:
                continue
            await anyio.to_thread.run_sync(thread.join)
            self._threads.remove(thread)

    async def wait(self, timeout: float) -> set[str]:
        """The paths that may have changed since the last wait; empty after ``timeout``.

        A path is spelled as given (a directory's entries as the directory was given,
        joined with the entry's name).  A change made between two waits is reported by
        the next; what a wait cancelled before it returns would have reported comes with
        the next one.
        """
        if self._token is None:
            raise RuntimeError("Watcher.wait() outside its 'async with' block")
        deadline = anyio.current_time() + timeout
        # A change between two waits in a polled directory is only known by looking, but
        # not again right after a look (a caller's wait(0) then wait(timeout) would poll
        # twice a round: 1,000 quiet files paid for every poll twice).
        scan_now = (
            bool(self._polled)
            and anyio.current_time() - self._last_scan >= self._poll_interval / 10
        )
        while True:
            if scan_now or self._replan_due or anyio.current_time() >= self._next_scan():
                await self._scan()
                scan_now = False
            if self._pending:
                return self._take()
            now = anyio.current_time()
            if now >= deadline:
                await anyio.lowlevel.checkpoint()
                return set()
            assert self._woken is not None
            with anyio.move_on_after(min(deadline, self._next_scan()) - now):
                await self._woken.wait()

    # -- kernel notification ----------------------------------------------------------

    def _kernel_allowed(self) -> bool:
        return not self._force_polling and anyio.current_time() >= self._kernel_retry_at

    def _survey(self, kernel_allowed: bool) -> _Survey:
        """Where the followed links lead, and which directories the kernel can watch.

        Runs in a worker thread: a stat on a hung network mount must not stop the loop.
        """
        links: dict[str, str] = {}
        for path in self._files:
            if os.path.islink(path):
                links[path] = os.path.realpath(path)
        observed = self._given | {os.path.dirname(target) for target in links.values()}
        if not kernel_allowed:
            return _Survey(links, observed, {}, self._fallback_reason)
        reasons: list[str] = []
        chosen: dict[str, tuple[int, int]] = {}
        for directory in sorted(observed):
            identity = _directory_identity(directory)
            if identity is None:
                reasons.append(f"{directory}: not an existing directory")
                continue
            if identity not in self._fs_types:
                self._fs_types[identity] = filesystem_type(directory)
            fs_type = self._fs_types[identity]
            if _is_network(fs_type):
                reasons.append(f"{directory}: on {fs_type}, a network file system")
                continue
            chosen[directory] = identity
        return _Survey(links, observed, chosen, "; ".join(reasons) or None)

    def _apply(self, survey: _Survey) -> None:
        """Put each observed directory under the kernel or under polling, as it can be."""
        self._replan_due = False
        self._links = survey.links
        self._targets = {}
        for link, target in survey.links.items():
            self._targets.setdefault(target, []).extend(self._files[link])
        self._observed = survey.observed
        wanted, reason = survey.kernel, survey.reason
        current = self._notifier
        if wanted and current is not None and current.directories == wanted:
            self._set_polled(wanted, reason)
            return
        self._stop_notifier()
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        if wanted:
            watch = _watch_function()
            if watch is None:
                reason = "watchfiles is not installed (the utf8stream[watch] extra)"
                wanted = {}
            else:
                notifier = _Notifier(watch, wanted)
                notifier.thread = threading.Thread(
                    target=self._collect,
                    args=(notifier, self._token),
                    name="utf8stream-watch",
                    daemon=True,
                )
                self._notifier = notifier
                self._threads.append(notifier.thread)
                notifier.thread.start()
        self._set_polled(wanted, reason)

    def _set_polled(self, kernel: dict[str, tuple[int, int]], reason: str | None) -> None:
        self._polled = frozenset(d for d in self._observed if d not in kernel)
        self._fallback_reason = reason if self._polled else None

    def _stop_notifier(self) -> None:
        if self._notifier is not None:
            self._notifier.stop.set()
            self._notifier = None

    def _collect(self, notifier: _Notifier, token: EventLoopToken | None) -> None:
        """The notifier's thread: hand the kernel's changes to the event loop until the
        notifier is stopped (or the loop is gone); the generator closes the notifier."""
        stop = notifier.stop
        changes: Iterator[set[tuple[Any, str]]] | None = None
        try:
            try:
                changes = notifier.watch(
                    *sorted(notifier.directories),
                    watch_filter=None,
                    debounce=_DEBOUNCE_MS,
                    step=_STEP_MS,
                    stop_event=stop,
                    rust_timeout=0,
                    debug=False,
                    raise_interrupt=False,
                    force_polling=False,
                    recursive=False,
                    ignore_permission_denied=False,
                )
                for found in changes:
                    if found:
                        paths = [path for _, path in found]
                        anyio.from_thread.run_sync(self._note, paths, token=token)
            except Exception as exc:  # inotify's limit, a directory gone, a notifier error
                started = stop.watching.is_set()
                anyio.from_thread.run_sync(self._failed, notifier, exc, started, token=token)
        except Exception:  # the event loop has ended: nobody waits any more
            stop.set()
        finally:
            stop.watching.set()  # (failed: entering waits no longer)
            if changes is not None:
                changes.close()  # type: ignore[attr-defined]

    def _failed(self, notifier: _Notifier, exc: Exception, started: bool) -> None:
        if self._notifier is notifier:
            self._notifier = None
            what = "failed" if started else "did not start"
            self._fallback_reason = f"the kernel notifier {what}: {exc}"
            self._set_polled({}, self._fallback_reason)
            # Polled until the next rescan: a notifier failing at once, again and
            # again, must not spin.
            self._kernel_retry_at = anyio.current_time() + self._rescan_interval
        self._replan_due = True
        if self._woken is not None:
            self._woken.set()

    def _note(self, paths: Iterable[str]) -> None:
        noted = False
        for path in paths:
            if path in self._observed or path in self._links:
                # A directory itself removed or replaced, or a followed link pointed
                # elsewhere: a new survey (and perhaps notifier) is due.
                self._replan_due = True
                noted = True
            spellings = list(self._spellings(path))
            self._pending.update(spellings)
            noted = noted or bool(spellings)
        if noted and self._woken is not None:
            self._woken.set()

    # -- polling ----------------------------------------------------------------------

    def _next_scan(self) -> float:
        interval = self._poll_interval if self._polled else self._rescan_interval
        return self._last_scan + interval

    def _spellings(self, path: str) -> Iterator[str]:
        yield from self._files.get(path, ())
        yield from self._targets.get(path, ())
        if path in self._directories:
            yield self._directories[path]
        parent, name = os.path.split(path)
        if parent in self._directories:
            yield os.path.join(self._directories[parent], name)

    def _take_snapshot(self) -> _Snapshot:
        # Once per poll over every file of the watched directories (1,000 quiet files
        # every 0.25 s): one stat per file.
        snapshot: _Snapshot = {}
        for directory in self._directories:
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        try:
                            snapshot[entry.path] = _signature(entry.stat())
                        except OSError:  # removed since listed, or a dangling link
                            snapshot[entry.path] = None
            except OSError:
                snapshot[directory] = None
        for path in self._files:
            # A followed file in a watched directory was stat'ed with it (followed, as
            # os.stat does), under the same spelling; any other is stat'ed here.
            if path not in snapshot:
                try:
                    snapshot[path] = _signature(os.stat(path))
                except OSError:
                    snapshot[path] = None
        return snapshot

    async def _scan(self) -> None:
        """Survey (when the paths changed, or every ``rescan_interval``), then compare
        everything with the snapshot; differences are pending.

        Where the kernel could take over a polled directory (one missing until now), every
        poll surveys.  Where it cannot (``force_polling``, no watchfiles), a poll between
        two surveys needs none: the snapshot stats every followed name through its links,
        so a link that now leads elsewhere shows as a change of that name.  That saves
        about a third of what polling 1,000 quiet files costs.
        """
        now = anyio.current_time()
        kernel_allowed = self._kernel_allowed()
        if (
            self._replan_due
            or now >= self._last_survey + self._rescan_interval
            or (kernel_allowed and self._polled and _watch_function() is not None)
        ):
            survey = await anyio.to_thread.run_sync(
                self._survey, kernel_allowed, abandon_on_cancel=True
            )
            self._apply(survey)
            self._last_survey = now
            await self._until_watching()  # a notifier just started: then the snapshot
        # Abandoned on cancellation (a stat on a hung network mount must not hold up a
        # cancel): its result is then dropped and the old snapshot stays, so the next scan
        # finds the same differences.  Nothing awaits from here on.
        snapshot = await anyio.to_thread.run_sync(self._take_snapshot, abandon_on_cancel=True)
        old = self._snapshot
        if snapshot != old:  # nothing changed, the usual case: one comparison, in C
            for path in old.keys() | snapshot.keys():
                if old.get(path, ()) != snapshot.get(path, ()):
                    self._pending.update(self._spellings(path))
        self._snapshot = snapshot
        self._last_scan = anyio.current_time()

    def _take(self) -> set[str]:
        taken, self._pending = self._pending, set()
        self._woken = anyio.Event()
        return taken
