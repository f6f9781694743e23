"""Utf8Decoder against CPython's codecs incremental UTF-8 decoder, side by side.

    .venv/bin/python benchmarks/bench_decoder.py [--size MiB] [--repeat N] [--variants]
        [--corpora NAME ...] [--chunks SIZE ...] [--json]

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

``--corpora`` and ``--chunks`` pick some corpora and chunk sizes (65536, 256) for a
focused A/B.

``--outputs``: each row is timed twice by default.  ``kept``: every chunk's text is kept
until the round ends, so each new string is written to memory no string of the round
used (16 MiB of fresh pages from the kernel per round, for both sides: at 64 KiB of
ASCII this page-fault and cache-miss cost is most of the time of either side).
``streamed``: each text is dropped as soon as it is made, as a stream's consumer does,
so the next string reuses memory still in cache (the conditions of simdutf's published
figures, which only a hot-memory run reaches).

Beside each row, ``copy``: the same chunks each copied into a new ``bytearray`` (kept or
dropped alike), interleaved with the two decoders, and ``codecs / copy``: the ratio a
decoder working at the speed of a bare copy would reach.  On ASCII the text is the bytes,
so this is the ceiling of the ratio there.

``--variants``: the UTF-8 variants instead (no DESIGN.md target: the ratio is printed).
WTF-8 is the mixed corpus with a lone surrogate half every ~200 characters; CESU-8 the
emoji corpus, each supplementary character a surrogate pair (six bytes); MUTF-8 the same
with a U+0000 (C0 80) every ~500 characters.  The bytes are built here from the text
(CPython's ``surrogatepass``), not by ``Utf8Encoder``.  The peer is CPython's incremental
UTF-8 decoder with ``surrogatepass`` plus the fixups that give the variant's text: for
CESU-8 and MUTF-8 a round trip through UTF-16 joins the pairs, a high half at the end of
a chunk's text waits for the next (as the variant decoder holds it: it may start a pair,
joined or, in WTF-8, malformed), and MUTF-8's C0 80
is replaced by 00 first (a C0 at a chunk end waits).  What differs: the peer accepts
what the variant forbids (four-byte sequences in CESU-8, a WTF-8 pair), which these
corpora do not hold.  Both sides' texts are checked equal, chunk by chunk, to each other
and in full to the text the corpus was built from.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import re
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report
from _corpora import NAMES, build_corpora, chunked

from utf8stream import Malformed, Utf8Decoder
from utf8stream.core._accel import use_accelerator
from utf8stream.core.decoder import accelerated

TARGETS = {65536: 1.5, 256: 1.2}


def run_codecs(chunks: list[bytes], keep: bool = True) -> list[str]:
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    return _drive(decode, chunks, keep)


def run_copy(chunks: list[bytes], keep: bool = True) -> list[bytearray]:
    """Not a decoder: each chunk copied into a new object of its size (``bytearray``),
    kept or dropped as the texts are.  The least any decoder does (read every byte,
    write a new object at least as long, one call a chunk): ``codecs / copy`` is the
    ratio a decoder running at copy speed would reach (a bound on ASCII, where the
    text is the bytes)."""
    if keep:
        return [bytearray(chunk) for chunk in chunks]
    total = 0
    for chunk in chunks:
        total += len(bytearray(chunk))
    return [bytearray(total.to_bytes(8, "little"))]


def run_ours(chunks: list[bytes], keep: bool = True) -> list[str]:
    return _drive(Utf8Decoder("replace").decode, chunks, keep)


def run_ours_events(
    chunks: list[bytes], keep: bool = True, events: list[Malformed] | None = None
) -> list[str]:
    """Every unit reported: a callback collects a ``Malformed`` event for each one."""
    if events is None:
        events = []
    return _drive(Utf8Decoder("replace", on_malformed=events.append).decode, chunks, keep)


def _drive(decode: Callable[..., str], chunks: list[bytes], keep: bool) -> list[str]:
    """Decode every chunk, then flush.  ``keep``: every text is kept in a list (the memory
    each new string is written to is memory no string used before in this round: for a
    16 MiB corpus, fresh pages from the kernel each round).  Otherwise each text is
    dropped as soon as it is made (what a stream does: decode, hand on, forget), so the
    next string reuses memory that is still in cache; only the total length is kept."""
    if keep:
        out = [decode(chunk) for chunk in chunks]
        out.append(decode(b"", True))
        return out
    total = 0
    for chunk in chunks:
        total += len(decode(chunk))
    total += len(decode(b"", True))
    return [str(total)]


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
    streamed = run_codecs(chunks, keep=False)
    assert streamed == [str(sum(map(len, expected)))] == run_ours(chunks, keep=False)
    assert run_ours_events(chunks, keep=False) == streamed
    events: list[Malformed] = []
    assert run_ours_events(chunks, events=events) == expected, "text differs with events"
    assert [(e.offset, e.end) for e in events] == cpython_units(data)
    assert all(data[e.offset : e.end] == e.data for e in events)
    if events:
        pure: list[Malformed] = []
        with use_accelerator(False):
            run_ours_events(chunks, events=pure)
        assert [(e.offset, e.data, e.kind) for e in events] == [
            (e.offset, e.data, e.kind) for e in pure
        ], "events differ from the pure-Python decoder"


def best_times(
    fns: Sequence[Callable[[list[bytes]], object]], chunks: list[bytes], repeat: int
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


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _as_pair(match: re.Match[str]) -> str:
    cp = ord(match.group()) - 0x10000
    return chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))


def variant_corpora(corpora: dict[str, bytes]) -> dict[str, tuple[str, bytes]]:
    """Each variant's (text, bytes), the bytes built from the text without utf8stream."""
    mixed = corpora["mixed"].decode("utf-8")
    lone = ["\ud800", "\udbff", "\udc00", "\udfff"]
    wtf8 = "".join(
        piece + lone[i % 4] for i, piece in enumerate(re.findall(r"(?s).{1,200}", mixed))
    )
    emoji = corpora["emoji"].decode("utf-8")
    with_nul = "".join(piece + "\x00" for piece in re.findall(r"(?s).{1,500}", emoji))
    return {
        "wtf-8": (wtf8, wtf8.encode("utf-8", "surrogatepass")),
        "cesu-8": (emoji, _ASTRAL.sub(_as_pair, emoji).encode("utf-8", "surrogatepass")),
        "mutf-8": (
            with_nul,
            _ASTRAL.sub(_as_pair, with_nul)
            .encode("utf-8", "surrogatepass")
            .replace(b"\x00", b"\xc0\x80"),
        ),
    }


