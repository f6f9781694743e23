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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _decoderboundary, _decoderfail, _decoderlines, _decodermode, decoderstate
from ._accel import (
    ACCEL_MAX_POSITION,
    accelerated,
    accelerator,
    use_accelerator,
)
from ._accel import (
    built_accelerator as _accel_module,
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
from .scanner import PyScanner, Scanner, held_prefix_set, scanner_type
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

_utf8_decode = codecs.utf_8_decode

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

#: What the internals work on: anything indexable by byte.
Bytes = bytes | bytearray | memoryview


def _byte_view(data: ReadableBuffer) -> Bytes:
    if isinstance(data, (bytes, bytearray)):
        return data
    view = memoryview(data)
    return view if view.format in ("B", "b", "c") and view.ndim == 1 else view.cast("B")


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
    # Set by the decoder-mode functions (``_decodermode``): the scanner ``decode`` hands
    # a call to as it is, and the type of input its clean path takes (see there).
    _ready: Scanner | None
    _clean: type[bytes] | None

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
        self._leave()
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
    _sync = _decodermode.sync
    _set_clean = _decodermode.set_clean
    _pull = _decodermode.pull
    _leave = _decodermode.leave
    _c_failed = _decodermode.c_failed
    _scanner_failed = _decoderfail.scanner_failed
    _recover = _decoderfail.recover

    # -- the boundary --------------------------------------------------------------------

    # -- failure recovery ------------------------------------------------------------


def _install_decoder_mode() -> None:
    """``Utf8Decoder.decode`` becomes the C descriptor over it, where the C module is built.

    For a decoder in decoder mode it gives the one-C-call ``decode``; for any other, the
    ordinary bound method (``_speedups.DecoderMethod``).
    """
    built = _accel_module()
    if built is not None and hasattr(built, "DecoderMethod"):
        setattr(Utf8Decoder, "decode", built.DecoderMethod(Utf8Decoder.decode))  # noqa: B010


_install_decoder_mode()


def stream_mark(decoder: Utf8Decoder) -> tuple[int, Any]:
    """``(decoder.position, decoder.getstate())`` in one call (in decoder mode, read
    from the C scanner): the line engine compares it between chunks to tell whether the
    decoder was used elsewhere."""
    units = decoder._dm  # noqa: SLF001
    if units is not None:
        return units.position, (units.pending, 0)
    return decoder.position, decoder.getstate()
