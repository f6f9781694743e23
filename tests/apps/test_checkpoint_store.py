"""The checkpoint store of many followed files: SQLite, transactional,
no loss and no half batch whatever instant a ``kill -9`` hits, and one clear error for a
file that is not a usable store."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from _helpers import examples, take_named
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream import CheckpointError, FollowCheckpoint, follow_many
from utf8stream.apps.checkpoints import (
    STORE_APPLICATION_ID,
    STORE_SCHEMA_VERSION,
    CheckpointStore,
)
from utf8stream.follower import FileIdentity, ManyFollower

DIGEST = "ab" * 32


def checkpoint(offset: int, path: str = "/var/log/app.log", inode: int = 7) -> FollowCheckpoint:
    return FollowCheckpoint(path, FileIdentity(2049, inode, 11, DIGEST), offset)


def poison(db: Path) -> None:
    """A trigger in the store ``db`` that makes SQLite itself fail on saving the key
    ``poison``, inside the transaction."""
    connection = sqlite3.connect(db)
    connection.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON checkpoints"
        " WHEN NEW.key = CAST('poison' AS BLOB) BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
    )
    connection.commit()
    connection.close()


def error_of(path: Path) -> str:
    with pytest.raises(CheckpointError) as caught:
        CheckpointStore(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert "\n" not in message
    return message


def test_round_trip_across_reopen(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    odd_name = os.fsdecode(b"/var/log/caf\xe9.log")  # not UTF-8: a lone surrogate
    saved = {
        "/var/log/a.log": checkpoint(10, "/var/log/a.log", 1),
        odd_name: checkpoint(20, odd_name, 2),
    }
    with CheckpointStore(db) as store:
        assert store.load_all() == {}
        assert store.load("/var/log/a.log") is None
        store.save(saved)
        assert store.load_all() == saved
    with CheckpointStore(db) as store:
        assert store.load_all() == saved
        assert store.load(odd_name) == saved[odd_name]
        store.save({"/var/log/a.log": checkpoint(99, "/var/log/a.log", 1)})
        store.forget(odd_name)
        store.forget("/never/saved")
    with CheckpointStore(str(db)) as store:
        assert store.load_all() == {"/var/log/a.log": checkpoint(99, "/var/log/a.log", 1)}


def test_the_file_is_marked_as_ours_and_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    CheckpointStore(db).close()
    connection = sqlite3.connect(db)
    try:
        assert connection.execute("PRAGMA application_id").fetchone() == (STORE_APPLICATION_ID,)
        assert connection.execute("PRAGMA user_version").fetchone() == (STORE_SCHEMA_VERSION,)
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        connection.close()


def test_an_empty_file_becomes_a_store(tmp_path: Path) -> None:
    db = tmp_path / "made-by-mktemp"
    db.touch()
    with CheckpointStore(db) as store:
        store.save({"k": checkpoint(1)})
    with CheckpointStore(db) as store:
        assert store.load("k") == checkpoint(1)


def test_keys_saved_and_forgotten_together_are_refused(tmp_path: Path) -> None:
    with CheckpointStore(tmp_path / "s.db") as store:
        with pytest.raises(ValueError, match="both saved and forgotten"):
            store.save({"k": checkpoint(1)}, forget=["k"])
        with pytest.raises(ValueError, match="non-empty string"):
            store.save({"": checkpoint(1)})
        with pytest.raises(ValueError, match="at most"):
            store.load("x" * 70_000)
        with pytest.raises(TypeError, match="not one key"):
            store.save({}, forget="abc")
        assert store.load_all() == {}


def test_a_checkpoint_the_parser_would_refuse_is_not_saved(tmp_path: Path) -> None:
    with CheckpointStore(tmp_path / "s.db") as store:
        store.save({"a": checkpoint(1)})
        insane = FollowCheckpoint("/var/log/b.log", FileIdentity(2049, 8, 11, DIGEST), -5)
        with pytest.raises(CheckpointError, match=r"'b'.*offset"):
            store.save({"a": checkpoint(2), "b": insane})
        assert store.load_all() == {"a": checkpoint(1)}


def test_a_failure_inside_the_transaction_leaves_the_previous_state(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({"a": checkpoint(1), "b": checkpoint(1), "gone": checkpoint(1)})
    # A trigger makes SQLite itself fail on the third row, after the first two rows and the
    # deletion were written inside the transaction: only a rollback can undo those.
    poison(db)
    with CheckpointStore(db) as store:
        batch = {"a": checkpoint(2), "b": checkpoint(2), "poison": checkpoint(2)}
        with pytest.raises(CheckpointError, match=r"s\.db: cannot save: poisoned"):
            store.save(batch, forget=["gone"])
        before = {"a": checkpoint(1), "b": checkpoint(1), "gone": checkpoint(1)}
        assert store.load_all() == before
        store.save({"a": checkpoint(3)})  # the store is still usable
    with CheckpointStore(db) as store:
        assert store.load_all() == {**before, "a": checkpoint(3)}


operations = st.lists(
    st.tuples(
        st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 2**63 - 1), max_size=4),
        st.sets(st.sampled_from("abcdef"), max_size=2),
    ),
    max_size=5,
)


@settings(max_examples=examples(25))
@given(batches=operations)
def test_the_store_is_the_batches_applied_in_order(
    tmp_path_factory: pytest.TempPathFactory, batches: list[tuple[dict[str, int], set[str]]]
) -> None:
    db = tmp_path_factory.mktemp("prop") / "s.db"
    model: dict[str, FollowCheckpoint] = {}
    with CheckpointStore(db) as store:
        for offsets, forget in batches:
            saved = {key: checkpoint(offset) for key, offset in offsets.items()}
            forgotten = forget - saved.keys()
            store.save(saved, forget=forgotten)
            for key in forgotten:
                model.pop(key, None)
            model.update(saved)
            assert store.load_all() == model
    with CheckpointStore(db) as store:
        assert store.load_all() == model
        assert {key: store.load(key) for key in "abcdef"} == {
            key: model.get(key) for key in "abcdef"
        }


@pytest.mark.anyio
async def test_saves_from_worker_threads_are_serialised(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:

        async def writer(key: str) -> None:
            for offset in range(20):
                await anyio.to_thread.run_sync(store.save, {key: checkpoint(offset)})

        async with anyio.create_task_group() as tg:
            for key in "abcd":
                tg.start_soon(writer, key)
        assert store.load_all() == {key: checkpoint(19) for key in "abcd"}


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "s.db")
    store.close()
    store.close()
    with pytest.raises(ValueError, match="closed"):
        store.load_all()


# A writer that saves, forever, batches numbered 1, 2, 3...: batch n gives every base key
# offset n, adds "extra-n" and forgets "extra-(n-1)"; it prints n once save() returned.
WRITER = textwrap.dedent(
    """
    import sys
    from utf8stream import FollowCheckpoint
    from utf8stream.follower import FileIdentity
    from utf8stream.apps.checkpoints import CheckpointStore

    store = CheckpointStore(sys.argv[1])
    n = max((cp.offset for cp in store.load_all().values()), default=0)
    while True:
        n += 1
        batch = {
            key: FollowCheckpoint(key, FileIdentity(1, i), n)
            for i, key in enumerate([*(f"/logs/{k}.log" for k in range(20)), f"extra-{n}"])
        }
        store.save(batch, forget=[f"extra-{n - 1}"])
        print(n, flush=True)
    """
)


@pytest.mark.soak  # seven writer processes killed at random instants
def test_kill_9_at_random_instants_loses_nothing_and_never_splits_a_batch(
    tmp_path: Path,
) -> None:
    db = tmp_path / "state.db"
    rng = random.Random()
    seed = rng.randrange(1 << 32)
    rng.seed(seed)
    previous = 0
    for round_number in range(7):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        if round_number == 0:
            # Early: perhaps while the store is being created.
            child_output = ""
            time.sleep(rng.uniform(0.0, 0.3))
        else:
            child_output = child.stdout.readline()  # it is saving batches now
            time.sleep(rng.uniform(0.0, 0.1))
        assert child.poll() is None, "the writer stopped by itself"
        child.send_signal(signal.SIGKILL)
        child_output += child.stdout.read()
        child.wait()
        child.stdout.close()
        acknowledged = [int(n) for n in child_output.split()]
        with CheckpointStore(db) as store:
            state = store.load_all()
        context = f"seed {seed}, round {round_number}, acknowledged {acknowledged[-1:]}"
        if not state:
            assert previous == 0 and not acknowledged, context
            continue
        (n,) = {cp.offset for cp in state.values()}  # one batch, never half of two
        expected = {*(f"/logs/{k}.log" for k in range(20)), f"extra-{n}"}
        assert state.keys() == expected, context
        # Every acknowledged batch is there; at most the one being committed at the kill
        # is there without having been acknowledged.
        last = acknowledged[-1] if acknowledged else previous
        assert last <= n <= last + 1, context
        assert n >= previous, context
        previous = n
    assert previous > 0


def test_not_a_database(tmp_path: Path) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("not SQLite at all\n" * 100)
    assert error_of(db) == f"{db}: not a checkpoint store (file is not a database)"
    assert db.read_text() == "not SQLite at all\n" * 100


def test_another_programs_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE users (name TEXT)")
    connection.execute("INSERT INTO users VALUES ('ada')")
    connection.commit()
    connection.close()
    before = db.read_bytes()
    assert "another program's SQLite database" in error_of(db)
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    CheckpointStore(db).close()
    connection = sqlite3.connect(db)
    connection.execute(f"PRAGMA user_version = {STORE_SCHEMA_VERSION + 1}")
    connection.close()
    assert error_of(db) == (
        f"{db}: checkpoint store written by a newer utf8stream (schema"
        f" {STORE_SCHEMA_VERSION + 1}; this version reads schema {STORE_SCHEMA_VERSION})"
    )


def test_our_mark_without_our_table_is_damage(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    CheckpointStore(db).close()
    connection = sqlite3.connect(db)
    connection.execute("DROP TABLE checkpoints")
    connection.commit()
    connection.close()
    assert "the checkpoint store is damaged (no such table" in error_of(db)


def test_damaged_pages_are_found_on_open(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({f"/logs/{i}.log": checkpoint(i, f"/logs/{i}.log") for i in range(300)})
    data = bytearray(db.read_bytes())
    assert len(data) > 5 * 4096
    data[2 * 4096 + 100 : 4 * 4096] = os.urandom(2 * 4096 - 100)
    db.write_bytes(bytes(data))
    assert "the checkpoint store is damaged" in error_of(db)


def test_damage_only_an_integrity_check_finds_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({f"/logs/{i}.log": checkpoint(i, f"/logs/{i}.log") for i in range(300)})
    data = bytearray(db.read_bytes())
    data[2 * 4096 + 7] = 200  # the count of fragmented bytes in the header of page 3
    db.write_bytes(bytes(data))
    # SQLite reports it on two lines ("*** in database main ***" and the problem).
    message = error_of(db)
    assert message.startswith(f"{db}: the checkpoint store is damaged (")
    assert "page 3" in message


def test_a_truncated_store_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({f"/logs/{i}.log": checkpoint(i, f"/logs/{i}.log") for i in range(300)})
    with open(db, "r+b") as f:
        f.truncate(3 * 4096 + 17)
    assert "the checkpoint store is damaged" in error_of(db)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("'{\"version\": 99}'", "unknown version 99"),
        ("'[1, 2]'", "must be a JSON object"),
        ("X'FF00'", "not JSON"),
        ("randomblob(100000)", "larger than"),
        ("42", "must be a JSON object"),
    ],
)
def test_an_edited_row_is_refused_on_load(tmp_path: Path, value: str, reason: str) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({"a": checkpoint(1), "b": checkpoint(2)})
    connection = sqlite3.connect(db)
    connection.execute(
        f"UPDATE checkpoints SET checkpoint = {value} WHERE key = CAST('b' AS BLOB)"
    )
    connection.commit()
    connection.close()
    with CheckpointStore(db) as store:
        assert store.load("a") == checkpoint(1)
        for load in (store.load_all, lambda: store.load("b")):
            with pytest.raises(CheckpointError) as caught:
                load()
            assert str(caught.value).startswith(f"{db}: the checkpoint of 'b': ")
            assert reason in str(caught.value)


def test_a_writer_holding_the_lock_past_the_timeout_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db, busy_timeout=0.05) as store:
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(CheckpointError) as caught:
                store.save({"a": checkpoint(1)})
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert str(caught.value) == f"{db}: cannot save: locked by another process"
        store.save({"a": checkpoint(1)})
        assert store.load_all() == {"a": checkpoint(1)}


def test_a_directory_a_fifo_or_a_missing_directory(tmp_path: Path) -> None:
    assert error_of(tmp_path) == f"{tmp_path}: cannot open the checkpoint store: it is a directory"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert error_of(fifo) == f"{fifo}: cannot open the checkpoint store: it is not a regular file"
    missing = tmp_path / "nowhere" / "s.db"
    assert error_of(missing) == (
        f"{missing}: cannot open the checkpoint store: no directory {missing.parent}"
    )


READ_ONLY_CHECK = textwrap.dedent(
    """
    import sys
    from utf8stream import CheckpointError
    from utf8stream.apps.checkpoints import CheckpointStore

    for path in sys.argv[1:]:
        try:
            CheckpointStore(path)
        except CheckpointError as exc:
            print(exc)
    """
)


def test_a_read_only_directory(tmp_path: Path) -> None:
    """A new store, and an existing one (WAL mode writes its journal beside it)."""
    directory = tmp_path / "ro"
    directory.mkdir()
    existing = directory / "old.db"
    with CheckpointStore(existing) as store:
        store.save({"a": checkpoint(1)})
    new = directory / "new.db"
    command = [sys.executable, "-c", READ_ONLY_CHECK, str(new), str(existing)]
    if os.geteuid() == 0:
        # Root writes anywhere; in a user namespace of its own it has no such privilege.
        unshare = [shutil.which("unshare") or "", "--user"]
        if not unshare[0] or subprocess.run([*unshare, "true"]).returncode != 0:
            pytest.skip("running as root, and unshare --user cannot drop the privilege")
        command = [*unshare, *command]
    directory.chmod(0o555)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    finally:
        directory.chmod(0o755)
    assert result.returncode == 0, result.stderr
    reason = f"directory {directory} is not writable (the store keeps its journal there)"
    assert result.stdout.splitlines() == [
        f"{new}: cannot open the checkpoint store: {reason}",
        f"{existing}: cannot open the checkpoint store: {reason}",
    ]
    assert not new.exists()
    with CheckpointStore(existing) as store:
        assert store.load_all() == {"a": checkpoint(1)}


# -- exactly once: the program's rows and the checkpoints in one transaction ----------


def rows_of(db: Path) -> list[tuple[str, int]]:
    connection = sqlite3.connect(db)
    try:
        return connection.execute("SELECT name, seq FROM out ORDER BY rowid").fetchall()
    finally:
        connection.close()


def make_out_table(connection: sqlite3.Connection) -> None:
    connection.execute("CREATE TABLE IF NOT EXISTS out (name TEXT, seq INTEGER)")


def test_also_commits_the_programs_rows_with_the_checkpoints(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        # With nothing to save, the transaction is still made: the program's setup.
        store.save({}, also=make_out_table)
        assert store.load_all() == {}

        def write(connection: sqlite3.Connection) -> None:
            assert connection.in_transaction
            connection.executemany("INSERT INTO out VALUES (?, ?)", [("a", 0), ("a", 1)])

        store.save({"a": checkpoint(2)}, also=write)
    # A second connection sees both, or neither; reopened, the store accepts its file
    # holding the program's table beside its own.
    assert rows_of(db) == [("a", 0), ("a", 1)]
    with CheckpointStore(db) as store:
        assert store.load_all() == {"a": checkpoint(2)}
        store.save(
            {"a": checkpoint(3)}, also=lambda c: c.execute("INSERT INTO out VALUES ('a', 2)")
        )
    with CheckpointStore(db) as store:
        assert store.load_all() == {"a": checkpoint(3)}
    assert rows_of(db) == [("a", 0), ("a", 1), ("a", 2)]


class Refused(Exception):
    pass


def refuse(connection: sqlite3.Connection) -> None:
    connection.execute("INSERT INTO out VALUES ('refused', 0)")
    raise Refused


def test_a_failure_inside_also_rolls_back_both(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({"a": checkpoint(1), "gone": checkpoint(1)}, also=make_out_table)

        def write_then_fail(connection: sqlite3.Connection) -> None:
            connection.execute("INSERT INTO out VALUES ('a', 1)")
            raise Refused("the program changed its mind")

        # The program's own exception comes out unchanged, not as a CheckpointError.
        with pytest.raises(Refused, match="changed its mind"):
            store.save({"a": checkpoint(2)}, forget=["gone"], also=write_then_fail)
        assert store.load_all() == {"a": checkpoint(1), "gone": checkpoint(1)}
        assert rows_of(db) == []

        # So does an SQLite error of the program's own statement.
        def bad_sql(connection: sqlite3.Connection) -> None:
            connection.execute("INSERT INTO out VALUES ('a', 1)")
            connection.execute("INSERT INTO no_such_table VALUES (1)")

        with pytest.raises(sqlite3.OperationalError, match="no such table: no_such_table"):
            store.save({"a": checkpoint(2)}, also=bad_sql)
        assert store.load_all() == {"a": checkpoint(1), "gone": checkpoint(1)}
        assert rows_of(db) == []

        # A failure of the store's own part after ``also`` ran undoes the program's rows.
        insane = FollowCheckpoint("/var/log/b.log", FileIdentity(2049, 8, 11, DIGEST), -5)
        with pytest.raises(CheckpointError):
            store.save({"b": insane}, also=lambda c: c.execute("INSERT INTO out VALUES ('b', 0)"))
        assert rows_of(db) == []
        store.save(
            {"a": checkpoint(2)}, also=lambda c: c.execute("INSERT INTO out VALUES ('a', 1)")
        )
    with CheckpointStore(db) as store:
        assert store.load_all() == {"a": checkpoint(2), "gone": checkpoint(1)}
    assert rows_of(db) == [("a", 1)]


def test_a_trigger_failing_on_a_checkpoint_row_rolls_back_the_programs_rows(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({"a": checkpoint(1)}, also=make_out_table)
    poison(db)
    with CheckpointStore(db) as store:
        with pytest.raises(CheckpointError, match="cannot save: poisoned"):
            store.save(
                {"a": checkpoint(2), "poison": checkpoint(2)},
                also=lambda c: c.execute("INSERT INTO out VALUES ('a', 1)"),
            )
        assert store.load_all() == {"a": checkpoint(1)}
    assert rows_of(db) == []


@pytest.mark.parametrize("ending", ["COMMIT", "ROLLBACK"])
def test_also_must_not_end_the_transaction(tmp_path: Path, ending: str) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({"a": checkpoint(1)}, also=make_out_table)

        def rude(connection: sqlite3.Connection) -> None:
            connection.execute("INSERT INTO out VALUES ('a', 1)")
            connection.execute(ending)

        with pytest.raises(ValueError, match="ended the transaction"):
            store.save({"a": checkpoint(2)}, also=rude)
        # No checkpoint saved for rows that may be committed: at worst they repeat.
        assert store.load_all() == {"a": checkpoint(1)}
        store.save({"a": checkpoint(3)})  # still usable
        assert store.load_all() == {"a": checkpoint(3)}
    assert rows_of(db) == ([("a", 1)] if ending == "COMMIT" else [])


def test_our_store_with_the_programs_tables_is_accepted_a_foreign_one_is_not(
    tmp_path: Path,
) -> None:
    ours = tmp_path / "ours.db"
    with CheckpointStore(ours) as store:
        store.save({"a": checkpoint(1)})
    connection = sqlite3.connect(ours)
    connection.execute("CREATE TABLE out (name TEXT, seq INTEGER)")
    connection.execute("CREATE INDEX out_seq ON out (seq)")
    connection.execute("INSERT INTO out VALUES ('a', 0)")
    connection.commit()
    connection.close()
    with CheckpointStore(ours) as store:
        assert store.load_all() == {"a": checkpoint(1)}
    # Tables made first, by the program, and not marked as ours: another program's.
    theirs = tmp_path / "theirs.db"
    connection = sqlite3.connect(theirs)
    make_out_table(connection)
    connection.commit()
    connection.close()
    assert "another program's SQLite database" in error_of(theirs)


async def no_line(lines: ManyFollower) -> None:
    with anyio.move_on_after(0.3):
        line = await lines.__anext__()
        pytest.fail(f"unexpected line {line!r}")


def inserting(rows: list[tuple[str, str]]) -> Callable[[sqlite3.Connection], object]:
    def write(connection: sqlite3.Connection) -> None:
        make_out_table(connection)
        connection.executemany("INSERT INTO out VALUES (?, ?)", rows)

    return write


@pytest.mark.anyio
async def test_follow_many_saves_the_programs_rows_with_exactly_their_checkpoints(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.log").write_bytes(b"a0\na1\na2\n")
    (tmp_path / "b.log").write_bytes(b"b0\nb1\n")
    db = tmp_path / "s.db"
    every = sorted(
        [("a.log", "a0"), ("a.log", "a1"), ("a.log", "a2"), ("b.log", "b0"), ("b.log", "b1")]
    )
    options = {"store": db, "autosave": False, "start": "beginning", "poll_interval": 0.05}
    async with follow_many([tmp_path / "*.log"], **options) as lines:
        first = await take_named(lines, 3, 20)
        await lines.save(also=inserting(first))
        rest = await take_named(lines, 2, 20)
        assert sorted(first + rest) == every
        with pytest.raises(Refused):
            await lines.save(also=refuse)
        # Left without saving (autosave=False): as if killed here.
    assert sorted(rows_of(db)) == sorted(first)
    async with follow_many([tmp_path / "*.log"], **options) as lines:
        again = await take_named(lines, 2, 20)
        assert sorted(again) == sorted(rest)  # exactly the lines not committed
        await no_line(lines)
        with pytest.raises(Refused):
            await lines.save(also=refuse)
        # The failed save recorded nothing as saved: this one writes the checkpoints.
        await lines.save(also=inserting(again))
    assert sorted(rows_of(db)) == every
    async with follow_many([tmp_path / "*.log"], **options) as lines:
        await no_line(lines)


@pytest.mark.anyio
async def test_follow_many_save_also_needs_a_store(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"a0\n")
    async with follow_many([tmp_path / "*.log"], start="beginning", autosave=False) as lines:
        await take_named(lines, 1, 20)
        with pytest.raises(ValueError, match="needs a checkpoint store"):
            await lines.save(also=make_out_table)


def test_the_open_time_check_covers_the_stores_table_not_the_programs(tmp_path: Path) -> None:
    # A program loading its lines into the store's database may make it gigabytes large:
    # the check made at every open reads the store's own table only.
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({"a": checkpoint(1)})
        rows = [(f"line {i:06d} " + "x" * 60,) for i in range(3000)]
        store.save(
            {},
            also=lambda c: (
                c.execute("CREATE TABLE out (text TEXT)"),
                c.executemany("INSERT INTO out VALUES (?)", rows),
            ),
        )
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = "SELECT rootpage FROM sqlite_master WHERE name = 'out'"
    (out_root,) = connection.execute(root).fetchone()
    connection.close()
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > (out_root + 20) * page
    # A leaf page of the program's table, well past its root: damaged.
    target = (out_root + 10 - 1) * page
    data[target + 7] = 200
    db.write_bytes(bytes(data))
    with CheckpointStore(db) as store:
        assert store.load_all() == {"a": checkpoint(1)}
    connection = sqlite3.connect(db)
    try:
        problems = connection.execute("PRAGMA quick_check").fetchall()
    finally:
        connection.close()
    assert problems != [("ok",)]  # the damage is there; SQLite reports it on that table


@pytest.mark.parametrize("call", ["load", "load_all", "save", "forget", "close"])
def test_also_calling_its_store_is_refused_not_a_deadlock(tmp_path: Path, call: str) -> None:
    db = tmp_path / "s.db"
    with CheckpointStore(db) as store:
        store.save({"a": checkpoint(1)}, also=make_out_table)
        calls = {
            "load": lambda: store.load("a"),
            "load_all": store.load_all,
            "save": lambda: store.save({"a": checkpoint(5)}),
            "forget": lambda: store.forget("a"),
            "close": store.close,
        }

        def reentrant(connection: sqlite3.Connection) -> None:
            connection.execute("INSERT INTO out VALUES ('a', 1)")
            calls[call]()

        with pytest.raises(RuntimeError, match="must not call the store"):
            store.save({"a": checkpoint(2)}, also=reentrant)
        assert store.load_all() == {"a": checkpoint(1)}  # rolled back, and usable
    assert rows_of(db) == []
