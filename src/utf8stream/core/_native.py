"""The pure-Python side of what ``_speedups`` offers beyond the scanner, name for name.

markupsafe's ``_native``/``_speedups`` pattern: ``_accel.implementation()`` returns the
compiled module or this one, so the encoder and the line streams call one interface and
never ask which is in use.  (The scanner pair is ``PyScanner`` and ``_speedups.Units``,
chosen by ``scanner.scanner_type()``.)  Nothing here is faster than the Python code it
stands in for; it is the same behaviour through the same seam.
"""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Awaitable, Callable, Generator
from operator import itemgetter, sub
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import linesearch
from ._bytes import classify_unit, is_proper_prefix
from ._detector_native import (
    cheapest_language,
    class_counts,
    code_page_scores,
    count_bytes,
    count_east_asian,
    count_runs,
    count_text,
)
from ._mojibake_native import find_moji, find_moji_bytes, moji_repair
from .events import Malformed, MalformedKind, codec_error_kind

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, WriteableBuffer

__all__ = [
    "BufferedAsyncIterator",
    "ByteTranscoder",
    "PlainEncoder",
    "cheapest_language",
    "class_counts",
    "code_page_scores",
    "count_bytes",
    "count_east_asian",
    "count_runs",
    "count_text",
    "find_moji",
    "find_moji_bytes",
    "find_run",
    "join_cut",
    "moji_repair",
    "normalize_piece",
    "split_lines",
]

_T = TypeVar("_T")


def each_offset_mode(mode: int, who: str) -> bool:
    """The ``each_offset`` argument of ``lines`` and ``split_lines``, checked as the
    accelerator checks it: 0 (the end only), 1 (a list), 2 (packed; a list in Python)."""
    if type(mode) not in (bool, int) or not 0 <= mode <= 2:
        raise ValueError(
            f"{who}: each_offset is 0 or False (the end only), 1 or True (a list), "
            "2 (packed int64)"
        )
    return bool(mode)


def split_lines(
    data: bytes,
    text: str,
    newline: bytes | tuple[bytes, bytes],
    base: int,
    limit: int,
    each_offset: int,
    /,
) -> tuple[list[str], list[int]] | None:
    """The whole lines of ``data``, whose code units are each one character of ``text``
    (its decoded text): the newline units found by the line engine's search
    (``linesearch.line_ends``; ``newline`` one encoded unit, or the pair of the ``\\r``
    and ``\\n`` units), each line's content the slice of ``text`` at the same units, and
    the offset of each line's start from ``base``, then of the end (the end only
    without ``each_offset``); None if a line is longer than ``limit`` bytes."""
    if isinstance(newline, tuple) and len(newline) == 2:
        unit = len(newline[0])
        valid = all(type(u) is bytes for u in newline) and unit == len(newline[1])
    else:
        unit = len(newline) if type(newline) is bytes else 0
        valid = True
    if not valid or not unit:
        raise TypeError(
            "split_lines: newline is one encoded code unit (bytes), or the pair (\\r, \\n) of them"
        )
    each = each_offset_mode(each_offset, "split_lines")  # 2 (packed): a list is as good
    if len(text) * unit != len(data) or limit < 0 or base < 0 or base + len(data) >= 1 << 63:
        raise ValueError(
            "split_lines: one character of text per code unit of data, limit >= 0, and"
            " offsets from base >= 0 below 2**63"
        )
    # Per line, C loops only (``map``, ``accumulate``): a Python step per line would cost
    # more than the search.
    ends = linesearch.line_ends(data, newline, unit, 0, hold_cr=False)
    starts = [0, *map(_second, ends)]
    stops = list(map(_first, ends))
    if stops and max(map(sub, stops, starts)) > limit:
        return None
    if unit > 1:
        to_chars = unit.__rfloordiv__
        slices = map(slice, map(to_chars, starts), map(to_chars, stops))
    else:
        slices = map(slice, starts, stops)
    contents = list(map(text.__getitem__, slices))
    return contents, list(map(base.__add__, starts)) if each else [base + starts[-1]]


