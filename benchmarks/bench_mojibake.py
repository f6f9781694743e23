"""Mojibake repair: utf8stream's ``MojibakeRepairer`` against ``ftfy.fix_encoding``.

    .venv/bin/python benchmarks/bench_mojibake.py [--split all|dev|held-out]
        [--sample N] [--speed-lines N] [--repeat N] [--max-carry N] [--examples N]
        [--rebuild] [--bytes [--file-lines N]] [--json]

The corpus is ``benchmarks/_mojibake_corpus.py``'s, made in memory and kept in
``~/.cache/utf8stream-mojibake-corpus/lines.json`` (``--rebuild`` makes it again).  ftfy
is the ``bench`` extra (``pip install -e '.[bench]'``).

**Repairs**, per split, on ``--sample`` mojibake lines (all with 0): ``ftfy fixed`` is
how many lines ftfy gives back as the text they were made from, ``ours too`` how many of
those utf8stream gives back the same (the agreement on the lines ftfy repairs);
``ftfy changed`` counts every line ftfy changes, ``same output`` how many of those
utf8stream turns into exactly the same text (ftfy's partial repairs included, where
utf8stream goes further or stops earlier); ``ours fixed`` and ``ftfy fixed`` over all the
lines sampled.

**False repairs**, per split and source: every correct line (catalogue messages, wordfreq
sentences, look-alikes) that a repairer changes, per 100,000 lines.

**Throughput**: µs per line for ``--speed-lines`` lines of each kind (correct,
mojibake), the same lines for every contender, rounds interleaved (the order rotating),
best of ``--repeat``: ``ftfy`` calls ``fix_encoding`` on each line; ``stream`` hands
utf8stream the lines joined by ``\\n`` in 64 KiB pieces (one ``MojibakeRepairer``, as a
stream would); ``per line`` calls ``repair_mojibake`` on each line.  ``ratio`` is ftfy's
time divided by ours.

**Bytes** (``--bytes``, instead of the rest): ``MojibakeBytesRepairer`` on UTF-8 bytes
in 64 KiB pieces against decoding them, ``MojibakeRepairer`` and encoding, on correct
lines, mojibake lines, and correct lines with one in a hundred of mojibake; rounds
interleaved, best of ``--repeat``, the outputs checked equal.  Then ``transcode_file``
UTF-8 into UTF-8 with the repair on two files of ``--file-lines`` lines (the corpus's
correct lines; log lines, ASCII but for a few accents), one in a hundred of mojibake:
on bytes (a lone ``MojibakeRepairer``) against the text path (a subclass of it, a
program's own transform), CPU time (``time.process_time``) and wall time.
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _mojibake_corpus
import _report
from _mojibake_corpus import Line

from utf8stream import transcode_file
from utf8stream.transforms import MojibakeBytesRepairer, MojibakeRepairer, repair_mojibake

CACHE = Path.home() / ".cache" / "utf8stream-mojibake-corpus" / "lines.json"
CACHE_VERSION = 1
CHUNK = 65536


def _ftfy() -> Any:
    """ftfy, the peer (the bench extra); SystemExit with the reason where it is missing."""
    try:
        return importlib.import_module("ftfy")
    except ImportError as exc:
        raise SystemExit(
            f"bench_mojibake: ftfy is not installed here ({exc}); install the bench extra"
        ) from None


def load(rebuild: bool) -> list[Line]:
    if CACHE.exists() and not rebuild:
        raw = json.loads(CACHE.read_text("utf-8"))
        if raw.get("version") == CACHE_VERSION:
            return [
                Line(row[0], row[1], row[2], row[3], row[4], row[5], tuple(row[6]))
                for row in raw["lines"]
            ]
    lines = _mojibake_corpus.lines()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        [x.text, x.truth, x.kind, x.source, x.language, x.split, list(x.layers)] for x in lines
    ]
    tmp = CACHE.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": CACHE_VERSION, "lines": rows}), "utf-8")
    tmp.replace(CACHE)
    return lines


def repairs(name: str, lines: list[Line], max_carry: int, examples: int) -> None:
    ftfy = _ftfy()

    counts: Counter[str] = Counter()
    missed: Counter[tuple[str, ...]] = Counter()
    shown = 0
    for line in lines:
        fixed = ftfy.fix_encoding(line.text)
        ours = repair_mojibake(line.text, max_carry=max_carry)
        counts["lines"] += 1
        counts["ours fixed"] += ours == line.truth
        counts["ftfy fixed"] += fixed == line.truth
        if fixed == line.truth:
            counts["ours too"] += ours == line.truth
            if ours != line.truth:
                missed[line.layers] += 1
                if shown < examples:
                    shown += 1
                    print(f"    missed {line.layers}: {line.text[:70]!r} -> {ours[:50]!r}")
        if fixed != line.text:
            counts["ftfy changed"] += 1
            counts["same output"] += fixed == ours
    agreement = 100 * counts["ours too"] / max(counts["ftfy fixed"], 1)
    same = 100 * counts["same output"] / max(counts["ftfy changed"], 1)
    n = max(counts["lines"], 1)
    print(
        f"{name:9} {counts['lines']:>8,} lines: ftfy fixed {counts['ftfy fixed']:>7,},"
        f" ours too {counts['ours too']:>7,} ({agreement:.2f} %);"
        f" ftfy changed {counts['ftfy changed']:>7,},"
        f" same output {counts['same output']:>7,} ({same:.2f} %);"
        f" ours fixed {counts['ours fixed']:>7,} ({100 * counts['ours fixed'] / n:.2f} %)"
    )
    if missed:
        print(
            "    missed by layers:",
            ", ".join(f"{'+'.join(k)} {v}" for k, v in missed.most_common(6)),
        )
    _report.record(
        "repairs",
        split=name,
        agreement_pct=agreement,
        same_output_pct=same,
        **{key.replace(" ", "_"): value for key, value in counts.items()},
    )


def false_repairs(name: str, lines: list[Line], max_carry: int, examples: int) -> None:
    ftfy = _ftfy()

    by_source: dict[str, Counter[str]] = {}
    shown = 0
    for line in lines:
        counts = by_source.setdefault(line.source, Counter())
        counts["lines"] += 1
        ours = repair_mojibake(line.text, max_carry=max_carry)
        if ours != line.text:
            counts["ours"] += 1
            if shown < examples:
                shown += 1
                where = f"{line.source}, {line.language}"
                print(f"    changed ({where}): {line.text[:70]!r} -> {ours[:70]!r}")
        counts["ftfy"] += ftfy.fix_encoding(line.text) != line.text
    total: Counter[str] = Counter()
    for source, counts in sorted(by_source.items()):
        total.update(counts)
        _print_false(name, source, counts)
    _print_false(name, "all", total)


def _print_false(split: str, source: str, counts: Counter[str]) -> None:
    n = max(counts["lines"], 1)
    print(
        f"{split:9} {source:10} {counts['lines']:>8,} correct lines: changed by ours"
        f" {counts['ours']:>4} ({100_000 * counts['ours'] / n:.1f} per 100,000), by ftfy"
        f" {counts['ftfy']:>5} ({100_000 * counts['ftfy'] / n:.1f} per 100,000)"
    )
    _report.record(
        "false-repairs",
        split=split,
        source=source,
        lines=counts["lines"],
        ours=counts["ours"],
        ftfy=counts["ftfy"],
    )


def _stream(text: str, max_carry: int) -> str:
    repairer = MojibakeRepairer(max_carry=max_carry)
    out = [repairer.transform(text[i : i + CHUNK]) for i in range(0, len(text), CHUNK)]
    out.append(repairer.transform("", final=True))
    return "".join(out)


def throughput(kind: str, texts: Sequence[str], repeat: int, max_carry: int) -> None:
    ftfy = _ftfy()

    joined = "\n".join(texts) + "\n"
    contenders: dict[str, Callable[[], object]] = {
        "ftfy": lambda: [ftfy.fix_encoding(t) for t in texts],
        "stream": lambda: _stream(joined, max_carry),
        "per line": lambda: [repair_mojibake(t, max_carry=max_carry) for t in texts],
    }
    best = dict.fromkeys(contenders, float("inf"))
    names = list(contenders)
    for round_ in range(repeat):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            start = time.perf_counter()
            contenders[name]()
            best[name] = min(best[name], time.perf_counter() - start)
    per = {name: 1e6 * seconds / len(texts) for name, seconds in best.items()}
    print(
        f"{kind:9} {len(texts):>7,} lines: ftfy {per['ftfy']:7.2f} µs/line; stream"
        f" {per['stream']:6.2f} µs/line (ratio {per['ftfy'] / per['stream']:5.1f}); per line"
        f" {per['per line']:6.2f} µs/line (ratio {per['ftfy'] / per['per line']:5.1f})"
    )
    _report.record(
        "throughput",
        kind=kind,
        lines=len(texts),
        ftfy_us=per["ftfy"],
        stream_us=per["stream"],
        per_line_us=per["per line"],
        ratio=per["ftfy"] / per["stream"],
    )


def _in_bytes(data: bytes) -> bytes:
    """The shipped byte-domain repair, as a stream: 64 KiB pieces."""
    repairer = MojibakeBytesRepairer()
    out = [repairer.transform(data[i : i + CHUNK]) for i in range(0, len(data), CHUNK)]
    out.append(repairer.transform(b"", final=True))
    return b"".join(out)


def _in_text(data: bytes) -> bytes:
    """Decode, repair the text, encode: 64 KiB pieces, as a stream."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    repairer = MojibakeRepairer()
    out = [
        repairer.transform(decoder.decode(data[i : i + CHUNK])).encode()
        for i in range(0, len(data), CHUNK)
    ]
    out.append(repairer.transform(decoder.decode(b"", True), final=True).encode())
    return b"".join(out)


