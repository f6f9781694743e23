"""Mojibake repair on a stream: text that was UTF-8 and was decoded by mistake in a
single-byte code page, once or twice, decoded again as it was meant to be.

What is repaired.  UTF-8 writes every non-ASCII character as two to four bytes of 0x80 and
above; a single-byte code page reads each of those bytes as one character, so mojibake is
always a *run* of non-ASCII characters that the code page can encode back to bytes that
are valid UTF-8 (``"café"`` read as cp1252 is ``"cafÃ©"``; read so twice, ``"cafÃƒÂ©"``).
The code pages undone are cp1252 (with latin-1: a byte cp1252 leaves undefined is taken
as the C1 control latin-1 gives it), cp1251, cp1250, cp1253, cp1254, cp1257, ISO 8859-2
and mac_roman, tried in that order; up to three layers are undone.

How it decides.  The unit of decision is a *stretch*: from a character one of these code
pages holds above 0x7F to the end of its line (``\\n`` or ``\\r``), at most ``max_carry``
code points.  A stretch is repaired through a code page only when every run in it encodes
and decodes as UTF-8 (a lone accented letter in a line is correct text, and its line is
left alone), every repair is a plausible text (assigned characters of the scripts people
write, no control characters, no letter of another script glued to an ASCII word), and at
least one run reads badly as text (a C1 control, a symbol glued to a letter, a lower-case
letter followed by a capital inside a word, the lead bytes of Latin-1 letters read as
``Ã``/``Â`` before a symbol).  A missed repair is better than a false one: text that only
looks odd is left as it is.

Streaming.  A stretch is held until its line ends, it reaches ``max_carry`` code points or
``final`` is given; a stretch longer than ``max_carry`` is cut after its last whole run
within the bound (in the middle of a run only when one run alone is longer), and the rest
is a stretch of its own.  The decision depends only on the stretch and the character just
before and after it, so for every way of cutting the input the output is that of
``repair_mojibake`` on the whole text.
"""

from __future__ import annotations

import array
import codecs
import itertools
import re
import unicodedata
from functools import lru_cache
from typing import Any

from ._accel import implementation
from .transform import OnChange, TextChange, TransformCheckpoint, register_transform

__all__ = ["CODE_PAGES", "DEFAULT_MAX_CARRY", "MojibakeRepairer", "repair_mojibake"]

#: The code pages undone, in the order they are tried.
CODE_PAGES = ("cp1252", "cp1251", "cp1250", "cp1253", "cp1254", "cp1257", "iso8859-2", "mac_roman")
#: Long enough for a line of mojibake of about a hundred Cyrillic or Greek letters to be
#: decided as one stretch; short enough that holding it costs nothing.
DEFAULT_MAX_CARRY = 256
_LAYERS = 3
_ASCII = "".join(map(chr, range(0x80)))


def _upper_half(code_page: str) -> str:
    """The characters bytes 0x80-0xFF give in ``code_page``; a byte it leaves undefined
    gives the C1 control of the same number, as latin-1 reads it."""
    chars = []
    for byte in range(0x80, 0x100):
        try:
            chars.append(bytes([byte]).decode(code_page))
        except UnicodeDecodeError:
            chars.append(chr(byte))
    return "".join(chars)


_HALVES = {name: _upper_half(name) for name in ("latin-1", *CODE_PAGES)}
_MOJI = "".join(sorted(set("".join(_HALVES.values()))))
_MOJI_SET = frozenset(_MOJI)
_MOJI_CLASS = "[" + re.escape(_MOJI) + "]"
_MOJI_CHAR = re.compile(_MOJI_CLASS)
_MOJI_RUN = re.compile(_MOJI_CLASS + "+")
_LONE = re.compile(f"(?<!{_MOJI_CLASS}){_MOJI_CLASS}(?!{_MOJI_CLASS})")
_LINE_END = re.compile("[\n\r]")


_C1 = re.compile("[\x80-\x9f]")
# Characters that next to a letter are all but always mojibake: C1 controls, and symbols
# that text has little use for (broken bar, currency sign, diaeresis, macron, cedilla,
# florin, the spacing accents of cp1250, daggers, per mille, lozenge, low quotes).
_RARE = re.compile("[\x80-\x9f¦¤¨¯¸ƒˆˇ˘˙˛˝˜†‡‰◊‚„]")


