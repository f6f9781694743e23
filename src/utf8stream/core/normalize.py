"""Unicode normalization (NFC, NFD, NFKC, NFKD) of text that comes in pieces.

Theory of operation.  ``unicodedata.normalize`` of the running interpreter does the
normalizing (so the Unicode version is ``unicodedata.unidata_version``); this module only
decides where a piece may be cut.  A *boundary* between two characters ``x`` and ``y``
is a place where normalizing the text before it and the text after it apart gives the
normalization of the whole (UAX 15).  With ``first(y)`` the first character of ``y``'s
full decomposition (canonical for NFC/NFD, compatibility for NFKC/NFKD) and ``last(x)``
the last of ``x``'s, there is a boundary between them when

* ``first(y)`` is a starter (canonical combining class 0) that composes with nothing
  before it: reordering never crosses a starter, and nothing before can compose with it;
* or ``first(y)`` is a starter that composes backwards (a Hangul vowel or trailing jamo,
  U+0B3E and its kind) but ``last(x)`` is in the decomposition of none of the characters
  it composes with: whatever ``x`` ended up in cannot be its partner;
* or ``first(y)`` is a non-starter and ``last(x)`` is a starter that nothing which could
  end with it composes with a non-starter (so ``y`` cannot reorder past it, nor compose
  with it); for NFD and NFKD, any starter.

The tables behind these rules are read from ``unicodedata`` (core/_normtables.py):
composition pairs from the canonical decompositions of two characters that are their
own NFC (composition exclusions and singletons fall out), Hangul by its arithmetic, once
a process from the few characters that have a mapping; the rest a block of 256 code
points at a time, the first time a character of the block is met.

A piece is normalized up to its last boundary, and the rest is carried.  The
accelerator's ``normalize_piece`` makes the output in one pass: the quick check of UAX 15
character by character (canonical order, and the form's quick-check property, derived
here from ``unicodedata``: no where a character is not its own normalization, maybe where
it composes with a character before it), ``unicodedata.normalize`` called only for the
segments around what it cannot pass, and one copy of the rest (none when the piece goes
out whole: it is handed through as it is).  The pass fills the blocks it meets; in pure
Python the piece is joined to the carry and ``unicodedata.normalize`` does the quick
check.

Between two boundaries there is a starter, or two that compose into one a non-starter
still composes with (U+0DD9 U+0DCF, then U+0DCA), and the non-starters after them, so
input in the Stream-Safe Text Format (at most 30 non-starters in a row, counted in NFKD)
carries at most 32 code points.  For
longer runs UAX 15's stream-safe text process inserts U+034F COMBINING GRAPHEME JOINER
into the input first, which keeps the carry bounded for any input;
``stream_safe=False`` normalizes exactly and refuses, with ``SegmentTooLongError``, a
segment longer than ``max_carry``.
"""

from __future__ import annotations

import itertools
import unicodedata

from ._accel import implementation
from ._normtables import STREAM_SAFE_RUN, Form, Rules, StreamSafe, form_rules, stream_safe_counts
from .transform import OnChange, TextChange, TransformCheckpoint, register_transform

__all__ = ["CGJ", "FORMS", "STREAM_SAFE_RUN", "Normalizer", "SegmentTooLongError"]

FORMS: tuple[Form, ...] = ("NFC", "NFD", "NFKC", "NFKD")
#: U+034F COMBINING GRAPHEME JOINER: what the stream-safe text process inserts.
CGJ = "\u034f"
#: The most code points carried on stream-safe input.
STREAM_SAFE_CARRY = 32


class SegmentTooLongError(ValueError):
    """A normalization segment ran past ``max_carry`` with ``stream_safe=False``.

    ``offset`` is where the segment starts in the input, ``length`` how long it had got;
    the call that raised had no effect on the normalizer.
    """

    def __init__(self, offset: int, length: int, max_carry: int) -> None:
        super().__init__(
            f"a normalization segment at input offset {offset} is {length} code points long,"
            f" past max_carry={max_carry} (more than {STREAM_SAFE_RUN} non-starters in a"
            " row): use stream_safe=True or a larger max_carry"
        )
        self.offset = offset
        self.length = length
        self.max_carry = max_carry


