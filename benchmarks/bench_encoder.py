"""Utf8Encoder and Transcoder against CPython, side by side, at 64 KiB chunks.

    .venv/bin/python benchmarks/bench_encoder.py [--size MiB] [--repeat N]

For each corpus (benchmarks/_corpora.py), the text is what a 64 KiB-chunked decoder
yields, so every encoder sees the same chunks.  Printed: the best-of-N time of each
contender (their runs interleaved) and ratio = peer_time / our_time (higher is better;
1.0 means as fast).

* ``Utf8Encoder`` against ``str.encode("utf-8")`` per chunk and against the ``codecs``
  incremental UTF-8 encoder (target >= 0.9 for both);
* ``Transcoder("utf-8", "utf-16-le")`` against ``codecs`` incremental UTF-8 decoding plus
  incremental UTF-16-LE encoding (target >= 0.9);
* for information, no target: the WTF-8 encoder against ``str.encode`` with
  ``surrogatepass`` (the same bytes on this text) and the CESU-8 encoder against
  ``str.encode``.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report
from _corpora import NAMES, build_corpora, chunked

from utf8stream import Transcoder, Utf8Encoder

CHUNK = 65536
TARGET = 0.9


def text_chunks(data: bytes) -> list[str]:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    chunks = [decoder.decode(c) for c in chunked(data, CHUNK)]
    chunks.append(decoder.decode(b"", True))
    return chunks


def str_encode(chunks: list[str]) -> int:
    return sum(len(c.encode("utf-8")) for c in chunks)


def str_encode_surrogatepass(chunks: list[str]) -> int:
    return sum(len(c.encode("utf-8", "surrogatepass")) for c in chunks)


def codecs_encode(chunks: list[str]) -> int:
    encode = codecs.getincrementalencoder("utf-8")("strict").encode
    return sum(len(encode(c)) for c in chunks) + len(encode("", True))


def ours(variant: str) -> Callable[[list[str]], int]:
    def run(chunks: list[str]) -> int:
        encode = Utf8Encoder("strict", variant=variant).encode
        return sum(len(encode(c)) for c in chunks) + len(encode("", True))

    return run


def codecs_transcode(chunks: list[bytes]) -> int:
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    encode = codecs.getincrementalencoder("utf-16-le")("replace").encode
    n = sum(len(encode(decode(c))) for c in chunks)
    return n + len(encode(decode(b"", True), True))


def our_transcode(chunks: list[bytes]) -> int:
    transcode = Transcoder("utf-8", "utf-16-le").transcode
    return sum(len(transcode(c)) for c in chunks) + len(transcode(b"", True))


Runner = Callable[[Any], int]


def best_times(fns: list[Runner], arg: object, repeat: int) -> list[float]:
    """Best-of-``repeat`` time of each function, the runs interleaved (peer, ours, peer,
    ours, ...) so that both see the same machine state."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            gc.collect()
            start = time.perf_counter()
            fn(arg)
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8, help="MiB per corpus (default 8)")
    parser.add_argument("--repeat", type=int, default=7, help="best of N (default 7)")
    _report.add_option(parser)
    args = parser.parse_args()
    with _report.reporting(args.json):
        run(args)


def run(args: argparse.Namespace) -> None:
    corpora = build_corpora(args.size * 1024 * 1024)
    print(
        f"Python {sys.version.split()[0]}, {args.size} MiB per corpus, 64 KiB chunks,"
        f" best of {args.repeat}"
    )
    header = f"{'corpus':10} {'ours':26} {'against':30} {'peer s':>8} {'ours s':>8} {'ratio':>6}"
    print(header)
    print("-" * (len(header) + 12))
    failures = 0
    for name in NAMES:
        data = corpora[name]
        texts = text_chunks(data)
        byte_chunks = chunked(data, CHUNK)
        # Same output, or the comparison means nothing.
        assert str_encode(texts) == codecs_encode(texts) == ours("utf-8")(texts)
        assert codecs_transcode(byte_chunks) == our_transcode(byte_chunks)
        rows: list[tuple[str, Runner, str, Runner, object, float | None]] = [
            ("Utf8Encoder", ours("utf-8"), "str.encode", str_encode, texts, TARGET),
            ("Utf8Encoder", ours("utf-8"), "codecs incremental encoder", codecs_encode, texts,
             TARGET),
            ("Transcoder utf-8>utf-16-le", our_transcode, "codecs decode + encode",
             codecs_transcode, byte_chunks, TARGET),
            ("Utf8Encoder wtf-8", ours("wtf-8"), "str.encode surrogatepass",
             str_encode_surrogatepass, texts, None),
            ("Utf8Encoder cesu-8", ours("cesu-8"), "str.encode", str_encode, texts, None),
        ]  # fmt: skip
        for label, fn, peer_label, peer_fn, arg, target in rows:
            peer, mine = best_times([peer_fn, fn], arg, args.repeat)
            ratio = peer / mine
            verdict = "(info)"
            if target is not None:
                verdict = f">= {target} " + ("ok" if ratio >= target else "MISSED")
                failures += ratio < target
            print(
                f"{name:10} {label:26} {peer_label:30} {peer:8.4f} {mine:8.4f} {ratio:6.2f}"
                f" {verdict}"
            )
            _report.record(
                "encoder",
                corpus=name,
                ours=label,
                peer=peer_label,
                peer_s=peer,
                ours_s=mine,
                ratio=ratio,
                target=target,
            )
    print(f"{failures} target(s) missed")


if __name__ == "__main__":
    main()
