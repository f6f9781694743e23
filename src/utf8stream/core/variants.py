"""The UTF-8 family: variant definitions, the OPTU-8 error policy, and codec registration.

A *variant* is UTF-8 with different rules for three things: surrogate code points, code
points past U+FFFF, and U+0000.

========== =============================== =========================== ================
variant    surrogates (ED A0..BF xx)       U+10000..U+10FFFF           U+0000
========== =============================== =========================== ================
utf-8      malformed                       4 bytes                     00
wtf-8      a lone half is a character;     4 bytes                     00
           a high half followed by a low
           half is malformed (both halves)
cesu-8     a high+low pair is one          6 bytes (a pair); 4-byte    00 (C0 80 is
           character; a lone half is       forms are malformed         accepted when
           malformed                                                   decoding)
mutf-8     a pair is one character; a      6 bytes (a pair); 4-byte    C0 80; a raw 00
           lone half is a character        forms are malformed         is malformed
utf-8z     malformed                       4 bytes                     C0 80; a raw 00
                                                                       is malformed
========== =============================== =========================== ================

WTF-8 is the encoding of "potentially ill-formed UTF-16" (https://simonsapin.github.io/wtf-8/):
a surrogate pair is always written as the 4-byte form, so decoding gives back every lone
surrogate, while an adjacent high/low pair in a ``str`` comes back as the supplementary
character it stands for.  CESU-8 is Unicode Technical Report #26; MUTF-8 is Java's
"modified UTF-8" (``DataInput.readUTF``, JNI); UTF-8Z is UTF-8 with the Java null.
CESU-8 decoding accepts C0 80 as U+0000, as ftfy's ``utf-8-variants`` and Java-facing
data need; the CESU-8 encoder writes 00.

This module only defines the variants; ``registry.py`` registers them with ``codecs``
(on ``import utf8stream``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._bytes import UTF8, ByteTable, byte_table
from .optu8 import OPTU8, optu8_errors

__all__ = ["OPTU8", "VARIANTS", "Variant", "get_variant", "optu8_errors"]


@dataclass(frozen=True, eq=False)
class Variant:
    """The rules of one member of the UTF-8 family (see the module docstring).

    ``table``: how the decoder reads bytes; ``passing_table``: the same with surrogate
    halves as units of their own (for ``errors="surrogatepass"``).  ``translate``: a
    ``bytes.translate`` table that turns the bytes this variant forbids but UTF-8 allows
    (00, F0..F4) into a byte UTF-8 forbids too, so that CPython's C decoder stops there.
    """

    name: str
    aliases: tuple[str, ...]
    table: ByteTable
    passing_table: ByteTable
    #: ED A0..AF xx ED B0..BF xx is one supplementary character (CESU-8, MUTF-8).
    join_pairs: bool = False
    #: A lone surrogate half decodes to the surrogate code point (WTF-8, MUTF-8).
    lone_halves: bool = False
    #: A high half followed by a low half is malformed, both halves (WTF-8).
    pairs_malformed: bool = False
    #: Supplementary characters encode as a 6-byte surrogate pair (CESU-8, MUTF-8).
    astral_as_pairs: bool = False
    #: U+0000 encodes as C0 80 (MUTF-8, UTF-8Z).
    null_as_c0_80: bool = False
    #: Every code point is encodable: surrogates are written as 3 bytes (WTF-8, MUTF-8).
    encodes_surrogates: bool = False
    translate: bytes | None = None

    @property
    def holds_pairs(self) -> bool:
        """A complete high half at a chunk end waits: the next bytes decide what it is."""
        return self.join_pairs or self.pairs_malformed

    def __repr__(self) -> str:
        return f"<Variant {self.name}>"


def _translation(table: ByteTable) -> bytes | None:
    out = bytearray(range(256))
    for b in range(256):
        if table.seq_len[b] == 0 and UTF8.seq_len[b] != 0:
            out[b] = 0xFF
    return None if out == bytes(range(256)) else bytes(out)


def _variant(name: str, aliases: tuple[str, ...], **rules: Any) -> Variant:
    table_rules = {
        k: rules.pop(k)
        for k in ("surrogate_halves", "four_byte", "java_null", "nul_malformed")
        if k in rules
    }
    table = byte_table(**table_rules)
    passing = byte_table(**{**table_rules, "surrogate_halves": True})
    return Variant(name, aliases, table, passing, translate=_translation(table), **rules)


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        _variant("utf-8", ("utf8", "u8")),
        _variant(
            "wtf-8",
            (),
            surrogate_halves=True,
            lone_halves=True,
            pairs_malformed=True,
            encodes_surrogates=True,
        ),
        _variant(
            "cesu-8",
            (),
            surrogate_halves=True,
            four_byte=False,
            java_null=True,
            join_pairs=True,
            astral_as_pairs=True,
        ),
        _variant(
            "mutf-8",
            ("java-modified-utf-8", "modified-utf-8"),
            surrogate_halves=True,
            four_byte=False,
            java_null=True,
            nul_malformed=True,
            join_pairs=True,
            lone_halves=True,
            astral_as_pairs=True,
            null_as_c0_80=True,
            encodes_surrogates=True,
        ),
        _variant("utf-8z", (), java_null=True, nul_malformed=True, null_as_c0_80=True),
    )
}


def _key(name: str) -> str:
    """A codec name compared the way ``codecs`` users expect: no case, no punctuation."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


_BY_KEY = {_key(alias): v for v in VARIANTS.values() for alias in (v.name, *v.aliases)}


def get_variant(name: str) -> Variant:
    """The variant called ``name`` (``"WTF_8"`` and ``"wtf8"`` find ``wtf-8``)."""
    try:
        return _BY_KEY[_key(name)]
    except (KeyError, AttributeError):
        known = ", ".join(repr(n) for n in VARIANTS)
        raise ValueError(f"unknown UTF-8 variant {name!r} (known: {known})") from None
