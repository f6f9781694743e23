"""Encoding detection: utf8stream against chardet and charset-normalizer, side by side.

    .venv/bin/python benchmarks/bench_detect.py [--corpus DIR] [--split all|dev|held-out]
        [--sample N] [--detectors NAME ...] [--repeat N] [--max-lookahead BYTES]
        [--by family|shape] [--confusions N] [--json]

The corpus is ``benchmarks/_detect_corpus.py``'s (made in ``--corpus`` first if it is not
there: ``~/.cache/utf8stream-detect-corpus`` by default).  The peers are the ``bench``
extra (``pip install -e '.[bench]'``).

**Accuracy** at prefixes of 64 B, 256 B, 1 KiB, 4 KiB, 64 KiB and the whole file, per
encoding family and overall: each detector is handed the file's first N bytes (the whole
file where it is shorter) and its guess is right when

* the file is not text and the guess is "not text" (``None``), or
* the file is text and decoding the prefix with the guess (strictly) gives the same text
  as decoding it with the label, a leading byte-order mark aside.

So what the two encodings read the same way is not told apart: pure ASCII guessed as
UTF-8, latin-1 text without bytes 0x80-0x9F guessed as cp1252, GBK as GB18030, EUC-KR as
cp949, Shift_JIS as cp932 where no character differs, are right; a guess that gives other
text, fails to decode or is no codec is wrong.  A prefix is compared up to its last
whole character in the label's encoding (the label's incremental decoder holds back the
bytes of a cut character; the guess decodes exactly the bytes before them): cutting a
file mid-character counts against no one.  The byte-order mark is set aside because a
codec that reads it (``utf-16``) and one that keeps it as U+FEFF (``utf-16-le``) give the
same text after it.  Printed: the percentage right, per family (``_detect_corpus.family``)
and over every file.

**Throughput**: MB/s of input handed to each detector until it returns its decision,
over the same inputs for every detector (the whole files, then their first 4 KiB), the
detectors' rounds interleaved (the order rotating each round), best of ``--repeat``.
``ratio`` is a peer's time divided by utf8stream's (higher is better).

``utf8stream`` is ``utf8stream.detect.detect(data, max_lookahead)``; ``chardet`` is
``chardet.detect(data)`` (its defaults: up to 200,000 bytes); ``charset-normalizer`` is
``charset_normalizer.from_bytes(data).best()``.  Every answer is normalised by
``codecs.lookup(name).name``.  ``--confusions N`` prints each detector's N commonest
wrong answers on whole files (which label it took for which); ``--by shape`` groups
the accuracy table by the corpus's shapes (lines, documents, logs, ...) instead of by
family.
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _detect_corpus
import _report
from _detect_corpus import Sample, family, normalise

# A detector: the bytes -> the codec it guesses, or None for "not text".
Guess = Callable[[bytes], "str | None"]

PREFIXES: tuple[int | None, ...] = (64, 256, 1024, 4096, 65536, None)
DETECTORS = ("utf8stream", "chardet", "charset-normalizer")
THROUGHPUT_INPUTS: tuple[int | None, ...] = (None, 4096)


def prefix_name(prefix: int | None) -> str:
    if prefix is None:
        return "whole"
    return f"{prefix // 1024} KiB" if prefix >= 1024 else f"{prefix} B"


# --- the rule --------------------------------------------------------------------------


def label_text(data: bytes, label: str, final: bool) -> tuple[str, int]:
    """The text of ``data`` in ``label`` and how many bytes it is made of: all of them
    when ``final``, else up to the last whole character (the rest held back)."""
    decoder = codecs.getincrementaldecoder(label)("strict")
    text = decoder.decode(data, final)
    held = b"" if final else decoder.getstate()[0]
    return text, len(data) - len(held)


def is_right(data: bytes, label: str | None, guess: str | None, final: bool = True) -> bool:
    """Whether ``guess`` is right for ``data`` (the whole file when ``final``, else a
    prefix of it) labelled ``label``: the rule the module's docstring states."""
    if label is None or guess is None:
        return label == guess
    expected, used = label_text(data, label, final)
    try:
        guessed = codecs.decode(data[:used], guess, "strict")
    except (UnicodeError, LookupError, ValueError, TypeError):
        return False
    if not isinstance(guessed, str):
        return False
    return guessed.removeprefix("\ufeff") == expected.removeprefix("\ufeff")


