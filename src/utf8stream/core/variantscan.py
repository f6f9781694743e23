"""The UTF-8 variants as a policy over the one UTF-8 scanner (C or Python).

``VariantScanner`` reads a variant of ``variants.py`` (WTF-8, CESU-8, MUTF-8, UTF-8Z),
or UTF-8 with ``errors="surrogatepass"``, and implements the ``Scanner`` seam of
``scanner.py`` by wrapping a plain UTF-8 scanner of the implementation in use, so that
the variants decode their valid runs at the accelerator's speed and no third scanner
exists.  The inner scanner is made *mapping* (no constant replacement): it hands each
of its malformed units, in order, to ``_VariantUnits``, which looks at the original
bytes and returns that unit's text.

Why that is enough: everything a variant reads differently from UTF-8 is malformed for
UTF-8.  A surrogate half ED A0..BF 80..BF is three UTF-8 units (ED, A0, 80), C0 80 two;
the bytes a variant forbids but UTF-8 allows (00 in MUTF-8 and UTF-8Z, F0..F4 in CESU-8
and MUTF-8) are first translated into a byte UTF-8 forbids (``Variant.translate``), so
that they are units too.  And a variant's item (a character, or one of its malformed
units) is a lead byte and continuation bytes, where UTF-8 accepts no more continuation
bytes after a lead than the variant does: so each variant item inside UTF-8's malformed
stretches starts where a UTF-8 unit starts and ends where one ends.  At the first UTF-8
unit of an item the variant decides the whole item (a character, such as C0 80 as
U+0000, a lone half, or a CESU-8 pair joined into one supplementary character; or a
malformed unit, cut and classified by the variant's table, counted and reported) and
the later UTF-8 units of the item become no text at all.

The tail that a non-final call holds (a proper prefix, or a complete high half and the
start of a low half after it: ``held_prefix_set``) is cut off before the inner scanner
is called; the rest can need no byte after it, so the inner scanner decodes it as
final.  What the inner scanner counts is not used: the variant counts its own units.
"""

from __future__ import annotations

from collections.abc import Callable, Container

from ._accel import ACCEL_KINDS
from ._bytes import ByteTable, classify_unit, is_high_half, is_low_half
from .events import Malformed, MalformedKind
from .scanner import OnUnit, Scanner, held_prefix_set
from .variants import Variant

__all__ = ["VariantScanner"]

_KIND_INDEX = {kind: i for i, kind in enumerate(ACCEL_KINDS)}
_new_object = object.__new__
_set_offset = Malformed.__dict__["offset"].__set__
_set_data = Malformed.__dict__["data"].__set__
_set_kind = Malformed.__dict__["kind"].__set__


