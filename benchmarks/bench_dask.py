"""`utf8stream.dask.read_text` against `dask.bag.read_text`, on the same cluster and files.

    .venv/bin/python benchmarks/bench_dask.py [--size MiB] [--blocksize MiB] [--repeat N]
        [--workers 1,2] [--json]

A UTF-8 file of mixed log lines (ASCII, Latin, Cyrillic, CJK, emoji; "\\n" newlines) and
the same text in UTF-16LE.  For each worker count, a ``distributed.LocalCluster`` of that
many worker processes (one thread each) runs both readers over the same blocks:

* correctness: the number of lines and an order-independent checksum of them (dask keeps
  each line's newline: it is stripped before the checksum), against the lines of the
  file read sequentially; on UTF-8 both must match, on UTF-16LE dask's count is shown as
  it comes (it cuts the blocks at the UTF-8 newline byte, 0A, whatever the encoding);
* throughput: counting the lines of the bag (best of --repeat), as MB/s of the input and
  as our speed over dask's (target on UTF-8: >= 0.9).

Timings are only meaningful on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any, cast

import dask
import dask.bag
import distributed

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report

from utf8stream.dask import read_text

# Dask's annotations are partial: its entry points are used through ``Any``.
_compute: Any = cast(Any, dask).compute
_dask_read_text: Any = cast(Any, dask.bag).read_text
LocalCluster: Any = distributed.LocalCluster
Client: Any = distributed.Client

_WORDS = ["error", "request", "café", "naïve", "Ωμέγα", "данные", "日本語", "文字", "🙂", "x"]


def make_lines(size: int) -> list[str]:
    rng = random.Random(15)
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 20)))
        lines.append(line)
        total += len(line.encode()) + 1
    return lines


def checksum(bag: Any, strip: bool) -> tuple[int, int]:
    """(lines, sum of their CRC-32s): the same for the same lines in any partition order."""

    def crc(line: str) -> int:
        return zlib.crc32((line[:-1] if strip and line.endswith("\n") else line).encode())

    return _compute(bag.count(), bag.map(crc).sum())  # type: ignore[no-any-return]


def best_count(bag: Any, repeat: int) -> float:
    """The best time to count the lines of ``bag``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        bag.count().compute()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=64, help="MiB of UTF-8 (default 64)")
    parser.add_argument("--blocksize", type=float, default=8, help="MiB (default 8)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    _report.add_option(parser)
    args = parser.parse_args()
    with _report.reporting(args.json):
        run(args)


def run(args: argparse.Namespace) -> None:
    blocksize = int(args.blocksize * 2**20)
    lines = make_lines(int(args.size * 2**20))
    text = "\n".join(lines) + "\n"
    expected = (len(lines), sum(zlib.crc32(line.encode()) for line in lines))
    with tempfile.TemporaryDirectory() as folder:
        utf8, utf16 = Path(folder, "mixed.utf8"), Path(folder, "mixed.utf16le")
        utf8.write_bytes(text.encode())
        utf16.write_bytes(text.encode("utf-16-le"))
        del text
        mib8, mib16 = utf8.stat().st_size / 2**20, utf16.stat().st_size / 2**20
        print(
            f"{len(lines)} lines; UTF-8 {mib8:.1f} MiB, UTF-16LE {mib16:.1f} MiB; "
            f"blocks of {args.blocksize:g} MiB; best of {args.repeat}; cpus {os.cpu_count()}"
        )
        for workers in (int(w) for w in args.workers.split(",")):
            with (
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    silence_logs=logging.ERROR,
                ) as cluster,
                Client(cluster),
            ):
                ours8 = read_text(str(utf8), blocksize=blocksize)
                theirs8 = _dask_read_text(str(utf8), blocksize=blocksize)
                ours16 = read_text(str(utf16), encoding="utf-16-le", blocksize=blocksize)
                theirs16 = _dask_read_text(
                    str(utf16), encoding="utf-16-le", blocksize=blocksize, errors="replace"
                )
                assert checksum(ours8, False) == expected, "utf8stream, UTF-8: wrong lines"
                assert checksum(theirs8, True) == expected, "dask, UTF-8: wrong lines"
                assert checksum(ours16, False) == expected, "utf8stream, UTF-16LE: wrong lines"
                wrong = checksum(theirs16, True)
                print(f"\n{workers} worker process(es):")
                print(
                    f"  UTF-16LE lines: expected {expected[0]}, utf8stream {expected[0]}, "
                    f"dask {wrong[0]}"
                    + (" (same lines)" if wrong == expected else " (wrong lines)")
                )
                t_ours = best_count(ours8, args.repeat)
                t_theirs = best_count(theirs8, args.repeat)
                t_ours16 = best_count(ours16, args.repeat)
                print(
                    f"  UTF-8    utf8stream {mib8 / t_ours:7.1f} MiB/s   dask "
                    f"{mib8 / t_theirs:7.1f} MiB/s   ratio {t_theirs / t_ours:.2f} "
                    "(target >= 0.9)"
                )
                print(
                    f"  UTF-16LE utf8stream {mib16 / t_ours16:7.1f} MiB/s "
                    f"({expected[0] / t_ours16 / 1e6:.2f} M lines/s)"
                )
                _report.record(
                    "dask",
                    workers=workers,
                    peer="dask.bag.read_text",
                    peer_s=t_theirs,
                    ours_s=t_ours,
                    ratio=t_theirs / t_ours,
                    target=0.9,
                    utf8_mib_s=mib8 / t_ours,
                    utf16le_mib_s=mib16 / t_ours16,
                    utf16le_lines_expected=expected[0],
                    utf16le_lines_dask=wrong[0],
                )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
