"""Byte classification for UTF-8: the one place that knows what each byte may be.

Unicode Table 3-7 (RFC 3629) in table form.  Every module that needs to know whether a
byte starts a character, continues one, or can never appear, asks here.

``SEQ_LEN[b]``
    length of the well-formed sequence that lead byte ``b`` starts (1 for ASCII), or 0
    when ``b`` can never start a character (continuation bytes, C0, C1, F5..FF).
``SECOND_LO[b]`` / ``SECOND_HI[b]``
    the range the second byte must fall in after lead ``b`` (narrower than 80..BF after
    E0, ED, F0 and F4, which is what rules out overlongs, surrogates and values past
    U+10FFFF).  Every later byte of a sequence is 80..BF.

The UTF-8 variants (``variants.py``) read bytes through their own version of the same
table, a ``ByteTable`` built by ``byte_table``: WTF-8, CESU-8 and MUTF-8 accept ED A0..BF
(a surrogate *half*, three bytes, whose meaning the variant decides); CESU-8 and MUTF-8
have no four-byte sequences (F0..F4 are never leads); MUTF-8 and UTF-8Z spell U+0000 as
C0 80 (C0 becomes a lead whose only second byte is 80) and never contain a raw 00.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .events import MalformedKind

__all__ = [
    "BAD_SECOND_KIND",
    "LONE_KIND",
    "SECOND_HI",
    "SECOND_LO",
    "SEQ_LEN",
    "UTF8",
    "ByteBuffer",
    "ByteTable",
    "byte_table",
    "character_count",
    "classify_unit",
    "held_prefixes",
    "is_continuation",
    "is_high_half",
    "is_low_half",
    "is_proper_prefix",
    "is_surrogate_half",
    "unit_length",
]


class ByteBuffer(Protocol):
    """What the readers here need: ``len`` and integer indexing (bytes, mmap, memoryview)."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> int: ...


@dataclass(frozen=True, eq=False)
class ByteTable:
    """What each byte may be in one encoding form: Table 3-7, or a variant's version of it.

    ``seq_len``, ``second_lo`` and ``second_hi`` as described above; ``lone_kind[b]`` is
    the kind of a byte that can never start a character (None for ASCII and lead bytes);
    ``bad_second_kind[lead]`` the kind of a lead followed by a continuation byte outside
    its second-byte range.  ``surrogate_halves``: ED A0..BF 80..BF is a unit of its own.
    """

    seq_len: list[int]
    second_lo: list[int]
    second_hi: list[int]
    lone_kind: list[MalformedKind | None]
    bad_second_kind: dict[int, MalformedKind]
    surrogate_halves: bool = False


def byte_table(
    *,
    surrogate_halves: bool = False,
    four_byte: bool = True,
    java_null: bool = False,
    nul_malformed: bool = False,
) -> ByteTable:
    """Table 3-7 (all defaults), or a variant's version of it (see the module docstring)."""
    seq_len = [0] * 256
    lo = [0x80] * 256
    hi = [0xBF] * 256
    kinds: list[MalformedKind | None] = [None] * 256
    for b in range(0x80):
        seq_len[b] = 1
    for b in range(0xC2, 0xE0):
        seq_len[b] = 2
    for b in range(0xE0, 0xF0):
        seq_len[b] = 3
    for b in range(0xF0, 0xF5):
        seq_len[b] = 4
    lo[0xE0] = 0xA0
    hi[0xED] = 0x9F
    lo[0xF0] = 0x90
    hi[0xF4] = 0x8F
    for b in range(0x80, 0xC0):
        kinds[b] = MalformedKind.UNEXPECTED_CONTINUATION
    kinds[0xC0] = kinds[0xC1] = MalformedKind.OVERLONG
    for b in range(0xF5, 0xF8):
        kinds[b] = MalformedKind.OUT_OF_RANGE
    for b in range(0xF8, 0x100):
        kinds[b] = MalformedKind.INVALID_BYTE
    bad_second = {
        0xE0: MalformedKind.OVERLONG,
        0xED: MalformedKind.SURROGATE,
        0xF0: MalformedKind.OVERLONG,
        0xF4: MalformedKind.OUT_OF_RANGE,
    }
    if surrogate_halves:
        hi[0xED] = 0xBF
    if not four_byte:
        # These forms spell code points past U+FFFF as surrogate pairs: F0..F4 never
        # occur, like the obsolete 5- and 6-byte leads F8..FD in UTF-8.
        for b in range(0xF0, 0xF5):
            seq_len[b] = 0
            kinds[b] = MalformedKind.INVALID_BYTE
            bad_second.pop(b, None)
    if java_null:
        seq_len[0xC0] = 2
        lo[0xC0] = hi[0xC0] = 0x80
        kinds[0xC0] = None
        bad_second[0xC0] = MalformedKind.OVERLONG  # C0 81..BF: overlong ASCII
    if nul_malformed:
        seq_len[0x00] = 0
        kinds[0x00] = MalformedKind.INVALID_BYTE
    return ByteTable(seq_len, lo, hi, kinds, bad_second, surrogate_halves)


