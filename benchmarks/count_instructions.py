"""Instructions per ``decode()`` call of small chunks, or per line, counted by callgrind.

    .venv/bin/python benchmarks/count_instructions.py [--pure] [--before PATH/src] [--calls N]
        [--per-line [--cache] [--sides SIDE ...]] [--lines N] [--kinds KIND ...] [--events]
        [--streams [--mib M] [--corpora NAME ...] [--backends B ...] [--rows I ...]
                   [--sizes BYTES ...]]
        [--chunk64 [--chunks N] [--corpora NAME ...]]
        [--cutter [--mib M] [--corpora NAME ...]]

Wall-clock ratios at 256-byte chunks move by a third from run to run on a shared machine;
instruction counts do not (the same binary, input and environment give the same count,
whatever else the machine is doing).  For each kind of chunk this runs ``N`` calls of
``Utf8Decoder().decode`` and of ``codecs``' incremental UTF-8 decoder (``replace``), each
in its own interpreter under callgrind, subtracts an interpreter that only imports, and
prints instructions per call and the ratio ``codecs / ours`` (higher is better: the
instruction-count analogue of bench_decoder.py's time ratio).  ``--before`` counts
another checkout's ``src`` the same way, for a before/after comparison; ``--pure`` sets
``UTF8STREAM_PURE_PYTHON=1``.  The chunks are whole characters; ``corrupted`` holds two
malformed units (``corrupted-events``: the same, each reported to ``on_malformed``, the
peer unchanged); ``wtf-8`` (lone surrogates) and ``cesu-8`` (surrogate pairs), mostly
valid text, go to a decoder of that variant, and their peer is CPython's UTF-8 decoder
with ``surrogatepass``; ``mixed``, ``dense-emoji`` and ``web`` are the benchmark corpora
of ``_corpora.py`` (64 KiB of each, cut into 256-byte chunks fed in turn, so characters
are cut between calls as in bench_decoder.py); ``--kinds`` counts only some.
Instructions are not time (a cache miss costs more than an add), so this complements
the timed benchmarks, it does not replace them.

``--per-line``: instructions per line instead (issues 13 and 14), each against its peer:
``follow()`` over a finished file of 80-byte lines (UTF-8 and UTF-16LE, asyncio and
trio) against ``for line in open(...)`` (bench_files.py's follow-speed), and ``async for``
over ``LineReceiveStream`` fed 64 KiB chunks of the ASCII-log corpus (another with
``UTF8STREAM_LINE_CORPUS=emoji`` etc.) against ``io.TextIOWrapper`` reading 64 KiB
(bench_streams.py's lines).  Each side runs with ``N`` and with ``2 N`` lines; the
difference over ``N`` is the cost of a line, with the interpreter's start, the imports
and the setup left out.

``--follow-sizes FEED_KIB READ_KIB`` sets the follower's ``FEED_SIZE`` (the slice cut
into records at a time) and ``CACHED_READ_SIZE`` for its sides, ``--in-memory`` makes it
read as on tmpfs (``os.pread``) whatever the file system (``TMPDIR`` chooses where the
file is), to compare the two ways of reading on the same file.

``--per-line --cache``: the same sides under cachegrind's cache simulation (the
caches of this machine's processor): instructions, first-level data cache misses (reads
and writes) and last-level data cache misses per line, each side's own; ``--sides``
picks some of ours (the peer comes with each).  Misses explain what instructions do not:
a follower that runs fewer instructions per line than ``open()`` can still take longer.
The simulated caches are printed first: where the last level is hundreds of MiB (a
virtual machine's L3), an ``LLd`` miss is memory touched for the first time, and a
reader that reuses its buffers has none a line; ``LLd`` also shows the whole
difference in KiB, which a different heap layout moves by a fixed few hundred KiB
(``main_cache_per_line``).  Each side's input is written by this script, not by the
child under valgrind (``per_line_input``: why).

``--chunk64``: instructions per ``decode()`` of a 64 KiB chunk of each benchmark corpus
(bench_decoder.py's 64 KiB rows, issue 14): ``N`` chunks (default 8) of the corpus, only
the C decoding call counted (callgrind's ``--toggle-collect`` on ``Utf8Decoder.decode``'s
C entry and on ``codecs``' ``utf_8_decode``: the making of the corpus and the interpreter
left out, and codecs' Python-level ``decode`` wrapper too).  ``--branch-sim`` adds
callgrind's count of mispredicted branches per chunk (a crude predictor without history:
a hint, no more).  At 64 KiB the chunk and the string it makes outgrow L1d; callgrind
counts no cache misses, so a timed A/B (bench_decoder.py) stays the judge.

``--cutter``: instructions inside the C line cutter alone (callgrind's
``--toggle-collect=Units_lines``) per MiB of a corpus fed to ``Units.lines`` in 64 KiB
chunks, the unfinished line carried to the next chunk as the line engine carries it
(``ab_builds.py --lines`` times the same calls); ``--corpora`` from ``_corpora.py`` or
``ab_builds.py``'s (``words-ru-lines`` etc.), ``--mib`` of each (default 0.5 here too).
The rest of a ``LineReceiveStream`` (the Python around the call, the strings' release)
is left out: a change to the cutter's decoding shows in full.

``--streams``: instructions per MiB of input for bench_streams.py's rows, running its
own functions (issue 14's pure-Python stream targets: add ``--pure``):
``Utf8ReceiveStream`` against anyio's ``TextReceiveStream`` at 64 KiB and 4 KiB chunks,
``LineReceiveStream`` against ``io.TextIOWrapper`` and against ``receive_until`` plus
``bytes.decode``; ``M`` and ``2 M`` MiB of each corpus (default 0.5), the difference
over ``M``, the making of the corpus left out.  ``--rows`` picks rows of
``STREAM_ROWS`` by index, ``--sizes`` some of their chunk sizes, ``--backends`` asyncio
(the default) and/or trio.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

CHILD = r"""
import codecs, sys
side, kind, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
texts = {
    "ascii": "2026-11-23 12:00:00 INFO request handled ok status=200 " * 8,
    "cjk": "日本語のテキストと中文文本和한국어 텍스트 " * 20,
    "emoji": "😀🎉🚀👍🏽❤️🔥🧑‍🚀🌍" * 40,
}
variants = {  # mostly valid text with some surrogates, the variant's way
    "wtf-8": ("log line héllo wörld 日本語 \ud800 ok \udc01 ", False),
    "cesu-8": ("log line héllo wörld 日本語 😀 ok 🎉 ", True),
}
events = kind.endswith("-events")  # every unit reported to on_malformed
kind = kind.removesuffix("-events")
if kind == "corrupted":
    data = (("héllo wörld " * 30).encode()[:250] + b"\xff\xc3(")[:256]
