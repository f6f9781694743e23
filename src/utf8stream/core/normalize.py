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

The tables behind these rules are derived once, on first use, from ``unicodedata``:
composition pairs from the canonical decompositions of two characters that are their
own NFC (composition exclusions and singletons fall out), Hangul by its arithmetic.
Most code points have neither a decomposition mapping nor a non-zero combining class:
one call on a whole span proves that of all of it (``_busy``), so only the spans that
hold something are read a code point at a time.

A piece is normalized up to its last boundary, and the rest is carried.  The
accelerator's ``normalize_piece`` makes the output in one pass: the quick check of UAX 15
character by character (canonical order, and the form's quick-check property, derived
here from ``unicodedata``: no where a character is not its own normalization, maybe where
it composes with a character before it), ``unicodedata.normalize`` called only for the
segments around what it cannot pass, and one copy of the rest (none when the piece goes
out whole: it is handed through as it is).  Its flags are filled a block of 256 code
points at a time, the first time the pass meets one; in pure Python the piece is joined
to the carry and ``unicodedata.normalize`` does the quick check.

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

import functools
import itertools
import operator
import unicodedata
from array import array
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ._accel import implementation
from .transform import OnChange, TextChange, TransformCheckpoint, register_transform

__all__ = ["CGJ", "FORMS", "STREAM_SAFE_RUN", "Normalizer", "SegmentTooLongError"]

Form = Literal["NFC", "NFD", "NFKC", "NFKD"]
FORMS: tuple[Form, ...] = ("NFC", "NFD", "NFKC", "NFKD")
#: U+034F COMBINING GRAPHEME JOINER: what the stream-safe text process inserts.
CGJ = "\u034f"
#: The longest run of non-starters (counted in NFKD) the Stream-Safe Text Format allows.
STREAM_SAFE_RUN = 30
#: The most code points carried on stream-safe input.
STREAM_SAFE_CARRY = 32

_L, _V, _T, _S = 0x1100, 0x1161, 0x11A7, 0xAC00
_LN, _VN, _TN = 19, 21, 28
_HANGUL_L = frozenset(map(chr, range(_L, _L + _LN)))
_HANGUL_V = frozenset(map(chr, range(_V, _V + _VN)))
_HANGUL_T = frozenset(map(chr, range(_T + 1, _T + _TN)))
_HANGUL_LV = frozenset(chr(_S + i * _TN) for i in range(_LN * _VN))
_HANGUL_LVT = frozenset(chr(_S + i * _TN + t) for i in range(_LN * _VN) for t in range(1, _TN))


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


@dataclass(frozen=True)
class _Unicode:
    """What the tables are made from, read once from ``unicodedata``."""

    #: Canonical composition pairs (Hangul aside) -> their primary composite.
    pairs: dict[tuple[str, str], str]
    #: Every character with a decomposition or a non-zero combining class.
    special: frozenset[str]
    #: The non-starters.
    marks: frozenset[str]


#: Two marks of canonical combining classes ``0 < low < high`` and no decomposition,
#: that frame each code point in ``_busy``.
_HIGH, _LOW = "\u0345", "\u0334"


def _framed_planes() -> Iterator[str]:
    """Each plane's code points, each framed as ``_HIGH c _LOW``: one buffer of UTF-32-LE
    code units, its plane byte patched for each plane in turn."""
    framed = bytearray(12 * 0x10000)
    for at, unit in ((0, ord(_HIGH)), (8, ord(_LOW))):
        framed[at::12] = bytes((unit & 0xFF,)) * 0x10000
        framed[at + 1 :: 12] = bytes((unit >> 8,)) * 0x10000
    framed[4::12] = bytes(range(256)) * 256
    framed[5::12] = b"".join(bytes((high,)) * 256 for high in range(256))
    for plane in range(0x11):
        framed[6::12] = bytes((plane,)) * 0x10000
        yield framed.decode("utf-32-le", "surrogatepass")


