"""Text transforms on a stream against the whole-string functions they stand in for.

    .venv/bin/python benchmarks/bench_transforms.py [--size MiB] [--chunk KiB]
        [--repeat N] [--forms NFC NFD ...] [--corpora NAME ...] [--json]

``Normalizer(form)`` over each corpus of benchmarks/_corpora.py (decoded, U+FFFD for the
corrupted one), fed in ``--chunk`` pieces, the rounds of each pair interleaved (the order
alternating), ``--repeat`` rounds; every output is checked equal to the peer's first.

* **normalized**: the corpus already in ``form``; the peer is
  ``unicodedata.is_normalized(form, chunk)`` over the same chunks (what the quick check
  costs), the goal: ours at most 1.3x its time (ratio >= 0.77);
* **work**: the corpus in another form (NFD -> NFC, NFC -> NFD, NFC -> NFKC,
  NFC -> NFKD), where that changes it; the peer is ``unicodedata.normalize(form, text)``
  on the whole text at once, the goal: ours at most 1.5x its time (ratio >= 0.67).

``ratio`` is the peer's time divided by ours, as in every benchmark here (higher is
better; 1.0 means as fast): the median of the rounds' ratios; the times printed are the
best of the rounds.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report
from _corpora import NAMES, build_corpora

from utf8stream.transforms import Normalizer

Form = Literal["NFC", "NFD", "NFKC", "NFKD"]
FORMS: tuple[Form, ...] = ("NFC", "NFD", "NFKC", "NFKD")
WORK: tuple[tuple[Form, Form], ...] = (
    ("NFD", "NFC"),
    ("NFC", "NFD"),
    ("NFC", "NFKC"),
    ("NFC", "NFKD"),
)
NORMALIZED_GOAL = 1.3
WORK_GOAL = 1.5


def streamed(form: Form, chunks: list[str]) -> list[str]:
    """The pieces out (joined only to check them: the peers' times hold no join)."""
    normalizer = Normalizer(form)
    out = [normalizer.transform(chunk) for chunk in chunks]
    out.append(normalizer.transform("", final=True))
    return out


def paired(
    peer: Callable[[], Any], ours: Callable[[], Any], repeat: int
) -> tuple[float, float, float]:
    """Best-of-``repeat`` times of the two and the median of the rounds' ratios (peer /
    ours), each round running both, the order alternating: on a loaded machine the two
    runs of a round see much the same load, the best times may not."""
    best = [float("inf"), float("inf")]
    ratios = []
    for round_ in range(repeat):
        times = [0.0, 0.0]
        order = [(0, peer), (1, ours)]
        for slot, fn in order if round_ % 2 == 0 else order[::-1]:
            gc.collect()
            start = time.perf_counter()
            fn()
            times[slot] = time.perf_counter() - start
            best[slot] = min(best[slot], times[slot])
        ratios.append(times[0] / times[1])
    return best[0], best[1], statistics.median(ratios)


def row(
    table: str, corpus: str, label: str, times: tuple[float, float, float], goal: float
) -> bool:
    """Print and record one row; ``goal`` is the most ours may take, in the peer's times."""
    peer, ours, ratio = times
    met = ratio >= 1 / goal
    print(
        f"{table:10} {corpus:12} {label:12} {peer * 1e3:9.2f} {ours * 1e3:9.2f} {ratio:6.2f}"
        f"  >= {1 / goal:.2f} {'ok' if met else 'MISSED'}"
    )
    _report.record(
        table, corpus=corpus, form=label, peer_s=peer, ours_s=ours, ratio=ratio, goal=1 / goal
    )
    return met


def run(args: argparse.Namespace) -> None:
    corpora = build_corpora(args.size * 1024 * 1024)
    chunk = args.chunk * 1024
    print(
        f"Python {sys.version.split()[0]}, Unicode {unicodedata.unidata_version},"
        f" {args.size} MiB per corpus, {args.chunk} Ki-character chunks, {args.repeat}"
        f" rounds, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(f"{'table':10} {'corpus':12} {'form':12} {'peer ms':>9} {'ours ms':>9} {'ratio':>6}")
    missed = 0
    for name in args.corpora:
        decoded = corpora[name].decode("utf-8", "replace")
        for form in args.forms:
            text = unicodedata.normalize(form, decoded)
            chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
            assert "".join(streamed(form, chunks)) == text, (name, form)
            times = paired(
                lambda: [unicodedata.is_normalized(form, c) for c in chunks],  # noqa: B023
                lambda: streamed(form, chunks),  # noqa: B023
                args.repeat,
            )
            missed += not row("normalized", name, form, times, NORMALIZED_GOAL)
        for source, form in WORK:
            if form not in args.forms:
                continue
            text = unicodedata.normalize(source, decoded)
            expected = unicodedata.normalize(form, text)
            if expected == text:
                continue
            chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
            assert "".join(streamed(form, chunks)) == expected, (name, source, form)
            times = paired(
                lambda: unicodedata.normalize(form, text),  # noqa: B023
                lambda: streamed(form, chunks),  # noqa: B023
                args.repeat,
            )
            missed += not row("work", name, f"{source}->{form}", times, WORK_GOAL)
    print(f"{missed} goal(s) missed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4, help="MiB per corpus (default 4)")
    parser.add_argument("--chunk", type=int, default=64, help="Ki-characters a piece (64)")
    parser.add_argument("--repeat", type=int, default=11, help="rounds (default 11)")
    parser.add_argument("--forms", nargs="+", choices=FORMS, default=list(FORMS))
    parser.add_argument("--corpora", nargs="+", choices=NAMES, default=list(NAMES))
    _report.add_option(parser)
    args = parser.parse_args()
    with _report.reporting(args.json):
        run(args)


if __name__ == "__main__":
    main()
