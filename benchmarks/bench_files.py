"""`utf8stream transcode` against iconv, and `follow` against a writer at full speed.

    .venv/bin/python benchmarks/bench_files.py [--size MiB] [--repeat N] [--follow-seconds S]
        [--only transcode|follow|follow-speed] [--cases WORD ...] [--follow-mib MiB]
        [--rates MB/s,...] [--json]

Transcoding: the same file through a peer and `utf8stream transcode` (all as commands, so
all pay their start-up), doing the same work: UTF-8 -> UTF-16LE of the mixed corpus
against iconv, and of the corrupted corpus with the malformed bytes dropped (iconv -c,
ours with --errors ignore: iconv cannot write U+FFFD for them); UTF-16LE -> UTF-8 of the
mixed corpus; the corrupted corpus repaired by dropping the malformed bytes (UTF-8 ->
UTF-8, iconv -c against --errors ignore) and repaired with U+FFFD (iconv cannot: the
peer is CPython's incremental decoder with errors="replace" in a 64 KiB streaming loop);
last, the fixed cost of each side (start-up and exit, the input a file of 4 bytes).
``--cases`` keeps the cases whose label holds one of its words.
Outputs go to a directory in RAM (/dev/shm; said loudly when there is none), are compared
byte for byte before anything is timed, and the rounds are interleaved (peer, ours -j1,
ours -j2).
Ratio = peer time / our time, median of the rounds (higher is better).  Then the CPU seconds
(user + system) of each side, per MB of input, and the cores each of ours kept busy (CPU
seconds / wall seconds): on a loaded machine these say more than the wall-clock times.

Following: a writer process appends log lines as fast as it can for a few seconds while
`follow()` reads them (`async for`); it reports the writer's rate, how far behind the
reader ended, and the reader's memory early and at the end.  Then `follow()` reads the
finished file alone, to show how much faster than the writer it can go.

Following speed (also ``--only follow-speed``): `follow()` over a finished file of 80-byte
lines against ``for line in open(...)`` (the lines of both checked equal first; rounds
interleaved, best of --repeat; target >= 1.0x; each with its processor time too, which a
loaded machine disturbs less), the same lines as UTF-16LE against UTF-8 (target >= 0.5
of the speed), and a writer of 80-byte lines at rising rates (--rates, for
--follow-seconds each) until `follow()` no longer has every line within half a second of
the writer stopping (target: keeps up at 300 MB/s).
"""

from __future__ import annotations

import argparse
import filecmp
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report
import anyio
from _corpora import build_corpora

from utf8stream import follow

ROOT = Path(__file__).resolve().parent.parent


#: The peer that repairs as we do: CPython's incremental UTF-8 decoder with
#: errors="replace" (one U+FFFD per maximal subpart, as ours) over 64 KiB reads, the text
#: encoded back and written as it goes.  iconv has no such mode (-c drops the bytes).
PYTHON_REPAIR = """
import codecs, sys
decode = codecs.getincrementaldecoder("utf-8")("replace").decode
with open(sys.argv[1], "rb", buffering=0) as src, open(sys.argv[2], "wb") as dst:
    while chunk := src.read(1 << 16):
        dst.write(decode(chunk).encode("utf-8"))
    dst.write(decode(b"", True).encode("utf-8"))
"""


