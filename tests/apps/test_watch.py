"""The follower's wake-up: the kernel says when a followed file may
have changed, polling stands in where it cannot, and no change is ever lost, not even by
a cancelled wait.  Every test runs on asyncio and on trio."""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from _helpers import append, fake_watchfiles, real_watch

from utf8stream.apps import _watch
from utf8stream.apps._watch import Watcher, filesystem_type

pytestmark = pytest.mark.anyio

#: Kernel tests poll so rarely that only the kernel can wake them in time.
NEVER = 10.0
#: Far under NEVER, and generous for a loaded two-core machine.
PROMPT = 2.0


def append_line(path: Path) -> None:
    append(path, b"one more line\n")


def create(path: Path) -> None:
    path.write_text("a new file\n")


def rename_over(path: Path) -> None:
    # logrotate's "create" leaves a new file at the name; an editor's save renames one in.
    replacement = path.with_name(path.name + ".new")
    replacement.write_text("the replacement\n")
    os.replace(replacement, path)


def rename_away(path: Path) -> None:
    path.rename(path.with_name(path.name + ".1"))


def delete(path: Path) -> None:
    path.unlink()


def truncate(path: Path) -> None:
    os.truncate(path, 0)


# Each change, and whether the followed file exists before it.
CHANGES: dict[str, tuple[Callable[[Path], None], bool]] = {
    "write": (append_line, True),
    "create": (create, False),
    "rename-over": (rename_over, True),
    "rename-away": (rename_away, True),
    "delete": (delete, True),
    "truncate": (truncate, True),
}


