"""The incremental UTF-8 decoder: exact, eager, resumable, self-synchronising.

Rule 1: everything that affects what the decoder emits lives in this file.

Theory of operation
-------------------
Bytes arrive in chunks.  The decoder keeps at most one of these between calls:

* ``pending``: 1..3 bytes that are a *proper prefix* of a well-formed sequence (the only
  thing that may legitimately be undecidable at a chunk boundary);
* ``unread``: the rest of a call's input after a strict-mode error (or an exception raised
  by a callback), decoded by the next call;
* an open *gap* (``mark_gap``): the held partial sequence plus up to three continuation
  bytes that follow belong to the gap, which becomes one ``LOST_BYTES`` event.

Each call runs in three steps.  First the boundary: an open gap swallows leading
continuation bytes, and a pending prefix is completed or broken by the first bytes of the
chunk; this is a small Python walk over at most seven bytes.  Then the bulk: the rest of the
chunk goes to CPython's C decoder ``codecs.utf_8_decode`` in one call, with an error
handler of ours that the C code invokes once per maximal subpart (CPython already cuts
ill-formed input into maximal subparts, as Unicode and WHATWG prescribe).  Finally the
tail: the C decoder leaves an unfinished sequence at the end of the chunk unconsumed; if it
is a proper prefix it becomes ``pending``, otherwise (``ED A0``: no byte can complete it)
its units are emitted at once.  So the Python work per chunk is O(1) plus O(malformed
units), and valid data never sees a Python loop.

The error handler has to find the decoder that is running; a thread-local holds it for the
duration of the C call.  Units that the C decoder reports are classified from the bytes
around them (``_bytes.classify_unit``) and turned into text by the error policy.

Strict mode, and any exception raised by a policy or callback, never poisons the decoder:
the unit that failed counts as consumed, the unconsumed rest of the input is kept as
``unread``, and the text decoded before the failure travels with the exception
(``Utf8DecodeError.partial``) or, for foreign exceptions, is returned by the next call.
"""

from __future__ import annotations

import codecs
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from ._bytes import LONE_KIND, SECOND_HI, SECOND_LO, SEQ_LEN, classify_unit
from .events import DecoderStatistics, Malformed, MalformedKind, Utf8DecodeError

__all__ = ["ERROR_POLICIES", "DecoderCheckpoint", "Utf8Decoder"]

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
)
_GAP_POLICIES = ("replace", "skip")
_REPLACEMENT = "\ufffd"
#: After a malformed unit, keep the error handler engaged for this many bytes: a failed
#: strict attempt costs an exception, which a damaged stream would pay again and again.
_DIRTY_WINDOW = 1 << 16
_HANDLER_NAME = "utf8stream.decoder"
_utf8_decode = codecs.utf_8_decode
_local = threading.local()


_REPLAY_NAME = "utf8stream.decoder.replay"


def _c_error_handler(exc: UnicodeError) -> tuple[str, int]:
    """Called by the C decoder once per maximal subpart; the common case stays inline."""
    decoder: Utf8Decoder = _local.decoder
    constant = decoder._inline  # noqa: SLF001
    if constant is None:
        return decoder._on_c_error(exc)  # noqa: SLF001
    # A constant replacement (replace, ignore): everything stays in this one frame.
    obj = exc.object  # type: ignore[attr-defined]
    start: int = exc.start  # type: ignore[attr-defined]
    end: int = exc.end  # type: ignore[attr-defined]
    kind = LONE_KIND[obj[start]] or classify_unit(obj, start, end, True)
    decoder._counts[kind] += 1  # noqa: SLF001
    decoder._clean = False  # noqa: SLF001
    callback = decoder._on_malformed  # noqa: SLF001
    if callback is not None:
        base = decoder._position - len(obj)  # noqa: SLF001
        decoder._fail_start = start  # noqa: SLF001
        decoder._resume_at = base + end  # noqa: SLF001
        event = _new_object(Malformed)
        _set_offset(event, base + start)
        _set_data(event, obj[start:end])
        _set_kind(event, kind)
        callback(event)
        _local.decoder = decoder  # the callback may have run another decoder
    return constant, end


