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
import unicodedata
from collections.abc import Callable
from typing import Any

from ._accel import implementation
from .transform import OnChange, TextChange, TransformCheckpoint, register_transform

__all__ = ["CODE_PAGES", "DEFAULT_MAX_CARRY", "MojibakeRepairer", "repair_mojibake"]

#: The code pages undone, in the order they are tried.
CODE_PAGES = ("cp1252", "cp1251", "cp1250", "cp1253", "cp1254", "cp1257", "iso8859-2", "mac_roman")
#: Long enough for a line of mojibake of about a hundred Cyrillic or Greek letters to be
#: decided as one stretch; short enough that holding it costs nothing.
DEFAULT_MAX_CARRY = 256
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


# Characters that next to a letter are all but always mojibake: C1 controls, and symbols
# that text has little use for (broken bar, currency sign, diaeresis, macron, cedilla,
# florin, the spacing accents of cp1250, daggers, per mille, lozenge, low quotes).
_RARE = "".join(map(chr, range(0x80, 0xA0))) + "¦¤¨¯¸ƒˆˇ˘˙˛˝˜†‡‰◊‚„"


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


# What the accelerator's pass and its twin (``_mojibake_native``) are given.  A character
# of the code pages is known by its row of ``_PAGES``; each row gets 16 bits of flags, in
# native order (the bits are ``_mojibake_native``'s ``RARE`` to ``UPPER``).
_ROW_FLAGS = (
    (1, _RARE),
    (2, _TELLS),
    (4, "ÃÂ√≈"),  # tells that before a Latin letter are mojibake too (√ß for ç)
    (8, "ÃÂ"),  # tells that before a no-break space are mojibake too
    (16, _SYMBOLIC_LETTERS),
)


def _row_flags() -> bytes:
    flags = array.array("H", [0])
    for char in _MOJI:
        category = unicodedata.category(char)
        bits = sum(bit for bit, chars in _ROW_FLAGS if char in chars)
        bits |= (32 if category == "Zs" else 0) | (64 if category[0] == "P" else 0)
        bits |= (128 if char.isalpha() else 0) | (256 if char.islower() else 0)
        flags.append(bits | (512 if char.isupper() else 0))
    return flags.tobytes()


# The script groups, numbered from 1 in a character's class (its low seven bits; the bit
# 0x80 marks a combining mark), and per group a byte of flags (``_mojibake_native``'s
# ``NO`` to ``NOT_IN_LATIN``).
_GROUPS = (_NO, None, "Latin", "CJK", *sorted(_ALPHABETS))
_GROUP_NUMBERS = {group: number for number, group in enumerate(_GROUPS, 1)}


def _group_flags(group: str | None) -> int:
    if group == _NO:
        return 1
    if group is None:
        return 2
    if group == "Latin":
        return 4
    return (8 if group in _ALPHABETS else 0) | (16 if group in _NOT_IN_LATIN_WORDS else 0)


def _char_class(code: int) -> int:
    """The class of a character: its script group's number, and 0x80 for a combining
    mark (what the repair rules need of ``unicodedata``)."""
    char = chr(code)
    return _GROUP_NUMBERS[_script(char)] | (0x80 if unicodedata.combining(char) else 0)


_RULES = (
    _INDEX,
    _PAGES,
    len(_ENCODERS),
    _row_flags(),
    bytes([0, *map(_group_flags, _GROUPS)]).ljust(128, b"\0"),
    _char_class,
    tuple(name for name, _ in _ENCODERS),
)
# The classes of the characters met so far (0: not yet asked), filled as repairs give them.
_CLASSES = bytearray(0x110000)
_STATE = (_RULES, _CLASSES)


Repairs = list[tuple[int, int, str, tuple[str, ...]]]
#: ``moji_repair``: (buf, before, final, max_carry, events, rules, classes) -> (output,
#: end of what is decided, the repairs if events).
_Pass = Callable[..., tuple[str, int, Repairs | None]]


def _checked(max_carry: int) -> int:
    if max_carry < 4:
        raise ValueError("max_carry must be at least 4 (one UTF-8 sequence read as bytes)")
    return max_carry


class MojibakeRepairer:
    """Repairs UTF-8 mojibake in text given in pieces (see the module's docstring).

    Carries at most ``max_carry`` code points: the stretch it has not decided yet.
    ``on_change`` gets one ``TextChange`` of kind ``"mojibake"`` per run repaired, its
    ``detail`` the code pages undone, the outer one first.
    """

    def __init__(
        self, *, max_carry: int = DEFAULT_MAX_CARRY, on_change: OnChange | None = None
    ) -> None:
        self._max_carry = _checked(max_carry)
        # The implementation chosen when the repairer is made (``use_accelerator``).
        self._repair: _Pass = implementation().moji_repair
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
        out, at, repairs = self._repair(
            buf, self._before, final, self._max_carry, self.on_change is not None, *_STATE
        )
        self._carry = buf[at:]
        if final:
            self._before = ""
        elif at:
            self._before = buf[at - 1]
        if repairs:
            self._report(repairs, buf, start)
        self.output_position += len(out)
        return out

    def _report(self, repairs: Repairs, buf: str, start: int) -> None:
        """One event per run repaired, ``start`` the offset of ``buf`` in the input."""
        written = self.output_position
        at = 0
        for a, b, replacement, undone in repairs:
            written += a - at
            if self.on_change is not None:
                self.on_change(
                    TextChange(start + a, buf[a:b], replacement, written, "mojibake", undone)
                )
            written += len(replacement)
            at = b

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
    repair: _Pass = implementation().moji_repair
    return repair(text, "", True, _checked(max_carry), False, *_STATE)[0]