_first = itemgetter(0)
_second = itemgetter(1)


class PlainEncoder:
    """The one-call encoding path: in Python, every call is the encoder's own method
    (``fallback``), which counts its characters itself, so nothing is left to drain."""

    def __init__(self, errors: str, fallback: Callable[..., bytes]) -> None:
        self.errors = errors
        self.encode = fallback

    def drain(self) -> int:
        return 0


class BufferedAsyncIterator(Generic[_T]):
    """``async for`` over a reader that produces items in batches: the items of the
    batch given to ``feed`` (popped from its end), then ``await refill(self)`` for the
    next item when they run out (``refill`` may ``feed`` a new batch).  The list is the
    reader's own, so an item taken by another way is not handed out twice."""

    __slots__ = ("_items", "_refill")

    def __init__(self, refill: Callable[[BufferedAsyncIterator[_T]], Awaitable[_T]]) -> None:
        self._refill = refill
        self._items: list[_T] = []

    def __aiter__(self) -> BufferedAsyncIterator[_T]:
        return self

    def __anext__(self) -> Awaitable[_T]:
        # As in C: whether an item is ready is decided here, and the item is taken when
        # the result is awaited (one never awaited takes nothing).  The awaitable is the
        # iterator itself, as in C: no object made per item.
        if self._items:
            return self
        return self._refill(self)

    def __await__(self) -> Generator[Any, None, _T]:
        items = self._items
        if not items:
            raise RuntimeError(
                "BufferedAsyncIterator: the buffer was emptied between __anext__() and await"
            )
        return items.pop()
        yield  # unreachable: it makes this method a generator, as __await__ must be

    def feed(self, items: list[_T], /) -> None:
        self._items = items


# -- ByteTranscoder: UTF-8 to UTF-16/32 and back (``_transcode.c``) ----------------------

_BYTE_ENCODINGS = ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
_BYTE_POLICIES = ("replace", "ignore", "strict")
#: Most output bytes per input byte, by target (``ByteTranscoder.bound``).
_GROWTH = {"utf-8": 3, "utf-16-le": 2, "utf-16-be": 2, "utf-32-le": 4, "utf-32-be": 4}
_UNIT_HANDLER = "utf8stream.byte-transcoder"
#: The transcoder whose codec call is running in this thread (error handlers are
#: registered by name, once, and get nothing but the exception).
_running = threading.local()


def _on_codec_unit(exc: UnicodeError) -> tuple[str, int]:
    transcoder: ByteTranscoder = _running.transcoder
    return transcoder._codec_unit(exc)  # noqa: SLF001


codecs.register_error(_UNIT_HANDLER, _on_codec_unit)


def _held_length(buffer: bytes) -> int:
    """The length of the proper prefix that ends ``buffer``, if any (it starts with a lead
    byte, which no unit before it can take in)."""
    for k in (3, 2, 1):
        if len(buffer) >= k and is_proper_prefix(buffer[-k:]):
            return k
    return 0


class _Stop(Exception):
    """A strict unit ends the codec's call."""


