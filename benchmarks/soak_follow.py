"""Lines lost and repeated by followers of a log under rotation: the README's table.

    .venv/bin/python benchmarks/soak_follow.py [--seconds S] [--rate LINES] [--seed N]
        [--modes create,copytruncate,compress,dateext]

The scenario of tests/test_soak.py (tests/_soak.py): a writer appends numbered lines at
--rate lines/s while the log is rotated every 0.3-0.9 s in each mode, for --seconds per
mode and follower.  Followers: `follow()` in-process; the `utf8stream tail -F
--checkpoint` CLI left running; the same CLI killed with SIGKILL every 0.2-1.5 s and
restarted from its checkpoint; GNU `tail -F -n +1` (by name, inotify).  Each cell says
how many of the lines written the follower never gave (missing) and how many it gave
more than once (dup); "disorder" and "garbled" appear when there are any.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _soak import MODES, RATE, Tally, run_cli, run_follow, run_gnu_tail

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per mode and follower")
    parser.add_argument("--rate", type=float, default=RATE, help="lines per second")
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(2**32))
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    modes = args.modes.split(",")
    if shutil.which("tail") is None:
        del FOLLOWERS["GNU `tail -F`"]
    print(f"seed {args.seed}, {args.seconds:g} s per cell, {args.rate:,.0f} lines/s")
    print("| mode | " + " | ".join(FOLLOWERS) + " |")
    print("|---" * (len(FOLLOWERS) + 1) + "|")
    for mode in modes:
        cells = []
        rotations = 0
        for runner in FOLLOWERS.values():
            with tempfile.TemporaryDirectory() as tmp:
                result = runner(Path(tmp), mode, args.seconds, args.rate, args.seed)
            rotations = max(rotations, result.rotations)
            cells.append(cell(result))
        print(f"| {mode} (~{rotations} rotations) | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
