"""Async adapters against their peers, side by side, on asyncio and trio.

    .venv/bin/python benchmarks/bench_streams.py [--size MiB] [--repeat N]

Transports are fed from memory (``MemoryByteStream`` hands out pre-cut chunks without
yielding to the event loop), so the figures measure the adapters, not a transport.

Prints best-of-N times (the peer's runs and ours interleaved) and ratios
``peer_time / our_time`` (higher is better) for

* ``Utf8ReceiveStream`` against ``anyio.streams.text.TextReceiveStream`` (``replace``),
  at 64 KiB and 4 KiB chunks (DESIGN.md section 8 target: >= 1.0);
* ``async for line in LineReceiveStream(...)`` (64 KiB chunks) against sync
  ``io.TextIOWrapper`` line iteration (target >= 1.0) and against anyio's
  ``BufferedByteReceiveStream.receive_until(b"\\n")`` plus ``bytes.decode`` (target >= 3).
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from anyio import EndOfStream, IncompleteRead
from anyio.abc import ByteReceiveStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.text import TextReceiveStream

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpora import NAMES, build_corpora, chunked

from utf8stream import LineReceiveStream, Utf8ReceiveStream

BACKENDS = ("asyncio", "trio")
TEXT_CHUNKS = (65536, 4096)
LINE_CHUNK = 65536
MAX_LINE = 1 << 20


class MemoryByteStream(ByteReceiveStream):
    """Hands out pre-cut chunks, then EOF, without touching the event loop."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = iter(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        for chunk in self._chunks:
            return chunk
        raise EndOfStream

    async def aclose(self) -> None:
        pass

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {}


async def read_text_anyio(chunks: list[bytes]) -> int:
    stream = TextReceiveStream(MemoryByteStream(chunks), errors="replace")
    n = 0
    async for text in stream:
        n += len(text)
    return n


async def read_text_ours(chunks: list[bytes]) -> int:
    stream = Utf8ReceiveStream(MemoryByteStream(chunks))
    n = 0
    async for text in stream:
        n += len(text)
    return n


async def lines_ours(chunks: list[bytes]) -> int:
    n = 0
    async for _line in LineReceiveStream(MemoryByteStream(chunks), max_line_bytes=MAX_LINE):
        n += 1
    return n


async def lines_receive_until(chunks: list[bytes]) -> int:
    stream = BufferedByteReceiveStream(MemoryByteStream(chunks))
    n = 0
    while True:
        try:
            line = await stream.receive_until(b"\n", MAX_LINE)
        except IncompleteRead:
            break
        line.decode("utf-8", "replace")
        n += 1
    if stream.buffer:
        bytes(stream.buffer).decode("utf-8", "replace")
        n += 1
    return n


def lines_textiowrapper(data: bytes) -> int:
    n = 0
    for _line in io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace"):
        n += 1
    return n


def timed_async(
    fn: Callable[[list[bytes]], Awaitable[int]], chunks: list[bytes], backend: str
) -> tuple[float, int]:
    async def timed() -> tuple[float, int]:
        start = time.perf_counter()
        result = await fn(chunks)
        return time.perf_counter() - start, result

    gc.collect()
    return anyio.run(timed, backend=backend)


def timed_sync(fn: Callable[[bytes], int], data: bytes) -> tuple[float, int]:
    gc.collect()
    start = time.perf_counter()
    result = fn(data)
    return time.perf_counter() - start, result


def best_interleaved(runs: list[Callable[[], tuple[float, int]]], repeat: int) -> list[float]:
    """Best-of-``repeat`` time of each run, the runs interleaved (peer, ours, peer, ...) so
    that all of them see the same machine state; every run of one kind must agree."""
    best = [float("inf")] * len(runs)
    results: list[set[int]] = [set() for _ in runs]
    for _ in range(repeat):
        for i, run in enumerate(runs):
            elapsed, result = run()
            best[i] = min(best[i], elapsed)
            results[i].add(result)
    assert all(len(r) == 1 for r in results), results
    return best


def result_of(run: Callable[[], tuple[float, int]]) -> int:
    return run()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=float, default=32, help="MiB per corpus (default 32)")
    parser.add_argument("--repeat", type=int, default=9, help="best of N (default 9)")
    args = parser.parse_args()
    corpora = build_corpora(int(args.size * 1024 * 1024))
    print(
        f"Python {sys.version.split()[0]}, {args.size:g} MiB per corpus, best of {args.repeat};"
        " ratio = peer time / our time"
    )
    missed = 0

    print("\nUtf8ReceiveStream vs anyio TextReceiveStream (target >= 1.0)")
    header = f"{'corpus':10} {'chunk':>6} {'backend':8} {'anyio s':>8} {'ours s':>8} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for name in NAMES:
        for size in TEXT_CHUNKS:
            chunks = chunked(corpora[name], size)
            for backend in BACKENDS:
                runs = [
                    partial(timed_async, read_text_anyio, chunks, backend),
                    partial(timed_async, read_text_ours, chunks, backend),
                ]
                peer, ours = best_interleaved(runs, args.repeat)
                n_peer, n_ours = map(result_of, runs)
                assert n_peer == n_ours, (name, n_peer, n_ours)
                ratio = peer / ours
                missed += ratio < 1.0
                flag = "" if ratio >= 1.0 else "  MISSED"
                print(
                    f"{name:10} {size:>6} {backend:8} {peer:8.4f} {ours:8.4f} {ratio:6.2f}{flag}"
                )

    print(
        "\nasync line iteration (LineReceiveStream, 64 KiB chunks) vs sync io.TextIOWrapper"
        " (target >= 1.0) and anyio receive_until + decode (target >= 3.0)"
    )
    header = (
        f"{'corpus':10} {'backend':8} {'lines':>7} {'ours s':>8} {'TextIOW s':>9} {'ratio':>6}"
        f" {'recv_until s':>12} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for name in NAMES:
        data = corpora[name]
        chunks = chunked(data, LINE_CHUNK)
        for backend in BACKENDS:
            runs = [
                partial(timed_async, lines_ours, chunks, backend),
                partial(timed_sync, lines_textiowrapper, data),
                partial(timed_async, lines_receive_until, chunks, backend),
            ]
            ours, sync_time, until = best_interleaved(runs, args.repeat)
            n_ours, n_sync, n_until = map(result_of, runs)
            # Both universal-newline readers agree; receive_until splits on b"\n" only, which
            # differs where the corruption put a stray \r into the text.
            assert n_ours == n_sync, (name, n_ours, n_sync)
            assert n_until == n_ours or name == "corrupted", (name, n_ours, n_until)
            r_sync, r_until = sync_time / ours, until / ours
            missed += (r_sync < 1.0) + (r_until < 3.0)
            flags = ("" if r_sync >= 1.0 else " MISSED(1.0)") + (
                "" if r_until >= 3.0 else " MISSED(3.0)"
            )
            print(
                f"{name:10} {backend:8} {n_ours:>7} {ours:8.4f} {sync_time:9.4f} {r_sync:6.2f}"
                f" {until:12.4f} {r_until:6.2f}{flags}"
            )
    print(f"\n{missed} target(s) missed")


if __name__ == "__main__":
    main()
