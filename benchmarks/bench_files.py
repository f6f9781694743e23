"""`utf8stream transcode` against iconv, and `follow` against a writer at full speed.

    .venv/bin/python benchmarks/bench_files.py [--size MiB] [--repeat N] [--follow-seconds S]

Transcoding: the same file through `iconv` and `utf8stream transcode` (both as commands,
so both pay their start-up), side by side: UTF-8 -> UTF-16LE of the mixed corpus, and
UTF-8 -> UTF-8 repair of the corrupted corpus (iconv -c drops what it cannot convert;
utf8stream replaces each malformed unit with U+FFFD).  Ratio = iconv time / our time
(higher is better; targets: >= 0.7 with one worker, >= 1.2 with two).

Following: a writer process appends log lines as fast as it can for a few seconds while
`follow()` reads them; it reports both rates, how far behind the reader ended, and the
reader's peak memory.
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

    async def run() -> tuple[int, int, float]:
        received = 0
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

                tg.start_soon(wait_writer)
                while written < 0 or received < written:
                    await lines.__anext__()
                    received += 1
            elapsed = time.perf_counter() - start
        return written, received, elapsed

    written, received, elapsed = anyio.run(run)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = path.stat().st_size / 2**20
    print(
        f"follow: writer appended {written} lines ({size:.0f} MiB) in {seconds:.1f} s; the reader "
        f"had all {received} of them {elapsed - seconds:+.2f} s after the writer stopped "
        f"({received / elapsed:,.0f} lines/s); reader peak RSS {peak:.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="MiB per file (default 256)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--follow-seconds", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        work = Path(tmp)
        bench_transcode(args.size, args.repeat, work)
        bench_follow(args.follow_seconds, work)


if __name__ == "__main__":
    main()
