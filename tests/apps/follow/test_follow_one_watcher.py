"""follow() keeps one watcher for its life: waits neither make nor enter watchers.

Entering a watcher (a kernel notifier and its thread, a snapshot) at every wait would cost
that much per wait: the first wait starts one notifier (one call of ``watchfiles.watch``,
which the test extra installs), a rotation re-targets it (the directory stays watched by
the same notifier) and ``aclose`` closes it.
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

pytestmark = [pytest.mark.anyio]

REAL_WATCH = real_watch()


async def test_waits_share_one_watcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notifiers: list[Any] = []

    class CountingNotifier:
        closed = False

    def counting_watch(*directories: str, **options: Any) -> Iterator[Any]:
        """``watchfiles.watch``, each call (a notifier) counted, and its end seen."""
        notifier = CountingNotifier()
        notifiers.append(notifier)
        try:
            yield from REAL_WATCH(*directories, **options)
        finally:
            notifier.closed = True

    assert REAL_WATCH is not None, "the test extra installs watchfiles"
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
    [notifier] = notifiers  # one notifier: the directory stayed under it
    assert notifier.closed  # by aclose
