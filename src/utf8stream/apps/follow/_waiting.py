"""How a follower waits at the end of the data: the strategies its driver is given.

``PathWatch`` (one file, ``follow()``): the follower's own ``Watcher`` of the path (and of
the rotated file it drains), armed from the first wait to ``aclose``.  ``SharedWatch``
(each file of ``follow_many``): it does not wait; it looks once, and if nothing changed
it returns a ``Rest`` that the many-file follower waits out on the one watcher of all
its files.  Either looks at the file and the path after the watcher is armed, so a
change made between the read that found nothing and the wait is not missed.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.to_thread

from .._watch import Watcher
from ._reading import _Open

if TYPE_CHECKING:
    from ._driver import _Reader
    from ._records import Line

#: How often a follower woken by the kernel looks whether ``stop_at_end()`` was called.
_FLAG_CHECK_INTERVAL = 0.25


@dataclass(frozen=True)
class Rest:
    """The follower has nothing to hand out until its file changes, or ``timeout``
    seconds pass (None: no limit); ``gone``: the path names nothing; ``due``: the
    deadline its caller gave has come (a multi-line event to hand out)."""

    timeout: float | None
    gone: bool = False
    due: bool = False


class Waiting(Protocol):
    async def wait(
        self, path: str, f: _Open | None, timeout: float | None, watches_path: bool
    ) -> Rest | None:
        """Wait for a change to ``f``, ``path`` or its directory (``timeout`` at most);
        or return a ``Rest`` for the caller to wait out."""

    def stop(self) -> None:
        """``stop_at_end()`` was called: a wait ends soon."""

    def bind(
        self,
        reader: _Reader,
        step: Callable[[], Awaitable[Line | Rest]],
        hand_out_held: Callable[[], bool],
    ) -> None:
        """The follower that waits so, its driver and its steps (for its caller)."""

    async def aclose(self) -> None: ...


def look_again(path: str, f: _Open, watches_path: bool) -> str:
    """``"changed"`` if ``f`` or the path differs from what the last look saw,
    ``"path gone"`` if the path names nothing, else ``"same"``."""
    if os.fstat(f.fd).st_size != f.read_pos:
        return "changed"
    if not watches_path:
        return "same"
    try:
        st = os.stat(path)
    except OSError:
        return "path gone"
    return "same" if f.identity.same_inode(st) else "changed"


class PathWatch:
    """One follower's waits: its own watcher of the path and the file it reads.

    The kernel wakes the follower (``Watcher``); where it cannot, the directory is
    polled every ``poll_interval``.  A wait returns after its timeout too, and soon
    after ``stop_at_end()``.
    """

    def __init__(self, poll_interval: float) -> None:
        self._poll_interval = poll_interval
        self._watcher: Watcher | None = None
        self._stopping = False
        self._closed = False

    def stop(self) -> None:
        self._stopping = True

    def bind(
        self,
        reader: _Reader,
        step: Callable[[], Awaitable[Line | Rest]],
        hand_out_held: Callable[[], bool],
    ) -> None:
        pass  # the follower is iterated itself

    async def wait(
        self, path: str, f: _Open | None, timeout: float | None, watches_path: bool
    ) -> Rest | None:
        if f is None:
            # Nothing open to watch (the path cannot be opened): try again later.
            await anyio.sleep(self._poll_interval if timeout is None else timeout)
            return None
        paths = tuple(dict.fromkeys((path, f.path)))
        watcher = self._watcher
        if watcher is None:
            watcher = Watcher(paths, poll_interval=self._poll_interval)
            await watcher.__aenter__()
            self._watcher = watcher
        elif watcher.paths != paths:
            watcher.retarget(paths)
        deadline = None if timeout is None else anyio.current_time() + timeout
        look = await anyio.to_thread.run_sync(look_again, path, f, watches_path)
        if look == "changed":
            return None
        if look == "path gone":
            # The writer may go on writing to our file under a name nobody
            # watches: look again after ``poll_interval``, as a poller would.
            gone_deadline = anyio.current_time() + self._poll_interval
            deadline = gone_deadline if deadline is None else min(deadline, gone_deadline)
        while not self._stopping and not self._closed:
            # Woken by the kernel, the follower still looks at ``stop_at_end()`` often.
            step = self._poll_interval
            if watcher.mode == "kernel":
                step = min(step, _FLAG_CHECK_INTERVAL)
            if deadline is not None:
                step = min(step, deadline - anyio.current_time())
                if step <= 0:
                    return None
            if await watcher.wait(step):
                return None
        return None

    async def aclose(self) -> None:
        self._closed = True
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            await watcher.__aexit__(None, None, None)


class SharedWatch:
    """A follower of ``follow_many``: it never waits, its ``ManyFollower`` waits for all
    of them on one watcher (open all along, so a change after this look is reported by
    its next wait).

    The ``ManyFollower`` drives the follower through it: ``step`` (the next line or a
    ``Rest``), ``reader`` (the file read, its machine), ``hand_out_held``."""

    def __init__(self, poll_interval: float) -> None:
        self._poll_interval = poll_interval
        self.reader: _Reader | None = None
        self._step: Callable[[], Awaitable[Line | Rest]] | None = None
        self._hand_out_held: Callable[[], bool] | None = None

    def stop(self) -> None:
        pass  # nothing waits here

    def bind(
        self,
        reader: _Reader,
        step: Callable[[], Awaitable[Line | Rest]],
        hand_out_held: Callable[[], bool],
    ) -> None:
        self.reader, self._step, self._hand_out_held = reader, step, hand_out_held

    async def step(self) -> Line | Rest:
        """The follower's next line, or the ``Rest`` where it would wait."""
        assert self._step is not None
        return await self._step()

    def hand_out_held(self) -> bool:
        """Queue a multi-line event held (its file is gone); whether events wait."""
        assert self._hand_out_held is not None
        return self._hand_out_held()

    async def wait(
        self, path: str, f: _Open | None, timeout: float | None, watches_path: bool
    ) -> Rest | None:
        if f is None:
            return Rest(self._poll_interval if timeout is None else timeout)
        look = await anyio.to_thread.run_sync(look_again, path, f, watches_path)
        if look == "changed":
            return None
        if look == "path gone":
            # The writer may still append to the file under no watched name.
            poll = self._poll_interval
            return Rest(poll if timeout is None else min(timeout, poll), gone=True)
        return Rest(timeout)

    async def aclose(self) -> None:
        pass
