"""The decoder's state as others see it: ``getstate``/``setstate`` (the
``codecs.IncrementalDecoder`` contract, ``DecoderStateFlag``), ``checkpoint`` (an immutable,
serialisable ``DecoderCheckpoint``) and ``statistics``; functions of ``Utf8Decoder``
(its methods, bound in its class)."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from ._accel import ACCEL_KINDS
from .events import DecoderStatistics

if TYPE_CHECKING:
    from .decoder import Utf8Decoder

#: A surrogate code point (a lone half, or a surrogateescape byte) in carried text.
_SURROGATE = re.compile("[\ud800-\udfff]")


class DecoderStateFlag(enum.IntFlag):
    """The single-bit flags in the integer of ``Utf8Decoder.getstate()``.

    ``GAP_OPEN``: a gap is open; the buffered bytes belong to it, and two small counters
    share the integer: at ``GAP_ABSORB_SHIFT`` (3 bits) the bytes the gap holds or will
    take whatever they are, at ``GAP_SKIP_SHIFT`` (2 bits) the continuation bytes it may
    still swallow.  Otherwise the buffered bytes are a held proper prefix, or, when they
    are not one, the unread rest of a call that failed, which ends the stream if
    ``UNREAD_FINAL`` is set.  ``ORPHAN_LOW``: the buffered bytes start with a low
    surrogate half whose high half was already decoded (WTF-8).  The values are part of
    the state ``io.TextIOWrapper.tell()`` stores in its cookies, so they never change.
    """

    GAP_OPEN = 1
    UNREAD_FINAL = 64
    ORPHAN_LOW = 128


#: Where the gap counters sit in ``getstate()``'s integer (see ``DecoderStateFlag``).
GAP_ABSORB_SHIFT = 1
GAP_SKIP_SHIFT = 4
_GAP_ABSORB_MASK = 7
_GAP_SKIP_MASK = 3


@dataclass(frozen=True)
class DecoderCheckpoint:
    """An immutable, serialisable snapshot of a ``Utf8Decoder``.

    A decoder built from it with ``Utf8Decoder.from_checkpoint`` continues exactly as the
    original would have: same text, same events, same offsets.
    """

    position: int
    start_offset: int = 0
    errors: str = "replace"
    gap: str = "replace"
    variant: str = "utf-8"
    fallback: str | None = None
    orphan_low: bool = False
    pending: bytes = b""
    unread: bytes = b""
    unread_final: bool = False
    carry: str = ""
    gap_open: bool = False
    gap_data: bytes = b""
    gap_offset: int | None = None
    gap_skip: int = 0
    lost_total: int = 0
    chars_out: int = 0
    gaps: int = 0
    malformed_counts: dict[str, int] = field(default_factory=dict)

    _BYTES_FIELDS: ClassVar[tuple[str, ...]] = ("pending", "unread", "gap_data")

    def to_json(self) -> str:
        """Serialise to a JSON object (bytes as hex strings)."""
        raw: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in self._BYTES_FIELDS:
            raw[name] = raw[name].hex()
        if _SURROGATE.search(self.carry):
            # JSON reads the escapes of a high and a low surrogate as one character (a
            # surrogateescape byte after a lone high half would come back joined to it):
            # such text is written as its code points.
            raw["carry_code_points"] = [ord(c) for c in raw.pop("carry")]
        raw["version"] = 1
        import json  # here: importing the decoder (and starting the CLI) does without it

        return json.dumps(raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> DecoderCheckpoint:
        """Inverse of ``to_json``."""
        import json

        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.pop("version", None) != 1:
            raise ValueError("not a utf8stream decoder checkpoint (version 1)")
        for name in cls._BYTES_FIELDS:
            raw[name] = bytes.fromhex(raw.get(name, ""))
        if "carry_code_points" in raw:
            raw["carry"] = "".join(map(chr, raw.pop("carry_code_points")))
        unknown = set(raw) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown checkpoint fields: {sorted(unknown)}")
        return cls(**raw)


def getstate(self: Utf8Decoder) -> tuple[bytes, int]:
    """``(buffered bytes, flags)`` per the ``codecs.IncrementalDecoder`` contract.

    ``flags`` is an ``int`` made of ``DecoderStateFlag`` bits and, while a gap is
    open, its two counters (``GAP_ABSORB_SHIFT``, ``GAP_SKIP_SHIFT``).

    Feeding the buffered bytes to a decoder after ``setstate((b"", flags))`` puts it in
    the same state, which is what ``io.TextIOWrapper.tell()`` relies on.  Text held
    back after a callback raised is not part of this state (``checkpoint`` has it).
    """
    self._refuse_if_reporting("getstate")
    if self._gap_open:
        absorb = len(self._gap_data) + self._gap_absorb
        flags = (
            DecoderStateFlag.GAP_OPEN
            | (absorb << GAP_ABSORB_SHIFT)
            | (self._gap_skip << GAP_SKIP_SHIFT)
        )
        return (self._gap_data, int(flags))
    orphan = DecoderStateFlag.ORPHAN_LOW if self._orphan_low else 0
    if self._unread:
        final = DecoderStateFlag.UNREAD_FINAL if self._unread_final else 0
        return (self._unread, int(final | orphan))
    return (self._scanner.pending, int(orphan))


def setstate(self: Utf8Decoder, state: tuple[bytes, int]) -> None:
    self._refuse_if_reporting("setstate")
    buffered, flags = state
    buffered = bytes(buffered)
    self._clear(self._scanner.position)
    if flags & DecoderStateFlag.GAP_OPEN:
        self._gap_open = True
        self._gap_data = buffered
        absorb = (flags >> GAP_ABSORB_SHIFT) & _GAP_ABSORB_MASK
        self._gap_absorb = max(0, absorb - len(buffered))
        self._gap_skip = (flags >> GAP_SKIP_SHIFT) & _GAP_SKIP_MASK
    elif buffered in self._prefixes:
        self._scanner.pending = buffered
    else:
        self._unread = buffered
        self._unread_final = bool(flags & DecoderStateFlag.UNREAD_FINAL)
    self._orphan_low = bool(flags & DecoderStateFlag.ORPHAN_LOW)
    self._sync()


def checkpoint(self: Utf8Decoder) -> DecoderCheckpoint:
    """An immutable snapshot from which ``from_checkpoint`` continues exactly."""
    self._refuse_if_reporting("checkpoint")
    self._fold_counts()
    scanner = self._scanner
    return DecoderCheckpoint(
        position=scanner.position,
        start_offset=self._start_offset,
        errors=self.errors,
        gap=self._gap_policy,
        variant=self._variant.name,
        fallback=self._fallback,
        orphan_low=self._orphan_low,
        pending=scanner.pending,
        unread=self._unread,
        unread_final=self._unread_final,
        carry=self._carry,
        gap_open=self._gap_open,
        gap_data=self._gap_data,
        gap_offset=self._gap_offset,
        gap_skip=self._gap_skip + self._gap_absorb * 4,
        lost_total=self._lost_total,
        chars_out=self._chars,
        gaps=self._gaps,
        malformed_counts={k.name: n for k, n in self._counts.items() if n},
    )


def statistics(self: Utf8Decoder) -> DecoderStatistics:
    """Bytes fed, characters produced, malformed units by kind, gaps.

    Exact at any time, also inside a callback (see ``on_malformed`` in the class
    docstring for what it counts there).
    """
    self._fold_counts()
    return DecoderStatistics(
        bytes_fed=self._scanner.position - self._start_offset - self._lost_total,
        chars_out=self._chars,
        malformed=MappingProxyType({k: n for k, n in self._counts.items() if n}),
        gaps=self._gaps,
        lost_bytes_declared=self._lost_total,
    )


def fold_counts(self: Utf8Decoder) -> None:
    """Add what the scanner counted since the last fold to ``_counts``/``_chars``."""
    counts = self._counts
    *by_kind, chars = self._scanner.drain()
    self._chars += chars
    for kind, n in zip(ACCEL_KINDS, by_kind, strict=True):
        if n:
            counts[kind] += n
