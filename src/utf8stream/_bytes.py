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
"""

from __future__ import annotations

from .events import MalformedKind

__all__ = [
    "BAD_SECOND_KIND",
    "LONE_KIND",
    "SECOND_HI",
    "SECOND_LO",
    "SEQ_LEN",
    "classify_unit",
    "is_continuation",
    "is_proper_prefix",
]


def _build() -> tuple[list[int], list[int], list[int]]:
    seq_len = [0] * 256
    lo = [0x80] * 256
    hi = [0xBF] * 256
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
    return seq_len, lo, hi


SEQ_LEN, SECOND_LO, SECOND_HI = _build()


def _lone_kinds() -> list[MalformedKind | None]:
    kinds: list[MalformedKind | None] = [None] * 256
    for b in range(0x80, 0xC0):
        kinds[b] = MalformedKind.UNEXPECTED_CONTINUATION
    kinds[0xC0] = kinds[0xC1] = MalformedKind.OVERLONG
    for b in range(0xF5, 0xF8):
        kinds[b] = MalformedKind.OUT_OF_RANGE
    for b in range(0xF8, 0x100):
        kinds[b] = MalformedKind.INVALID_BYTE
    return kinds


#: Kind of a byte that can never start a character; None for ASCII and lead bytes.
LONE_KIND = _lone_kinds()

#: Kind of a lead byte rejected because its second byte is a continuation byte outside
#: the allowed range (E0 80 is overlong, ED A0 a surrogate, F4 90 past U+10FFFF).
BAD_SECOND_KIND: dict[int, MalformedKind] = {
    0xE0: MalformedKind.OVERLONG,
    0xED: MalformedKind.SURROGATE,
    0xF0: MalformedKind.OVERLONG,
    0xF4: MalformedKind.OUT_OF_RANGE,
}


def is_continuation(b: int) -> bool:
    return 0x80 <= b <= 0xBF


def is_proper_prefix(seq: bytes | bytearray | memoryview) -> bool:
    """True if ``seq`` (1..3 bytes) is a proper prefix of some well-formed sequence."""
    n = len(seq)
    if n == 0:
        return False
    need = SEQ_LEN[seq[0]]
    if need <= n or need == 1:
        return False
    if n >= 2 and not SECOND_LO[seq[0]] <= seq[1] <= SECOND_HI[seq[0]]:
        return False
    return all(0x80 <= b <= 0xBF for b in seq[2:])


def classify_unit(
    buf: bytes | bytearray | memoryview, start: int, end: int, at_end_of_stream: bool
) -> MalformedKind:
    """Kind of the maximal subpart ``buf[start:end]``.

    The byte after the unit (when there is one) decides between an incomplete sequence
    and a lead byte whose continuation is out of its allowed range.
    """
    b0 = buf[start]
    kind = LONE_KIND[b0]
    if kind is not None:
        return kind
    if end < len(buf):
        if end - start == 1 and 0x80 <= buf[end] <= 0xBF:
            return BAD_SECOND_KIND[b0]
        return MalformedKind.INCOMPLETE_SEQUENCE
    if at_end_of_stream:
        return MalformedKind.TRUNCATED_AT_END
    return MalformedKind.INCOMPLETE_SEQUENCE
