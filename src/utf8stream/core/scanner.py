"""The scanner seam: valid runs and malformed units in UTF-8 bytes, lines cut on the way.

A *scanner* reads a buffer of bytes, decodes its valid runs, finds each malformed unit
(a maximal subpart, classified by Table 3-7 in ``_bytes.py``), counts it, reports it as a
``Malformed`` event to its callback, and puts the unit's text in its place: a constant
replacement (one U+FFFD, or nothing) given when the scanner is made, or, made without
one (``None``), whatever the callback returns for that unit (a *mapping* scanner: the
decoder's error policy is that callback).  It holds a proper prefix at the end of a
non-final buffer, and it can cut the text into lines at newline bytes as it goes.
Everything else (the error policies, gaps, checkpoints, what a failed call leaves
behind) is the decoder's policy, in ``decoder.py``.

The interface is ``Scanner`` below.  For UTF-8 it has exactly two implementations, with
the same results, events and counts for every input: ``_speedups.Units`` (C, an own
decoding loop) and ``PyScanner`` (pure Python, CPython's UTF-8 decoder with an error
handler, as ``stringlib``'s decoder leaves the policy to its caller).  ``scanner_type()``
gives the one in use: the C one when ``_accel`` found the compiled module at import, and
``use_accelerator`` is the switch between them (for the tests).  The variants of
``variants.py`` and UTF-8 with ``errors="surrogatepass"`` are a policy over whichever
of the two is in use (``variantscan.py``), not a third implementation.
"""

from __future__ import annotations

import codecs
import threading
from collections.abc import Callable, Container, Sequence
from typing import TYPE_CHECKING, Protocol

from . import linesearch
from ._accel import ACCEL_KINDS, accelerator
from ._bytes import (
    LONE_KIND,
    ByteTable,
    classify_unit,
    held_prefixes,
    is_proper_prefix,
)
from ._native import each_offset_mode
from .events import Malformed, MalformedKind
from .variants import Variant

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer as Buffer

__all__ = ["PyScanner", "Scanner", "as_bytes", "held_prefix_set", "scanner_type"]

OnUnit = Callable[[Malformed], object]


class Scanner(Protocol):
    """What the decoder asks of a scanner (``Units`` in ``_speedups.c`` documents each).

    The scanner holds the state of its stream: ``position``, the absolute offset of the
    next byte, and ``pending``, the held proper prefix of a cut character (its decoder
    reads and sets both).  ``decode(data, final)``: the next chunk of the stream (any
    bytes-like ``data``): ``position`` counts ``data``, the text of ``pending + data``
    is returned and its held prefix becomes ``pending`` (after a failure ``pending`` is
    unchanged and ``position`` counts ``data``; a call refused, nothing changed).
    ``feed(pending, data, final, position)``: decode ``pending + data`` (``pending`` a
    held proper prefix), which ends at the absolute offset ``position``, leaving the
    stream's state alone; returns the text and the new held prefix.
    ``lines(head, data, position, sep, limit, each_offset=True)``: the complete lines
    at the start of ``head + data`` (which starts at ``position``), up to the first
    longer than ``limit`` bytes: ``(texts, offsets)``, ``offsets`` holding each line's
    start then the end of the last (only that end when ``each_offset`` is false; with
    ``each_offset`` 2 the accelerator packs them in a ``memoryview`` of int64, the
    Python scanner gives a list: both are a ``Sequence[int]``).
    ``drain()``: the units counted by kind
    (``ACCEL_KINDS`` order) and the characters returned since the last drain.  When the
    callback raises (or a mapping callback returns something other than a ``str``:
    ``TypeError``), the exception propagates, ``fail_start`` is where the failing unit
    starts in ``pending + data`` (-1: the call failed elsewhere), ``resume_at`` the
    absolute offset after it, and after ``feed`` ``partial`` is the text of
    the call before that unit.  ``reporting`` is true while the callback runs; then
    every call raises ``RuntimeError``.  ``lines`` needs a one-character replacement.
    """

    callback: OnUnit | None
    position: int
    pending: bytes

    @property
    def fail_start(self) -> int: ...
    @property
    def resume_at(self) -> int: ...
    @property
    def reporting(self) -> int: ...
    @property
    def partial(self) -> str: ...
    def decode(self, data: Buffer, final: bool = False, /) -> str: ...
    def feed(
        self, pending: bytes, data: bytes, final: bool, position: int, /
    ) -> tuple[str, bytes]: ...
    def lines(
        self,
        head: bytes,
        data: bytes | memoryview,
        position: int,
        sep: int,
        limit: int,
        each_offset: int = True,
        /,
    ) -> tuple[list[str], Sequence[int]]: ...
    def drain(self) -> tuple[int, ...]: ...


