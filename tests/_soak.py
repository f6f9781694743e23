"""The soak scenario shared by tests/apps/follow/test_soak.py and benchmarks/soak_follow.py.

A writer process appends sequence-numbered lines (``app.log <seq> <padding>``) at a steady
rate; a rotator thread rotates the log the ways logrotate does.  Where ``logrotate`` is
installed it does the rotating itself (``logrotate -f`` on a configuration written for the
mode, ``postrotate`` sending the writer SIGHUP); elsewhere, or with
``UTF8STREAM_SOAK_ROTATOR=script``, the rotator does the same renames, copies, truncations
and compressions:

- ``create``: rename ``app.log`` to ``app.log.1`` (older ones shifted), create a new
  ``app.log``, then SIGHUP the writer, which reopens the path (``postrotate``): until it
  does, it appends to the renamed file.
- ``copytruncate``: copy ``app.log`` to ``app.log.1``, then truncate it; the writer keeps
  its descriptor (``O_APPEND``).  The writer's appends between the copy and the truncate
  would be lost for any reader (logrotate documents that window), so the rotator holds the
  writer's ``flock`` across both: every line lost here is the follower's.
- ``compress``: create + delaycompress: ``.1`` renamed to ``.2``, ``app.log`` to ``.1``,
  then ``.2`` gzipped in place to ``.2.gz`` (written as gzip does: straight to the name).
- ``dateext``: create, with the rotated file named ``app.log-YYYYMMDD-N``.

A follower (in-process ``follow()``, the ``tail -F --checkpoint`` CLI killed with SIGKILL
at random moments and restarted, or GNU ``tail -F``) reads throughout; at the end the
sequence numbers it gave are compared with those written.

``run_many`` (tests/apps/follow/test_soak_many.py): five such logs under one glob (``f0.log``...,
each with its own writer, whose lines start with the file's name, and its own rotator
mode; one appears mid-run, one is removed), and a consumer process running
``follow_many(store=..., autosave=False)`` that writes each batch into a table of the
store's database with ``save(also=...)``, killed with SIGKILL and restarted: exactly once.
"""

from __future__ import annotations

import fcntl
import gzip
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

RATE = 15_000.0
MODES = ("create", "copytruncate", "compress", "dateext")
LOG_NAME = "app.log"
#: Rotated files kept (logrotate's ``rotate``): several seconds of history, so that a
#: restarted CLI still finds the file it was reading when it was killed.  Past that the
#: oldest is deleted, and the file system may give its inode to the next new file, as it
#: does under logrotate: a run of more than KEEP rotations checks that this confuses no one.
KEEP = 10
#: How long a follower may take to catch up with the writer once it stopped.
CATCH_UP_SECONDS = 20.0
#: logrotate's options for each mode (``rotate``, ``missingok`` and the ``postrotate``
#: signal are added to each).  copytruncate's rotator holds the writer's lock while
#: logrotate copies and truncates, as the scripted one does (see the module docstring).
LOGROTATE_OPTIONS = {
    "create": ["create 0644", "nocompress"],
    "copytruncate": ["copytruncate", "nocompress"],
    "compress": ["create 0644", "compress", "delaycompress"],
    # Its names must differ from one rotation to the next: seconds since the epoch, and
    # rotations more than a second apart in this mode (``Rotator.intervals``).
    "dateext": ["create 0644", "nocompress", "dateext", "dateformat -%Y%m%d-%s"],
}


def scenario_seconds(mode: str, seconds: float) -> float:
    """How long to run a scenario of ``mode`` asked to run ``seconds``: long enough for
    two rotations where logrotate's dated names keep them more than a second apart."""
    if mode == "dateext" and rotator_tool() == "logrotate":
        return max(seconds, 3.5)
    return seconds


def rotator_tool() -> str:
    """``logrotate`` where it is installed (and not turned off), else ``script``."""
    if os.environ.get("UTF8STREAM_SOAK_ROTATOR") == "script":
        return "script"
    return "logrotate" if shutil.which("logrotate") else "script"


