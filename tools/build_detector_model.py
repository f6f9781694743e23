"""Build ``src/utf8stream/core/_detector_model.json``: the character statistics of the
encoding detector.

For each language, the relative frequency of the letters of its script, counted over the
language's most common words weighted by how often each word is used.  The words and their
frequencies come from the ``wordfreq`` package (code Apache-2.0; word-frequency data
CC-BY-SA 4.0, built from Wikipedia, subtitles, news, books, web text, Twitter and Reddit,
see https://github.com/rspeer/wordfreq).  ``wordfreq`` is needed here only (the ``model``
extra), never at run time: the generated file, shipped in the package, holds the figures.

Usage: ``python tools/build_detector_model.py`` (rewrites the file in place).
"""

from __future__ import annotations

import codecs
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

import wordfreq

#: language -> the legacy encodings it is written in (UTF-8/16/32 score every language).
LANGUAGES: dict[str, tuple[str, ...]] = {
    "en": ("cp1252", "latin-1", "mac_roman"),
    "fr": ("cp1252", "latin-1", "mac_roman"),
    "de": ("cp1252", "latin-1", "mac_roman"),
    "es": ("cp1252", "latin-1", "mac_roman"),
    "it": ("cp1252", "latin-1", "mac_roman"),
    "pt": ("cp1252", "latin-1", "mac_roman"),
    "nl": ("cp1252", "latin-1", "mac_roman"),
    "sv": ("cp1252", "latin-1", "mac_roman"),
    "da": ("cp1252", "latin-1", "mac_roman"),
    "nb": ("cp1252", "latin-1", "mac_roman"),
    "fi": ("cp1252", "latin-1", "mac_roman", "cp1257"),
    "ca": ("cp1252", "latin-1", "mac_roman"),
    "is": ("cp1252", "latin-1", "mac_roman"),
    "pl": ("cp1250", "iso-8859-2"),
    "cs": ("cp1250", "iso-8859-2"),
    "sk": ("cp1250", "iso-8859-2"),
    "hu": ("cp1250", "iso-8859-2"),
    "ro": ("cp1250", "iso-8859-2"),
    "sl": ("cp1250", "iso-8859-2"),
    "sh": ("cp1250", "iso-8859-2"),
    "ru": ("cp1251", "koi8-r", "iso-8859-5"),
    "uk": ("cp1251", "iso-8859-5"),
    "bg": ("cp1251", "iso-8859-5"),
    "mk": ("cp1251", "iso-8859-5"),
    "el": ("cp1253", "iso-8859-7"),
    "tr": ("cp1254",),
    "he": ("cp1255",),
    "ar": ("cp1256",),
    "fa": ("cp1256",),
    "ur": ("cp1256",),
    "lt": ("cp1257",),
    "lv": ("cp1257",),
    "vi": ("cp1258",),
    "ja": ("shift_jis", "cp932", "euc_jp", "iso2022_jp"),
    "zh": ("gbk", "gb18030"),
    "zh-hant": ("big5", "cp950"),
    "ko": ("euc_kr", "cp949"),
}
#: Characters kept per language: enough for an alphabet with its accents, and for the
#: common ideographs of Chinese and Japanese and the syllables of Korean.
KEEP_ALPHABETIC, KEEP_IDEOGRAPHIC = 120, 3000
#: Traditional Chinese keeps every character of Big5's first level: its weights are
#: guessed from simplified text, so its common characters do not all rank in the top.
KEEP_TRADITIONAL = 6000
WORDS = 30000
#: Probabilities are stored as rounded tenths of a natural-log unit.
SCALE = 10


def letter_frequencies(language: str) -> Counter[str]:
    """How often each letter beyond ASCII occurs in running text of ``language``, among
    those letters: ASCII letters are alike in every candidate encoding, and their share of
    a text says more about the text (markup, logs, code) than about its language."""
    source = "zh" if language == "zh-hant" else language
    counts: Counter[str] = Counter()
    table = wordfreq.get_frequency_dict(source)
    for word in sorted(table, key=table.__getitem__, reverse=True)[:WORDS]:
        weight = table[word]
        if language == "el" and word.endswith("σ"):
            word = word[:-1] + "ς"  # the lists are case-folded: a final sigma became σ
        for char in word.lower():
            if char.isalpha() and not char.isascii():
                counts[char] += weight
    if language == "de":
        # Case folding also wrote ß as "ss": about one German letter beyond ASCII in six.
        counts["ß"] = 0.18 * sum(counts.values())
    return counts