elif kind in variants:
    text, pairs = variants[kind]
    data = b""
    for ch in text * 10:
        if pairs and ord(ch) > 0xFFFF:  # CESU-8: a surrogate pair of two 3-byte halves
            cp = ord(ch) - 0x10000
            ch = chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))
        piece = ch.encode("utf-8", "surrogatepass")
        if len(data) + len(piece) > 256:
            break
        data += piece
    data = data[: data.rfind(b" ") + 1]  # nothing held between calls
elif kind in texts:
    data = texts[kind].encode()[:256].decode("utf-8", "ignore").encode()
if kind in ("mixed", "dense-emoji", "web"):
    import random
    sys.path.insert(0, BENCHMARKS)
    import _corpora
    corpus = getattr(_corpora, kind.replace("-", "_"))(1 << 16, random.Random(2026))
    pieces = _corpora.chunked(corpus, 256)
    chunks = [pieces[i % len(pieces)] for i in range(calls)]
else:
    chunks = [data] * calls
decode = None  # "base" and "codecs-base": the interpreter, the imports and the list
if side in ("ours", "base"):
    from utf8stream import Utf8Decoder
    if side == "ours":
        seen = []
        decode = Utf8Decoder(
            variant=kind if kind in variants else "utf-8",
            on_malformed=seen.append if events else None,
        ).decode
elif side == "codecs":
    # For a variant, CPython's UTF-8 decoder with surrogatepass does the same byte work.
    errors = "surrogatepass" if kind in variants else "replace"
    decode = codecs.getincrementaldecoder("utf-8")(errors).decode
if decode is not None:
    for chunk in chunks:
        decode(chunk)
"""

#: The valid-text corpora of ``_corpora.py`` (``--streams`` and ``--chunk64``).
CORPORA = ("ascii-log", "mixed", "cjk", "emoji", "dense-emoji", "web")

KINDS = (
    "ascii",
    "mixed",
    "cjk",
    "emoji",
    "dense-emoji",
    "web",
    "corrupted",
    "corrupted-events",
    "wtf-8",
    "cesu-8",
)

PER_LINE_CHILD = r"""
import io, sys, anyio
from pathlib import Path
# The input was written by the parent (per_line_input): the setup here allocates nothing
# that grows with the number of lines and is freed (see per_line_input).
side, (lines, _, path) = sys.argv[1], sys.argv[2].partition(":")
lines, path = int(lines), Path(path)
setup_only = side.startswith("setup-")  # the same setup, no line read
side = side.removeprefix("setup-")
if side.startswith(("follow", "open")):
    encoding = "utf-16-le" if "utf-16" in side else "utf-8"
