"""The normalizer's tables (core/normalize.py), read from ``unicodedata`` as they are met.

Two things are read for the whole of Unicode once a process, because a character's rules
depend on characters elsewhere: the canonical composition pairs (a mark composes with
letters of many blocks) and the most non-starters an NFKD decomposition starts or ends
with (the stream-safe search's run length).  Both come from the characters that have a
decomposition mapping, which one ``unicodedata.is_normalized("NFKD", span)`` call per
span proves absent from a whole span, down to runs of 16 (the Hangul syllables, whose
decompositions UAX 15 gives by arithmetic, are left out).

Everything else is per character, and filled a block of 256 code points at a time, the
first time a character of the block is met: by ``normalize_piece``'s pass (through
``fill``), or by the Python side before it looks a character up.  Text in a
few scripts never pays for the others.
"""

from __future__ import annotations

import functools
import itertools
import mmap
import operator
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, TypeAlias

Form = Literal["NFC", "NFD", "NFKC", "NFKD"]

_L, _V, _T, _S = 0x1100, 0x1161, 0x11A7, 0xAC00
_LN, _VN, _TN = 19, 21, 28
_HANGUL_L = frozenset(map(chr, range(_L, _L + _LN)))
_HANGUL_V = frozenset(map(chr, range(_V, _V + _VN)))
_HANGUL_T = frozenset(map(chr, range(_T + 1, _T + _TN)))

#: The flags of a code point in ``normalize_piece``'s table (core/_normpass.h): the form's
#: quick check is not yes, a non-starter, no starter in its NFKD, a boundary before it
#: depends on what precedes it; and the block is filled (a plain starter: that alone).
_CHANGES, _MARK, _ONLY, _JOINS, _FILLED = 0x01, 0x02, 0x04, 0x08, 0x80

#: ``normalize_piece``'s tables: flags, combining classes, what fills a block of both,
#: the form's ``unicodedata.normalize``, the bitmap of the characters that may be
#: stream-safe members (``find_run``'s).
PieceTables: TypeAlias = tuple[
    mmap.mmap, mmap.mmap, Callable[[int], None], Callable[[str], str], bytearray
]

_BLOCKS = 0x110000 >> 8


def _zeros() -> mmap.mmap:
    """A byte a code point, zero: anonymous memory is zeroed by the system a page at a
    time as it is touched, and a table is mostly never touched.  Private, so that a
    forked process fills its own with its own rules."""
    if hasattr(mmap, "MAP_PRIVATE"):
        return mmap.mmap(-1, 0x110000, flags=mmap.MAP_PRIVATE)
    return mmap.mmap(-1, 0x110000)


def _decompositions(kind: Form, chars: list[str]) -> list[str]:
    """``unicodedata.normalize(kind, c)`` of each of ``chars``, in one call where it can.

    Joined by U+0000 (a starter without a mapping, which reordering never crosses), the
    characters normalize to their own normalizations joined by it; as many pieces as
    characters shows that none of those held a U+0000, so each piece is its own.  A
    U+0000 among them is normalized apart.
    """
    if "\0" in chars:
        zero = unicodedata.normalize(kind, "\0")
        others = iter(_decompositions(kind, [c for c in chars if c != "\0"]))
        return [zero if c == "\0" else next(others) for c in chars]
    pieces = unicodedata.normalize(kind, "\0".join(chars)).split("\0")
    if len(pieces) != len(chars):
        return [unicodedata.normalize(kind, c) for c in chars]
    return pieces


def _planes() -> Iterator[str]:
    """Each plane's code points, with U+0000 for the surrogates (which have no mapping)
    and the Hangul syllables: one buffer of UTF-32-LE code units, its plane byte patched
    for each plane in turn."""
    units = bytearray(4 * 0x10000)
    units[0::4] = bytes(range(256)) * 256
    units[1::4] = b"".join(bytes((high,)) * 256 for high in range(256))
    plane0 = bytearray(units)
    syllables = _S + _LN * _VN * _TN
    plane0[4 * _S : 4 * syllables] = bytes(4 * (syllables - _S))
    plane0[4 * 0xD800 : 4 * 0xE000] = bytes(4 * 0x800)
    yield plane0.decode("utf-32-le")
    for plane in range(1, 0x11):
        units[2::4] = bytes((plane,)) * 0x10000
        yield units.decode("utf-32-le")