_HANDLER_NAME = "utf8stream.scanner"
_utf8_decode = codecs.utf_8_decode
#: The Python scanner whose buffer CPython's decoder is working on in this thread: the
#: one error handler below hands each unit to it (a handler is registered by name, once
#: per process, and gets nothing but the exception).
_local = threading.local()
_KIND_INDEX = {kind: i for i, kind in enumerate(ACCEL_KINDS)}
_BYTE = [bytes([b]) for b in range(128)]
#: After a malformed unit, decode with the error handler for this many bytes before
#: trying the strict decoder again: a failed strict attempt costs an exception, which a
#: damaged stream would pay again and again.
_DIRTY_WINDOW = 1 << 16

_new_object = object.__new__
_set_offset = Malformed.__dict__["offset"].__set__
_set_data = Malformed.__dict__["data"].__set__
_set_kind = Malformed.__dict__["kind"].__set__


def _on_unit(exc: UnicodeError) -> tuple[str, int]:
    """Called by CPython's decoder once per maximal subpart, for the running scanner.

    The whole per-unit work of ``PyScanner`` in this one Python frame (count it, report
    it, give its text): a damaged stream pays it for every unit.
    """
    scanner: PyScanner = _local.scanner
    obj: bytes = exc.object  # type: ignore[attr-defined]
    start: int = exc.start  # type: ignore[attr-defined]
    end: int = exc.end  # type: ignore[attr-defined]
    kind: MalformedKind = LONE_KIND[obj[start]] or classify_unit(obj, start, end, True)
    scanner._counts[_KIND_INDEX[kind]] += 1  # noqa: SLF001
    scanner._dirty = _DIRTY_WINDOW  # noqa: SLF001
    callback = scanner.callback
    text = scanner._replacement  # noqa: SLF001
    if callback is None:
        # Nothing can fail at this unit, so ``partial`` will not need it recorded.
        assert text is not None
        return text, end
    event: Malformed = _new_object(Malformed)
    base = scanner._base  # noqa: SLF001
    shift = scanner._shift  # noqa: SLF001
    _set_offset(event, base + start)
    _set_data(event, obj[start:end])
    _set_kind(event, kind)
    scanner._fail_start = shift + start  # noqa: SLF001
    scanner._resume_at = base + end  # noqa: SLF001
    scanner._reporting = 1  # noqa: SLF001
    try:
        result = callback(event)
    finally:
        scanner._reporting = 0  # noqa: SLF001
    _local.scanner = scanner  # the callback may have run another scanner
    if text is None:
        if not isinstance(result, str):
            # Failed at this unit, as if the callback had raised.
            raise TypeError(
                f"a mapping scanner's callback must return str, not {type(result).__name__}"
            )
        text = result
    scanner._fail_start = -1  # noqa: SLF001
    scanner._records.append((shift + start, shift + end, text))  # noqa: SLF001
    return text, end


codecs.register_error(_HANDLER_NAME, _on_unit)


def as_bytes(data: Buffer) -> bytes:
    """The bytes of a bytes-like object (a view of wider items: their bytes)."""
    if type(data) is bytes:
        return data
    if isinstance(data, bytearray):
        return bytes(data)
    view = memoryview(data)
    return bytes(view if view.format in ("B", "b", "c") and view.ndim == 1 else view.cast("B"))


class _ProperPrefixes:
    """``seq in prefixes``: ``seq`` is a proper prefix of a well-formed sequence.

    Asks the table (``is_proper_prefix``) rather than holding its 17,600 answers.
    """

    __slots__ = ("_table",)

    def __init__(self, table: ByteTable) -> None:
        self._table = table

    def __contains__(self, seq: object) -> bool:
        return isinstance(seq, (bytes, bytearray, memoryview)) and is_proper_prefix(
            seq, self._table
        )


_HELD: dict[tuple[str, bool], Container[bytes]] = {}