else:
    data = path.read_bytes()
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]

if setup_only:
    raise SystemExit
# Every side's loop in a function, as bench_streams.py's and bench_files.py's are: a loop
# at module level pays dict lookups and stores per line for its names (~530 of the
# 1,860 instructions a line of TextIOWrapper; 1,327 in a function, as --streams counts),
# which made the peers look slower than they time.
def read_open():
    n = 0
    with open(path, encoding="utf-8") as f:
        for _line in f:
            n += 1
    return n
def read_textiowrapper():
    raw = io.BufferedReader(io.BytesIO(data), buffer_size=65536)
    wrapper = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    wrapper._CHUNK_SIZE = 65536
    n = 0
    for _line in wrapper:
        n += 1
    return n
if side == "open":
    n = read_open()
elif side.startswith("follow"):
    import os
    import utf8stream.apps.follow as follow_module
    from utf8stream import follow
    # --follow-sizes: the follower's slice and cached read sizes, and how it reads.
    if tune := os.environ.get("UTF8STREAM_BENCH_FOLLOW"):
        feed, read, how = tune.split(":")
        follow_module.FEED_SIZE = int(feed) << 10
        follow_module.CACHED_READ_SIZE = int(read) << 10
        if how == "in-memory":
            follow_module._in_memory = lambda st: True
    async def main():
        n = 0
        async with follow(path, start="beginning", until_eof=True, encoding=encoding) as it:
            async for _line in it:
                n += 1
        return n
    n = anyio.run(main, backend=side.split("-")[-1])
elif side == "textiowrapper":
    n = read_textiowrapper()
else:
    from anyio import EndOfStream
    from anyio.abc import ByteReceiveStream
    from utf8stream import LineReceiveStream
    class Memory(ByteReceiveStream):
        def __init__(self, chunks):
            self._chunks = iter(chunks)
        async def receive(self, max_bytes=65536):
            for chunk in self._chunks:
                return chunk
            raise EndOfStream
        async def aclose(self):
            pass
    async def main():
        n = 0
        async for _line in LineReceiveStream(Memory(chunks), max_line_bytes=1 << 20):
            n += 1
        return n
    n = anyio.run(main, backend=side.split("-")[-1])
assert n == lines, (side, n, lines)
"""

STREAMS_CHILD = r"""
import random, sys, anyio
sys.path.insert(0, BENCHMARKS)
import _corpora, bench_streams as b
side, arg = sys.argv[1], sys.argv[2]
setup_only = side.startswith("setup-")
side = side.removeprefix("setup-")
corpus, chunk, mib = arg.split(":")
size = int(float(mib) * 1048576)
rnd = random.Random(2026)
if corpus == "corrupted":
    data = _corpora.corrupt(_corpora.mixed(size, rnd), rnd)
else:
    data = getattr(_corpora, corpus.replace("-", "_"))(size, rnd)
chunks = _corpora.chunked(data, int(chunk))
# The objects made so far (imports, corpus) out of the collector's sight: otherwise a
# full collection more or less in one of the two runs (each walks every object, millions
# of instructions) swamps the difference (pure-Python rows came out negative).
import gc
gc.collect()
gc.freeze()
if setup_only:
    raise SystemExit
what, _, backend = side.partition("@")
if what == "lines-textiowrapper":
    b.lines_textiowrapper(data)
else:
    anyio.run(getattr(b, what.replace("-", "_")), chunks, backend=backend)
"""

#: (ours, peer, chunk sizes) rows for --streams: bench_streams.py's functions.
STREAM_ROWS = (
    ("read-text-ours", "read-text-anyio", (65536, 4096)),
    ("lines-ours", "lines-textiowrapper", (65536,)),
    ("lines-ours", "lines-receive-until", (65536,)),
)

#: (ours, peer) pairs for --per-line.
PER_LINE_SIDES = (
    ("follow-utf-8-asyncio", "open"),
    ("follow-utf-8-trio", "open"),
    ("follow-utf-16le-asyncio", "open"),
    ("follow-utf-16le-trio", "open"),
    ("lines-asyncio", "textiowrapper"),
    ("lines-trio", "textiowrapper"),
)


CHUNK64_CHILD = r"""
import codecs, random, sys
sys.path.insert(0, BENCHMARKS)
import _corpora
from utf8stream import Utf8Decoder
side, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rnd = random.Random(2026)
if kind == "corrupted":
    data = _corpora.corrupt(_corpora.mixed(n << 16, rnd), rnd)
