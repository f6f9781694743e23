"""The AVX2 kernels of the C decoder (``_simd.h``) and their runtime dispatch.

The accelerator picks its kernels when its module object is made: AVX2 where the CPU has
AVX2 and BMI2, else SSE2 (x86-64) or none; ``UTF8STREAM_NO_AVX2=1`` keeps it to SSE2, and
``_speedups.simd`` says which.  The kernels take only clean blocks (32 ASCII bytes, eight
three-byte characters) and leave everything else to the scalar loop that decides
the maximal subparts, so the text and the events must be those of Unicode Table 3-7
whichever kernels run.  Expected values come from ``reference_decode`` (a per-byte walk
written from the table, sharing no code with utf8stream) and ``bytes.decode``; a second
module object made with ``UTF8STREAM_NO_AVX2=1`` (the SSE2 and scalar path in the same
process) is compared with the one in use, step by step.
"""

from __future__ import annotations

import ctypes
import itertools
import mmap
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _extension import HAS_AVX2, X86_64, module_with
from _helpers import CORE, event_tuples, reference_decode
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import Malformed, Utf8Decoder
from utf8stream.core import _accel

speedups: Any = _accel.accelerator()
pytestmark = pytest.mark.skipif(
    speedups is None, reason="the C accelerator is not built here (pure-Python install)"
)

TESTS = Path(__file__).resolve().parent


# -- the dispatch ------------------------------------------------------------------------


def test_simd_names_the_kernels_the_cpu_allows() -> None:
    expected = "avx2" if HAS_AVX2 else "sse2" if X86_64 else None
    if expected is None:  # another machine: no x86 kernels at all, or SSE2 on 32-bit x86
        assert speedups.simd in ("sse2", "none")
    elif os.environ.get("UTF8STREAM_NO_AVX2", "") not in ("", "0"):
        assert speedups.simd == "sse2"
    else:
        assert speedups.simd == expected


@pytest.mark.parametrize(
    ("value", "avx2"), [(None, True), ("", True), ("0", True), ("1", False), ("yes", False)]
)
def test_utf8stream_no_avx2_is_read_when_the_module_is_made(value: str | None, avx2: bool) -> None:
    in_use = speedups.simd
    module = module_with(value)
    if not X86_64:
        assert module.simd in ("sse2", "none")
    else:
        assert module.simd == ("avx2" if avx2 and HAS_AVX2 else "sse2")
    # Each module object keeps its own choice: the one in use is not changed.
    assert speedups.simd == in_use


def test_a_fresh_interpreter_with_utf8stream_no_avx2_uses_sse2() -> None:
    code = "from utf8stream.core import _accel; print(_accel.accelerator().simd)"
    env = dict(os.environ, UTF8STREAM_NO_AVX2="1")
    env.pop("UTF8STREAM_PURE_PYTHON", None)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ("sse2" if X86_64 else out)
    assert out in ("sse2", "none")


# -- every kernel's boundaries -----------------------------------------------------------