def _mapped(plane: str, first: int, stop: int, found: list[str]) -> None:
    """Append to ``found`` the code points of ``plane[first:stop]`` in runs of 16 that may
    have a decomposition mapping, leaving out the rest in bulk: NFKD replaces a character
    that has one, so a span NFKD leaves as it is has none."""
    if unicodedata.is_normalized("NFKD", plane[first:stop]):
        return
    if stop - first <= 16:
        found.append(plane[first:stop])
        return
    step = (stop - first) // 16
    for at in range(first, stop, step):
        _mapped(plane, at, at + step, found)


@dataclass(frozen=True)
class _Unicode:
    """What the tables need of all of Unicode."""

    #: Canonical composition pairs (Hangul aside) -> their primary composite.
    pairs: dict[tuple[str, str], str]
    #: The most non-starters an NFKD decomposition starts or ends with.
    most: int


@functools.cache
def _unicode() -> _Unicode:
    found: list[str] = []
    for plane in _planes():
        _mapped(plane, 0, 0x10000, found)
    candidates = list("".join(found))
    nfkd = _decompositions("NFKD", candidates)
    keep = list(map(operator.ne, candidates, nfkd))
    mapped = list(itertools.compress(candidates, keep))
    decomposed = list(itertools.compress(nfkd, keep))
    nfd = _decompositions("NFD", mapped)
    canonical = itertools.compress(mapped, map(operator.ne, mapped, nfd))
    composites = list(filter(functools.partial(unicodedata.is_normalized, "NFC"), canonical))
    # A canonical mapping is one code point or two (UAX 44), and one alone is never NFC:
    # the mappings of the primary composites are pairs (the strict zips raise if not).
    codes = " ".join(map(unicodedata.decomposition, composites)).split()
    units = list(map(chr, map(int, codes, itertools.repeat(16))))
    pairs = dict(zip(zip(units[0::2], units[1::2], strict=True), composites, strict=True))
    # A character without a mapping has one non-starter at most; a run of more inside a
    # decomposition bounds the leading and trailing ones from above, which is safe.
    joined = "\0".join(decomposed)
    marks = "".join(c for c in set(joined) if unicodedata.combining(c))
    runs = re.findall(f"[{re.escape(marks)}]{{2,}}", joined) if marks else []
    return _Unicode(pairs, max(map(len, runs), default=1))


#: The longest run of non-starters (counted in NFKD) the Stream-Safe Text Format allows.
STREAM_SAFE_RUN = 30