WRITER = r"""
import fcntl, os, signal, sys, time

path, rate = sys.argv[1], float(sys.argv[2])
prefix = os.path.basename(path).encode()
padding = b"x" * 120
state = {"reopen": False, "stop": False}
signal.signal(signal.SIGHUP, lambda *_: state.update(reopen=True))
signal.signal(signal.SIGTERM, lambda *_: state.update(stop=True))
flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
fd = os.open(path, flags, 0o644)
sys.stdout.write("ready\n")
sys.stdout.flush()
seq = 0
start = time.monotonic()
while not state["stop"]:
    if state["reopen"]:
        state["reopen"] = False
        os.close(fd)
        fd = os.open(path, flags, 0o644)
    due = int((time.monotonic() - start) * rate)
    if due > seq:
        batch = b"".join(
            b"%s %d %s\n" % (prefix, n, padding[: 10 + n % 97]) for n in range(seq, due)
        )
        # One write per batch under the lock the copytruncate rotator takes.
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, batch)
        fcntl.flock(fd, fcntl.LOCK_UN)
        seq = due
    time.sleep(0.005)
sys.stdout.write(f"{seq}\n")
"""


@dataclass
class Tally:
    """What a follower gave, against what the writer wrote."""

    written: int = 0
    received: int = 0
    missing: int = 0
    duplicates: int = 0
    #: Lines that came after a later one although not a repeat (a repeat is a duplicate).
    out_of_order: int = 0
    #: Output lines that are not ``app.log <seq> ...`` (torn, or bytes of a gzip file).
    garbled: int = 0
    rotations: int = 0
    restarts: int = 0
    #: Lines cut in half by a SIGKILL (each completed by the next run).
    torn: int = 0
    #: The most lines repeated after one restart.
    worst_repeat: int = 0
    #: Restarts that repeated more than the CLI's one write to stdout (``REPEAT_BYTES``).
    window_exceeded: int = 0
    stderr: str = ""
    notes: list[str] = field(default_factory=list)


def tally(seqs: list[int], written: int, garbled: int = 0) -> Tally:
    """Missing, repeated and out-of-order sequence numbers (a repeat is not out of order)."""
    result = Tally(written=written, received=len(seqs), garbled=garbled)
    seen: set[int] = set()
    highest = -1
    for seq in seqs:
        if seq in seen:
            result.duplicates += 1
            continue
        seen.add(seq)
        if seq < highest:
            result.out_of_order += 1
        highest = max(highest, seq)
    result.missing = written - len(seen & set(range(written)))
    return result


def parse(lines: list[bytes]) -> tuple[list[int], int]:
    """The sequence numbers of output lines, and how many were not log lines."""
    seqs: list[int] = []
    garbled = 0
    for line in lines:
        fields = line.split(b" ", 2)
        if len(fields) == 3 and fields[0] == b"app.log" and fields[1].isdigit():
            seqs.append(int(fields[1]))
        else:
            garbled += 1
    return seqs, garbled


