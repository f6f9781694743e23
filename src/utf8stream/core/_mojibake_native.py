"""The mojibake repairer's pass over a buffer in pure Python: the twin of the
accelerator's (``_moji.h``: ``find_moji``; ``_mojirepair.h``: ``moji_repair``), name for
name, re-exported by ``_native`` so that ``_accel.implementation()`` hands
``MojibakeRepairer`` one or the other.

The rules are ``core/mojibake.py``'s (its docstring says them in words); the tables come
in the arguments, as the compiled pass takes them: ``find_moji``'s index of the code
pages' characters and their bytes, 16 bits of flags per character of the pages, a byte of
flags per script group, the classifier of other characters (script group, combining) and
the names of the pages.  Both give the same output and the same repairs for every input.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable

__all__ = ["find_moji", "find_moji_bytes", "moji_repair"]

#: Layers of mojibake undone at most.
LAYERS = 3
#: The flags of a character of the code pages (16 bits a row, native order): next to a
#: letter all but always mojibake; the lead byte of Latin-1 letters read in a code page (a
#: tell); a tell before a Latin letter too; a tell before a no-break space too; a letter
#: that in mojibake stands for a symbol; category Zs; category P*; ``str.isalpha``,
#: ``islower``, ``isupper`` (the compiled pass reads them here; this one asks ``str``).
RARE, TELL, TELL_LATIN, TELL_NBSP, SYMBOLIC, SPACE, PUNCT = 1, 2, 4, 8, 16, 32, 64
ALPHA, LOWER, UPPER = 128, 256, 512
#: The flags of a script group: no repair gives it; of no script (goes with any); Latin;
#: an alphabet other than Latin; one whose letters stand in no word of ASCII letters.
NO, NONE, LATIN, ALPHABET, NOT_IN_LATIN = 1, 2, 4, 8, 16
#: A character's class: its group's number (low seven bits), a combining mark.
GROUP, COMBINING = 0x7F, 0x80

Rules = tuple[bytes, bytes, int, bytes, bytes, Callable[[int], int], tuple[str, ...]]
Repairs = list[tuple[int, int, str, tuple[str, ...]]]
_C1 = re.compile("[\x80-\x9f]")
_LINE_END = re.compile("[\n\r]")


class _MojiTables:
    """``find_moji``'s tables read once: the characters of the pages, a pattern for their
    runs, and per page a map of each character it holds to its byte."""

    def __init__(self, index: bytes, pages: bytes, width: int) -> None:
        rows = memoryview(index).cast("H")
        count = len(pages) // width
        self.members = frozenset(chr(cp) for cp in range(0x80, 0x10000) if 0 < rows[cp] < count)
        self.run = re.compile(
            "[" + re.escape("".join(sorted(self.members))) + "]+" if self.members else "[^\\s\\S]"
        )
        self.maps = [
            {
                ord(c): chr(pages[rows[ord(c)] * width + k])
                for c in self.members
                if pages[rows[ord(c)] * width + k]
            }
            for k in range(width)
        ]
        self.all = (1 << width) - 1
        self.pages_of = functools.lru_cache(maxsize=65536)(self._pages_of)

    def _pages_of(self, run: str) -> int:
        """The pages (bit k: the k-th) through which ``run`` is valid UTF-8."""
        points = {ord(c) for c in run}
        found = 0
        for k, page in enumerate(self.maps):
            if points <= page.keys():
                try:
                    run.translate(page).encode("latin-1").decode("utf-8")
                except UnicodeDecodeError:
                    continue
                found |= 1 << k
        return found


@functools.lru_cache(maxsize=4)
def _moji_tables(index: bytes, pages: bytes, width: int) -> _MojiTables:
    return _MojiTables(index, pages, width)


def _checked_moji_tables(text: str, index: bytes, pages: bytes, width: int) -> _MojiTables:
    if not isinstance(text, str) or not isinstance(index, bytes) or not isinstance(pages, bytes):
        raise TypeError("find_moji(text: str, index: bytes, pages: bytes, width, ...)")
    if not 1 <= width <= 32 or len(index) != 2 * 0x10000:
        raise ValueError(
            "find_moji: a 0x10000-entry index, 1 to 32 pages, start >= 0, longest >= 1"
        )
    return _moji_tables(index, pages, width)


def find_moji(text: str, index: bytes, pages: bytes, width: int, start: int, longest: int) -> int:
    """The index of the first run of the pages' characters at or after ``start`` that
    could be undone, or -1 (see the compiled twin, ``_moji.h``, for the tables): one
    valid UTF-8 through a page, one of ``longest`` characters or more, or one that began
    before ``start``; never one of a single character."""
    tables = _checked_moji_tables(text, index, pages, width)
    if start < 0 or longest < 1:
        raise ValueError(
            "find_moji: a 0x10000-entry index, 1 to 32 pages, start >= 0, longest >= 1"
        )
    return _find(tables, text, start, longest)


_NON_ASCII = re.compile(rb"[\x80-\xff]")
_ASCII_BYTE = re.compile(rb"[\x00-\x7f]")


def find_moji_bytes(
    data: bytes, index: bytes, pages: bytes, width: int, start: int, longest: int
) -> int:
    """``find_moji`` over UTF-8 bytes: the byte offset of the first run that could be
    undone at or after ``start``, or -1 (see the compiled twin, ``_mojibytes.h``).  A run
    is of characters above U+007F, so it lies in a stretch of bytes above 0x7F, which
    begins and ends where sequences do: each stretch is decoded with ``surrogateescape``
    (as the compiled scan reads a byte that begins no valid sequence) and searched."""
    if not isinstance(data, bytes) or not isinstance(index, bytes) or not isinstance(pages, bytes):
        raise TypeError(
            "find_moji_bytes(data: bytes, index: bytes, pages: bytes, width, start, longest)"
        )
    if not 1 <= width <= 32 or len(index) != 2 * 0x10000 or start < 0 or longest < 1:
        raise ValueError(
            "find_moji_bytes: a 0x10000-entry index, 1 to 32 pages, start >= 0, longest >= 1"
        )
    at = start
    while (high := _NON_ASCII.search(data, at)) is not None:
        first = high.start()
        low = _ASCII_BYTE.search(data, first)
        at = len(data) if low is None else low.start()
        text = data[first:at].decode("utf-8", "surrogateescape")
        found = find_moji(text, index, pages, width, 0, longest)
        if found >= 0:
            return first + len(text[:found].encode("utf-8", "surrogateescape"))
    return -1


def _find(tables: _MojiTables, text: str, start: int, longest: int) -> int:
    for found in tables.run.finditer(text, start):
        a, b = found.span()
        if (
            b - a >= longest
            or (a == start and a > 0 and text[a - 1] in tables.members)
            or (b - a >= 2 and tables.pages_of(found.group()))
        ):
            return a
    return -1


class _Rules:
    """``moji_repair``'s tables read once, and the rules on them, each cached per text."""

    def __init__(self, rules: Rules) -> None:
        index, pages, width, flags, groups, classify, names = rules
        self.moji = _moji_tables(index, pages, width)
        rows = memoryview(index).cast("H")
        bits = memoryview(flags).cast("H")
        members = "".join(sorted(self.moji.members))
        having = {
            flag: frozenset(c for c in members if bits[rows[ord(c)]] & flag)
            for flag in (RARE, TELL, TELL_LATIN, TELL_NBSP, SYMBOLIC, SPACE, PUNCT)
        }
        self.rare = having[RARE]
        self.tells, self.tells_latin, self.tells_nbsp = (
            having[TELL],
            having[TELL_LATIN],
            having[TELL_NBSP],
        )
        self.symbolic_letters, self.spaces, self.punct = (
            having[SYMBOLIC],
            having[SPACE],
            having[PUNCT],
        )
        one = "[" + re.escape(members) + "]" if members else "[^\\s\\S]"
        self.char = re.compile(one)
        self.lone = re.compile(f"(?<!{one}){one}(?!{one})")
        self.groups, self.classify, self.names = groups, classify, names
        self.classes = bytearray()  # the caller's, set on each call
        self.plausible = functools.lru_cache(maxsize=65536)(self._plausible)
        self.reads_badly = functools.lru_cache(maxsize=65536)(self._reads_badly)
        self.passable = functools.lru_cache(maxsize=65536)(self._passable)

    def class_of(self, char: str) -> int:
        """The class of a character, asked of the classifier the first time."""
        code = ord(char)
        known = self.classes[code]
        if not known:
            known = self.classify(code)
            if not 1 <= known <= 0xFF:
                raise ValueError("moji_repair: a class is 1 to 255")
            self.classes[code] = known
        return known

    def flags_of(self, char: str) -> int:
        return self.groups[self.class_of(char) & GROUP]

    def _plausible(self, repair: str, before: str, after: str) -> bool:
        """Whether ``repair`` reads as text between ``before`` and ``after``."""
        scripts = {k & GROUP for k in map(self.class_of, repair)}
        if any(self.groups[k] & NO for k in scripts):
            return False
        scripts = {k for k in scripts if not self.groups[k] & NONE}
        if len(scripts) > 1:
            return False
        script = self.groups[next(iter(scripts))] if scripts else 0
        first, last = repair[0], repair[-1]
        # A combining mark goes on the letter before it: a Latin one on any letter (text
        # in decomposed form), any other only on a letter of its own repair.
        if self.class_of(first) & COMBINING and not (
            0x0300 <= ord(first) <= 0x036F and before.isalpha()
        ):
            return False
        # A letter of another script inside a word of ASCII letters is not a word.
        if before.isascii() and after.isascii() and before.isalpha() and after.isalpha():
            return not scripts or bool(script & LATIN)
        # Nor is one of an alphabet glued to it on one side.
        return not (
            script & NOT_IN_LATIN
            and (
                (before.isascii() and before.isalpha() and first.isalpha())
                or (after.isascii() and after.isalpha() and last.isalpha())
            )
        )

    def symbolic(self, char: str) -> bool:
        return not char.isalpha() or char in self.symbolic_letters

    def _reads_badly(self, run: str, before: str, after: str) -> bool:
        """Whether ``run`` (between ``before`` and ``after``) looks like mojibake as it is."""
        if not self.rare.isdisjoint(run):
            return True
        context = before + run + after
        for left, right in itertools.pairwise(context):
            if left.islower() and right.isupper() and (not left.isascii() or not right.isascii()):
                return True
        if len(run) >= 3:
            return any(map(self.symbolic, run))
        first, second = run[0], run[1]
        if first in self.tells:
            # Before a symbol (a no-break space only after Ã and Â), or before a Latin
            # letter, as in mac_roman's √ß (ç); not before a Greek one ("√π").
            if second == "\u00a0":
                return first in self.tells_nbsp
            return self.symbolic(second) or (first in self.tells_latin and second <= "\u024f")
        if not self.symbolic(second) or second in self.spaces:
            # A no-break space after an accented capital is a space ("SELKÄ\u00a0EDELLÄ").
            return False
        if second in self.punct:
            # An accented capital before punctuation ends many a correct word ("VOCÊ…").
            return after.isalpha()
        return before.isalpha() or after.isalpha()

    def _passable(self, repair: str) -> bool:
        """Whether ``repair`` may be a layer between two others: any character a code
        page holds, C1 controls too, or any a final repair may give."""
        return not any(self.flags_of(c) & NO for c in set(repair) - self.moji.members)

    def undo(self, joined: str, k: int) -> list[str] | None:
        """Each of the runs in ``joined`` (a space between each: a space ends any UTF-8
        sequence; no run holds one) put back through page ``k`` and decoded as UTF-8, or
        None if one of them does not go through."""
        try:
            return joined.translate(self.moji.maps[k]).encode("latin-1").decode("utf-8").split(" ")
        except UnicodeError:
            return None

    def peel(
        self, runs: list[str], contexts: list[tuple[str, str]], depth: int, shown: bool = False
    ) -> tuple[list[str], list[tuple[str, ...]]] | None:
        """The deepest repair of every run of a stretch, each layer through the first code
        page (in order) that repairs them all: the repairs and, per run, the code pages
        undone; None if no code page gives a plausible repair at any depth.  ``shown``: the
        runs are already known to be mojibake (a layer undone gave text no one writes)."""
        through = self.moji.all
        for run in runs:
            through &= self.moji.pages_of(run)
        joined = " ".join(runs)
        for k, code_page in enumerate(self.names):
            if not through >> k & 1:
                continue
            repaired = self.undo(joined, k)
            if repaired is None or not all(map(self.passable, repaired)):
                continue
            if not shown and not any(
                self.reads_badly(run, before, after)
                for run, (before, after) in zip(runs, contexts, strict=True)
            ):
                continue
            names: list[tuple[str, ...]] = [(code_page,)] * len(runs)
            done = [
                not _C1.search(r) and self.plausible(r, *context)
                for r, context in zip(repaired, contexts, strict=True)
            ]
            deep = [
                i for i, r in enumerate(repaired) if len(r) > 1 and self.moji.members.issuperset(r)
            ]
            if depth > 1 and deep and all(done[i] for i in range(len(runs)) if i not in deep):
                # Peel on the runs that may still be mojibake (a line may hold mojibake
                # made once and twice).
                deeper = self.peel(
                    [repaired[i] for i in deep],
                    [contexts[i] for i in deep],
                    depth - 1,
                    shown=not all(done[i] for i in deep),
                )
                if deeper is not None:
                    for j, i in enumerate(deep):
                        repaired[i] = deeper[0][j]
                        names[i] += deeper[1][j]
                    return repaired, names
            if all(done):
                return repaired, names
        return None

    def decide(self, stretch: str, before: str, after: str) -> Repairs:
        """The repairs of one stretch: (start, end, replacement, code pages undone)."""
        if self.lone.search(stretch):
            return []
        spans = [m.span() for m in self.moji.run.finditer(stretch)]
        contexts = [
            (stretch[a - 1] if a else before, stretch[b] if b < len(stretch) else after)
            for a, b in spans
        ]
        found = self.peel([stretch[a:b] for a, b in spans], contexts, LAYERS)
        if found is None:
            return []
        if len(spans) == 1 and len(found[0][0]) == 1 and self.flags_of(found[0][0][0]) & ALPHABET:
            # One letter of an alphabet other than Latin, alone on its line: too little to
            # go on (a CJK character is a word).
            return []
        return [(a, b, found[0][i], found[1][i]) for i, (a, b) in enumerate(spans)]

    def cut(self, buf: str, s: int, limit: int) -> int:
        """Where a stretch from ``s`` longer than the bound ends: after its last whole run
        within the bound, or at the bound."""
        members = self.moji.members
        e = s + limit
        while e > s and (buf[e - 1] not in members or buf[e] in members):
            e -= 1
        return e if e > s else s + limit


