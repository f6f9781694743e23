"""The UTF-8 variants as a policy over the one UTF-8 scanner (C or Python).

``VariantScanner`` reads a variant of ``variants.py`` (WTF-8, CESU-8, MUTF-8, UTF-8Z),
or UTF-8 with ``errors="surrogatepass"``, and implements the ``Scanner`` seam of
``scanner.py`` by wrapping a plain UTF-8 scanner of the implementation in use, so that
the variants decode their valid runs at the accelerator's speed and no third scanner
exists.

Why that is enough: everything a variant reads differently from UTF-8 is malformed for
UTF-8.  Its *items* of its own, a complete surrogate half ED A0..BF 80..BF (three UTF-8
units: ED, A0, 80) and C0 80 (two), are found by C-speed searches (``bytes.find``, then
a regular expression from the first ED) and decided here, from the original bytes: a
character (U+0000, a lone half, a CESU-8 pair joined into one supplementary character)
or a malformed unit of the variant's.  The stretches between them go to the inner
scanner, made *mapping* (no constant replacement), whose callback (``_VariantUnits``)
re-reads each of its units with the variant's table: a variant's malformed unit is a
lead byte and continuation bytes, where UTF-8 accepts no more of them after a lead than
the variant does, so it starts and ends where UTF-8 units start and end (ED A0 cut short
is one unit of the variant's and two of UTF-8's: the second is absorbed).  The bytes a
variant forbids but UTF-8 allows (00 in MUTF-8 and UTF-8Z, F0..F4 in CESU-8 and MUTF-8)
are first translated into a byte UTF-8 forbids (``Variant.translate``), so that they are
units too.  (Asking the callback for each of UTF-8's units instead would cost three
Python calls per surrogate half, which text dense in halves pays for in full:
``benchmarks/bench_decoder.py --variants``.)

The tail that a non-final call holds (a proper prefix, or a complete high half and the
start of a low half after it: ``held_prefix_set``) is cut off before anything is
decoded; no item of the rest needs a byte after it, so the inner scanner decodes each
stretch as final.  What the inner scanner counts is not used: the variant counts its own
units.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container
from typing import TYPE_CHECKING

from ._accel import ACCEL_KINDS
from ._bytes import ByteTable, classify_unit, is_high_half, is_low_half
from .events import Malformed, MalformedKind
from .scanner import OnUnit, Scanner, as_bytes, held_prefix_set
from .variants import Variant

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer as Buffer

__all__ = ["VariantScanner"]

_KIND_INDEX = {kind: i for i, kind in enumerate(ACCEL_KINDS)}
_new_object = object.__new__
_set_offset = Malformed.__dict__["offset"].__set__
_set_data = Malformed.__dict__["data"].__set__
_set_kind = Malformed.__dict__["kind"].__set__
#: A complete surrogate half.  Searched for only from an ED that ``bytes.find`` (memchr)
#: found: most text has none, and the regular expression scans slower than memchr.
_HALF = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")
#: A high half then a low half: one character in CESU-8 and MUTF-8, malformed in WTF-8.
_PAIR = re.compile(rb"(\xed[\xa0-\xaf][\x80-\xbf]\xed[\xb0-\xbf][\x80-\xbf])")


#: A complete surrogate half, kept by ``re.split``.
_HALF_KEPT = re.compile(rb"(\xed[\xa0-\xbf][\x80-\xbf])")


class _NotWellFormed(Exception):
    """The whole-text scanner met a unit: the item-by-item path decides."""


def _reject(event: Malformed) -> str:
    raise _NotWellFormed


class _HalfTable(dict[bytes, str]):
    """A complete surrogate half's three bytes -> the surrogate."""

    def __missing__(self, half: bytes) -> str:
        text = self[half] = chr(0xD000 | ((half[1] & 0x3F) << 6) | (half[2] & 0x3F))
        return text


_HALF_TEXT = _HalfTable()


