"""Utf8Decoder against CPython's codecs incremental UTF-8 decoder, side by side.

    .venv/bin/python benchmarks/bench_decoder.py [--size MiB] [--repeat N]

Prints, for each corpus and chunk size, the best-of-N time of both decoders (their rounds
interleaved: codecs, ours, codecs, ours, ...) and the ratio peer_time / our_time (higher
is better; 1.0 means as fast as CPython's incremental decoder).  DESIGN.md section 8
targets: >= 1.5 at 64 KiB and >= 1.2 at 256 B on every corpus; the corrupted corpus also
has a row with every malformed unit reported (``on_malformed`` collecting events), held to
the same targets.  Before any timing, the text each side returns is checked equal in
full, and the events against an independent record (CPython's own error handler: where
each unit is) and the pure-Python decoder (its kind).  The header says whether the C
accelerator (``_speedups.c``) is in use; set ``UTF8STREAM_PURE_PYTHON=1`` to measure the
pure-Python decoder.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpora import NAMES, build_corpora, chunked

from utf8stream import Malformed, Utf8Decoder
from utf8stream.core._accel import use_accelerator
from utf8stream.core.decoder import accelerated

TARGETS = {65536: 1.5, 256: 1.2}


def run_codecs(chunks: list[bytes]) -> list[str]:
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    out = [decode(chunk) for chunk in chunks]
    out.append(decode(b"", True))
    return out


def run_ours(chunks: list[bytes]) -> list[str]:
    decode = Utf8Decoder("replace").decode
    out = [decode(chunk) for chunk in chunks]
    out.append(decode(b"", True))
    return out


def run_ours_events(chunks: list[bytes], events: list[Malformed] | None = None) -> list[str]:
    """Every unit reported: a callback collects a ``Malformed`` event for each one."""
    if events is None:
        events = []
    decode = Utf8Decoder("replace", on_malformed=events.append).decode
    out = [decode(chunk) for chunk in chunks]
    out.append(decode(b"", True))
    return out


def cpython_units(data: bytes) -> list[tuple[int, int]]:
    """Where CPython's decoder finds each malformed unit: (start, end), recorded by an
    error handler of our own -- an oracle independent of utf8stream."""
    units: list[tuple[int, int]] = []

    def record(exc: UnicodeError) -> tuple[str, int]:
        assert isinstance(exc, UnicodeDecodeError)
        units.append((exc.start, exc.end))
        return "\ufffd", exc.end

    codecs.register_error("bench_decoder.record", record)
    data.decode("utf-8", "bench_decoder.record")
    return units


def check_equal(data: bytes, chunks: list[bytes]) -> None:
    """Outside the timing: both sides return the same text, chunk by chunk, and the
    events are exactly the units (same place, same bytes, same kind as the pure-Python
    decoder gives)."""
    expected = run_codecs(chunks)
    assert run_ours(chunks) == expected, "text differs from codecs"
    events: list[Malformed] = []
    assert run_ours_events(chunks, events) == expected, "text differs with events"
    assert [(e.offset, e.end) for e in events] == cpython_units(data)
    assert all(data[e.offset : e.end] == e.data for e in events)
    if events:
        pure: list[Malformed] = []
        with use_accelerator(False):
            run_ours_events(chunks, pure)
        assert [(e.offset, e.data, e.kind) for e in events] == [
            (e.offset, e.data, e.kind) for e in pure
        ], "events differ from the pure-Python decoder"


def best_times(
    fns: list[Callable[[list[bytes]], list[str]]], chunks: list[bytes], repeat: int
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
        f"{'corpus':11} {'chunk':>6} {'variant':14} {'codecs s':>9} {'ours s':>9}"
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
            check_equal(data, chunks)
            variants: list[tuple[str, Callable[[list[bytes]], list[str]]]] = [
                ("replace", run_ours)
            ]
            if name == "corrupted":
                variants.append(("+ all events", run_ours_events))
            peer, *times = best_times(
                [run_codecs, *(fn for _, fn in variants)], chunks, args.repeat
            )
            target = TARGETS[size]
            for (label, _), ours in zip(variants, times, strict=True):
                ratio = peer / ours
                ok = "ok" if ratio >= target else "MISSED"
                failures += ratio < target
                print(
                    f"{name:11} {size:>6} {label:14} {peer:9.4f} {ours:9.4f} {ratio:6.2f}"
                    f" >= {target} {ok}"
                )
    print(f"{failures} target(s) missed")


if __name__ == "__main__":
    main()
