"""iconv's ``//TRANSLIT``: what to write for a character the target encoding lacks.

As glibc does for the common cases (its C.UTF-8 locale's tables, on which this table's
entries are modelled): a table for letters with no decomposition (ß → ss, æ → ae,
ł → l), punctuation (— → --, “ → "), currency (€ → EUR) and symbols (™ → (TM)); else
the character's compatibility decomposition (NFKD) with its combining marks dropped
(é → e, ﬁ → fi, ℃ → °C), each character of it through the table again (ǣ → æ → ae),
circled forms in parentheses (① → (1)) and fractions set apart (½ → " 1/2 ").  A
character that decomposes to a space and marks only (a spacing accent such as ¨) has no
approximation.  The caller tries the candidates in order and writes the first its
target can encode, so a target keeps the characters it has (ǣ → æ in Latin-1).
"""

from __future__ import annotations

import unicodedata

__all__ = ["candidates"]

# fmt: off
_TABLE = {
    # letters without a decomposition, and ligatures
    "µ": "u", "Æ": "AE", "Ð": "D", "Ø": "O", "Þ": "TH", "ß": "ss", "æ": "ae", "ð": "d",
    "ø": "o", "þ": "th", "Đ": "D", "đ": "d", "Ħ": "H", "ħ": "h", "ı": "i", "ĸ": "q", "Ŀ": "L",
    "ŀ": "l", "Ł": "L", "ł": "l", "Ŋ": "N", "ŋ": "n", "Œ": "OE", "œ": "oe", "Ŧ": "T", "ŧ": "t",
    "ƀ": "b", "Ɓ": "B", "Ƃ": "B", "ƃ": "b", "Ƈ": "C", "ƈ": "c", "Ɖ": "D", "Ɗ": "D", "Ƌ": "D",
    "ƌ": "d", "Ɛ": "E", "Ƒ": "F", "ƒ": "f", "Ɠ": "G", "ƕ": "hv", "Ɩ": "I", "Ɨ": "I", "Ƙ": "K",
    "ƙ": "k", "ƚ": "l", "Ɲ": "N", "ƞ": "n", "Ƣ": "OI", "ƣ": "oi", "Ƥ": "P", "ƥ": "p", "ƫ": "t",
    "Ƭ": "T", "ƭ": "t", "Ʈ": "T", "Ʋ": "V", "Ƴ": "Y", "ƴ": "y", "Ƶ": "Z", "ƶ": "z", "Ǥ": "G",
    "ǥ": "g", "ȡ": "d", "Ȥ": "Z", "ȥ": "z", "ȴ": "l", "ȵ": "n", "ȶ": "t", "ȷ": "j", "ȸ": "db",
    "ȹ": "qp", "Ⱥ": "A", "Ȼ": "C", "ȼ": "c", "Ƚ": "L", "Ⱦ": "T", "ȿ": "s", "ɀ": "z", "Ƀ": "B",
    "Ʉ": "U", "Ɇ": "E", "ɇ": "e", "Ɉ": "J", "ɉ": "j", "Ɍ": "R", "ɍ": "r", "Ɏ": "Y", "ɏ": "y",
    "ʼ": "'", "ˆ": "^", "ˈ": "'", "ˋ": "`", "ˍ": "_", "ː": ":", "ẚ": "a", "ẜ": "s", "ẝ": "s",
    "ẞ": "SS", "Ỻ": "LL", "ỻ": "ll", "Ỽ": "V", "ỽ": "v", "Ỿ": "Y", "ỿ": "y",
    # punctuation
    "¡": "!", "«": "<<", "·": ".", "»": ">>", "‐": "-", "‒": "-", "–": "-", "—": "--",
    "―": "-", "‘": "'", "’": "'", "‚": ",", "‛": "'", "“": '"', "”": '"', "„": ",,", "‟": '"',
    "†": "+", "•": "o", "‵": "`", "‹": "<", "›": ">", "⁊": "&",
    # currency: ISO 4217 codes where glibc has them
    "¢": "c", "£": "GBP", "¥": "JPY", "₠": "CE", "₡": "C=", "₢": "Cr", "₣": "Fr.", "₤": "L.",
    "₧": "Pts", "₩": "KRW", "₪": "ILS", "₫": "Dong", "€": "EUR", "₯": "GRD", "₱": "PHP",
    "₴": "UAH", "₸": "KZT", "₹": "INR", "₺": "TL", "₽": "RUB", "₾": "GEL",
    # symbols, arrows, relations (a struck-through one: ! before it)
    "¦": "|", "©": "(C)", "¬": "!", "®": "(R)", "±": "+-", "´": "'", "¸": ",", "×": "x",
    "÷": "/", "˜": "~", "˝": "''", "⁄": "/", "℞": "Rx", "™": "(TM)", "℮": "e", "←": "<-",
    "→": "->", "↔": "<->", "↮": "!<->", "⇍": "!<=", "⇎": "!<=>", "⇏": "!=>", "⇐": "<=",
    "⇒": "=>", "⇔": "<=>", "−": "-", "∕": "/", "∖": "\\", "∗": "*", "∣": "|", "∥": "||",
    "∶": ":", "∼": "~", "≁": "!~", "≄": "!~-", "≇": "!~=", "≉": "!~~", "≠": "!=", "≢": "!==",
    "≤": "<=", "≥": ">=", "≪": "<<", "≫": ">>", "≮": "!<", "≯": "!>", "≰": "!<=", "≱": "!>=",
    "≴": "!<~", "≵": "!>~", "≸": "!<>", "≹": "!><", "⋘": "<<<", "⋙": ">>>", "─": "-", "│": "|",
    "┌": "+", "┐": "+", "└": "+", "┘": "+", "├": "+", "┤": "+", "┬": "+", "┴": "+", "┼": "+",
    "╱": "/", "╲": "\\",
}
# fmt: on


def candidates(char: str) -> list[str]:
    """What may stand for ``char``, best first (empty: nothing does; ``""``: dropped,
    as a lone combining mark is)."""
    found = [_TABLE[char]] if char in _TABLE else []
    decomposed = unicodedata.normalize("NFKD", char)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    if plain == char or "\u0338" in decomposed:
        return found  # no decomposition; or a struck-through sign, whose stroke is its sense
    if not plain:
        return [*found, ""]
    if not plain.strip() and not char.isspace():
        return found  # a spacing accent: a space and a mark
    mapped = "".join(_TABLE.get(c, c) for c in plain)
    tag = unicodedata.decomposition(char).partition(" ")[0]
    for form in dict.fromkeys((plain, mapped)):
        if tag == "<circle>":
            form = f"({form})"
        elif tag == "<fraction>":
            form = " " + form.replace("\u2044", "/") + " "
        found.append(form)
    return found