class Normalizer:
    """Normalize text to ``form`` (NFC, NFD, NFKC or NFKD) piece by piece.

    For every way of cutting a text, the output is ``unicodedata.normalize(form, text)``
    of the running interpreter (Unicode ``unicodedata.unidata_version``) where the text
    has at most 30 non-starters in a row; with ``stream_safe`` (the default) longer runs
    get U+034F inserted first as UAX 15's stream-safe text process says (each insertion
    an event of kind ``"stream-safe"``), so at most 32 code points are ever carried.
    With ``stream_safe=False`` the output is exact for any segment of up to ``max_carry``
    code points and ``SegmentTooLongError`` is raised past it.  Each changed segment is
    an event of kind ``"normalized"`` (offsets in the input, the output).
    """

    def __init__(
        self,
        form: str = "NFC",
        *,
        stream_safe: bool = True,
        max_carry: int = STREAM_SAFE_CARRY,
        on_change: OnChange | None = None,
    ) -> None:
        if form not in FORMS:
            raise ValueError(f"form must be one of {', '.join(FORMS)}, not {form!r}")
        if max_carry < (STREAM_SAFE_CARRY if stream_safe else 1):
            raise ValueError(
                f"max_carry must be at least {STREAM_SAFE_CARRY} with stream_safe"
                " (at least 1 without)"
            )
        self.form: Form = form
        self.stream_safe = stream_safe
        self._max_carry = max_carry
        self.on_change = on_change
        self._rules: Rules = form_rules(self.form)
        self._safe = stream_safe_counts() if stream_safe else None
        self._impl = implementation()
        self.position = 0
        self.output_position = 0
        self._pending: list[str] = []
        self._pending_len = 0
        self._run = 0

    @property
    def max_carry(self) -> int:
        """The most input, in code points, carried between calls."""
        return self._max_carry

    @property
    def carry(self) -> str:
        """The input held back: the segment the next piece may still change."""
        return "".join(self._pending)

    def transform(self, text: str, final: bool = False) -> str:
        """The normalized text up to ``text``'s last boundary (all of it with ``final``)."""
        if not text and not final:
            return ""
        start, carried = self.position, self._pending_len
        inserted: list[int]
        if self._safe is None or text.isascii():
            joined, inserted, run, shortest = text, [], self._run if not text else 0, 0
        else:
            joined, inserted, run, shortest = self._stream_safe(self._safe, text)
        out: str | int | None
        while True:
            cut = len(joined) if final else self._last_boundary(joined)
            if cut >= 0 and len(joined) - cut <= self._max_carry:
                head = "".join(self._pending) if carried else ""
                out = self._impl.normalize_piece(head, joined, cut, self._rules.tables, shortest)
            else:
                out = self._past_carry(joined, cut, shortest)
            if not isinstance(out, int):
                break
            # A run long enough to need a joiner: the stream-safe process goes first.
            assert self._safe is not None
            joined, inserted, run = _insert_joiners(self._safe, text, self._run)
            shortest = 0
        self.position, self._run = start + len(text), run
        if out is None:
            self._pending.append(joined)
            self._pending_len += len(joined)
            return ""
        if self.on_change is not None:
            emit = self._impl.join_cut(self.carry, joined, cut)
            if inserted or out != emit:
                self._report(emit, start - carried, [i + carried for i in inserted if i < cut])
        rest = joined[cut:] if cut < len(joined) else ""
        self._pending = [rest] if rest else []
        self._pending_len = len(rest)
        self.output_position += len(out)
        if final:
            self._run = 0
        return out

    def _stream_safe(self, safe: StreamSafe, text: str) -> tuple[str, list[int], int, int]:
        """``text`` (not ASCII) after the stream-safe process, the joiners' indices, the
        count after it, and the run of non-starters ``normalize_piece`` must look for.

        Only where the count goes on from the last piece or on to the next is the
        process run here; elsewhere a joiner is only ever needed in a run the pass finds.
        """
        if (self._run and safe.counted(text[0])) or safe.counted(text[-1]):
            return (*_insert_joiners(safe, text, self._run), 0)
        return text, [], 0, safe.shortest

    def _past_carry(self, text: str, cut: int, shortest: int) -> int | None:
        """Where ``text`` has no boundary (``cut`` -1) or more after its last than
        ``max_carry``: the index of a run of ``shortest`` non-starters (the joiners go
        first), else None when all of it can be carried, else ``SegmentTooLongError``."""
        if shortest:
            at: int = self._impl.find_run(text, self._rules.tables[4], shortest, 0)
            if at >= 0:
                return at
        carried = self._pending_len
        if cut >= 0:
            self._refuse(self.position + cut, len(text) - cut)
        if carried + len(text) > self._max_carry:
            self._refuse(self.position - carried, carried + len(text))
        return None

    def _refuse(self, offset: int, length: int) -> None:
        raise SegmentTooLongError(offset, length, self._max_carry)

    def _last_boundary(self, text: str) -> int:
        """Where the last boundary in ``text`` is (carry before it), -1 for none."""
        if not text:
            return 0 if not self._pending else -1
        rules = self._rules
        if not rules.holds(text[-1]):
            return len(text)
        i = len(text) - 1
        while i > 0:
            if rules.boundary(text[i - 1], text[i]):
                return i
            i -= 1
        if not self._pending:
            return 0
        return 0 if rules.boundary(self._pending[-1][-1], text[0]) else -1

    def _report(self, emit: str, offset: int, inserted: list[int]) -> None:
        """One event for each segment of ``emit`` that normalizing changed."""
        assert self.on_change is not None
        cuts = [0]
        boundary = self._rules.boundary
        cuts += [i for i in range(1, len(emit)) if boundary(emit[i - 1], emit[i])]
        cuts.append(len(emit))
        joiners = set(inserted)
        skipped = 0
        at = self.output_position
        for a, b in itertools.pairwise(cuts):
            segment = emit[a:b]
            if a in joiners:
                self.on_change(TextChange(offset + a - skipped, "", CGJ, at, "stream-safe"))
                skipped += 1
                segment = segment[1:]
                at += 1
            done = unicodedata.normalize(self.form, segment)
            if done != segment:
                origin = offset + a + (1 if a in joiners else 0) - skipped
                self.on_change(TextChange(origin, segment, done, at, "normalized"))
            at += len(done)

    def checkpoint(self) -> TransformCheckpoint:
        """Where this normalizer stands (the carry, the stream-safe count)."""
        return TransformCheckpoint(
            "normalize",
            self.position,
            self.output_position,
            self.carry,
            {"form": self.form, "stream_safe": self.stream_safe, "max_carry": self._max_carry},
            {"run": self._run},
        )

    def reset(self) -> None:
        """Drop the carry; positions start again from zero."""
        self.position = self.output_position = 0
        self._pending, self._pending_len, self._run = [], 0, 0

    @classmethod
    def from_checkpoint(
        cls, checkpoint: TransformCheckpoint, on_change: OnChange | None = None
    ) -> Normalizer:
        """A normalizer going on where ``checkpoint`` was taken."""
        if checkpoint.kind != "normalize":
            raise ValueError(f"not a normalizer's checkpoint: {checkpoint.kind!r}")
        options = dict(checkpoint.options)
        built = cls(
            str(options.get("form", "NFC")),
            stream_safe=bool(options.get("stream_safe", True)),
            max_carry=int(options.get("max_carry", STREAM_SAFE_CARRY)),
            on_change=on_change,
        )
        built.position = checkpoint.position
        built.output_position = checkpoint.output_position
        built._pending = [checkpoint.carry] if checkpoint.carry else []
        built._pending_len = len(checkpoint.carry)
        built._run = int(checkpoint.state.get("run", 0))
        return built


