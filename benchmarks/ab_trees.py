"""The decoder and the line stream of several source trees timed against their peers,
rounds interleaved.

    .venv/bin/python benchmarks/ab_trees.py SRC [SRC ...] [--size MiB] [--rounds N]
        [--corpora NAME ...] [--pure]

A before/after timing of a change to the core for a machine that other work keeps busy.
Each round runs each tree (a checkout's ``src``, e.g. a second worktree's and this
one's) in a process of its own, in an order reversed every other round; the process
times, per corpus, CPython's peer and the tree's code back to back, ``repeat`` times
each interleaved, and reports the ratio ``peer / tree`` of the best times (above 1:
faster than the peer).  Rows: ``Utf8Decoder.decode`` over 64 KiB and 256-byte chunks
against CPython's incremental UTF-8 decoder (``errors="replace"``, each text dropped
when made), and ``LineReceiveStream`` (64 KiB chunks) against ``io.TextIOWrapper``'s
line iteration.  Printed per tree: the median over the rounds of that ratio, and for
each tree after the first its median over the first's (above 1: faster).  A ratio to
the peer measured moments apart in the same process is what makes rounds of a loaded
machine comparable; two trees loaded in one process (as ``ab_follow.py`` does) were
not: the first copy of an extension ran a row up to 2x slower than a second copy of
the same file.  Each process checks its tree's text and lines equal to the peer's
before it times them.  ``--pure``: ``UTF8STREAM_PURE_PYTHON=1`` in the processes.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import io
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BIG, SMALL = 65536, 256
ROWS = ("decode 64 KiB vs codecs", "decode 256 B vs codecs", "lines vs TextIOWrapper")


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def codecs_decode(chunks: list[bytes]) -> Any:
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    for chunk in chunks:
        decode(chunk)
    return decode(b"", True)


def textiowrapper_lines(data: bytes, keep: bool = False) -> Any:
    raw = io.BufferedReader(io.BytesIO(data), buffer_size=BIG)
    wrapper = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    wrapper._CHUNK_SIZE = BIG  # type: ignore[attr-defined]
    if keep:
        return [line.rstrip("\n") for line in wrapper]
    return sum(1 for _ in wrapper)


def tree_decode(chunks: list[bytes]) -> str:
    from utf8stream import Utf8Decoder

    decode = Utf8Decoder("replace").decode
    text = [decode(chunk) for chunk in chunks]
    return "".join(text) + decode(b"", True)


def tree_decode_dropped(chunks: list[bytes]) -> None:
    from utf8stream import Utf8Decoder

    decode = Utf8Decoder("replace").decode
    for chunk in chunks:
        decode(chunk)
    decode(b"", True)


def tree_lines(chunks: list[bytes], keep: bool = False) -> Any:
    import anyio
    import anyio.abc

    from utf8stream import LineReceiveStream

    class Source(anyio.abc.ByteReceiveStream):
        def __init__(self) -> None:
            self.items = iter(chunks)

        async def receive(self, max_bytes: int = BIG) -> bytes:
            for item in self.items:
                return item
            raise anyio.EndOfStream

        async def aclose(self) -> None:
            pass

    async def run() -> Any:
        stream = LineReceiveStream(Source(), max_line_bytes=None)
        if keep:
            return [line async for line in stream]
        n = 0
        async for _ in stream:
            n += 1
        return n

    return anyio.run(run)


def best_ratio(peer: Callable[[], object], ours: Callable[[], object], repeat: int) -> float:
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for k, fn in enumerate((peer, ours)):
            gc.collect()
            start = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - start)
    return best[0] / best[1]


def rows(name: str, data: bytes, repeat: int) -> dict[str, float]:
    big, small = chunked(data, BIG), chunked(data, SMALL)
    return {
        f"{name}|{ROWS[0]}": best_ratio(
            lambda: codecs_decode(big), lambda: tree_decode_dropped(big), repeat
        ),
        f"{name}|{ROWS[1]}": best_ratio(
            lambda: codecs_decode(small), lambda: tree_decode_dropped(small), repeat
        ),
        f"{name}|{ROWS[2]}": best_ratio(
            lambda: textiowrapper_lines(data), lambda: tree_lines(big), repeat
        ),
    }


def child(corpora: list[str], size: float, repeat: int) -> None:
    """One round for the tree on ``sys.path``: a JSON object of ratios on stdout."""
    sys.path.insert(0, str(HERE))
    from _corpora import build_corpora

    built = build_corpora(int(size * 1024 * 1024))
    out: dict[str, float] = {}
    for name in corpora:
        data = built[name]
        big, small = chunked(data, BIG), chunked(data, SMALL)
        expected = data.decode("utf-8", "replace")
        if not tree_decode(big) == tree_decode(small) == expected:
            raise SystemExit(f"{name}: the text differs from CPython's")
        if tree_lines(big, keep=True) != textiowrapper_lines(data, keep=True):
            raise SystemExit(f"{name}: the lines differ from TextIOWrapper's")
        out.update(rows(name, data, repeat))
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="*", type=Path)
    parser.add_argument("--size", type=float, default=4, help="MiB per corpus (default 4)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="best of N in a round")
    parser.add_argument("--corpora", nargs="+", default=["ascii-log", "mixed", "cjk"])
    parser.add_argument("--pure", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.corpora, args.size, args.repeat)
        return
    results: list[dict[str, list[float]]] = [{} for _ in args.sources]
    env = dict(os.environ)
    if args.pure:
        env["UTF8STREAM_PURE_PYTHON"] = "1"
    for k, src in enumerate(args.sources):
        print(f"tree{k}: {src}")
    print(
        f"{'pure Python' if args.pure else 'C accelerator'}, {args.size} MiB per corpus,"
        f" {args.rounds} rounds of a process per tree, best of {args.repeat} in each",
        flush=True,
    )
    for r in range(args.rounds):
        order = list(range(len(args.sources)))
        if r % 2:
            order.reverse()
        for k in order:
            env["PYTHONPATH"] = str(args.sources[k].resolve())
            command = [sys.executable, __file__, "--child", "--size", str(args.size)]
            command += ["--repeat", str(args.repeat), "--corpora", *args.corpora]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if done.returncode:
                raise SystemExit(f"tree{k}: {done.stderr or done.stdout}")
            for key, ratio in json.loads(done.stdout).items():
                results[k].setdefault(key, []).append(ratio)
    for key in results[0]:
        medians = [statistics.median(result[key]) for result in results]
        cells = "  ".join(f"{m:6.3f}" for m in medians)
        against = "  ".join(f"{m / medians[0]:6.3f}" for m in medians[1:])
        name, row = key.split("|")
        print(f"  {name:11s} {row:26s} peer/tree {cells}   tree/tree0 {against}")


if __name__ == "__main__":
    main()