class ByteTranscoder:
    """UTF-8 to UTF-16/UTF-32 (LE/BE) or back, bytes to bytes: the twin of the compiled
    ``ByteTranscoder``, with the same output, events, counts and failures.

    The source codec's incremental decoder (CPython's, which cuts malformed UTF-8 into
    maximal subparts as ``Utf8Decoder`` does) with an error handler that names, counts
    and reports each unit, then ``str.encode``.  ``failure`` is the unit a strict call
    stopped at (the call returns the output before it); after it, or after a callback
    that raised, the input after the unit is decoded first by the next call, and the
    output already made (with the unit's replacement) comes first in the next call's.
    """

    def __init__(
        self,
        source: str,
        target: str,
        errors: str,
        callback: Callable[[Malformed], object] | None,
        position: int,
        event_type: type[Malformed],
        kinds: tuple[MalformedKind, ...],
    ) -> None:
        for what, name in (("source", source), ("target", target)):
            if name not in _BYTE_ENCODINGS:
                raise ValueError(f"ByteTranscoder: unsupported {what} encoding {name!r}")
        if "utf-8" not in (source, target):
            raise ValueError("ByteTranscoder: source or target must be utf-8")
        if errors not in _BYTE_POLICIES:
            raise ValueError(
                f"ByteTranscoder: errors must be replace, ignore or strict, not {errors!r}"
            )
        if callback is not None and not callable(callback):
            raise TypeError("ByteTranscoder: the callback must be callable or None")
        if position < 0:
            raise ValueError("ByteTranscoder: position must not be negative")
        if not isinstance(kinds, tuple) or len(kinds) != 7 or not callable(event_type):
            raise TypeError("ByteTranscoder: the event type and its 7 kinds")
        self.source, self.target, self.errors = source, target, errors
        self.callback = callback
        self.failure: Malformed | None = None
        self.reporting = 0
        self.position = position
        self._event_type = event_type
        self._kinds = kinds
        self._counts = [0] * len(kinds)
        self._chars = 0
        # A UTF-8 source is held here (CPython's incremental decoder also holds bytes
        # that are already malformed, such as ED A0); the others by their codec.
        self._codec = codecs.getincrementaldecoder(source)(_UNIT_HANDLER)
        self._pending = b""
        self._buffer = b""
        self._final = False
        self._carry = b""
        self._unread = b""
        self._unread_final = False
        #: The codec's buffer and the unit being reported in it.
        self._failed_at: tuple[bytes, int, int] | None = None

    @property
    def buffered(self) -> int:
        """Input bytes held for the next call."""
        held: bytes = self._codec.getstate()[0]
        return len(held) + len(self._pending) + len(self._unread)

    def transcode(self, data: ReadableBuffer, final: bool = False) -> bytes:
        if self.reporting:
            raise RuntimeError("a ByteTranscoder cannot transcode from inside its own callback")
        self.failure = None
        carry, self._carry = self._carry, b""
        chunk = bytes(data)
        self.position += len(chunk)
        if self._unread:
            chunk, self._unread = self._unread + chunk, b""
            final = final or self._unread_final
        self._final = final
        _running.transcoder = self
        self._failed_at = None
        try:
            if self.source == "utf-8":
                text = self._decode_utf8(chunk, final)
            else:
                text = self._codec.decode(chunk, final)
        except BaseException as exc:
            try:
                return carry + self._after_failure(exc, final)
            except BaseException:
                # The output carried into this call stays in front (a callback that
                # raises again must not lose it).
                self._carry = carry + self._carry
                raise
        finally:
            _running.transcoder = None
        self._chars += len(text)
        return carry + text.encode(self.target)

    def bound(self, n: int) -> int:
        """The most output bytes the next call with ``n`` input bytes can give: the
        output carried from a call whose callback raised, then per byte of the held
        input, the input left by a failed unit and ``n``: 2 (UTF-16) or 4 (UTF-32)
        from UTF-8, 3 to UTF-8 (a one-byte cut unit is U+FFFD)."""
        if n < 0:
            raise ValueError("ByteTranscoder.bound: n must not be negative")
        return len(self._carry) + _GROWTH[self.target] * (n + self.buffered)

    def transcode_into(
        self, data: ReadableBuffer, out: WriteableBuffer, offset: int = 0, final: bool = False
    ) -> int:
        """``transcode`` writing its output at ``out[offset:]``, which must have room for
        ``bound(len(data))`` bytes (else ValueError, and nothing is done); the number of
        bytes written.  A callback that raises leaves the output so far for the next
        call, as ``transcode`` does."""
        if self.reporting:
            raise RuntimeError("a ByteTranscoder cannot transcode from inside its own callback")
        chunk = bytes(data)
        with memoryview(out) as view:
            if view.readonly:
                raise BufferError("ByteTranscoder.transcode_into: out must be a writable buffer")
            view = view.cast("B")
            need = self.bound(len(chunk))
            if offset < 0 or offset > len(view) or len(view) - offset < need:
                raise ValueError(
                    f"ByteTranscoder.transcode_into: {need} bytes of room needed at offset "
                    f"{offset} of a buffer of {len(view)}"
                )
            result = self.transcode(chunk, final)
            view[offset : offset + len(result)] = result
        return len(result)

    def drain(self) -> tuple[int, ...]:
        """The units counted by kind (the order of ``kinds``) and the characters written
        since the last drain."""
        drained = (*self._counts, self._chars)
        self._counts = [0] * len(self._kinds)
        self._chars = 0
        return drained

    def _decode_utf8(self, chunk: bytes, final: bool) -> str:
        """Decode all but a trailing proper prefix, which is held (as C holds it)."""
        buffer = self._buffer = self._pending + chunk
        keep = 0 if final else _held_length(buffer)
        self._pending = buffer[len(buffer) - keep :]
        return codecs.utf_8_decode(buffer[: len(buffer) - keep], _UNIT_HANDLER, True)[0]

    def _codec_unit(self, exc: UnicodeError) -> tuple[str, int]:
        assert isinstance(exc, UnicodeDecodeError)
        start, end = exc.start, exc.end
        if self.source == "utf-8":
            # The codec's object leaves out the held prefix, whose first byte may say
            # what the unit before it is.
            buffer = self._buffer
            kind = classify_unit(buffer, start, end, self._final)
        else:
            buffer = exc.object  # the held bytes and the call's input
            kind = codec_error_kind(exc.reason)
        # The buffer ends at ``position``.
        event = self._event_type(self.position - len(buffer) + start, buffer[start:end], kind)
        self._counts[self._kinds.index(kind)] += 1
        self._failed_at = (buffer, start, end)
        if self.callback is not None:
            self.reporting = 1
            try:
                self.callback(event)
            finally:
                self.reporting = 0
        if self.errors == "strict":
            self.failure = event
            raise _Stop
        self._failed_at = None
        return ("\ufffd" if self.errors == "replace" else ""), end

    def _after_failure(self, exc: BaseException, final: bool) -> bytes:
        """A strict unit, or a callback that raised: keep the input after the unit and
        return (strict) or carry (callback) the output before it."""
        if self._failed_at is None:
            raise exc  # not at a unit: nothing to resume from
        buffer, start, end = self._failed_at
        self._failed_at = None
        self._codec.reset()
        self._pending = b""
        self._unread = buffer[end:]
        self._unread_final = final
        # The input before the unit is whole sequences, decoded as the call did.
        text = buffer[:start].decode(self.source, self.errors)
        if isinstance(exc, _Stop):
            self._chars += len(text)
            return text.encode(self.target)
        if self.errors == "replace":
            text += "\ufffd"
        self._chars += len(text)
        self._carry = text.encode(self.target)
        raise exc


