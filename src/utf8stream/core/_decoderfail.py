"""After a failure (strict mode, a raising callback): the unconsumed input kept, the
decoded text handed over; functions of ``Utf8Decoder``, bound in its class."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import Utf8DecodeError
from .scanner import Scanner, as_bytes
from .variantscan import VariantScanner

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer as Buffer

    from .decoder import Utf8Decoder


def scanner_failed(
    self: Utf8Decoder, exc: BaseException, scanner: Scanner, data: Buffer, final: bool
) -> None:
    """``scanner.decode(data, final)`` raised: keep what the failure leaves behind."""
    if scanner.reporting:
        # This call came from inside the callback of a call in progress, and the
        # scanner refused it before it changed anything.
        return
    try:
        data = as_bytes(data)
    except (TypeError, ValueError):
        return  # not bytes-like (or a released view): refused, nothing changed
    # The scanner's prefix is as it was before the call; its position counts ``data``.
    self._recover_scan(exc, scanner, scanner.pending + data, final, [])


def recover_scan(
    self: Utf8Decoder,
    exc: BaseException,
    scanner: Scanner,
    data: bytes,
    final: bool,
    parts: list[str],
) -> None:
    """The scanner raised while it decoded ``data``, which ends at ``position``."""
    if scanner.fail_start < 0:
        # Not at a unit (no memory for the text): the call is undone and its input
        # kept; units it reported before failing are reported and counted again.
        self._resume_at = scanner.position - len(data)
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


def recover(
    self: Utf8Decoder, exc: BaseException, parts: list[str], full: bytes, final: bool
) -> None:
    """After a failure: keep the unconsumed input, hand over the decoded text.

    ``full`` ends at ``position`` and holds every byte not consumed yet.
    """
    scanner = self._scanner
    keep = min(len(full), max(0, scanner.position - self._resume_at))
    scanner.pending = b""
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