else:
    data = getattr(_corpora, kind.replace("-", "_"))(n << 16, rnd)
chunks = _corpora.chunked(data, 65536)[:n]
if side == "ours":
    decode = Utf8Decoder("replace").decode
else:
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
for chunk in chunks:
    decode(chunk)
"""

#: The C function that each side's decode() of --chunk64 counts.
CHUNK64_ENTRY = {"ours": "BoundDecode_vectorcall", "codecs": "_codecs_utf_8_decode"}


def count_chunk64(side: str, kind: str, n: int, src: Path, branches: bool) -> tuple[int, int]:
    """Instructions and mispredicted branches (0 without branch simulation) per chunk."""
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
    child_text = f"BENCHMARKS = {str(Path(__file__).resolve().parent)!r}\n{CHUNK64_CHILD}"
    with tempfile.TemporaryDirectory() as tmp:
        child = Path(tmp) / "child.py"
        child.write_text(child_text, encoding="utf-8")
        out = f"{tmp}/out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--toggle-collect={CHUNK64_ENTRY[side]}",
                *(["--branch-sim=yes"] if branches else []),
                f"--callgrind-out-file={out}",
                sys.executable,
                str(child),
                side,
                kind,
                str(n),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        events: list[str] = []
        totals: list[int] = []
        for line in Path(out).read_text().splitlines():
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                totals = [int(x) for x in line.split()[1:]]
    counts = dict(zip(events, totals, strict=False))
    if "Ir" not in counts:
        raise SystemExit(f"callgrind wrote no totals for {side} {kind}")
    return counts["Ir"] // n, (counts.get("Bcm", 0) + counts.get("Bim", 0)) // n


def main_chunk64(
    n: int, corpora: list[str], trees: list[tuple[str, Path]], branches: bool
) -> None:
    print(f"instructions per decode() of a 64 KiB chunk, {n} chunks of each corpus")
    header = f"{'corpus':12} {'codecs':>9}"
    for name, _ in trees:
        header += f" {'ours ' + name:>12} {'ratio':>6}"
        if branches:
            header += f" {'mispred':>8}"
    print(header)
    for kind in corpora:
        peer, peer_miss = count_chunk64("codecs", kind, n, SRC, branches)
        row = f"{kind:12} {peer:9d}"
        for _, src in trees:
            ours, miss = count_chunk64("ours", kind, n, src, branches)
            row += f" {ours:12d} {peer / ours:6.2f}"
            if branches:
                row += f" {miss:8d}"
        if branches:
            row += f"  (codecs mispredicted {peer_miss})"
        print(row, flush=True)


CUTTER_CHILD = r"""
import sys
sys.path.insert(0, BENCHMARKS)
import _corpora, ab_builds
from utf8stream.core import _accel
corpus, mib = sys.argv[1], float(sys.argv[2])
data = ab_builds.corpus(corpus, int(mib * 1048576))
units = _accel.accelerator().Units("\ufffd", None)
head, position, n = b"", 0, 0
for chunk in _corpora.chunked(data, 65536):
    texts, offsets = units.lines(head, chunk, position, 10, 1 << 30, 0)
    n += len(texts)
    end = offsets[-1]
    used, held = end - position, len(head)
    head = chunk[used - held :] if used >= held else head[used:] + chunk
    position = end
