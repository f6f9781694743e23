"""The scanner seam: valid runs and malformed units in UTF-8 bytes, lines cut on the way.

A *scanner* reads a buffer of bytes, decodes its valid runs, finds each malformed unit
(a maximal subpart, classified by Table 3-7 in ``_bytes.py``), counts it, reports it as a
``Malformed`` event to its callback, and puts a constant replacement (one U+FFFD, or
nothing) in its place; it holds a proper prefix at the end of a non-final buffer, and it
can cut the text into lines at newline bytes as it goes.  Everything else (strict mode
and the other error policies, gaps, checkpoints, what a failed call leaves behind, the
variants) is the decoder's policy, in ``decoder.py``.

The interface is ``Scanner`` below.  It has exactly two implementations, with the same
results, events and counts for every input: ``_speedups.Units`` (C, an own decoding
loop) and ``PyScanner`` (pure Python, CPython's UTF-8 decoder with an error handler, as
``stringlib``'s decoder leaves the policy to its caller).  ``scanner_type()`` gives the
one in use: the C one when ``_accel`` found the compiled module at import, and
``use_accelerator`` is the switch between them (for the tests).
"""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Callable
from typing import Protocol

from ._accel import ACCEL_KINDS, SplitFlag, accelerator
from ._bytes import LONE_KIND, classify_unit, is_proper_prefix
from .events import Malformed, MalformedKind

__all__ = ["PyScanner", "Scanner", "scanner_type"]

OnUnit = Callable[[Malformed], object]


class Scanner(Protocol):
    """What the decoder asks of a scanner (``Units`` in ``_speedups.c`` documents each).

    ``feed(pending, data, final, position)``: decode ``pending + data`` (``pending`` a
    held proper prefix), which ends at the absolute offset ``position``; returns the
    text and the new held prefix.  ``split(..., sep)``: the same with the text cut at the
    byte ``sep`` (-1: universal newlines) into ``(parts, pending, flags, chars)``.
    ``lines(head, data, position, sep, limit)``: the complete lines at the start of
    ``head + data`` (which starts at ``position``), up to the first longer than
    ``limit`` bytes: ``(texts, offsets)``.  ``drain()``: the units counted by kind
    (``ACCEL_KINDS`` order) and the characters returned since the last drain.  When the
    callback raises, the exception propagates, ``fail_start`` is where the failing unit
    starts in ``pending + data`` (-1: the call failed elsewhere) and ``resume_at`` the
    absolute offset after it.  ``reporting`` is true while the callback runs; then every
    call raises ``RuntimeError``.
    """

    callback: OnUnit | None

    @property
    def fail_start(self) -> int: ...
    @property
    def resume_at(self) -> int: ...
    @property
    def reporting(self) -> int: ...
    def feed(
        self, pending: bytes, data: bytes, final: bool, position: int, /
    ) -> tuple[str, bytes]: ...
    def split(
        self, pending: bytes, data: bytes, final: bool, position: int, sep: int, /
    ) -> tuple[list[str], bytes, int, int]: ...
    def lines(
        self, head: bytes, data: bytes, position: int, sep: int, limit: int, /
    ) -> tuple[list[str], list[int]]: ...
    def drain(self) -> tuple[int, ...]: ...


_HANDLER_NAME = "utf8stream.scanner"
_utf8_decode = codecs.utf_8_decode
_local = threading.local()
_KIND_INDEX = {kind: i for i, kind in enumerate(ACCEL_KINDS)}
_UNIVERSAL = re.compile("\r\n|\r|\n")
_NEWLINE_BYTE = re.compile(rb"[\r\n]")
#: After a malformed unit, decode with the error handler for this many bytes before
#: trying the strict decoder again: a failed strict attempt costs an exception, which a
#: damaged stream would pay again and again.
_DIRTY_WINDOW = 1 << 16

_new_object = object.__new__
_set_offset = Malformed.__dict__["offset"].__set__
_set_data = Malformed.__dict__["data"].__set__
_set_kind = Malformed.__dict__["kind"].__set__


def _on_unit(exc: UnicodeError) -> tuple[str, int]:
    """Called by CPython's decoder once per maximal subpart, for the running scanner."""
    scanner: PyScanner = _local.scanner
    obj = exc.object  # type: ignore[attr-defined]
    start: int = exc.start  # type: ignore[attr-defined]
    end: int = exc.end  # type: ignore[attr-defined]
    kind: MalformedKind = LONE_KIND[obj[start]] or classify_unit(obj, start, end, True)
    scanner._count(kind)  # noqa: SLF001
    callback = scanner.callback
    if callback is not None:
        base = scanner._base  # noqa: SLF001
        event: Malformed = _new_object(Malformed)
        _set_offset(event, base + start)
        _set_data(event, obj[start:end])
        _set_kind(event, kind)
        scanner._report(callback, event, scanner._shift + start, base + end)  # noqa: SLF001
        _local.scanner = scanner  # the callback may have run another scanner
    return scanner._replacement, end  # noqa: SLF001


codecs.register_error(_HANDLER_NAME, _on_unit)