def _busy(framed: str, first: int, stop: int, found: list[str]) -> None:
    """Append to ``found`` the code points from ``first`` to ``stop-1`` of the plane
    ``framed`` (from ``_framed_planes``) in runs of 16 that may have a decomposition
    mapping or a non-zero combining class, leaving out the rest in bulk.

    The framed span NFKD-normalized proves none of its code points has either.  No
    mapping: a character ``c`` that has one is replaced by its full decomposition, which
    holds no character with a mapping, so ``c`` cannot appear in ``NFKD(s)`` as often as
    in ``s``.  Class 0: with nothing decomposed, NFKD only sorts each run of non-starters
    by class.  A ``c`` of class 0 is a starter and moves nothing; one of class ``k > 0``
    sits between ``_HIGH`` and ``_LOW``, out of order when ``k < high`` or when
    ``k > low``, one of which holds since ``low < high``.
    """
    if unicodedata.is_normalized("NFKD", framed[3 * first : 3 * stop]):
        return
    if stop - first <= 16:
        found.append(framed[3 * first + 1 : 3 * stop : 3])
        return
    step = (stop - first) // 16
    for at in range(first, stop, step):
        _busy(framed, at, at + step, found)


@functools.cache
def _unicode() -> _Unicode:
    decomposition, combining = unicodedata.decomposition, unicodedata.combining
    found: list[str] = []
    usable = 0 < combining(_LOW) < combining(_HIGH)
    if usable and not (decomposition(_LOW) or decomposition(_HIGH)):
        for framed in _framed_planes():
            _busy(framed, 0, 0x10000, found)
    else:
        found.append(array("I", range(0x110000)).tobytes().decode("utf-32-le", "surrogatepass"))
    text = "".join(found)
    classes = list(map(combining, text))
    mappings = list(map(decomposition, text))
    marks = frozenset(itertools.compress(text, classes))
    pairs: dict[tuple[str, str], str] = {}
    for c, d in itertools.compress(zip(text, mappings, strict=True), mappings):
        if d[0] == "<":
            continue
        parts = d.split()
        if len(parts) == 2 and unicodedata.normalize("NFC", c) == c:
            pairs[chr(int(parts[0], 16)), chr(int(parts[1], 16))] = c
    return _Unicode(pairs, marks | frozenset(itertools.compress(text, mappings)), marks)


@dataclass(frozen=True)
class _Tables:
    """The boundary rules of one form (see the module's docstring)."""

    #: ``y`` -> ``None`` where ``first(y)`` is a non-starter, else the characters a
    #: ``last(x)`` must avoid for a boundary before ``y``; no entry: always a boundary.
    before: dict[str, frozenset[str] | None]
    #: ``x`` -> ``last(x)`` where they differ.
    last: dict[str, str]
    #: ``last(x)`` values after which a non-starter is not a boundary.
    open: frozenset[str]
    #: ``last(x)`` values after which some character is not a boundary.
    held: frozenset[str]


def _decompositions(kind: Form, chars: list[str]) -> list[str]:
    """``unicodedata.normalize(kind, c)`` of each of ``chars``, in one call where it can.

    Joined by U+0000 (a starter without a mapping, which reordering never crosses), the
    characters normalize to their own normalizations joined by it; as many pieces as
    characters shows that none of those held a U+0000, so each piece is its own.
    """
    pieces = unicodedata.normalize(kind, "\0".join(chars)).split("\0")
    if "\0" in chars or len(pieces) != len(chars):
        return [unicodedata.normalize(kind, c) for c in chars]
    return pieces


