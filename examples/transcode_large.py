"""Transcode a large file lazily in constant memory, with progress, in parallel where faster.

    python examples/transcode_large.py [FILE] [--size MiB] [--to utf-16-le] [--jobs 2]

Without FILE it writes a sample of --size MiB (multilingual log text with a few damaged
bytes) to a temporary folder first.  The output is checked against a one-shot decode and
encode, and the summary (malformed units by kind, with the offset of the first) printed.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from utf8stream import Malformed, transcode_file

LINES = [
    "2026-11-22T10:00:00Z INFO  user=jana action=login město=Brno\n",
    "2026-11-22T10:00:01Z WARN  cache miss for 東京 (key=42)\n",
    "2026-11-22T10:00:02Z ERROR upstream said «non disponible» 🚫\n",
    "2026-11-22T10:00:03Z INFO  Привет, мир — request served in 12 ms\n",
]


def make_sample(path: Path, size: int, seed: int = 1) -> None:
    rnd = random.Random(seed)
    block = "".join(rnd.choice(LINES) for _ in range(2000)).encode()
    with open(path, "wb") as f:
        written = 0
        while written < size:
            chunk = bytearray(block)
            chunk[rnd.randrange(len(chunk))] = 0xFF  # one damaged byte per block
            f.write(chunk)
            written += len(chunk)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("file", nargs="?", help="a UTF-8 file (default: a generated sample)")
    parser.add_argument("--size", type=int, default=16, help="sample size in MiB")
    parser.add_argument("--to", default="utf-16-le", help="target encoding")
    parser.add_argument("--jobs", type=int, default=2, help="at most N worker processes")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(args.file) if args.file else Path(tmp) / "sample.log"
        if not args.file:
            make_sample(src, args.size << 20)
        dst = Path(tmp) / "out.txt"
        first: list[Malformed] = []

        def keep_first(event: Malformed) -> None:
            if not first:
                first.append(event)

        def progress(done: int, total: int) -> None:
            print(f"\r  {done / 2**20:7.1f} / {total / 2**20:.1f} MiB", end="", file=sys.stderr)

        start = time.perf_counter()
        summary = transcode_file(
            src,
            dst,
            target=args.to,
            workers=args.jobs,
            progress=progress,
            on_malformed=keep_first,
        )
        elapsed = time.perf_counter() - start
        print(file=sys.stderr)
        expected = src.read_bytes().decode("utf-8", "replace").encode(args.to)
        same = dst.read_bytes() == expected
        print(
            f"{summary.bytes_in / 2**20:.1f} MiB in, {summary.bytes_out / 2**20:.1f} MiB out "
            f"({args.to}), {summary.pieces} piece(s), {elapsed:.2f} s"
        )
        kinds = ", ".join(f"{k.name} {n}" for k, n in summary.malformed.items())
        print(f"malformed units: {summary.malformed_total} ({kinds or 'none'})")
        if first:
            print(f"first at offset {first[0].offset}: {first[0].data.hex(' ')}")
        print("output identical to a one-shot decode + encode:", same)
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
