"""The candidates of the encoding detector and the statistics that choose among them.

Each candidate encoding is ruled out by the first byte sequence it cannot decode; the ones
left are scored by the cost (negative log-likelihood, in nats) of their decoded text under
the best model of a language written in that encoding (``_detector_model.json``, built
by ``tools/build_detector_model.py``).  ASCII
characters cost the same in every language (they count how much of a decoding turned into
ASCII); letters beyond ASCII cost what their frequency in the language says, more when
they stand inside a word of ASCII letters in a language that seldom mixes them so;
controls, unassigned and private-use characters cost as much as a byte that is not text.
"""

from __future__ import annotations

import codecs
import functools
import json
import math
import operator
import unicodedata
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from . import _detector_native as counting
from ._detector_native import EAST_ASIAN as _EAST_ASIAN

#: An ASCII letter and any other ASCII character but space, in every language alike: they
#: do not tell languages apart, but they tell how much of a decoding turned into ASCII (a
#: byte of UTF-16 or the second byte of a double-byte character decoded one at a time).
ASCII_LETTER, ASCII_OTHER = 2.5, 3.5
#: The statistics per language: ``letters``, ``costs``, ``mixing``, ``encodings`` (see the
#: file's "about").
_MODEL = json.loads(
    resources.files(__package__).joinpath("_detector_model.json").read_text("utf-8")
)
_SCALE: int = _MODEL["scale"]
_MIXING: dict[str, float] = _MODEL["mixing"]
_SINGLE_RUNS: dict[str, float] = _MODEL["single_runs"]
#: Per language, what a run one letter long and a longer one cost; what a letter next to
#: an ASCII letter and one apart from them cost.
_RUN_COSTS = {k: (-math.log(p), -math.log1p(-p)) for k, p in _SINGLE_RUNS.items()}
_MIXING_COSTS = {k: (-math.log(p), -math.log1p(-p)) for k, p in _MIXING.items()}

#: A C0 or C1 control (other than whitespace and ESC), unassigned, private-use or a lone
#: surrogate: what text does not hold.
BAD = 20.0
#: The other scripts the double-byte encodings of each language hold (their character
#: sets include Cyrillic and Greek), and what a letter of one costs over its own model's.
FOREIGN = dict.fromkeys(("ja", "zh", "zh-hant", "ko"), ("ru", "el"))
QUOTED = 3.0
#: A letter of a script no language model covers.
UNMODELLED = 5.0
#: The share of such characters that makes decoded bytes "not text".
BAD_SHARE = 0.05
#: Symbols, digits and spaces beyond ASCII.
SYMBOL = 5.0
#: Punctuation beyond ASCII (quotes, dashes, brackets, the ellipsis): ordinary in text.
PUNCTUATION = 2.5
_PUNCTUATION_CATEGORIES = frozenset(("Pi", "Pf", "Pd", "Ps", "Pe"))
#: A combining mark.
MARK = 6.0
#: A lower-case letter followed by an upper-case one.
CAMEL = 6.0
#: What choosing each encoding costs before any byte is seen (nats): the common ones win
#: where two decode the bytes seen alike (a short text, an accent shared by code pages).
PRIOR = {
    "cp1252": 0.0,
    "iso8859-1": 0.5,
    "cp1251": 1.0,
    # Of encodings that decode most bytes alike, the superset most files are written in.
    "cp932": 1.0,
    "shift_jis": 1.2,
    "gb18030": 1.0,
    "gbk": 1.2,
    "big5": 1.0,
    "cp949": 1.0,
    "euc_kr": 1.2,
    "euc_jp": 1.5,
    "cp1250": 2.0,
    "koi8-r": 2.0,
    # Without a byte-order mark, UTF-16 and UTF-32 are rare: a few bytes are not enough.
    **dict.fromkeys(("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"), 12.0),
}
OTHER_PRIOR = 3.0
#: A letter the language's list does not hold, above the cost of its rarest listed one.
UNLISTED = 3.0

#: Single-byte code pages, in the order that breaks ties (the first is preferred when two
#: decode the bytes seen alike).
SINGLE_BYTE = (
    "cp1252",
    "iso8859-1",
    "cp1250",
    "iso8859-2",
    "cp1251",
    "koi8-r",
    "iso8859-5",
    "cp1253",
    "iso8859-7",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "cp1258",
    "mac-roman",
)
#: Multi-byte encodings, each family's base before its superset.
MULTI_BYTE = (
    "shift_jis",
    "cp932",
    "euc_jp",
    "iso2022_jp",
    "gbk",
    "gb18030",
    "big5",
    "cp950",
    "euc_kr",
    "cp949",
)
#: UTF-16 and UTF-32 without a byte-order mark.
WIDE = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")