@functools.cache
def _tables(form: Form) -> _Tables:
    data = _unicode()
    compose = form in ("NFC", "NFKC")
    kind: Form = "NFKD" if form.startswith("NFK") else "NFD"
    pair_left: dict[str, set[str]] = {}
    with_mark: set[str] = set()
    pair_ends: dict[str, set[str]] = {}
    for (a, b), composite in data.pairs.items():
        pair_left.setdefault(b, set()).add(a)
        pair_ends.setdefault(b, set()).add(composite)
        if b in data.marks:
            with_mark.add(a)
    # The Hangul jamo of a kind share one set of partners (read only from here on).
    left: dict[str, Set[str]] = {**pair_left, **dict.fromkeys(_HANGUL_V, _HANGUL_L)}
    left.update(dict.fromkeys(_HANGUL_T, _HANGUL_LV))
    ends: dict[str, Set[str]] = {**pair_ends, **dict.fromkeys(_HANGUL_V, _HANGUL_LV)}
    ends.update(dict.fromkeys(_HANGUL_T, _HANGUL_LVT))
    need: dict[str, frozenset[str]] = {}
    opened = set(data.marks)
    if compose:
        made: dict[frozenset[str], frozenset[str]] = {}
        for b, partners in left.items():
            key = frozenset(partners)
            if key not in made:
                made[key] = frozenset(c for a in key for c in unicodedata.normalize("NFD", a))
            need[b] = made[key]
        opened |= with_mark
        opened |= {b for b, made in ends.items() if not made.isdisjoint(with_mark)}
    chars = list(data.special | _HANGUL_LV | _HANGUL_LVT | set(left))
    full = _decompositions(kind, chars)
    ends_of = list(map(operator.itemgetter(-1), full))
    changed = map(operator.ne, chars, ends_of)
    last = dict(itertools.compress(zip(chars, ends_of, strict=True), changed))
    firsts = list(map(operator.itemgetter(0), full))
    rule: dict[str, frozenset[str] | None] = {}
    for first in set(firsts):
        if unicodedata.combining(first):
            rule[first] = None
        elif first in need:
            rule[first] = need[first]
    keep = list(map(rule.__contains__, firsts))
    ruled = map(rule.__getitem__, itertools.compress(firsts, keep))
    before = dict(zip(itertools.compress(chars, keep), ruled, strict=True))
    held = frozenset(opened.union(*need.values()))
    return _Tables(before, last, frozenset(opened), held)


@dataclass(frozen=True)
class _StreamSafe:
    """NFKD non-starter counts for the stream-safe text process."""

    #: char -> (leading, trailing, no starter at all) for characters whose NFKD starts
    #: or ends with a non-starter; every other character sets the count to zero.
    counts: dict[str, tuple[int, int, bool]]
    #: A bitmap of the characters without a starter in their NFKD (bit ``cp & 7`` of byte
    #: ``cp >> 3``), and the shortest run of them a joiner might go in.
    members: bytes
    shortest: int


@functools.cache
def _stream_safe() -> _StreamSafe:
    counts: dict[str, tuple[int, int, bool]] = {}
    special = list(_unicode().special)
    for c, d in zip(special, _decompositions("NFKD", special), strict=True):
        flags = [unicodedata.combining(x) != 0 for x in d]
        if not (flags[0] or flags[-1]):
            continue
        lead = flags.index(False) if False in flags else len(d)
        trail = flags[::-1].index(False) if False in flags else len(d)
        counts[c] = (lead, trail, all(flags))
    most = max(max(lead, trail) for lead, trail, _ in counts.values())
    # A joiner goes before a character when the count reaches past the limit: at most
    # ``most`` before the run (a character's trailing non-starters) and ``most`` from
    # the character itself, so only a run of more pure non-starters can need one.
    shortest = (STREAM_SAFE_RUN - 2 * most) // most + 1
    members = bytearray(0x110000 >> 3)
    for c, (_, _, only) in counts.items():
        if only:
            members[ord(c) >> 3] |= 1 << (ord(c) & 7)
    return _StreamSafe(counts, bytes(members), shortest)


#: The flags of a code point in ``normalize_piece``'s table (core/_normpass.h): the form's
#: quick check is not yes, a non-starter, no starter in its NFKD, a boundary before it
#: depends on what precedes it; and the block is filled (a plain starter: that alone).
_CHANGES, _MARK, _ONLY, _JOINS, _FILLED = 0x01, 0x02, 0x04, 0x08, 0x80

#: ``normalize_piece``'s tables: flags, combining classes, what fills a block of both,
#: the form's ``unicodedata.normalize``, the stream-safe members' bitmap.
PieceTables: TypeAlias = tuple[
    bytearray, bytearray, Callable[[int], None], Callable[[str], str], bytes
]


@functools.cache
def _classes() -> bytearray:
    """The canonical combining class of each code point, filled with the flags."""
    return bytearray(0x110000)