# Encoding maps of the code pages, as CPython's own charmap codecs use; latin-1 is tried
# before cp1252 (C1 controls where cp1252 defines a character are latin-1's reading).
_ENCODERS = (
    ("latin-1", None),
    *((name, codecs.charmap_build(_ASCII + _HALVES[name])) for name in CODE_PAGES),
)


def _moji_tables() -> tuple[bytes, bytes]:
    """``find_moji``'s tables: per BMP code point its row (0: no character of the code
    pages), and per row its byte through each of ``_ENCODERS`` (0: not held)."""
    index = array.array("H", bytes(2 * 0x10000))
    pages = bytearray(len(_ENCODERS))
    for row, char in enumerate(_MOJI, 1):
        if not 0x80 <= ord(char) < 0x10000:
            raise AssertionError(f"a code page's upper half holds {char!r}")
        index[ord(char)] = row
        for _, encoder in _ENCODERS:
            try:
                raw = (
                    char.encode("latin-1")
                    if encoder is None
                    else codecs.charmap_encode(char, "strict", encoder)[0]
                )
            except UnicodeError:
                raw = b"\0"
            pages.append(raw[0])
    return index.tobytes(), bytes(pages)


_INDEX, _PAGES = _moji_tables()
# The byte 0xC3 or 0xC2 (the lead bytes of U+0080-U+00FF) read in each code page: before
# a symbol they are the surest sign of mojibake.  mac_roman's 0xC2 is a NOT SIGN, which
# people draw faces with, so it is no sign.
_TELLS = frozenset(c for name in CODE_PAGES for c in (_HALVES[name][0x43], _HALVES[name][0x42]))
_TELLS = (_TELLS - {"\u00ac"}) | {"≈"}  # mac_roman's 0xC5, the lead of Latin Extended-A
# Letters by category that in mojibake stand for symbols: ordinal indicators, micro sign,
# florin, and cp1252's letters at 0x80-0x9F that no language writes after a Latin-1 letter.
_SYMBOLIC_LETTERS = frozenset("ªºµƒˆŸŒœ")

# (first, last, script) of the characters a repair may give; a script of None is
# punctuation, symbols and format characters, which go with any script.  IPA, the spacing
# modifiers and the scripts no one writes today are left out: a repair to them is taken
# for a coincidence.
_ALLOWED = (
    (0x00A0, 0x00BF, None),
    (0x00C0, 0x024F, "Latin"),
    (0x0259, 0x0259, "Latin"),
    (0x02BB, 0x02BC, "Latin"),
    (0x0300, 0x036F, None),
    (0x0384, 0x03CE, "Greek"),
    (0x0400, 0x045F, "Cyrillic"),
    (0x048A, 0x04FF, "Cyrillic"),
    (0x0531, 0x058A, "Armenian"),
    (0x05B0, 0x05F4, "Hebrew"),
    (0x0600, 0x06FF, "Arabic"),
    (0x0700, 0x074F, "Syriac"),
    (0x0750, 0x077F, "Arabic"),
    (0x0780, 0x07BF, "Thaana"),
    (0x08A0, 0x08FF, "Arabic"),
    (0x0900, 0x0DFF, "Indic"),
    (0x0E00, 0x0EFF, "Thai"),
    (0x0F00, 0x0FFF, "Tibetan"),
    (0x1000, 0x109F, "Myanmar"),
    (0x10A0, 0x10FF, "Georgian"),
    (0x1100, 0x11FF, "CJK"),
    (0x1200, 0x139F, "Ethiopic"),
    (0x13A0, 0x13FF, "Cherokee"),
    (0x1400, 0x167F, "Syllabics"),
    (0x1780, 0x17FF, "Khmer"),
    (0x1800, 0x18AF, "Mongolian"),
    (0x1E00, 0x1EFF, "Latin"),
    (0x1F00, 0x1FFF, "Greek"),
    (0x2000, 0x2027, None),
    (0x202A, 0x2064, None),
    (0x2070, 0x20C0, None),
    (0x2100, 0x23FF, None),
    (0x2460, 0x27BF, None),
    (0x2900, 0x2BFF, None),
    (0x2D30, 0x2D7F, "Tifinagh"),
    (0x2E80, 0x2FDF, "CJK"),
    (0x3000, 0x303F, None),
    (0x3040, 0x33FF, "CJK"),
    (0x3400, 0x4DBF, "CJK"),
    (0x4E00, 0x9FFF, "CJK"),
    (0xA000, 0xA4CF, "CJK"),
    (0xAC00, 0xD7A3, "CJK"),
    (0xF900, 0xFAFF, "CJK"),
    (0xFB1D, 0xFDFF, "Arabic"),
    (0xFE00, 0xFE0F, None),
    (0xFE30, 0xFE4F, "CJK"),
    (0xFE70, 0xFEFC, "Arabic"),
    (0xFEFF, 0xFEFF, None),
    (0xFF00, 0xFFEF, "CJK"),
    (0x1F000, 0x1FAFF, None),
    (0x20000, 0x2FA1F, "CJK"),
)
_ALPHABETS = frozenset(script for *_, script in _ALLOWED if script not in (None, "Latin", "CJK"))
# Scripts whose letters do not stand inside a word of ASCII letters: a repair that puts
# one there is taken for a coincidence.
_NOT_IN_LATIN_WORDS = frozenset({"Greek", "Cyrillic", "Armenian", "Georgian", "Cherokee"})
_NO = "no"  # a character no repair may give