#: Encodings that decode the same text from the same bytes wherever both are defined.
FAMILY = {
    "cp932": "shift_jis",
    "gb18030": "gbk",
    "cp950": "big5",
    "cp949": "euc_kr",
    **{name: "single-byte" for name in SINGLE_BYTE},
}

_SPACES = frozenset(" \t\n\r\f\v")
#: The share of East Asian characters that makes UTF-16 without a NUL byte worth weighing.
EAST_ASIAN_SHARE = 0.9


def _languages_of() -> dict[str, tuple[str, ...]]:
    languages: dict[str, list[str]] = {}
    for language, names in _MODEL["encodings"].items():
        for name in names:
            languages.setdefault(name, []).append(language)
    every = tuple(_MODEL["encodings"])
    return {**{k: tuple(v) for k, v in languages.items()}, **dict.fromkeys(WIDE, every)}


#: encoding -> the languages its text is scored in.
LANGUAGES = _languages_of()


def _code_page(name: str) -> tuple[str | None, ...]:
    """The character of each byte in a single-byte code page; None: undefined."""
    table: list[str | None] = []
    for byte in range(256):
        try:
            table.append(bytes((byte,)).decode(name))
        except UnicodeDecodeError:
            table.append(None)
    return tuple(table)


def _mask(values: Iterable[int]) -> int:
    return sum(1 << value for value in set(values))


CODE_PAGES = {name: _code_page(name) for name in SINGLE_BYTE}
#: The bytes each code page leaves undefined, as a bit mask (bit ``b`` for byte ``b``).
UNDEFINED = {
    name: _mask(b for b, c in enumerate(table) if c is None) for name, table in CODE_PAGES.items()
}
#: For each two code pages, the bytes they read differently, as a bit mask.
DIFFER = {
    (one, other): _mask(b for b in range(256) if a[b] != z[b])
    for one, a in CODE_PAGES.items()
    for other, z in CODE_PAGES.items()
}


def _twins(one: str, other: str) -> bool:
    """Whether two code pages write the same languages and read a byte as a letter in one
    and as text, not a letter, in the other."""
    if one == other or set(LANGUAGES[one]) != set(LANGUAGES[other]):
        return False
    pairs = zip(CODE_PAGES[one], CODE_PAGES[other], strict=True)
    return any(
        a != b
        and a is not None
        and b is not None
        and (a.isalpha() or b.isalpha())
        and not (is_bad(a) or is_bad(b))
        for a, b in pairs
    )


#: The most characters a cache of costs or classes holds: a full one is emptied before
#: the next goes in, so a long-running detector fed ever new characters stays bounded.
CACHE_LIMIT = 1 << 14


class LanguageModel:
    """The cost of each character in one language's text."""

    def __init__(self, language: str) -> None:
        letters: str = _MODEL["letters"][language]
        costs = bytes.fromhex(_MODEL["costs"][language])
        self.language = language
        self.letters = {c: cost / _SCALE for c, cost in zip(letters, costs, strict=True)}
        self.unlisted = max(self.letters.values(), default=10.0) + UNLISTED
        self.foreign = FOREIGN.get(language, ())
        self.cache: dict[str, float] = {}

    def cost(self, char: str) -> float:
        cost = self.cache.get(char)
        if cost is None:
            if len(self.cache) >= CACHE_LIMIT:
                self.cache.clear()
            cost = self.cache[char] = self._cost(char)
        return cost

    def _cost(self, char: str) -> float:
        code = ord(char)
        if code < 0x80:
            if char in _SPACES:
                return 0.0
            if char.isalpha():
                return ASCII_LETTER
            return ASCII_OTHER if (code >= 0x20 and code != 0x7F) or char == "\x1b" else BAD
        if char.isalpha():
            lower = char.lower()
            key = lower if len(lower) == 1 else char
            own = self.letters.get(key)
            if own is not None:
                return own
            # A word of a script the encoding also holds (Russian in Shift_JIS or GBK).
            quoted = [language_model(f).letters.get(key) for f in self.foreign]
            known = [cost + QUOTED for cost in quoted if cost is not None]
            return min([self.unlisted, *known])
        category = unicodedata.category(char)
        # Format characters (joiners, marks of direction, the soft hyphen) are text.
        if (category[0] == "C" and category != "Cf") or char == "\ufffd":
            return BAD
        if category in _PUNCTUATION_CATEGORIES or char in "…•·¡¿":
            return PUNCTUATION
        return MARK if category[0] == "M" else SYMBOL