#: Clean texts, each for a kernel and a target kind of string: ASCII blocks into Latin-1
#: (UCS-1), UCS-2 and UCS-4 strings (the first character sets the kind), two-byte runs,
#: three-byte runs into UCS-2 and UCS-4, four-byte runs, and a mixture.
ASCII = "The quick brown fox jumps over the lazy dog, 0123456789 times. " * 2
BASES = {
    "ascii": ASCII,
    "ascii-ucs1": "é" + ASCII,
    "ascii-ucs2": "Ω" + ASCII,
    "ascii-ucs4": "😀" + ASCII,
    "two-byte-ucs1": "äöüßéèçñøå" * 8,
    "two-byte-ucs2": "Ωψжяשל" * 12,
    "cjk-ucs2": "日本語のテキスト中文" * 5,
    "cjk-ucs4": "😀" + "日本語のテキスト中文" * 5,
    "emoji": "😀🎉🚀👍🔥🌍🍕🐍" * 5,
    "mixed": "héllo wörld 日本語 😀🎉 Ωψ ok " * 4,
    # UCS-4 text of every length mixed (mixed_blocks_avx2): markup, emoji among words,
    # emoji runs and joined sequences, sequences across its 16-byte steps
    "web-ucs4": '<p class="x">Größe — Новости 新闻 😀 “ok” 👍🏽</p>\n' * 3,
    "emoji-words": "😀😀 ok 🎉 ship it 🚀🚀🚀 lol ä日 " * 4,
    "emoji-joined": "👩\u200d🚀👍🏽🧑\u200d🤝\u200d🧑❤\ufe0f🔥😀🎉🚀 " * 3,
    # its ASCII blocks: markup after enough emoji for the kernel to be used
    "emoji-markup": "😀🎉🚀👍🔥🌍🍕🐍" * 3 + '<a href="https://example.org/article/1">' * 2,
    # UCS-2 text of mixed lengths (mixed_blocks2_avx2): CJK among ASCII and CJK
    # punctuation, Cyrillic words among spaces, one-, two- and three-byte characters in
    # turn, and its ASCII blocks (markup after enough CJK for the kernel to be used)
    "cjk-punct-ucs2": "日本語、テキスト。 中文，文本 (ok) 한국어 텍스트!\n" * 3,
    "cyrillic-words-ucs2": "Съешь же ещё этих мягких булок, да выпей чаю. " * 3,
    "cjk-latin-ucs2": "Größe 日本語 ж Ωψ — ok; " * 5,
    "cjk-markup-ucs2": "日本語のテキスト中文" * 2 + '<a href="https://example.org/article/1">' * 2,
    # European text (mostly ASCII, an accented letter now and then) in UCS-2 and UCS-4
    # strings, which the kernels take too
    "european-ucs2": "Größere Änderungen müssen über die Straße, “sagt” er: 5 € " * 2,
    "european-ucs4": "Größere Änderungen müssen über die Straße 😀 geführt werden, sagt er " * 2,
}

#: Malformed units and cut sequences of every lead and continuation class (Table 3-7):
#: lone continuation bytes, C0/C1 and overlong three- and four-byte forms, surrogates,
#: beyond U+10FFFF, F5..FF, truncated two- three- and four-byte sequences, and a good
#: sequence of each length spoilt at its last byte.
BAD = [
    b"\x80",
    b"\xbf",
    b"\xc0",
    b"\xc1\xbf",
    b"\xc2",
    b"\xdf",
    b"\xe0\x80",
    b"\xe0\x9f\xbf",
    b"\xe1\x80",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xef\xbf",
    b"\xf0\x80\x80\x80",
    b"\xf0\x8f\xbf\xbf",
    b"\xf0\x9f\x98",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b"\xf8",
    b"\xff",
    b"\xc3\x28",
    b"\xe6\x97\x28",
    b"\xf0\x9f\x98\x28",
]


def expected(data: bytes, errors: str) -> tuple[str, list[tuple[int, bytes, Any]]]:
    ref = reference_decode(data)
    return ref.render(errors), [(u.offset, u.data, u.kind) for u in ref.units]


def decode_all(data: bytes, errors: str) -> tuple[str, list[tuple[int, bytes, Any]]]:
    events: list[Malformed] = []
    decoder = Utf8Decoder(errors, on_malformed=events.append)
    return decoder.decode(data, final=True), event_tuples(events)


def spoilt(raw: bytes, positions: range, every: int = 1) -> Iterator[bytes]:
    """raw with each of BAD inserted at, and written over, each position; with ``every``
    k, each position takes every k-th unit of BAD, in turn."""
    for p in positions:
        for i, bad in enumerate(BAD):
            if (p + i) % every == 0:
                yield raw[:p] + bad + raw[p:]
                yield raw[:p] + bad + raw[p + len(bad) :]


