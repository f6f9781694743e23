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

The stream's state lives in one place, the scanner: its ``position`` (the absolute
offset of the next byte) and ``pending`` (the held prefix).  With nothing held at the
boundary (``_ready``), ``decode`` is one call of the scanner's ``decode``, which
counts the chunk, decodes it and keeps the new prefix; ``getstate``, ``checkpoint``
and the boundary read and set that state through the scanner's attributes.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _decoderboundary, _decoderfail, _decoderlines, decoderstate
from ._accel import (
    ACCEL_MAX_POSITION,
    accelerated,
    accelerator,
    use_accelerator,
)
from ._decoderlines import DecodedLines
from ._policy import (
    _GAP_POLICIES,
    _REPLACEMENT,
    ERROR_POLICIES,
    _fallback_table,
    _Policy,
)
from ._policy import (
    OnMalformed as OnMalformed,
)
from .decoderstate import GAP_ABSORB_SHIFT, GAP_SKIP_SHIFT, DecoderCheckpoint, DecoderStateFlag
from .events import MalformedKind
from .scanner import PyScanner, Scanner, as_bytes, held_prefix_set, scanner_type
from .variants import get_variant
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

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


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
    #: The scanner, which holds the stream's position and held prefix.
    _scanner: Scanner
    #: The scanner when ``decode`` may hand it a call as it is (nothing held at the
    #: boundary); else None (``_sync``).
    _ready: Scanner | None

    # Every attribute in a slot: the instance has too many for CPython's shared-key
    # dictionaries (30), so in a ``__dict__`` each access is a hashed lookup; in slots the
    # interpreter reads and writes them at fixed offsets (the pure-Python ``decode``
    # touches several per call).  A subclass's own attributes go to its ``__dict__``.
    __slots__ = (
        "_carry",
        "_chars",
        "_counts",
        "_cuts_lines",
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
        "_policy",
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
        self._resume_orphan = False
        self._set_policy(errors)
        self._clear(start_offset)
        self._sync()

    @property
    def on_malformed(self) -> OnMalformed | None:
        """Called with every ``Malformed`` event, in stream order (settable)."""
        return self._on_malformed

    @on_malformed.setter
    def on_malformed(self, callback: OnMalformed | None) -> None:
        self._on_malformed = callback
        self._policy.on_malformed = callback  # read again for each unit
        if self._inline is not None:
            # In place, so that a callback replacing itself keeps the counts of the call
            # in progress; the scanner reads it again for each unit.
            self._scanner.callback = callback

    def _refuse_if_reporting(self, what: str) -> None:
        if self._policy.reporting or self._scanner.reporting:
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
        self._build_scanner(self._start_offset, b"")

    def _build_scanner(self, position: int, pending: bytes) -> None:
        """Make the scanner for this decoder's variant, policy and position.

        Plain UTF-8 (``errors`` other than surrogatepass) gets the implementation chosen
        when the decoder was made, except past ``ACCEL_MAX_POSITION``: the C scanner
        counts offsets in 64-bit integers, so there the Python one takes over and both
        implementations accept every offset.  A variant, or surrogatepass, gets a
        ``VariantScanner`` around that same implementation.  The new scanner takes
        the stream's state, ``position`` and ``pending``.
        """
        inline = self._inline
        policy = self._policy
        callback = self._on_malformed if inline is not None else policy.map_unit
        utf8_scanner: Callable[[str | None, OnMalformed | None], Scanner] = (
            PyScanner if position >= ACCEL_MAX_POSITION else self._new_utf8_scanner
        )
        scanner: Scanner
        if self._variant.name != "utf-8" or policy.surrogates_pass:
            scanner = VariantScanner(
                self._variant, policy.surrogates_pass, inline, callback, utf8_scanner
            )
        else:
            scanner = utf8_scanner(inline, callback)
        scanner.position = position
        scanner.pending = pending
        self._scanner = scanner
        #: The scanner cuts lines (``decode_lines``): UTF-8, U+FFFD.
        self._cuts_lines = inline == _REPLACEMENT and not isinstance(scanner, VariantScanner)
        self._in_c = utf8_scanner is not PyScanner

    def _move_to(self, position: int) -> None:
        """Set the stream's position: past the C scanner's range, on a Python one (the
        counts of the old scanner folded)."""
        if self._in_c and position >= ACCEL_MAX_POSITION:
            self._fold_counts()
            self._build_scanner(position, self._scanner.pending)
        self._scanner.position = position

    def _sync(self) -> None:
        """After a change of state: may ``decode`` hand a call to the scanner as it is?

        Only with nothing held at the boundary; and the C scanner gives way to the
        Python one where it stops counting.
        """
        self._move_to(self._scanner.position)
        held = self._gap_open or self._unread or self._carry or self._orphan_low
        self._ready = None if held else self._scanner

    def _clear(self, position: int) -> None:
        scanner = self._scanner
        scanner.position = position
        scanner.pending = b""
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

    # -- public API ------------------------------------------------------------------

    @property
    def position(self) -> int:
        """Absolute offset of the next byte this decoder will receive."""
        return self._scanner.position

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
        return len(self._scanner.pending) + len(self._unread) + len(self._gap_data)

    def decode(self, input: ReadableBuffer, final: bool = False) -> str:  # noqa: A002
        """Decode a chunk; return everything that is already certain.

        ``input`` is any bytes-like object.  Only a proper prefix of a well-formed
        sequence is held back.  With ``final=True`` a held prefix becomes one
        ``TRUNCATED_AT_END`` unit.
        """
        scanner = self._ready
        if scanner is None:
            return self._decode_held(input, final)
        try:
            return scanner.decode(input, final)
        except BaseException as exc:
            self._scanner_failed(exc, scanner, input, final)
            raise

    def _decode_held(self, input: ReadableBuffer, final: bool) -> str:  # noqa: A002
        """``decode`` with something held at the boundary."""
        data = as_bytes(input)
        parts, data, final = self._boundary(data, final)
        scanner = self._scanner
        # The one scanner call: ``pending + data`` ends at ``position``.
        pending = scanner.pending
        try:
            text, scanner.pending = scanner.feed(pending, data, final, scanner.position)
        except BaseException as exc:
            self._recover_scan(exc, scanner, pending + data, final, parts)
            raise
        return self._output(parts, text)

    # -- the line seam: decoding and cutting lines in one pass -----------------------------
    #
    # The line engine asks the decoder to cut lines from the bytes while it decodes them.
    # Where this decoder cannot (a policy other than ``replace``, a variant, or something
    # held at the boundary) ``decode_lines`` returns ``None`` and changes nothing: the
    # engine then calls ``decode()`` and cuts the text itself.  Same text, events,
    # statistics either way.

    def reset(self) -> None:
        """Forget held bytes and any open gap; the position returns to ``start_offset``.

        Statistics are cumulative and survive a reset.
        """
        self._refuse_if_reporting("reset")
        self._clear(self._start_offset)
        self._sync()

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
        decoder._move_to(cp.position)
        decoder._scanner.pending = cp.pending
        decoder._orphan_low = cp.orphan_low
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

    # The rest of the decoder, by responsibility, in modules of their own.
    getstate = decoderstate.getstate
    setstate = decoderstate.setstate
    checkpoint = decoderstate.checkpoint
    statistics = decoderstate.statistics
    _fold_counts = decoderstate.fold_counts
    _boundary = _decoderboundary.boundary
    _output = _decoderboundary.output
    mark_gap = _decoderboundary.mark_gap
    _consume_gap = _decoderboundary.consume_gap
    _gap_take = _decoderboundary.gap_take
    _report_gap = _decoderboundary.report_gap
    decode_lines = _decoderlines.decode_lines
    end_pending = _decoderlines.end_pending
    _scanner_failed = _decoderfail.scanner_failed
    _recover_scan = _decoderfail.recover_scan
    _recover = _decoderfail.recover

    # -- the boundary --------------------------------------------------------------------

    # -- failure recovery ------------------------------------------------------------


def stream_mark(decoder: Utf8Decoder) -> tuple[int, Any]:
    """``(decoder.position, decoder.getstate())``, read from the scanner where nothing
    is held at the boundary: the line engine compares it between chunks to tell whether
    the decoder was used elsewhere."""
    scanner = decoder._ready  # noqa: SLF001
    if scanner is not None:
        return scanner.position, (scanner.pending, 0)
    return decoder.position, decoder.getstate()