_MODELS: dict[str, LanguageModel] = {}


def language_model(language: str) -> LanguageModel:
    found = _MODELS.get(language)
    if found is None:
        found = _MODELS[language] = LanguageModel(language)
    return found


def is_bad(char: str) -> bool:
    """A character no text holds (see ``BAD``)."""
    return language_model("en").cost(char) >= BAD


#: Code pages alike but for letters (see ``_twins``), both ways round.
TWINS = frozenset((a, b) for a in SINGLE_BYTE for b in SINGLE_BYTE if _twins(a, b))


@dataclass(slots=True)
class Score:
    """A candidate's cost under its best language, how much of its text is not text, and
    the place of its encoding in the order that breaks ties (``ORDER``)."""

    encoding: str
    cost: float
    language: str
    chars: int
    bad: int
    order: int


#: Tie-breaks between candidates that score alike: the first is preferred.
ORDER = {name: i for i, name in enumerate((*WIDE, *MULTI_BYTE, *SINGLE_BYTE))}


def score_counts(
    encoding: str,
    counts: dict[str, int],
    adjacent: dict[str, int],
    runs: tuple[int, int],
    kernel: Any,
) -> Score:
    """Score decoded text given as counts of its characters; ``adjacent``: the characters
    beyond ASCII that stood next to an ASCII letter; ``runs``: how many runs of characters
    beyond ASCII were one character long, and how many longer; ``kernel``: the module
    that sums the costs (``_accel.implementation()``)."""
    by_class = kernel.class_counts(counts, _CLASSES, _class_of)
    letters, _, bad, _ = by_class
    chars = sum(by_class)
    # A symbol inside a word (box drawing, say) is a letter decoded in the wrong code page.
    mixed, symbols, _, _ = kernel.class_counts(adjacent, _CLASSES, _class_of)
    if bad > BAD_SHARE * chars:  # not text in any language: not worth scoring
        return Score(encoding, BAD * chars, "", chars, bad, ORDER[encoding])
    languages = _languages_for(encoding, counts)
    if languages is None:
        return Score(encoding, BAD * chars, "", chars, chars, ORDER[encoding])
    found = kernel.cheapest_language(counts, _terms(languages), letters, mixed, *runs)
    if found is not None:
        best = (found[0], languages[found[1]])
    else:
        best = (_unmodelled(counts, letters, mixed), "a script without a model")
    extra = SYMBOL * symbols + PRIOR.get(encoding, OTHER_PRIOR)
    return Score(encoding, best[0] + extra, best[1], chars, bad, ORDER[encoding])


@functools.lru_cache(maxsize=1024)
def _terms(languages: tuple[str, ...]) -> tuple[counting.LanguageTerms, ...]:
    """The languages as ``cheapest_language`` weighs them."""
    return tuple(
        (model.cache, model.cost, *_MIXING_COSTS[name], *_RUN_COSTS[name])
        for name, model in zip(languages, map(language_model, languages), strict=True)
    )


def _languages_for(encoding: str, counts: dict[str, int]) -> tuple[str, ...] | None:
    """The languages to score a candidate's text in: those of its encoding; for UTF-16 and
    UTF-32, which write every language, only those whose letters hold the text's most
    common letter beyond ASCII (none: a script no model covers).  None: most of its East
    Asian letters are none the models list and no space or line end parts them (the
    common ideographs, kana and syllables make nearly all of any such text: these are bytes
    read two at a time that are not text)."""
    languages = LANGUAGES.get(encoding, ())
    if encoding not in WIDE:
        return languages
    letters = [(n, char) for char, n in counts.items() if not char.isascii() and char.isalpha()]
    if not letters:
        return languages
    east_asian = [(n, char) for n, char in letters if _EAST_ASIAN.match(char)]
    total = sum(n for n, _ in east_asian)
    listed = sum(n for n, char in east_asian if char in _EAST_ASIAN_LETTERS)
    parted = any(char.isspace() for char in counts)
    if total >= _EAST_ASIAN_EVIDENCE and listed < total / 2 and not parted:
        return None
    return _writing(max(letters)[1].lower(), languages)


