"""The incremental UTF-8 decoder: exact, eager, resumable, self-synchronising.

Rule 1: the decoder's policy (what each unit becomes, what is held, what a failure
leaves behind) lives in this file; where the units are is the scanner's (``scanner.py``).

Theory of operation
-------------------
Bytes arrive in chunks.  The decoder keeps at most one of these between calls:

* ``pending``: 1..3 bytes that are a *proper prefix* of a well-formed sequence (the only
  thing that may legitimately be undecidable at a chunk boundary; up to 5 bytes in the
  variants, see below);
* ``unread``: the rest of a call's input after a strict-mode error (or an exception raised
  by a callback), decoded by the next call;
* an open *gap* (``mark_gap``): the held partial sequence plus up to three continuation
  bytes that follow belong to the gap, which becomes one ``LOST_BYTES`` event.

One path, whatever the policy, variant or implementation: boundary, scanner, tail.

* The boundary, only when something is held besides a pending prefix: text carried
  over from a failed call goes first, unread input goes in front of the chunk, and an
  open gap swallows the bytes that belong to it.  With nothing held it costs one test.
* One ``Scanner.feed(pending, chunk, final, position)``: the scanner decodes the valid
  runs, finds each malformed unit (a maximal subpart, classified by Table 3-7 in
  ``_bytes.py``), counts it, reports it, and holds a trailing proper prefix.  The unit's
  text is the policy's: for ``replace`` and ``ignore`` a constant the scanner puts in
  itself (the user's callback, if any, is the scanner's callback); for every other
  policy (strict, the escapes, ``optu-8``, registered handlers, ``fallback``,
  ``surrogatepass``) the scanner is made without a constant and asks ``_Policy.map_unit``
  for each unit, which reports it to the user's callback and returns its text or raises
  (strict: ``Utf8DecodeError``).  The scanner is chosen when the decoder is built: for
  plain UTF-8 the C one (``_speedups.Units``, no Python frame per valid run or constant
  unit) or the pure-Python one (``PyScanner``), by ``use_accelerator``, with the same
  text, events and counts; ``PyScanner`` past ``ACCEL_MAX_POSITION`` (the C one counts
  in 64-bit integers); for the variants and ``surrogatepass`` a ``VariantScanner``
  around the one chosen so (``variantscan.py``).  The
  same scanner cuts lines as it decodes (``decode_lines``; UTF-8 with
  ``replace`` only).
* The tail: the scanner's held prefix becomes ``pending``; the text of the boundary and
  of the scanner is returned.

So valid data never sees a Python loop, and the Python work per chunk is O(1) plus, for
a policy other than a constant, one call per malformed unit.

Decoder mode (small chunks pay for every Python step): with the C scanner in
use for plain UTF-8 and nothing held besides a pending prefix, that scanner holds the
decoder's ``position`` and ``pending`` and ``decoder.decode`` is one C call per chunk
(``_speedups.DecoderMethod`` gives a ``BoundDecode``), doing the path above with nothing
held: ``position += len(data)``, the scanner call, the new prefix.  Everything else
stays here: ``_sync`` enters the mode and is the only place that decides it; every
method that changes the state leaves it first (``_leave``), the read-only ones read the
state from the scanner (``_pull``); an input or argument it does not take as it is, the
position limit, and a call after the mode was left run ``decode`` below (which leaves the
mode at the boundary); a failure calls ``_c_failed``, which leaves the mode and keeps
what the failure leaves behind exactly as ``decode`` does.

Strict mode, and any exception raised by a policy or callback, never poisons the decoder:
the scanner says where the failing unit was (``fail_start``, ``resume_at``) and hands
back the text it had decoded before it (``partial``); the unit counts as consumed, the
unconsumed rest of the input is kept as ``unread``, and the text decoded before the
failure (with the unit's own text when a callback raised) travels with the exception
(``Utf8DecodeError.partial``) or, for foreign exceptions, is returned by the next call.

Variants and the legacy fallback
--------------------------------
A variant decoder (``variant="wtf-8"``, ``"cesu-8"``, ``"mutf-8"``, ``"utf-8z"``; rules
in ``variants.py``) takes the same path with a ``VariantScanner``, a policy over the
UTF-8 scanner in use, C or Python (``variantscan.py`` says how it finds C0 80,
surrogate pairs and lone halves among that scanner's malformed units).  Whether a
complete high half is a character can depend on the next three bytes, so a variant's
pending tail may be a high half plus a prefix of a low one (up to five bytes).  A WTF-8
pair is malformed in both halves; when a failure at the high half leaves the low half
unread, the decoder remembers that (``orphan low``) and tells the scanner on the next
call.

``fallback=CODEC`` (a single-byte codec such as cp1252) decodes each malformed unit's
bytes with that codec instead of applying ``errors`` (in ``_Policy.unit_text``).
"""

from __future__ import annotations

import codecs
import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from ._accel import (
    ACCEL_KINDS,
    ACCEL_MAX_POSITION,
    accelerated,
    accelerator,
    use_accelerator,
)
from ._accel import (
    built_accelerator as _accel_module,
)
from ._bytes import classify_unit, is_continuation, is_high_half, is_proper_prefix
from .events import DecoderStatistics, Malformed, MalformedKind, Utf8DecodeError
from .scanner import PyScanner, Scanner, held_prefix_set, scanner_type
from .variants import OPTU8, get_variant
from .variantscan import VariantScanner