class _PairTable(dict[bytes, bytes]):
    """A pair's six bytes -> the UTF-8 of its supplementary character (kept for the
    first 4,096 pairs met: text repeats its few emoji)."""

    def __missing__(self, pair: bytes) -> bytes:
        high = ((pair[1] & 0x0F) << 6) | (pair[2] & 0x3F)
        low = ((pair[4] & 0x0F) << 6) | (pair[5] & 0x3F)
        out = chr(0x10000 + (high << 10) + low).encode()
        if len(self) < 4096:
            self[pair] = out
        return out


_PAIR_UTF8 = _PairTable()


class _VariantUnits:
    """What each item of a call is in the variant; the inner scanner's callback.

    Kept apart from ``VariantScanner`` so that the inner scanner, which holds this
    callback, holds no reference back to the scanner that holds it (no cycle).
    """

    __slots__ = (
        "base",
        "callback",
        "counts",
        "covered",
        "fail_at",
        "final",
        "holds_pairs",
        "join_pairs",
        "lone_halves",
        "orphan_low",
        "pairs_malformed",
        "replacement",
        "reporting",
        "resume_at",
        "resume_orphan",
        "src",
        "unit_table",
    )

    def __init__(
        self,
        variant: Variant,
        surrogates_pass: bool,
        replacement: str | None,
        callback: OnUnit | None,
    ) -> None:
        # The variant's rules, read for each surrogate half (slots read fastest).
        self.holds_pairs = variant.holds_pairs
        self.join_pairs = variant.join_pairs
        self.pairs_malformed = variant.pairs_malformed
        self.lone_halves = variant.lone_halves
        table = variant.passing_table if surrogates_pass else variant.table
        #: How units are cut and classified: plain UTF-8 with surrogatepass cuts them as
        #: UTF-8 does (ED A0 41 is three units), a variant by its own table.
        self.unit_table: ByteTable = variant.table if variant.name == "utf-8" else table
        self.replacement = replacement
        self.callback = callback
        self.counts = [0] * len(ACCEL_KINDS)
        #: The call in progress: its whole buffer (held tail included, for looking
        #: ahead), the absolute offset of its first byte, whether it ends the stream,
        #: and how far (relative) its items are decided.
        self.src = b""
        self.base = 0
        self.final = False
        self.covered = 0
        #: WTF-8: the call's first bytes are a low half whose high half came before.
        self.orphan_low = False
        #: WTF-8: the unit being reported is the high half of a pair, so the low half
        #: after it is malformed too, should the callback raise and leave it unread.
        self.resume_orphan = False
        #: Where the unit being reported starts (relative; -1 when none is) and the
        #: absolute offset after it.
        self.fail_at = -1
        self.resume_at = 0
        #: True while the callback runs: then the scanner refuses to decode.
        self.reporting = 0

    def __call__(self, event: Malformed) -> str:
        """The text of the inner scanner's unit of ``event`` (``data`` is translated)."""
        start = event.offset - self.base
        if start < self.covered:
            return ""  # the A0..BF of an ED A0..BF cut short, already reported with ED
        src = self.src
        end = start + len(event.data)
        if (
            src[start] == 0xED
            and self.unit_table.surrogate_halves
            and end < len(src)
            and 0xA0 <= src[end] <= 0xBF
        ):
            # UTF-8 cut ED alone (its second byte out of range); no complete half
            # reaches the inner scanner, so this is ED A0..BF cut short, one unit.
            end += 1
        self.covered = end
        return self._unit(start, end, classify_unit(src, start, end, self.final, self.unit_table))

    def item(self, start: int) -> str:
        """The text of C0 80 or a complete surrogate half at ``start``; ``covered``
        then says where the next item starts (after the low half of a joined pair)."""
        src = self.src
        if src[start] == 0xC0:
            self.covered = start + 2
            return "\x00"
        end = start + 3
        self.covered = end
        second = src[start + 1]
        if second <= 0xAF:  # a high half
            if self.holds_pairs and is_low_half(src, end):
                if self.join_pairs:
                    self.covered = start + 6
                    high = ((second & 0x0F) << 6) | (src[start + 2] & 0x3F)
                    low = ((src[start + 4] & 0x0F) << 6) | (src[start + 5] & 0x3F)
                    return chr(0x10000 + (high << 10) + low)
                self.resume_orphan = True  # WTF-8: both halves are malformed
                text = self._unit(start, end, MalformedKind.SURROGATE)
                self.resume_orphan = False
                return text
        elif self.pairs_malformed and (
            is_high_half(src, start - 3) if start >= 3 else start == 0 and self.orphan_low
        ):
            return self._unit(start, end, MalformedKind.SURROGATE)
        if self.lone_halves:
            return chr(0xD000 | ((second & 0x3F) << 6) | (src[start + 2] & 0x3F))
        return self._unit(start, end, MalformedKind.SURROGATE)

    def _unit(self, start: int, end: int, kind: MalformedKind) -> str:
        """The variant's malformed unit ``src[start:end]``: count, report, its text."""
        self.counts[_KIND_INDEX[kind]] += 1
        callback = self.callback
        text = self.replacement
        if callback is None:
            assert text is not None  # a mapping scanner always has a callback
            return text
        event: Malformed = _new_object(Malformed)
        _set_offset(event, self.base + start)
        _set_data(event, self.src[start:end])
        _set_kind(event, kind)
        self.fail_at = start
        self.resume_at = self.base + end
        self.reporting = 1
        try:
            result = callback(event)
        finally:
            self.reporting = 0
        if text is None:
            if not isinstance(result, str):
                # Failed at this unit, as if the callback had raised.
                raise TypeError(
                    f"a mapping scanner's callback must return str, not {type(result).__name__}"
                )
            text = result
        self.fail_at = -1
        return text