print(n)
"""


def count_cutter(corpus: str, mib: float, src: Path) -> tuple[int, int]:
    """Instructions inside Units_lines over ``mib`` MiB of ``corpus``, and its lines."""
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
    child_text = f"BENCHMARKS = {str(Path(__file__).resolve().parent)!r}\n{CUTTER_CHILD}"
    with tempfile.TemporaryDirectory() as tmp:
        child = Path(tmp) / "child.py"
        child.write_text(child_text, encoding="utf-8")
        out = f"{tmp}/out"
        result = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--toggle-collect=Units_lines",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(child),
                corpus,
                str(mib),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        totals = [
            int(line.split()[1])
            for line in Path(out).read_text().splitlines()
            if line.startswith(("summary:", "totals:"))
        ]
    if not totals:
        raise SystemExit(f"callgrind wrote no totals for the cutter on {corpus}")
    return totals[0], int(result.stdout.split()[-1])


def main_cutter(mib: float, corpora: list[str], trees: list[tuple[str, Path]]) -> None:
    print(f"instructions in Units.lines per MiB, {mib:g} MiB in 64 KiB chunks")
    header = f"{'corpus':20} {'lines':>7}"
    for name, _ in trees:
        header += f" {'per MiB ' + name:>16} {'per line':>9}"
    if len(trees) > 1:
        header += f" {'before/now':>10}"
    print(header)
    for corpus in corpora:
        row = f"{corpus:20}"
        counts: list[int] = []
        for _, src in trees:
            total, lines = count_cutter(corpus, mib, src)
            if not counts:
                row += f" {lines:7d}"
            counts.append(total)
            row += f" {total / mib:16.0f} {total / max(lines, 1):9.0f}"
        if len(counts) > 1:
            row += f" {counts[1] / counts[0]:10.3f}"
        print(row, flush=True)


#: What ``--cache`` reports, from cachegrind's summary: instructions, first-level data
#: cache misses (reads and writes) and last-level data cache misses.
CACHE_EVENTS = {
    "Ir": r"I\s+refs:\s+([\d,]+)",
    "D1": r"D1\s+misses:\s+([\d,]+)",
    "LLd": r"LLd misses:\s+([\d,]+)",
}


def count(
    side: str,
    kind: str,
    calls: int,
    src: Path,
    pure: bool,
    child_text: str = CHILD,
    cache: bool = False,
) -> int | dict[str, int]:
    """Callgrind's instruction count of the child, or with ``cache`` cachegrind's
    ``CACHE_EVENTS`` (its cache simulation: this machine's caches, as valgrind reads
    them from the processor)."""
    # A fixed hash seed: set and dict layouts, and so the counts, the same in every run.
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
    if pure:
        env["UTF8STREAM_PURE_PYTHON"] = "1"
    if child_text is CHILD:  # the child finds _corpora beside this script
        child_text = f"BENCHMARKS = {str(Path(__file__).resolve().parent)!r}\n{child_text}"
    with tempfile.TemporaryDirectory() as tmp:
        child = Path(tmp) / "child.py"
        child.write_text(child_text, encoding="utf-8")
        tool = (
            ["--tool=cachegrind", "--cache-sim=yes", f"--cachegrind-out-file={tmp}/out"]
            if cache
            else ["--tool=callgrind", f"--callgrind-out-file={tmp}/out"]
        )
        result = subprocess.run(
            [
                "valgrind",
                *tool,
                sys.executable,
                str(child),
                side,
                kind,
                str(calls),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    if cache:
        counts = {}
        for name, pattern in CACHE_EVENTS.items():
            found = re.search(pattern, result.stderr)
            if found is None:
                raise SystemExit(f"cachegrind printed no {name}:\n{result.stderr}")
            counts[name] = int(found.group(1).replace(",", ""))
        return counts
    match = re.search(r"Collected : (\d+)", result.stderr)
    if match is None:
        raise SystemExit(f"callgrind printed no count:\n{result.stderr}")
    return int(match.group(1))


def instructions(
    side: str, kind: str, calls: int, src: Path, pure: bool, child_text: str = CHILD
) -> int:
    found = count(side, kind, calls, src, pure, child_text)
    assert isinstance(found, int)
    return found


def per_call(side: str, base: str, kind: str, calls: int, src: Path, pure: bool) -> float:
    return (
        instructions(side, kind, calls, src, pure) - instructions(base, kind, calls, src, pure)
    ) / calls


#: The line of the --per-line follower sides' file: 80 bytes with its newline.
LINE_80 = b"2026-11-22T00:00:00.000Z INFO worker-7 GET /api/v1/items/42 200".ljust(79) + b"\n"


@functools.cache
def _input_directory() -> Path:
    directory = tempfile.mkdtemp(prefix="count_instructions-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return Path(directory)


@functools.cache
def per_line_input(side: str, lines: int) -> Path:
    """The file a ``--per-line`` side reads ``lines`` lines of, written here, outside
    valgrind: a follower side's ``LINE_80`` lines (UTF-8 or UTF-16LE), a line stream's
    corpus (``UTF8STREAM_LINE_CORPUS``, default ``ascii-log``) cut after its ``lines``-th
    line.  Made in the child, the input's temporaries grew with ``lines`` and were freed
    before the lines were read; what the reader allocated afterwards landed partly in
    that memory, already touched, so the ``2 N`` run missed the last-level cache less
    after its setup than the ``N`` run did, and taking the setup's own difference away
    made ``--cache``'s ``LLd`` per line negative.  The child now only reads the file:
    nothing it frees grows with ``lines``.  (``TMPDIR`` chooses where the file is, as
    for ``--in-memory``.)"""
    side = side.removeprefix("setup-")
    if side.startswith(("follow", "open")):
        encoding = "utf-16-le" if "utf-16" in side else "utf-8"
        data = (LINE_80 * lines).decode("ascii").encode(encoding)
        name = f"finished-{encoding}-{lines}.log"
    else:
        import _corpora  # beside this script (sys.path[0])

        # UTF8STREAM_LINE_CORPUS: another corpus of _corpora.py (emoji, dense-emoji, ...).
        corpus = os.environ.get("UTF8STREAM_LINE_CORPUS", "ascii-log")
        make = getattr(_corpora, corpus.replace("-", "_"))
        size = 200 * lines
        while (data := make(size, random.Random(2026))).count(b"\n") < lines:
            size *= 2
        end = -1
        for _ in range(lines):
            end = data.index(b"\n", end + 1)
        data = data[: end + 1]
        name = f"{corpus}-{lines}.txt"
    path = _input_directory() / name
    path.write_bytes(data)
    return path


def per_line(side: str, lines: int, src: Path, pure: bool) -> float:
    total = 0
    for run, sign in ((side, 1), (f"setup-{side}", -1)):
        for n, twice in ((2 * lines, 1), (lines, -1)):
            arg = f"{n}:{per_line_input(side, n)}"
            total += sign * twice * instructions(run, arg, 0, src, pure, PER_LINE_CHILD)
    return total / lines


def cache_per_line(side: str, lines: int, src: Path, pure: bool) -> dict[str, float]:
    """``CACHE_EVENTS`` per line, as ``per_line`` counts instructions: the difference of
    ``2 N`` and ``N`` lines, the setup's own difference taken away."""
    total = dict.fromkeys(CACHE_EVENTS, 0)
    for run, sign in ((side, 1), (f"setup-{side}", -1)):
        for n, twice in ((2 * lines, 1), (lines, -1)):
            arg = f"{n}:{per_line_input(side, n)}"
            found = count(run, arg, 0, src, pure, PER_LINE_CHILD, cache=True)
            assert isinstance(found, dict)
            for name, value in found.items():
                total[name] += sign * twice * value
    return {name: value / lines for name, value in total.items()}