class Rotator:
    """Rotates ``directory/app.log`` in one mode every 0.3-0.9 s (see ``intervals``), in a
    thread."""

    def __init__(
        self,
        directory: Path,
        mode: str,
        writer_pid: int,
        rng: random.Random,
        *,
        name: str = LOG_NAME,
        keep: int = KEEP,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.directory = directory
        self.name = name
        self.keep = keep
        self.log = directory / name
        self.mode = mode
        self.writer_pid = writer_pid
        self.rng = rng
        self.rotations = 0
        self.error: BaseException | None = None
        self.tool = rotator_tool()
        #: The time between two rotations: 0.3-0.9 s; 1.1-1.6 s where logrotate names the
        #: rotated files by date, to the second (two in one second would share a name).
        dated = self.tool == "logrotate" and mode == "dateext"
        self.intervals = (1.1, 1.6) if dated else (0.3, 0.9)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        if self.tool == "logrotate":
            self._config = directory / f".{name}.logrotate.conf"
            self._state = directory / f".{name}.logrotate.state"
            options = [f"rotate {keep}", "missingok", *LOGROTATE_OPTIONS[mode]]
            if mode != "copytruncate":
                options += ["postrotate", f"    kill -HUP {writer_pid}", "endscript"]
            body = "\n".join(f"    {option}" for option in options)
            self._config.write_text(f"{self.log} {{\n{body}\n}}\n")
            self._config.chmod(0o644)

    def __enter__(self) -> Rotator:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.rng.uniform(*self.intervals)):
                self.rotate()
                self.rotations += 1
        except BaseException as exc:  # reported by __exit__, in the test's thread
            self.error = exc

    def _numbered(self, number: int, suffix: str = "") -> Path:
        return self.directory / f"{self.name}.{number}{suffix}"

    def _shift(self, suffix: str, first: int) -> None:
        self._numbered(self.keep, suffix).unlink(missing_ok=True)
        for number in range(self.keep - 1, first - 1, -1):
            older = self._numbered(number, suffix)
            if older.exists():
                older.rename(self._numbered(number + 1, suffix))

    def _recreate(self) -> None:
        os.close(os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        os.kill(self.writer_pid, signal.SIGHUP)

    def _logrotate(self) -> None:
        command = ["logrotate", "-f", "-s", str(self._state), str(self._config)]
        if self.mode == "copytruncate":
            # logrotate takes no lock: the writer's appends between its copy and its
            # truncation would be lost for any reader.  Holding the writer's lock keeps
            # them out of that window, so every line lost is the follower's.
            fd = os.open(self.log, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                done = subprocess.run(command, capture_output=True, text=True, check=False)
            finally:
                os.close(fd)
        else:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"logrotate failed ({done.returncode}): {done.stderr.strip()}")

    def rotate(self) -> None:
        if self.tool == "logrotate":
            self._logrotate()
        elif self.mode == "create":
            self._shift("", 1)
            self.log.rename(self._numbered(1))
            self._recreate()
        elif self.mode == "copytruncate":
            self._shift("", 1)
            fd = os.open(self.log, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                shutil.copyfile(self.log, self._numbered(1))
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)
        elif self.mode == "compress":
            self._shift(".gz", 2)
            if self._numbered(1).exists():
                self._numbered(1).rename(self._numbered(2))
            self.log.rename(self._numbered(1))
            self._recreate()
            plain = self._numbered(2)
            if plain.exists():
                with open(plain, "rb") as source, gzip.open(self._numbered(2, ".gz"), "wb") as out:
                    shutil.copyfileobj(source, out)
                plain.unlink()
        else:
            dated = sorted(self.directory.glob(f"{self.name}-*"))
            for old in dated[: max(0, len(dated) - self.keep + 1)]:
                old.unlink()
            stamp = time.strftime("%Y%m%d")
            self.log.rename(self.directory / f"{self.name}-{stamp}-{self.rotations:06d}")
            self._recreate()


class Writer:
    """The writer process: started with its file created, ``stop()`` gives how many it wrote."""

    def __init__(self, directory: Path, rate: float, name: str = LOG_NAME):
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(directory / name), str(rate)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline() != "ready\n":
            raise RuntimeError("the writer did not start")
        self.pid = self.process.pid

    def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        out, _ = self.process.communicate(timeout=30)
        return int(out.strip())

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.returncode is None:
            self.process.kill()
            self.process.wait()


def run_follow(directory: Path, mode: str, seconds: float, rate: float, seed: int) -> Tally:
    """``follow()`` in-process (on asyncio or trio, by the seed) under the soak scenario."""
    import anyio

    from utf8stream import follow

    rng = random.Random(seed)
    backend = rng.choice(("asyncio", "trio"))
    seqs: list[int] = []
    garbled = 0

    async def read() -> tuple[int, int]:
        nonlocal garbled
        with Writer(directory, rate) as writer:
            async with follow(directory / LOG_NAME, start="beginning") as lines:
                iterator = lines.__aiter__()

                async def take(until: float, last: int | None = None) -> None:
                    """Lines until the deadline, or until the line numbered ``last``."""
                    nonlocal garbled
                    with anyio.move_on_after(max(0.0, until - time.monotonic())):
                        while last is None or not seqs or seqs[-1] < last:
                            line = await iterator.__anext__()
                            got, bad = parse([line.text.encode("utf-8", "surrogateescape")])
                            seqs.extend(got)
                            garbled += bad

                # The first line first: the file is open before the first rotation.
                await take(time.monotonic() + CATCH_UP_SECONDS, 0)
                with Rotator(directory, mode, writer.pid, rng) as rotator:
                    await take(time.monotonic() + seconds)
                written = writer.stop()
                await take(time.monotonic() + CATCH_UP_SECONDS, written - 1)
        return written, rotator.rotations

    written, rotations = anyio.run(read, backend=backend)
    result = tally(seqs, written, garbled)
    result.rotations = rotations
    result.notes.append(backend)
    return result


def _output_lines(path: Path) -> tuple[list[bytes], bytes]:
    """The complete lines of an output file, and the unfinished rest."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    return data[:end].splitlines(), data[end:]


def _last_seq(path: Path) -> int:
    lines, _ = _output_lines(path)
    seqs, _ = parse(lines[-1:])
    return seqs[-1] if seqs else -1


def _wait_for_first_line(path: Path) -> None:
    """Until a follower started on the log has printed: the rotator must not rotate the
    file before the follower has it open (it would start on the next file, as any would)."""
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while b"\n" not in path.read_bytes()[:4096]:
        if time.monotonic() > deadline:
            raise RuntimeError("the follower printed nothing")
        time.sleep(0.02)


def _wait_for(path: Path, total: int) -> None:
    """Until the output holds the last line written, or has not grown for a while."""
    deadline = time.monotonic() + CATCH_UP_SECONDS
    size, quiet_since = -1, time.monotonic()
    while time.monotonic() < deadline and _last_seq(path) < total - 1:
        now_size = path.stat().st_size
        if now_size != size:
            size, quiet_since = now_size, time.monotonic()
        elif time.monotonic() - quiet_since > QUIET_SECONDS:
            return
        time.sleep(0.05)


#: A follower whose output has not grown for this long has given all it will.
QUIET_SECONDS = 5.0
#: The CLI saves its checkpoint right after each write to stdout (at most
#: ``_tail_output.Output.BATCH_BYTES`` and the line that filled it): after a SIGKILL, only the
#: lines of the one write made before the kill and not yet recorded may come again.
REPEAT_BYTES = (1 << 16) + 200


def run_cli(
    directory: Path, mode: str, seconds: float, rate: float, seed: int, *, kill: bool = True
) -> Tally:
    """``utf8stream tail -F --checkpoint``, killed with SIGKILL every 0.2-1.5 s and restarted
    (with ``kill=False``, left running).

    What the CLI printed goes to one file across restarts (appended, as ``>>`` does); a
    line a SIGKILL cut in half is left there, counted as torn, for the restart to
    complete.  Each restart's repeats are measured in bytes against one write.
    """
    rng = random.Random(seed)
    output = directory / "printed"
    output.touch()
    checkpoint = directory / "tail.checkpoint"
    command = [sys.executable, "-m", "utf8stream", "tail", "-F", "-n", "+1"]
    command += ["--checkpoint", str(checkpoint), str(directory / LOG_NAME)]
    result = Tally()
    runs: list[int] = []  # per run, the output's size when it started

    def start() -> subprocess.Popen[bytes]:
        _, rest = _output_lines(output)
        if rest:
            result.torn += 1
        runs.append(output.stat().st_size)
        with open(output, "ab") as out, open(directory / "tail.stderr", "ab") as err:
            return subprocess.Popen(command, stdout=out, stderr=err)

    def stop_hard(process: subprocess.Popen[bytes]) -> None:
        process.kill()
        process.wait()

    with Writer(directory, rate) as writer:
        process = start()
        try:
            _wait_for_first_line(output)
            with Rotator(directory, mode, writer.pid, rng) as rotator:
                stop_at = time.monotonic() + seconds
                while time.monotonic() < stop_at:
                    kill_at = min(stop_at, time.monotonic() + rng.uniform(0.2, 1.5))
                    while time.monotonic() < kill_at:
                        time.sleep(0.02)
                    # Not before the first checkpoint is saved: a run killed before
                    # it starts afresh, on whatever file the path names then (a finding
                    # of its own, reported apart).
                    while not checkpoint.exists() and time.monotonic() < stop_at:
                        time.sleep(0.02)
                    if kill and time.monotonic() < stop_at:
                        stop_hard(process)
                        process = start()
            written = writer.stop()
            _wait_for(output, written)
        finally:
            process.terminate()
            process.wait(timeout=30)
    data = output.read_bytes()
    seqs, garbled = parse(data.splitlines())
    counted = tally(seqs, written, garbled)
    counted.torn = result.torn
    counted.rotations = rotator.rotations
    counted.restarts = len(runs) - 1
    counted.stderr = (directory / "tail.stderr").read_text(errors="replace")
    # Each restart's repeats, against one write.
    highest = -1
    for begin, end in zip(runs, [*runs[1:], len(data)], strict=True):
        repeats = repeated_bytes = 0
        run_highest = highest
        for line in data[begin:end].splitlines(keepends=True):
            seqs, _ = parse([line])
            if seqs and seqs[0] <= highest:
                repeats += 1
                repeated_bytes += len(line)
            run_highest = max([run_highest, *seqs])
        counted.worst_repeat = max(counted.worst_repeat, repeats)
        if repeated_bytes > REPEAT_BYTES:
            counted.window_exceeded += 1
        highest = run_highest
    return counted


def run_gnu_tail(directory: Path, mode: str, seconds: float, rate: float, seed: int) -> Tally:
    """GNU ``tail -F -n +1`` (by name, with inotify), never restarted."""
    rng = random.Random(seed)
    output = directory / "printed"
    tail = shutil.which("tail")
    if tail is None:
        raise RuntimeError("no tail command")
    with Writer(directory, rate) as writer, open(output, "wb") as out:
        process = subprocess.Popen(
            [tail, "-F", "-n", "+1", str(directory / LOG_NAME)],
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for_first_line(output)
            with Rotator(directory, mode, writer.pid, rng) as rotator:
                time.sleep(seconds)
            written = writer.stop()
            _wait_for(output, written)
        finally:
            process.terminate()
            process.wait(timeout=30)
    lines, rest = _output_lines(output)
    seqs, garbled = parse(lines)
    result = tally(seqs, written, garbled + bool(rest))
    result.rotations = rotator.rotations
    return result


# -- many files, one consumer process killed with SIGKILL, exactly once -------------------

#: The consumer of the many-file soak: ``follow_many`` with the checkpoint store, writing
#: each batch of lines into a table of the store's database in the save's transaction.
CONSUMER = r"""
import sqlite3, sys

import anyio

from utf8stream import CheckpointStore, follow_many

db, pattern, backend, how = sys.argv[1:5]
CREATE = "CREATE TABLE IF NOT EXISTS lines (text TEXT NOT NULL)"
INSERT = "INSERT INTO lines (text) VALUES (?)"


async def main():
    store = CheckpointStore(db)
    store.save({}, also=lambda connection: connection.execute(CREATE))
    # "also": rows and checkpoints in one transaction.  "autosave", for comparison: rows
    # committed on their own, checkpoints saved by follow_many (at least once).
    own = sqlite3.connect(db, timeout=30) if how == "autosave" else None
    async with follow_many(
        [pattern], store=store, autosave=own is not None, start="beginning", rescan_interval=0.5
    ) as lines:
        batch = []
        async for line in lines:
            batch.append((line.text[:40],))  # the name and the number: enough to check
            if len(batch) >= 4096 or not lines.has_pending():
                rows, batch = batch, []
                if own is None:
                    await lines.save(also=lambda connection: connection.executemany(INSERT, rows))
                else:
                    with own:
                        own.executemany(INSERT, rows)


anyio.run(main, backend=backend)
"""

#: Rotated files kept per file in the many-file soak: a killed consumer restarting on a
#: loaded machine must still find the rotated file its checkpoint is in.
MANY_KEEP = 40
#: Lines per second per file: five writers, a rotator each and the consumer share the
#: machine with whatever else runs.
MANY_RATE = 2_000.0
#: Generous: the machine may be loaded.
MANY_DEADLINE = 120.0


@dataclass
class ManyTally:
    """Per file name: what the consumer committed, against what its writer wrote."""

    files: dict[str, Tally] = field(default_factory=dict)
    modes: dict[str, str] = field(default_factory=dict)
    restarts: int = 0
    #: Rows whose text is not ``<name> <seq> ...`` of a file of the scenario.
    garbled: int = 0
    backend: str = ""
    #: Checkpoint keys left in the store at the end (the removed file's is forgotten
    #: once the consumer drops it, at its next save).
    keys: list[str] = field(default_factory=list)
    stderr: str = ""

    def exact(self) -> bool:
        return self.garbled == 0 and all(
            (t.missing, t.duplicates, t.out_of_order) == (0, 0, 0) and t.received == t.written
            for t in self.files.values()
        )

    def summary(self) -> str:
        parts = [f"{self.backend}, {self.restarts} kills"]
        for name, t in sorted(self.files.items()):
            parts.append(
                f"{name} ({self.modes[name]}, {t.rotations} rotations): {t.written:,} written,"
                f" {t.missing:,} missing, {t.duplicates:,} dup, {t.out_of_order:,} disorder"
            )
        if self.garbled:
            parts.append(f"{self.garbled:,} garbled")
        return "; ".join(parts)


class _Committed:
    """Rows committed so far per file name, read without disturbing the consumer, and
    only the rows added since the last look (a long run holds millions).  Rows are never
    deleted, so a committed row's rowid is above every rowid committed before it."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.counts: dict[str, int] = {}
        self.last_rowid = 0

    def __call__(self) -> dict[str, int]:
        if not self.db.exists():
            return dict(self.counts)
        connection = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            rows = connection.execute(
                "SELECT substr(text, 1, instr(text, ' ') - 1), count(*), max(rowid)"
                " FROM lines WHERE rowid > ? GROUP BY 1",
                (self.last_rowid,),
            ).fetchall()
        except sqlite3.OperationalError:  # the table is not made yet
            rows = []
        finally:
            connection.close()
        for name, count, highest in rows:
            self.counts[name] = self.counts.get(name, 0) + count
            self.last_rowid = max(self.last_rowid, highest)
        return dict(self.counts)


def run_many(
    directory: Path, seconds: float, rate: float, seed: int, *, how: str = "also"
) -> ManyTally:
    """Five files under one glob (one per rotation mode, the fifth appearing mid-run and
    one of the first four removed mid-run), a writer and a rotator each; a consumer
    process (``follow_many`` + ``save(also=)``) killed with SIGKILL every 0.2-1.2 s and
    restarted.  Every sequence number of every file must be in the table exactly once,
    in order per file.  ``how="autosave"``: the consumer commits its rows on its own and
    lets ``follow_many`` save (at least once: repeats expected), for comparison."""
    if how not in ("also", "autosave"):
        raise ValueError("how must be 'also' or 'autosave'")
    rng = random.Random(seed)
    logs = directory / "logs"
    logs.mkdir()
    db = directory / "state.db"
    result = ManyTally(backend=rng.choice(("asyncio", "trio")))
    names = [f"f{i}.log" for i in range(5)]
    modes = list(MODES)
    rng.shuffle(modes)
    result.modes = dict(zip(names, [*modes, rng.choice(MODES)], strict=True))
    late, removed = names[4], rng.choice(names[:4])
    command = [sys.executable, "-c", CONSUMER, str(db), str(logs / "*.log"), result.backend, how]
    stderr_path = directory / "consumer.stderr"
    committed = _Committed(db)
    writers: dict[str, Writer] = {}
    rotators: dict[str, Rotator] = {}
    written: dict[str, int] = {}
    rotations: dict[str, int] = {}

    def start() -> subprocess.Popen[bytes]:
        with open(stderr_path, "ab") as err:
            return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)

    def alive(process: subprocess.Popen[bytes]) -> None:
        if process.poll() is not None:
            raise RuntimeError(
                f"the consumer exited by itself ({process.returncode}):"
                f" {stderr_path.read_text(errors='replace')[-2000:]}"
            )

    def wait_until(
        process: subprocess.Popen[bytes],
        done: Callable[[], bool],
        what: str,
        *,
        last_one: bool = False,
    ) -> None:
        """Until ``done()``; past the deadline, an error (the last wait, the catch-up, ends:
        the count says what is missing)."""
        deadline = time.monotonic() + MANY_DEADLINE
        last, quiet_since = committed(), time.monotonic()
        while not done():
            alive(process)
            if time.monotonic() > deadline:
                if last_one:
                    return
                raise RuntimeError(f"seed {seed}: {what} not within {MANY_DEADLINE} s")
            if how == "autosave":  # it may have lost lines: it has given all once quiet
                now = committed()
                if now != last:
                    last, quiet_since = now, time.monotonic()
                elif time.monotonic() - quiet_since > QUIET_SECONDS:
                    return
            time.sleep(0.05)

    def begin(name: str) -> None:
        writers[name] = Writer(logs, rate, name)

    def rotate(name: str) -> None:
        rotators[name] = Rotator(
            logs, result.modes[name], writers[name].pid, rng, name=name, keep=MANY_KEEP
        ).__enter__()

    def finish(name: str) -> None:
        rotator = rotators.pop(name)
        rotator.__exit__(None, None, None)
        rotations[name] = rotator.rotations
        written[name] = writers[name].stop()

    process = start()
    try:
        for name in names[:4]:
            begin(name)
        # Rotated only once the consumer has a checkpoint of the file: a run killed before
        # its first save starts afresh, on whatever file the name is then (any would).
        wait_until(process, lambda: all(committed().get(n) for n in names[:4]), "the first lines")
        for name in names[:4]:
            rotate(name)
        events = [(seconds / 3, "appear"), (2 * seconds / 3, "remove")]
        began = time.monotonic()
        stop_at = began + seconds
        next_kill = time.monotonic() + rng.uniform(0.2, 1.2)
        while True:
            now = time.monotonic()
            if events and now - began >= events[0][0]:
                _, event = events.pop(0)
                if event == "appear":
                    begin(late)
                    wait_until(process, lambda: bool(committed().get(late)), "the new file")
                    rotate(late)
                else:
                    finish(removed)
                    # Removed once all of it is committed: lines removed unread are lost
                    # for any reader that is not running at that moment.
                    wait_until(
                        process,
                        lambda: committed().get(removed, 0) >= written[removed],
                        "the removed file's lines",
                    )
                    (logs / removed).unlink()
            if now >= stop_at and not events and result.restarts:  # killed at least once
                break
            if now >= next_kill:
                alive(process)
                process.kill()
                process.wait()
                result.restarts += 1
                process = start()
                next_kill = time.monotonic() + rng.uniform(0.2, 1.2)
            time.sleep(0.02)
        for name in list(rotators):
            finish(name)
        wait_until(
            process,
            lambda: all(committed().get(n, 0) >= written[n] for n in names),
            "catching up",
            last_one=True,
        )
        process.kill()  # one more kill -9, at whatever it is doing
        process.wait()
    finally:
        for rotator in rotators.values():
            rotator.__exit__(None, None, None)
        for writer in writers.values():
            writer.__exit__(None, None, None)
        if process.returncode is None:
            process.kill()
            process.wait()
    connection = sqlite3.connect(db)
    try:
        texts = [row[0] for row in connection.execute("SELECT text FROM lines ORDER BY rowid")]
        result.keys = [
            os.path.basename(bytes(row[0]).decode("utf-8", "surrogatepass"))
            for row in connection.execute("SELECT key FROM checkpoints ORDER BY key")
        ]
    finally:
        connection.close()
    per_file: dict[str, list[int]] = {name: [] for name in names}
    for text in texts:
        fields = text.split(" ", 2)
        if len(fields) >= 2 and fields[0] in per_file and fields[1].isdigit():
            per_file[fields[0]].append(int(fields[1]))
        else:
            result.garbled += 1
    for name in names:
        result.files[name] = tally(per_file[name], written[name])
        result.files[name].rotations = rotations[name]
    result.stderr = stderr_path.read_text(errors="replace")
    return result