def variant_peer(variant: str) -> Callable[[list[bytes]], list[str]]:
    """CPython's incremental decoder with surrogatepass, and the variant's fixups."""

    def run(chunks: list[bytes]) -> list[str]:
        decode = codecs.getincrementaldecoder("utf-8")("surrogatepass").decode
        out = []
        join = variant != "wtf-8"
        nul = variant == "mutf-8"
        held_byte = b""
        held = ""
        for chunk in [*chunks, None]:
            if chunk is None:
                text = held + decode(held_byte, True)
            else:
                if nul:
                    chunk = held_byte + chunk
                    held_byte = b""
                    if chunk.endswith(b"\xc0"):
                        held_byte = b"\xc0"
                        chunk = chunk[:-1]
                    chunk = chunk.replace(b"\xc0\x80", b"\x00")
                text = held + decode(chunk)
                held = ""
                if text and "\ud800" <= text[-1] <= "\udbff":
                    held = text[-1]
                    text = text[:-1]
            if join:
                text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
            out.append(text)
        return out

    return run


def variant_ours(variant: str) -> Callable[[list[bytes]], list[str]]:
    def run(chunks: list[bytes]) -> list[str]:
        decode = Utf8Decoder("replace", variant=variant).decode
        out = [decode(chunk) for chunk in chunks]
        out.append(decode(b"", True))
        return out

    return run