register_transform("normalize", Normalizer.from_checkpoint)


def _insert_joiners(safe: StreamSafe, text: str, run: int) -> tuple[str, list[int], int]:
    """``text`` after the stream-safe text process, from a count of ``run``.

    Returns the text, the indices (in the text returned) of the joiners put in, and the
    count after it.  Only the runs without a starter that could need a joiner, the run
    at the start (the count goes on from the last piece) and the run at the end (the
    count the next piece starts from) are walked in Python.
    """
    counts, counted, shortest = safe.counts, safe.counted, safe.shortest
    spans: list[tuple[int, int]] = []

    def around(i: int) -> int:
        """The whole run of counted characters through ``i`` in ``spans``; its end."""
        a, b = i, i + 1
        while a > 0 and counted(text[a - 1]):
            a -= 1
        while b < len(text) and counted(text[b]):
            b += 1
        spans.append((a, b))
        return b

    if run and text and counted(text[0]):
        around(0)
    find_run = implementation().find_run
    at = find_run(text, safe.members, shortest, 0)
    while at >= 0:
        # The bitmap says "maybe" for blocks not read yet: each character is read.
        i = at
        while i < at + shortest:
            i = around(i) if counted(text[i]) else i + 1
        at = find_run(text, safe.members, shortest, i)
    if text and counted(text[-1]):
        around(len(text) - 1)
    if not spans:
        return text, [], 0
    pieces: list[str] = []
    inserted: list[int] = []
    written = 0
    done = 0
    count = 0
    for a, b in sorted(set(spans)):
        # Each span is a whole run of counted characters: the one before it (if any)
        # set the count to zero.
        pieces.append(text[done:a])
        written += a - done
        count = run if a == 0 else 0
        start = a
        for i in range(a, b):
            lead, trail, only = counts[text[i]]
            if count + lead > STREAM_SAFE_RUN:
                pieces.append(text[start:i])
                written += i - start
                inserted.append(written)
                pieces.append(CGJ)
                written += 1
                start, count = i, 0
            count = count + lead if only else trail
        pieces.append(text[start:b])
        written += b - start
        done = b
    pieces.append(text[done:])
    return "".join(pieces), inserted, count if done == len(text) else 0
