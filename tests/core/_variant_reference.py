"""The UTF-8 variants' reference, shared by the ``test_variants*`` modules: a deliberately
slow per-byte decoder and a per-code-point encoder written from the variant rules (no code
shared with ``utf8stream``), and the strategies that feed them."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _helpers import (
    FRAGMENTS,
    K,
    Reference,
    Unit,
    _table_3_7,
)
from hypothesis import strategies as st

from utf8stream import Utf8Encoder

VARIANTS = ("utf-8", "wtf-8", "cesu-8", "mutf-8", "utf-8z")

# -- the reference: the variant rules, one byte at a time -------------------------------


@dataclass(frozen=True)
class Rules:
    four_byte: bool  # F0..F4 sequences exist
    halves: bool  # ED A0..BF 80..BF is a surrogate half, a unit of its own
    java_null_in: bool  # C0 80 decodes to U+0000
    nul_malformed: bool  # a raw 00 is malformed
    join: bool  # a high half + a low half is one character
    lone_ok: bool  # a lone half is a character
    pair_bad: bool  # a high half + a low half is malformed, both halves
    java_null_out: bool  # U+0000 encodes as C0 80
    pairs_out: bool  # U+10000.. encodes as a 6-byte pair


RULES = {
    "utf-8": Rules(True, False, False, False, False, False, False, False, False),
    "wtf-8": Rules(True, True, False, False, False, True, True, False, False),
    "cesu-8": Rules(False, True, True, False, True, False, False, False, True),
    "mutf-8": Rules(False, True, True, True, True, True, False, True, True),
    "utf-8z": Rules(True, False, True, True, False, False, False, True, False),
}


def _cont(b: int) -> bool:
    return 0x80 <= b <= 0xBF


def _half(data: bytes, i: int) -> int:
    return ((data[i] & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)


def variant_reference(
    data: bytes, variant: str, *, final: bool = True, start_offset: int = 0
) -> Reference:
    """Characters and malformed units of ``data`` in ``variant``, per the rules above."""
    r = RULES[variant]
    pieces: list[str | Unit] = []
    held = b""
    n = len(data)
    i = 0
    orphan = False  # the previous unit was the high half of a malformed WTF-8 pair

    def unit(end: int, kind: K) -> None:
        pieces.append(Unit(start_offset + i, data[i:end], kind))

    while i < n:
        b = data[i]
        was_orphan, orphan = orphan, False
        if b == 0 and r.nul_malformed:
            unit(i + 1, K.INVALID_BYTE)
            i += 1
        elif b < 0x80:
            pieces.append(chr(b))
            i += 1
        elif b == 0xC0 and r.java_null_in:
            if i + 1 == n:
                if final:
                    unit(n, K.TRUNCATED_AT_END)
                else:
                    held = data[i:]
                break
            if data[i + 1] == 0x80:
                pieces.append("\x00")
                i += 2
            else:
                unit(i + 1, K.OVERLONG if _cont(data[i + 1]) else K.INCOMPLETE_SEQUENCE)
                i += 1
        elif 0xF0 <= b <= 0xF4 and not r.four_byte:
            unit(i + 1, K.INVALID_BYTE)
            i += 1
        elif b == 0xED and r.halves and i + 1 < n and 0xA0 <= data[i + 1] <= 0xBF:
            if i + 2 == n:
                if final:
                    unit(n, K.TRUNCATED_AT_END)
                else:
                    held = data[i:]
                break
            if not _cont(data[i + 2]):
                unit(i + 2, K.INCOMPLETE_SEQUENCE)
                i += 2
                continue
            cp = _half(data, i)
            if cp < 0xDC00:
                nxt = data[i + 3 : i + 6]
                low_follows = (
                    (len(nxt) < 1 or nxt[0] == 0xED)
                    and (len(nxt) < 2 or 0xB0 <= nxt[1] <= 0xBF)
                    and (len(nxt) < 3 or _cont(nxt[2]))
                )
                if low_follows and len(nxt) < 3 and not final:
                    held = data[i:]  # what follows decides
                    break
                if low_follows and len(nxt) == 3:
                    if r.join:
                        low = _half(data, i + 3)
                        pieces.append(chr(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)))
                        i += 6
                        continue
                    if r.pair_bad:
                        unit(i + 3, K.SURROGATE)
                        orphan = True
                        i += 3
                        continue
            elif was_orphan:
                unit(i + 3, K.SURROGATE)
                i += 3
                continue
            if r.lone_ok:
                pieces.append(chr(cp))
            else:
                unit(i + 3, K.SURROGATE)
            i += 3
        else:  # everything else: Unicode Table 3-7, one maximal subpart
            rule = _table_3_7(b)
            if rule is None:
                kind = K.OVERLONG if b in (0xC0, 0xC1) else K.UNEXPECTED_CONTINUATION
                if b >= 0xF5:
                    kind = K.OUT_OF_RANGE if b < 0xF8 else K.INVALID_BYTE
                unit(i + 1, kind)
                i += 1
                continue
            length, lo, hi = rule
            j = i + 1
            while j < i + length:
                if j == n:
                    if final:
                        unit(n, K.TRUNCATED_AT_END)
                    else:
                        held = data[i:]
                    i = n
                    break
                if not lo <= data[j] <= hi:
                    if j == i + 1 and _cont(data[j]):
                        bad = {0xE0: K.OVERLONG, 0xED: K.SURROGATE, 0xF0: K.OVERLONG}
                        unit(j, bad.get(b, K.OUT_OF_RANGE))
                    else:
                        unit(j, K.INCOMPLETE_SEQUENCE)
                    i = j
                    break
                lo, hi = 0x80, 0xBF
                j += 1
            else:
                pieces.append(data[i:j].decode("utf-8"))
                i = j
    return Reference(pieces, held)


def _high(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDBFF


def _low(cp: int) -> bool:
    return 0xDC00 <= cp <= 0xDFFF


def joined(text: str) -> str:
    """``text`` with every adjacent high+low surrogate pair made one character."""
    out: list[str] = []
    i = 0
    while i < len(text):
        cp = ord(text[i])
        if _high(cp) and i + 1 < len(text) and _low(ord(text[i + 1])):
            cp = 0x10000 + ((cp - 0xD800) << 10) + (ord(text[i + 1]) - 0xDC00)
            i += 1
        out.append(chr(cp))
        i += 1
    return "".join(out)


def reference_encode(text: str, variant: str) -> bytes:
    """``text`` in ``variant``, one code point at a time (surrogates must be encodable)."""
    r = RULES[variant]
    out = []
    for ch in joined(text) if variant == "wtf-8" else text:
        cp = ord(ch)
        if cp == 0 and r.java_null_out:
            out.append(b"\xc0\x80")
        elif cp >= 0x10000 and r.pairs_out:
            cp -= 0x10000
            pair = chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))
            out.append(pair.encode("utf-8", "surrogatepass"))
        else:
            out.append(ch.encode("utf-8", "surrogatepass"))
    return b"".join(out)


# -- strategies ---------------------------------------------------------------------------

VARIANT_FRAGMENTS = [
    *FRAGMENTS,
    b"\x00",
    b"\xc0\x80",
    b"\xc0\x81",
    b"\xed\xa0\x80",  # high halves
    b"\xed\xaf\xbf",
    b"\xed\xb0\x80",  # low halves
    b"\xed\xbf\xbf",
    b"\xed\xa0\xbd\xed\xb8\x80",  # a pair (U+1F600)
    b"\xed\xa0\xbd\xed",
    b"\xed\xa0\xbd\xed\xb8",
    b"\xed\xb0",
    b"\xf0\x9f\x98\x80",
]
variant_bytes = st.one_of(
    st.binary(max_size=40),
    st.lists(
        st.one_of(st.sampled_from(VARIANT_FRAGMENTS), st.binary(min_size=1, max_size=2)),
        max_size=20,
    ).map(b"".join),
)

SURROGATE_CHARS = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"]
#: Any code point, surrogates included, with the interesting ones often.
any_code_points = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=()),
        st.sampled_from([*SURROGATE_CHARS, "\x00", "😀", "\U0010ffff", "\uffff", "€"]),
    ),
    max_size=30,
)
#: Text a variant can encode whatever its policy: no surrogates.
scalar_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"), st.sampled_from(["\x00", "😀", "\U0010ffff", "\uef80", "€"])
    ),
    max_size=30,
)


def text_for(variant: str) -> st.SearchStrategy[str]:
    return any_code_points if RULES[variant].lone_ok else scalar_text


def cut_text(draw: Callable[..., Any], text: str) -> list[str]:
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=len(text) + 3))
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def encode_pieces(pieces: list[str], variant: str, errors: str = "strict") -> bytes:
    encoder = Utf8Encoder(errors, variant=variant)
    return b"".join(encoder.encode(p) for p in pieces) + encoder.encode("", final=True)