@functools.lru_cache(maxsize=4096)
def _writing(letter: str, languages: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``languages`` whose letters hold ``letter``."""
    found = tuple(n for n in languages if letter in language_model(n).letters)
    if not found and _EAST_ASIAN.match(letter):
        # A rare ideograph or syllable, in a script the East Asian models cover.
        return tuple(n for n in languages if n in _EAST_ASIAN_MODELS)
    return found


#: The letters the East Asian models list, and how many East Asian letters make enough
#: evidence that most of them are not among those.
_EAST_ASIAN_MODELS = ("ja", "zh", "zh-hant", "ko")
_EAST_ASIAN_LETTERS = frozenset("".join(_MODEL["letters"][n] for n in _EAST_ASIAN_MODELS))
_EAST_ASIAN_EVIDENCE = 16


def _unmodelled(counts: dict[str, int], letters: int, mixed: int) -> float:
    """The cost of text in a script no language model covers: its letters cost alike, plus
    how scattered they are over blocks of 128 code points (a script keeps to a block or
    two; bytes read in the wrong order or width land all over)."""
    cost_of = language_model("en").cost
    blocks: Counter[int] = Counter()
    total = 0.0
    for char, n in counts.items():
        if _is_letter(char) and not char.isascii():
            blocks[ord(char) >> 7] += n
            total += UNMODELLED * n
        else:
            total += cost_of(char) * n
    spread = sum(n * math.log(letters / n) for n in blocks.values()) if letters else 0.0
    return total + spread + _mixing("ja", letters, mixed)


#: The classes of characters (``class_counts``), and each character's, once known.
_LETTER, _SYMBOL, _BAD, _OTHER = 0, 1, 2, 3
_CLASSES: dict[str, int] = {}


def _class_of(char: str) -> int:
    """A character beyond ASCII that is a letter (or mark), a symbol, not text; else other."""
    found = _CLASSES.get(char)
    if found is None:
        if is_bad(char):
            found = _BAD
        elif char.isascii():
            found = _OTHER
        elif _is_letter(char):
            found = _LETTER
        else:
            found = _SYMBOL if unicodedata.category(char)[0] == "S" else _OTHER
        if len(_CLASSES) >= CACHE_LIMIT:
            _CLASSES.clear()
        _CLASSES[char] = found
    return found


def _is_letter(char: str) -> bool:
    """A letter or a mark (which belongs to a letter)."""
    return char.isalpha() or unicodedata.category(char)[0] == "M"


def _runs(language: str, runs: tuple[int, int]) -> float:
    """The cost of the runs of letters beyond ASCII being as long as they are."""
    single, longer = _RUN_COSTS[language]
    return runs[0] * single + runs[1] * longer


def _mixing(language: str, letters: int, mixed: int) -> float:
    """The cost of ``mixed`` of ``letters`` letters beyond ASCII standing next to an ASCII
    letter, in ``language``."""
    mixing, apart = _MIXING_COSTS[language]
    return mixed * mixing + (letters - mixed) * apart


class _CodePage:
    """A code page's bytes as classes (``flags``: letters beyond ASCII, symbols, lower and
    upper case, characters that are not text...) and what each costs in each language
    written in it (``costs``: a row of 256 per language of ``names``, in the order of
    their names, which breaks ties)."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.order = ORDER[encoding]
        table = CODE_PAGES[encoding]
        flags = bytearray(256)
        for b, c in enumerate(table):
            if c is None:
                continue
            high = b >= 0x80
            flags[b] = (
                counting.LETTER * (high and c.isalpha())
                | counting.SYMBOL * (high and unicodedata.category(c)[0] == "S")
                | counting.LOWER * c.islower()
                | counting.UPPER * c.isupper()
                | counting.STRAY * (high and _stray(c))
                | counting.INTRUDER * _intruder(c)
                | counting.BAD * is_bad(c)
            )
        self.flags = bytes(flags)
        self.names = tuple(sorted(LANGUAGES[encoding]))
        rows = [
            [0.0 if c is None else language_model(language).cost(c) for c in table]
            for language in self.names
        ]
        self.costs = array("d", [cost for row in rows for cost in row])
        #: What a letter next to an ASCII letter and one apart cost, what a run one letter
        #: long and a longer one cost (``_mixing``, ``_runs``), language by language.
        self.terms = array("d", [t for n in self.names for t in _MIXING_COSTS[n] + _RUN_COSTS[n]])