# ``accelerated``, ``accelerator`` and ``use_accelerator`` live in ``_accel``; they stay
# importable from here for the follower (apps/follow.py) and older callers.
__all__ = [
    "ERROR_POLICIES",
    "GAP_ABSORB_SHIFT",
    "GAP_SKIP_SHIFT",
    "DecodedLines",
    "DecoderCheckpoint",
    "DecoderStateFlag",
    "Utf8Decoder",
    "accelerated",
    "accelerator",
    "use_accelerator",
]

#: A surrogate code point (a lone half, or a surrogateescape byte) in carried text.
_SURROGATE = re.compile("[\ud800-\udfff]")
_utf8_decode = codecs.utf_8_decode

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

#: What the internals work on: anything indexable by byte.
Bytes = bytes | bytearray | memoryview
OnMalformed = Callable[[Malformed], object]

#: Error policies understood without a ``codecs.register_error`` lookup.
ERROR_POLICIES = (
    "replace",
    "strict",
    "ignore",
    "backslashreplace",
    "surrogateescape",
    "surrogatepass",
    OPTU8,
)
_GAP_POLICIES = ("replace", "skip")


class DecodedLines(NamedTuple):
    """What ``Utf8Decoder.decode_lines`` returns."""

    #: Each complete line's text, without its newline.
    texts: list[str]
    #: The absolute offset of each line's first byte, then the offset where the
    #: undecoded rest begins (the decoder's new ``position``).  A list, or with
    #: ``each_offset=2`` possibly a ``memoryview`` of int64 (format ``"q"``).
    offsets: Sequence[int]


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
_REPLACEMENT = "\ufffd"


def _fallback_table(codec: str) -> tuple[str | None, ...]:
    """What each byte decodes to in a single-byte codec (None where it is undefined)."""
    info = codecs.lookup(codec)  # LookupError for unknown names, as codecs does
    table: list[str | None] = []
    for b in range(256):
        try:
            text = info.decode(bytes((b,)), "strict")[0]
        except UnicodeDecodeError:
            table.append(None)
            continue
        table.append(text)
        if len(text) != 1:
            raise ValueError(f"fallback codec {codec!r} is not a single-byte codec")
    every_byte = bytes(range(256))
    one_shot = info.decode(every_byte, "surrogateescape")[0]
    if one_shot != "".join(c if c is not None else chr(0xDC00 + b) for b, c in enumerate(table)):
        raise ValueError(f"fallback codec {codec!r} is not a single-byte codec")
    return tuple(table)


_new_object = object.__new__
_set_offset = Malformed.__dict__["offset"].__set__
_set_data = Malformed.__dict__["data"].__set__
_set_kind = Malformed.__dict__["kind"].__set__


def _byte_view(data: ReadableBuffer) -> Bytes:
    if isinstance(data, (bytes, bytearray)):
        return data
    view = memoryview(data)
    return view if view.format in ("B", "b", "c") and view.ndim == 1 else view.cast("B")


def _malformed(offset: int, data: bytes, kind: MalformedKind) -> Malformed:
    """``Malformed(offset, data, kind)`` without the frozen-dataclass ``__init__`` cost."""
    event: Malformed = _new_object(Malformed)
    _set_offset(event, offset)
    _set_data(event, data)
    _set_kind(event, kind)
    return event


def _escape_surrogates(data: bytes) -> str:
    return "".join([chr(0xDC00 + b) for b in data])


def _escape_backslash(data: bytes) -> str:
    return "".join([f"\\x{b:02x}" for b in data])


class _Policy:
    """What a malformed unit becomes, and the reporting of events to ``on_malformed``.

    A mapping scanner's callback is ``map_unit``.  The decoder holds this object and the
    scanner; this object holds no reference to the decoder, so that no reference cycle
    keeps a decoder (and what its scanner holds) alive until the cyclic collector runs.
    """

    __slots__ = (
        "codec",
        "constant",
        "custom",
        "errors",
        "failed_text",
        "fallback_table",
        "gap_policy",
        "on_malformed",
        "reporting",
        "surrogates_pass",
    )

    def __init__(
        self,
        errors: str,
        codec: str,
        gap_policy: str,
        fallback_table: tuple[str | None, ...] | None,
        on_malformed: OnMalformed | None,
    ) -> None:
        self.errors = errors
        self.codec = codec
        self.gap_policy = gap_policy
        self.fallback_table = fallback_table
        self.on_malformed = on_malformed
        self.surrogates_pass = errors == "surrogatepass"
        self.constant: str | None = None
        self.custom: Callable[[UnicodeError], tuple[str | bytes, int]] | None = None
        if errors == "replace":
            self.constant = _REPLACEMENT
        elif errors == "ignore":
            self.constant = ""
        elif errors not in ERROR_POLICIES:
            # Raises LookupError for unknown names, as codecs does.
            self.custom = codecs.lookup_error(errors)
        #: True while ``on_malformed`` runs from here (a scanner keeps its own flag).
        self.reporting = False
        #: The text of the unit whose callback raised, for ``Utf8Decoder._recover``.
        self.failed_text = ""

    def map_unit(self, event: Malformed) -> str:
        """A mapping scanner's callback: report the unit, return its text (or raise)."""
        if self.on_malformed is not None:
            self.report(event)
        return self.unit_text(event)

    def report(self, event: Malformed) -> None:
        """Hand ``event`` to the callback; if it raises, keep the unit's text for later.

        ``Utf8Decoder._recover`` puts that text after the text decoded before the unit,
        so a raising callback loses nothing (the decoder's class docstring).
        """
        callback = self.on_malformed
        assert callback is not None
        self.reporting = True
        try:
            callback(event)
        except BaseException:
            self.failed_text = self.text_despite_failure(event)
            raise
        finally:
            self.reporting = False

    def gap_text(self) -> str:
        return _REPLACEMENT if self.gap_policy == "replace" else ""

    def text_despite_failure(self, event: Malformed) -> str:
        """The text of the unit of ``event``, whose callback raised."""
        if event.kind is MalformedKind.LOST_BYTES:
            return self.gap_text()
        try:
            return self.unit_text(event)
        except Utf8DecodeError:
            return ""  # strict: the unit has no text, the callback's exception stands for it

    def unit_text(self, event: Malformed) -> str:
        """The text for one unit: surrogatepass, the fallback codec, or the policy."""
        data, kind = event.data, event.kind
        if self.surrogates_pass and kind is MalformedKind.SURROGATE and len(data) == 3:
            return data.decode("utf-8", "surrogatepass")
        table = self.fallback_table
        if table is not None:
            chars = [table[b] for b in data]
            if None not in chars:
                return "".join(chars)  # type: ignore[arg-type]
        constant = self.constant
        if constant is not None:
            return constant
        errors = self.errors
        if errors == "surrogateescape":
            return _escape_surrogates(data)
        if errors == "backslashreplace":
            return _escape_backslash(data)
        if errors == OPTU8:
            return "".join([chr(0xEF00 + b) for b in data])
        if self.custom is not None:
            return self._call_custom(data, kind)
        # strict, and surrogatepass for anything that is not a surrogate
        raise Utf8DecodeError(event, "", self.codec)

    def _call_custom(self, data: bytes, kind: MalformedKind) -> str:
        assert self.custom is not None
        exc = UnicodeDecodeError(self.codec, data, 0, len(data), kind.reason)
        result = self.custom(exc)
        if (
            not isinstance(result, tuple)
            or len(result) != 2
            or not isinstance(result[0], str)
            or not isinstance(result[1], int)
        ):
            raise TypeError(
                f"error handler {self.errors!r} must return a (str, int) tuple, not {result!r}"
            )
        replacement: str = result[0]
        resume: int = result[1]
        if resume < 0:
            resume += len(data)
        if resume != len(data):
            raise ValueError(
                f"error handler {self.errors!r} must resume at the end of the unit "
                f"({len(data)}), not at {resume}"
            )
        return replacement


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


