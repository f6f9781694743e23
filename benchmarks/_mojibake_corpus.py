"""The corpus of mojibake repair (benchmarks/bench_mojibake.py), made here in memory.

Nothing of it is committed: it is made again, line for line the same, from what this
machine has (the same Python, the same Debian packages and the same ``wordfreq`` give the
same lines).

**Correct text** (``correct``), one line each:

* ``catalogue``: the translated messages of the Debian translation catalogues that
  ``_detect_corpus.py`` reads (``/usr/share/locale``, every language there; each message
  under its package's licence, see ``_detect_corpus.COPYRIGHT``), cut at their line ends.
* ``wordfreq``: sentences of five to fourteen words drawn by frequency from the
  ``wordfreq`` package's lists (the 3,000 commonest words of each language it has),
  capitalised, with a full stop.
* ``look-alike``: correct text made to look like mojibake: words of those lists in
  capitals before an ellipsis, a registered sign or an inverted question mark, accented
  capitals next to ``£``, ``×``, ``°``, ``±``, ``µ``, curly quotes and guillemets glued to
  accented words, no-break spaces between accented words, faces drawn with ``¬`` and
  ``ô``, math (``√π``, ``∆x ≤ 2``), Cyrillic and Greek capitals before punctuation, box
  drawing, Latin-1 symbols in a row.

**Mojibake** (``mojibake``): every correct ``catalogue`` and ``wordfreq`` line that holds
a non-ASCII character, encoded in UTF-8 and decoded through one code page (in turn over
``CODE_PAGES``) and, for every third line, through two (in turn over ``TWICE``); a code
page that cannot decode the bytes (cp1252 leaves five bytes undefined) is passed over for
the next.  The text the line was made from is kept (``truth``).

**Split**: ``held-out`` is every line of the catalogue domains ``_detect_corpus.HELD_OUT``,
every line of the languages ``HELD_OUT_LANGUAGES`` (whatever their source) and every
look-alike line made from them; ``dev`` is the rest.  Whoever tunes the repairer looks at
the ``dev`` figures only.
"""

from __future__ import annotations

import importlib
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _detect_corpus

CODE_PAGES = (
    "cp1252",
    "latin-1",
    "cp1250",
    "cp1251",
    "mac_roman",
    "cp1253",
    "cp1254",
    "cp1257",
    "iso8859-2",
)
TWICE = (
    ("cp1252", "cp1252"),
    ("latin-1", "cp1252"),
    ("cp1251", "cp1252"),
    ("cp1252", "cp1251"),
    ("cp1250", "cp1252"),
    ("mac_roman", "mac_roman"),
    ("cp1252", "latin-1"),
)
HELD_OUT_LANGUAGES = frozenset(
    {"cs", "is", "lt", "lv", "mk", "pt_BR", "pt", "ro", "sk", "bg", "ka", "vi", "fa"}
)
SPLITS = ("dev", "held-out")
WORDFREQ_WORDS = 3000


@dataclass(frozen=True, slots=True)
class Line:
    text: str  # what the repairer is given
    truth: str  # the correct text it was made from (itself for correct text)
    kind: str  # "correct" or "mojibake"
    source: str  # "catalogue", "wordfreq", "look-alike"
    language: str
    split: str
    layers: tuple[str, ...] = ()  # the code pages the mojibake went through


def _language_split(language: str, split: str) -> str:
    return "held-out" if language.split("@")[0] in HELD_OUT_LANGUAGES else split


def catalogue_lines() -> Iterator[tuple[str, str, str]]:
    """(text, language, split) of every line of every translated message."""
    pools = _detect_corpus.catalogues(_detect_corpus.LOCALE_DIR)
    for (language, split), pairs in sorted(pools.items()):
        seen: set[str] = set()
        for _english, translated in pairs:
            for line in translated.splitlines():
                line = line.strip()
                if len(line) >= 3 and line not in seen:
                    seen.add(line)
                    yield line, language, _language_split(language, split)


def _word_lists() -> dict[str, list[str]]:
    wordfreq: Any = importlib.import_module("wordfreq")  # the bench extra

    lists = {}
    for language in sorted(wordfreq.available_languages()):
        if language == "en":
            continue
        words = [w for w in wordfreq.top_n_list(language, WORDFREQ_WORDS) if w.isalpha()]
        if words:
            lists[language] = words
    return lists