# Every third unit at each position: as 32 is 2 modulo 3, each unit still comes at each
# of the 32 places of a block, in one of the three blocks.  Every unit at every position
# is the soak step's.
@pytest.mark.parametrize("every", [3, pytest.param(1, marks=pytest.mark.soak)])
@pytest.mark.parametrize("base", list(BASES))
def test_a_malformed_unit_at_each_position_of_a_block(base: str, every: int) -> None:
    raw = BASES[base].encode()
    assert len(raw) >= 96  # three 32-byte blocks, one and a half 64-byte steps
    for data in spoilt(raw, range(0, 96), every):
        ref = reference_decode(data)  # once for the three policies: it is the slow part
        events = [(u.offset, u.data, u.kind) for u in ref.units]
        for errors in ("replace", "ignore", "surrogateescape"):
            got = decode_all(data, errors)
            assert got == (ref.render(errors), events), (data, errors)
            assert got[0] == data.decode("utf-8", errors)


@pytest.mark.parametrize("base", list(BASES))
def test_clean_text_of_every_length(base: str) -> None:
    """Every length up to three blocks: the tails of the 32-byte prescan, ASCII skip and
    the kernels (a wrong count of characters would write past the string: .ci/sanitize
    runs this module)."""
    text = BASES[base] * 2
    for k in range(len(text) + 1):
        data = text[k:].encode()[:200]
        data = data.decode("utf-8", "ignore").encode()
        assert Utf8Decoder().decode(data, final=True) == data.decode()


@pytest.mark.parametrize("base", list(BASES))
def test_clean_text_ending_at_every_byte(base: str) -> None:
    """Every end up to three blocks and more: a kernel that runs to the very end of the
    segment (the ASCII blocks of mixed_blocks_avx2) hands the loop nothing to read."""
    raw = ("😀" + BASES[base] * 3).encode()[:300]
    for n in range(len(raw) + 1):
        data = raw[:n].decode("utf-8", "ignore").encode()
        assert Utf8Decoder().decode(data, final=True) == data.decode()


@pytest.mark.parametrize(
    "base",
    ["ascii", "ascii-ucs2", "cjk-ucs2", "cjk-punct-ucs2", "cyrillic-words-ucs2", "emoji", "mixed"],
)
def test_long_segments(base: str) -> None:
    """Past 4096 bytes the decoder first guesses ASCII and copies 64 bytes a step; a
    malformed unit near the start, the guess's end and the end of the segment."""
    raw = (BASES[base] * 40).encode()
    assert len(raw) > 4096 + 200
    n = len(raw)
    positions = [*range(0, 70, 5), *range(4000, 4200, 9), *range(n - 70, n, 5)]
    for p in positions:
        for bad in (b"\x80", b"\xe0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xff"):
            data = raw[:p] + bad + raw[p:]
            assert decode_all(data, "replace") == expected(data, "replace")