class VariantScanner:
    """A ``Scanner`` for a UTF-8 variant, or UTF-8 with surrogatepass (module docstring).

    ``inner_type`` makes the plain UTF-8 scanner it wraps (``scanner_type()``, or
    ``PyScanner`` where the C one cannot count the offsets).  With ``surrogates_pass``
    an encoded surrogate is one unit of three bytes (the decoder's policy makes it the
    surrogate).  A WTF-8 pair is malformed in both halves; a low half at the start of a
    call whose high half came before is told by ``orphan_low``, which the decoder sets
    before the call; ``resume_orphan`` says after a failure whether the rest starts
    with such a low half.  It cuts no lines (``lines`` refuses): the line engine cuts
    the decoded text.
    """

    __slots__ = (
        "_chars",
        "_fail_start",
        "_fast",
        "_halves",
        "_hold_max",
        "_inner",
        "_java_null",
        "_join_pairs",
        "_lone_halves",
        "_nul_malformed",
        "_pairs_malformed",
        "_partial",
        "_prefixes",
        "_translate",
        "_units",
        "_whole",
        "orphan_low",
        "pending",
        "position",
    )

    def __init__(
        self,
        variant: Variant,
        surrogates_pass: bool,
        replacement: str | None,
        callback: OnUnit | None,
        inner_type: Callable[[str | None, OnUnit | None], Scanner],
    ) -> None:
        if replacement is None:
            if not callable(callback):
                raise TypeError("without a replacement the callback maps units")
        elif len(replacement) > 1:
            raise ValueError("the replacement is one character or none")
        self._units = _VariantUnits(variant, surrogates_pass, replacement, callback)
        self._inner = inner_type(None, self._units)
        #: The fast path's scanner: the text of well-formed UTF-8, or ``_NotWellFormed``.
        self._whole = inner_type(None, _reject)
        table = variant.passing_table if surrogates_pass else variant.table
        #: The variant's own items: surrogate halves, C0 80.
        self._halves = table.surrogate_halves
        self._java_null = bool(table.seq_len[0xC0])
        self._translate = variant.translate
        self._nul_malformed = not table.seq_len[0]
        self._prefixes: Container[bytes] = held_prefix_set(variant, surrogates_pass)
        #: A proper prefix has up to 3 bytes; a high half and the start of a low one, 5.
        self._hold_max = 5 if variant.holds_pairs else 3
        self._chars = 0
        self._fail_start = -1
        self._partial = ""
        self.orphan_low = False
        #: The stream's state (see ``Scanner``).
        self.position = 0
        self.pending = b""
        #: Every item of the variant is a character when nothing around it is malformed
        #: (not so with surrogatepass, where each half is a unit): the fast path of
        #: ``feed``.
        self._fast = not surrogates_pass and variant.name != "utf-8"
        self._join_pairs = variant.join_pairs
        self._lone_halves = variant.lone_halves
        self._pairs_malformed = variant.pairs_malformed

    @property
    def callback(self) -> OnUnit | None:
        return self._units.callback

    @callback.setter
    def callback(self, callback: OnUnit | None) -> None:
        self._units.callback = callback

    @property
    def fail_start(self) -> int:
        return self._fail_start

    @property
    def resume_at(self) -> int:
        return self._units.resume_at

    @property
    def reporting(self) -> int:
        return self._units.reporting

    @property
    def partial(self) -> str:
        return self._partial

    @property
    def resume_orphan(self) -> bool:
        return self._units.resume_orphan

    def decode(self, data: Buffer, final: bool = False, /) -> str:
        if self._units.reporting:
            self._refuse()
        data = as_bytes(data)
        position = self.position = self.position + len(data)
        text, self.pending = self.feed(self.pending, data, final, position)
        return text

    @staticmethod
    def _refuse() -> None:
        raise RuntimeError("a Utf8Decoder cannot decode from inside its own on_malformed callback")

    def feed(
        self, pending: bytes, data: bytes, final: bool, position: int, /
    ) -> tuple[str, bytes]:
        units = self._units
        if units.reporting:
            raise RuntimeError(
                "a Utf8Decoder cannot decode from inside its own on_malformed callback"
            )
        src = pending + data if pending else data
        units.resume_orphan = False
        orphan_low = self.orphan_low
        self.orphan_low = False  # it only ever concerns the first bytes of one call
        self._fail_start = -1
        self._partial = ""
        n = len(src)
        # What ends in ASCII ends with a complete item: nothing held.
        held = 0 if final or not n or src[n - 1] < 0x80 else self._held_length(src)
        end = n - held
        if not end:
            return "", src
        buf = src[:end] if held else src
        table = self._translate
        # Only 00 and F0..F4 are ever translated: pure ASCII without NUL needs no pass.
        if table is not None and (not buf.isascii() or (self._nul_malformed and b"\x00" in buf)):
            buf = buf.translate(table)
        # Most text holds no item at all: one memchr each says so.
        halves = src.find(b"\xed", 0, end) if self._halves else -1
        nulls = src.find(b"\xc0", 0, end) if self._java_null else -1
        if (halves >= 0 or nulls >= 0) and self._fast and not orphan_low:
            # Items, and perhaps no malformed unit: C-speed passes only.  C0 80 becomes
            # 00 (``buf`` is translated: a 00 of its own, where the variant forbids it,
            # is FF by now), each CESU-8 pair its UTF-8 sequence (a regular expression
            # split, a table), and the scanner (``_well_formed``) then gives up on
            # anything malformed; a lone half where the variant allows it (WTF-8,
            # MUTF-8) is its surrogate.  A WTF-8 pair is malformed: looked for first.  The same
            # texts as ``_VariantUnits.item`` (a test holds the two paths equal); on
            # failure the item-by-item path below decides.  (A low half first after
            # ``orphan_low``, WTF-8, is malformed: that path.)
            fast = buf
            clean = True
            if halves >= 0:
                if self._join_pairs:
                    parts = _PAIR.split(fast)
                    if len(parts) > 1:
                        parts[1::2] = map(_PAIR_UTF8.__getitem__, parts[1::2])
                        fast = b"".join(parts)
                elif self._pairs_malformed and _PAIR.search(fast, halves):
                    clean = False
            if clean:
                if nulls >= 0:
                    fast = fast.replace(b"\xc0\x80", b"\x00")
                text = self._well_formed(fast, halves >= 0 and self._lone_halves)
                if text is not None:
                    self._chars += len(text)
                    return text, src[end:] if held else b""
        units.src = src
        units.base = position - n
        units.final = final
        units.covered = 0
        units.orphan_low = orphan_low
        units.fail_at = -1
        inner = self._inner
        try:
            if halves < 0 and nulls < 0:
                try:
                    text, _ = inner.feed(b"", buf, True, position - held)
                except BaseException:
                    if units.fail_at >= 0:
                        self._partial = inner.partial
                    raise
            else:
                text = self._decode_items(buf, end, halves, nulls)
        except BaseException:
            self._fail_start = units.fail_at
            raise
        finally:
            units.src = b""
        self._chars += len(text)
        return text, src[end:] if held else b""

    def _well_formed(self, buf: bytes, lone_halves: bool) -> str | None:
        """The text of ``buf`` if it is well-formed UTF-8, with ``lone_halves`` complete
        surrogate halves between its characters, each its surrogate; else None.

        The whole-text scanner gives up at the first unit.  The stretches between the
        halves go to it in one call, joined by a NUL that none of them holds (which
        cannot complete a character cut at a stretch's end), and their texts are split
        apart at it: C loops only, however many halves.
        """
        feed = self._whole.feed
        try:
            if not lone_halves or b"\xed" not in buf:  # a joined pair leaves no ED
                return feed(b"", buf, True, 0)[0]
            parts = _HALF_KEPT.split(buf)  # stretch, half, stretch, ..., stretch
            if len(parts) == 3:  # one half (a short chunk): no lists
                head, half, rest = parts
                return feed(b"", head, True, 0)[0] + _HALF_TEXT[half] + feed(b"", rest, True, 0)[0]
            out: list[str] = [""] * len(parts)
            if b"\x00" in buf:
                out[0::2] = [feed(b"", part, True, 0)[0] for part in parts[0::2]]
            else:
                out[0::2] = feed(b"", b"\x00".join(parts[0::2]), True, 0)[0].split("\x00")
        except _NotWellFormed:
            return None
        out[1::2] = map(_HALF_TEXT.__getitem__, parts[1::2])
        return "".join(out)

    def _decode_items(self, buf: bytes, end: int, halves: int, nulls: int) -> str:
        """The text of ``buf`` (``src[:end]``, translated), where ``src[halves]`` is the
        first ED and ``src[nulls]`` the first C0 (-1: none)."""
        units = self._units
        src = units.src
        base = units.base
        starts = [m.start() for m in _HALF.finditer(src, halves, end)] if halves >= 0 else []
        if nulls >= 0:
            while nulls >= 0:
                if nulls + 1 < end and src[nulls + 1] == 0x80:
                    starts.append(nulls)
                nulls = src.find(b"\xc0", nulls + 1, end)
            starts.sort()
        inner = self._inner
        item = units.item
        pieces: list[str] = []
        done = 0  # how far (relative) ``pieces`` holds the text
        in_inner = False
        try:
            for start in starts:
                if start < done:
                    continue  # the low half of a pair joined at its high half
                if done < start:
                    in_inner = True
                    pieces.append(inner.feed(b"", buf[done:start], True, base + start)[0])
                    in_inner = False
                pieces.append(item(start))
                done = units.covered
            if done < end:
                in_inner = True
                pieces.append(inner.feed(b"", buf[done:] if done else buf, True, base + end)[0])
        except BaseException:
            if units.fail_at >= 0:
                self._partial = "".join(pieces) + (inner.partial if in_inner else "")
            raise
        return "".join(pieces)

    def _held_length(self, src: bytes) -> int:
        """How many bytes at the end of ``src`` wait for the next call.

        The longest tail in the held set: each one starts with a lead byte (C0..F4),
        where an item always starts.
        """
        n = len(src)
        if not n or src[n - 1] < 0x80:
            return 0  # what ends in ASCII ends with a complete item (``feed`` asks first)
        prefixes = self._prefixes
        for k in range(min(n, self._hold_max), 0, -1):
            if src[n - k] >= 0xC0 and src[n - k :] in prefixes:
                return k
        return 0

    def lines(
        self,
        head: bytes,
        data: bytes | memoryview,
        position: int,
        sep: int,
        limit: int,
        each_offset: int = True,
        /,
    ) -> tuple[list[str], list[int]]:
        raise ValueError("a variant scanner cuts no lines (the line engine cuts its text)")

    def drain(self) -> tuple[int, ...]:
        self._inner.drain()  # the UTF-8 units, which the variant counted its own way
        units = self._units
        counts = (*units.counts, self._chars)
        units.counts = [0] * len(ACCEL_KINDS)
        self._chars = 0
        return counts