@functools.cache
def _piece_tables(form: Form) -> PieceTables:
    rules = _tables(form)
    counts = _stream_safe().counts
    backward: frozenset[str] = frozenset()
    if form in ("NFC", "NFKC"):
        backward = frozenset(b for _, b in _unicode().pairs) | _HANGUL_V | _HANGUL_T
    flags = bytearray(0x110000)
    classes = _classes()
    normalize = functools.partial(unicodedata.normalize, form)
    combining = unicodedata.combining

    def fill(block: int) -> None:
        for cp in range(block << 8, (block + 1) << 8):
            c = chr(cp)
            ccc = combining(c)
            flag = _FILLED | (_MARK if ccc else 0)
            if c in backward or normalize(c) != c:
                flag |= _CHANGES
            if c in rules.before:
                flag |= _JOINS
            if counts.get(c, (0, 0, False))[2]:
                flag |= _ONLY
            classes[cp] = ccc
            flags[cp] = flag

    return flags, classes, fill, normalize, _stream_safe().members


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
        self._rules = _tables(self.form)
        self._tables = _piece_tables(self.form)
        self._safe = _stream_safe() if stream_safe else None
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
                out = self._impl.normalize_piece(head, joined, cut, self._tables, shortest)
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

    def _stream_safe(self, safe: _StreamSafe, text: str) -> tuple[str, list[int], int, int]:
        """``text`` (not ASCII) after the stream-safe process, the joiners' indices, the
        count after it, and the run of non-starters ``normalize_piece`` must look for.

        Only where the count goes on from the last piece or on to the next is the
        process run here; elsewhere a joiner is only ever needed in a run the pass finds.
        """
        if (self._run and text[0] in safe.counts) or text[-1] in safe.counts:
            return (*_insert_joiners(safe, text, self._run), 0)
        return text, [], 0, safe.shortest

    def _past_carry(self, text: str, cut: int, shortest: int) -> int | None:
        """Where ``text`` has no boundary (``cut`` -1) or more after its last than
        ``max_carry``: the index of a run of ``shortest`` non-starters (the joiners go
        first), else None when all of it can be carried, else ``SegmentTooLongError``."""
        if shortest:
            at: int = self._impl.find_run(text, self._tables[4], shortest, 0)
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

    def _boundary(self, x: str, y: str) -> bool:
        rules = self._rules
        avoid = rules.before.get(y, False)
        if avoid is False:
            return True
        end = rules.last.get(x, x)
        if avoid is None:
            return end not in rules.open
        assert isinstance(avoid, frozenset)
        return end not in avoid

    def _last_boundary(self, text: str) -> int:
        """Where the last boundary in ``text`` is (carry before it), -1 for none."""
        if not text:
            return 0 if not self._pending else -1
        rules = self._rules
        end = text[-1]
        if rules.last.get(end, end) not in rules.held:
            return len(text)
        i = len(text) - 1
        while i > 0:
            if self._boundary(text[i - 1], text[i]):
                return i
            i -= 1
        if not self._pending:
            return 0
        return 0 if self._boundary(self._pending[-1][-1], text[0]) else -1

    def _report(self, emit: str, offset: int, inserted: list[int]) -> None:
        """One event for each segment of ``emit`` that normalizing changed."""
        assert self.on_change is not None
        cuts = [0]
        cuts += [i for i in range(1, len(emit)) if self._boundary(emit[i - 1], emit[i])]
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


def _insert_joiners(safe: _StreamSafe, text: str, run: int) -> tuple[str, list[int], int]:
    """``text`` after the stream-safe text process, from a count of ``run``.

    Returns the text, the indices (in the text returned) of the joiners put in, and the
    count after it.  Only the runs without a starter that could need a joiner, the run
    at the start (the count goes on from the last piece) and the run at the end (the
    count the next piece starts from) are walked in Python.
    """
    counts = safe.counts
    spans: list[tuple[int, int]] = []

    def around(a: int, b: int) -> None:
        while a > 0 and text[a - 1] in counts:
            a -= 1
        while b < len(text) and text[b] in counts:
            b += 1
        spans.append((a, b))

    if run and text and text[0] in counts:
        around(0, 1)
    find_run = implementation().find_run
    at = find_run(text, safe.members, safe.shortest, 0)
    while at >= 0:
        around(at, at + safe.shortest)
        at = find_run(text, safe.members, safe.shortest, spans[-1][1])
    if text and text[-1] in counts:
        around(len(text) - 1, len(text))
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