def main_variants(corpora: dict[str, bytes], repeat: int) -> None:
    header = f"{'variant':8} {'chunk':>6} {'codecs+fix s':>12} {'ours s':>9} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for variant, (text, data) in variant_corpora(corpora).items():
        for size in (65536, 256):
            chunks = chunked(data, size)
            peer, ours = variant_peer(variant), variant_ours(variant)
            expected = peer(chunks)
            assert "".join(expected) == text, f"{variant}: the peer's text is not the corpus"
            # In full, not chunk by chunk: the peer holds back a high surrogate half that
            # ends a chunk (to join it as UTF-16 would), ours gives it out at once when
            # the variant never pairs it (WTF-8).
            assert "".join(ours(chunks)) == text, f"{variant}: text differs from the peer's"
            peer_s, ours_s = best_times([peer, ours], chunks, repeat)
            print(f"{variant:8} {size:>6} {peer_s:12.4f} {ours_s:9.4f} {peer_s / ours_s:6.2f}")
            _report.record(
                "variants",
                variant=variant,
                chunk=size,
                peer="codecs surrogatepass + fixups",
                peer_s=peer_s,
                ours_s=ours_s,
                ratio=peer_s / ours_s,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16, help="MiB per corpus (default 16)")
    parser.add_argument("--repeat", type=int, default=5, help="best of N (default 5)")
    parser.add_argument("--variants", action="store_true", help="WTF-8, CESU-8, MUTF-8")
    parser.add_argument(
        "--corpora", nargs="+", choices=NAMES, default=list(NAMES), help="some corpora only"
    )
    parser.add_argument(
        "--chunks",
        nargs="+",
        type=int,
        choices=sorted(TARGETS),
        default=sorted(TARGETS, reverse=True),
        help="some chunk sizes only",
    )
    parser.add_argument(
        "--outputs",
        nargs="+",
        choices=("kept", "streamed"),
        default=["kept", "streamed"],
        help="kept: every text kept until the round ends; streamed: each dropped when made",
    )
    _report.add_option(parser)
    args = parser.parse_args()
    with _report.reporting(args.json):
        run(args)


def run(args: argparse.Namespace) -> None:
    corpora = build_corpora(args.size * 1024 * 1024)
    print(
        f"Python {sys.version.split()[0]}, {args.size} MiB per corpus, best of {args.repeat},"
        f" {'C accelerator' if accelerated() else 'pure Python'}"
    )
    if args.variants:
        main_variants(corpora, args.repeat)
        return
    header = (
        f"{'corpus':11} {'chunk':>6} {'variant':14} {'outputs':8} {'codecs s':>9}"
        f" {'ours s':>9} {'ratio':>6} target         {'copy s':>9} {'codecs/copy':>11}"
    )
    print(header)
    print("-" * len(header))
    failures = dict.fromkeys(args.outputs, 0)
    for name in args.corpora:
        data = corpora[name]
        for size in args.chunks:
            chunks = chunked(data, size)
            # Same output, or the comparison means nothing.
            check_equal(data, chunks)
            variants: list[tuple[str, Callable[..., list[str]]]] = [("replace", run_ours)]
            if name == "corrupted":
                variants.append(("+ all events", run_ours_events))
            for outputs in args.outputs:
                keep = outputs == "kept"
                peer, copy, *times = best_times(
                    [
                        partial(fn, keep=keep)
                        for fn in (run_codecs, run_copy, *(f for _, f in variants))
                    ],
                    chunks,
                    args.repeat,
                )
                target = TARGETS[size]
                for (label, _), ours in zip(variants, times, strict=True):
                    ratio = peer / ours
                    ok = "ok" if ratio >= target else "MISSED"
                    failures[outputs] += ratio < target
                    print(
                        f"{name:11} {size:>6} {label:14} {outputs:8} {peer:9.4f} {ours:9.4f}"
                        f" {ratio:6.2f} >= {target} {ok:6} {copy:9.4f} {peer / copy:11.2f}"
                    )
                    _report.record(
                        "decoder",
                        corpus=name,
                        chunk=size,
                        variant=label,
                        outputs=outputs,
                        peer="codecs",
                        peer_s=peer,
                        ours_s=ours,
                        ratio=ratio,
                        target=target,
                        copy_s=copy,
                        copy_ratio=peer / copy,
                    )
    for outputs, missed in failures.items():
        print(f"outputs {outputs}: {missed} target(s) missed")


if __name__ == "__main__":
    main()
