"""Lines lost and repeated by followers of a log under rotation (docs/benchmarks.md).

    .venv/bin/python benchmarks/soak_follow.py [--seconds S] [--rate LINES] [--seed N]
        [--modes create,copytruncate,compress,dateext] [--json]

The scenario of tests/apps/follow/test_soak.py (tests/_soak.py): a writer appends numbered lines at
--rate lines/s while the log is rotated every 0.3-0.9 s in each mode, for --seconds per
mode and follower.  Followers: `follow()` in-process; the `utf8stream tail -F
--checkpoint` CLI left running; the same CLI killed with SIGKILL every 0.2-1.5 s and
restarted from its checkpoint; GNU `tail -F -n +1` (by name, inotify).  Each cell says
how many of the lines written the follower never gave (missing) and how many it gave
more than once (dup); "disorder" and "garbled" appear when there are any.

    .venv/bin/python benchmarks/soak_follow.py --many [--seconds S] [--rate LINES] [--seed N]

The many-file scenario of tests/apps/follow/test_soak_many.py instead (``run_many``): five
logs under one glob, one per rotation mode (one appearing mid-run, one removed), --rate
lines/s each (default 2,000), and a consumer process running `follow_many(store=...)` that
writes the lines into a table of the store's database, killed with SIGKILL every 0.2-1.2 s
and restarted; two consumers: `save(also=)` (rows and checkpoints in one transaction) and,
for comparison, autosave with the rows committed apart (neither exactly nor at least
once).
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import _report
from _soak import (
    MANY_RATE,
    MODES,
    RATE,
    ManyTally,
    Tally,
    rotator_tool,
    run_cli,
    run_follow,
    run_gnu_tail,
    run_many,
)

Runner = Callable[[Path, str, float, float, int], Tally]


def _cli_running(directory: Path, mode: str, seconds: float, rate: float, seed: int) -> Tally:
    return run_cli(directory, mode, seconds, rate, seed, kill=False)


FOLLOWERS: dict[str, Runner] = {
    "`follow()`": run_follow,
    "`tail -F` CLI": _cli_running,
    "CLI killed and restarted": run_cli,
    "GNU `tail -F`": run_gnu_tail,
}


def cell(result: Tally) -> str:
    parts = [f"{result.missing:,} missing"]
    if result.duplicates:
        parts.append(f"{result.duplicates:,} dup")
    if result.out_of_order:
        parts.append(f"{result.out_of_order:,} disorder")
    if result.garbled:
        parts.append(f"{result.garbled:,} garbled")
    if result.torn:
        parts.append(f"{result.torn:,} torn by a kill")
    if result.restarts:
        parts.append(f"{result.restarts} kills, at most {result.worst_repeat:,} repeated by one")
    if result.window_exceeded:
        parts.append(f"{result.window_exceeded} kills repeated more than one write")
    return ", ".join(parts)


def many_cells(result: ManyTally) -> list[str]:
    cells = []
    for name, counted in sorted(result.files.items()):
        cells.append(
            f"{name} {result.modes[name]} ({counted.rotations} rot.): {counted.written:,}"
            f" written, {cell(counted)}"
        )
    if result.garbled:
        cells.append(f"{result.garbled:,} garbled")
    return cells


#: The comparison: rows committed per batch in a transaction of their own, checkpoints saved
#: by follow_many's autosave.  A kill repeats the rows committed since the last save and
#: loses the lines an autosave recorded before their batch was committed.
AUTOSAVE = "autosave, rows committed apart"


def main_many(seconds: float, rate: float, seed: int) -> None:
    print(f"seed {seed}, {seconds:g} s, {rate:,.0f} lines/s per file, rotated by {rotator_tool()}")
    for how, label in (("also", "`save(also=)`"), ("autosave", AUTOSAVE)):
        with tempfile.TemporaryDirectory() as tmp:
            result = run_many(Path(tmp), seconds, rate, seed, how=how)
        verdict = "exactly once" if result.exact() else "NOT exactly once"
        print(f"{label}: {verdict}, {result.backend}, {result.restarts} kills", flush=True)
        for line in many_cells(result):
            print(f"  {line}", flush=True)
        for name, counted in sorted(result.files.items()):
            _report.record(
                "soak-many",
                consumer=label,
                file=name,
                mode=result.modes[name],
                kills=result.restarts,
                written=counted.written,
                missing=counted.missing,
                duplicates=counted.duplicates,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per mode and follower")
    parser.add_argument("--rate", type=float, default=None, help="lines per second")
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(2**32))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--many", action="store_true", help="the many-file soak instead")
    _report.add_option(parser)
    args = parser.parse_args()
    with _report.reporting(args.json):
        run(args)


def run(args: argparse.Namespace) -> None:
    if args.many:
        main_many(args.seconds, MANY_RATE if args.rate is None else args.rate, args.seed)
        return
    if args.rate is None:
        args.rate = RATE
    modes = args.modes.split(",")
    if shutil.which("tail") is None:
        del FOLLOWERS["GNU `tail -F`"]
    print(
        f"seed {args.seed}, {args.seconds:g} s per cell, {args.rate:,.0f} lines/s,"
        f" rotated by {rotator_tool()}"
    )
    print("| mode | " + " | ".join(FOLLOWERS) + " |")
    print("|---" * (len(FOLLOWERS) + 1) + "|")
    for mode in modes:
        cells = []
        rotations = 0
        for follower, runner in FOLLOWERS.items():
            with tempfile.TemporaryDirectory() as tmp:
                result = runner(Path(tmp), mode, args.seconds, args.rate, args.seed)
            rotations = max(rotations, result.rotations)
            cells.append(cell(result))
            _report.record(
                "soak",
                mode=mode,
                follower=follower,
                rotations=result.rotations,
                kills=result.restarts,
                missing=result.missing,
                duplicates=result.duplicates,
            )
        print(f"| {mode} (~{rotations} rotations) | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    # Stopped by SIGTERM (``timeout``, a CI job's end), the with-blocks still end the
    # writers, rotators and followers this started: the default would leave them running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    main()