def test_long_ascii_guess_around_where_its_copy_stops_asking_ahead() -> None:
    """The ASCII guess of a long segment copies in two loops: one that asks for the
    string's lines 4 KiB ahead while that much is left, then one without; a character
    that ends the guess in either loop, at their seam, or none at all."""
    for n in (4096, 4159, 4160, 4161, 4224, 4300, 8192 + 33):
        raw = (ASCII * (n // len(ASCII) + 1)).encode()[:n]
        assert Utf8Decoder().decode(raw, final=True) == raw.decode()
        seam = n - 4160
        for p in sorted({*range(max(seam - 70, 0), max(seam + 70, 0), 3), 0, n // 2, n - 1}):
            for char in ("é", "😀"):
                data = raw[:p] + char.encode() + raw[p + 1 :]
                assert Utf8Decoder().decode(data, final=True) == data.decode(), (n, p)
            data = raw[:p] + b"\xff" + raw[p + 1 :]
            assert decode_all(data, "replace") == expected(data, "replace"), (n, p)


@pytest.mark.parametrize(
    "base", ["ascii-ucs1", "cjk-ucs2", "cjk-punct-ucs2", "cyrillic-words-ucs2", "emoji", "mixed"]
)
def test_a_sequence_cut_by_the_end_of_a_chunk_is_held(base: str) -> None:
    raw = BASES[base].encode() * 2
    for cut in range(len(raw)):
        decoder = Utf8Decoder()
        text = decoder.decode(raw[:cut]) + decoder.decode(raw[cut:], final=True)
        assert text == raw.decode()


# -- no read past the input ---------------------------------------------------------------

#: The offset of a bytes object's data in the object (CPython's PyBytesObject).
BYTES_HEADER = sys.getsizeof(b"") - 1


class GuardedBytes:
    """bytes objects whose last byte is the last byte of a page, the next page
    inaccessible: a read of one byte past the data (the terminating NUL of an ordinary
    bytes object, which no sanitizer sees) ends the process.  One mapping, each object
    written over the last; the object is CPython's layout (reference count, type, size,
    hash, data) made by hand, its reference count too large to reach 0."""

    def __init__(self, size: int) -> None:
        page = mmap.PAGESIZE
        self.size = -(-(size + BYTES_HEADER) // page) * page
        self.map = mmap.mmap(-1, self.size + page)
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        assert libc.mprotect(self.base + self.size, page, 0) == 0  # PROT_NONE

    def __call__(self, data: bytes) -> bytes:
        """A copy of data (its length plus the header a multiple of 8: the object is
        aligned) that ends where the inaccessible page begins."""
        n = len(data)
        assert (n + BYTES_HEADER) % 8 == 0 and n + BYTES_HEADER <= self.size
        start = self.base + self.size - n - BYTES_HEADER
        ctypes.memmove(start + BYTES_HEADER, data, n)
        words = (ctypes.c_ssize_t * 4).from_address(start)
        words[0], words[1], words[2], words[3] = 1 << 40, id(bytes), n, -1
        obj: bytes = ctypes.cast(start, ctypes.py_object).value
        assert obj == data
        return obj


def check_no_read_past_the_input() -> None:
    """Every base text from 32 starts, at every length that is a multiple of 8, clean and
    ending in each malformed unit, decoded from guarded bytes: the text and the events
    against the reference.  Run in a child process (test below): a read past the end is
    a crash."""
    guarded = GuardedBytes(256)
    for base in BASES:
        raw = (BASES[base] * 3).encode()
        for start in range(32):
            for n in range(8, 193, 8):
                data = raw[start : start + n]
                cases = [data] if start % 4 else [data, *(data[: n - len(b)] + b for b in BAD)]
                for case in cases:
                    events: list[Malformed] = []
                    decoder = Utf8Decoder("replace", on_malformed=events.append)
                    text = decoder.decode(guarded(case), final=True)
                    assert (text, event_tuples(events)) == expected(case, "replace"), case


@pytest.mark.soak  # every base, start and length in two child processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap and mprotect by ctypes")
@pytest.mark.parametrize("no_avx2", [None, "1"])
def test_no_kernel_reads_past_the_input(no_avx2: str | None) -> None:
    env = dict(os.environ)
    env.pop("UTF8STREAM_PURE_PYTHON", None)
    env.pop("UTF8STREAM_NO_AVX2", None)
    if no_avx2 is not None:
        env["UTF8STREAM_NO_AVX2"] = no_avx2
    code = (
        f"import sys; sys.path[:0] = [{str(TESTS)!r}, {str(TESTS.parent)!r}]; import test_simd; "
        "test_simd.check_no_read_past_the_input()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-3000:])


# -- differential: the AVX2 module against the SSE2 one, and both against the oracles ----

CLEAN_ALPHABETS = [
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.characters(min_codepoint=0x20, max_codepoint=0xFF),
    st.characters(min_codepoint=0x80, max_codepoint=0x7FF),
    st.characters(min_codepoint=0x800, max_codepoint=0xFFFF, blacklist_categories=["Cs"]),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
    st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF),
    st.characters(blacklist_categories=["Cs"]),
    st.sampled_from(["a", " ", "<", "é", "Ω", "ж", "日", "—", "\u200d", "😀", "🏽", "\U0010ffff"]),
]

clean_runs = (
    st.sampled_from(CLEAN_ALPHABETS)
    .flatmap(lambda alphabet: st.text(alphabet, min_size=1, max_size=120))
    .map(lambda s: s.encode())
)
pieces = st.lists(
    st.one_of(clean_runs, clean_runs, clean_runs, st.sampled_from(BAD)), min_size=1, max_size=8
).map(b"".join)


@st.composite
def chunked(draw: Any) -> tuple[bytes, list[bytes]]:
    data = draw(pieces)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=3)))
    bounds = [0, *cuts, len(data)]
    return data, [data[a:b] for a, b in itertools.pairwise(bounds)]


_sse2: ModuleType | None = None


def sse2_module() -> ModuleType:
    global _sse2
    if _sse2 is None:
        _sse2 = module_with("1")
    return _sse2


def feed_units(module: ModuleType, chunks: list[bytes], replacement: str) -> tuple[str, list[Any]]:
    """The scanner calls of one decoder over chunks: (text, events)."""
    events: list[Malformed] = []
    units = module.Units(replacement, events.append)
    pending, position, text = b"", 0, []
    for k, chunk in enumerate(chunks):
        position += len(chunk)
        out, pending = units.feed(pending, chunk, k == len(chunks) - 1, position)
        text.append(out)
    assert pending == b""
    return "".join(text), event_tuples(events)


@CORE
@given(chunked(), st.sampled_from(["\ufffd", ""]))
def test_avx2_and_sse2_modules_agree_with_the_reference(
    case: tuple[bytes, list[bytes]], replacement: str
) -> None:
    data, chunks = case
    errors = "replace" if replacement else "ignore"
    want = expected(data, errors)
    assert want[0] == data.decode("utf-8", errors)
    assert feed_units(speedups, chunks, replacement) == want
    assert feed_units(sse2_module(), chunks, replacement) == want


@CORE
@given(chunked(), st.sampled_from(["replace", "ignore", "surrogateescape", "backslashreplace"]))
def test_decoder_over_long_clean_runs_with_errors(
    case: tuple[bytes, list[bytes]], errors: str
) -> None:
    data, chunks = case
    events: list[Malformed] = []
    decoder = Utf8Decoder(errors, on_malformed=events.append)
    text = "".join(decoder.decode(c) for c in chunks) + decoder.decode(b"", final=True)
    assert text == data.decode("utf-8", errors)
    assert event_tuples(events) == expected(data, errors)[1]


# -- the core suite on the other path ----------------------------------------------------

#: Modules of the core suite that drive the decoding loop against an oracle (C against
#: pure Python, the conformance corpus, Table 3-7 exhaustively): run once more in a fresh
#: interpreter with UTF8STREAM_NO_AVX2=1, so that the SSE2 and scalar path stays tested
#: where AVX2 is used.  Three modules, not .ci/sanitize's whole core list: the properties
#: above compare the two paths in one process besides.
CORE_MODULES = [
    "test_speedups.py",
    "test_corpus.py",
    "test_table.py",
]


@pytest.mark.soak  # three modules again, in a child process
@pytest.mark.timeout(1800)  # three modules in a fresh interpreter, on a loaded machine too
def test_core_suite_without_avx2() -> None:
    env = dict(os.environ, UTF8STREAM_NO_AVX2="1")
    env.pop("UTF8STREAM_PURE_PYTHON", None)
    check = "from utf8stream.core import _accel; assert _accel.accelerator().simd != 'avx2'"
    subprocess.run([sys.executable, "-c", check], env=env, check=True, timeout=120)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            *(str(TESTS / name) for name in CORE_MODULES),
        ],
        cwd=TESTS.parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