def _c_replay_handler(exc: UnicodeError) -> tuple[str, int]:
    decoder: Utf8Decoder = _local.decoder
    return decoder._on_c_error(exc, replay=True)  # noqa: SLF001


codecs.register_error(_HANDLER_NAME, _c_error_handler)
codecs.register_error(_REPLAY_NAME, _c_replay_handler)


def _proper_prefixes(wide_ed: bool) -> frozenset[bytes]:
    """Every proper prefix of a well-formed sequence (about 17,600 of them)."""
    out: set[bytes] = set()
    for lead in range(0xC2, 0xF5):
        need = SEQ_LEN[lead]
        out.add(bytes((lead,)))
        hi = 0xBF if wide_ed and lead == 0xED else SECOND_HI[lead]
        for second in range(SECOND_LO[lead], hi + 1):
            if need > 2:
                out.add(bytes((lead, second)))
            if need > 3:
                for third in range(0x80, 0xC0):
                    out.add(bytes((lead, second, third)))
    return frozenset(out)


_PREFIXES = _proper_prefixes(wide_ed=False)
_PREFIXES_WIDE_ED = _proper_prefixes(wide_ed=True)
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
        raw["version"] = 1
        return json.dumps(raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> DecoderCheckpoint:
        """Inverse of ``to_json``."""
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.pop("version", None) != 1:
            raise ValueError("not a utf8stream decoder checkpoint (version 1)")
        for name in cls._BYTES_FIELDS:
            raw[name] = bytes.fromhex(raw.get(name, ""))
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
    raises, the exception propagates; the unit counts as consumed, and the text decoded
    before it is returned by the next call.
    """

    errors: str

    def __init__(
        self,
        errors: str = "replace",
        *,
        start_offset: int = 0,
        gap: str = "replace",
        on_malformed: OnMalformed | None = None,
    ) -> None:
        super().__init__(errors)
        if gap not in _GAP_POLICIES:
            raise ValueError(f"gap must be one of {_GAP_POLICIES}, not {gap!r}")
        if not isinstance(start_offset, int) or start_offset < 0:
            raise ValueError("start_offset must be a non-negative integer")
        self._gap_policy = gap
        self._start_offset = start_offset
        self._on_malformed = on_malformed
        self._set_policy(errors)
        self._counts: dict[MalformedKind, int] = dict.fromkeys(MalformedKind, 0)
        self._chars = 0
        self._gaps = 0
        self._lost_total = 0
        self._clear(start_offset)

    @property
    def on_malformed(self) -> OnMalformed | None:
        """Called with every ``Malformed`` event, in stream order (settable)."""
        return self._on_malformed

    @on_malformed.setter
    def on_malformed(self, callback: OnMalformed | None) -> None:
        self._on_malformed = callback
        # The C error handler inlines the common policies (see _c_error_handler).
        self._inline = None if self._surrogates_pass else self._constant

    def _set_policy(self, errors: str) -> None:
        self.errors = errors
        self._surrogates_pass = errors == "surrogatepass"
        self._prefixes = _PREFIXES_WIDE_ED if self._surrogates_pass else _PREFIXES
        self._constant: str | None = None
        self._custom: Callable[[UnicodeError], tuple[str | bytes, int]] | None = None
        if errors == "replace":
            self._constant = _REPLACEMENT
        elif errors == "ignore":
            self._constant = ""
        elif errors not in ERROR_POLICIES:
            # Raises LookupError for unknown names, as codecs does.
            self._custom = codecs.lookup_error(errors)
        self.on_malformed = self._on_malformed

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
        self._clean = True  # the last call met no malformed unit
        self._dirty_left = 0  # bytes to decode with the handler before trying strict again
        self._odd = False  # a gap, unread input or carried text is held
        self._fast = True
        # Where decoding resumes after the unit being reported (absolute), and where
        # that unit starts in the buffer the C decoder is working on.
        self._resume_at = 0
        self._fail_start = 0

    # -- public API ------------------------------------------------------------------

    @property
    def position(self) -> int:
        """Absolute offset of the next byte this decoder will receive."""
        return self._position

    @property
    def start_offset(self) -> int:
        return self._start_offset

    @property
    def gap_policy(self) -> str:
        return self._gap_policy

    @property
    def buffered(self) -> int:
        """Bytes held between calls (pending prefix, unread rest, or gap bytes)."""
        return len(self._pending) + len(self._unread) + len(self._gap_data)

    def decode(self, input: ReadableBuffer, final: bool = False) -> str:  # noqa: A002
        """Decode a chunk; return everything that is already certain.

        ``input`` is any bytes-like object.  Only a proper prefix of a well-formed
        sequence is held back.  With ``final=True`` a held prefix becomes one
        ``TRUNCATED_AT_END`` unit.
        """
        if not self._fast or type(input) is not bytes:
            if self._odd or type(input) is not bytes:
                return self._decode_general(_byte_view(input), final)
            return self._decode_units(input, final)
        # Fast path, taken while the stream is clean: at most a pending prefix is held
        # and goes in front; CPython's strict decoder does all the work.  On the first
        # malformed unit nothing has changed yet and the general path starts over.
        pending = self._pending
        data = pending + input if pending else input
        try:
            text, used = _utf8_decode(data, "strict", final)
        except UnicodeDecodeError:
            return self._decode_units(input, final)
        if used != len(data):
            tail = data[used:]
            # CPython also holds ED A0..BF, which is certain already (two units).
            if tail[0] == 0xED and tail not in self._prefixes:
                return self._decode_units(input, final)
            self._pending = tail
        elif pending:
            self._pending = b""
        self._position += len(input)
        self._chars += len(text)
        return text

    def mark_gap(self, lost: int | None = None) -> None:
        """Declare that bytes were lost here (``lost`` of them, if known).

        The held partial sequence and up to three continuation bytes at the start of the
        following input belong to the gap: one ``LOST_BYTES`` event and, with
        ``gap="replace"``, one U+FFFD.  Consecutive gaps merge into one.  If a strict-mode
        error left input unread, that input is decoded first (its text is returned by the
        next ``decode``), which may raise the next ``Utf8DecodeError`` here.
        """
        if lost is not None and (not isinstance(lost, int) or lost < 0):
            raise ValueError("lost must be a non-negative integer or None")
        if self._unread:
            self._carry = self._decode_general(b"", self._unread_final, count=False)
        position = self._position
        if lost:
            self._position += lost
            self._lost_total += lost
        if not self._gap_open:
            self._gaps += 1
            self._gap_open = True
            self._gap_data = self._pending
            self._gap_offset = position - len(self._pending) if self._pending else None
            self._gap_skip = 3
            self._gap_absorb = 0
            self._pending = b""
        self._sync()

    def reset(self) -> None:
        """Forget held bytes and any open gap; the position returns to ``start_offset``.

        Statistics are cumulative and survive a reset.
        """
        self._clear(self._start_offset)

    def getstate(self) -> tuple[bytes, int]:
        """``(buffered bytes, flags)`` per the ``codecs.IncrementalDecoder`` contract.

        Feeding the buffered bytes to a decoder after ``setstate((b"", flags))`` puts it in
        the same state, which is what ``io.TextIOWrapper.tell()`` relies on.  Text held
        back after a callback raised is not part of this state (``checkpoint`` has it).
        """
        if self._gap_open:
            absorb = len(self._gap_data) + self._gap_absorb
            return (self._gap_data, 1 | (absorb << 1) | (self._gap_skip << 4))
        if self._unread:
            return (self._unread, 64 if self._unread_final else 0)
        return (self._pending, 0)

    def setstate(self, state: tuple[bytes, int]) -> None:
        buffered, flags = state
        buffered = bytes(buffered)
        self._clear(self._position)
        if flags & 1:
            self._gap_open = True
            self._gap_data = buffered
            self._gap_absorb = max(0, ((flags >> 1) & 7) - len(buffered))
            self._gap_skip = (flags >> 4) & 3
        elif buffered in self._prefixes:
            self._pending = buffered
        else:
            self._unread = buffered
            self._unread_final = bool(flags & 64)
        self._sync()

    def checkpoint(self) -> DecoderCheckpoint:
        """An immutable snapshot from which ``from_checkpoint`` continues exactly."""
        return DecoderCheckpoint(
            position=self._position,
            start_offset=self._start_offset,
            errors=self.errors,
            gap=self._gap_policy,
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
            cp.errors, start_offset=cp.start_offset, gap=cp.gap, on_malformed=on_malformed
        )
        decoder._position = cp.position
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
        """Bytes fed, characters produced, malformed units by kind, gaps."""
        return DecoderStatistics(
            bytes_fed=self._position - self._start_offset - self._lost_total,
            chars_out=self._chars,
            malformed=MappingProxyType({k: n for k, n in self._counts.items() if n}),
            gaps=self._gaps,
            lost_bytes_declared=self._lost_total,
        )

    # -- the paths with the error handler engaged ----------------------------------------

    def _decode_units(self, chunk: bytes, final: bool) -> str:
        """The C decoder with our error handler; at most a pending prefix is held."""
        pending = self._pending
        data = pending + chunk if pending else chunk
        self._position += len(chunk)
        self._clean = True
        _local.decoder = self
        try:
            text, used = _utf8_decode(data, _HANDLER_NAME, final)
        except BaseException as exc:
            self._recover(exc, [self._partial_from_c(data)], data, final)
            raise
        if used != len(data):
            parts = [text]
            try:
                self._tail(data, used, parts)
            except BaseException as exc:
                self._recover(exc, parts, data, final)
                raise
            text = "".join(parts)
        elif pending:
            self._pending = b""
        if self._clean:
            self._dirty_left -= len(chunk)
            self._fast = self._dirty_left <= 0
        else:
            self._dirty_left = _DIRTY_WINDOW
        self._chars += len(text)
        return text

    def _decode_general(self, data: Bytes, final: bool, count: bool = True) -> str:
        """Decode with the error handler engaged: units, gaps, unread input, carried text."""
        parts: list[str] = []
        if self._carry:
            parts.append(self._carry)
            self._carry = ""
        chunk = data if type(data) is bytes else bytes(data)
        held = self._unread or self._pending
        unread = self._unread
        if unread:
            final = final or self._unread_final
            self._unread = b""
            self._unread_final = False
        self._position += len(chunk)
        self._clean = True
        try:
            self._run(unread + chunk, final, parts)
        except BaseException as exc:
            # Everything not consumed before this call ends at ``position``.
            self._recover(exc, parts, held + chunk, final)
            raise
        finally:
            self._sync()
        text = "".join(parts)
        if count:
            self._chars += len(text)
        return text

    def _run(self, buf: bytes, final: bool, parts: list[str]) -> None:
        """Decode ``buf``, which ends at ``position``, after whatever state is held."""
        if self._gap_open:
            i = self._consume_gap(buf, final, parts)
            if self._gap_open:
                return
            buf = buf[i:]
        pending = self._pending
        if pending:
            buf = pending + buf
            self._pending = b""
        if not buf:
            return
        _local.decoder = self
        try:
            text, used = _utf8_decode(buf, _HANDLER_NAME, final)
        except BaseException:
            parts.append(self._partial_from_c(buf))
            raise
        parts.append(text)
        if used != len(buf):
            self._tail(buf, used, parts)

    def _tail(self, data: Bytes, used: int, parts: list[str]) -> None:
        """Handle what the C decoder left unconsumed at the end of a non-final call.

        A proper prefix is held.  Anything else (CPython holds ``ED A0``, which no byte
        can complete) is certain already and is emitted now.
        """
        tail = bytes(data[used:])
        if tail in self._prefixes:
            self._pending = tail
            return
        self._pending = b""
        try:
            text, _ = _utf8_decode(tail, _HANDLER_NAME, True)
        except BaseException:
            parts.append(self._partial_from_c(tail))
            raise
        parts.append(text)

    def _consume_gap(self, buf: bytes, final: bool, parts: list[str]) -> int:
        """Swallow the bytes that belong to an open gap; close it once that is decided."""
        n = len(buf)
        base = self._position - n
        i = 0
        while self._gap_absorb and i < n:
            self._gap_take(buf, i, base)
            self._gap_absorb -= 1
            i += 1
        while self._gap_skip and i < n and 0x80 <= buf[i] <= 0xBF:
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

    def _sync(self) -> None:
        """Take the fast path again once the last call was clean and nothing odd is held."""
        self._odd = bool(self._gap_open or self._unread or self._carry)
        if not self._clean:
            self._dirty_left = _DIRTY_WINDOW
        self._fast = self._dirty_left <= 0 and not self._odd

    # -- units and policies ----------------------------------------------------------

    def _on_c_error(self, exc: UnicodeError, replay: bool = False) -> tuple[str, int]:
        """Called by the C decoder for each maximal subpart it finds."""
        assert isinstance(exc, UnicodeDecodeError)
        obj = exc.object
        start = exc.start
        end = exc.end
        base = self._position - len(obj)
        self._clean = False
        if self._surrogates_pass and obj[start] == 0xED and self._is_surrogate(obj, start):
            end = start + 3
            if replay:
                return obj[start:end].decode("utf-8", "surrogatepass"), end
            self._fail_start = start
            self._resume_at = base + end
            return self._pass_surrogate(obj[start:end], base + start), end
        data = obj[start:end]
        if replay:
            return self._replacement(data, MalformedKind.INCOMPLETE_SEQUENCE, None), end
        kind = LONE_KIND[obj[start]] or classify_unit(obj, start, end, True)
        self._fail_start = start
        self._resume_at = base + end
        self._counts[kind] += 1
        callback = self._on_malformed
        event = None
        if callback is not None:
            event = _malformed(base + start, data, kind)
            callback(event)
            _local.decoder = self  # the callback may have run another decoder
        constant = self._constant
        if constant is not None:
            return constant, end
        return self._replacement(data, kind, event), end

    @staticmethod
    def _is_surrogate(obj: bytes, start: int) -> bool:
        return (
            start + 2 < len(obj)
            and 0xA0 <= obj[start + 1] <= 0xBF
            and 0x80 <= obj[start + 2] <= 0xBF
        )

    def _replacement(self, data: bytes, kind: MalformedKind, event: Malformed | None) -> str:
        """The text the error policy puts in place of one unit (or raises)."""
        constant = self._constant
        if constant is not None:
            return constant
        errors = self.errors
        if errors == "surrogateescape":
            return _escape_surrogates(data)
        if errors == "backslashreplace":
            return _escape_backslash(data)
        if self._custom is not None:
            return self._call_custom(data, kind)
        # strict, and surrogatepass for anything that is not a surrogate
        offset = self._resume_at - len(data)
        raise Utf8DecodeError(event or _malformed(offset, data, kind))

    def _pass_surrogate(self, seq: bytes, offset: int) -> str:
        self._counts[MalformedKind.SURROGATE] += 1
        if self._on_malformed is not None:
            self._on_malformed(_malformed(offset, seq, MalformedKind.SURROGATE))
        return seq.decode("utf-8", "surrogatepass")

    def _call_custom(self, data: bytes, kind: MalformedKind) -> str:
        assert self._custom is not None
        exc = UnicodeDecodeError("utf-8", data, 0, len(data), kind.reason)
        result = self._custom(exc)
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

    def _report_gap(self, data: bytes, offset: int, resume: int) -> str:
        self._counts[MalformedKind.LOST_BYTES] += 1
        self._resume_at = resume
        if self._on_malformed is not None:
            self._on_malformed(_malformed(offset, data, MalformedKind.LOST_BYTES))
        return _REPLACEMENT if self._gap_policy == "replace" else ""

    # -- failure recovery ------------------------------------------------------------

    def _partial_from_c(self, buf: Bytes) -> str:
        """The text the C decoder had produced before the unit that failed.

        Decoded again with a handler that replays the policy without reporting.
        """
        _local.decoder = self
        text, _ = _utf8_decode(bytes(buf[: self._fail_start]), _REPLAY_NAME, True)
        return text

    def _recover(self, exc: BaseException, parts: list[str], full: Bytes, final: bool) -> None:
        """After a failure: keep the unconsumed input, hand over the decoded text.

        ``full`` is all input not consumed before this call; it ends at ``position``.
        """
        keep = min(len(full), max(0, self._position - self._resume_at))
        self._pending = b""
        self._unread = bytes(full[len(full) - keep :])
        self._unread_final = final  # the rest still ends the stream if this call did
        partial = "".join(parts)
        if isinstance(exc, Utf8DecodeError):
            exc.partial = partial
            self._chars += len(partial)
        else:
            self._carry = partial
        self._sync()
