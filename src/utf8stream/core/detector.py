"""Which encoding a byte stream is in, decided from as few bytes as make it safe.

``EncodingDetector`` is a state machine like the decoder: no I/O, bytes in, a decision out.
It takes its decision at fixed points of the input (after 64, 256, 1,024 and 4,096
bytes, then at each doubling, and at ``max_lookahead``), never at the edges of the chunks
it is given, so that a decision, the bytes it looked at and the bytes it hands back for
replay are the same however the input was cut.  A byte-order mark decides at once.

The rules, in order:

1. A byte-order mark (UTF-8, UTF-16 and UTF-32 in either byte order) decides.
2. Input without NUL bytes, or whose NUL bytes are all in runs of four or more
   (padding): nothing above 7F is UTF-8 (ASCII), unless it holds the escape
   sequences of ISO-2022-JP; valid UTF-8 with bytes above 7F is UTF-8.  Always.
3. Otherwise every other candidate is ruled out by the first bytes it cannot decode (an
   invalid multi-byte sequence; a byte a code page leaves undefined); NUL bytes rule out
   all but UTF-16 and UTF-32.  Those left are scored by the likelihood of their decoded
   text in the languages written in them (``_detector_score``).
4. Nothing left, or a best candidate whose text is more than a twentieth controls and
   unassigned characters: not text (``encoding`` None).
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

from . import _accel
from . import _detector_native as counting
from . import _detector_score as scoring

__all__ = ["DEFAULT_MAX_LOOKAHEAD", "Detection", "EncodingDetector", "detect"]

DEFAULT_MAX_LOOKAHEAD = 65536

#: Runs of NUL bytes no UTF-16 or UTF-32 text holds: padding.
_PADDING = re.compile(b"\x00{4,}")
#: The first points where the detector decides; then at twice the last point: a decision
#: the bytes so far leave open costs a scoring pass per point.
_FIRST_POINTS = (64, 256, 1024, 4096)
#: Statistics decide before ``max_lookahead`` only from this many bytes on, and only as
#: sure as this.
_EARLY_STATISTICS, _EARLY_CONFIDENCE = 1024, 0.99
#: Valid UTF-8 decides before the end from this many multi-byte sequences on.
_EARLY_UTF8 = 4

#: Byte-order marks, longest first where one begins another.
_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)
_BOM_FIRST_BYTES = frozenset(mark[0] for mark, _ in _BOMS)
#: What designates a double-byte set in ISO-2022-JP (JIS X 0208 and 0212).
_ISO2022_JP = (b"\x1b$B", b"\x1b$@", b"\x1b$(D")


@dataclass(frozen=True)
class Detection:
    """What the detector decided.

    ``encoding``: a Python codec name as ``codecs.lookup(name).name`` spells it, or None
    for input that is not text.  ``bom_length``: the bytes of a byte-order mark at the
    start, which a decoder of ``encoding`` skips.  ``looked_at``: how many bytes of the
    input the decision rests on (those ``EncodingDetector.buffered()`` hands back).
    ``reason``: why, in words.
    """

    encoding: str | None
    confidence: float
    looked_at: int
    reason: str
    bom_length: int = 0

    @property
    def is_text(self) -> bool:
        return self.encoding is not None


def _bom(prefix: bytes | bytearray, final: bool) -> tuple[Detection | None, bool]:
    """The decision of a byte-order mark at the start of ``prefix``, taken at the
    shortest length that settles it, and whether the question is settled (False: more
    bytes may still make or lengthen a mark)."""
    if prefix and prefix[0] not in _BOM_FIRST_BYTES:
        return None, True
    for length in range(1, min(len(prefix), 4) + 1):
        head = bytes(prefix[:length])
        matching = [(m, e) for m, e in _BOMS if head.startswith(m) or m.startswith(head)]
        if any(len(m) > length for m, _ in matching) and not (final and length == len(prefix)):
            continue
        for mark, encoding in matching:
            if head.startswith(mark):
                reason = f"byte-order mark {mark.hex(' ')}"
                return Detection(encoding, 1.0, length, reason, len(mark)), True
        return None, True
    return None, final


class EncodingDetector:
    """Feed bytes until a ``Detection`` comes back; ``finish()`` at the end of the input.

    The detector holds at most ``max_lookahead`` bytes and decides at the latest when it
    has them.  Once decided, the bytes the decision rests on are ``buffered()``: replay them
    into the chosen decoder, then the bytes of the last chunk fed that came after them
    (``feed`` looks no further than the point it decided at: of ``total`` bytes fed in all,
    the last ``total - detection.looked_at`` are the caller's to pass on).
    """

    def __init__(self, max_lookahead: int = DEFAULT_MAX_LOOKAHEAD) -> None:
        if max_lookahead < 4:
            raise ValueError(f"max_lookahead must be at least 4, not {max_lookahead}")
        self.max_lookahead = max_lookahead
        self._buffer = bytearray()
        self._decision: Detection | None = None
        self._bom_settled = False
        self._next_point = min(_FIRST_POINTS[0], max_lookahead)
        self._state: _Evidence | None = _Evidence()

    @property
    def looked_at(self) -> int:
        """The bytes looked at so far (once decided, those the decision rests on)."""
        return len(self._buffer)

    @property
    def decision(self) -> Detection | None:
        """The decision, once taken (what ``feed`` returned, or ``finish``)."""
        return self._decision

    def buffered(self) -> bytes:
        """The bytes looked at, from the start of the input."""
        return bytes(self._buffer)

    def feed(self, data: bytes) -> Detection | None:
        """Look at more of the input; the decision as soon as it is safe, else None."""
        if self._decision is not None or self._state is None:
            return self._decision
        # The bytes fed are buffered only as far as each step looks: a decision taken
        # early copies no more of a long chunk.
        fed = memoryview(data)[: self.max_lookahead - len(self._buffer)]
        start = len(self._buffer)
        end = start + len(fed)
        if not self._bom_settled:
            self._buffer += fed[: max(0, 4 - start)]
            found, self._bom_settled = _bom(self._buffer, final=False)
            if found is not None:
                return self._decide(found)
        while self._bom_settled and self._next_point <= end:
            point = self._next_point
            self._buffer += fed[len(self._buffer) - start : point - start]
            found = self._state.evaluate(self._buffer, point, point == self.max_lookahead)
            if found is not None:
                return self._decide(found)
            self._next_point = _after(point, self.max_lookahead)
        self._buffer += fed[len(self._buffer) - start :]
        return None

    def finish(self) -> Detection:
        """Decide on what there is (the end of the input, or all the caller will give)."""
        if self._decision is not None:
            return self._decision
        if not self._bom_settled:
            found, self._bom_settled = _bom(self._buffer, final=True)
            if found is not None:
                return self._decide(found)
        assert self._state is not None  # dropped only once decided
        found = self._state.evaluate(self._buffer, len(self._buffer), True)
        assert found is not None
        return self._decide(found)

    def _decide(self, detection: Detection) -> Detection:
        del self._buffer[detection.looked_at :]
        self._decision = detection
        self._state = None  # what led here is no longer needed
        return detection


def _after(point: int, limit: int) -> int:
    later = [p for p in _FIRST_POINTS if p > point]
    return min(later[0] if later else point * 2, limit)


def _padding_only(buffer: bytearray, point: int) -> bool:
    """Whether every NUL byte of ``buffer[:point]`` is in a run of four or more, around
    other bytes: padding (a log after a crash, a preallocated file).  UTF-16 and UTF-32
    text puts at most three in a row, but for U+0000 itself."""
    rest = _PADDING.sub(b"", bytes(buffer[:point]))
    return bool(rest) and b"\x00" not in rest  # NUL bytes alone are no text


def detect(data: bytes, max_lookahead: int = DEFAULT_MAX_LOOKAHEAD) -> Detection:
    """The decision on ``data`` as a whole input (its first ``max_lookahead`` bytes)."""
    detector = EncodingDetector(max_lookahead)
    found = detector.feed(data)
    return found if found is not None else detector.finish()


class _Evidence:
    """What the bytes up to the last decision point showed: byte counts, whether they are
    UTF-8, and each multi-byte candidate's decoder."""

    def __init__(self) -> None:
        #: What counts (the accelerator or its pure twin), chosen once.
        self.kernel = _accel.implementation()
        self.seen = 0
        #: Where the multi-byte candidates and the runs of bytes above 7F stand: gathered
        #: only when statistics are asked for (ASCII alone, or valid UTF-8, never asks).
        self.decoded = 0
        #: The byte counts (``_detector_native``: NUL and each byte above 7F, the ASCII
        #: bytes by class up to ``seen``; the runs of bytes above 7F up to ``decoded``); the
        #: bytes above 7F seen, as a bit mask; pairs of bytes above 7F, and the first two
        #: bytes of the runs of them that no ASCII letter precedes.
        self.counts = counting.new_evidence()
        self.high_mask = 0
        self.pairs: dict[int, int] = {}
        self.starts: dict[int, int] = {}
        self.utf8 = scoring.MultiByteCandidate("utf-8", self.kernel, counting=False)
        #: Made when statistics are first asked for.
        self.multi: list[scoring.MultiByteCandidate] = []

    def evaluate(self, buffer: bytearray, point: int, final: bool) -> Detection | None:
        """The decision on ``buffer[:point]``; None while it is not yet safe, never None
        when ``final``."""
        segment = bytes(buffer[self.seen : point])
        self.high_mask |= self.kernel.count_bytes(segment, self.counts)
        self.utf8.advance(segment, self.seen)
        self.seen = point
        nul = self.counts[counting.EVIDENCE_HISTOGRAM] > 0
        if nul and self.utf8.ruled_out_at is None and _padding_only(buffer, point):
            # Text padded with NUL bytes: they are ASCII, and no UTF-16 or UTF-32 unit.
            nul = False
        if not nul:
            found = self._unicode_rules(buffer, point, final)
            ascii_or_utf8 = self.utf8.ruled_out_at is None
            if found is not None or ascii_or_utf8 or (not final and point < _EARLY_STATISTICS):
                return found
        return self._statistics(buffer, point, final, nul)

    def _unicode_rules(self, buffer: bytearray, point: int, final: bool) -> Detection | None:
        counts = self.counts
        if not self.high_mask:
            head = bytes(buffer[:point])
            if any(mark in head for mark in _ISO2022_JP) and self._alive(
                buffer, point, "iso2022_jp"
            ):
                why = "ISO-2022-JP escape sequences, no byte above 7F"
                return Detection("iso2022_jp", 0.99, point, why)
            if final:
                return Detection("utf-8", 1.0, point, "ASCII only: no byte above 7F")
            return None
        if self.utf8.ruled_out_at is None:
            sequences = sum(
                counts[counting.EVIDENCE_HISTOGRAM + 0xC2 : counting.EVIDENCE_HISTOGRAM + 0xF5]
            )
            if final or sequences >= _EARLY_UTF8:
                confidence = 1 - 0.2 * 0.5 ** (sequences - 1)
                plural = "s" if sequences > 1 else ""
                why = f"valid UTF-8 with {sequences} multi-byte sequence{plural}"
                return Detection("utf-8", round(confidence, 4), point, why)
        return None

    def _decode_to(self, buffer: bytearray, point: int) -> None:
        """Bring the multi-byte candidates and the code pages' evidence up to ``point``."""
        segment = bytes(buffer[self.decoded : point])
        if not self.multi:
            names = scoring.MULTI_BYTE + scoring.WIDE
            self.multi = [scoring.MultiByteCandidate(name, self.kernel) for name in names]
        for candidate in self.multi:
            if candidate.ruled_out_at is None:
                candidate.advance(segment, self.decoded)
        flags = scoring.code_page_flags()
        self.kernel.count_runs(segment, self.counts, self.pairs, self.starts, flags)
        self.decoded = point

    def _alive(self, buffer: bytearray, point: int, encoding: str) -> bool:
        self._decode_to(buffer, point)
        return any(c.encoding == encoding and c.ruled_out_at is None for c in self.multi)

    def _statistics(
        self, buffer: bytearray, point: int, final: bool, nul: bool
    ) -> Detection | None:
        self._decode_to(buffer, point)
        alive = [c for c in self.multi if c.ruled_out_at is None]
        # UTF-16 without a NUL byte holds no ASCII character (no space, digit or line
        # end): it is weighed where it reads as an East Asian script, or where nothing
        # narrower reads as text.
        wide = [c for c in alive if c.wide]
        multi = wide if nul else [c for c in alive if not c.wide]
        if not nul:
            share = scoring.EAST_ASIAN_SHARE
            multi += [c for c in wide if c.east_asian >= share * max(1, c.chars)]
        mask = self.high_mask
        pages = [] if nul else [n for n, m in scoring.UNDEFINED.items() if not mask & m]
        names = [c.encoding for c in multi] + pages or [c.encoding for c in wide]
        # Before statistics may decide, only a choice left by elimination alone is taken.
        early = names and not final and point < _EARLY_STATISTICS
        if early and not all(self._same_text(name, names[0]) for name in names):
            return None
        scores = self._scores(buffer, multi, pages)
        texts = _texts(scores)
        if not texts and not nul and wide and not all(c in multi for c in wide):
            scores = self._scores(buffer, wide, [])
            texts = _texts(scores)
        if not scores:
            why = "NUL bytes in no UTF-16 or UTF-32 pattern" if nul else "nothing decodes"
            return Detection(None, 0.99, point, f"{why}; {self._ruled_out(nul)}")
        # A candidate whose text is mostly controls and unassigned characters is no text,
        # however cheap (a few wide characters cost less than more narrow ones).
        if not texts:
            if not final and point < _EARLY_STATISTICS:
                return None
            best = scores[0]
            why = f"{best.bad} of {best.chars} characters are controls or unassigned"
            return Detection(None, 0.9, point, f"{why} in the best candidate, {best.encoding}")
        scores = texts
        best = scores[0]
        # Encodings that decode the bytes seen to the same text are one choice: the more
        # common of them is named; the others are rivals.
        alike: list[scoring.Score] = []
        rivals: list[scoring.Score] = []
        same_text = self._same_text
        for s in scores:
            (alike if same_text(s.encoding, best.encoding) else rivals).append(s)
        best = min(
            alike,
            key=lambda s: (
                scoring.PRIOR.get(s.encoding, scoring.OTHER_PRIOR),
                s.order,
            ),
        )
        # Code pages of the same languages that read some letter differently and the
        # bytes seen alike: the bytes that tell them apart may come yet.
        if not final and any((s.encoding, best.encoding) in scoring.TWINS for s in alike):
            return None
        margin = rivals[0].cost - scores[0].cost if rivals else math.inf
        confidence = round(1 - 0.5 * math.exp(-margin / 8), 4) if rivals else 0.99
        confidence = min(confidence, 0.99)
        one_family = not rivals
        early = point >= _EARLY_STATISTICS and confidence >= _EARLY_CONFIDENCE
        if not final and not one_family and not early:
            return None
        chose = f"statistics: {best.encoding} reads as {best.language or 'text'}"
        if rivals:
            chose += f", {margin:.0f} nats likelier than {rivals[0].encoding}"
        return Detection(best.encoding, confidence, point, f"{self._ruled_out(nul)}; {chose}")

    def _scores(
        self, buffer: bytearray, multi: list[scoring.MultiByteCandidate], pages: list[str]
    ) -> list[scoring.Score]:
        """The candidates' scores on ``buffer`` up to the last point, cheapest first."""
        scores = [c.score(buffer) for c in multi]
        if pages:
            evidence = scoring.ByteEvidence.of(self.counts, self.pairs, self.starts, self.kernel)
            scores += scoring.score_code_pages(pages, evidence)
        scores.sort(key=_cost_order)
        return scores

    def _same_text(self, one: str, other: str) -> bool:
        """Whether two candidates decode the bytes seen to the same text."""
        differ = scoring.DIFFER.get((one, other))
        if differ is not None:
            return not self.high_mask & differ
        return scoring.FAMILY.get(one, one) == scoring.FAMILY.get(other, other)

    def _ruled_out(self, nul: bool) -> str:
        """What ruled which candidates out, in a few words: the first invalid bytes and
        how many encodings they ruled out, the code pages that leave a byte undefined."""
        out = [c for c in (self.utf8, *self.multi) if c.ruled_out_at is not None]
        mask = self.high_mask
        pages = [n for n, m in scoring.UNDEFINED.items() if nul or mask & m]
        parts = []
        if out:
            # UTF-8 first, else the first ruled out.
            first = out[0] if out[0] is self.utf8 else min(out, key=_ruled_out_at)
            more = f" and {len(out) - 1} more" if len(out) > 1 else ""
            parts.append(
                f"invalid bytes rule out {first.encoding} (at byte {first.ruled_out_at}){more}"
            )
        if pages:
            why = "NUL bytes rule out" if nul else "undefined bytes rule out"
            named = f"{len(pages)} code pages" if len(pages) > 3 else ", ".join(pages)
            parts.append(f"{why} {named}")
        return "; ".join(parts) or "nothing ruled out"


_ruled_out_at = operator.attrgetter("ruled_out_at")
#: Candidates cheapest first, ties broken by their order.
_cost_order = operator.attrgetter("cost", "order")


def _texts(scores: list[scoring.Score]) -> list[scoring.Score]:
    """The candidates at most ``BAD_SHARE`` of whose characters are not text."""
    share = scoring.BAD_SHARE
    return [s for s in scores if s.bad <= share * max(1, s.chars)]