def single_runs(language: str) -> float:
    """How often a run of letters beyond ASCII (within a word) is one letter long: nearly
    always for the accents of Latin alphabets, seldom in other scripts."""
    source = "zh" if language == "zh-hant" else language
    table = wordfreq.get_frequency_dict(source)
    single = total = 0.0
    for word in sorted(table, key=table.__getitem__, reverse=True)[:WORDS]:
        for run in re.findall(r"[^\x00-\x7f]+", word):
            total += table[word]
            single += table[word] if len(run) == 1 else 0.0
    return min(0.99, max(0.01, single / total if total else 0.5))


def mixing(language: str) -> float:
    """How often a letter beyond ASCII stands next to an ASCII letter in a word: nearly
    always in the Latin alphabets with accents, almost never in other scripts."""
    source = "zh" if language == "zh-hant" else language
    table = wordfreq.get_frequency_dict(source)
    mixed = total = 0.0
    for word in sorted(table, key=table.__getitem__, reverse=True)[:WORDS]:
        weight = table[word]
        for i, char in enumerate(word):
            if char.isalpha() and not char.isascii():
                total += weight
                around = word[max(0, i - 1) : i] + word[i + 1 : i + 2]
                if any(c.isascii() and c.isalpha() for c in around):
                    mixed += weight
    return min(0.99, max(0.002, mixed / total if total else 0.0))


def traditional(counts: Counter[str]) -> Counter[str]:
    """Chinese as Big5 writes it.  The word lists are in simplified characters; the
    characters Big5 also has keep their weight, and every character of Big5's first level
    (its 5,401 characters in common use) gets the weight of a rare common character."""
    kept = Counter({c: w for c, w in counts.items() if _encodable(c, "big5")})
    floor = sorted(kept.values(), reverse=True)[min(len(kept) - 1, 2500)]
    for lead in range(0xA4, 0xC7):
        for trail in [*range(0x40, 0x7F), *range(0xA1, 0xFF)]:
            try:
                char = bytes((lead, trail)).decode("big5")
            except UnicodeDecodeError:
                continue
            kept.setdefault(char, floor)
    return kept


def _encodable(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def build() -> dict[str, object]:
    letters: dict[str, str] = {}
    costs: dict[str, str] = {}
    zh = letter_frequencies("zh")
    for language in LANGUAGES:
        counts = traditional(zh) if language == "zh-hant" else letter_frequencies(language)
        ideographic = language in ("zh", "zh-hant", "ja", "ko")
        keep = KEEP_IDEOGRAPHIC if ideographic else KEEP_ALPHABETIC
        top = counts.most_common(KEEP_TRADITIONAL if language == "zh-hant" else keep)
        total = sum(counts.values())
        letters[language] = "".join(c for c, _ in top)
        # One byte per letter: -ln(p) in tenths, capped at 255.
        costs[language] = bytes(
            min(255, round(-math.log(w / total) * SCALE)) for _, w in top
        ).hex()
    return {
        "about": ABOUT,
        "scale": SCALE,
        "letters": letters,
        "costs": costs,
        "mixing": {language: round(mixing(language), 4) for language in LANGUAGES},
        "single_runs": {language: round(single_runs(language), 4) for language in LANGUAGES},
        "encodings": {
            language: [codecs.lookup(n).name for n in names]
            for language, names in LANGUAGES.items()
        },
    }


ABOUT = (
    "The encoding detector's statistics, generated by tools/build_detector_model.py (do not "
    "edit).  Per language: the most common letters of running text (letters) and the natural "
    "log of their relative frequency, in tenths, negated, one byte each in hexadecimal "
    "(costs), both over the letters beyond ASCII only; how often such a letter stands next "
    "to an ASCII letter (mixing); how often a run of them is one letter long (single_runs); the "
    "legacy encodings the language is written in (encodings).  Derived from the word "
    "frequencies of the wordfreq package (https://github.com/rspeer/wordfreq), whose data is "
    "licensed CC-BY-SA 4.0 (sources: Wikipedia, OpenSubtitles, news, Google Books, web text, "
    "Twitter, Reddit); these derived figures are shared under the same licence."
)


def main() -> None:
    target = Path(__file__).parent.parent / "src/utf8stream/core/_detector_model.json"
    text = json.dumps(build(), ensure_ascii=False, indent=0, sort_keys=False) + "\n"
    target.write_text(text, encoding="utf-8")
    sys.stdout.write(f"{target}: {len(text.encode())} bytes\n")


if __name__ == "__main__":
    main()