#: Unicode Table 3-7 (RFC 3629).
UTF8 = byte_table()
SEQ_LEN, SECOND_LO, SECOND_HI = UTF8.seq_len, UTF8.second_lo, UTF8.second_hi

#: Kind of a byte that can never start a character; None for ASCII and lead bytes.
LONE_KIND = UTF8.lone_kind

#: Kind of a lead byte rejected because its second byte is a continuation byte outside
#: the allowed range (E0 80 is overlong, ED A0 a surrogate, F4 90 past U+10FFFF).
BAD_SECOND_KIND = UTF8.bad_second_kind


def is_continuation(b: int) -> bool:
    return 0x80 <= b <= 0xBF


_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def character_count(seq: bytes) -> int:
    """The characters of well-formed ``seq`` (an encoded surrogate counts one): its
    bytes other than continuation bytes, counted without decoding."""
    return len(seq) if seq.isascii() else len(seq.translate(None, _CONTINUATION_BYTES))


def is_proper_prefix(seq: bytes | bytearray | memoryview, table: ByteTable = UTF8) -> bool:
    """True if ``seq`` (1..3 bytes) is a proper prefix of some well-formed sequence."""
    n = len(seq)
    if n == 0:
        return False
    need = table.seq_len[seq[0]]
    if need <= n or need == 1:
        return False
    if n >= 2 and not table.second_lo[seq[0]] <= seq[1] <= table.second_hi[seq[0]]:
        return False
    return all(0x80 <= b <= 0xBF for b in seq[2:])


def is_high_half(buf: ByteBuffer, i: int) -> bool:
    """``buf[i:i+3]`` is ED A0..AF 80..BF: a high (lead) surrogate, D800..DBFF."""
    return (
        i >= 0
        and i + 2 < len(buf)
        and buf[i] == 0xED
        and 0xA0 <= buf[i + 1] <= 0xAF
        and 0x80 <= buf[i + 2] <= 0xBF
    )


def is_low_half(buf: ByteBuffer, i: int) -> bool:
    """``buf[i:i+3]`` is ED B0..BF 80..BF: a low (trail) surrogate, DC00..DFFF."""
    return (
        i >= 0
        and i + 2 < len(buf)
        and buf[i] == 0xED
        and 0xB0 <= buf[i + 1] <= 0xBF
        and 0x80 <= buf[i + 2] <= 0xBF
    )


def is_surrogate_half(buf: ByteBuffer, i: int) -> bool:
    """``buf[i:i+3]`` is ED A0..BF 80..BF: an encoded surrogate, D800..DFFF."""
    return is_high_half(buf, i) or is_low_half(buf, i)


def unit_length(buf: ByteBuffer, start: int, table: ByteTable = UTF8) -> int:
    """Length of the character or maximal subpart that starts at ``buf[start]``.

    A sequence that the end of ``buf`` cuts off counts the bytes that are there.
    """
    lead = buf[start]
    need = table.seq_len[lead]
    if need <= 1:
        return 1  # ASCII, or a byte that is a unit on its own
    end = min(len(buf), start + need)
    i = start + 1
    if i < end and table.second_lo[lead] <= buf[i] <= table.second_hi[lead]:
        i += 1
        while i < end and 0x80 <= buf[i] <= 0xBF:
            i += 1
    return i - start


def held_prefixes(table: ByteTable, *, pairs: bool = False) -> frozenset[bytes]:
    """Every tail a decoder using ``table`` must hold back at a chunk boundary.

    That is every proper prefix of a well-formed sequence (about 17,600 of them) and, with
    ``pairs`` (a high surrogate half means something different when a low half follows),
    a complete high half followed by nothing, by ED, or by ED B0..BF.
    """
    out: set[bytes] = set()
    for lead in range(256):
        need = table.seq_len[lead]
        if need < 2:
            continue
        out.add(bytes((lead,)))
        for second in range(table.second_lo[lead], table.second_hi[lead] + 1):
            if need > 2:
                out.add(bytes((lead, second)))
            if need > 3:
                for third in range(0x80, 0xC0):
                    out.add(bytes((lead, second, third)))
    if pairs:
        for second in range(0xA0, 0xB0):
            for third in range(0x80, 0xC0):
                high = bytes((0xED, second, third))
                out.add(high)
                out.add(high + b"\xed")
                for low_second in range(0xB0, 0xC0):
                    out.add(high + bytes((0xED, low_second)))
    return frozenset(out)


def classify_unit(
    buf: ByteBuffer,
    start: int,
    end: int,
    at_end_of_stream: bool,
    table: ByteTable = UTF8,
) -> MalformedKind:
    """Kind of the maximal subpart ``buf[start:end]``.

    The byte after the unit (when there is one) decides between an incomplete sequence
    and a lead byte whose continuation is out of its allowed range.
    """
    b0 = buf[start]
    kind = table.lone_kind[b0]
    if kind is not None:
        return kind
    if end < len(buf):
        if end - start == 1 and 0x80 <= buf[end] <= 0xBF:
            return table.bad_second_kind[b0]
        return MalformedKind.INCOMPLETE_SEQUENCE
    if at_end_of_stream:
        return MalformedKind.TRUNCATED_AT_END
    return MalformedKind.INCOMPLETE_SEQUENCE
