"""Start-up time of ``import utf8stream`` and of the command line, above ``python -c pass``.

    .venv/bin/python benchmarks/bench_startup.py [--rounds N] [--src DIR ...]
        [--cases pass,import,version,...] [--importtime CASE [--top N]]

Each case is a fresh interpreter (the one running this script) started with
``PYTHONPATH`` set to a source tree (``--src``, repeatable, for an A/B of two trees;
default: this checkout's ``src``):

* ``pass``: ``python -c pass``, the floor every case is measured against;
* ``import``: ``python -c "import utf8stream"``;
* ``version``: ``python -m utf8stream --version``;
* ``script``: the ``utf8stream`` console script next to the interpreter (``--version``),
  run by the same interpreter;
* ``validate``: ``python -m utf8stream validate`` of a one-line file;
* ``tail``: ``python -m utf8stream tail -n 1`` of the same file.

The rounds interleave every case and every tree in a shuffled order, so that a load that
comes and goes hits them alike; the bytecode of each tree is compiled first.  Prints JSON:
per tree and case the median and minimum wall time in milliseconds, and both minus those
of ``pass`` (``above_pass_*``).  Only ratios and differences measured in one run mean
anything on a shared machine.

``--importtime CASE`` runs that case once under ``-X importtime`` instead and prints the
modules with the largest cumulative and self import times (the culprits), as JSON.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_DEFAULT_SRC = _HERE.parent / "src"
_CASES = ("pass", "import", "version", "script", "validate", "tail")


def _command(case: str, small: str) -> list[str]:
    python = sys.executable
    if case == "pass":
        return [python, "-c", "pass"]
    if case == "import":
        return [python, "-c", "import utf8stream"]
    if case == "version":
        return [python, "-m", "utf8stream", "--version"]
    if case == "script":
        script = Path(python).with_name("utf8stream")
        if not script.exists():
            raise SystemExit(f"bench_startup: no console script at {script}")
        return [python, str(script), "--version"]
    if case == "validate":
        return [python, "-m", "utf8stream", "validate", small]
    if case == "tail":
        return [python, "-m", "utf8stream", "tail", "-n", "1", small]
    raise SystemExit(f"bench_startup: unknown case {case!r} (one of {', '.join(_CASES)})")


def _environment(src: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run_once(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_startup: {command} failed: {done.stderr.decode()}")
    return elapsed * 1000


def _summary(times: list[float], floor: list[float]) -> dict[str, float]:
    median, low = statistics.median(times), min(times)
    return {
        "median_ms": round(median, 2),
        "min_ms": round(low, 2),
        "above_pass_median_ms": round(median - statistics.median(floor), 2),
        "above_pass_min_ms": round(low - min(floor), 2),
    }


def measure(sources: list[Path], cases: list[str], rounds: int, small: str) -> dict[str, Any]:
    """Every case of every tree, ``rounds`` times, interleaved in a shuffled order."""
    for src in sources:
        compileall.compile_dir(str(src), quiet=1)
    jobs: list[tuple[str, Path | None]] = [("pass", None)]
    jobs += [(case, src) for src in sources for case in cases if case != "pass"]
    times: dict[tuple[str, Path | None], list[float]] = {job: [] for job in jobs}
    shuffle = random.Random(0).shuffle
    for job in jobs:  # a warm-up round: the page cache, the bytecode
        _run_once(_command(job[0], small), _environment(job[1] or sources[0]))
    for _ in range(rounds):
        order = list(jobs)
        shuffle(order)
        for case, tree in order:
            times[case, tree].append(
                _run_once(_command(case, small), _environment(tree or sources[0]))
            )
    floor = times["pass", None]
    return {
        "python": sys.version.split()[0],
        "rounds": rounds,
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "pass": _summary(floor, floor),
        "trees": {
            str(src): {case: _summary(times[case, src], floor) for case in cases if case != "pass"}
            for src in sources
        },
    }


def importtime(src: Path, case: str, small: str, top: int) -> dict[str, Any]:
    """The modules that take the longest to import in one run of ``case``."""
    command = _command(case, small)
    command.insert(1, "-X")
    command.insert(2, "importtime")
    done = subprocess.run(command, env=_environment(src), capture_output=True, text=True)
    rows: list[dict[str, Any]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        row = {"module": name.strip(), "self_us": int(own), "cumulative_us": int(cumulative)}
        rows.append(row)
    return {
        "case": case,
        "src": str(src),
        "modules": len(rows),
        "top_cumulative": sorted(rows, key=lambda row: -row["cumulative_us"])[:top],
        "top_self": sorted(rows, key=lambda row: -row["self_us"])[:top],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40, help="runs of each case (default 40)")
    parser.add_argument(
        "--src",
        type=Path,
        action="append",
        help="a source tree to put on PYTHONPATH (repeat for an A/B); default: this checkout",
    )
    parser.add_argument(
        "--cases",
        default="import,version,script,validate,tail",
        help=f"comma-separated, from {', '.join(_CASES)} (pass is always run)",
    )
    parser.add_argument(
        "--importtime", metavar="CASE", help="list the slowest imports of one case instead"
    )
    parser.add_argument("--top", type=int, default=15, help="rows for --importtime")
    args = parser.parse_args()
    sources = [src.resolve() for src in args.src or [_DEFAULT_SRC]]
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "small.txt")
        Path(small).write_bytes("one line, caf\u00e9\n".encode())
        if args.importtime:
            result = importtime(sources[0], args.importtime, small, args.top)
        else:
            cases = [case.strip() for case in args.cases.split(",") if case.strip()]
            for case in cases:
                _command(case, small)  # unknown names fail before any run
            result = measure(sources, cases, args.rounds, small)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
