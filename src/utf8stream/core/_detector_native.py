"""The encoding detector's counting and sums of costs, in pure Python: the twin of the
accelerator's (``_detect.h``), name for name, re-exported by ``_native`` so that
``_accel.implementation()`` hands the detector one or the other.

Both give the same counts, in the same order of a dict's keys, and the same sums, each
float added in the same order (left to right, no compensation), so that the detector's
decisions do not depend on which runs.  No language model is loaded here.

The byte counts are one ``array('q')`` (``new_evidence()``), at the offsets below: the
count of NUL and of each byte value above 7F (``EVIDENCE_HISTOGRAM``, indexed by the byte
value); the ASCII bytes by class, letters, spaces, controls, others (``EVIDENCE_ASCII``);
how often each byte above 7F stood next to an ASCII letter (``EVIDENCE_ADJACENT``) and
alone between two (``EVIDENCE_INSIDE``); runs of bytes above 7F one byte long, and
longer (``EVIDENCE_RUNS``); for each code page, the capitals that start a word glued to
a lower-case one (``EVIDENCE_WORDS``, see ``count_runs``).  Pairs of bytes above 7F are
counted in dicts keyed ``(a << 8) | b``.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from array import array
from collections import Counter
from collections.abc import Callable

__all__ = [
    "cheapest_language",
    "class_counts",
    "code_page_scores",
    "count_bytes",
    "count_east_asian",
    "count_runs",
    "count_text",
]

EVIDENCE_HISTOGRAM, EVIDENCE_ASCII, EVIDENCE_ADJACENT = 0, 256, 260
EVIDENCE_INSIDE, EVIDENCE_RUNS, EVIDENCE_WORDS = 516, 772, 774
#: At most this many code pages are scored (``EVIDENCE_WORDS`` has a count for each).
MAX_CODE_PAGES = 16
EVIDENCE_SIZE = EVIDENCE_WORDS + MAX_CODE_PAGES

#: The bits of a code page's ``flags`` (one byte per byte value): what the byte reads as.
LETTER, SYMBOL, LOWER, UPPER, STRAY, INTRUDER, BAD = 1, 2, 4, 8, 16, 32, 64

ASCII = bytes(range(0x80))
_HIGH = bytes(range(0x80, 0x100))
_ASCII_LETTERS = bytes(range(0x41, 0x5B)) + bytes(range(0x61, 0x7B))
_ASCII_SPACES = b" \t\n\r\f\v"
_ASCII_CONTROLS = bytes(b for b in [*range(0x20), 0x7F] if b not in b"\t\n\r\f\v\x1b")
#: Runs of bytes above 7F, with the ASCII letter before and after them, if any.
_HIGH_RUNS = re.compile(rb"([A-Za-z]?)([\x80-\xff]+)(?=([A-Za-z]?))")
#: A character beyond ASCII next to an ASCII letter; runs of characters beyond ASCII.
_ADJACENT_TEXT = re.compile(r"(?<=[A-Za-z])[^\x00-\x7f]|[^\x00-\x7f](?=[A-Za-z])")
_NON_ASCII_RUNS = re.compile(r"[^\x00-\x7f]+")
#: Kana, CJK ideographs and punctuation, Hangul, full-width forms.
EAST_ASIAN = re.compile("[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]")


def new_evidence() -> array[int]:
    """The byte counts of no bytes."""
    return array("q", bytes(8 * EVIDENCE_SIZE))


def ascii_classes(data: bytes) -> tuple[int, int, int, int]:
    """How many of the ASCII bytes of ``data`` are letters, spaces, controls and others:
    counted without a loop."""
    ascii_part = data if data.isascii() else data.translate(None, _HIGH)
    size = len(ascii_part)
    letters = size - len(ascii_part.translate(None, _ASCII_LETTERS))
    spaces = size - len(ascii_part.translate(None, _ASCII_SPACES))
    controls = size - len(ascii_part.translate(None, _ASCII_CONTROLS))
    return letters, spaces, controls, size - letters - spaces - controls


def count_bytes(segment: bytes, evidence: array[int]) -> int:
    """Count NUL, the bytes above 7F and the ASCII bytes by class of ``segment`` into
    ``evidence``; the bytes above 7F it holds, as a bit mask (bit ``b`` for byte ``b``)."""
    mask = 0
    for byte, n in Counter(segment.translate(None, ASCII)).items():
        evidence[EVIDENCE_HISTOGRAM + byte] += n
        mask |= 1 << byte
    evidence[EVIDENCE_HISTOGRAM] += segment.count(0)
    for i, n in enumerate(ascii_classes(segment)):
        evidence[EVIDENCE_ASCII + i] += n
    return mask


def count_runs(
    segment: bytes,
    evidence: array[int],
    pairs: dict[int, int],
    starts: dict[int, int],
    flags: bytes,
) -> None:
    """Count the runs of bytes above 7F of ``segment``, with the ASCII letters just before
    and after them (within the segment): a run one byte long, next to a letter and
    between two; a longer one, its adjacent pairs (``pairs``), its first pair where no
    letter precedes it (``starts``), its ends next to a letter.  For each code page of
    ``flags`` (256 a page), the capitals in a run that follow two lower-case letters and
    come before a third (``EVIDENCE_WORDS``): a word glued to the one before it, which
    the lower-case letter before a capital (``pairs``) must not count as a letter read in
    the wrong case."""
    pair_runs: list[bytes] = []
    for before, run, after in _HIGH_RUNS.findall(segment):
        if len(run) == 1:
            evidence[EVIDENCE_RUNS] += 1
            evidence[EVIDENCE_ADJACENT + run[0]] += bool(before or after)
            evidence[EVIDENCE_INSIDE + run[0]] += bool(before and after)
            continue
        evidence[EVIDENCE_RUNS + 1] += 1
        pair_runs.append(run)
        if before:
            evidence[EVIDENCE_ADJACENT + run[0]] += 1
        else:
            _add(starts, run[0] << 8 | run[1])
        evidence[EVIDENCE_ADJACENT + run[-1]] += bool(after)
    keys = (a << 8 | b for run in pair_runs for a, b in itertools.pairwise(run))
    for key, n in Counter(keys).items():
        _add(pairs, key, n)
    lower, upper = _case_masks(flags)
    glued = Counter(
        lower[w] & lower[x] & upper[y] & lower[z]
        for run in pair_runs
        for w, x, y, z in zip(run, run[1:], run[2:], run[3:], strict=False)
    )
    for mask, n in glued.items():
        for k in range(mask.bit_length()):
            evidence[EVIDENCE_WORDS + k] += n * (mask >> k & 1)


@functools.cache
def _case_masks(flags: bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """For each byte value, the code pages (bit ``k`` for page ``k`` of ``flags``) that
    read it as a lower-case letter, and those that read it as an upper-case one."""
    pages = len(flags) // 256
    if pages > MAX_CODE_PAGES or len(flags) != 256 * pages:
        raise ValueError(f"flags: 256 bytes for each of at most {MAX_CODE_PAGES} code pages")

    def mask(byte: int, bit: int) -> int:
        return sum(1 << k for k in range(pages) if flags[256 * k + byte] & bit)

    return tuple(mask(b, LOWER) for b in range(256)), tuple(mask(b, UPPER) for b in range(256))


def _add(counts: dict[int, int], key: int, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


def count_east_asian(text: str) -> int:
    """The characters of ``text`` in East Asian scripts (``EAST_ASIAN``)."""
    return len(text) - len(EAST_ASIAN.sub("", text))


def count_text(text: str, counts: dict[str, int], adjacent: dict[str, int]) -> tuple[int, ...]:
    """Count a decoded text: each character beyond ASCII (``counts``) and those next to
    an ASCII letter (``adjacent``), in the order first seen; then the ASCII characters
    by class, under one character each ("a", " ", "\\x01", "."; ``ascii_classes``).  The
    characters, those of East Asian scripts, and the runs of characters beyond ASCII one
    character long and longer."""
    east_asian = len(text) - len(EAST_ASIAN.sub("", text))
    single = longer = 0
    if text.isascii():
        ascii_part = text.encode("ascii")
    else:
        runs = _NON_ASCII_RUNS.findall(text)
        _count(counts, "".join(runs))
        single = list(map(len, runs)).count(1)
        longer = len(runs) - single
        _count(adjacent, _ADJACENT_TEXT.findall(text))
        ascii_part = text.encode("ascii", "ignore")
    for char, n in zip("a \x01.", ascii_classes(ascii_part), strict=True):
        if n:
            counts[char] = counts.get(char, 0) + n
    return len(text), east_asian, single, longer


def _count(counts: dict[str, int], chars: str | list[str]) -> None:
    for char, n in Counter(chars).items():
        counts[char] = counts.get(char, 0) + n


@functools.cache
def _selectors(flags: bytes) -> tuple[bytes, ...]:
    """For each bit of ``flags``, which bytes above 7F have it (1 or 0 per byte)."""
    high = flags[0x80:]
    return tuple(bytes(int(bool(f & bit)) for f in high) for bit in (1 << k for k in range(7)))


def code_page_scores(
    evidence: array[int],
    pairs: dict[int, int],
    starts: dict[int, int],
    flags: bytes,
    costs: array[float],
    terms: array[float],
    rows: bytes,
    extras: array[float],
    ascii_cost: float,
) -> tuple[tuple[float, int, int], ...]:
    """Every code page scored on the bytes seen, ``ascii_cost`` being what the ASCII
    bytes cost.  Code page ``k`` reads each byte as its 256 ``flags`` say, is written in
    ``rows[k]`` languages, each a row of 256 ``costs`` and four ``terms``, and has three
    ``extras``, one page after the other.  For each: its cost in its cheapest language
    (the first of them where two cost alike), which that is, and the bytes that are not
    text.

    A language's cost: ``ascii_cost``, plus the bytes above 7F (cost times count, byte
    value by byte value upwards), plus the code page's letters beyond ASCII next to an
    ASCII letter and those apart, plus the runs of bytes above 7F one byte long and
    longer, each at one of the row's four terms; plus the letters read in the wrong case
    or place and the symbols next to an ASCII letter at the first two extras, plus the
    third.  Wrong case or place: a lower-case letter before an upper-case one
    (``pairs``) but for the capitals of glued words (``EVIDENCE_WORDS``), a stray mark
    that starts a run before a letter (``starts``), an intruder alone between two ASCII
    letters."""
    high = evidence[EVIDENCE_HISTOGRAM + 0x80 : EVIDENCE_HISTOGRAM + 0x100]
    near = evidence[EVIDENCE_ADJACENT + 0x80 : EVIDENCE_ADJACENT + 0x100]
    inside = evidence[EVIDENCE_INSIDE + 0x80 : EVIDENCE_INSIDE + 0x100]
    single, longer = evidence[EVIDENCE_RUNS], evidence[EVIDENCE_RUNS + 1]
    seen = list(itertools.compress(high, high))
    found = []
    row = 0
    for k, count in enumerate(rows):
        letter, symbol, lower, upper, stray, intruder, bad = _selectors(
            flags[256 * k : 256 * (k + 1)]
        )
        letters = sum(itertools.compress(high, letter))
        mixed = sum(itertools.compress(near, letter))
        camel = sum(itertools.compress(inside, intruder))
        camel += sum(n for key, n in pairs.items() if lower[key >> 8 & 0x7F] and upper[key & 0x7F])
        camel += sum(
            n for key, n in starts.items() if stray[key >> 8 & 0x7F] and letter[key & 0x7F]
        )
        camel -= evidence[EVIDENCE_WORDS + k]  # glued words: not the wrong case
        totals = []
        for r in range(row, row + count):
            t = terms[4 * r : 4 * r + 4]
            page_costs = itertools.compress(costs[256 * r + 0x80 : 256 * (r + 1)], high)
            cost = functools.reduce(operator.add, map(operator.mul, page_costs, seen), 0.0)
            totals.append(
                cost + (mixed * t[0] + (letters - mixed) * t[1]) + (single * t[2] + longer * t[3])
            )
        best = min(range(count), key=totals.__getitem__)
        camel_cost, symbol_cost, prior = extras[3 * k : 3 * k + 3]
        symbols = sum(itertools.compress(near, symbol))
        misplaced = camel_cost * camel + symbol_cost * symbols + prior
        found.append(
            (ascii_cost + totals[best] + misplaced, best, sum(itertools.compress(high, bad)))
        )
        row += count
    return tuple(found)


#: A language as ``cheapest_language`` weighs it: what its characters cost (known, and
#: the function that tells), what a letter beyond ASCII next to an ASCII letter and one
#: apart cost, what a run of them one letter long and a longer one cost.
LanguageTerms = tuple[dict[str, float], Callable[[str], float], float, float, float, float]


def cheapest_language(
    counts: dict[str, int],
    models: tuple[LanguageTerms, ...],
    letters: int,
    mixed: int,
    single: int,
    longer: int,
) -> tuple[float, int] | None:
    """Counted text scored in each language of ``models``: what its characters cost (cost
    times count, in the order of ``counts``), plus ``mixed`` of its ``letters`` letters
    beyond ASCII next to an ASCII letter and the others apart, plus its runs of letters
    beyond ASCII one letter long and longer.  The cheapest total and the index of its
    language (the first where two cost alike); None for no language."""
    best: tuple[float, int] | None = None
    for i, (cache, cost_of, mixing, apart, single_cost, longer_cost) in enumerate(models):
        total = 0.0
        for char, n in counts.items():
            cost = cache.get(char)
            total += (cost_of(char) if cost is None else cost) * n
        mixing_cost = mixed * mixing + (letters - mixed) * apart
        total = total + mixing_cost + (single * single_cost + longer * longer_cost)
        if best is None or total < best[0]:
            best = (total, i)
    return best


def class_counts(
    counts: dict[str, int], cache: dict[str, int], class_of: Callable[[str], int]
) -> tuple[int, int, int, int]:
    """The characters of ``counts`` by class (0 to 3: letters, symbols, not text, others),
    each class from ``cache`` or ``class_of``."""
    totals = [0, 0, 0, 0]
    for char, n in counts.items():
        found = cache.get(char)
        totals[class_of(char) if found is None else found] += n
    return totals[0], totals[1], totals[2], totals[3]