@lru_cache(maxsize=4096)
def _script(char: str) -> str | None:
    """The script group of a character a repair may give, None for one of no script,
    ``_NO`` for a character no repair gives (unassigned, private, control, rare)."""
    code = ord(char)
    for first, last, script in _ALLOWED:
        if first <= code <= last:
            if unicodedata.category(char) in ("Cn", "Co", "Cs", "Cc"):
                return _NO
            if script is not None and not unicodedata.category(char).startswith(("L", "M")):
                return None
            return script
    return _NO


def _is_letter(char: str) -> bool:
    return char.isalpha()


@lru_cache(maxsize=65536)
def _plausible(repair: str, before: str, after: str) -> bool:
    """Whether ``repair`` reads as text between ``before`` and ``after``."""
    scripts = set(map(_script, repair))
    if _NO in scripts:
        return False
    scripts.discard(None)
    if len(scripts) > 1:
        return False
    first, last = repair[0], repair[-1]
    # A combining mark goes on the letter before it: a Latin one on any letter (text in
    # decomposed form), any other only on a letter of its own repair.
    if unicodedata.combining(first) and not (
        0x0300 <= ord(first) <= 0x036F and _is_letter(before)
    ):
        return False
    # A letter of another script inside a word of ASCII letters is not a word.
    if before.isascii() and after.isascii() and _is_letter(before) and _is_letter(after):
        return not scripts - {"Latin"}
    # Nor is one of an alphabet glued to it on one side.
    return not (
        scripts & _NOT_IN_LATIN_WORDS
        and (
            (before.isascii() and _is_letter(before) and _is_letter(first))
            or (after.isascii() and _is_letter(after) and _is_letter(last))
        )
    )


def _symbolic(char: str) -> bool:
    return not char.isalpha() or char in _SYMBOLIC_LETTERS


@lru_cache(maxsize=65536)
def _reads_badly(run: str, before: str, after: str) -> bool:
    """Whether ``run`` (between ``before`` and ``after``) looks like mojibake as it is."""
    if _RARE.search(run):
        return True
    context = before + run + after
    for left, right in itertools.pairwise(context):
        if left.islower() and right.isupper() and (not left.isascii() or not right.isascii()):
            return True
    if len(run) >= 3:
        return any(map(_symbolic, run))
    first, second = run[0], run[1]
    if first in _TELLS:
        # Before a symbol (a no-break space only after Ã and Â), or before a Latin
        # letter, as in mac_roman's √ß (ç); not before a Greek one ("√π").
        if second == "\u00a0":
            return first in "ÃÂ"
        return _symbolic(second) or (first in "ÃÂ√≈" and second <= "\u024f")
    if not _symbolic(second):
        return False
    category = unicodedata.category(second)
    if category == "Zs":
        # A no-break space after an accented capital is a space ("SELKÄ\u00a0EDELLÄ").
        return False
    if category.startswith("P"):
        # An accented capital before punctuation ends many a correct word ("VOCÊ…").
        return _is_letter(after)
    return _is_letter(before) or _is_letter(after)


