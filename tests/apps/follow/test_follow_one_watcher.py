"""follow() keeps one Watcher for its life: waits neither make nor enter watchers.

Entering a watcher (a kernel notifier and its thread, a snapshot) at every wait would cost
that much per wait: the first wait enters one, a rotation re-targets it (the directory
stays watched by the same notifier) and ``aclose`` closes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _helpers import append, fake_watchfiles, real_watch

from utf8stream import follow
from utf8stream.apps._watch import Watcher
from utf8stream.apps.follow import _waiting

pytestmark = [pytest.mark.anyio]

REAL_WATCH = real_watch()


async def test_waits_share_one_watcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Watcher] = []
    entered: list[Watcher] = []
    notifiers: list[Any] = []

    class CountingWatcher(Watcher):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(self)
            super().__init__(*args, **kwargs)

        async def __aenter__(self) -> Watcher:
            entered.append(self)
            return await super().__aenter__()

    class CountingNotifier:
        closed = False

    def counting_watch(*directories: str, **options: Any) -> Iterator[Any]:
        """``watchfiles.watch``, each call (a notifier) counted, and its end seen."""
        assert REAL_WATCH is not None
        notifier = CountingNotifier()
        notifiers.append(notifier)
        try:
            yield from REAL_WATCH(*directories, **options)
        finally:
            notifier.closed = True

    # The one follower's watcher is made where it waits (``PathWatch``): counted there.
    monkeypatch.setattr(_waiting, "Watcher", CountingWatcher)
    if REAL_WATCH is not None:
        fake_watchfiles(monkeypatch, counting_watch)
    log = tmp_path / "app.log"
    log.write_bytes(b"0\n")
    async with follow(log, start="beginning", poll_interval=0.01, rotate_grace=0.05) as lines:
        assert (await lines.__anext__()).text == "0"
        with anyio.fail_after(20):
            for i in range(1, 11):
                async with anyio.create_task_group() as group:

                    async def write(i: int = i) -> None:
                        await anyio.sleep(0.02)  # the follower is waiting by then
                        append(log, b"%d\n" % i)

                    group.start_soon(write)
                    assert (await lines.__anext__()).text == str(i)
            # Rotated: the old file is waited on for its grace, then the new one.
            os.rename(log, tmp_path / "app.log.1")
            log.write_bytes(b"new\n")
            assert (await lines.__anext__()).text == "new"
    assert len(made) == 1
    assert len(entered) == 1
    if REAL_WATCH is not None:
        [notifier] = notifiers  # the directory stayed under the same notifier
        assert notifier.closed  # by aclose