def _member_spans(members: bytes | bytearray) -> list[tuple[int, int]]:
    """The code points set in ``members``, as ranges ``(low, high)``: a byte of all ones
    at a time where it can, bit by bit elsewhere."""
    spans: list[tuple[int, int]] = []
    for found in re.finditer(rb"\xff+|[^\x00\xff]", members):
        a, b = found.span()
        if members[a] == 0xFF:
            pieces = [(8 * a, 8 * b - 1)]
        else:
            pieces = [(8 * a + bit, 8 * a + bit) for bit in range(8) if members[a] >> bit & 1]
        for low, high in pieces:
            if spans and spans[-1][1] + 1 == low:
                spans[-1] = (spans[-1][0], high)
            else:
                spans.append((low, high))
    return spans


#: The last bitmap ``_member_pattern`` was asked for, and its pattern.
_last_pattern: list[tuple[bytes, re.Pattern[str]]] = []


def _member_pattern(members: bytes | bytearray) -> re.Pattern[str]:
    """One character that may be a member: a member of the BMP, or any code point from
    the first astral member to the last.  re looks a BMP character up in a table but
    tries astral ranges one by one: one wide range keeps the search fast, and
    ``find_run`` checks what it finds."""
    if _last_pattern and _last_pattern[0][0] == members:
        return _last_pattern[0][1]
    parts: list[str] = []
    astral: list[tuple[int, int]] = []
    for low, high in _member_spans(members):
        if low < 0x10000:
            top = min(high, 0xFFFF)
            a, b = re.escape(chr(low)), re.escape(chr(top))
            parts.append(a if low == top else f"{a}-{b}")
        if high >= 0x10000 and low <= 0x10FFFF:
            astral.append((max(low, 0x10000), min(high, 0x10FFFF)))
    if astral:
        parts.append(f"{re.escape(chr(astral[0][0]))}-{re.escape(chr(astral[-1][1]))}")
    pattern = re.compile("[" + "".join(parts) + "]" if parts else "[^\\s\\S]")
    _last_pattern[:] = [(bytes(members), pattern)]
    return pattern