def _intruder(char: str) -> bool:
    """Punctuation, a symbol, a fraction or a superscript digit, which does not stand
    alone inside a word of letters (an apostrophe, a middle dot or a dash does): a letter
    read in the wrong code page."""
    category = unicodedata.category(char)
    return (category[0] in "PS" or category == "No") and category != "Pd" and char not in "’·"


def _stray(char: str) -> bool:
    """A closing quote, symbol or other mark, which does not begin a word: one that does
    (after a space, before a letter) is a capital letter read in the wrong code page."""
    category = unicodedata.category(char)
    return (category in ("Pf", "Po") and char not in "¡¿") or category[0] == "S"


@dataclass
class ByteEvidence:
    """What single-byte code pages are scored on, gathered once for all of them: the byte
    counts (``_detector_native``'s ``evidence``, ``pairs`` and ``starts``), what the ASCII
    bytes cost (alike in every code page), how many bytes there are, the runs of bytes
    above 7F one byte long and longer, and the module that counts (``kernel``)."""

    counts: array[int]
    pairs: dict[int, int]
    starts: dict[int, int]
    ascii_cost: float
    size: int
    runs: tuple[int, int]
    kernel: Any

    @classmethod
    def of(
        cls, counts: array[int], pairs: dict[int, int], starts: dict[int, int], kernel: Any
    ) -> ByteEvidence:
        ascii_counts = counts[counting.EVIDENCE_ASCII : counting.EVIDENCE_ASCII + 4]
        runs = counts[counting.EVIDENCE_RUNS : counting.EVIDENCE_RUNS + 2]
        high = counts[counting.EVIDENCE_HISTOGRAM + 0x80 : counting.EVIDENCE_HISTOGRAM + 0x100]
        return cls(
            counts,
            pairs,
            starts,
            sum(map(operator.mul, _ASCII_CLASS_COSTS, ascii_counts)),
            sum(ascii_counts) + sum(high),
            (runs[0], runs[1]),
            kernel,
        )


#: What an ASCII letter, space, control and other character cost (``ascii_classes``).
_ASCII_CLASS_COSTS = (ASCII_LETTER, 0.0, BAD, ASCII_OTHER)


@functools.cache
def _code_pages() -> tuple[tuple[Any, ...], list[_CodePage]]:
    """Every code page (``SINGLE_BYTE``, in that order): as ``code_page_scores`` takes them
    (their flags, costs and terms one after the other, how many languages each has, and
    what a letter in the wrong case or place, a symbol inside a word and choosing the code
    page cost), and each."""
    pages = [_CodePage(name) for name in SINGLE_BYTE]
    tables = (
        b"".join(page.flags for page in pages),
        array("d", [cost for page in pages for cost in page.costs]),
        array("d", [term for page in pages for term in page.terms]),
        bytes(len(page.names) for page in pages),
        array("d", [x for n in SINGLE_BYTE for x in (CAMEL, SYMBOL, PRIOR.get(n, OTHER_PRIOR))]),
    )
    return tables, pages


def code_page_flags() -> bytes:
    """What each byte reads as in each code page (``SINGLE_BYTE``, 256 bytes a page):
    ``count_runs`` counts the capitals of glued words by them."""
    flags: bytes = _code_pages()[0][0]
    return flags


def score_code_pages(encodings: list[str], evidence: ByteEvidence) -> list[Score]:
    """Score the single-byte code pages ``encodings`` on the bytes seen."""
    tables, pages = _code_pages()
    found = evidence.kernel.code_page_scores(
        evidence.counts, evidence.pairs, evidence.starts, *tables, evidence.ascii_cost
    )
    size = evidence.size
    return [
        Score(page.encoding, cost, page.names[best], size, bad, page.order)
        for page, (cost, best, bad) in zip(pages, found, strict=True)
        if page.encoding in encodings
    ]


#: The incremental decoder of each candidate; the decoding function of UTF-16 and UTF-32.
_DECODERS = {name: codecs.getincrementaldecoder(name) for name in ("utf-8", *MULTI_BYTE, *WIDE)}
_WIDE_DECODERS = {
    "utf-16-le": codecs.utf_16_le_decode,
    "utf-16-be": codecs.utf_16_be_decode,
    "utf-32-le": codecs.utf_32_le_decode,
    "utf-32-be": codecs.utf_32_be_decode,
}
_UNIT_TOP = {"utf-32-le": 3, "utf-32-be": 0}