class Utf8Decoder(codecs.IncrementalDecoder):
    """Incremental UTF-8 decoder following the Unicode maximal-subpart practice.

    ``errors``: ``replace`` (default), ``strict``, ``ignore``, ``backslashreplace``,
    ``surrogateescape``, ``surrogatepass`` or any name registered with
    ``codecs.register_error`` (called with a ``UnicodeDecodeError`` whose
    ``object[start:end]`` is exactly the malformed unit; it must resume at ``end``).

    ``start_offset``: absolute offset of the first byte this decoder will receive (for a
    stream opened mid-file; call ``mark_gap()`` as well if that is not a character start).

    ``gap``: what a gap becomes in the text, ``replace`` (one U+FFFD) or ``skip`` (nothing).

    ``on_malformed``: called with every ``Malformed`` event, in stream order.  If it
    raises, the exception propagates out of ``decode()`` (or ``mark_gap()``) and nothing
    is lost: the unit counts as consumed, and the text decoded before it *and the unit's
    own text* (its U+FFFD, or whatever the policy makes of it; nothing in strict mode,
    where the callback's exception takes the place of ``Utf8DecodeError``) is returned by
    the next call, followed by the rest of the failed call's input.  Replacing
    ``on_malformed`` inside the callback takes effect from the next unit.  Inside the
    callback the decoder may be read but not driven: ``statistics()`` counts every unit
    up to and including the one being reported (``bytes_fed`` includes the whole chunk
    being decoded, ``chars_out`` the characters returned by the calls that completed),
    while ``decode()``, ``mark_gap()``, ``reset()``, ``setstate()``, ``getstate()`` and
    ``checkpoint()`` raise ``RuntimeError`` (a checkpoint there would describe a call
    half done; take it when ``decode()`` returns).

    ``variant``: ``utf-8`` (default), ``wtf-8``, ``cesu-8``, ``mutf-8`` or ``utf-8z``
    (``variants.py`` has the rules).  Variants hold up to five bytes between calls: a high
    surrogate half waits for the three bytes that say whether a low half follows.

    ``fallback``: a single-byte codec (``"cp1252"``, ``"latin-1"``) for text that mixes
    UTF-8 and a legacy encoding: each malformed unit's bytes are decoded with it instead
    of applying ``errors``; a unit with a byte the fallback leaves undefined (cp1252 has
    five) goes to ``errors`` as usual.  Every unit is still reported as a ``Malformed``
    event.

    ``errors="optu-8"``: each byte b of a malformed unit becomes U+EF00+b
    (``Utf8Encoder(errors="optu-8")`` turns it back into b).
    """

    errors: str

    # Every attribute in a slot: the instance has too many for CPython's shared-key
    # dictionaries (30), so in a ``__dict__`` each access is a hashed lookup; in slots the
    # interpreter reads and writes them at fixed offsets (the pure-Python ``decode``
    # touches several per call).  A subclass's own attributes go to its ``__dict__``.
    __slots__ = (
        "_carry",
        "_chars",
        "_clean",
        "_counts",
        "_cuts_lines",
        "_dm",
        "_dm_allowed",
        "_dm_units",
        "_fallback",
        "_fallback_table",
        "_gap_absorb",
        "_gap_data",
        "_gap_offset",
        "_gap_open",
        "_gap_policy",
        "_gap_skip",
        "_gaps",
        "_in_c",
        "_inline",
        "_lost_total",
        "_new_utf8_scanner",
        "_on_malformed",
        "_orphan_low",
        "_pending",
        "_policy",
        "_position",
        "_prefixes",
        "_ready",
        "_resume_at",
        "_resume_orphan",
        "_scanner",
        "_start_offset",
        "_unread",
        "_unread_final",
        "_variant",
        "errors",
    )

    def __init__(
        self,
        errors: str = "replace",
        *,
        start_offset: int = 0,
        gap: str = "replace",
        on_malformed: OnMalformed | None = None,
        variant: str = "utf-8",
        fallback: str | None = None,
    ) -> None:
        super().__init__(errors)
        if gap not in _GAP_POLICIES:
            raise ValueError(f"gap must be one of {_GAP_POLICIES}, not {gap!r}")
        if not isinstance(start_offset, int) or start_offset < 0:
            raise ValueError("start_offset must be a non-negative integer")
        self._variant = get_variant(variant)
        self._fallback = fallback
        self._fallback_table = None if fallback is None else _fallback_table(fallback)
        self._gap_policy = gap
        self._start_offset = start_offset
        self._on_malformed = on_malformed
        self._policy = _Policy(errors, self._variant.name, gap, self._fallback_table, on_malformed)
        self._counts: dict[MalformedKind, int] = dict.fromkeys(MalformedKind, 0)
        self._chars = 0
        self._gaps = 0
        self._lost_total = 0
        #: The UTF-8 scanner implementation this decoder uses (C or Python), chosen once.
        self._new_utf8_scanner = scanner_type()
        self._scanner: Scanner | None = None
        #: Decoder mode (``_sync``): the C scanner, which holds ``_position`` and
        #: ``_pending``; None otherwise.  ``_speedups.DecoderMethod`` reads it.
        self._dm: Any = None
        #: Whether this decoder may use decoder mode: not a subclass's own ``decode``.
        self._dm_allowed = type(self).decode is Utf8Decoder.decode
        self._resume_orphan = False
        self._clear(start_offset)
        self._set_policy(errors)
        self._sync()

    @property
    def on_malformed(self) -> OnMalformed | None:
        """Called with every ``Malformed`` event, in stream order (settable)."""
        return self._on_malformed

    @on_malformed.setter
    def on_malformed(self, callback: OnMalformed | None) -> None:
        self._on_malformed = callback
        self._policy.on_malformed = callback  # read again for each unit
        scanner = self._scanner
        if scanner is not None and self._inline is not None:
            # In place, so that a callback replacing itself keeps the counts of the call
            # in progress; the scanner reads it again for each unit.
            scanner.callback = callback

    def _refuse_if_reporting(self, what: str) -> None:
        scanner = self._scanner
        if self._policy.reporting or (scanner is not None and scanner.reporting):
            raise RuntimeError(
                f"{what}() called on a Utf8Decoder from inside its own on_malformed callback"
            )

    def _set_policy(self, errors: str) -> None:
        self.errors = errors
        policy = self._policy
        self._prefixes = held_prefix_set(self._variant, policy.surrogates_pass)
        #: The scanner's constant replacement, or None: the scanner asks
        #: ``_Policy.map_unit`` for each unit's text (every policy but a plain constant).
        self._inline = (
            policy.constant
            if policy.fallback_table is None and not policy.surrogates_pass
            else None
        )
        self._build_scanner()

    def _build_scanner(self) -> None:
        """Make the scanner for this decoder's variant, policy and position.

        Plain UTF-8 (``errors`` other than surrogatepass) gets the implementation chosen
        when the decoder was made, except past ``ACCEL_MAX_POSITION``: the C scanner
        counts offsets in 64-bit integers, so there the Python one takes over and both
        implementations accept every offset.  A variant, or surrogatepass, gets a
        ``VariantScanner`` around that same implementation.
        """
        if self._scanner is not None:
            self._leave()
            self._fold_counts()
        inline = self._inline
        policy = self._policy
        callback = self._on_malformed if inline is not None else policy.map_unit
        utf8_scanner: Callable[[str | None, OnMalformed | None], Scanner] = (
            PyScanner if self._position >= ACCEL_MAX_POSITION else self._new_utf8_scanner
        )
        scanner: Scanner
        if self._variant.name != "utf-8" or policy.surrogates_pass:
            scanner = VariantScanner(
                self._variant, policy.surrogates_pass, inline, callback, utf8_scanner
            )
        else:
            scanner = utf8_scanner(inline, callback)
        self._scanner = scanner
        #: The scanner cuts lines (``decode_lines``): UTF-8, U+FFFD.
        self._cuts_lines = inline == _REPLACEMENT and not isinstance(scanner, VariantScanner)
        self._in_c = utf8_scanner is not PyScanner
        #: The scanner, if it can be put in decoder mode (``_sync``): the C one, for plain
        #: UTF-8, in a decoder whose ``decode`` is this class's.
        self._dm_units = (
            scanner
            if self._dm_allowed and type(scanner) is utf8_scanner and hasattr(scanner, "enter")
            else None
        )

    def _clear(self, position: int) -> None:
        self._position = position
        self._pending = b""
        self._unread = b""
        self._unread_final = False
        self._carry = ""
        self._gap_open = False
        self._gap_data = b""
        self._gap_offset: int | None = None
        self._gap_skip = 0
        self._gap_absorb = 0
        #: Where decoding resumes after the unit that failed (absolute).
        self._resume_at = 0
        #: WTF-8: the buffered bytes start with a low half whose high half was decoded.
        self._orphan_low = False

    def _sync(self) -> None:
        """After a change of state: is anything held that the boundary must handle?

        With nothing held, a C scanner takes the decoder's position and held prefix and
        ``decode`` is one C call per chunk (decoder mode: the ready path of ``decode``
        in C, ``BoundDecode`` in ``_speedups.c``; anything else it hands to ``decode``
        here).  Whatever changes the state otherwise leaves decoder mode first
        (``_leave``), and ``_pull`` reads the state without leaving.
        """
        units = self._dm
        if units is not None:
            # The state is the C scanner's, and nothing is held: whatever changes the
            # state here leaves decoder mode first.
            if units is self._scanner:
                return
            self._leave()  # the scanner was replaced (a test's wrapper)
        if self._in_c and self._position >= ACCEL_MAX_POSITION:
            self._build_scanner()
        held = self._gap_open or self._unread or self._carry or self._orphan_low
        #: The scanner, when decode() can hand it the call as it is; else None.
        self._ready = None if held else self._scanner
        units = self._dm_units
        if not held and units is not None and units is self._scanner:
            units.enter(self._position, self._pending)
            self._dm = units
            self._ready = None  # decode() here in decoder mode goes to the boundary
        self._set_clean()

    def _set_clean(self) -> None:
        """``_clean``: ``bytes`` when the ready scanner is the plain pure-Python one and
        ``decode`` may run its clean path itself (one Python frame per call, as codecs'
        incremental decoder has): no damage lately, no callback in progress; else None.
        ``decode`` compares the input's type with it, one test per call.  Asked again
        after every call of the scanner, where its state changes (``decode`` and
        ``decode_lines`` set it to None while they call the scanner, so that a call from
        inside a callback never takes the clean path)."""
        ready = self._ready
        self._clean = (
            bytes
            if type(ready) is PyScanner
            and ready._dirty <= 0  # noqa: SLF001
            and not ready.reporting
            else None
        )

    def _pull(self) -> None:
        """In decoder mode, read the position and held prefix from the C scanner."""
        units = self._dm
        if units is not None:
            self._position = units.position
            self._pending = units.pending

    def _leave(self) -> None:
        """Leave decoder mode (if in it): the state is this object's again."""
        units = self._dm
        if units is not None:
            self._dm = None
            self._position, self._pending = units.leave()
            self._ready = self._scanner  # nothing was held
            self._set_clean()

    def _c_failed(self, exc: BaseException, pending: bytes, data: bytes, final: bool) -> None:
        """The C ``decode`` of decoder mode failed (the scanner raised while it decoded
        ``pending + data``; ``position`` counts ``data``): keep what ``decode`` keeps."""
        self._leave()
        scanner = self._scanner
        assert scanner is not None
        self._scanner_failed(exc, scanner, pending + data, final, [], len(data))

    # -- public API ------------------------------------------------------------------

    @property
    def position(self) -> int:
        """Absolute offset of the next byte this decoder will receive."""
        units = self._dm
        return self._position if units is None else int(units.position)

    @property
    def start_offset(self) -> int:
        return self._start_offset

    @property
    def gap_policy(self) -> str:
        return self._gap_policy

    @property
    def variant(self) -> str:
        """``utf-8``, ``wtf-8``, ``cesu-8``, ``mutf-8`` or ``utf-8z``."""
        return self._variant.name

    @property
    def fallback(self) -> str | None:
        """The single-byte codec that decodes malformed units, if any."""
        return self._fallback

    @property
    def buffered(self) -> int:
        """Bytes held between calls (pending prefix, unread rest, or gap bytes)."""
        self._pull()
        return len(self._pending) + len(self._unread) + len(self._gap_data)

    def decode(self, input: ReadableBuffer, final: bool = False) -> str:  # noqa: A002
        """Decode a chunk; return everything that is already certain.

        ``input`` is any bytes-like object.  Only a proper prefix of a well-formed
        sequence is held back.  With ``final=True`` a held prefix becomes one
        ``TRUNCATED_AT_END`` unit.
        """
        if type(input) is self._clean:
            # Pure Python, nothing held at the boundary, no damage lately (``_clean`` is
            # ``bytes`` only then): the clean path of ``PyScanner.feed`` here, one
            # Python frame per call (as codecs' incremental decoder).  CPython's strict
            # decoder does it all, or fails having changed nothing, and ``feed`` below
            # decides the units from the same state.
            pending = self._pending
            buf = pending + input if pending else input
            try:
                text, used = _utf8_decode(buf, "strict", final)
            except UnicodeDecodeError:
                pass
            else:
                size = len(buf)
                if used == size:
                    if pending:
                        self._pending = b""
                        size -= len(pending)
                    self._position += size
                    self._chars += len(text)
                    return text
                tail = buf[used:]
                # A character cut by the chunk's end: CPython holds exactly the proper
                # prefixes, and ED A0..BF (a surrogate's start, certain already: ``feed``
                # decides it).
                if tail[0] != 0xED or len(tail) < 2 or tail[1] < 0xA0:
                    self._pending = tail
                    self._position += len(input)
                    self._chars += len(text)
                    return text
        data = input if type(input) is bytes else bytes(_byte_view(input))
        self._clean = None  # until the scanner is done (a callback may call decode)
        try:
            scanner = self._ready
            parts: list[str] | None = None
            if scanner is None:
                parts, data, final = self._boundary(data, final)
                scanner = self._scanner
                assert scanner is not None
            else:
                self._position += len(data)
            # The one scanner call: ``pending + data`` ends at ``position``.
            pending = self._pending
            try:
                text, self._pending = scanner.feed(pending, data, final, self._position)
            except BaseException as exc:
                # ``fed``: what to take back from ``position`` if the scanner refused a
                # call from inside a callback (only the common path can reach it: the
                # boundary refuses such calls itself).
                fed = len(data) if parts is None else 0
                self._scanner_failed(exc, scanner, pending + data, final, parts or [], fed)
                raise
            if parts is None:
                return text
            return self._output(parts, text)
        finally:
            self._set_clean()

    def _boundary(self, data: bytes, final: bool) -> tuple[list[str], bytes, bool]:
        """What is held goes first: carried text, unread input, an open gap.

        Returns the text so far, and the bytes and finality for the scanner (no bytes
        while a gap stays open).  ``position`` then counts ``data``.
        """
        self._refuse_if_reporting("decode")
        self._leave()
        parts: list[str] = []
        if self._carry:
            parts.append(self._carry)
            self._carry = ""
        unread = self._unread
        full = (unread or self._pending) + data  # all input not consumed before this call
        if unread:
            final = final or self._unread_final
            self._unread = b""
            self._unread_final = False
        buf = unread + data
        self._position += len(data)
        if self._gap_open:
            try:
                taken = self._consume_gap(buf, final, parts)
            except BaseException as exc:
                self._recover(exc, parts, full, final)
                raise
            buf = b"" if self._gap_open else buf[taken:]
        if self._orphan_low:
            scanner = self._scanner
            assert isinstance(scanner, VariantScanner)
            scanner.orphan_low = True
            self._orphan_low = False
        return parts, buf, final

    def _output(self, parts: list[str], scanned: str) -> str:
        """The text of a call that started at the boundary; ``scanned``: the scanner's."""
        self._sync()
        parts.append(scanned)
        text = "".join(parts)
        self._chars += len(text) - len(scanned)  # the scanner counts its own
        return text

    # -- the line seam: decoding and cutting lines in one pass -----------------------------
    #
    # The line engine asks the decoder to cut lines from the bytes while it decodes them.
    # Where this decoder cannot (a policy other than ``replace``, a variant, or something
    # held at the boundary) ``decode_lines`` returns ``None`` and changes nothing: the
    # engine then calls ``decode()`` and cuts the text itself.  Same text, events,
    # statistics either way.

    def decode_lines(
        self,
        head: bytes,
        data: bytes | memoryview,
        sep: int,
        limit: int,
        each_offset: int = True,
    ) -> DecodedLines | None:
        """Decode the complete lines at the start of ``head + data``, or return ``None``.

        For a reader that holds its unfinished line itself (the line engine); also
        ``None`` while a prefix is held.  ``head + data`` starts at ``position``.  Lines
        end at the byte ``sep`` (-1: universal newlines; a ``\r`` that ends the buffer
        ends no line yet); decoding stops before the first unterminated line or the
        first line with more than ``limit`` bytes, which the reader handles with
        ``decode()``.  Events and statistics are those of ``decode()`` of the bytes
        consumed.  A callback that raises leaves this decoder unusable (the follower
        catches that).  ``each_offset=False``: ``offsets`` holds only the end of the
        last line (a reader that hands out no offsets saves an int per line);
        ``each_offset=2``: all of them, packed where the accelerator cuts the lines (a
        ``memoryview`` of int64: no int object per line; a list otherwise).
        """
        parts: list[str]
        offsets: Sequence[int]
        units = self._dm
        if units is not None:
            if not self._cuts_lines or units.pending:
                return None
            parts, offsets = units.lines(head, data, units.position, sep, limit, each_offset)
            units.position = offsets[-1]
            return DecodedLines(parts, offsets)
        scanner = self._ready
        if scanner is None or not self._cuts_lines or self._pending:
            return None
        self._clean = None  # until the scanner is done (a callback may call decode)
        try:
            parts, offsets = scanner.lines(head, data, self._position, sep, limit, each_offset)
        finally:
            self._set_clean()
        self._position = offsets[-1]
        return DecodedLines(parts, offsets)

    def _scanner_failed(
        self,
        exc: BaseException,
        scanner: Scanner,
        data: bytes,
        final: bool,
        parts: list[str],
        fed: int,
    ) -> None:
        """The scanner raised while it decoded ``data``, which ends at ``position``.

        ``fed``: the length of the call's input, already added to ``position``.
        """
        if scanner.reporting:
            # This call came from inside the callback of a call in progress, and the
            # scanner refused it before it changed anything.
            self._position -= fed
            return
        if scanner.fail_start < 0:
            # Not at a unit (no memory for the text): the call is undone and its input
            # kept; units it reported before failing are reported and counted again.
            self._resume_at = self._position - len(data)
            self._recover(exc, parts, data, final)
            return
        self._resume_at = scanner.resume_at
        if self._inline is not None:
            # The user's callback raised inside the scanner: its unit's text is the
            # constant (``_Policy.report`` keeps it otherwise).
            self._policy.failed_text = self._inline
        if isinstance(scanner, VariantScanner):
            self._resume_orphan = scanner.resume_orphan
        parts.append(scanner.partial)
        self._recover(exc, parts, data, final)

    def end_pending(self, next_byte: int) -> str:
        """The text of a held proper prefix that ``next_byte`` does not continue.

        ``next_byte`` is the byte the next ``decode`` will start with, not decoded here:
        the prefix is the malformed unit that call would begin with, reported, counted
        and given its text now, so that the text of the bytes decoded so far is
        complete (a piece of a line cut there).  ``""`` when nothing such is held: no
        prefix, one ``next_byte`` continues, a variant's, or input held after a failure.
        """
        self._refuse_if_reporting("end_pending")
        self._pull()
        pending = self._pending
        if (
            not pending
            or self._variant.name != "utf-8"
            or self._unread
            or self._carry
            or self._gap_open
            or is_proper_prefix(pending + bytes((next_byte,)))
        ):
            return ""
        self._leave()
        self._pending = b""
        kind = classify_unit(pending + bytes((next_byte,)), 0, len(pending), False)
        self._counts[kind] += 1
        policy = self._policy
        try:
            text = policy.map_unit(_malformed(self._position - len(pending), pending, kind))
        except BaseException:
            # As after a failed ``decode``: the unit is consumed, a callback's text waits
            # for the next call.
            self._carry, policy.failed_text = policy.failed_text, ""
            raise
        finally:
            self._sync()
        self._chars += len(text)
        return text

    def mark_gap(self, lost: int | None = None) -> None:
        """Declare that bytes were lost here (``lost`` of them, if known).

        The held partial sequence and up to three continuation bytes at the start of the
        following input belong to the gap: one ``LOST_BYTES`` event and, with
        ``gap="replace"``, one U+FFFD.  Consecutive gaps merge into one.  If a strict-mode
        error left input unread, that input is decoded first (its text is returned by the
        next ``decode``), which may raise the next ``Utf8DecodeError`` here.  A variant's
        complete high surrogate half, held to see what follows, is decided first: the gap
        follows it, so it is lone.
        """
        self._refuse_if_reporting("mark_gap")
        if lost is not None and (not isinstance(lost, int) or lost < 0):
            raise ValueError("lost must be a non-negative integer or None")
        self._leave()
        if self._unread:
            self._carry = self.decode(b"", self._unread_final)
            self._chars -= len(self._carry)  # counted when a later call returns it
            self._leave()  # that call may have entered decoder mode: the state is changed here
        position = self._position
        if lost:
            self._position += lost
            self._lost_total += lost
        head = b""
        if self._variant.holds_pairs and is_high_half(self._pending, 0):
            # A variant's complete high half, held to see what follows: a gap follows.
            head, self._pending = self._pending[:3], self._pending[3:]
        if not self._gap_open:
            self._gaps += 1
            self._gap_open = True
            self._gap_data = self._pending
            self._gap_offset = position - len(self._pending) if self._pending else None
            self._gap_skip = 3
            self._gap_absorb = 0
            self._pending = b""
        self._sync()
        if head:
            # Decided as the end of a stream: nothing follows the high half.
            scanner = self._scanner
            assert scanner is not None
            try:
                text, _ = scanner.feed(b"", head, True, position - len(self._gap_data))
            except BaseException:
                policy = self._policy
                if scanner.fail_start >= 0 and self._inline is not None:
                    policy.failed_text = self._inline
                self._carry += scanner.partial + policy.failed_text
                policy.failed_text = ""
                self._sync()
                raise
            self._chars -= len(text)  # counted when a later call returns it
            self._carry += text
            self._sync()

    def reset(self) -> None:
        """Forget held bytes and any open gap; the position returns to ``start_offset``.

        Statistics are cumulative and survive a reset.
        """
        self._refuse_if_reporting("reset")
        self._leave()
        self._clear(self._start_offset)
        self._sync()

    def getstate(self) -> tuple[bytes, int]:
        """``(buffered bytes, flags)`` per the ``codecs.IncrementalDecoder`` contract.

        ``flags`` is an ``int`` made of ``DecoderStateFlag`` bits and, while a gap is
        open, its two counters (``GAP_ABSORB_SHIFT``, ``GAP_SKIP_SHIFT``).

        Feeding the buffered bytes to a decoder after ``setstate((b"", flags))`` puts it in
        the same state, which is what ``io.TextIOWrapper.tell()`` relies on.  Text held
        back after a callback raised is not part of this state (``checkpoint`` has it).
        """
        self._refuse_if_reporting("getstate")
        self._pull()
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
        return (self._pending, int(orphan))

    def setstate(self, state: tuple[bytes, int]) -> None:
        self._refuse_if_reporting("setstate")
        buffered, flags = state
        buffered = bytes(buffered)
        self._leave()
        self._clear(self._position)
        if flags & DecoderStateFlag.GAP_OPEN:
            self._gap_open = True
            self._gap_data = buffered
            absorb = (flags >> GAP_ABSORB_SHIFT) & _GAP_ABSORB_MASK
            self._gap_absorb = max(0, absorb - len(buffered))
            self._gap_skip = (flags >> GAP_SKIP_SHIFT) & _GAP_SKIP_MASK
        elif buffered in self._prefixes:
            self._pending = buffered
        else:
            self._unread = buffered
            self._unread_final = bool(flags & DecoderStateFlag.UNREAD_FINAL)
        self._orphan_low = bool(flags & DecoderStateFlag.ORPHAN_LOW)
        self._sync()

    def checkpoint(self) -> DecoderCheckpoint:
        """An immutable snapshot from which ``from_checkpoint`` continues exactly."""
        self._refuse_if_reporting("checkpoint")
        self._pull()
        self._fold_counts()
        return DecoderCheckpoint(
            position=self._position,
            start_offset=self._start_offset,
            errors=self.errors,
            gap=self._gap_policy,
            variant=self._variant.name,
            fallback=self._fallback,
            orphan_low=self._orphan_low,
            pending=self._pending,
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

    @classmethod
    def from_checkpoint(
        cls, checkpoint: DecoderCheckpoint, *, on_malformed: OnMalformed | None = None
    ) -> Utf8Decoder:
        """A decoder that continues exactly where the checkpointed one stood."""
        cp = checkpoint
        decoder = cls(
            cp.errors,
            start_offset=cp.start_offset,
            gap=cp.gap,
            on_malformed=on_malformed,
            variant=cp.variant,
            fallback=cp.fallback,
        )
        decoder._leave()
        decoder._position = cp.position
        decoder._orphan_low = cp.orphan_low
        decoder._pending = cp.pending
        decoder._unread = cp.unread
        decoder._unread_final = cp.unread_final
        decoder._carry = cp.carry
        decoder._gap_open = cp.gap_open
        decoder._gap_data = cp.gap_data
        decoder._gap_offset = cp.gap_offset
        decoder._gap_skip = cp.gap_skip % 4
        decoder._gap_absorb = cp.gap_skip // 4
        decoder._lost_total = cp.lost_total
        decoder._chars = cp.chars_out
        decoder._gaps = cp.gaps
        for name, count in cp.malformed_counts.items():
            decoder._counts[MalformedKind[name]] = count
        decoder._sync()
        return decoder

    def statistics(self) -> DecoderStatistics:
        """Bytes fed, characters produced, malformed units by kind, gaps.

        Exact at any time, also inside a callback (see ``on_malformed`` in the class
        docstring for what it counts there).
        """
        self._pull()
        self._fold_counts()
        return DecoderStatistics(
            bytes_fed=self._position - self._start_offset - self._lost_total,
            chars_out=self._chars,
            malformed=MappingProxyType({k: n for k, n in self._counts.items() if n}),
            gaps=self._gaps,
            lost_bytes_declared=self._lost_total,
        )

    def _fold_counts(self) -> None:
        """Add what the scanner counted since the last fold to ``_counts``/``_chars``."""
        counts = self._counts
        scanner = self._scanner
        if scanner is not None:
            *by_kind, chars = scanner.drain()
            self._chars += chars
            for kind, n in zip(ACCEL_KINDS, by_kind, strict=True):
                if n:
                    counts[kind] += n

    # -- the boundary --------------------------------------------------------------------

    def _consume_gap(self, buf: bytes, final: bool, parts: list[str]) -> int:
        """Swallow the bytes that belong to an open gap; close it once that is decided."""
        n = len(buf)
        base = self._position - n
        i = 0
        while self._gap_absorb and i < n:
            self._gap_take(buf, i, base)
            self._gap_absorb -= 1
            i += 1
        while self._gap_skip and i < n and is_continuation(buf[i]):
            self._gap_take(buf, i, base)
            self._gap_skip -= 1
            i += 1
        if self._gap_absorb == 0 and (i < n or self._gap_skip == 0 or final):
            offset = self._gap_offset if self._gap_offset is not None else base + i
            data = self._gap_data
            self._gap_open = False
            self._gap_data = b""
            self._gap_offset = None
            parts.append(self._report_gap(data, offset, base + i))
        return i

    def _gap_take(self, buf: bytes, i: int, base: int) -> None:
        if self._gap_offset is None:
            self._gap_offset = base + i
        self._gap_data += buf[i : i + 1]

    def _report_gap(self, data: bytes, offset: int, resume: int) -> str:
        self._counts[MalformedKind.LOST_BYTES] += 1
        self._resume_at = resume
        self._resume_orphan = False
        policy = self._policy
        if policy.on_malformed is not None:
            policy.report(_malformed(offset, data, MalformedKind.LOST_BYTES))
        return policy.gap_text()

    # -- failure recovery ------------------------------------------------------------

    def _recover(self, exc: BaseException, parts: list[str], full: bytes, final: bool) -> None:
        """After a failure: keep the unconsumed input, hand over the decoded text.

        ``full`` ends at ``position`` and holds every byte not consumed yet.
        """
        keep = min(len(full), max(0, self._position - self._resume_at))
        self._pending = b""
        self._unread = full[len(full) - keep :]
        self._unread_final = final  # the rest still ends the stream if this call did
        self._orphan_low = bool(keep) and self._resume_orphan
        self._resume_orphan = False
        policy = self._policy
        parts.append(policy.failed_text)  # the unit whose callback raised, if one did
        policy.failed_text = ""
        partial = "".join(parts)
        if isinstance(exc, Utf8DecodeError):
            exc.partial = partial
            self._chars += len(partial)
        else:
            self._carry = partial
        self._sync()


def _install_decoder_mode() -> None:
    """``Utf8Decoder.decode`` becomes the C descriptor over it, where the C module is built.

    For a decoder in decoder mode it gives the one-C-call ``decode``; for any other, the
    ordinary bound method (``_speedups.DecoderMethod``).
    """
    built = _accel_module()
    if built is not None and hasattr(built, "DecoderMethod"):
        setattr(Utf8Decoder, "decode", built.DecoderMethod(Utf8Decoder.decode))  # noqa: B010


_install_decoder_mode()


def line_units(decoder: Utf8Decoder) -> Any:
    """The line engine's seam into a decoder in decoder mode (``LineSplitter.feed_bytes``,
    once per chunk): the C scanner whose ``lines`` the engine may call itself, because
    it is what ``decoder.decode_lines`` would call — nothing held, lines cut with U+FFFD
    for a malformed unit, ``decode_lines`` not overridden; else None."""
    units = decoder._dm  # noqa: SLF001 (the decoder's own module)
    if (
        units is None
        or units.pending
        or not decoder._cuts_lines  # noqa: SLF001
        or type(decoder).decode_lines is not Utf8Decoder.decode_lines
    ):
        return None
    return units


def stream_mark(decoder: Utf8Decoder) -> tuple[int, Any]:
    """``(decoder.position, decoder.getstate())`` in one call (in decoder mode, read
    from the C scanner): the line engine compares it between chunks to tell whether the
    decoder was used elsewhere."""
    units = decoder._dm  # noqa: SLF001
    if units is not None:
        return units.position, (units.pending, 0)
    return decoder.position, decoder.getstate()