def find_run(text: str, members: bytes | bytearray, shortest: int, start: int) -> int:
    """The index of the first run of at least ``shortest`` characters of ``text`` at or
    after ``start`` whose code points are set in the bitmap ``members``, or -1.

    As the compiled twin: such a run holds one of every ``shortest``-th character from
    ``start + shortest - 1``, so only those are searched (a slice with a step), and
    around the members among them the run is measured.
    """
    if shortest < 1 or start < 0:
        raise ValueError("find_run: shortest >= 1 and start >= 0")
    return _search_run(text, members, shortest, start)


def _search_run(
    text: str,
    members: bytes | bytearray,
    shortest: int,
    start: int,
    filled: tuple[memoryview, Callable[[int], None]] | None = None,
) -> int:
    """``find_run``; with ``filled`` (flags, fill), the block of each character looked up
    is filled first where its flags are 0, which may clear bits of ``members``: the
    pattern, made before, may then find more than members, each checked here."""

    def member(at: int) -> bool:
        cp = ord(text[at])
        if filled is not None and not filled[0][cp]:
            filled[1](cp >> 8)
        return cp >> 3 < len(members) and members[cp >> 3] >> (cp & 7) & 1 == 1

    pattern = _member_pattern(members)
    first = start + shortest - 1
    sampled = text[first::shortest]
    found = pattern.search(sampled)
    while found is not None:
        at = first + found.start() * shortest
        if member(at):
            a, b = at, at + 1
            while a > start and member(a - 1):
                a -= 1
            while b < len(text) and member(b):
                b += 1
            if b - a >= shortest:
                return a
            at = b
        # The next sample at or after ``at`` + 1.
        found = pattern.search(sampled, (at - first) // shortest + 1)
    return -1


def join_cut(head: str, text: str, cut: int) -> str:
    """``head + text[:cut]`` (the compiled twin makes it in one copy)."""
    if not 0 <= cut <= len(text):
        raise ValueError("join_cut: cut out of the text")
    return head + text[:cut]


def normalize_piece(
    head: str,
    text: str,
    cut: int,
    tables: tuple[
        WriteableBuffer,
        ReadableBuffer,
        Callable[[int], None],
        Callable[[str], str],
        bytes | bytearray,
    ],
    shortest: int,
) -> str | int:
    """The normalization of ``head + text[:cut]`` (``tables[3]`` normalizes), or, with
    ``shortest``, the index of the first run of at least ``shortest`` characters of
    ``text`` set in the bitmap ``tables[4]``, when there is one.

    The compiled twin does the quick check itself in one pass, from the flags
    ``tables[2]`` fills into ``tables[0]`` and ``tables[1]``; here
    ``unicodedata.normalize`` does it, on the text joined.  The bitmap has all bits set
    in a block not filled yet: as the twin fills the blocks it meets, the search for a
    run fills the block of each character it looks up.
    """
    if not 0 <= cut <= len(text) or shortest < 0:
        raise ValueError("normalize_piece: cut out of the text, or shortest < 0")
    if shortest:
        with memoryview(tables[0]) as flags:
            at = _search_run(text, tables[4], shortest, 0, (flags, tables[2]))
        if at >= 0:
            return at
    emit = join_cut(head, text, cut)
    return tables[3](emit) if emit else emit
