"""Two builds of the C accelerator timed against each other in one process.

    .venv/bin/python benchmarks/ab_builds.py BEFORE.so [AFTER.so] [--corpora NAME ...]
        [--size MiB] [--rounds N] [--chunk BYTES] [--lines] [--json]

A before/after timing of a change to the decoding loop or its kernels, for a machine
that other work keeps busy: both builds (``BEFORE.so``, e.g. a copy of another checkout's
``src/utf8stream/_speedups*.so``, and ``AFTER.so``, by default this checkout's) are
loaded side by side (as ``before._speedups`` and ``after._speedups``) and their
``Units.feed`` runs over the same chunks in alternation, round after round; the best
round of each is printed, and ``before / after`` (above 1: the change is faster).  The
load of the machine then weighs on both alike, which separate runs of bench_decoder.py
do not promise; the ratio still moves by several per cent from run to run at a load of
5 or more, so repeat it.  Only the C call is timed (no ``Utf8Decoder`` around it), each
text dropped when made (hot memory, as bench_decoder.py's ``streamed`` rows).

``--lines``: ``Units.lines`` instead (the line cutter of ``LineReceiveStream`` and the
line engine, bench_streams.py's lines rows): each chunk's complete lines cut and decoded
one by one, the unfinished line carried to the next chunk as the engine carries it
(joined as ``head``), newline ``\n``, each line's string dropped when made.

Corpora: those of ``_corpora.py`` (``NAMES``), and ``words-ru``, ``words-el``,
``words-ko`` (web.py's sentences in those languages as random words among spaces: UCS-2
text whose characters are two or three bytes long, in words of unpredictable length)
and ``words-de-ucs2`` (German and English words, a ``5€`` now and then: European text in
a UCS-2 string); each of them with ``-lines`` (``words-ru-lines``): the same words in
lines of 1 to 40 words, for ``--lines``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import random
import sys
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _corpora
import _report

from utf8stream import Malformed
from utf8stream.core._accel import ACCEL_KINDS

SRC = Path(__file__).resolve().parent.parent / "src" / "utf8stream"


def load(tag: str, path: Path) -> ModuleType:
    """The extension at path as the module ``tag._speedups``, set up as _accel does."""
    spec = importlib.util.spec_from_file_location(f"{tag}._speedups", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.setup(
        ACCEL_KINDS,
        Malformed,
        Malformed.__dict__["offset"],
        Malformed.__dict__["data"],
        Malformed.__dict__["kind"],
    )
    return module


def corpus(name: str, size: int) -> bytes:
    rnd = random.Random(2026)
    if name == "corrupted":
        return _corpora.corrupt(_corpora.mixed(size, rnd), rnd)
    if name.startswith("words-"):
        base = name.removesuffix("-lines")
        language = base.removeprefix("words-").removesuffix("-ucs2")
        words = _corpora._WEB_TEXT[language].split()
        if base == "words-de-ucs2":
            words += _corpora._WEB_TEXT["en"].split() * 3 + ["5€"]
        if base != name:  # lines of 1..40 words (for --lines)
            text = "\n".join(
                " ".join(rnd.choice(words) for _ in range(rnd.randrange(1, 41)))
                for _ in range(size // 200)
            )
        else:
            text = " ".join(rnd.choice(words) for _ in range(size // 4))
        return _corpora._repeat_to(text.encode(), size)
    return bytes(getattr(_corpora, name.replace("-", "_"))(size, rnd))


def feed_all(module: ModuleType, chunks: list[bytes]) -> tuple[float, str]:
    """Seconds for one pass of Units.feed over chunks, and the last chunk's text."""
    units = module.Units("\ufffd", None)
    pending, position, text = b"", 0, ""
    gc.disable()
    try:
        start = time.perf_counter()
        for chunk in chunks:
            position += len(chunk)
            text, pending = units.feed(pending, chunk, False, position)
        return time.perf_counter() - start, text
    finally:
        gc.enable()


def lines_all(module: ModuleType, chunks: list[bytes]) -> tuple[float, list[str]]:
    """Seconds for one pass of Units.lines over chunks (the engine's calls: the
    unfinished line carried as ``head``), and the last chunk's lines."""
    units = module.Units("\ufffd", None)
    head, position, texts = b"", 0, []
    gc.disable()
    try:
        start = time.perf_counter()
        for chunk in chunks:
            texts, offsets = units.lines(head, chunk, position, 10, 1 << 30, 0)
            end = offsets[-1]
            used, held = end - position, len(head)
            head = chunk[used - held :] if used >= held else head[used:] + chunk
            position = end
        return time.perf_counter() - start, texts
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the accelerator built before the change")
    parser.add_argument("after", type=Path, nargs="?", help="default: this checkout's")
    parser.add_argument("--corpora", nargs="+", default=["cjk", "mixed", "dense-emoji"])
    parser.add_argument("--size", type=float, default=4, help="MiB per corpus (default 4)")
    parser.add_argument("--rounds", type=int, default=7, help="best of N (default 7)")
    parser.add_argument("--chunk", type=int, default=65536, help="bytes (default 65536)")
    parser.add_argument("--lines", action="store_true", help="time Units.lines, not feed")
    _report.add_option(parser)
    args = parser.parse_args()
    with _report.reporting(args.json):
        compare(args)


def compare(args: argparse.Namespace) -> None:
    after = args.after or next(SRC.glob("_speedups*.so"))
    sides = {"before": load("before", args.before), "after": load("after", after)}
    print(f"before {args.before}\nafter  {after}")
    run = lines_all if args.lines else feed_all
    print(
        f"{'Units.lines' if args.lines else 'Units.feed'}: {args.size} MiB per corpus in"
        f" {args.chunk}-byte chunks, best of {args.rounds}"
    )
    for name in args.corpora:
        chunks = _corpora.chunked(corpus(name, int(args.size * (1 << 20))), args.chunk)
        best = dict.fromkeys(sides, float("inf"))
        texts: dict[str, object] = {}
        for _ in range(args.rounds):
            for side, module in sides.items():
                seconds, texts[side] = run(module, chunks)
                best[side] = min(best[side], seconds)
        assert texts["before"] == texts["after"], name
        print(
            f"{name:14} before {best['before'] * 1e3:8.2f} ms  after {best['after'] * 1e3:8.2f} ms"
            f"  before/after {best['before'] / best['after']:.3f}"
        )
        _report.record(
            "ab-builds",
            corpus=name,
            call="Units.lines" if args.lines else "Units.feed",
            chunk=args.chunk,
            peer="before",
            peer_s=best["before"],
            ours_s=best["after"],
            ratio=best["before"] / best["after"],
        )


if __name__ == "__main__":
    main()