def wordfreq_lines(
    lists: dict[str, list[str]], per_language: int
) -> Iterator[tuple[str, str, str]]:
    rnd = random.Random(20261129)
    for language, words in lists.items():
        split = _language_split(language, "dev")
        weights = [1 / (rank + 10) for rank in range(len(words))]
        for _ in range(per_language):
            chosen = rnd.choices(words, weights, k=rnd.randint(5, 14))
            sentence = " ".join(chosen)
            yield sentence[:1].upper() + sentence[1:] + ".", language, split


_AFTER_CAPS = ("…", "®", "™", "¿", "!", "’s", "»", "”", "\u00a0!", "©", "°", "·")
_SYMBOLS = "£×°±µ¼½¾¹²³§¶©®¬¦¤¥¢"
_FACES = ("¬_¬", "ô_ô", "(¬‿¬)", "ò_ó", "Ô_Ô", "ಠ_ಠ", "¯\\_(ツ)_/¯", "( o¬ô )", "`¬´")
_MATH = ("√π", "∆x ≤ 2", "x ≥ √2", "∑ i ≠ ∞", "∂f/∂x", "2012—∞", "∆°", "π ≈ 3,14", "µ ± σ")
_BOX = ("├┤", "┼┐", "└─┘", "╔═╗", "▓▒░", "│ ├── │")
_QUOTES = (("“", "”"), ("«", "»"), ("„", "“"), ("‘", "’"), ("«\u00a0", "\u00a0»"), ("‹", "›"))


def _look_alike(rnd: random.Random, words: list[str]) -> str:
    """One correct line made to look like mojibake."""
    picks = rnd.choices(words, k=rnd.randint(3, 9))
    out = []
    for word in picks:
        roll = rnd.random()
        if roll < 0.2:
            word = word.upper() + rnd.choice(_AFTER_CAPS)
        elif roll < 0.3:
            word = word.upper()
        elif roll < 0.45:
            left, right = rnd.choice(_QUOTES)
            word = left + word + right
        elif roll < 0.55:
            word += rnd.choice(_SYMBOLS)
        elif roll < 0.62:
            word = f"{rnd.randint(1, 99)}{rnd.choice('×°±µ£€')}{word}"
        elif roll < 0.68:
            word = rnd.choice(_FACES + _MATH + _BOX)
        elif roll < 0.72:
            word = "".join(rnd.choices(_SYMBOLS, k=rnd.randint(2, 3)))
        out.append(word)
    sep = "\u00a0" if rnd.random() < 0.2 else " "
    return sep.join(out)


def look_alike_lines(
    lists: dict[str, list[str]], per_language: int
) -> Iterator[tuple[str, str, str]]:
    rnd = random.Random(34)
    for language, words in lists.items():
        split = _language_split(language, "dev")
        for _ in range(per_language):
            yield _look_alike(rnd, words), language, split


def bake(text: str, layers: tuple[str, ...]) -> str | None:
    """``text`` through UTF-8 and each code page of ``layers``; None if one fails."""
    for code_page in layers:
        try:
            text = text.encode("utf-8").decode(code_page)
        except UnicodeDecodeError:
            return None
    return text


def _mojibake(text: str, index: int) -> Iterator[tuple[str, tuple[str, ...]]]:
    for turn in range(len(CODE_PAGES)):
        layers: tuple[str, ...] = (CODE_PAGES[(index + turn) % len(CODE_PAGES)],)
        baked = bake(text, layers)
        if baked is not None:
            yield baked, layers
            break
    if index % 3 == 0:
        for turn in range(len(TWICE)):
            layers = TWICE[(index // 3 + turn) % len(TWICE)]
            baked = bake(text, layers)
            if baked is not None:
                yield baked, layers
                break


def lines(wordfreq_per_language: int = 400, look_alikes_per_language: int = 700) -> list[Line]:
    """The whole corpus, in a fixed order."""
    lists = _word_lists()
    out: list[Line] = []
    index = 0
    sources = (
        ("catalogue", catalogue_lines()),
        ("wordfreq", wordfreq_lines(lists, wordfreq_per_language)),
    )
    for source, found in sources:
        for text, language, split in found:
            out.append(Line(text, text, "correct", source, language, split))
            if text.isascii():
                continue
            for baked, layers in _mojibake(text, index):
                out.append(Line(baked, text, "mojibake", source, language, split, layers))
            index += 1
    for text, language, split in look_alike_lines(lists, look_alikes_per_language):
        out.append(Line(text, text, "correct", "look-alike", language, split))
    return out


if __name__ == "__main__":
    from collections import Counter

    made = lines()
    counts = Counter((line.split, line.kind, line.source) for line in made)
    for key, count in sorted(counts.items()):
        print(*key, count, sep="\t")