def _undo(joined: str, encoder: Any) -> list[str] | None:
    """Each of the runs in ``joined`` (a space between each: a space ends any UTF-8
    sequence; no run holds one) encoded with ``encoder`` (a charmap, None for latin-1)
    and decoded as UTF-8, or None if one of them does not go through."""
    try:
        raw = (
            joined.encode("latin-1")
            if encoder is None
            else codecs.charmap_encode(joined, "strict", encoder)[0]
        )
        return raw.decode("utf-8").split(" ")
    except UnicodeError:
        return None


@lru_cache(maxsize=65536)
def _passable(repair: str) -> bool:
    """Whether ``repair`` may be a layer between two others: any character a code page
    holds, C1 controls too, or any a final repair may give."""
    return _NO not in map(_script, set(repair).difference(_MOJI_SET))


Repairs = list[tuple[int, int, str, tuple[str, ...]]]


def _peel(
    runs: list[str], contexts: list[tuple[str, str]], depth: int, shown: bool = False
) -> tuple[list[str], list[tuple[str, ...]]] | None:
    """The deepest repair of every run of a stretch, each layer through the first code
    page (in order) that repairs them all: the repairs and, per run, the code pages
    undone; None if no code page gives a plausible repair at any depth.  ``shown``: the
    runs are already known to be mojibake (a layer undone gave text no one writes)."""
    joined = " ".join(runs)
    # The code pages through which every run is valid UTF-8, found in one pass: only
    # those are tried.
    through = implementation().moji_pages(joined, _INDEX, _PAGES, len(_ENCODERS))
    for k, (code_page, encoder) in enumerate(_ENCODERS):
        if not through >> k & 1:
            continue
        repaired = _undo(joined, encoder)
        if repaired is not None and all(map(_passable, repaired)):
            if not shown and not any(
                _reads_badly(run, before, after)
                for run, (before, after) in zip(runs, contexts, strict=True)
            ):
                continue
            names: list[tuple[str, ...]] = [(code_page,)] * len(runs)
            done = [
                not _C1.search(r) and _plausible(r, *context)
                for r, context in zip(repaired, contexts, strict=True)
            ]
            deep = [i for i, r in enumerate(repaired) if len(r) > 1 and _MOJI_SET.issuperset(r)]
            if depth > 1 and deep and all(done[i] for i in range(len(runs)) if i not in deep):
                # Peel on the runs that may still be mojibake (a line may hold mojibake
                # made once and twice).
                deeper = _peel(
                    [repaired[i] for i in deep],
                    [contexts[i] for i in deep],
                    depth - 1,
                    shown=not all(done[i] for i in deep),
                )
                if deeper is not None:
                    for k, i in enumerate(deep):
                        repaired[i] = deeper[0][k]
                        names[i] += deeper[1][k]
                    return repaired, names
            if all(done):
                return repaired, names
    return None


def _decide(stretch: str, before: str, after: str) -> Repairs:
    """The repairs of one stretch: (start, end, replacement, code pages undone)."""
    if _LONE.search(stretch):
        return []
    spans = [m.span() for m in _MOJI_RUN.finditer(stretch)]
    contexts = [
        (stretch[a - 1] if a else before, stretch[b] if b < len(stretch) else after)
        for a, b in spans
    ]
    found = _peel([stretch[a:b] for a, b in spans], contexts, _LAYERS)
    if found is None:
        return []
    if len(spans) == 1 and len(found[0][0]) == 1 and _script(found[0][0][0]) in _ALPHABETS:
        # One letter of an alphabet other than Latin, alone on its line: too little to go
        # on (a CJK character is a word).
        return []
    return [(a, b, found[0][i], found[1][i]) for i, (a, b) in enumerate(spans)]