def held_prefix_set(variant: Variant, surrogates_pass: bool) -> Container[bytes]:
    """What a decoder of ``variant`` holds at a chunk end (built on first use).

    With ``surrogates_pass`` (``errors="surrogatepass"``) ED A0..BF is a prefix too.  A
    variant that joins or rejects pairs also holds a complete high half and the start of
    a low half after it (up to five bytes).
    """
    key = (variant.name, surrogates_pass)
    prefixes = _HELD.get(key)
    if prefixes is None:
        table = variant.passing_table if surrogates_pass else variant.table
        if variant.holds_pairs:
            prefixes = held_prefixes(table, pairs=True)
        else:
            prefixes = _ProperPrefixes(table)
        _HELD[key] = prefixes
    return prefixes


class PyScanner:
    """The pure-Python scanner: ``_speedups.Units`` in Python (see ``Scanner``)."""

    __slots__ = (
        "_base",
        "_chars",
        "_counts",
        "_dirty",
        "_fail_start",
        "_partial",
        "_records",
        "_replacement",
        "_reporting",
        "_resume_at",
        "_shift",
        "callback",
        "pending",
        "position",
    )

    def __init__(self, replacement: str | None, callback: OnUnit | None) -> None:
        if replacement is None:
            if not callable(callback):
                raise TypeError("without a replacement the callback maps units")
        elif len(replacement) > 1:
            raise ValueError("the replacement is one character or none")
        self._replacement = replacement
        self.callback = callback
        self._counts = [0] * len(ACCEL_KINDS)
        self._chars = 0
        self._fail_start = -1
        self._resume_at = 0
        self._reporting = 0
        self._partial = ""
        #: ``(start, end, text)`` of each unit (or character decided by the handler) of
        #: the call so far, relative to the call's buffer: what ``partial`` is made of.
        self._records: list[tuple[int, int, str]] = []
        #: The absolute offset of the buffer CPython's decoder is working on, and where
        #: that buffer starts in the buffer of the call.
        self._base = 0
        self._shift = 0
        self._dirty = 0
        #: The stream's state, read and written by its decoder: the absolute offset of
        #: the next byte, and the held proper prefix.
        self.position = 0
        self.pending = b""

    @property
    def fail_start(self) -> int:
        return self._fail_start

    @property
    def resume_at(self) -> int:
        return self._resume_at

    @property
    def reporting(self) -> int:
        return self._reporting

    @property
    def partial(self) -> str:
        return self._partial

    def decode(self, data: Buffer, final: bool = False, /) -> str:
        if self._reporting:
            self._refuse_reentry()
        if type(data) is not bytes:
            data = as_bytes(data)
        pending = self.pending
        buf = pending + data if pending else data
        position = self.position = self.position + len(data)
        if self._dirty <= 0:
            # The common case: clean input, decoded by CPython's strict decoder with no
            # other Python frame (``_scan``'s first step, inline: small chunks pay for
            # every frame).
            try:
                text, used = _utf8_decode(buf, "strict", final)
            except UnicodeDecodeError:
                pass
            else:
                if used == len(buf):
                    self._chars += len(text)
                    if pending:
                        self.pending = b""
                    return text
                tail = buf[used:]
                if tail[0] != 0xED or len(tail) < 2 or tail[1] < 0xA0:  # see ``_scan``
                    self._chars += len(text)
                    self.pending = tail
                    return text
        text, self.pending = self._damaged(buf, final, position)
        return text

    def feed(
        self, pending: bytes, data: bytes, final: bool, position: int, /
    ) -> tuple[str, bytes]:
        if self._reporting:
            self._refuse_reentry()
        return self._scan(pending + data if pending else data, final, position)

    def _scan(self, buf: bytes, final: bool, position: int) -> tuple[str, bytes]:
        """The text of ``buf``, which ends at ``position``, and the held prefix."""
        self._fail_start = -1
        if self._dirty <= 0:
            # The common case: clean input, decoded by CPython's strict decoder.
            try:
                text, used = _utf8_decode(buf, "strict", final)
            except UnicodeDecodeError:
                pass
            else:
                if used == len(buf):
                    self._chars += len(text)
                    return text, b""
                tail = buf[used:]
                # A character cut by the chunk's end.  CPython holds exactly the proper
                # prefixes, and ED A0..BF (a surrogate's start, certain already; checked
                # against is_proper_prefix for every held tail by a test).
                if tail[0] != 0xED or len(tail) < 2 or tail[1] < 0xA0:
                    self._chars += len(text)
                    return text, tail
        return self._damaged(buf, final, position)

    def _damaged(self, buf: bytes, final: bool, position: int) -> tuple[str, bytes]:
        """``_scan`` of damaged (or recently damaged) input: the error handler decides
        each unit.  ``_decode`` inline, one Python frame less per call."""
        self._fail_start = -1
        self._partial = ""
        self._dirty -= len(buf)
        base = position - len(buf)
        self._base = base
        self._shift = 0
        _local.scanner = self
        try:
            text, used = _utf8_decode(buf, _HANDLER_NAME, final)
            if used == len(buf):
                held = b""
            else:
                held = buf[used:]
                if not is_proper_prefix(held):
                    # CPython holds ED A0, which no byte can complete: its units now.
                    self._base = base + used
                    self._shift = used
                    _local.scanner = self
                    rest, _ = _utf8_decode(held, _HANDLER_NAME, True)
                    text += rest
                    held = b""
        except BaseException:
            if self._fail_start >= 0:
                self._partial = self._text_before(buf, self._fail_start)
            raise
        finally:
            if self._records:
                self._records = []
        self._chars += len(text)
        return text, held

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
        self._refuse_reentry()
        self._check_sep(sep)
        if limit < 0:
            raise ValueError("limit must be non-negative")
        each = each_offset_mode(each_offset, "lines")  # 2 (packed): a list is as good here
        buf = head + data
        self._fail_start = -1
        self._partial = ""
        i, offsets = self._cut_lines(buf, position, sep, limit, each)
        if not i:
            return [], offsets
        try:
            text, _ = self._decode(buf[:i], position, False)  # ends in a newline: none held
        finally:
            self._records = []
        self._chars += len(text)
        return linesearch.split_text(text, chr(sep) if sep >= 0 else None), offsets

    @staticmethod
    def _cut_lines(
        buf: bytes, position: int, sep: int, limit: int, each_offset: bool
    ) -> tuple[int, list[int]]:
        """Where the complete lines of ``buf`` end, stopping before the first line longer
        than ``limit``, and the offsets (each line's start, then the end; the end only
        without ``each_offset``): the line engine's search."""
        newline = (b"\r", b"\n") if sep < 0 else _BYTE[sep]
        if not each_offset:
            # No line can be longer than what holds them all: the last end is enough.
            i = _last_line_end(buf, newline)
            if i <= limit:
                return i, [position + i]
        offsets: list[int] = []
        i = 0
        for end, after in linesearch.line_ends(buf, newline, 1):
            if end - i > limit:
                break
            offsets.append(position + i)
            i = after
        offsets.append(position + i)
        if not each_offset:
            del offsets[:-1]
        return i, offsets

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

    def _text_before(self, buf: bytes, stop: int) -> str:
        """The text of ``buf[:stop]`` as the failed call made it (``partial``).

        Between the recorded units the bytes are well-formed: CPython's decoder called
        the handler for everything else.
        """
        pieces: list[str] = []
        done = 0
        for start, end, text in self._records:
            if start >= stop:
                break
            pieces.append(buf[done:start].decode("utf-8"))
            pieces.append(text)
            done = end
        pieces.append(buf[done:stop].decode("utf-8"))
        return "".join(pieces)

    def _refuse_reentry(self) -> None:
        if self._reporting:
            raise RuntimeError(
                "a Utf8Decoder cannot decode from inside its own on_malformed callback"
            )

    def _check_sep(self, sep: int) -> None:
        if self._replacement is None or len(self._replacement) != 1:
            raise ValueError("lines need a one-character replacement")
        if not -1 <= sep <= 127:
            raise ValueError("sep must be -1 or an ASCII byte value")


def _last_line_end(buf: bytes, newline: bytes | tuple[bytes, bytes]) -> int:
    """Just past the last complete line of ``buf`` (0: none); a ``\\r`` at the end may be
    the first half of ``\\r\\n``."""
    if not isinstance(newline, tuple):
        return linesearch.last_unit(buf, newline, 0, len(buf), 1) + 1
    size = len(buf) - buf.endswith(b"\r")
    lf = linesearch.last_unit(buf, b"\n", 0, size, 1)
    return max(lf, linesearch.last_unit(buf, b"\r", lf + 1, size, 1)) + 1


def scanner_type() -> Callable[[str | None, OnUnit | None], Scanner]:
    """The scanner implementation in use: ``_speedups.Units``, or ``PyScanner``."""
    accel = accelerator()
    if accel is None:
        return PyScanner
    units: Callable[[str | None, OnUnit | None], Scanner] = accel.Units
    return units