def byte_domain(lines: list[Line], speed_lines: int, repeat: int, rnd: random.Random) -> None:
    """``MojibakeBytesRepairer`` against decoding, ``MojibakeRepairer`` and encoding, on
    correct lines, mojibake lines, and correct lines with one in a hundred of mojibake."""
    correct = [x.text for x in lines if x.kind == "correct"]
    mojibake = [x.text for x in lines if x.kind == "mojibake"]
    correct = rnd.sample(correct, min(speed_lines, len(correct)))
    mojibake = rnd.sample(mojibake, min(speed_lines, len(mojibake)))
    mixed = [rnd.choice(mojibake) if rnd.random() < 0.01 else line for line in correct]
    for kind, texts in (("correct", correct), ("mojibake", mojibake), ("1% mojibake", mixed)):
        data = ("\n".join(texts) + "\n").encode()
        same = _in_bytes(data) == _in_text(data)
        best = {"bytes": float("inf"), "text": float("inf")}
        for round_ in range(repeat):
            for name in ("bytes", "text") if round_ % 2 == 0 else ("text", "bytes"):
                run = _in_bytes if name == "bytes" else _in_text
                start = time.perf_counter()
                run(data)
                best[name] = min(best[name], time.perf_counter() - start)
        per = {name: 1e6 * seconds / len(texts) for name, seconds in best.items()}
        print(
            f"{kind:13} {len(texts):>7,} lines: decode, repair, encode {per['text']:6.2f} µs/line;"
            f" in bytes {per['bytes']:6.2f} µs/line (ratio {per['text'] / per['bytes']:5.2f});"
            f" same output: {same}"
        )
        _report.record("bytes", kind=kind, lines=len(texts), ratio=per["text"] / per["bytes"])