class MojibakeRepairer:
    """Repairs UTF-8 mojibake in text given in pieces (see the module's docstring).

    Carries at most ``max_carry`` code points: the stretch it has not decided yet.
    ``on_change`` gets one ``TextChange`` of kind ``"mojibake"`` per run repaired, its
    ``detail`` the code pages undone, the outer one first.
    """

    def __init__(
        self, *, max_carry: int = DEFAULT_MAX_CARRY, on_change: OnChange | None = None
    ) -> None:
        if max_carry < 4:
            raise ValueError("max_carry must be at least 4 (one UTF-8 sequence read as bytes)")
        self._max_carry = max_carry
        self.on_change = on_change
        self.position = 0
        self.output_position = 0
        self._carry = ""
        self._before = ""

    @property
    def max_carry(self) -> int:
        return self._max_carry

    def transform(self, text: str, final: bool = False) -> str:
        start = self.position - len(self._carry)
        buf = self._carry + text
        self.position += len(text)
        out: list[str] = []
        at = 0
        limit = self._max_carry
        find_moji = implementation().find_moji
        pair: int | None = -1
        while True:
            # A line without a run that could be undone (valid UTF-8 through one of the
            # code pages) holds nothing to repair: every stretch in it is left as it is.
            # It goes out as it is, without being cut into stretches; so does the rest of
            # the text when it is final and holds no such run.
            if pair is not None and pair < at:
                pair = find_moji(buf, _INDEX, _PAGES, len(_ENCODERS), at, limit)
                pair = None if pair < 0 else pair
            if pair is None and final:
                skip = len(buf)
            else:
                skip = len(buf) if pair is None else pair
                skip = max(buf.rfind("\n", at, skip), buf.rfind("\r", at, skip)) + 1
            if skip > at:
                out.append(buf[at:skip])
                at = skip
            found = _MOJI_CHAR.search(buf, at)
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
                e = self._cut(buf, s)
            elif final:
                e = len(buf)
            else:
                at = s
                break
            before = buf[s - 1] if s else self._before
            after = buf[e] if e < len(buf) else ""
            out.append(self._repair(buf[s:e], before, after, start + s, out))
            at = e
        self._carry = buf[at:]
        if final:
            self._before = ""
        elif at:
            self._before = buf[at - 1]
        result = "".join(out)
        self.output_position += len(result)
        return result

    def _cut(self, buf: str, s: int) -> int:
        """Where a stretch from ``s`` longer than the bound ends: after its last whole run
        within the bound, or at the bound."""
        limit = s + self._max_carry
        e = limit
        while e > s and (buf[e - 1] not in _MOJI_SET or buf[e] in _MOJI_SET):
            e -= 1
        return e if e > s else limit

    def _repair(self, stretch: str, before: str, after: str, offset: int, out: list[str]) -> str:
        repairs = _decide(stretch, before, after)
        if not repairs:
            return stretch
        pieces = []
        at = 0
        written = self.output_position + sum(map(len, out)) if self.on_change else 0
        for a, b, replacement, undone in repairs:
            pieces.append(stretch[at:a])
            if self.on_change is not None:
                written += a - at
                self.on_change(
                    TextChange(offset + a, stretch[a:b], replacement, written, "mojibake", undone)
                )
                written += len(replacement)
            pieces.append(replacement)
            at = b
        pieces.append(stretch[at:])
        return "".join(pieces)

    def checkpoint(self) -> TransformCheckpoint:
        return TransformCheckpoint(
            "mojibake",
            self.position,
            self.output_position,
            self._carry,
            {"max_carry": self._max_carry},
            {"before": self._before},
        )

    def reset(self) -> None:
        self.position = self.output_position = 0
        self._carry = self._before = ""

    @classmethod
    def from_checkpoint(
        cls, checkpoint: TransformCheckpoint, on_change: OnChange | None = None
    ) -> MojibakeRepairer:
        if checkpoint.kind != "mojibake":
            raise ValueError(f"not a mojibake repairer's checkpoint: {checkpoint.kind!r}")
        options: dict[str, Any] = dict(checkpoint.options)
        built = cls(
            max_carry=int(options.get("max_carry", DEFAULT_MAX_CARRY)), on_change=on_change
        )
        before = checkpoint.state.get("before", "")
        if (
            not isinstance(before, str)
            or len(before) > 1
            or len(checkpoint.carry) > built.max_carry
        ):
            raise ValueError("not a mojibake repairer's checkpoint: bad carry")
        built.position = checkpoint.position
        built.output_position = checkpoint.output_position
        built._carry = checkpoint.carry
        built._before = before
        return built


register_transform("mojibake", MojibakeRepairer.from_checkpoint)


def repair_mojibake(text: str, *, max_carry: int = DEFAULT_MAX_CARRY) -> str:
    """``text`` with its UTF-8 mojibake repaired, as ``MojibakeRepairer`` repairs it."""
    return MojibakeRepairer(max_carry=max_carry).transform(text, final=True)
