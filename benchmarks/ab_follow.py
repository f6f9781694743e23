"""follow() of several source trees timed against each other and ``open()`` in one process.

    .venv/bin/python benchmarks/ab_follow.py [SRC ...] [--mib M] [--rounds N]
        [--backends B ...] [--feed KIB] [--json]

A before/after timing of a change to the follower (bench_files.py's follow-speed: a
finished file of 80-byte lines, ``follow()`` against ``for line in open()``) for a
machine whose speed swings between processes (separate runs of bench_files.py compare
processes as much as code).  Each ``SRC``
(a checkout's ``src``, default this checkout's; e.g. ``/work/main/src src``) has its
``utf8stream`` package, C accelerator included, copied under a name of its own
(``tree0``, ``tree1``, ...) and imported side by side; every round then times
``open()`` and each tree's ``follow()`` on each backend, in an order reversed every other
round.  Printed per side: the best and the median time, ``open()``'s best over its best,
and the median of the rounds' own ratios to ``open()`` (a round's sides run moments
apart: the steadier figure).  The lines are counted, not checked; bench_files.py checks
that both sides give the same lines.  ``--feed`` sets the trees' feed size (KiB):
``ReadPolicy(feed_size=)`` where a tree has it, else its module's ``FEED_SIZE``.
Two copies of the same tree are the check of the method: their ratios should agree.
"""

from __future__ import annotations

import argparse
import importlib
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report

HERE = Path(__file__).resolve().parent
LINE_80 = b"2026-11-22T00:00:00.000Z INFO worker-7 GET /api/v1/items/42 200".ljust(79) + b"\n"


def load_trees(sources: list[Path], into: Path) -> list[tuple[str, ModuleType]]:
    """Each source tree's ``utf8stream.apps.follow``, imported from a copy of its
    package named ``tree<k>`` (its imports are relative, its accelerator a copy too)."""
    sys.path.insert(0, str(into))
    modules = []
    for k, src in enumerate(sources):
        package = src / "utf8stream"
        follower = package / "apps" / "follow"
        if not (follower.with_suffix(".py").exists() or follower.is_dir()):
            raise SystemExit(f"{src}: no utf8stream package with a follower")
        name = f"tree{k}"
        shutil.copytree(package, into / name, ignore=shutil.ignore_patterns("__pycache__"))
        modules.append((name, importlib.import_module(f"{name}.apps.follow")))
    return modules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="*", type=Path, help="checkouts' src directories")
    parser.add_argument("--mib", type=int, default=100, help="file size, MiB (default 100)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--backends", nargs="+", default=["asyncio", "trio"], choices=["asyncio", "trio"]
    )
    parser.add_argument("--feed", type=int, help="the trees' feed size, KiB")
    _report.add_option(parser)
    args = parser.parse_args()
    with _report.reporting(args.json):
        compare(args)


def compare(args: argparse.Namespace) -> None:
    sources = args.sources or [HERE.parent / "src"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path = work / "finished.log"
        lines = args.mib * 2**20 // len(LINE_80)
        path.write_bytes(LINE_80 * lines)
        trees = load_trees(sources, work / "trees")
        options: dict[str, dict[str, Any]] = {name: {} for name, _ in trees}
        for name, module in trees:
            if args.feed:
                policy = getattr(importlib.import_module(f"{name}.follower"), "ReadPolicy", None)
                if policy is not None:
                    options[name]["reading"] = policy(feed_size=args.feed << 10)
                    continue
                # A tree before ReadPolicy: its follower's modules hold FEED_SIZE.
                assert module.follow is not None
                for held_name, held in list(sys.modules.items()):
                    if held_name.startswith(f"{name}.apps.follow") and hasattr(held, "FEED_SIZE"):
                        setattr(held, "FEED_SIZE", args.feed << 10)  # noqa: B010

        def time_open() -> float:
            start, count = time.perf_counter(), 0
            with open(path, encoding="utf-8") as f:
                for _line in f:
                    count += 1
            took = time.perf_counter() - start
            assert count == lines
            return took

        def timer(module: ModuleType, backend: str, tuned: dict[str, Any]) -> Callable[[], float]:
            async def count() -> int:
                n = 0
                follower = module.follow(path, start="beginning", until_eof=True, **tuned)
                async with follower as it:
                    async for _line in it:
                        n += 1
                return n

            def run() -> float:
                start = time.perf_counter()
                n = anyio.run(count, backend=backend)
                took = time.perf_counter() - start
                assert n == lines
                return took

            return run

        cases: dict[str, Callable[[], float]] = {"open()": time_open}
        for name, module in trees:
            for backend in args.backends:
                cases[f"{name} {backend}"] = timer(module, backend, options[name])
        for k, (name, _) in enumerate(trees):
            print(f"{name}: {sources[k]}")
        times: dict[str, list[float]] = {name: [] for name in cases}
        for r in range(args.rounds):
            order = list(cases.items())
            if r % 2:
                order.reverse()
            for name, case in order:
                times[name].append(case())
        reference = times["open()"]
        print(f"{lines:,} lines of 80 bytes ({args.mib} MiB), {args.rounds} interleaved rounds")
        for name, taken in times.items():
            ratios = [o / t for o, t in zip(reference, taken, strict=True)]
            print(
                f"  {name:16} best {min(taken):7.4f} s  median {statistics.median(taken):7.4f} s"
                f"  open()/this best {min(reference) / min(taken):5.3f}"
                f"  median of ratios {statistics.median(ratios):5.3f}"
                f"  worst {min(ratios) if ratios else math.nan:5.3f}"
            )
            _report.record(
                "ab-follow",
                side=name,
                peer="open()",
                best_s=min(taken),
                median_s=statistics.median(taken),
                ratio=statistics.median(ratios),
                best_ratio=min(reference) / min(taken),
            )


if __name__ == "__main__":
    main()