class StreamSafe:
    """NFKD non-starter counts for the stream-safe text process, whatever the form."""

    def __init__(self) -> None:
        most = _unicode().most
        #: A joiner goes before a character when the count reaches past the limit: at
        #: most ``most`` before the run (a character's trailing non-starters) and ``most``
        #: from the character itself, so only a run of more pure non-starters can need one.
        self.shortest = max(1, (STREAM_SAFE_RUN - 2 * most) // most + 1)
        #: char -> (leading, trailing, no starter at all) for the characters of the blocks
        #: filled whose NFKD starts or ends with a non-starter; every other character sets
        #: the count to zero.
        self.counts: dict[str, tuple[int, int, bool]] = {}
        #: The characters without a starter in their NFKD (bit ``cp & 7`` of byte
        #: ``cp >> 3``), all bits set in a block not filled yet: a run ``find_run`` finds
        #: is a run of them or holds characters not read yet, which ``counted`` reads.
        self.members = bytearray(b"\xff" * (0x110000 >> 3))
        self._filled = bytearray(_BLOCKS)

    def counted(self, c: str) -> bool:
        """Whether ``c`` is in ``counts`` (its block filled first)."""
        if not self._filled[ord(c) >> 8]:
            self.fill(ord(c) >> 8)
        return c in self.counts

    def fill(self, block: int) -> None:
        """Read the counts and members of the 256 code points of ``block``, once."""
        if self._filled[block]:
            return
        first = block << 8
        chars = list(map(chr, range(first, first + 256)))
        nfkd = _decompositions("NFKD", chars)
        bits = bytearray(32)
        if nfkd != chars or any(map(unicodedata.combining, chars)):
            self._read(chars, nfkd, bits)
        self.members[first >> 3 : (first >> 3) + 32] = bits
        self._filled[block] = 1

    def _read(self, chars: list[str], nfkd: list[str], bits: bytearray) -> None:
        """The counts of ``chars`` (a block) whose NFKD ``nfkd`` starts or ends with a
        non-starter, and the bits of those that have no starter in ``bits``."""
        combining = unicodedata.combining
        heads = map(combining, map(operator.itemgetter(0), nfkd))
        tails = map(combining, map(operator.itemgetter(-1), nfkd))
        for i in itertools.compress(range(256), map(operator.or_, heads, tails)):
            c, d = chars[i], nfkd[i]
            flags = [combining(x) != 0 for x in d]
            lead = flags.index(False) if False in flags else len(d)
            trail = flags[::-1].index(False) if False in flags else len(d)
            self.counts[c] = (lead, trail, lead == len(d))
            if lead == len(d):
                bits[i >> 3] |= 1 << (i & 7)


@functools.cache
def stream_safe_counts() -> StreamSafe:
    return StreamSafe()


@functools.cache
def _classes() -> mmap.mmap:
    """The canonical combining class of each code point, filled with the flags."""
    return _zeros()


@dataclass(frozen=True)
class _Composing:
    """What composition adds to the rules: what the characters that compose with one
    before them need (their partners' decompositions' characters), those characters,
    the starters after which a non-starter may still compose, and all of those after
    which some character is not a boundary (marks are both, without being listed)."""

    need: dict[str, frozenset[str]]
    backward: frozenset[str]
    opened: frozenset[str]
    held: frozenset[str]


@functools.cache
def _composing() -> _Composing:
    pairs = _unicode().pairs
    left: dict[str, set[str]] = {}
    with_mark: set[str] = set()
    ends: dict[str, set[str]] = {}
    for (a, b), composite in pairs.items():
        left.setdefault(b, set()).add(a)
        ends.setdefault(b, set()).add(composite)
        if unicodedata.combining(b):
            with_mark.add(a)
    partners = list({a for a, _ in pairs})
    decomposed = dict(zip(partners, _decompositions("NFD", partners), strict=True))
    made: dict[frozenset[str], frozenset[str]] = {}
    need: dict[str, frozenset[str]] = {}
    for b, firsts in left.items():
        key = frozenset(firsts)
        if key not in made:
            made[key] = frozenset("".join(decomposed[a] for a in key))
        need[b] = made[key]
    # Hangul: a vowel jamo composes with a leading one, a trailing jamo with an LV
    # syllable (a leading and a vowel jamo decomposed); no syllable composes with a mark.
    need.update(dict.fromkeys(_HANGUL_V, _HANGUL_L))
    need.update(dict.fromkeys(_HANGUL_T, _HANGUL_L | _HANGUL_V))
    opened = with_mark | {b for b, made_of in ends.items() if not made_of.isdisjoint(with_mark)}
    return _Composing(
        need, frozenset(need), frozenset(opened), frozenset(opened.union(*need.values()))
    )


class Rules:
    """One form's tables: the pass's flags and the boundary rules of the module
    docstring of core/normalize.py, filled a block at a time."""

    def __init__(self, form: Form) -> None:
        self.form = form
        self.kind: Form = "NFKD" if form.startswith("NFK") else "NFD"
        self.safe = stream_safe_counts()
        self.flags = _zeros()
        normalize = functools.partial(unicodedata.normalize, form)
        self.tables: PieceTables = (
            self.flags,
            _classes(),
            self.fill,
            normalize,
            self.safe.members,
        )
        #: ``y`` -> ``None`` where ``first(y)`` is a non-starter, else the characters a
        #: ``last(x)`` must avoid for a boundary before ``y``; no entry: always a boundary.
        self.before: dict[str, frozenset[str] | None] = {}
        #: ``x`` -> ``last(x)`` where they differ.
        self.last: dict[str, str] = {}
        #: The ``x`` whose ``last(x)`` a non-starter after it is not a boundary with, and
        #: those whose ``last(x)`` some character after it is not a boundary with.
        self.opening: set[str] = set()
        self.holding: set[str] = set()
        composing = _composing() if form in ("NFC", "NFKC") else _Composing({}, *[frozenset()] * 3)
        self._need = composing.need
        self._backward = composing.backward
        self._opened = composing.opened
        self._held = composing.held
        #: What a character must not be for its block to be plain (see ``fill``).
        self._special = composing.backward | composing.held

    def fill(self, block: int) -> None:
        """Read the 256 code points of ``block``: their flags, classes and rules."""
        first = block << 8
        chars = list(map(chr, range(first, first + 256)))
        classes = list(map(unicodedata.combining, chars))
        full = _decompositions(self.kind, chars)
        self.safe.fill(block)
        members = self.safe.members[first >> 3 : (first >> 3) + 32]
        flags = bytearray((_FILLED,)) * 256
        # A block of starters without a mapping that compose with nothing (most blocks
        # of most scripts) has nothing more to read.
        if full != chars or any(classes) or any(members) or not self._special.isdisjoint(chars):
            self._read(chars, classes, full, flags)
            for at in itertools.compress(range(32), members):
                for i in range(8 * at, 8 * at + 8):
                    flags[i] |= _ONLY if members[at] >> (i & 7) & 1 else 0
        _classes()[first : first + 256] = bytes(classes)
        self.flags[first : first + 256] = flags

    def _read(
        self, chars: list[str], classes: list[int], full: list[str], flags: bytearray
    ) -> None:
        """The rules of ``chars`` (a block), and their flags but ``_ONLY`` into ``flags``."""
        # A character without a decomposition is its own normalization in every form.
        plain = full == chars or self.form == self.kind
        normal = full if plain else _decompositions(self.form, chars)
        starts = list(map(operator.itemgetter(0), full))
        ends = list(map(operator.itemgetter(-1), full))
        start_marks = list(map(unicodedata.combining, starts))
        end_marks = list(map(unicodedata.combining, ends))
        need = self._need
        joins = list(map(operator.or_, start_marks, map(need.__contains__, starts)))
        for c, start, mark in itertools.compress(
            zip(chars, starts, start_marks, strict=True), joins
        ):
            self.before[c] = None if mark else need[start]
        changed = map(operator.ne, chars, ends)
        self.last.update(itertools.compress(zip(chars, ends, strict=True), changed))
        opening = map(operator.or_, end_marks, map(self._opened.__contains__, ends))
        self.opening.update(itertools.compress(chars, opening))
        holding = map(operator.or_, end_marks, map(self._held.__contains__, ends))
        self.holding.update(itertools.compress(chars, holding))
        changes = map(
            operator.or_, map(operator.ne, chars, normal), map(self._backward.__contains__, chars)
        )
        for flag, where in ((_CHANGES, changes), (_MARK, classes), (_JOINS, joins)):
            for i in itertools.compress(range(256), where):
                flags[i] |= flag

    def boundary(self, x: str, y: str) -> bool:
        """Whether there is a normalization boundary between ``x`` and ``y``."""
        # ``known`` written out: this runs for every piece.
        if not self.flags[ord(y)]:
            self.fill(ord(y) >> 8)
        avoid = self.before.get(y, False)
        if avoid is False:
            return True
        if not self.flags[ord(x)]:
            self.fill(ord(x) >> 8)
        if avoid is None:
            return x not in self.opening
        assert isinstance(avoid, frozenset)
        return self.last.get(x, x) not in avoid

    def holds(self, x: str) -> bool:
        """Whether some character after ``x`` is not a boundary with it."""
        if not self.flags[ord(x)]:
            self.fill(ord(x) >> 8)
        return x in self.holding


@functools.cache
def form_rules(form: Form) -> Rules:
    return Rules(form)
