"""Character boundaries in any byte buffer (bytes, bytearray, memoryview, mmap).

A *boundary* is a position that no character and no malformed unit straddles, so that
decoding ``buf[:q]`` and ``buf[q:]`` separately (each to its end) gives exactly what
decoding ``buf`` in one piece gives: the same text and the same events, except that a unit
cut short right before the boundary is ``TRUNCATED_AT_END`` for the first piece's decoder,
where the whole-stream decoder names its kind from the byte at the boundary
(``rejoined_event`` does that translation).  UTF-8 is self-synchronising: a maximal subpart is a
lead byte plus continuation bytes, so every byte that is not a continuation byte starts a
new unit, and the unit containing any position starts at most three bytes earlier.

All functions look at no more than four bytes around each position: they are O(1) per
position whatever the buffer's size, which is what splitting a 50 GB ``mmap`` needs.
"""

from __future__ import annotations

from ._bytes import (
    ByteBuffer,
    classify_unit,
    is_continuation,
    is_high_half,
    is_low_half,
    is_surrogate_half,
    unit_length,
)
from .events import Malformed, MalformedKind

__all__ = [
    "char_start",
    "cut_at_boundary",
    "next_char_start",
    "rejoined_event",
    "split_points",
    "variant_char_start",
]


def _check(buf: ByteBuffer, pos: int) -> None:
    if not 0 <= pos <= len(buf):
        raise IndexError(f"position {pos} outside the buffer (length {len(buf)})")


def variant_char_start(buf: ByteBuffer, pos: int, variant: str) -> int:
    """``char_start`` for a UTF-8 variant.

    WTF-8, CESU-8 and MUTF-8 encode surrogates as three bytes (ED A0..BF xx); CESU-8 and
    MUTF-8 write a supplementary character as two of them, which must stay together;
    MUTF-8 writes U+0000 as C0 80.  ``variant="utf-8"`` is ``char_start``.
    """
    start = char_start(buf, pos)
    if variant == "utf-8":
        return start
    if variant not in ("wtf-8", "cesu-8", "mutf-8"):
        raise ValueError(f"unknown UTF-8 variant {variant!r}")
    for back in (1, 2):
        if is_surrogate_half(buf, pos - back):
            start = pos - back
            break
    if (
        variant != "wtf-8"
        and is_high_half(buf, start - 3)
        and is_low_half(buf, start)  # a surrogate pair: one character
    ):
        start -= 3
    if (
        variant == "mutf-8"
        and 0 < start < len(buf)
        and (buf[start - 1], buf[start]) == (0xC0, 0x80)
    ):
        start -= 1  # C0 80 is U+0000
    return start


def char_start(buf: ByteBuffer, pos: int) -> int:
    """Start of the character (or malformed unit) containing byte ``pos``.

    Returns ``pos`` itself when it is a boundary; otherwise backs up at most three bytes.
    ``pos == len(buf)`` is a boundary.
    """
    _check(buf, pos)
    if pos == len(buf) or not is_continuation(buf[pos]):
        return pos
    for back in range(1, 4):
        start = pos - back
        if start < 0:
            break
        if not is_continuation(buf[start]):
            return start if start + unit_length(buf, start) > pos else pos
    return pos


def next_char_start(buf: ByteBuffer, pos: int) -> int:
    """The first boundary after ``pos`` (``len(buf)`` at the end)."""
    _check(buf, pos)
    if pos == len(buf):
        return pos
    start = char_start(buf, pos)
    if start == pos and is_continuation(buf[pos]):
        return pos + 1  # a stray continuation byte is a unit of its own
    return start + unit_length(buf, start)


def cut_at_boundary(buf: ByteBuffer, budget: int) -> int:
    """The longest prefix length ``<= budget`` that ends on a boundary.

    ``buf[:cut_at_boundary(buf, n)]`` never ends in a broken character.
    """
    if budget < 0:
        raise ValueError("budget must be non-negative")
    return char_start(buf, min(budget, len(buf)))


def split_points(buf: ByteBuffer, pieces: int, variant: str = "utf-8") -> list[int]:
    """``pieces + 1`` non-decreasing boundaries from 0 to ``len(buf)``.

    Piece ``k`` is ``buf[points[k]:points[k + 1]]``; pieces are near-equal in size (a
    piece may be empty when the buffer is tiny).  ``variant`` as in
    ``variant_char_start``.
    """
    if pieces < 1:
        raise ValueError("pieces must be at least 1")
    size = len(buf)
    points = [0]
    for k in range(1, pieces):
        points.append(max(points[-1], variant_char_start(buf, size * k // pieces, variant)))
    points.append(size)
    return points


def rejoined_event(event: Malformed, next_byte: int | None) -> Malformed:
    """``event`` as a decoder of the whole stream reports it.

    A piece decoded on its own ends its last unit with ``TRUNCATED_AT_END``; when the
    piece is followed by ``next_byte`` (``None`` at the real end of the stream) the unit
    was in fact cut by that byte, and its kind depends on it (``E0`` then ``80`` is
    ``OVERLONG``; ``E1`` then ``41`` is ``INCOMPLETE_SEQUENCE``).
    """
    if event.kind is not MalformedKind.TRUNCATED_AT_END or next_byte is None:
        return event
    window = event.data + bytes((next_byte,))
    kind = classify_unit(window, 0, len(event.data), at_end_of_stream=False)
    return Malformed(event.offset, event.data, kind)
