"""Soak: a writer of numbered lines, a rotator, and a follower that must give every line.

The scenario (tests/_soak.py): a writer process appends ``app.log <seq> <padding>`` lines
at 15,000 lines/s while the log is rotated every 0.3-0.9 s (create, copytruncate,
compress + delaycompress, dateext, as logrotate does them).  ``follow()`` must give every
sequence number exactly once and in order; so must the ``tail -F --checkpoint`` CLI
appending to a file, killed with SIGKILL at random moments and restarted from its
checkpoint (a line a kill cut in half is completed by the restart).

Short by default (a few seconds per scenario); ``UTF8STREAM_SOAK_SECONDS=300`` makes a
long run.  In the soak step (``pytest -m soak``; .ci/run runs it after the default run).
Under CI the rotation times and kills are the same on every run (fixed seeds); elsewhere
they are random, and ``UTF8STREAM_SOAK_SEED`` replays the seed a failure names.
"""

from __future__ import annotations

import os
import random
import zlib
from pathlib import Path

import pytest
from _soak import MODES, RATE, run_cli, run_follow, scenario_seconds

SECONDS = float(os.environ.get("UTF8STREAM_SOAK_SECONDS", "2"))
# The run, then the catch-up (bounded by CATCH_UP_SECONDS and QUIET_SECONDS): a long run is
# not cut short by the suite's timeout.
pytestmark = [pytest.mark.soak, pytest.mark.timeout(SECONDS + 300)]
#: Every mode.  The killed CLI's two risks have their own tests too: a rotation compressed
#: before the follower reached it (test_follow_compressed_chain.py) and the lines repeated
#: after a kill (test_cli_tail_kill_repeats.py).
CLI_MODES = MODES


def soak_seed(mode: str) -> int:
    """The same seed per mode under CI, a chosen one, or a new one on each local run."""
    if "UTF8STREAM_SOAK_SEED" in os.environ:
        return int(os.environ["UTF8STREAM_SOAK_SEED"])
    if "CI" in os.environ or os.environ.get("HYPOTHESIS_PROFILE") == "ci":
        return zlib.crc32(mode.encode())
    return random.SystemRandom().randrange(2**32)


@pytest.mark.parametrize("mode", MODES)
def test_follow_gives_every_line_once_and_in_order(
    tmp_path: Path, mode: str, record_property: pytest.RecordProperty
) -> None:
    seed = soak_seed(mode)
    seconds = scenario_seconds(mode, SECONDS)
    result = run_follow(tmp_path, mode, seconds, RATE, seed)
    record_property("soak", str(result))  # a string: pytest-xdist sends it between processes
    assert result.rotations >= 2, f"seed {seed}: the scenario hardly rotated: {result}"
    assert result.written > RATE * seconds / 2, f"seed {seed}: the writer stalled: {result}"
    counts = (result.missing, result.duplicates, result.out_of_order, result.garbled)
    assert counts == (0, 0, 0, 0), f"UTF8STREAM_SOAK_SEED={seed}: {result}"
    assert result.received == result.written


@pytest.mark.parametrize("mode", CLI_MODES)
def test_cli_killed_and_restarted_loses_no_line(
    tmp_path: Path, mode: str, record_property: pytest.RecordProperty
) -> None:
    seed = soak_seed(mode)
    result = run_cli(tmp_path, mode, scenario_seconds(mode, SECONDS), RATE, seed)
    record_property("soak", str(result))  # a string: pytest-xdist sends it between processes
    print(f"{mode}: {result}")
    assert result.restarts >= 1 and result.rotations >= 2, f"seed {seed}: {result}"
    counts = (result.missing, result.duplicates, result.out_of_order, result.garbled)
    assert counts == (0, 0, 0, 0), f"UTF8STREAM_SOAK_SEED={seed}: {result}"
    assert "Traceback" not in result.stderr, result.stderr
