"""Deterministic benchmark corpora (DESIGN.md section 8), built in memory.

Five kinds: ASCII log lines, mixed European text (from the shared seeds, which are read
in place and never copied into the project), CJK, emoji, and a corrupted copy of the mixed
text with one random byte in every 1000 replaced.
"""

from __future__ import annotations

import random
from pathlib import Path

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "seeds"
DEFAULT_SIZE = 16 * 1024 * 1024
NAMES = ("ascii-log", "mixed", "cjk", "emoji", "corrupted")


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
    if seeds:
        unit = b"".join(p.read_bytes() for p in seeds)
    else:  # a fresh clone without ../shared: our own mixed sample
        unit = (
            "Příliš žluťoučký kůň úpěl ďábelské ódy. ¿Dónde está la biblioteca? "
            "Съешь же ещё этих мягких французских булок. Grüße aus Köln. 🚀\n"
        ).encode() * 200
    return _repeat_to(unit, size)


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
    }
    corpora["corrupted"] = corrupt(corpora["mixed"], rnd)
    return corpora


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]