class _VariantUnits:
    """The inner scanner's callback: what each of its units is in the variant.

    Kept apart from ``VariantScanner`` so that the inner scanner, which holds this
    callback, holds no reference back to the scanner that holds it (no cycle).
    """

    __slots__ = (
        "base",
        "callback",
        "counts",
        "covered",
        "final",
        "java_null",
        "orphan_low",
        "replacement",
        "resume_at",
        "resume_orphan",
        "src",
        "table",
        "unit_table",
        "variant",
    )

    def __init__(
        self,
        variant: Variant,
        surrogates_pass: bool,
        replacement: str | None,
        callback: OnUnit | None,
    ) -> None:
        self.variant = variant
        self.table: ByteTable = variant.passing_table if surrogates_pass else variant.table
        #: How units are cut and classified: plain UTF-8 with surrogatepass cuts them as
        #: UTF-8 does (ED A0 41 is three units), a variant by its own table.
        self.unit_table: ByteTable = variant.table if variant.name == "utf-8" else self.table
        self.java_null = bool(self.table.seq_len[0xC0])
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
        self.resume_at = 0

    def __call__(self, event: Malformed) -> str:
        """The text of the UTF-8 unit of ``event`` (``event.data`` is translated)."""
        start = event.offset - self.base
        if start < self.covered:
            return ""  # a later part of an item decided at its first unit
        src = self.src
        n = len(src)
        end = start + len(event.data)
        b0 = src[start]
        if b0 == 0xC0 and self.java_null and start + 1 < n and src[start + 1] == 0x80:
            self.covered = start + 2
            return "\x00"
        if (
            b0 == 0xED
            and self.table.surrogate_halves
            and start + 1 < n
            and 0xA0 <= src[start + 1] <= 0xBF
        ):
            # ED A0..BF: UTF-8 cut ED alone (its second byte is out of range).
            if start + 2 < n and 0x80 <= src[start + 2] <= 0xBF:
                return self._surrogate_half(start)
            if self.unit_table.surrogate_halves:
                end = start + 2  # ED A0 cut short: one unit, as for any other lead
        self.covered = end
        return self._unit(start, end, classify_unit(src, start, end, self.final, self.unit_table))

    def _surrogate_half(self, start: int) -> str:
        """ED A0..BF 80..BF at ``start``: a character, half of a pair, or malformed."""
        src = self.src
        variant = self.variant
        end = start + 3
        self.covered = end
        if src[start + 1] <= 0xAF:  # a high half
            if is_low_half(src, end):
                if variant.join_pairs:
                    self.covered = start + 6
                    high = ((src[start + 1] & 0x0F) << 6) | (src[start + 2] & 0x3F)
                    low = ((src[start + 4] & 0x0F) << 6) | (src[start + 5] & 0x3F)
                    return chr(0x10000 + (high << 10) + low)
                if variant.pairs_malformed:
                    self.resume_orphan = True
                    text = self._unit(start, end, MalformedKind.SURROGATE)
                    self.resume_orphan = False
                    return text
        elif variant.pairs_malformed and (
            is_high_half(src, start - 3) if start >= 3 else start == 0 and self.orphan_low
        ):
            return self._unit(start, end, MalformedKind.SURROGATE)
        if variant.lone_halves:
            return src[start:end].decode("utf-8", "surrogatepass")
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
        self.resume_at = self.base + end
        result = callback(event)
        if text is None:
            if not isinstance(result, str):
                # Failed at this unit, as if the callback had raised.
                raise TypeError(
                    f"a mapping scanner's callback must return str, not {type(result).__name__}"
                )
            text = result
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
        "_hold_max",
        "_inner",
        "_partial",
        "_prefixes",
        "_units",
        "orphan_low",
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
        self._prefixes: Container[bytes] = held_prefix_set(variant, surrogates_pass)
        #: A proper prefix has up to 3 bytes; a high half and the start of a low one, 5.
        self._hold_max = 5 if variant.holds_pairs else 3
        self._chars = 0
        self._fail_start = -1
        self._partial = ""
        self.orphan_low = False

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
        return self._inner.reporting

    @property
    def partial(self) -> str:
        return self._partial

    @property
    def resume_orphan(self) -> bool:
        return self._units.resume_orphan

    def feed(
        self, pending: bytes, data: bytes, final: bool, position: int, /
    ) -> tuple[str, bytes]:
        inner = self._inner
        if inner.reporting:
            raise RuntimeError(
                "a Utf8Decoder cannot decode from inside its own on_malformed callback"
            )
        src = pending + data if pending else data
        units = self._units
        units.resume_orphan = False
        orphan_low = self.orphan_low
        self.orphan_low = False  # it only ever concerns the first bytes of one call
        self._fail_start = -1
        self._partial = ""
        n = len(src)
        held = 0 if final else self._held_length(src)
        rest = src[: n - held] if held else src
        if not rest:
            return "", src
        table = units.variant.translate
        # Only 00 and F0..F4 are ever translated: pure ASCII without NUL needs no pass.
        if table is not None and (not rest.isascii() or (table[0] != 0 and b"\x00" in rest)):
            rest = rest.translate(table)
        units.src = src
        units.base = position - n
        units.final = final
        units.covered = 0
        units.orphan_low = orphan_low
        try:
            text, _ = inner.feed(b"", rest, True, position - held)
        except BaseException:
            self._fail_start = inner.fail_start
            if self._fail_start >= 0:
                self._partial = inner.partial
            raise
        finally:
            units.src = b""
        self._chars += len(text)
        return text, src[n - held :] if held else b""

    def _held_length(self, src: bytes) -> int:
        """How many bytes at the end of ``src`` wait for the next call.

        The longest tail in the held set: each one starts with a lead byte (C0..F4),
        where an item always starts.
        """
        prefixes = self._prefixes
        n = len(src)
        for k in range(min(n, self._hold_max), 0, -1):
            if src[n - k] >= 0xC0 and src[n - k :] in prefixes:
                return k
        return 0

    def lines(
        self,
        head: bytes,
        data: bytes,
        position: int,
        sep: int,
        limit: int,
        each_offset: bool = True,
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