@dataclass
class Side:
    """One command of a comparison; ``stdout``: its output goes to stdout (iconv)."""

    label: str
    cmd: list[str]
    stdout: bool = False

    def run(self, out: Path) -> tuple[float, float]:
        """Run it once writing ``out``, a new file (an old one is removed first, untimed:
        freeing its pages would be charged to whoever replaces it); the seconds it took,
        wall clock and CPU (user + system, of the command and every process it waited
        for: a parallel run's workers, a writer thread)."""
        out.unlink(missing_ok=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        if self.stdout:
            with open(out, "wb") as f:
                # iconv -c exits 1 when it dropped something: that is expected here.
                done = subprocess.run(self.cmd, stdout=f, check=False)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{self.label} failed: exit status {done.returncode}")
        else:
            subprocess.run([*self.cmd, str(out)], check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return wall, cpu


def _first_difference(a: Path, b: Path) -> int:
    """The offset of the first byte where files ``a`` and ``b`` differ."""
    offset = 0
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return offset + next(
                    (k for k, (p, q) in enumerate(zip(x, y, strict=False)) if p != q),
                    min(len(x), len(y)),
                )
            if not x:
                return offset
            offset += len(x)


def _check_same_output(sides: list[Side], outputs: Path) -> None:
    """Every side once; their outputs must be equal byte for byte, or nothing is timed."""
    paths = [outputs / f"check-{k}" for k in range(len(sides))]
    try:
        for side, path in zip(sides, paths, strict=True):
            side.run(path)
        for side, path in zip(sides[1:], paths[1:], strict=True):
            if not filecmp.cmp(path, paths[0], shallow=False):
                raise SystemExit(
                    f"not timed: {side.label} wrote {path.stat().st_size:,} bytes, "
                    f"{sides[0].label} {paths[0].stat().st_size:,}; they differ first at "
                    f"byte {_first_difference(path, paths[0]):,}"
                )
    finally:
        for path in paths:
            path.unlink(missing_ok=True)


def bench_transcode(size_mib: int, repeat: int, work: Path, only: list[str] | None = None) -> None:
    """Transcoding, peer and ours doing the same work, outputs checked equal byte for
    byte first, then timed in interleaved rounds (peer, ours -j1, ours -j2, again).
    ``only``: the cases whose label holds one of these words (any case).  The last
    case is the fixed cost: a file of two UTF-16 code units, start-up and exit."""
    iconv = shutil.which("iconv")
    corpora = build_corpora(8 * 1024 * 1024)
    files = {}
    corpora["mixed-utf16"] = corpora["mixed"].decode("utf-8").encode("utf-16-le")
    for name in ("mixed", "corrupted", "mixed-utf16"):
        path = work / f"{name}.txt"
        with open(path, "wb") as f:
            for _ in range(max(size_mib // 8, 1)):
                f.write(corpora[name])
        files[name] = path
    files["tiny"] = work / "tiny.txt"
    files["tiny"].write_bytes("ok".encode("utf-16-le"))
    ours = [sys.executable, "-m", "utf8stream", "transcode"]
    python_repair = [sys.executable, "-c", PYTHON_REPAIR]
    # (label, input, the peer (None: not installed), our options): the same output.
    cases: list[tuple[str, Path, Side | None, list[str]]] = [
        (
            "UTF-8 -> UTF-16LE, mixed",
            files["mixed"],
            Side("iconv", [iconv, "-f", "UTF-8", "-t", "UTF-16LE", str(files["mixed"])], True)
            if iconv
            else None,
            ["-t", "utf-16-le"],
        ),
        (
            "UTF-8 -> UTF-16LE, drop (iconv -c), corrupted",
            files["corrupted"],
            Side(
                "iconv -c",
                [iconv, "-c", "-f", "UTF-8", "-t", "UTF-16LE", str(files["corrupted"])],
                True,
            )
            if iconv
            else None,
            ["-t", "utf-16-le", "--errors", "ignore"],
        ),
        (
            "UTF-16LE -> UTF-8, mixed",
            files["mixed-utf16"],
            Side(
                "iconv", [iconv, "-f", "UTF-16LE", "-t", "UTF-8", str(files["mixed-utf16"])], True
            )
            if iconv
            else None,
            ["-f", "utf-16-le", "-t", "utf-8"],
        ),
        (
            "repair, drop (iconv -c), corrupted",
            files["corrupted"],
            Side(
                "iconv -c",
                [iconv, "-c", "-f", "UTF-8", "-t", "UTF-8", str(files["corrupted"])],
                True,
            )
            if iconv
            else None,
            ["-t", "utf-8", "--errors", "ignore"],
        ),
        (
            "repair, U+FFFD (Python codecs), corrupted",
            files["corrupted"],
            Side("python codecs", [*python_repair, str(files["corrupted"])]),
            ["-t", "utf-8"],
        ),
        (
            "start-up: UTF-16LE -> UTF-8, 4 bytes",
            files["tiny"],
            Side("iconv", [iconv, "-f", "UTF-16LE", "-t", "UTF-8", str(files["tiny"])], True)
            if iconv
            else None,
            ["-f", "utf-16-le", "-t", "utf-8"],
        ),
    ]
    if only:
        cases = [c for c in cases if any(word.lower() in c[0].lower() for word in only)]
    with _output_dir(work) as (outputs, in_ram):
        _compare_transcoders(size_mib, repeat, cases, ours, outputs, in_ram, iconv is not None)


def _compare_transcoders(
    size_mib: int,
    repeat: int,
    cases: list[tuple[str, Path, Side | None, list[str]]],
    ours: list[str],
    outputs: Path,
    in_ram: bool,
    with_iconv: bool,
) -> None:
    print(
        f"transcoding {size_mib} MiB files; outputs written to {outputs}"
        + ("" if in_ram else " (NOT in RAM: the times include writeback to disk)")
        + f"; outputs checked equal byte for byte, then {repeat} interleaved rounds"
        " (median and best); every side is a command and pays its start-up"
    )
    if not with_iconv:
        print("iconv is not installed: its cases are left out")
    print(
        f"{'case':46} {'peer s':>7} {'-j1 s':>7} {'ratio':>6} {'-j2 s':>7} {'ratio':>6}"
        "   (ratio = peer / ours, median; best in brackets)"
    )
    cpu_lines = []
    for label, path, peer, our_args in cases:
        if peer is None:
            continue
        sides = [
            peer,
            Side("ours -j1", [*ours, *our_args, str(path)]),
            Side("ours -j2", [*ours, *our_args, "-j", "2", str(path)]),
        ]
        _check_same_output(sides, outputs)
        times: list[list[float]] = [[] for _ in sides]
        cpus: list[list[float]] = [[] for _ in sides]
        out = outputs / "out"
        for _ in range(repeat):
            for side, taken, cpu in zip(sides, times, cpus, strict=True):
                wall, used = side.run(out)
                taken.append(wall)
                cpu.append(used)
        out.unlink()
        median = [statistics.median(t) for t in times]
        best = [min(t) for t in times]
        print(
            f"{label:46} {median[0]:7.2f} {median[1]:7.2f} {median[0] / median[1]:6.2f} "
            f"{median[2]:7.2f} {median[0] / median[2]:6.2f}   "
            f"[{best[0]:.2f} {best[1]:.2f} {best[0] / best[1]:.2f} {best[2]:.2f} "
            f"{best[0] / best[2]:.2f}]"
        )
        _report.record(
            "transcode",
            case=label,
            peer=peer.label,
            peer_s=median[0],
            ours_s=median[1],
            ratio=median[0] / median[1],
            ours_j2_s=median[2],
            ratio_j2=median[0] / median[2],
            best_ratio=best[0] / best[1],
            target=3.0,
        )
        mb = path.stat().st_size / 1e6
        cpu_median = [statistics.median(c) for c in cpus]
        cpu_lines.append(
            f"{label:46} "
            + " ".join(
                f"{c:7.2f} " + (f"{c / mb * 1e3:6.2f}" if mb >= 1 else f"{'-':>6}")
                for c in cpu_median
            )
            + f"  {cpu_median[0] / cpu_median[1]:5.2f} {cpu_median[1] / cpu_median[2]:5.2f}"
            + f"  {cpu_median[1] / median[1]:4.2f} {cpu_median[2] / median[2]:4.2f}"
        )
    print(
        "CPU seconds (user + system, the process and all it waited for; median), and ms per"
        " MB of input:\n"
        f"{'case':46} {'peer s':>7} {'ms/MB':>6} {'-j1 s':>7} {'ms/MB':>6} {'-j2 s':>7}"
        f" {'ms/MB':>6}  {'peer/-j1':>5} {'-j1/-j2':>5}  {'cores used -j1 -j2':>4}"
    )
    for line in cpu_lines:
        print(line)


@contextmanager
def _output_dir(work: Path) -> Iterator[tuple[Path, bool]]:
    """Where outputs go, and whether it is in RAM: a directory in /dev/shm when there
    is one, so that the times are not those of the disk; else ``work``."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield work, False
        return
    with tempfile.TemporaryDirectory(prefix="bench-files-", dir=shm) as outputs:
        yield Path(outputs), True


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
    _report.record(
        "follow-writer",
        lines=written,
        seconds=seconds,
        behind_s=elapsed - seconds,
        rss_early_mib=rss_early,
        rss_end_mib=rss_end,
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


#: A log line of exactly 80 bytes (with its newline), ASCII, as most logs are.
LINE_80 = b"2026-11-22T00:00:00.000Z INFO worker-7 GET /api/v1/items/42 200".ljust(79) + b"\n"

WRITER_AT_RATE = """
import os, sys, time
path, rate, seconds, line = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
chunk = line.encode() * 13_107  # about 1 MiB
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
written = 0
start = time.monotonic()
while (elapsed := time.monotonic() - start) < seconds:
    due = int(min(elapsed, seconds) * rate / len(chunk))
    while written < due:
        os.write(fd, chunk)
        written += 1
    time.sleep(0.001)
print(written * 13_107)
"""


def bench_follow_vs_open(work: Path, size_mib: int, rounds: int) -> None:
    """follow() over a finished file against ``for line in open(...)``: the same lines,
    timed in interleaved rounds (best of each); then UTF-16LE against UTF-8 following."""
    path = work / "finished.log"
    lines_count = size_mib * 2**20 // len(LINE_80)
    path.write_bytes(LINE_80 * lines_count)
    wide = work / "finished-utf16le.log"
    wide.write_bytes(path.read_bytes().decode("ascii").encode("utf-16-le"))

    def plain() -> list[str]:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]

    async def followed(source: Path, encoding: str) -> list[str]:
        async with follow(source, start="beginning", until_eof=True, encoding=encoding) as lines:
            return [line.text async for line in lines]

    expected = plain()
    for source, encoding in ((path, "utf-8"), (wide, "utf-16-le")):
        if anyio.run(followed, source, encoding) != expected:
            raise SystemExit(f"follow() over {source.name} does not give the lines open() does")
    del expected

    def time_open() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        count = 0
        with open(path, encoding="utf-8") as f:
            for _line in f:
                count += 1
        took = time.perf_counter() - start, time.process_time() - cpu
        assert count == lines_count
        return took

    async def count_followed(source: Path, encoding: str) -> int:
        count = 0
        async with follow(source, start="beginning", until_eof=True, encoding=encoding) as lines:
            async for _line in lines:
                count += 1
        return count

    def time_follow(source: Path, encoding: str, backend: str) -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        count = anyio.run(count_followed, source, encoding, backend=backend)
        took = time.perf_counter() - start, time.process_time() - cpu
        assert count == lines_count
        return took

    cases: dict[str, Callable[[], tuple[float, float]]] = {
        "for line in open()": time_open,
        "follow() UTF-8, asyncio": lambda: time_follow(path, "utf-8", "asyncio"),
        "follow() UTF-8, trio": lambda: time_follow(path, "utf-8", "trio"),
        "follow() UTF-16LE, asyncio": lambda: time_follow(wide, "utf-16-le", "asyncio"),
        "follow() UTF-16LE, trio": lambda: time_follow(wide, "utf-16-le", "trio"),
    }
    best_of: dict[str, float] = {}
    # The processor time too (all threads of this process): on a loaded machine the wall
    # time also holds the waits for a processor, the processor time much less of them.
    cpu_best_of: dict[str, float] = {}
    for _ in range(rounds):  # interleaved: a slow moment of the machine hits every case
        for name, case in cases.items():
            took, cpu = case()
            best_of[name] = min(best_of.get(name, math.inf), took)
            cpu_best_of[name] = min(cpu_best_of.get(name, math.inf), cpu)
    print(
        f"finished file: {lines_count:,} lines of 80 bytes ({size_mib} MiB as UTF-8), "
        f"outputs checked equal, best of {rounds} interleaved rounds"
    )
    reference = best_of["for line in open()"]
    cpu_reference = cpu_best_of["for line in open()"]
    for name, took in best_of.items():
        cpu = cpu_best_of[name]
        print(
            f"  {name:28} {took:6.2f} s  {lines_count / took / 1e6:5.2f} M lines/s  "
            f"open()/this {reference / took:4.2f}x  "
            f"(processor time {cpu:6.2f} s, {cpu_reference / cpu:4.2f}x)"
        )
        if name != "for line in open()":
            _report.record(
                "follow-speed",
                case=name,
                file_system=_file_system(work),
                peer="for line in open()",
                peer_s=reference,
                ours_s=took,
                ratio=reference / took,
                cpu_ratio=cpu_reference / cpu,
                target=1.0 if "UTF-8" in name else None,
            )
    for backend in ("asyncio", "trio"):
        ratio = best_of[f"follow() UTF-8, {backend}"] / best_of[f"follow() UTF-16LE, {backend}"]
        print(f"  UTF-16LE / UTF-8 following speed, {backend}: {ratio:.2f} (target >= 0.5)")
        _report.record(
            "follow-utf16",
            backend=backend,
            file_system=_file_system(work),
            peer="follow() UTF-8",
            ratio=ratio,
            target=0.5,
        )


def bench_follow_keeps_up(work: Path, seconds: float, rates_mb: list[float]) -> None:
    """A writer of 80-byte lines at rising rates: the highest that follow() keeps up with
    (all lines read within half a second of the writer stopping)."""
    path = work / "fast.log"

    async def run(rate_mb: float) -> tuple[int, int, float]:
        path.write_bytes(b"")
        count = 0
        async with follow(path, start="beginning") as lines:
            iterator = lines.__aiter__()
            await anyio.sleep(0)
            writer = await anyio.open_process(
                [
                    sys.executable,
                    "-c",
                    WRITER_AT_RATE,
                    str(path),
                    str(rate_mb * 1e6),
                    str(seconds),
                    LINE_80.decode(),
                ]
            )
            written = -1
            stopped_at = math.inf
            reading = anyio.CancelScope(deadline=anyio.current_time() + seconds + 30)
            async with writer, anyio.create_task_group() as tg:

                async def wait_writer() -> None:
                    nonlocal written, stopped_at
                    assert writer.stdout is not None
                    out = b""
                    async for chunk in writer.stdout:
                        out += chunk
                    await writer.wait()
                    written, stopped_at = int(out), time.perf_counter()
                    if count >= written:
                        reading.cancel()

                tg.start_soon(wait_writer)
                with reading:
                    while count != written:
                        await iterator.__anext__()
                        count += 1
                tg.cancel_scope.cancel()
            lag = time.perf_counter() - stopped_at
        path.unlink()
        return written, count, lag

    print(f"keeping up with a writer of 80-byte lines, {seconds:g} s per rate:")
    for rate_mb in rates_mb:
        written, count, lag = anyio.run(run, rate_mb)
        kept_up = count == written and lag < 0.5
        reader_mb = count * len(LINE_80) / (seconds + max(lag, 0.0)) / 1e6
        print(
            f"  writer {rate_mb:5.0f} MB/s: {written:,} lines, the reader had "
            f"{count:,} of them {lag:+.2f} s after it stopped ({reader_mb:.0f} MB/s): "
            f"{'kept up' if kept_up else 'fell behind'}"
        )
        _report.record(
            "follow-keeps-up",
            writer_mb_s=rate_mb,
            reader_mb_s=reader_mb,
            behind_s=lag,
            kept_up=kept_up,
        )
        if not kept_up:
            break


def _file_system(path: Path) -> str:
    """The type of the file system ``path`` is on (``ext4``, ``tmpfs``...), from
    /proc/self/mounts; ``unknown`` where that cannot be read."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return "unknown"
    best, kind = "", "unknown"
    resolved = str(path.resolve())
    for mount in mounts:
        fields = mount.split()
        point = fields[1]
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if len(fields) > 2 and inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def current_rss() -> float:
    """This process's resident memory now, in MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="MiB per file (default 256)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--follow-seconds", type=float, default=5.0)
    parser.add_argument(
        "--only", choices=("transcode", "follow", "follow-speed"), help="run one of the parts"
    )
    parser.add_argument(
        "--cases",
        nargs="+",
        metavar="WORD",
        help="transcode: only the cases whose label holds one of these words (UTF-16LE, "
        "drop, repair, start-up, ...)",
    )
    parser.add_argument("--follow-mib", type=int, default=100, help="finished file size, MiB")
    parser.add_argument(
        "--rates", default="100,200,300,400,600", help="writer MB/s to try, rising"
    )
    _report.add_option(parser)
    args = parser.parse_args()
    with _report.reporting(args.json):
        run(args)


def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        work = Path(tmp)
        if args.only in (None, "transcode"):
            bench_transcode(args.size, args.repeat, work, args.cases)
        if args.only in (None, "follow"):
            bench_follow(args.follow_seconds, work)
        if args.only in (None, "follow", "follow-speed"):
            bench_follow_vs_open(work, args.follow_mib, args.repeat)
            rates = [float(rate) for rate in args.rates.split(",")]
            bench_follow_keeps_up(work, args.follow_seconds, rates)


if __name__ == "__main__":
    main()