def simulated_caches() -> tuple[str, int]:
    """The data caches cachegrind simulates (this machine's, as valgrind reads them), as
    ``D1 48 KiB, LL 304 MiB, 64 B lines``, and the last level's line size."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        tool = ["--tool=cachegrind", "--cache-sim=yes", f"--cachegrind-out-file={out}"]
        subprocess.run(
            ["valgrind", *tool, sys.executable, "-c", "pass"],
            capture_output=True,
            check=True,
        )
        header = out.read_text(encoding="utf-8", errors="replace")
    cells = []
    line = 0
    for name in ("D1", "LL"):
        found = re.search(rf"^desc: {name} cache:\s+(\d+) B, (\d+) B", header, re.MULTILINE)
        if found is None:
            raise SystemExit(f"cachegrind described no {name} cache:\n{header[:500]}")
        size, line = int(found.group(1)), int(found.group(2))
        cells.append(f"{name} {size >> 20} MiB" if size >= 1 << 20 else f"{name} {size >> 10} KiB")
    return f"{', '.join(cells)}, {line} B lines", line


def main_cache_per_line(
    lines: int, trees: list[tuple[str, Path]], pure: bool, sides: list[str]
) -> None:
    """``--per-line --cache``: instructions and data cache misses per line, from
    cachegrind's simulation of this machine's caches (issue 13: a follower that runs
    fewer instructions than ``open()`` per line and still takes longer misses the cache
    more).  Each peer is counted once.

    With a last level of hundreds of MiB (a virtual machine's L3; the simulated caches
    are printed first), an ``LLd`` miss is memory touched for the first time: a reader
    that reuses its buffers has none a line, and what the column shows is how the
    process's memory grows with the lines.  The misses of two runs do not add up
    exactly: the heap is laid out differently after the setup of ``N`` and of ``2 N``
    lines, so some of the reader's copying and clearing falls in memory already touched
    in one run and fresh in the other, which moves the difference by a fixed amount, a
    few hundred KiB either way whatever ``N``.  So ``LLd`` comes with that whole
    difference in KiB: a small negative one is this layout, not a line that unmisses,
    and it shrinks per line as ``--lines`` grows.
    """
    print(f"per line, {lines} and {2 * lines} lines, cachegrind (Ir; D1 and LLd misses)")
    description, line_size = simulated_caches()
    print(f"simulated: {description}; LLd also in all, the 2 N run's KiB touched less the N run's")
    counted: set[str] = set()
    for ours_side, peer_side in PER_LINE_SIDES:
        if sides and ours_side not in sides:
            continue
        rows = [(peer_side, "", SRC)] * (peer_side not in counted)
        rows += [(ours_side, name, src) for name, src in trees]
        counted.add(peer_side)
        for side, name, src in rows:
            found = cache_per_line(side, lines, src, pure)
            cells = " ".join(f"{key} {value:8.2f}" for key, value in found.items())
            cells += f" ({found['LLd'] * lines * line_size / 1024:+.0f} KiB in all)"
            print(f"{side + (' ' + name if name else ''):32} {cells}", flush=True)


def main_per_line(lines: int, trees: list[tuple[str, Path]], pure: bool, sides: list[str]) -> None:
    """``--per-line``: instructions per line of each side of ``PER_LINE_SIDES`` (those
    of ``sides`` if any), and of its peer."""
    print(f"instructions per line, {lines} and {2 * lines} lines")
    header = f"{'ours':24} {'peer':14} {'peer':>7}"
    for name, _ in trees:
        header += f" {'ours ' + name:>12} {'ratio':>6}"
    print(header)
    peers: dict[str, float] = {}
    for ours_side, peer_side in PER_LINE_SIDES:
        if sides and ours_side not in sides:
            continue
        if peer_side not in peers:  # counted once
            peers[peer_side] = per_line(peer_side, lines, SRC, pure)
        peer = peers[peer_side]
        row = f"{ours_side:24} {peer_side:14} {peer:7.0f}"
        for _, src in trees:
            ours = per_line(ours_side, lines, src, pure)
            row += f" {ours:12.0f} {peer / ours:6.2f}"
        print(row, flush=True)


def per_mib(side: str, corpus: str, chunk: int, mib: float, src: Path, pure: bool) -> float:
    """Instructions per MiB of ``side`` (a bench_streams.py function @ backend): the
    difference of ``mib`` and ``2 mib`` of the corpus, the corpus's making left out."""
    child = f"BENCHMARKS = {str(Path(__file__).resolve().parent)!r}\n{STREAMS_CHILD}"
    total = 0
    for run, sign in ((side, 1), (f"setup-{side}", -1)):
        total += sign * (
            instructions(run, f"{corpus}:{chunk}:{2 * mib}", 0, src, pure, child)
            - instructions(run, f"{corpus}:{chunk}:{mib}", 0, src, pure, child)
        )
    return total / mib