@pytest.fixture(params=["kernel", "polling"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def watcher(paths: list[Path], mode: str, **options: Any) -> Watcher:
    if mode == "kernel":
        options = {"poll_interval": NEVER, "rescan_interval": NEVER, **options}
    else:
        options = {"poll_interval": 0.05, "force_polling": True, **options}
    return Watcher(paths, **options)


async def timed_wait(w: Watcher, timeout: float = 5.0) -> tuple[set[str], float]:
    start = time.monotonic()
    changed = await w.wait(timeout)
    return changed, time.monotonic() - start


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_each_change_wakes_the_waiter_promptly(
    tmp_path: Path, mode: str, change: str
) -> None:
    act, exists = CHANGES[change]
    followed = tmp_path / "app.log"
    if exists:
        followed.write_text("first line\n")
    async with watcher([followed], mode) as w:
        assert w.mode == mode
        assert w.fallback_reason is None
        assert await w.wait(0) == set()
        act(followed)
        changed, elapsed = await timed_wait(w)
    assert changed == {str(followed)}
    assert elapsed < PROMPT


async def test_other_names_in_the_directory_are_not_reported(tmp_path: Path, mode: str) -> None:
    followed = tmp_path / "app.log"
    followed.write_text("first\n")
    async with watcher([followed], mode) as w:
        create(tmp_path / "other.log")
        append_line(tmp_path / "other.log")
        assert await w.wait(0.3) == set()
        append_line(followed)
        assert (await timed_wait(w))[0] == {str(followed)}


async def test_a_directory_given_reports_its_entries_as_spelled(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "logs").mkdir()
    monkeypatch.chdir(tmp_path)
    async with watcher([Path("logs")], mode) as w:
        create(tmp_path / "logs" / "new.log")
        changed, elapsed = await timed_wait(w)
    assert changed == {os.path.join("logs", "new.log")}
    assert elapsed < PROMPT


async def test_a_change_between_two_waits_is_reported_by_the_next(
    tmp_path: Path, mode: str
) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    async with watcher([first, second], mode) as w:
        create(first)
        assert (await timed_wait(w))[0] == {str(first)}
        create(second)
        append_line(first)
        await anyio.sleep(0.3)  # not waiting: the changes must be kept for the next wait
        assert await w.wait(0) == {str(first), str(second)}
        assert await w.wait(0.2) == set()


async def test_a_cancelled_wait_loses_nothing(tmp_path: Path, mode: str) -> None:
    """Files appear while waits are cancelled at random moments: all are reported."""
    rnd = random.Random(1913)
    names = [tmp_path / f"{n}.log" for n in range(12)]
    reported: set[str] = set()
    async with watcher(names, mode) as w:
        for name in names:
            create(name)
            with anyio.move_on_after(rnd.choice([0, 0.001, 0.01, 0.03, 0.06])):
                reported |= await w.wait(5)
        while len(reported) < len(names):
            changed = await w.wait(PROMPT)
            assert changed, f"never reported: {set(map(str, names)) - reported}"
            reported |= changed
    assert reported == {str(name) for name in names}


async def test_a_wait_cancelled_during_a_poll_keeps_the_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    followed = tmp_path / "app.log"
    async with watcher([followed], "polling") as w:
        take_snapshot = w._take_snapshot

        def slow_snapshot() -> Any:
            time.sleep(0.3)  # outlasts the wait that is cancelled
            return take_snapshot()

        monkeypatch.setattr(w, "_take_snapshot", slow_snapshot)
        create(followed)
        with anyio.move_on_after(0.1) as scope:
            await w.wait(5)
        assert scope.cancelled_caught
        monkeypatch.setattr(w, "_take_snapshot", take_snapshot)
        assert await w.wait(0) == {str(followed)}


async def test_a_followed_link_is_woken_by_its_target(tmp_path: Path, mode: str) -> None:
    (tmp_path / "links").mkdir()
    (tmp_path / "monday").mkdir()
    (tmp_path / "tuesday").mkdir()
    monday, tuesday = tmp_path / "monday" / "app.log", tmp_path / "tuesday" / "app.log"
    create(monday)
    create(tuesday)
    current = tmp_path / "links" / "current.log"
    current.symlink_to(monday)
    async with watcher([current], mode) as w:
        append_line(monday)
        changed, elapsed = await timed_wait(w)
        assert changed == {str(current)}
        assert elapsed < PROMPT
        # Pointed elsewhere the way a daily rotation does it: a new link renamed over.
        (tmp_path / "links" / "next").symlink_to(tuesday)
        os.replace(tmp_path / "links" / "next", current)
        assert (await timed_wait(w))[0] == {str(current)}
        append_line(monday)
        assert await w.wait(0.3) == set()
        append_line(tuesday)
        changed, elapsed = await timed_wait(w)
    assert changed == {str(current)}
    assert elapsed < PROMPT


async def test_the_rescan_finds_what_the_kernel_dropped(tmp_path: Path) -> None:
    followed = tmp_path / "app.log"
    followed.write_text("first\n")
    async with Watcher([followed], poll_interval=NEVER, rescan_interval=0.2) as w:
        assert w.mode == "kernel"
        w._note = lambda paths: None  # type: ignore[method-assign]  # events dropped
        append_line(followed)
        changed, elapsed = await timed_wait(w)
    assert changed == {str(followed)}
    assert elapsed < PROMPT


async def test_a_directory_removed_and_made_again_is_watched_again(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    followed = logs / "app.log"
    followed.write_text("first\n")
    async with Watcher([followed], poll_interval=0.05, rescan_interval=NEVER) as w:
        shutil.rmtree(logs)
        assert (await timed_wait(w))[0] == {str(followed)}
        assert w.mode == "polling"
        assert w.fallback_reason is not None
        assert "not an existing directory" in w.fallback_reason
        logs.mkdir()
        create(followed)
        assert (await timed_wait(w))[0] == {str(followed)}
        assert w.mode == "kernel"
        # Woken by the kernel again, not by polling (it would take NEVER now).
        append_line(followed)
        changed, elapsed = await timed_wait(w)
    assert changed == {str(followed)}
    assert elapsed < PROMPT


async def test_a_missing_directory_is_polled_until_it_appears(tmp_path: Path) -> None:
    followed = tmp_path / "later" / "app.log"
    async with Watcher([followed], poll_interval=0.05, rescan_interval=NEVER) as w:
        assert w.mode == "polling"
        (tmp_path / "later").mkdir()
        create(followed)
        assert (await timed_wait(w))[0] == {str(followed)}
        assert w.mode == "kernel"


async def test_without_watchfiles_it_polls_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_watchfiles(monkeypatch, None)
    followed = tmp_path / "app.log"
    async with Watcher([followed], poll_interval=0.05) as w:
        assert w.mode == "polling"
        assert w.fallback_reason is not None
        assert "watchfiles is not installed" in w.fallback_reason
        create(followed)
        assert (await timed_wait(w))[0] == {str(followed)}


async def test_on_a_network_file_system_it_polls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nfs = tmp_path / "nfs"
    nfs.mkdir()
    local = tmp_path / "local"
    local.mkdir()

    def fake_type(directory: str, mounts: str | None = None) -> str:
        return "nfs4" if directory == str(nfs) else "ext4"

    monkeypatch.setattr(_watch, "filesystem_type", fake_type)
    remote_log, local_log = nfs / "app.log", local / "app.log"
    async with Watcher([remote_log, local_log], poll_interval=0.05, rescan_interval=NEVER) as w:
        assert w.mode == "mixed"
        assert w.polled_directories == {str(nfs)}
        assert w.fallback_reason is not None
        assert "nfs4" in w.fallback_reason
        create(remote_log)
        assert (await timed_wait(w))[0] == {str(remote_log)}
        create(local_log)
        assert (await timed_wait(w))[0] == {str(local_log)}


def failing_to_start(*directories: str, **options: Any) -> Iterator[set[tuple[int, str]]]:
    """``watchfiles.watch`` where the kernel refuses the watches: it raises at its first
    step, before it asks its stop event anything."""
    raise OSError(28, "inotify watch limit reached")
    yield set()


async def test_a_notifier_that_does_not_start_falls_back_to_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_watchfiles(monkeypatch, failing_to_start)
    followed = tmp_path / "app.log"
    async with Watcher([followed], poll_interval=0.05) as w:
        assert w.mode == "polling"
        assert w.fallback_reason is not None
        assert "inotify watch limit reached" in w.fallback_reason
        create(followed)
        assert (await timed_wait(w))[0] == {str(followed)}


def other_signature(*directories: str) -> Iterator[set[tuple[int, str]]]:
    """A later watchfiles whose ``watch`` takes other arguments."""
    raise AssertionError("not reached: the watcher passes more arguments")


async def test_a_notifier_taking_other_arguments_falls_back_to_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_watchfiles(monkeypatch, other_signature)
    followed = tmp_path / "app.log"
    async with Watcher([followed], poll_interval=0.05) as w:
        assert w.mode == "polling"
        assert w.fallback_reason is not None
        assert w.fallback_reason.startswith("the kernel notifier did not start: ")
        assert "argument" in w.fallback_reason
        create(followed)
        assert (await timed_wait(w))[0] == {str(followed)}


def failing_while_watching(*directories: str, **options: Any) -> Iterator[set[tuple[int, str]]]:
    """Watching (it has asked its stop event), then broken."""
    options["stop_event"].is_set()
    raise RuntimeError("the notifier broke")
    yield set()


async def test_a_notifier_that_fails_falls_back_without_spinning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_watchfiles(monkeypatch, failing_while_watching)
    followed = tmp_path / "app.log"
    async with Watcher([followed], poll_interval=0.05, rescan_interval=NEVER) as w:
        assert await w.wait(0.2) == set()
        assert w.mode == "polling"
        assert w.fallback_reason == "the kernel notifier failed: the notifier broke"
        create(followed)
        assert (await timed_wait(w))[0] == {str(followed)}


REAL_WATCH = real_watch()


class RecordingNotifier:
    """A call of the real ``watchfiles.watch``: whether it still runs, or has ended (its
    notifier closed)."""

    made: ClassVar[list[RecordingNotifier]] = []

    def __init__(self) -> None:
        self.watching = 0
        self.closed = False
        self.made.append(self)


def recording_watch(*directories: str, **options: Any) -> Iterator[set[tuple[int, str]]]:
    assert REAL_WATCH is not None
    notifier = RecordingNotifier()
    notifier.watching += 1
    try:
        yield from REAL_WATCH(*directories, **options)
    finally:
        notifier.watching -= 1
        notifier.closed = True


async def test_a_cancelled_block_stops_the_notifier_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    RecordingNotifier.made.clear()
    fake_watchfiles(monkeypatch, recording_watch)
    start = time.monotonic()
    with anyio.move_on_after(0.2) as scope:
        async with Watcher([tmp_path / "app.log"], poll_interval=NEVER) as w:
            assert w.mode == "kernel"
            await w.wait(NEVER)
    assert scope.cancelled_caught
    assert time.monotonic() - start < PROMPT
    [notifier] = RecordingNotifier.made
    assert notifier.closed
    assert notifier.watching == 0


def test_the_watcher_uses_watchfiles_public_api_only() -> None:
    source = Path(_watch.__file__).read_text()
    assert "_rust_notify" not in source and "RustNotify" not in source
    if REAL_WATCH is not None:
        import watchfiles

        assert REAL_WATCH is watchfiles.watch


async def test_an_error_in_the_block_comes_out_as_itself(tmp_path: Path, mode: str) -> None:
    with pytest.raises(KeyError, match="from the block"):
        async with watcher([tmp_path / "app.log"], mode):
            raise KeyError("from the block")


async def test_wait_needs_the_context(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await Watcher([tmp_path / "app.log"]).wait(0)


def test_intervals_must_be_positive(tmp_path: Path) -> None:
    for options in ({"poll_interval": 0}, {"rescan_interval": -1.0}):
        with pytest.raises(ValueError, match="must be > 0"):
            Watcher([tmp_path], **options)


MOUNTS = """\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export /mnt/logs nfs4 rw 0 0
/dev/sdb1 /mnt/logs/local xfs rw 0 0
tmpfs /mnt/logs/local tmpfs rw 0 0
//host/share /srv/with\\040space cifs rw 0 0
sshfs#me@h: /home/me/remote fuse.sshfs rw 0 0
"""


@pytest.mark.parametrize(
    ("directory", "expected"),
    [
        ("/var/log", "ext4"),
        ("/mnt/logs", "nfs4"),
        ("/mnt/logs/app", "nfs4"),
        ("/mnt/logsx", "ext4"),  # a longer name is not inside the mount
        ("/mnt/logs/local/app", "tmpfs"),  # the last mount stacked on a point shows
        ("/srv/with space/app", "cifs"),
        ("/home/me/remote/x", "fuse.sshfs"),
    ],
)
def test_the_file_system_type_comes_from_the_longest_mount(directory: str, expected: str) -> None:
    assert filesystem_type(directory, MOUNTS) == expected


def test_which_file_systems_are_polled() -> None:
    assert _watch._is_network("nfs4")
    assert _watch._is_network("fuse.sshfs")
    assert not _watch._is_network("ext4")
    assert not _watch._is_network(None)


def test_this_machines_mounts_are_read(tmp_path: Path) -> None:
    found = filesystem_type(str(tmp_path))
    # Without /proc (not Linux) nothing is known, and the kernel is trusted.
    assert (found is not None) == os.path.exists("/proc/self/mounts")


@pytest.mark.soak  # timing-bound: it counts the polls of real intervals
async def test_polling_looks_once_per_interval_and_surveys_only_when_it_must(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What 1,000 quiet polled files cost is what a poll does: one snapshot per
    ``poll_interval``, not one per wait (a caller's ``wait(0)`` then ``wait(t)`` takes
    one), and no survey of links and file systems at each poll where no kernel
    watch can take over (``force_polling``): only every ``rescan_interval``."""
    counts = {"snapshot": 0, "survey": 0}
    take_snapshot, survey = Watcher._take_snapshot, Watcher._survey

    def counted_snapshot(self: Watcher) -> Any:
        counts["snapshot"] += 1
        return take_snapshot(self)

    def counted_survey(self: Watcher, kernel_allowed: bool) -> Any:
        counts["survey"] += 1
        return survey(self, kernel_allowed)

    monkeypatch.setattr(Watcher, "_take_snapshot", counted_snapshot)
    monkeypatch.setattr(Watcher, "_survey", counted_survey)
    followed = tmp_path / "app.log"
    create(followed)
    interval = 0.1
    async with Watcher(
        [followed], poll_interval=interval, rescan_interval=NEVER, force_polling=True
    ) as w:
        assert counts == {"snapshot": 1, "survey": 1}
        start = anyio.current_time()
        rounds = 0
        while anyio.current_time() - start < 1.0:
            assert await w.wait(0) == set()
            assert await w.wait(interval) == set()
            rounds += 1
        elapsed = anyio.current_time() - start
        assert counts["survey"] == 1
        # One look per interval (and one at the start), whatever the number of waits.
        assert counts["snapshot"] - 1 <= elapsed / interval + 2 < 2 * rounds
        append_line(followed)
        assert (await timed_wait(w))[0] == {str(followed)}