class _TextPath(MojibakeRepairer):
    """``MojibakeRepairer`` as a program's own transform, which the text path runs."""


_LOG_WORDS = [
    "the",
    "request",
    "user",
    "session",
    "started",
    "finished",
    "error",
    "warning",
    "retry",
    "timeout",
    "cache",
    "disk",
    "node",
    "worker",
    "queue",
    "café",
    "naïve",
    "résumé",
    "Zürich",
]


def _log_line(i: int, rnd: random.Random) -> str:
    """A line of a log: ASCII but for a few accented words."""
    words = " ".join(rnd.choice(_LOG_WORDS) for _ in range(8))
    return f"2026-11-29T12:{i % 60:02d}:{i % 59:02d} INFO {words}"


def file_level(lines: list[Line], file_lines: int, repeat: int, rnd: random.Random) -> None:
    """``transcode_file`` UTF-8 into UTF-8 with the mojibake repair on files of correct
    lines (the corpus's, multilingual; or log lines, mostly ASCII) with one in a hundred
    of the corpus's mojibake: the repair made on bytes (a ``MojibakeRepairer`` alone, as
    ``transcode --fix-mojibake`` gives it) against the text path (a subclass of it, which
    may repair otherwise: ``transcode_file`` gives it the text); CPU and wall time."""
    correct = [x.text for x in lines if x.kind == "correct"]
    mojibake = [x.text for x in lines if x.kind == "mojibake"]
    kinds: dict[str, Callable[[int], str]] = {
        "corpus": lambda i: rnd.choice(correct),
        "log": lambda i: _log_line(i, rnd),
    }
    for kind, make in kinds.items():
        texts = [
            rnd.choice(mojibake) if rnd.random() < 0.01 else make(i) for i in range(file_lines)
        ]
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "in.txt"
            src.write_bytes(("\n".join(texts) + "\n").encode())
            outputs = {"bytes": Path(tmp) / "bytes.txt", "text": Path(tmp) / "text.txt"}
            cpu = {"bytes": float("inf"), "text": float("inf")}
            wall = dict(cpu)
            for round_ in range(repeat):
                for name in ("bytes", "text") if round_ % 2 == 0 else ("text", "bytes"):
                    repairer = MojibakeRepairer() if name == "bytes" else _TextPath()
                    start, start_cpu = time.perf_counter(), time.process_time()
                    transcode_file(src, outputs[name], transforms=repairer)
                    cpu[name] = min(cpu[name], time.process_time() - start_cpu)
                    wall[name] = min(wall[name], time.perf_counter() - start)
            same = outputs["bytes"].read_bytes() == outputs["text"].read_bytes()
            mib = src.stat().st_size / 2**20
        print(
            f"transcode_file, {kind} lines, 1% mojibake, {mib:5.1f} MiB: CPU text path"
            f" {cpu['text']:.3f} s, on bytes {cpu['bytes']:.3f} s (ratio"
            f" {cpu['text'] / cpu['bytes']:4.2f}); wall ratio {wall['text'] / wall['bytes']:4.2f};"
            f" same output: {same}"
        )
        _report.record("file", kind=kind, mib=mib, ratio=cpu["text"] / cpu["bytes"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("all", *_mojibake_corpus.SPLITS), default="all")
    parser.add_argument(
        "--sample",
        type=int,
        default=50_000,
        help="mojibake lines per split for the repairs (0: all; default 50,000)",
    )
    parser.add_argument(
        "--speed-lines",
        type=int,
        default=20_000,
        help="lines of each kind for the throughput (default 20,000)",
    )
    parser.add_argument(
        "--file-lines",
        type=int,
        default=200_000,
        help="lines of the file transcoded with --bytes (default 200,000)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds of throughput (best of)")
    parser.add_argument("--max-carry", type=int, default=256)
    parser.add_argument("--examples", type=int, default=5, help="misses and changes printed")
    parser.add_argument("--rebuild", action="store_true", help="make the corpus again")
    parser.add_argument(
        "--bytes",
        action="store_true",
        help="measure only the byte-domain repair against decoding and repairing the text",
    )
    _report.add_option(parser)
    args = parser.parse_args(argv)
    with _report.reporting(args.json):
        lines = load(args.rebuild)
        splits = _mojibake_corpus.SPLITS if args.split == "all" else (args.split,)
        rnd = random.Random(34)
        if args.bytes:
            print("Byte domain (best of rounds, interleaved):")
            chosen = [x for x in lines if x.split in splits]
            byte_domain(chosen, args.speed_lines, args.repeat, rnd)
            file_level(chosen, args.file_lines, args.repeat, rnd)
            return 0
        print("Repairs (mojibake lines):")
        for split in splits:
            mojibake = [x for x in lines if x.split == split and x.kind == "mojibake"]
            if args.sample:
                mojibake = rnd.sample(mojibake, min(args.sample, len(mojibake)))
            repairs(split, mojibake, args.max_carry, args.examples)
        print("False repairs (correct lines):")
        for split in splits:
            correct = [x for x in lines if x.split == split and x.kind == "correct"]
            false_repairs(split, correct, args.max_carry, args.examples)
        print("Throughput (best of rounds, interleaved):")
        for kind in ("correct", "mojibake"):
            texts = [x.text for x in lines if x.kind == kind and x.split in splits]
            texts = rnd.sample(texts, min(args.speed_lines, len(texts)))
            throughput(kind, texts, args.repeat, args.max_carry)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