def main_streams(
    mib: float,
    corpora: list[str],
    backends: list[str],
    rows: tuple[tuple[str, str, tuple[int, ...]], ...],
    trees: list[tuple[str, Path]],
    pure: bool,
    sizes: list[int] | None = None,
) -> None:
    print(f"instructions per MiB, {mib:g} and {2 * mib:g} MiB, {'pure Python' if pure else 'C'}")
    header = f"{'ours':16} {'peer':20} {'corpus':12} {'chunk':>6} {'peer':>12}"
    for name, _ in trees:
        header += f" {'ours ' + name:>12} {'ratio':>6}"
    print(header)
    for ours_fn, peer_fn, chunks in rows:
        for corpus in corpora:
            for chunk in chunks:
                if sizes and chunk not in sizes:
                    continue
                for backend in backends:
                    peer = per_mib(f"{peer_fn}@{backend}", corpus, chunk, mib, SRC, pure)
                    row = f"{ours_fn + '@' + backend:16} {peer_fn:20} {corpus:12} {chunk:>6}"
                    row += f" {peer:12.0f}"
                    for _, src in trees:
                        ours = per_mib(f"{ours_fn}@{backend}", corpus, chunk, mib, src, pure)
                        row += f" {ours:12.0f} {peer / ours:6.2f}"
                    print(row, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pure", action="store_true", help="the pure-Python decoder")
    parser.add_argument("--before", type=Path, help="another checkout's src, counted too")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--per-line", action="store_true", help="follow() and line streams")
    parser.add_argument("--lines", type=int, default=100_000, help="with --per-line")
    parser.add_argument(
        "--cache",
        action="store_true",
        help="with --per-line: cachegrind's data cache misses per line too",
    )
    parser.add_argument(
        "--sides",
        nargs="+",
        default=[],
        choices=[ours for ours, _ in PER_LINE_SIDES],
        help="with --per-line (and --cache): only these",
    )
    parser.add_argument(
        "--follow-sizes",
        nargs=2,
        type=int,
        metavar=("FEED_KIB", "READ_KIB"),
        help="with --per-line: the follower's FEED_SIZE and CACHED_READ_SIZE, in KiB",
    )
    parser.add_argument(
        "--in-memory",
        action="store_true",
        help="with --per-line: the follower reads as on tmpfs (os.pread in the event "
        "loop's thread), not with RWF_NOWAIT into a ReadBuffer; the file stays where "
        "TMPDIR puts it",
    )
    parser.add_argument(
        "--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="the chunks to count"
    )
    parser.add_argument(
        "--events", action="store_true", help="every kind with its units reported (KIND-events)"
    )
    parser.add_argument(
        "--streams", action="store_true", help="bench_streams.py's rows, per MiB of input"
    )
    parser.add_argument("--mib", type=float, default=0.5, help="with --streams, --cutter")
    parser.add_argument(
        "--corpora", nargs="+", default=None, help="with --streams, --chunk64, --cutter"
    )
    parser.add_argument(
        "--cutter", action="store_true", help="Units.lines alone, per MiB of 64 KiB chunks"
    )
    parser.add_argument("--backends", nargs="+", default=["asyncio"], choices=("asyncio", "trio"))
    parser.add_argument(
        "--rows", nargs="+", type=int, default=None, help="with --streams: STREAM_ROWS indexes"
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        type=int,
        default=None,
        help="with --streams: only these chunk sizes of the rows (4096, 65536)",
    )
    parser.add_argument(
        "--chunk64", action="store_true", help="64 KiB chunks of the benchmark corpora"
    )
    parser.add_argument("--chunks", type=int, default=8, help="with --chunk64")
    parser.add_argument(
        "--branch-sim", action="store_true", help="with --chunk64: mispredicted branches"
    )
    args = parser.parse_args()
    if args.events:
        args.kinds = [k if k.endswith("-events") else f"{k}-events" for k in args.kinds]
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt install valgrind)")
    trees = [("now", SRC)] + ([("before", args.before)] if args.before else [])
    if args.follow_sizes or args.in_memory:
        # Read by the per-line child (through count()'s environment).
        feed, read = args.follow_sizes or (64, 256)
        how = "in-memory" if args.in_memory else "auto"
        os.environ["UTF8STREAM_BENCH_FOLLOW"] = f"{feed}:{read}:{how}"
    if args.per_line and args.cache:
        main_cache_per_line(args.lines, trees, args.pure, args.sides)
        return
    if args.per_line:
        main_per_line(args.lines, trees, args.pure, args.sides)
        return
    if args.chunk64:
        corpora = args.corpora or [*CORPORA, "corrupted"]
        main_chunk64(args.chunks, corpora, trees, args.branch_sim)
        return
    if args.cutter:
        corpora = args.corpora or [*CORPORA, "corrupted"]
        main_cutter(args.mib, corpora, trees)
        return
    if args.streams:
        rows = STREAM_ROWS if args.rows is None else tuple(STREAM_ROWS[i] for i in args.rows)
        corpora = args.corpora or list(CORPORA)
        main_streams(args.mib, corpora, args.backends, rows, trees, args.pure, args.sizes)
        return
    print(
        f"instructions per decode() of a 256-byte chunk, {args.calls} calls, "
        f"{'pure Python' if args.pure else 'accelerator if built'}"
    )
    header = f"{'chunk':16} {'codecs':>8}"
    for name, _ in trees:
        header += f" {'ours ' + name:>12} {'ratio':>6}"
    print(header)
    for kind in args.kinds:
        # The peer has no events: codecs' decoder, with or without "-events".
        peer = per_call("codecs", "codecs-base", kind, args.calls, SRC, args.pure)
        row = f"{kind:16} {peer:8.0f}"
        for _, src in trees:
            ours = per_call("ours", "base", kind, args.calls, src, args.pure)
            row += f" {ours:12.0f} {peer / ours:6.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
