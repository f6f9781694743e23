"""`utf8stream transcode` against iconv, and `follow` against a writer at full speed.

    .venv/bin/python benchmarks/bench_files.py [--size MiB] [--repeat N] [--follow-seconds S]
        [--only transcode|follow]

Transcoding: the same file through `iconv` and `utf8stream transcode` (both as commands,
so both pay their start-up), side by side: UTF-8 -> UTF-16LE of the mixed corpus, and
UTF-8 -> UTF-8 repair of the corrupted corpus (iconv -c drops what it cannot convert;
utf8stream replaces each malformed unit with U+FFFD).  Ratio = iconv time / our time
(higher is better; targets: >= 0.7 with one worker, >= 1.2 with two).

Following: a writer process appends log lines as fast as it can for a few seconds while
`follow()` reads them (`async for`); it reports the writer's rate, how far behind the
reader ended, and the reader's memory early and at the end.  Then `follow()` reads the
finished file alone, to show how much faster than the writer it can go.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anyio
from _corpora import build_corpora

from utf8stream import follow

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], stdout: Path | None = None) -> float:
    start = time.perf_counter()
    if stdout is None:
        subprocess.run(cmd, check=True)
    else:
        with open(stdout, "wb") as out:
            # iconv -c exits 1 when it dropped something: that is expected here.
            subprocess.run(cmd, stdout=out, check=False)
    return time.perf_counter() - start


def best(cmd: list[str], repeat: int, stdout: Path | None = None) -> float:
    return min(timed(cmd, stdout) for _ in range(repeat))


def bench_transcode(size_mib: int, repeat: int, work: Path) -> None:
    iconv = shutil.which("iconv")
    corpora = build_corpora(8 * 1024 * 1024)
    files = {}
    for name in ("mixed", "corrupted"):
        path = work / f"{name}.txt"
        with open(path, "wb") as f:
            for _ in range(size_mib // 8):
                f.write(corpora[name])
        files[name] = path
    ours = [sys.executable, "-m", "utf8stream", "transcode"]
    cases = [
        (
            "UTF-8 -> UTF-16LE, mixed",
            files["mixed"],
            ["-f", "UTF-8", "-t", "UTF-16LE"],
            ["-t", "utf-16-le"],
        ),
        (
            "UTF-8 -> UTF-8 repair, corrupted",
            files["corrupted"],
            ["-c", "-f", "UTF-8", "-t", "UTF-8"],
            ["-t", "utf-8"],
        ),
    ]
    print(f"transcoding {size_mib} MiB files, best of {repeat}")
    print(f"{'case':34} {'iconv s':>8} {'ours -j1':>9} {'ratio':>6} {'ours -j2':>9} {'ratio':>6}")
    for label, path, iconv_args, our_args in cases:
        out = work / "out"
        peer = best([iconv, *iconv_args, str(path)], repeat, stdout=out) if iconv else float("nan")
        one = best([*ours, *our_args, str(path), str(out)], repeat)
        two = best([*ours, *our_args, "-j", "2", str(path), str(out)], repeat)
        print(f"{label:34} {peer:8.2f} {one:9.2f} {peer / one:6.2f} {two:9.2f} {peer / two:6.2f}")


WRITER = """
import sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
n = 0
end = time.monotonic() + seconds
with open(path, "a", encoding="utf-8") as f:  # one write per line, as a logger does
    while time.monotonic() < end:
        for _ in range(100):
            f.write(f"2026-11-22T00:00:00Z INFO worker-7 request {n} served — žluťoučký 🐴\\n")
            n += 1
print(n)
"""


def bench_follow(seconds: float, work: Path) -> None:
    path = work / "app.log"
    path.write_bytes(b"")

    async def run() -> tuple[int, int, float, float]:
        received = 0
        rss_early = 0.0
        writer = await anyio.open_process([sys.executable, "-c", WRITER, str(path), str(seconds)])
        start = time.perf_counter()
        async with follow(path, start="beginning", poll_interval=0.01) as lines:
            written = -1
            async with writer, anyio.create_task_group() as tg:

                async def wait_writer() -> None:
                    nonlocal written
                    assert writer.stdout is not None
                    out = b""
                    async for chunk in writer.stdout:
                        out += chunk
                    await writer.wait()
                    written = int(out)
                    if received >= written:
                        tg.cancel_scope.cancel()

                tg.start_soon(wait_writer)
                async for _line in lines:
                    received += 1
                    if received == 1_000_000:
                        rss_early = current_rss()
                    if received == written:
                        tg.cancel_scope.cancel()
                        break
            elapsed = time.perf_counter() - start
        return written, received, elapsed, rss_early

    written, received, elapsed, rss_early = anyio.run(run)
    rss_end = current_rss()
    size = path.stat().st_size / 2**20
    print(
        f"follow: writer appended {written:,} lines ({size:.0f} MiB) in {seconds:.1f} s "
        f"({written / seconds:,.0f} lines/s); the reader had all {received:,} of them "
        f"{elapsed - seconds:+.2f} s after the writer stopped; reader RSS "
        f"{rss_early:.0f} MiB after 1,000,000 lines, {rss_end:.0f} MiB at the end"
    )

    async def catch_up() -> tuple[int, float]:
        count = 0
        start = time.perf_counter()
        async with follow(path, start="beginning", until_eof=True) as lines:
            async for _line in lines:
                count += 1
        return count, time.perf_counter() - start

    for backend in ("asyncio", "trio"):
        count, took = anyio.run(catch_up, backend=backend)
        print(
            f"follow alone over the finished file ({backend}): {count:,} lines in {took:.2f} s "
            f"({count / took:,.0f} lines/s, {count / took / (written / seconds):.2f}x the writer)"
        )


def current_rss() -> float:
    """This process's resident memory now, in MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="MiB per file (default 256)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--follow-seconds", type=float, default=5.0)
    parser.add_argument("--only", choices=("transcode", "follow"), help="run one of the two parts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        work = Path(tmp)
        if args.only != "follow":
            bench_transcode(args.size, args.repeat, work)
        if args.only != "transcode":
            bench_follow(args.follow_seconds, work)


if __name__ == "__main__":
    main()
