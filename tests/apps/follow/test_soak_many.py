"""Soak of many files with the checkpoint store: every line exactly once across kill -9.

The scenario (tests/_soak.py, ``run_many``): five logs under one glob, each with its own
writer of numbered lines and its own rotation mode (create, copytruncate, compress +
delaycompress, dateext; logrotate is not needed and not used), the fifth appearing
mid-run and one of the first four removed mid-run once read; a consumer *process* runs
``follow_many(pattern, store=db, autosave=False)`` and writes each batch of lines into a
table of the store's database with ``save(also=...)``: rows and checkpoints in one
transaction.  It is killed with SIGKILL every 0.3-2 s and restarted.  At the end the
table must hold every sequence number of every file exactly once, in order per file: no
window of repeats, no loss.

Short by default; ``UTF8STREAM_SOAK_SECONDS=300`` makes a long run.  In the soak step
(``pytest -m soak``).  Under CI the seed
is fixed; elsewhere it is new on each run, and ``UTF8STREAM_SOAK_SEED`` replays one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _soak import MANY_RATE, run_many
from test_soak import soak_seed

SECONDS = max(3.0, float(os.environ.get("UTF8STREAM_SOAK_SECONDS", "3")))


# The run, then its waits (each bounded by MANY_DEADLINE): a long run is not cut short by
# the suite's timeout.
@pytest.mark.soak
@pytest.mark.timeout(SECONDS + 600)
def test_many_files_consumer_killed_writes_every_line_exactly_once(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    seed = soak_seed("many")
    result = run_many(tmp_path, SECONDS, MANY_RATE, seed)
    summary = result.summary()
    record_property("soak", summary)
    print(summary)
    assert result.restarts >= 1, f"seed {seed}: never killed: {summary}"
    assert sum(t.rotations for t in result.files.values()) >= 5, f"seed {seed}: {summary}"
    for name, counted in result.files.items():
        assert counted.written > 0, f"seed {seed}: {name} never written: {summary}"
    assert result.exact(), f"UTF8STREAM_SOAK_SEED={seed}: {summary}"
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
