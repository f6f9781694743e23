"""Utf8Decoder against CPython's codecs incremental UTF-8 decoder, side by side.

    .venv/bin/python benchmarks/bench_decoder.py [--size MiB] [--repeat N]

Prints, for each corpus and chunk size, the best-of-N time of both decoders (runs
interleaved) and the ratio
peer_time / our_time (higher is better; 1.0 means as fast as CPython's incremental
decoder).  DESIGN.md section 8 targets: >= 0.95 at 64 KiB and >= 0.8 at 256 B on the valid
corpora; the corrupted corpus has its own row, >= 0.8 with every malformed unit reported
(``on_malformed`` collecting events), and the plain ``replace`` run on it is held to the
same 0.8.  The header says whether the C accelerator (``_speedups.c``) is in use; set
``UTF8STREAM_PURE_PYTHON=1`` to measure the pure-Python decoder.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpora import NAMES, build_corpora, chunked

from utf8stream import Malformed, Utf8Decoder
from utf8stream.core.decoder import accelerated

TARGETS = {65536: 0.95, 256: 0.8}


def run_codecs(chunks: list[bytes]) -> int:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    decode = decoder.decode
    n = 0
    for chunk in chunks:
        n += len(decode(chunk))
    return n + len(decode(b"", True))


def run_ours(chunks: list[bytes]) -> int:
    decode = Utf8Decoder("replace").decode
    n = 0
    for chunk in chunks:
        n += len(decode(chunk))
    return n + len(decode(b"", True))


def run_ours_events(chunks: list[bytes], events: list[Malformed] | None = None) -> int:
    """Every unit reported: a callback collects a ``Malformed`` event for each one."""
    if events is None:
        events = []
    decode = Utf8Decoder("replace", on_malformed=events.append).decode
    n = 0
    for chunk in chunks:
        n += len(decode(chunk))
    return n + len(decode(b"", True))


def check_events(chunks: list[bytes]) -> None:
    """Outside the timing: the events are real (one per unit, offsets in order)."""
    events: list[Malformed] = []
    run_ours_events(chunks, events)
    data = b"".join(chunks)
    units = data.decode("utf-8", "replace").count("\ufffd") - data.count(b"\xef\xbf\xbd")
    assert len(events) == units, (len(events), units)
    assert all(a.end <= b.offset for a, b in itertools.pairwise(events))
    assert all(data[e.offset : e.end] == e.data for e in events)


def best_times(
    fns: list[Callable[[list[bytes]], int]], chunks: list[bytes], repeat: int
) -> list[float]:
    """Best-of-``repeat`` time of each function, the runs interleaved (peer, ours, peer,
    ours, ...) so that all of them see the same machine state."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            gc.collect()
            start = time.perf_counter()
            fn(chunks)
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16, help="MiB per corpus (default 16)")
    parser.add_argument("--repeat", type=int, default=5, help="best of N (default 5)")
    args = parser.parse_args()
    corpora = build_corpora(args.size * 1024 * 1024)
    print(
        f"Python {sys.version.split()[0]}, {args.size} MiB per corpus, best of {args.repeat},"
        f" {'C accelerator' if accelerated() else 'pure Python'}"
    )
    header = (
        f"{'corpus':10} {'chunk':>6} {'variant':14} {'codecs s':>9} {'ours s':>9}"
        f" {'ratio':>6} target"
    )
    print(header)
    print("-" * len(header))
    failures = 0
    for name in NAMES:
        data = corpora[name]
        for size in (65536, 256):
            chunks = chunked(data, size)
            # Same output, or the comparison means nothing.
            assert run_codecs(chunks) == run_ours(chunks)
            variants: list[tuple[str, Callable[[list[bytes]], int], float]] = [
                ("replace", run_ours, 0.8 if name == "corrupted" else TARGETS[size]),
            ]
            if name == "corrupted":
                check_events(chunks)
                variants.append(("+ all events", run_ours_events, 0.8))
            peer, *times = best_times(
                [run_codecs, *(fn for _, fn, _ in variants)], chunks, args.repeat
            )
            for (label, _, target), ours in zip(variants, times, strict=True):
                ratio = peer / ours
                ok = "ok" if ratio >= target else "MISSED"
                failures += ratio < target
                print(
                    f"{name:10} {size:>6} {label:14} {peer:9.4f} {ours:9.4f} {ratio:6.2f}"
                    f" >= {target} {ok}"
                )
    print(f"{failures} target(s) missed")


if __name__ == "__main__":
    main()
