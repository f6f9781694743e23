"""Doubt after commitment: the bytes after a detector's decision may not fit the encoding
it chose while an encoding it set aside on statistics fits them.

``DoubtTracker`` is fed the bytes the chosen decoder is fed (from the stream's first byte,
the replayed ones included) and keeps a strict incremental decoder of the chosen encoding
and one of every other candidate still decoding the stream validly (``codecs``' strict
decoders, the detector's own test of validity).  At the first byte the chosen encoding
cannot decode, the candidates that decode everything up to it, and the character it
begins, make an ``EncodingDoubt`` naming the likeliest of them; it is given once.  The text
already decoded stands: the doubt is a warning, and decoding goes on in the chosen
encoding.

The tracking is bounded: it ends ``max_lookahead`` bytes after the decision, at the first
invalid byte, or when no candidate is left; a candidate stops at its first invalid byte.
A decision taken on a byte-order mark rules the others out by the mark, not by statistics:
it is not tracked.  Nor is a decoder resumed from a checkpoint.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .detector import Detection

__all__ = ["DoubtTracker", "EncodingDoubt", "OnDoubt", "doubt_candidates", "doubt_tracker"]


@dataclass(frozen=True)
class EncodingDoubt:
    """The bytes from ``offset`` (absolute) on are invalid in the encoding ``chosen``,
    while ``candidate``, which the detector set aside on statistics, decodes them and
    everything before them."""

    offset: int
    chosen: str
    candidate: str


OnDoubt = Callable[[EncodingDoubt], object]

#: The longest character of any candidate: a candidate fits the first invalid byte when
#: it decodes the bytes up to this many after it.
_REACH = 4


def doubt_candidates(chosen: str) -> tuple[str, ...]:
    """The detector's candidates other than ``chosen``, likeliest first (the detector's
    priors, then its tie-break order).  For UTF-16 and UTF-32 without a mark, whose NUL
    bytes ruled every narrow encoding out, only the other wide ones."""
    from . import _detector_score as scoring  # the model loads only when asked for

    name = codecs.lookup(chosen).name
    if name in scoring.WIDE:
        pool: tuple[str, ...] = scoring.WIDE
    else:
        pool = ("utf-8", *scoring.WIDE, *scoring.MULTI_BYTE, *scoring.SINGLE_BYTE)
    order = {n: i for i, n in enumerate(pool)}
    others = [n for n in pool if codecs.lookup(n).name != name]
    others.sort(
        key=lambda n: (
            -1.0 if n == "utf-8" else scoring.PRIOR.get(n, scoring.OTHER_PRIOR),
            order[n],
        )
    )
    return tuple(codecs.lookup(n).name for n in others)


class _Strict:
    """One encoding's strict incremental decoder."""

    __slots__ = ("decoder", "encoding")

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.decoder = codecs.getincrementaldecoder(encoding)("strict")

    def first_invalid(self, data: bytes, position: int, final: bool) -> int | None:
        """Decode ``data`` (whose first byte is at ``position``): the absolute offset of
        the first byte that cannot be decoded, None if there is none."""
        try:
            self.decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            # The error counts from the bytes the decoder held back, before ``data``.
            held = len(exc.object) - len(data)
            return position - held + exc.start
        return None


class DoubtTracker:
    """Feed it the decoded stream's bytes; ``on_doubt`` is called at most once, with the
    ``EncodingDoubt`` (which ``feed`` also returns).  ``done``: nothing more can come.

    ``start`` is the offset of the first byte fed (the stream's first byte), ``limit``
    the offset where tracking ends (``max_lookahead`` after the decision).  The outcome
    does not depend on how the bytes are cut into chunks.
    """

    def __init__(self, chosen: str, *, start: int, limit: int, on_doubt: OnDoubt) -> None:
        self._on_doubt = on_doubt
        self.chosen = codecs.lookup(chosen).name
        self._chosen = _Strict(self.chosen)
        self._candidates = [_Strict(name) for name in doubt_candidates(self.chosen)]
        self._limit = limit
        self._position = start  # the next byte for the chosen decoder
        self._fed = start  # the next byte for the candidates, which lag behind
        self._tail = bytearray()  # the bytes from ``_fed`` on
        self._invalid: int | None = None
        self.done = False

    def feed(
        self, data: bytes | bytearray | memoryview, final: bool = False
    ) -> EncodingDoubt | None:
        if self.done:
            return None
        data = bytes(data)
        # No byte past ``_REACH`` after the limit is ever needed.
        self._tail += data[: max(0, self._limit + _REACH - self._position)]
        if self._invalid is None:
            part = data[: max(0, self._limit - self._position)]
            ends = final and len(part) == len(data)
            self._invalid = self._chosen.first_invalid(part, self._position, ends)
            self._position += len(data)
        if self._invalid is None:
            if final or self._position >= self._limit:
                self.done = True
                return None
            # The candidates lag ``_REACH`` bytes behind, so that none has gone past the
            # bytes it must decode when the chosen encoding fails.
            self._advance(len(self._tail) - _REACH, False)
            self.done = not self._candidates
            return None
        wanted = self._invalid + _REACH - self._fed
        if wanted > len(self._tail) and not final:
            self._advance(len(self._tail), False)
            self.done = not self._candidates
            return None
        self._advance(min(wanted, len(self._tail)), final and wanted >= len(self._tail))
        self.done = True
        if not self._candidates:
            return None
        doubt = EncodingDoubt(self._invalid, self.chosen, self._candidates[0].encoding)
        self._on_doubt(doubt)
        return doubt

    def _advance(self, count: int, final: bool) -> None:
        """Feed the candidates the next ``count`` bytes; drop those that fail."""
        if count <= 0 and not final:
            return
        piece = bytes(self._tail[: max(count, 0)])
        del self._tail[: len(piece)]
        self._candidates = [
            c for c in self._candidates if c.first_invalid(piece, self._fed, final) is None
        ]
        self._fed += len(piece)


def doubt_tracker(
    detection: Detection, *, start: int, max_lookahead: int, on_doubt: OnDoubt | None
) -> DoubtTracker | None:
    """The tracker of a decision for a caller that listens (``on_doubt``): None when no
    one does, or the decision rests on a byte-order mark."""
    if on_doubt is None or detection.encoding is None or detection.bom_length:
        return None
    limit = start + detection.looked_at + max_lookahead
    return DoubtTracker(detection.encoding, start=start, limit=limit, on_doubt=on_doubt)
