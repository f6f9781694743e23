"""One checkpoint store for every file a follower follows: SQLite, one transaction per save.

Theory of operation
-------------------
A follower of many files must record where it is in each of them so that a restart, even
after ``kill -9`` at any instant, neither loses nor repeats a line.  One JSON file per
followed file (``write_checkpoint``) is atomic per file only: a kill between two renames
leaves some files recorded before a batch of output and some after it.  SQLite (from the
standard library) gives the one thing needed, an atomic commit of many rows, with a
journal that recovers from a kill at any instant; it needs no server and no dependency.

The store is one table: ``key`` (the caller's name for a followed file, stored as the
UTF-8 bytes of the string with lone surrogates kept, so the file names ``os.fsdecode``
gives round-trip exactly) and ``checkpoint`` (``FollowCheckpoint.to_json``).  Every row
read back goes through ``FollowCheckpoint.from_json``, the same strict parser as
``read_checkpoint``: the file is on disk, and anyone may have edited or damaged it.

The file is marked as ours with ``PRAGMA application_id`` and versioned with ``PRAGMA
user_version``; a file that is not SQLite, another program's database, a store written by
a newer version or a damaged one (``PRAGMA quick_check`` of the store's table: not of the
program's tables beside it, which may be large) is refused with one ``CheckpointError``
naming the file, and a foreign file is never modified (the identity is checked before the
journal mode is switched).

Exactly once: a checkpoint saved in a transaction of its own can only be *at least once*
for a program that writes the lines somewhere: a kill between "the lines are written out"
and "the checkpoint is saved" repeats them.  The one way to close that window (Kafka
Connect's exactly-once sinks store the offsets with the data, in the sink's transaction)
is to commit the output and the positions together: ``save(checkpoints, also=write)``
calls ``write(connection)`` inside the save's transaction, so a program that loads the
lines into a table of the store's own database commits its rows and the checkpoints of
exactly those lines at once, or neither.  The store's file may therefore hold the
program's tables beside ``checkpoints`` (create them after the store has made the file,
e.g. in the first ``also``); a file that already held tables and is not marked as ours
is still another program's database, refused and never touched.

Durability: WAL journal with ``synchronous=FULL``, so a commit is on disk when ``save``
returns.  ``NORMAL`` would survive ``kill -9`` just as well (the WAL is in the page cache,
which the kernel writes out whatever happens to the process) but could lose the last
commits on a power loss, and a lost commit is replayed output: exactly the duplicates this
store exists to prevent.  The price is one fsync per ``save``; the caller decides how many
lines a save covers.  ``durable=False`` (``synchronous=NORMAL``: no fsync per commit) is
for a caller that saves after every write of its output, as ``utf8stream tail`` does, and
whose concern is ``kill -9``, not a power loss.

Concurrency: one process writes a store (two followers sharing one would both deliver the
same lines); other connections may read it (WAL lets readers run during a write) and wait
up to ``busy_timeout`` seconds for a lock.  One ``CheckpointStore`` can be used from any
thread, one call at a time (a lock serialises them), so an async follower calls it as
``await anyio.to_thread.run_sync(store.save, batch)`` and never blocks its event loop on
an fsync.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType

from .follow._checkpoint import CHECKPOINT_MAX_BYTES, CheckpointError, FollowCheckpoint
from .follow._public import public

__all__ = ["STORE_SCHEMA_VERSION", "CheckpointStore"]

#: ``PRAGMA application_id`` of a checkpoint store: "u8ck" in ASCII.
STORE_APPLICATION_ID = 0x75386368
#: The layout of the store this version writes (``PRAGMA user_version``).
STORE_SCHEMA_VERSION = 1
#: Longest key, in bytes: a file name is at most a few kilobytes.
KEY_MAX_BYTES = 1 << 16
DEFAULT_BUSY_TIMEOUT = 5.0

_CREATE = (
    "CREATE TABLE checkpoints (key BLOB PRIMARY KEY NOT NULL, checkpoint TEXT NOT NULL)"
    " WITHOUT ROWID"
)
# Rows are read as bytes, cut one byte past the limits: a damaged or hostile row can
# neither fail to decode inside sqlite3 nor cost more memory than the parser would accept.
_SELECT_ONE = "SELECT substr(CAST(checkpoint AS BLOB), 1, ?) FROM checkpoints WHERE key = ?"
_SELECT_ALL = (
    "SELECT substr(CAST(key AS BLOB), 1, ?), substr(CAST(checkpoint AS BLOB), 1, ?)"
    " FROM checkpoints ORDER BY key"
)
_UPSERT = "INSERT OR REPLACE INTO checkpoints (key, checkpoint) VALUES (?, ?)"
_DELETE = "DELETE FROM checkpoints WHERE key = ?"


def _key_bytes(key: str) -> bytes:
    if not isinstance(key, str) or not key:
        raise ValueError(f"a checkpoint key must be a non-empty string, not {key!r}")
    # surrogatepass is injective on every str, so two keys never share a row.
    data = key.encode("utf-8", "surrogatepass")
    if len(data) > KEY_MAX_BYTES:
        raise ValueError(f"a checkpoint key must be at most {KEY_MAX_BYTES} bytes")
    return data


@public("utf8stream")
class CheckpointStore:
    """The checkpoints of many followed files in one SQLite file, saved transactionally.

    ``CheckpointStore(path)`` opens the store, creating it if the file does not exist or
    is empty; use it as a context manager (or call ``close``).  Every problem with the
    file (not SQLite, another program's database, a newer schema, damaged, unwritable,
    locked longer than ``busy_timeout``) raises ``CheckpointError`` whose message names
    the file.  A bad key or a checkpoint that ``from_json`` would refuse raises
    ``ValueError``/``CheckpointError`` before anything is written.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        durable: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        self._durable = durable
        self._lock = threading.Lock()
        #: The thread running a save's ``also`` callable, which must not call the store
        #: (its lock is held: it would wait for itself forever).
        self._also_thread: int | None = None
        # An absolute name: ":memory:" and "file:..." are special to SQLite.
        self._file = Path(os.path.abspath(self.path))
        if self._file.exists() and not self._file.is_file():
            kind = "a directory" if self._file.is_dir() else "not a regular file"
            raise CheckpointError(f"{self.path}: cannot open the checkpoint store: it is {kind}")
        try:
            connection = sqlite3.connect(
                self._file,
                timeout=busy_timeout,
                isolation_level=None,  # transactions are begun and ended here, explicitly
                check_same_thread=False,  # ``self._lock`` serialises the threads instead
            )
        except sqlite3.Error as exc:
            raise self._failure("cannot open the checkpoint store", exc) from None
        try:
            self._prepare(connection)
        except BaseException:
            connection.close()
            raise
        self._connection: sqlite3.Connection | None = connection

    def _prepare(self, connection: sqlite3.Connection) -> None:
        try:
            self._adopt(connection)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(f"PRAGMA synchronous={'FULL' if self._durable else 'NORMAL'}")
            # Our table only: the program's tables beside it may be large (a check of the
            # whole file reads all of it at every start) and their health is its business.
            check = "PRAGMA quick_check(checkpoints)"
            problems = [row[0] for row in connection.execute(check)]
        except sqlite3.Error as exc:
            raise self._failure("cannot open the checkpoint store", exc) from None
        if problems != ["ok"]:
            first = " ".join(str(problems[0]).split())  # SQLite's report spans lines
            raise CheckpointError(f"{self.path}: the checkpoint store is damaged ({first})")

    def _adopt(self, connection: sqlite3.Connection) -> None:
        """Check the file is our store, or make it one if it is empty; nothing else."""
        # IMMEDIATE: two processes creating the store at once create it once.
        connection.execute("BEGIN IMMEDIATE")
        try:
            application_id = connection.execute("PRAGMA application_id").fetchone()[0]
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            (objects,) = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            if application_id == 0 and version == 0 and objects == 0:
                connection.execute(_CREATE)
                connection.execute(f"PRAGMA application_id = {STORE_APPLICATION_ID}")
                connection.execute(f"PRAGMA user_version = {STORE_SCHEMA_VERSION}")
            elif application_id != STORE_APPLICATION_ID:
                raise CheckpointError(
                    f"{self.path}: not a checkpoint store (another program's SQLite database)"
                )
            elif version > STORE_SCHEMA_VERSION:
                raise CheckpointError(
                    f"{self.path}: checkpoint store written by a newer utf8stream (schema"
                    f" {version}; this version reads schema {STORE_SCHEMA_VERSION})"
                )
            elif version != STORE_SCHEMA_VERSION:
                raise CheckpointError(
                    f"{self.path}: the checkpoint store is damaged (schema version {version})"
                )
            else:
                connection.execute(_SELECT_ONE, (0, b"")).fetchall()  # the table is usable
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _failure(self, what: str, exc: sqlite3.Error) -> CheckpointError:
        """One line naming the file, and the cause in the user's terms where SQLite's is vague."""
        reason = str(exc)
        if reason == "file is not a database":
            return CheckpointError(f"{self.path}: not a checkpoint store ({reason})")
        if reason.startswith("database disk image is malformed"):
            return CheckpointError(f"{self.path}: the checkpoint store is damaged ({reason})")
        if reason == "database is locked":
            reason = "locked by another process"
        elif reason in ("unable to open database file", "attempt to write a readonly database"):
            reason = self._access_problem() or reason
        elif reason.startswith("no such table") or reason.startswith("no such column"):
            return CheckpointError(f"{self.path}: the checkpoint store is damaged ({reason})")
        return CheckpointError(f"{self.path}: {what}: {reason}")

    def _access_problem(self) -> str | None:
        directory = self._file.parent
        if not directory.is_dir():
            return f"no directory {directory}"
        if not os.access(directory, os.W_OK | os.X_OK):
            # WAL mode writes FILE-wal and FILE-shm beside the store, even to read it.
            return f"directory {directory} is not writable (the store keeps its journal there)"
        if self._file.exists() and not os.access(self._file, os.R_OK | os.W_OK):
            return "permission denied"
        return None

    def _locked(self) -> threading.Lock:
        """The lock, refused to the ``also`` callable of a save in progress."""
        if self._also_thread == threading.get_ident():
            raise RuntimeError(
                "the also= callable of CheckpointStore.save must not call the store"
            )
        return self._lock

    def _live(self) -> sqlite3.Connection:
        if self._connection is None:
            raise ValueError("the checkpoint store is closed")
        return self._connection

    def _parsed(self, key: str, data: object) -> FollowCheckpoint:
        if not isinstance(data, bytes):
            raise CheckpointError(f"{self.path}: the checkpoint of {key!r} is not text")
        try:
            return FollowCheckpoint.from_json(data)
        except CheckpointError as exc:
            raise CheckpointError(f"{self.path}: the checkpoint of {key!r}: {exc}") from None

    def load(self, key: str) -> FollowCheckpoint | None:
        """The checkpoint saved under ``key``, or None if there is none."""
        wanted = _key_bytes(key)
        with self._locked():
            try:
                row = self._live().execute(_SELECT_ONE, (CHECKPOINT_MAX_BYTES + 1, wanted))
                found = row.fetchone()
            except sqlite3.Error as exc:
                raise self._failure("cannot read", exc) from None
        return None if found is None else self._parsed(key, found[0])

    def load_all(self) -> dict[str, FollowCheckpoint]:
        """Every checkpoint, by key, as one consistent snapshot (the last committed save)."""
        with self._locked():
            try:
                limits = (KEY_MAX_BYTES + 1, CHECKPOINT_MAX_BYTES + 1)
                rows = self._live().execute(_SELECT_ALL, limits).fetchall()
            except sqlite3.Error as exc:
                raise self._failure("cannot read", exc) from None
        checkpoints: dict[str, FollowCheckpoint] = {}
        for raw_key, data in rows:
            try:
                if not isinstance(raw_key, bytes) or len(raw_key) > KEY_MAX_BYTES:
                    raise UnicodeError
                key = raw_key.decode("utf-8", "surrogatepass")
            except UnicodeError:
                raise CheckpointError(f"{self.path}: a key is not a usable name") from None
            checkpoints[key] = self._parsed(key, data)
        return checkpoints

    def save(
        self,
        checkpoints: Mapping[str, FollowCheckpoint],
        *,
        forget: Iterable[str] = (),
        also: Callable[[sqlite3.Connection], object] | None = None,
    ) -> None:
        """Save ``checkpoints`` and drop the keys in ``forget``, all in one transaction.

        When this returns, the whole batch is on disk; if it raises, none of it is (the
        store keeps the previous state).  A key may not be both saved and forgotten.

        ``also``: called with the store's ``sqlite3.Connection`` inside that transaction
        (``BEGIN IMMEDIATE``, before the checkpoints are written), so that what it writes
        to tables of its own in the same database is committed with the checkpoints or
        not at all: output and positions together, *exactly once* across ``kill -9``.
        It must neither commit nor roll back (``ValueError`` if the transaction is gone
        when it returns: then no checkpoint is written).  An exception it raises rolls
        back everything and comes out of ``save`` unchanged.  It runs in the caller's
        thread, with the store's lock held: calling the store from it raises
        ``RuntimeError``.  With ``also`` the transaction is made even when there is no
        checkpoint to write.
        """
        if isinstance(forget, str):
            raise TypeError("forget takes a collection of keys, not one key")
        rows = []
        for key, checkpoint in checkpoints.items():
            text = checkpoint.to_json()
            self._parsed(key, text.encode())  # refused now rather than at the next load
            rows.append((_key_bytes(key), text))
        gone = {_key_bytes(key) for key in forget}
        if gone.intersection(row[0] for row in rows):
            raise ValueError("a key cannot be both saved and forgotten in one batch")
        if not rows and not gone and also is None:
            return
        with self._locked():
            connection = self._live()
            theirs: BaseException | None = None  # raised by (or about) ``also``: unchanged
            try:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    if also is not None:
                        self._also_thread = threading.get_ident()
                        try:
                            also(connection)
                        except BaseException as exc:
                            theirs = exc
                            raise
                        finally:
                            self._also_thread = None
                        if not connection.in_transaction:
                            theirs = ValueError(
                                "CheckpointStore.save: the also= callable ended the transaction"
                                " (it must neither commit nor roll back); no checkpoint saved"
                            )
                            raise theirs
                    connection.executemany(_DELETE, [(key,) for key in gone])
                    connection.executemany(_UPSERT, rows)
                    connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                if exc is theirs:
                    raise
                raise self._failure("cannot save", exc) from None

    def forget(self, key: str) -> None:
        """Drop the checkpoint of ``key`` (a file no longer followed); none is no error."""
        self.save({}, forget=[key])

    def close(self) -> None:
        """Close the store (idempotent); everything saved is already on disk."""
        with self._locked():
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
