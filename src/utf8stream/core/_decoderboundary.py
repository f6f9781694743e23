"""The decoder's boundary: what is held goes first (carried text, unread input, an open
gap), and gaps (``mark_gap``); functions of ``Utf8Decoder``, bound in its class."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._bytes import is_continuation, is_high_half
from ._policy import _malformed
from .events import MalformedKind
from .variantscan import VariantScanner

if TYPE_CHECKING:
    from .decoder import Utf8Decoder


def boundary(self: Utf8Decoder, data: bytes, final: bool) -> tuple[list[str], bytes, bool]:
    """What is held goes first: carried text, unread input, an open gap.

    Returns the text so far, and the bytes and finality for the scanner (no bytes
    while a gap stays open).  ``position`` then counts ``data``.
    """
    self._refuse_if_reporting("decode")
    parts: list[str] = []
    if self._carry:
        parts.append(self._carry)
        self._carry = ""
    unread = self._unread
    scanner = self._scanner
    full = (unread or scanner.pending) + data  # all input not consumed before this call
    if unread:
        final = final or self._unread_final
        self._unread = b""
        self._unread_final = False
    buf = unread + data
    scanner.position += len(data)
    if self._gap_open:
        try:
            taken = self._consume_gap(buf, final, parts)
        except BaseException as exc:
            self._recover(exc, parts, full, final)
            raise
        buf = b"" if self._gap_open else buf[taken:]
    if self._orphan_low:
        assert isinstance(scanner, VariantScanner)
        scanner.orphan_low = True
        self._orphan_low = False
    return parts, buf, final


def output(self: Utf8Decoder, parts: list[str], scanned: str) -> str:
    """The text of a call that started at the boundary; ``scanned``: the scanner's."""
    self._sync()
    parts.append(scanned)
    text = "".join(parts)
    self._chars += len(text) - len(scanned)  # the scanner counts its own
    return text


def mark_gap(self: Utf8Decoder, lost: int | None = None) -> None:
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
    if self._unread:
        self._carry = self.decode(b"", self._unread_final)
        self._chars -= len(self._carry)  # counted when a later call returns it
    position = self._scanner.position
    if lost:
        self._move_to(position + lost)
        self._lost_total += lost
    scanner = self._scanner
    head = b""
    pending = scanner.pending
    if self._variant.holds_pairs and is_high_half(pending, 0):
        # A variant's complete high half, held to see what follows: a gap follows.
        head, pending = pending[:3], pending[3:]
        scanner.pending = pending
    if not self._gap_open:
        self._gaps += 1
        self._gap_open = True
        self._gap_data = pending
        self._gap_offset = position - len(pending) if pending else None
        self._gap_skip = 3
        self._gap_absorb = 0
        scanner.pending = b""
    self._sync()
    if head:
        # Decided as the end of a stream: nothing follows the high half.
        scanner = self._scanner
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


def consume_gap(self: Utf8Decoder, buf: bytes, final: bool, parts: list[str]) -> int:
    """Swallow the bytes that belong to an open gap; close it once that is decided."""
    n = len(buf)
    base = self._scanner.position - n
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


def gap_take(self: Utf8Decoder, buf: bytes, i: int, base: int) -> None:
    if self._gap_offset is None:
        self._gap_offset = base + i
    self._gap_data += buf[i : i + 1]


def report_gap(self: Utf8Decoder, data: bytes, offset: int, resume: int) -> str:
    self._counts[MalformedKind.LOST_BYTES] += 1
    self._resume_at = resume
    self._resume_orphan = False
    policy = self._policy
    if policy.on_malformed is not None:
        policy.report(_malformed(offset, data, MalformedKind.LOST_BYTES))
    return policy.gap_text()