class PyScanner:
    """The pure-Python scanner: ``_speedups.Units`` in Python (see ``Scanner``)."""

    __slots__ = (
        "_base",
        "_chars",
        "_counts",
        "_dirty",
        "_fail_start",
        "_replacement",
        "_reporting",
        "_resume_at",
        "_shift",
        "callback",
    )

    def __init__(self, replacement: str, callback: OnUnit | None) -> None:
        if len(replacement) > 1:
            raise ValueError("the replacement is one character or none")
        self._replacement = replacement
        self.callback = callback
        self._counts = [0] * len(ACCEL_KINDS)
        self._chars = 0
        self._fail_start = -1
        self._resume_at = 0
        self._reporting = 0
        #: The absolute offset of the buffer CPython's decoder is working on, and where
        #: that buffer starts in the buffer of the call.
        self._base = 0
        self._shift = 0
        self._dirty = 0

    @property
    def fail_start(self) -> int:
        return self._fail_start

    @property
    def resume_at(self) -> int:
        return self._resume_at

    @property
    def reporting(self) -> int:
        return self._reporting

    def feed(
        self, pending: bytes, data: bytes, final: bool, position: int, /
    ) -> tuple[str, bytes]:
        self._refuse_reentry()
        buf = pending + data if pending else data
        self._fail_start = -1
        text, held = self._decode(buf, position - len(buf), final)
        self._chars += len(text)
        return text, held

    def split(
        self, pending: bytes, data: bytes, final: bool, position: int, sep: int, /
    ) -> tuple[list[str], bytes, int, int]:
        self._refuse_reentry()
        self._check_sep(sep)
        # A newline byte is a character of its own, never part of a unit, so cutting the
        # text is cutting the bytes.
        text, held = self.feed(pending, data, final, position)
        flags = SplitFlag.ASCII_ONLY if text.isascii() else SplitFlag(0)
        if sep >= 0:
            return text.split(chr(sep)), held, int(flags), len(text)
        parts = _UNIVERSAL.split(text)
        if text.endswith("\r"):
            parts.pop()  # the unfinished line is the part before that "\r"
            flags |= SplitFlag.ENDS_CR
        if text.startswith("\n"):
            flags |= SplitFlag.STARTS_LF
        return parts, held, int(flags), len(text)

    def lines(
        self, head: bytes, data: bytes, position: int, sep: int, limit: int, /
    ) -> tuple[list[str], list[int]]:
        self._refuse_reentry()
        self._check_sep(sep)
        if limit < 0:
            raise ValueError("limit must be non-negative")
        buf = head + data
        n = len(buf)
        self._fail_start = -1
        offsets: list[int] = []
        i = 0
        while True:
            if sep >= 0:
                e = buf.find(sep, i)
                width = 1
            else:
                match = _NEWLINE_BYTE.search(buf, i)
                if match is None:
                    break
                e = match.start()
                width = 2 if buf[e : e + 2] == b"\r\n" else 1
                if e == n - 1 and buf[e] == 0x0D:
                    break  # perhaps the first half of \r\n
            if e < 0 or e - i > limit:
                break
            offsets.append(position + i)
            i = e + width
        offsets.append(position + i)
        if not i:
            return [], offsets
        text, _ = self._decode(buf[:i], position, False)  # ends in a newline: nothing held
        self._chars += len(text)
        texts = text.split(chr(sep)) if sep >= 0 else _UNIVERSAL.split(text)
        texts.pop()  # the empty rest after the last newline
        return texts, offsets

    def drain(self) -> tuple[int, ...]:
        counts = (*self._counts, self._chars)
        self._counts = [0] * len(ACCEL_KINDS)
        self._chars = 0
        return counts

    # -- inside --------------------------------------------------------------------------

    def _decode(self, buf: bytes, base: int, final: bool) -> tuple[str, bytes]:
        """``buf``, whose first byte is at ``base``: the text and the held prefix."""
        if self._dirty <= 0:
            # Clean so far: CPython's strict decoder does it all, or fails having
            # changed nothing.
            try:
                text, used = _utf8_decode(buf, "strict", final)
            except UnicodeDecodeError:
                pass
            else:
                tail = buf[used:]
                if not tail or is_proper_prefix(tail):
                    return text, tail
                # CPython also holds ED A0..BF, which is certain already: start over.
        self._dirty -= len(buf)
        self._base = base
        self._shift = 0
        _local.scanner = self
        text, used = _utf8_decode(buf, _HANDLER_NAME, final)
        if used == len(buf):
            return text, b""
        tail = buf[used:]
        if is_proper_prefix(tail):
            return text, tail
        # Not a prefix (CPython holds ED A0, which no byte can complete): its units now.
        self._base = base + used
        self._shift = used
        _local.scanner = self
        rest, _ = _utf8_decode(tail, _HANDLER_NAME, True)
        return text + rest, b""

    def _count(self, kind: MalformedKind) -> None:
        self._counts[_KIND_INDEX[kind]] += 1
        self._dirty = _DIRTY_WINDOW

    def _report(self, callback: OnUnit, event: Malformed, fail_start: int, resume_at: int) -> None:
        self._fail_start = fail_start
        self._resume_at = resume_at
        self._reporting = 1
        try:
            callback(event)
        finally:
            self._reporting = 0
        self._fail_start = -1

    def _refuse_reentry(self) -> None:
        if self._reporting:
            raise RuntimeError(
                "a Utf8Decoder cannot decode from inside its own on_malformed callback"
            )

    def _check_sep(self, sep: int) -> None:
        if len(self._replacement) != 1:
            raise ValueError("lines need a one-character replacement")
        if not -1 <= sep <= 127:
            raise ValueError("sep must be -1 or an ASCII byte value")


def scanner_type() -> Callable[[str, OnUnit | None], Scanner]:
    """The scanner implementation in use: ``_speedups.Units``, or ``PyScanner``."""
    accel = accelerator()
    if accel is None:
        return PyScanner
    units: Callable[[str, OnUnit | None], Scanner] = accel.Units
    return units