def score(
    samples: Sequence[Sample],
    guess: Guess,
    prefixes: Sequence[int | None] = PREFIXES,
    by: str = "family",
) -> dict[tuple[str, int | None], tuple[int, int]]:
    """(group, prefix) -> (right, files); the groups are each file's family (or its shape,
    ``by="shape"``), ``"all"``, and ``"all dev"`` / ``"all held-out"``."""
    counts: dict[tuple[str, int | None], list[int]] = {}
    for sample in samples:
        for prefix in prefixes:
            whole = prefix is None or prefix >= len(sample.data)
            data = sample.data if whole else sample.data[:prefix]
            right = is_right(data, sample.label, normalise(guess(data)), final=whole)
            own = family(sample.label) if by == "family" else sample.shape
            for group in (own, "all", "all " + sample.split):
                key = (group, prefix)
                cell = counts.setdefault(key, [0, 0])
                cell[0] += right
                cell[1] += 1
    return {key: (cell[0], cell[1]) for key, cell in counts.items()}


def confusions(
    samples: Sequence[Sample], guess: Guess, prefix: int | None = None
) -> Counter[tuple[str | None, str | None]]:
    """(label, wrong guess) -> how many files, at ``prefix`` (the whole file: None)."""
    wrong: Counter[tuple[str | None, str | None]] = Counter()
    for sample in samples:
        whole = prefix is None or prefix >= len(sample.data)
        data = sample.data if whole else sample.data[:prefix]
        answer = normalise(guess(data))
        if not is_right(data, sample.label, answer, final=whole):
            wrong[(sample.label, answer)] += 1
    return wrong


# --- the detectors -----------------------------------------------------------------------


def make_detector(name: str, max_lookahead: int) -> Guess:
    """The detector called ``name``; SystemExit with the reason where it is missing."""
    try:
        if name == "utf8stream":
            detect: Callable[..., Any] = importlib.import_module("utf8stream.detect").detect

            def ours(data: bytes) -> str | None:
                encoding: str | None = detect(data, max_lookahead=max_lookahead).encoding
                return encoding

            return ours
        if name == "chardet":
            chardet_detect = importlib.import_module("chardet").detect

            def chardet(data: bytes) -> str | None:
                encoding: str | None = chardet_detect(data)["encoding"]
                return encoding

            return chardet
        if name == "charset-normalizer":
            from_bytes = importlib.import_module("charset_normalizer").from_bytes
            logging.getLogger("charset_normalizer").setLevel(logging.ERROR)

            def charset_normalizer(data: bytes) -> str | None:
                best = from_bytes(data).best()
                return None if best is None else str(best.encoding)

            return charset_normalizer
    except ImportError as exc:
        raise SystemExit(
            f"bench_detect: {name} is not installed here ({exc});"
            " install the bench extra, or leave it out with --detectors"
        ) from None
    raise SystemExit(f"bench_detect: no detector called {name!r}")


def versions(names: Sequence[str]) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "?"
    return found


# --- the tables --------------------------------------------------------------------------


