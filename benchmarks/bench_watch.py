"""What 1,000 idle followed files cost: the kernel watcher against polling every 0.25 s.

    .venv/bin/python benchmarks/bench_watch.py [--files N] [--directories D] [--seconds S]
        [--backend asyncio|trio] [--follow-many] [--json]

N quiet files spread over D directories are watched for S seconds by
``apps._watch.Watcher``, once woken by the kernel (with its safety-net rescan every 5 s)
and once polling every 0.25 s.  Each prints the process CPU time used (every thread,
the notifier's included) as a share of one core (the target: under 1 %).  Then one
file is written and the time until the watcher reports it is printed.

``--follow-many``: the same files followed through ``follow_many`` (one pattern per
directory, one watcher for all, every file open and at its end): the CPU share while
they stay quiet, then the time until a line written to one of them is handed out.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio

from utf8stream.apps._watch import Watcher
from utf8stream.apps.many import follow_many

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report


async def idle_cost(files: list[Path], seconds: float, force_polling: bool) -> None:
    async with Watcher(files, poll_interval=0.25, force_polling=force_polling) as watcher:
        wall, cpu = time.perf_counter(), time.process_time()
        woken = 0
        while time.perf_counter() - wall < seconds:
            woken += bool(await watcher.wait(1.0))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        start = time.perf_counter()
        with files[len(files) // 2].open("a") as f:
            f.write("a line\n")
        changed = await watcher.wait(5.0)
        latency = time.perf_counter() - start
    print(
        f"{watcher.mode:>8}: {cpu:6.3f} s CPU in {wall:5.1f} s = {100 * cpu / wall:5.2f} % of a"
        f" core; spurious wake-ups {woken}; a write reported after {1000 * latency:6.1f} ms"
        f" ({len(changed)} path)"
    )
    _report.record(
        "idle-files",
        through="Watcher",
        mode=watcher.mode,
        files=len(files),
        core_percent=100 * cpu / wall,
        latency_s=latency,
        target=1.0,
    )


async def follow_many_idle_cost(
    patterns: list[str], files: list[Path], seconds: float, force_polling: bool
) -> None:
    async with follow_many(patterns, force_polling=force_polling) as lines:
        # Each file's first look (a read, a stat) is over after a moment: then measure.
        with anyio.move_on_after(2):
            line = await lines.__anext__()
            raise AssertionError(f"a quiet file gave {line!r}")
        followed = len(lines.paths)
        wall, cpu = time.perf_counter(), time.process_time()
        with anyio.move_on_after(seconds):
            line = await lines.__anext__()
            raise AssertionError(f"a quiet file gave {line!r}")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        start = time.perf_counter()
        with files[len(files) // 2].open("a") as f:
            f.write("a line\n")
        with anyio.fail_after(5):
            line = await lines.__anext__()
        latency = time.perf_counter() - start
        mode = "polling" if force_polling else "kernel"
    print(
        f"follow_many ({mode:>7}, {followed} files): {cpu:6.3f} s CPU in {wall:5.1f}"
        f" s = {100 * cpu / wall:5.2f} % of a core; a line handed out after"
        f" {1000 * latency:6.1f} ms ({line.text!r})"
    )
    _report.record(
        "idle-files",
        through="follow_many",
        mode=mode,
        files=followed,
        core_percent=100 * cpu / wall,
        latency_s=latency,
        target=1.0,
    )


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as work:
        files = []
        for n in range(args.files):
            directory = Path(work) / f"d{n % args.directories}"
            directory.mkdir(exist_ok=True)
            files.append(directory / f"app{n}.log")
            files[-1].write_text("first line\n")
        print(f"{args.files} idle files in {args.directories} directories, {args.seconds} s each")
        if args.follow_many:
            patterns = [str(Path(work) / f"d{d}" / "*.log") for d in range(args.directories)]
            await follow_many_idle_cost(patterns, files, args.seconds, force_polling=False)
            await follow_many_idle_cost(patterns, files, args.seconds, force_polling=True)
            return
        await idle_cost(files, args.seconds, force_polling=False)
        await idle_cost(files, args.seconds, force_polling=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--directories", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--follow-many", action="store_true", help="through follow_many")
    _report.add_option(parser)
    arguments = parser.parse_args()
    with _report.reporting(arguments.json):
        anyio.run(main, arguments, backend=arguments.backend)