class MultiByteCandidate:
    """One multi-byte candidate: its incremental decoder and, when ``counting``, the
    characters it decoded, counted by ``kernel`` (``_accel.implementation()``).

    Decoding rules a candidate out; counting its characters one by one serves only to
    score it.  UTF-16 and UTF-32 seldom are (where no NUL byte is seen, only when they
    read as East Asian text), so the segments they decode are counted when a score is
    asked for, decoded again from the input by a decoder of their own; the others are
    counted as they decode.
    """

    __slots__ = (
        "adjacent",
        "chars",
        "counted",
        "counter",
        "counting",
        "counts",
        "decoder",
        "east_asian",
        "encoding",
        "kernel",
        "longer_runs",
        "pending",
        "raw",
        "ruled_out_at",
        "single_runs",
        "top",
        "uncounted",
        "wide",
    )

    def __init__(self, encoding: str, kernel: Any, counting: bool = True) -> None:
        self.encoding = encoding
        raw = _WIDE_DECODERS.get(encoding)
        self.wide = raw is not None
        if raw is not None:
            # CPython's incremental decoders of UTF-16 and UTF-32 are Python classes around
            # these functions: called directly, with the bytes of a unit cut kept here.
            self.raw = raw
            self.pending = b""
            #: UTF-32: where the high byte of a unit is, which no character sets.
            self.top = _UNIT_TOP.get(encoding)
        else:
            self.decoder = _DECODERS[encoding]("strict")
        self.kernel = kernel
        self.counting = counting
        self.ruled_out_at: int | None = None
        #: The characters counted: made by ``_start`` once a segment decodes (most
        #: candidates are ruled out by their first).
        self.counts: dict[str, int] | None = None

    def _start(self) -> None:
        #: UTF-16 and UTF-32: the characters decoded, and those of them in the blocks of
        #: East Asian scripts.
        self.chars = self.east_asian = 0
        #: The characters counted (``count_text``) up to the offset ``counted``, by the
        #: decoder ``counter``; the ends of the segments decoded after it.
        self.counts = {}
        self.adjacent: dict[str, int] = {}
        self.single_runs = self.longer_runs = 0
        self.counted = 0
        self.counter: codecs.IncrementalDecoder | None = None
        self.uncounted: list[int] = []

    def advance(self, segment: bytes, start: int) -> None:
        """Decode the next segment (which starts at offset ``start``), or rule this
        candidate out at the sequence it cannot decode."""
        if self.ruled_out_at is not None:
            return
        try:
            if self.wide:
                data = self.pending + segment
                if self.top is not None and len(data) >= 4 and data[self.top]:
                    # A first unit above 10FFFF, where CPython's decoder stops.
                    self.ruled_out_at = start
                    self.counts = None
                    return
                text, used = self.raw(data, "strict", False)
                self.pending = data[used:]
            else:
                text = self.decoder.decode(segment)
        except UnicodeDecodeError as exc:
            # The error's offsets count from bytes the decoder held back (up to three).
            self.ruled_out_at = start + exc.start
            self.counts = None
            return
        if not self.counting:
            return
        if self.counts is None:
            self._start()
        if self.wide:
            # What UTF-16 without a NUL byte is weighed for.
            self.chars += len(text)
            self.east_asian += self.kernel.count_east_asian(text)
            self.uncounted.append(start + len(segment))
        else:
            self._count(text)
            self.counted = start + len(segment)

    def _count(self, text: str) -> None:
        assert self.counts is not None
        _, _, single, longer = self.kernel.count_text(text, self.counts, self.adjacent)
        self.single_runs += single
        self.longer_runs += longer

    def score(self, buffer: bytearray) -> Score:
        """The score of the text decoded so far from ``buffer``, the input from its start
        (at least up to the end of the last segment decoded)."""
        assert self.counts is not None  # a candidate scored has decoded its segments
        if self.uncounted and self.counter is None:
            self.counter = _DECODERS[self.encoding]("strict")
        for end in self.uncounted:
            assert self.counter is not None
            self._count(self.counter.decode(bytes(buffer[self.counted : end])))
            self.counted = end
        self.uncounted.clear()
        runs = (self.single_runs, self.longer_runs)
        return score_counts(self.encoding, self.counts, self.adjacent, runs, self.kernel)