def accuracy_table(
    samples: Sequence[Sample], detectors: dict[str, Guess], by: str = "family"
) -> dict[str, dict[tuple[str, int | None], tuple[int, int]]]:
    results = {name: score(samples, guess, by=by) for name, guess in detectors.items()}
    families = sorted({k[0] for r in results.values() for k in r}, key=_family_order)
    header = [by, "files", "detector", *map(prefix_name, PREFIXES)]
    print("\n" + " | ".join(header))
    for fam in families:
        for name, result in results.items():
            cells = [result[(fam, p)] for p in PREFIXES]
            percents = [100.0 * right / files for right, files in cells]
            print(
                f"{fam} | {cells[0][1]} | {name} | "
                + " | ".join(f"{percent:.1f}" for percent in percents)
            )
            _report.record(
                "detect-accuracy",
                **{by: fam},
                files=cells[0][1],
                detector=name,
                **{prefix_name(p): round(v, 2) for p, v in zip(PREFIXES, percents, strict=True)},
            )
    return results


def _family_order(name: str) -> tuple[int, str]:
    order = [f[0] for f in _detect_corpus.FAMILIES] + ["not text", "other", "all"]
    order += ["all " + split for split in _detect_corpus.SPLITS]
    # A shape (``--by shape``) is no family: the shapes come first, by name.
    return (order.index(name) if name in order else -1, name)


def throughput_table(samples: Sequence[Sample], detectors: dict[str, Guess], repeat: int) -> None:
    for prefix in THROUGHPUT_INPUTS:
        inputs = [s.data if prefix is None else s.data[:prefix] for s in samples]
        size = sum(map(len, inputs))
        best = dict.fromkeys(detectors, float("inf"))
        names = list(detectors)
        for round_ in range(repeat):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                guess = detectors[name]
                start = time.perf_counter()
                for data in inputs:
                    guess(data)
                best[name] = min(best[name], time.perf_counter() - start)
        print(f"\nthroughput, {prefix_name(prefix)} ({len(inputs)} inputs, {size:,} bytes)")
        for name in names:
            ratio = best[name] / best["utf8stream"] if "utf8stream" in best else None
            ratio_text = "" if ratio is None else f"  ratio {ratio:.2f}"
            print(f"  {name}: {size / best[name] / 1e6:.2f} MB/s{ratio_text}")
            _report.record(
                "detect-throughput",
                inputs=prefix_name(prefix),
                detector=name,
                mb_per_s=round(size / best[name] / 1e6, 3),
                ratio=None if ratio is None else round(ratio, 3),
            )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=_detect_corpus.DEFAULT_DIR)
    parser.add_argument("--split", choices=("all", *_detect_corpus.SPLITS), default="all")
    parser.add_argument("--sample", type=int, default=1, help="every Nth file only")
    parser.add_argument("--detectors", nargs="+", choices=DETECTORS, default=list(DETECTORS))
    parser.add_argument("--repeat", type=int, default=3, help="throughput rounds")
    parser.add_argument("--max-lookahead", type=int, default=65536)
    parser.add_argument(
        "--by",
        choices=("family", "shape"),
        default="family",
        help="the accuracy table's rows: encoding families, or the corpus's shapes",
    )
    parser.add_argument(
        "--confusions",
        type=int,
        default=0,
        metavar="N",
        help="print each detector's N commonest wrong answers (label -> guess), whole files",
    )
    _report.add_option(parser)
    args = parser.parse_args(argv)
    with _report.reporting(args.json):
        detectors = {name: make_detector(name, args.max_lookahead) for name in args.detectors}
        corpus = _detect_corpus.ensure(args.corpus)
        samples = [s for s in corpus if args.split in ("all", s.split)][:: args.sample]
        print(_detect_corpus.summary(samples))
        found = versions([n for n in args.detectors if n != "utf8stream"])
        print("peers: " + ", ".join(f"{n} {v}" for n, v in found.items()))
        print(f"accelerator: {_report.accelerator()}")
        accuracy_table(samples, detectors, args.by)
        for name, guess in detectors.items() if args.confusions else ():
            print(f"\n{name}: the commonest wrong answers on whole files (label -> guess)")
            for (label, answer), count in confusions(samples, guess).most_common(args.confusions):
                print(f"  {label} -> {answer}: {count}")
        throughput_table(samples, detectors, args.repeat)


if __name__ == "__main__":
    main()
