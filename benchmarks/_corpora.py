"""Deterministic benchmark corpora (DESIGN.md section 8), built in memory.

Seven kinds: ASCII log lines, mixed European text (from the shared seeds, which are read
in place and never copied into the project), CJK, the project's emoji corpus (emoji among
ASCII words), dense emoji (nearly every character a four-byte sequence), a mixed web page
(HTML markup around text in several scripts), and a corrupted copy of the mixed text with
one random byte in every 1000 replaced.
"""

from __future__ import annotations

import random
from pathlib import Path

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "seeds"
DEFAULT_SIZE = 16 * 1024 * 1024
NAMES = ("ascii-log", "mixed", "cjk", "emoji", "dense-emoji", "web", "corrupted")


def _repeat_to(unit: bytes, size: int) -> bytes:
    data = unit * (size // len(unit) + 1)
    cut = size
    # End on a character boundary so the corpus itself is valid.
    while cut < len(data) and 0x80 <= data[cut] <= 0xBF:
        cut += 1
    return data[:cut]


def ascii_log(size: int, rnd: random.Random) -> bytes:
    levels = ["INFO", "DEBUG", "WARN", "ERROR"]
    words = [
        "request",
        "served",
        "user",
        "cache",
        "miss",
        "hit",
        "upstream",
        "timeout",
        "retry",
        "connection",
        "pool",
    ]
    lines = []
    for i in range(4000):
        msg = " ".join(rnd.choice(words) for _ in range(rnd.randrange(3, 12)))
        lines.append(
            f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}Z "
            f"{rnd.choice(levels):5s} worker-{rnd.randrange(16)} id={rnd.getrandbits(32):08x} "
            f"{msg}\n"
        )
    return _repeat_to("".join(lines).encode(), size)


def mixed(size: int, rnd: random.Random) -> bytes:
    seeds = sorted(SEEDS.glob("*.txt"))
    if not seeds:
        # A small stand-in sample would make every "mixed" figure (and "corrupted", made
        # from it) measure different text under the same name.
        raise SystemExit(
            f"benchmarks: the mixed corpus needs the shared seed texts in {SEEDS}"
            " (a checkout without ../shared/corpus cannot run the benchmarks)"
        )
    return _repeat_to(b"".join(p.read_bytes() for p in seeds), size)


def cjk(size: int, rnd: random.Random) -> bytes:
    kana = [chr(c) for c in range(0x3041, 0x3097)]
    han = [chr(rnd.randrange(0x4E00, 0x9FA0)) for _ in range(3000)]
    hangul = [chr(rnd.randrange(0xAC00, 0xD7A4)) for _ in range(500)]
    out = []
    for _ in range(20000):
        pool = rnd.choice([kana, han, han, hangul])
        out.append("".join(rnd.choice(pool) for _ in range(rnd.randrange(4, 30))))
        out.append(rnd.choice(["。", "、", "，", " ", "\n"]))
    return _repeat_to("".join(out).encode(), size)


def emoji(size: int, rnd: random.Random) -> bytes:
    faces = [chr(c) for c in range(0x1F600, 0x1F650)] + [chr(c) for c in range(0x1F300, 0x1F3F0)]
    words = ["ok", "ship", "it", "lol", "nice", "wow", "yes", "no", "brb"]
    out = []
    for _ in range(40000):
        out.append(rnd.choice(faces) * rnd.randrange(1, 4))
        out.append(" " + rnd.choice(words) + rnd.choice([" ", " ", "\n"]))
    return _repeat_to("".join(out).encode(), size)


def dense_emoji(size: int, rnd: random.Random) -> bytes:
    """Every code point of U+1F300..U+1FAFF in random order, some with a skin tone, some
    joined by ZWJ into sequences; a space or newline now and then.  Four-byte sequences
    are nearly all of the bytes, with no repetition for a branch predictor to learn."""
    pictographs = list(range(0x1F300, 0x1FB00))
    tones = [chr(c) for c in range(0x1F3FB, 0x1F400)]
    out: list[str] = []
    while len(out) * 4 < size:
        rnd.shuffle(pictographs)
        for c in pictographs:
            out.append(chr(c))
            roll = rnd.random()
            if roll < 0.1:
                out.append(rnd.choice(tones))
            elif roll < 0.15:
                out.append("\u200d")  # ZWJ: the next pictograph joins this one
            elif roll < 0.17:
                out.append(rnd.choice(" \n"))
    return _repeat_to("".join(out).encode(), size)


_WEB_TEXT = {
    "en": "the quick brown fox jumps over the lazy dog while the server logs every request",
    "de": "Größere Änderungen müssen über die Straße geführt werden, sagt der Bürgermeister",
    "ru": "Съешь же ещё этих мягких французских булок да выпей чаю в тёплой комнате",
    "el": "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία και γράφω για την ιστορία της πόλης",
    "ar": "نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق",
    "he": "דג סקרן שט בים מאוכזב ולפתע מצא לו חברה ששמה בריכה גדולה",
    "hi": "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले",
    "zh": "我们的服务器每天处理数百万个请求并记录所有错误信息以便以后分析",
    "ja": "いろはにほへと ちりぬるを わかよたれそ つねならむ うゐのおくやま けふこえて",
    "ko": "다람쥐 헌 쳇바퀴에 타고파 키스의 고유조건은 입술끼리 만나야 하고",
}


def web(size: int, rnd: random.Random) -> bytes:
    """A multilingual web page: HTML markup (ASCII tags, attributes, URLs) around
    paragraphs in ten scripts, with entities, emoji and typographic punctuation."""
    langs = sorted(_WEB_TEXT)
    blocks = [
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        "<title>Новости — 新闻 — news</title></head><body>\n"
    ]
    marks = ["😀", "👍🏽", "…", "€", "—", "&nbsp;"]
    for i in range(3000):
        lang = rnd.choice(langs)
        words = _WEB_TEXT[lang].split()
        text = " ".join(rnd.choice(words) for _ in range(rnd.randrange(5, 40)))
        link = f'<a href="https://example.org/{lang}/article/{i}?ref=home&amp;page={i % 7}">'
        blocks.append(
            f'<div class="post post-{i % 5}" data-id="{i}">\n  <p lang="{lang}">{text}'
            f" {link}“{rnd.choice(words)}”</a> {rnd.choice(marks)}"
            "</p>\n</div>\n"
        )
    blocks.append("</body></html>\n")
    return _repeat_to("".join(blocks).encode(), size)


def corrupt(data: bytes, rnd: random.Random, every: int = 1000) -> bytes:
    """Replace one random byte in every ``every`` bytes with a random byte."""
    out = bytearray(data)
    for start in range(0, len(out), every):
        i = start + rnd.randrange(every)
        if i < len(out):
            out[i] = rnd.randrange(256)
    return bytes(out)


def build_corpora(size: int = DEFAULT_SIZE, seed: int = 2026) -> dict[str, bytes]:
    rnd = random.Random(seed)
    corpora = {
        "ascii-log": ascii_log(size, rnd),
        "mixed": mixed(size, rnd),
        "cjk": cjk(size, rnd),
        "emoji": emoji(size, rnd),
        "dense-emoji": dense_emoji(size, rnd),
        "web": web(size, rnd),
    }
    corpora["corrupted"] = corrupt(corpora["mixed"], rnd)
    return corpora


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]
