"""Decoder mode: with nothing held, the C scanner keeps the decoder's position and held
prefix, and ``decode`` is one C call per chunk (``_speedups.DecoderMethod``); functions
of ``Utf8Decoder``, bound in its class."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._accel import ACCEL_MAX_POSITION
from .scanner import PyScanner

if TYPE_CHECKING:
    from .decoder import Utf8Decoder


def sync(self: Utf8Decoder) -> None:
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


def set_clean(self: Utf8Decoder) -> None:
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


def pull(self: Utf8Decoder) -> None:
    """In decoder mode, read the position and held prefix from the C scanner."""
    units = self._dm
    if units is not None:
        self._position = units.position
        self._pending = units.pending


def leave(self: Utf8Decoder) -> None:
    """Leave decoder mode (if in it): the state is this object's again."""
    units = self._dm
    if units is not None:
        self._dm = None
        self._position, self._pending = units.leave()
        self._ready = self._scanner  # nothing was held
        self._set_clean()


def c_failed(
    self: Utf8Decoder, exc: BaseException, pending: bytes, data: bytes, final: bool
) -> None:
    """The C ``decode`` of decoder mode failed (the scanner raised while it decoded
    ``pending + data``; ``position`` counts ``data``): keep what ``decode`` keeps."""
    self._leave()
    scanner = self._scanner
    assert scanner is not None
    self._scanner_failed(exc, scanner, pending + data, final, [], len(data))