def _checked_rules(rules: Rules, classes: bytearray) -> _Rules:
    if not isinstance(rules, tuple) or len(rules) != 7:
        raise TypeError(
            "moji_repair: rules is (index, pages, width, flags, groups, classify, names)"
        )
    if len(classes) != 0x110000:
        raise ValueError("moji_repair: 0x110000 classes")
    found = _rules(rules)
    found.classes = classes
    return found


@functools.lru_cache(maxsize=4)
def _rules(rules: Rules) -> _Rules:
    """The rules read, once for each tuple of them (the repairer passes the same one)."""
    index, pages, width, flags, groups, classify, names = rules
    _checked_moji_tables("", index, pages, width)
    if (
        not isinstance(flags, bytes)
        or len(flags) < 2 * (len(pages) // width)
        or not isinstance(groups, bytes)
        or len(groups) != GROUP + 1
        or not callable(classify)
        or not isinstance(names, tuple)
        or len(names) != width
    ):
        raise ValueError(
            "moji_repair: two bytes of flags a row, 128 groups, a classifier, a name a page"
        )
    return _Rules(rules)


def moji_repair(
    buf: str,
    before: str,
    final: bool,
    max_carry: int,
    events: bool,
    rules: Rules,
    classes: bytearray,
) -> tuple[str, int, Repairs | None]:
    """The stretches of ``buf`` decided and repaired, in order (see the compiled twin,
    ``_mojirepair.h``): ``buf[:end]`` with its repairs, ``end`` (``buf[end:]`` is the
    stretch not yet decided) and, if ``events``, the repairs as (start, end, replacement,
    code pages undone) at offsets of ``buf``."""
    if not isinstance(buf, str) or not isinstance(before, str) or len(before) > 1:
        raise TypeError(
            "moji_repair(buf: str, before: str (0 or 1 character), final, max_carry, "
            "events, rules, classes)"
        )
    if max_carry < 4:
        raise ValueError("moji_repair: max_carry must be at least 4")
    tables = _checked_rules(rules, classes)
    out: list[str] = []
    repairs: Repairs = []
    at = 0
    limit = max_carry
    pair: int | None = -1
    while True:
        # A line without a run that could be undone (valid UTF-8 through one of the code
        # pages) holds nothing to repair: every stretch in it is left as it is.  It goes
        # out as it is, without being cut into stretches; so does the rest of the text
        # when it is final and holds no such run.
        if pair is not None and pair < at:
            pair = _find(tables.moji, buf, at, limit)
            pair = None if pair < 0 else pair
        if pair is None and final:
            skip = len(buf)
        else:
            skip = len(buf) if pair is None else pair
            skip = max(buf.rfind("\n", at, skip), buf.rfind("\r", at, skip)) + 1
        if skip > at:
            out.append(buf[at:skip])
            at = skip
        found = tables.char.search(buf, at)
        if found is None:
            out.append(buf[at:])
            at = len(buf)
            break
        s = found.start()
        out.append(buf[at:s])
        end = _LINE_END.search(buf, s, s + limit + 1)
        if end is not None:
            e = end.start()
        elif len(buf) > s + limit:
            e = tables.cut(buf, s, limit)
        elif final:
            e = len(buf)
        else:
            at = s
            break
        stretch = buf[s:e]
        done = tables.decide(stretch, buf[s - 1] if s else before, buf[e] if e < len(buf) else "")
        kept = 0
        for a, b, replacement, _ in done:
            out += (stretch[kept:a], replacement)
            kept = b
        out.append(stretch[kept:])
        repairs += [(s + a, s + b, r, undone) for a, b, r, undone in done]
        at = e
    return "".join(out), at, repairs if events else None
