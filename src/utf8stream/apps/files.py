"""Large files: lazy transcoding in constant memory, in parallel at character boundaries.

A file is read in chunks and each chunk goes through a ``Transcoder``; memory is one chunk
(plus what the codecs hold, a few bytes).  UTF-8 to or from UTF-16/UTF-32, and UTF-8 to
UTF-8 (the repair), with ``errors`` replace, ignore or strict skip the text: a
``ByteTranscoder`` (``core/direct.py``) turns each chunk's bytes into the output bytes in
one call, with the same output, events and counts, into reused buffers (a writer thread
writes one while the next chunk is transcoded).  With ``workers > 1`` and a UTF-8-family
source, the file is cut at character boundaries (``boundaries.split_points``, from bytes
read around each cut: no ``mmap``) into pieces of at most ``PIECE_BYTES``; worker
processes transcode the pieces and write their output in order, so the output file is the
sequential one byte for byte.

Only the start of the stream is special: the BOM policy applies to the first piece (and
a target codec that writes a BOM writes it there only), and the other pieces keep
whatever they contain.  A unit cut by a piece's end is reported by
that piece's decoder as ``TRUNCATED_AT_END``; the parent renames it from the next byte
(``boundaries.rejoined_event``), as the sequential decoder would have.

Data safety: an output file is written to a temporary file beside it, flushed to disk and
renamed over the destination only when the run succeeds (the destination's permission
bits are kept, as an editor's atomic save keeps them); on any failure or interruption the
destination is untouched and the temporary file removed.  The output is never the input.

Two policies, kept apart: ``errors`` for malformed *input* (the decoder's policy) and
``unmappable`` for characters the *target* cannot represent (iconv's rules).
"""

from __future__ import annotations

import codecs
import contextvars
import io
import itertools
import os
import signal
import stat
import sys
import unicodedata
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from ..core.boundaries import rejoined_event, variant_char_start
from ..core.decoder import Utf8Decoder
from ..core.direct import COUNTED_KINDS, byte_transcoder, direct
from ..core.encoder import Utf8Encoder
from ..core.events import Malformed, MalformedKind, Utf8DecodeError, codec_error_kind
from ..core.transcoder import Transcoder
from ..core.variants import VARIANTS

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from ..aio.streams import Utf8ReceiveStream

# multiprocessing and concurrent.futures are imported where they are used: a one-worker
# run (the CLI's default) does not pay for them at start-up.

__all__ = [
    "UNMAPPABLE_POLICIES",
    "SameFileError",
    "TranscodeSummary",
    "UnmappableCharacterError",
    "WorkerError",
    "atranscode_file",
    "open_text",
    "transcode_file",
]

Progress = Callable[[int, int], object]
OnMalformed = Callable[[Malformed], object]

#: Largest piece a worker transcodes at once (bounds the parent's memory).
PIECE_BYTES = 8 << 20
#: Sources whose bytes can be cut at UTF-8 character boundaries.
_SPLITTABLE = {"utf-8", "wtf-8", "cesu-8", "mutf-8"}
#: What happens to a character the target cannot represent (iconv's choices):
#: ``strict`` stops with ``UnmappableCharacterError``, ``ignore`` drops it (``-c``,
#: ``//IGNORE``), ``translit`` writes its NFKD decomposition without combining marks, or
#: ``?`` when that cannot be encoded either (``//TRANSLIT``), ``translit-ignore`` drops
#: what cannot be transliterated, ``replace`` is the target codec's own replacement.
UNMAPPABLE_POLICIES = ("strict", "ignore", "translit", "translit-ignore", "replace")
#: Input policies whose escapes (lone surrogates in the text) the encoder turns back into
#: the original bytes: they are not unmappable characters.
_ROUND_TRIP = ("surrogateescape", "surrogatepass", "optu-8")
_BOM_PREFIXES = (
    codecs.BOM_UTF32_LE,
    codecs.BOM_UTF32_BE,
    codecs.BOM_UTF8,
    codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
)


@dataclass(frozen=True)
class TranscodeSummary:
    """What a transcoding run did.

    ``malformed`` counts malformed input units by kind (for codecs outside the UTF-8
    family: ``TRUNCATED_AT_END`` for input cut at the end, ``SURROGATE`` for a broken
    UTF-16 surrogate, ``INVALID_BYTE`` for the rest); ``unmappable`` counts the characters
    the target could not represent (dropped, transliterated or replaced, per the policy).
    """

    bytes_in: int
    bytes_out: int
    characters: int
    malformed: Mapping[MalformedKind, int] = field(default_factory=lambda: MappingProxyType({}))
    pieces: int = 1
    unmappable: int = 0

    @property
    def malformed_total(self) -> int:
        return sum(n for k, n in self.malformed.items() if k is not MalformedKind.LOST_BYTES)


class UnmappableCharacterError(UnicodeEncodeError):
    """A character the target encoding cannot represent, under ``unmappable="strict"``.

    ``index`` is the character's position in the decoded text (0-based), ``offset`` the
    byte offset of its first byte in the input (None if unknown).  ``partial`` is the
    output for the text before it in the failing chunk (written before the error is
    raised when the output is a stream, as iconv does).
    """

    def __init__(
        self, encoding: str, character: str, index: int, offset: int | None = None
    ) -> None:
        super().__init__(encoding, character, 0, len(character), "cannot be represented")
        self.index = index
        self.offset = offset
        self.partial = b""

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.encoding, self.object, self.index, self.offset))

    def __str__(self) -> str:
        char = self.object
        name = unicodedata.name(char, "") if len(char) == 1 else ""
        what = f"U+{ord(char[0]):04X}" + (f" {name}" if name else "")
        where = f"character {self.index}"
        if self.offset is not None:
            where += f" (byte offset {self.offset})"
        return f"cannot convert {what} at {where} to {self.encoding}"


class SameFileError(ValueError):
    """The output file is the input file (same device and inode)."""


class WorkerError(RuntimeError):
    """A worker process of a parallel run failed or died; the run was stopped."""


def _canonical(encoding: str) -> str:
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise LookupError(f"unknown encoding: {encoding}") from None
    name = info.name.replace("_", "-")
    # Our UTF-8 variants are registered as codecs that str.encode refuses, yet are text.
    if name not in VARIANTS and not getattr(info, "_is_text_encoding", True):
        raise LookupError(f"not a text encoding: {encoding}")
    return name


class _Counter:
    """Counts events by kind and passes them on."""

    def __init__(self, forward: OnMalformed | None) -> None:
        self.counts: dict[MalformedKind, int] = {}
        self.forward = forward

    def __call__(self, event: Malformed) -> None:
        self.counts[event.kind] = self.counts.get(event.kind, 0) + 1
        if self.forward is not None:
            self.forward(event)


# -- the two policies -------------------------------------------------------------------

#: The run whose codec calls the two error handlers below.  Codecs find their error
#: handlers by a global name, so the handlers look up the run in this context variable,
#: set around each chunk (threads and tasks each see their own).
_active_run: contextvars.ContextVar[_Run | None] = contextvars.ContextVar(
    "utf8stream_active_run", default=None
)
_INPUT_HANDLER = "utf8stream.malformed-input"
_OUTPUT_HANDLER = "utf8stream.unmappable-output"


def _on_malformed_input(exc: UnicodeError) -> tuple[str | bytes, int]:
    run = _active_run.get()
    if run is None or not isinstance(exc, UnicodeDecodeError):
        raise exc  # outside a run the handler is strict
    return run.malformed_input(exc)


def _on_unmappable_output(exc: UnicodeError) -> tuple[str | bytes, int]:
    run = _active_run.get()
    if run is None or not isinstance(exc, UnicodeEncodeError):
        raise exc
    return run.unmappable_output(exc)


codecs.register_error(_INPUT_HANDLER, _on_malformed_input)
codecs.register_error(_OUTPUT_HANDLER, _on_unmappable_output)


def _transliterate(char: str, target: str, fallback: str) -> str:
    """``char`` approximated in ``target``: its NFKD decomposition without combining
    marks (``é`` → ``e``, ``①`` → ``1``, ``ﬁ`` → ``fi``), else ``fallback``."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    for candidate in (plain, fallback):
        if candidate:
            try:
                codecs.encode(candidate, target, "strict")
            except UnicodeError:
                continue
            return candidate
    return ""


def _probe_input_policy(source: str, errors: str) -> None:
    """Reject a policy that cannot decode, before any output is written."""
    try:
        if source in VARIANTS:
            Utf8Decoder(errors, variant=source).decode(b"\xff", final=True)  # never valid
        else:
            handler = codecs.lookup_error(errors)
            handler(UnicodeDecodeError(source, b"\xff", 0, 1, "probe"))
    except UnicodeDecodeError:
        pass  # strict: raises the error it is given
    except LookupError:
        raise LookupError(f"unknown error handler: {errors}") from None
    except Exception:
        raise ValueError(f"error handler {errors!r} cannot be used for decoding") from None


def _new_encoder(target: str, errors: str, unmappable: str) -> Any:
    """The target's encoder, unmappable characters going to our handler when it can."""
    variant = target if target in VARIANTS else None
    if variant is not None:
        # Only lone surrogates are unmappable in the UTF-8 family: the escapes of a
        # round-trip input policy go back to their bytes, the rest to the policy.
        policy = errors if errors in _ROUND_TRIP else _OUTPUT_HANDLER
        return Utf8Encoder(policy, variant=variant)
    encoder = codecs.getincrementalencoder(target)(_OUTPUT_HANDLER)
    try:
        encoder.encode("", False)
        encoder.reset()
    except UnicodeError:
        # A codec that knows only "strict" (idna, punycode): fine for the strict policy.
        if unmappable != "strict":
            raise ValueError(
                f"{target} cannot drop or transliterate characters (only strict)"
            ) from None
        encoder = codecs.getincrementalencoder(target)("strict")
    return encoder


class _CheckedEncoder:
    """The target encoder, counting characters for error positions."""

    def __init__(self, inner: Any, run: _Run) -> None:
        self.inner, self.run = inner, run

    def encode(self, text: str, final: bool = False) -> bytes:
        run = self.run
        base = run.call_base = run.characters
        try:
            out: bytes = self.inner.encode(text, final)
        except UnmappableCharacterError as exc:
            exc.partial = self.inner.encode(text[: exc.index - base])
            raise
        except UnicodeEncodeError as exc:  # a strict-only codec, or a Utf8Encoder escape
            bad = exc.object[exc.start : exc.end] or "?"
            error = UnmappableCharacterError(run.target, bad[0], base + exc.start)
            error.partial = getattr(exc, "partial", b"")
            raise error from None
        run.characters += len(text)
        return out


class _Run:
    """One ``Transcoder`` with both policies, error positions and counts.

    ``start`` is the absolute offset of the first byte it is given (a piece's start).
    A UTF-8 source whose events nobody wants is counted by the decoder itself (with the
    accelerator, in C: no event object or Python call per malformed unit); ``on_final``
    then still sees the events of the last call (a piece's last unit may need renaming).
    """

    def __init__(
        self,
        source: str,
        target: str,
        errors: str,
        bom: str,
        unmappable: str,
        counter: _Counter,
        start: int = 0,
        on_final: OnMalformed | None = None,
    ) -> None:
        self.target, self.errors, self.unmappable_policy = target, errors, unmappable
        self.counter, self.start = counter, start
        self.fed = 0  # bytes given so far
        self.chunk_end = start  # absolute offset just past the chunk being decoded
        self.characters = 0  # characters given to the encoder so far
        self.call_base = 0  # ... before the current encoder call
        self.unmappable = 0
        transcoder = Transcoder(source, target, errors=errors, bom=bom)
        decoder = transcoder.decoder
        self.input_handler: Callable[[UnicodeError], tuple[str | bytes, int]] | None
        try:
            self.input_handler = codecs.lookup_error(errors)
        except LookupError:
            self.input_handler = None  # a Utf8Decoder-only policy (optu-8)
        self.on_final = on_final
        self.counted_by_decoder = isinstance(decoder, Utf8Decoder) and counter.forward is None
        if isinstance(decoder, Utf8Decoder) and not self.counted_by_decoder:
            decoder.on_malformed = counter if not start else _Shift(counter, start)
        elif not isinstance(decoder, Utf8Decoder) and self.input_handler is not None:
            # Count what other codecs replace: the handler records, then applies errors.
            cast(Any, decoder).errors = _INPUT_HANDLER
            transcoder.errors = _INPUT_HANDLER  # decoders chosen by a BOM later, too
        self.escape_handler = (
            codecs.lookup_error(errors) if errors in ("surrogateescape", "surrogatepass") else None
        )
        transcoder.encoder = _CheckedEncoder(_new_encoder(target, errors, unmappable), self)
        self.transcoder = transcoder

    def transcode(self, data: bytes, final: bool = False) -> bytes:
        transcoder = self.transcoder
        decoder = transcoder.decoder
        state = decoder.getstate() if hasattr(decoder, "getstate") else None
        chunk_start = self.start + self.fed
        self.fed += len(data)
        self.chunk_end = self.start + self.fed
        if final and self.on_final is not None and isinstance(decoder, Utf8Decoder):
            on_final = self.on_final
            decoder.on_malformed = on_final if not self.start else _Shift(on_final, self.start)
        token = _active_run.set(self)
        try:
            return transcoder.transcode(data, final)
        except UnmappableCharacterError as exc:
            exc.offset = self._offset_of(exc, data, final, chunk_start, decoder, state)
            raise
        finally:
            _active_run.reset(token)
            self._count_swapped_decoder()

    @property
    def text_characters(self) -> int:
        """Characters decoded and handed to the encoder so far."""
        return self.transcoder.characters

    def counts(self) -> dict[MalformedKind, int]:
        """The malformed units so far, by kind."""
        counts = dict(self.counter.counts)
        decoder = self.transcoder.decoder
        if self.counted_by_decoder and isinstance(decoder, Utf8Decoder):
            for kind, n in decoder.statistics().malformed.items():
                if n:
                    counts[kind] = counts.get(kind, 0) + n
        return counts

    def _count_swapped_decoder(self) -> None:
        """A BOM may have put another codec's decoder in place: count its errors too."""
        decoder = self.transcoder.decoder
        if (
            not isinstance(decoder, Utf8Decoder)
            and self.input_handler is not None
            and getattr(decoder, "errors", _INPUT_HANDLER) != _INPUT_HANDLER
        ):
            cast(Any, decoder).errors = _INPUT_HANDLER

    @property
    def partial_output(self) -> bytes:
        return self.transcoder.partial_output

    def malformed_input(self, exc: UnicodeDecodeError) -> tuple[str | bytes, int]:
        """Record a malformed unit of a non-UTF-8 codec, then apply the input policy."""
        # Incremental codecs decode (held bytes + chunk): the object ends at the chunk's end.
        offset = self.chunk_end - len(exc.object) + exc.start
        unit = bytes(exc.object[exc.start : exc.end])
        self.counter(Malformed(offset, unit, codec_error_kind(exc.reason)))
        assert self.input_handler is not None
        return self.input_handler(exc)

    def unmappable_output(self, exc: UnicodeEncodeError) -> tuple[str | bytes, int]:
        bad = exc.object[exc.start : exc.end]
        if self.escape_handler is not None and all("\ud800" <= c <= "\udfff" for c in bad):
            try:
                return self.escape_handler(exc)  # the input policy's escapes round-trip
            except UnicodeEncodeError:
                pass
        policy = self.unmappable_policy
        if policy == "strict":
            raise UnmappableCharacterError(self.target, bad[0], self.call_base + exc.start)
        self.unmappable += len(bad)
        if policy == "ignore":
            return "", exc.end
        if policy == "replace":
            return codecs.replace_errors(exc)
        fallback = "?" if policy == "translit" else ""
        return "".join(_transliterate(c, self.target, fallback) for c in bad), exc.end

    def _offset_of(
        self,
        exc: UnmappableCharacterError,
        data: bytes,
        final: bool,
        chunk_start: int,
        old_decoder: Any,
        state: tuple[bytes, int] | None,
    ) -> int | None:
        """The input offset of the character ``exc`` names: the chunk is decoded again,
        prefix by prefix (a binary search), by a fresh decoder in the same state."""
        decoder = self.transcoder.decoder
        skip = 0
        if decoder is not old_decoder:  # a BOM chose the codec during this chunk
            state = None
            skip = next((len(b) for b in _BOM_PREFIXES if data.startswith(b)), 0)
        held = len(state[0]) if state else 0
        index = exc.index - self.call_base  # in the text this chunk decoded to
        if index == 0 and held:
            return chunk_start - held

        def decoded(end: int) -> int:
            fresh: Any
            if isinstance(decoder, Utf8Decoder):
                fresh = Utf8Decoder(self.errors, variant=decoder.variant)
            else:
                fresh = cast(Any, type(decoder))(self.errors)
            if state:
                fresh.setstate(state)
            return len(fresh.decode(data[skip:end], final and end == len(data)))

        def first(predicate: Callable[[int], bool]) -> int:
            lo, hi = skip, len(data)
            while lo < hi:
                mid = (lo + hi) // 2
                if predicate(decoded(mid)):
                    hi = mid
                else:
                    lo = mid + 1
            return lo

        try:
            done_before = first(lambda n: n >= index)  # where the characters before end
            done_with = first(lambda n: n > index)  # where this one ends
        except Exception:
            return None  # a decoder that cannot be replayed: no offset rather than a wrong one
        return chunk_start + max(skip, min(done_before, done_with - 1))


#: Targets whose codec writes a BOM first, then the native byte order.
_NATIVE_ORDER = {
    "utf-16": "utf-16-le" if sys.byteorder == "little" else "utf-16-be",
    "utf-32": "utf-32-le" if sys.byteorder == "little" else "utf-32-be",
}
#: The codec each BOM-writing target is after its BOM.
_WITHOUT_BOM = {**_NATIVE_ORDER, "utf-8-sig": "utf-8"}
#: What CPython's codecs say of each kind of unit of a UTF-16 or UTF-32 source (the
#: message of a strict run's error, as the codec path raised it).
_CODEC_REASONS = {
    ("16", MalformedKind.INVALID_BYTE): "illegal encoding",
    ("16", MalformedKind.SURROGATE): "illegal UTF-16 surrogate",
    ("16", MalformedKind.TRUNCATED_AT_END): "unexpected end of data",
    ("32", MalformedKind.INVALID_BYTE): "code point not in range(0x110000)",
    ("32", MalformedKind.SURROGATE): "code point in surrogate code point range(0xd800, 0xe000)",
    ("32", MalformedKind.TRUNCATED_AT_END): "truncated data",
}


class _DirectRun:
    """What ``_Run`` does, for UTF-8 to or from UTF-16/UTF-32 with ``errors`` replace,
    ignore or strict: bytes to bytes in one ``ByteTranscoder`` call per chunk (in C with
    the accelerator), no str built.  The units are counted by the transcoder; an event
    is made only for ``counter.forward`` (``on_malformed``), with absolute offsets.
    Nothing is unmappable: these targets encode every character the source decodes to.

    ``on_final`` sees the one unit the last call can meet (a held prefix, cut by the end
    of a piece), as ``_Run``'s does.  A strict failure raises what the str path raises:
    ``Utf8DecodeError`` (offset within the piece) for a UTF-8 source, the codec's
    ``UnicodeDecodeError`` for the others, with the absolute offset in its reason.
    """

    unmappable = 0

    def __init__(
        self,
        source: str,
        target: str,
        errors: str,
        bom: str,
        counter: _Counter,
        start: int = 0,
        on_final: OnMalformed | None = None,
    ) -> None:
        self.source, self.start, self.on_final = source, start, on_final
        self.target = _NATIVE_ORDER.get(target, target)
        self.transcoder = byte_transcoder(source, self.target, errors, counter.forward, start)
        byte_order_mark = "\ufeff".encode(self.target)
        #: Written in front of the first call's output by the target codec itself.
        self._codec_bom = byte_order_mark if target in _NATIVE_ORDER else b""
        self._bom_to_strip = byte_order_mark if bom in ("strip", "add") else b""
        self._bom_to_add = byte_order_mark if bom == "add" and not self._codec_bom else b""
        self._at_text_start = True
        self._first_call = True
        self._characters = 0
        self._counts = [0] * len(COUNTED_KINDS)
        self._tail = b""  # the last bytes given: a held prefix is among them
        self.fed = 0
        self.partial_output = b""

    @property
    def text_characters(self) -> int:
        """Characters decoded and written so far (after the BOM policy)."""
        self._drain()
        return self._characters

    def transcode(self, data: bytes | memoryview, final: bool = False) -> bytes:
        transcoder = self.transcoder
        self._before(data, final)
        out = self._bom_policy(transcoder.transcode(data, final), final)
        failure = transcoder.failure
        if failure is None:
            return out
        self.partial_output = out
        raise self._error(failure, out)

    def transcode_into(
        self, data: memoryview, out: bytearray | memoryview, final: bool = False
    ) -> int:
        """``transcode`` writing into ``out`` (from its start), which must have room for
        ``bound(len(data))`` bytes; the number of bytes written."""
        if self._at_text_start or self._first_call:  # the BOM policy: once, on bytes
            result = self.transcode(data, final)
            out[: len(result)] = result
            return len(result)
        self._before(data, final)
        written = self.transcoder.transcode_into(data, out, 0, final)
        failure = self.transcoder.failure
        if failure is None:
            return written
        self.partial_output = bytes(out[:written])
        raise self._error(failure, self.partial_output)

    def bound(self, n: int) -> int:
        """Room ``transcode_into`` needs for ``n`` input bytes."""
        return self.transcoder.bound(n) + len(self._codec_bom) + len(self._bom_to_add)

    def _before(self, data: bytes | memoryview, final: bool) -> None:
        if final and self.on_final is not None and self.source == "utf-8":
            held = self.transcoder.buffered
            if held and not data:
                cut = self._tail[len(self._tail) - held :]
                end = self.start + self.fed
                self.on_final(Malformed(end - held, cut, MalformedKind.TRUNCATED_AT_END))
        self.fed += len(data)
        self._tail = (self._tail + data[-3:])[-3:]

    def counts(self) -> dict[MalformedKind, int]:
        self._drain()
        return {kind: n for kind, n in zip(COUNTED_KINDS, self._counts, strict=True) if n}

    def _drain(self) -> None:
        *by_kind, characters = self.transcoder.drain()
        self._characters += characters
        for i, n in enumerate(by_kind):
            self._counts[i] += n

    def _bom_policy(self, out: bytes, final: bool) -> bytes:
        """``Transcoder``'s BOM policy on the output (a leading U+FEFF is the output's
        first bytes), and the BOM a ``utf-16``/``utf-32`` target writes first."""
        if self._at_text_start and (out or final):
            if out:
                self._at_text_start = False
                if self._bom_to_strip and out.startswith(self._bom_to_strip):
                    out = out[len(self._bom_to_strip) :]
                    self._characters -= 1
            if self._bom_to_add:
                self._at_text_start = False
                out = self._bom_to_add + out
                self._characters += 1
        if self._first_call:
            self._first_call = False
            out = self._codec_bom + out
        return out

    def _error(self, failure: Malformed, out: bytes) -> UnicodeDecodeError:
        if self.source == "utf-8":
            relative = Malformed(failure.offset - self.start, failure.data, failure.kind)
            return Utf8DecodeError(relative, out.decode(self.target, "replace"))
        width = "16" if "16" in self.source else "32"
        reason = _CODEC_REASONS[width, failure.kind]
        if failure.kind is MalformedKind.TRUNCATED_AT_END and len(failure.data) == 1:
            reason = "truncated data"  # an odd byte, not a cut surrogate pair
        return UnicodeDecodeError(
            self.source,
            failure.data,
            0,
            len(failure.data),
            f"{reason} (the unit at byte offset {failure.offset})",
        )


def _new_run(
    source: str,
    target: str,
    errors: str,
    bom: str,
    unmappable: str,
    counter: _Counter,
    start: int = 0,
    on_final: OnMalformed | None = None,
) -> _Run | _DirectRun:
    """A ``_DirectRun`` where a ``ByteTranscoder`` can do the work, else a ``_Run``.

    (``bom="detect"`` may find that the input is not in ``source`` at all: the codec
    path reads it.)"""
    if bom != "detect" and direct(source, _NATIVE_ORDER.get(target, target), errors):
        return _DirectRun(source, target, errors, bom, counter, start, on_final)
    return _Run(source, target, errors, bom, unmappable, counter, start, on_final)


def _chunks(f: BinaryIO, size: int, limit: int | None = None) -> Iterator[bytes]:
    left = limit
    while left is None or left > 0:
        chunk = f.read(size if left is None else min(size, left))
        if not chunk:
            return
        if left is not None:
            left -= len(chunk)
        yield chunk


class _Writer:
    """Writes in a thread of its own, so the next chunk is read and transcoded meanwhile.

    The file system call releases the GIL (and so does the C transcoder): on two cores
    writing the output (often the larger side: UTF-16 doubles ASCII) overlaps reading
    and transcoding.  ``write`` returns an event set once the data is written (or given
    up after a failed write): a reused buffer may be filled again only then.  At most
    two writes wait, so memory stays bounded.  A failed write is raised by the next
    ``write`` or by ``close``; after one, nothing more is written.
    """

    def __init__(self, dst: BinaryIO) -> None:
        import queue
        import threading

        self._dst = dst
        self._jobs: queue.SimpleQueue[tuple[Any, threading.Event] | None] = queue.SimpleQueue()
        self._pending: deque[threading.Event] = deque()
        self._error: BaseException | None = None
        self._event = threading.Event
        self._thread = threading.Thread(target=self._run, name="utf8stream-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            data, done = job
            try:
                if self._error is None:
                    self._dst.write(data)
            except BaseException as exc:  # raised in the caller's thread
                self._error = exc
            finally:
                del data
                done.set()

    def write(self, data: bytes | memoryview) -> Any:
        """Queue ``data``; the event set when it is written."""
        while len(self._pending) >= 2:
            self._pending.popleft().wait()
        self._check()
        done = self._event()
        self._pending.append(done)
        self._jobs.put((data, done))
        return done

    def _check(self) -> None:
        if self._error is not None:
            raise self._error  # and later writes are given up too

    def close(self) -> None:
        """Wait for every write (re-raising a failed one)."""
        self._jobs.put(None)
        self._thread.join()
        self._pending.clear()
        self._check()


def _transcode_stream(
    src: BinaryIO,
    dst: BinaryIO,
    run: _Run | _DirectRun,
    chunk_size: int,
    limit: int | None,
    progress: Callable[[int], object] | None,
) -> tuple[int, int]:
    """Copy ``src`` to ``dst`` through ``run``; return (bytes in, bytes out)."""
    if isinstance(run, _DirectRun) and hasattr(src, "readinto"):
        return _transcode_direct(src, dst, run, chunk_size, limit, progress)
    bytes_in = bytes_out = 0
    writer = _Writer(dst)
    try:
        for chunk in _chunks(src, chunk_size, limit):
            out = _step(run, writer, chunk, False)
            bytes_in += len(chunk)
            bytes_out += len(out)
            if progress is not None:
                progress(bytes_in)
        out = _step(run, writer, b"", True)
    finally:
        writer.close()
    return bytes_in, bytes_out + len(out)


class _ReadAhead:
    """Reads a regular file in a thread of its own, a chunk ahead: two input buffers take
    turns, one read while the other is transcoded.  On two cores the copy of the read
    (as long as the transcoding, or longer) does not wait for the transcoding, nor the
    transcoding for it; the writer thread overlaps both.  Only for regular files, whose
    reads end at once: after an error or an interruption, ``close`` stops the thread
    after its current read (a pipe's could wait for ever).  A failed read is raised by
    ``get``."""

    def __init__(self, readinto: Callable[[memoryview], int | None], size: int) -> None:
        import queue
        import threading

        self._free: queue.SimpleQueue[bytearray | None] = queue.SimpleQueue()
        self._full: queue.SimpleQueue[tuple[bytearray, int] | BaseException] = queue.SimpleQueue()
        for _ in range(2):
            self._free.put(bytearray(size))
        self._thread = threading.Thread(
            target=self._run, args=(readinto,), name="utf8stream-reader", daemon=True
        )
        self._thread.start()

    def _run(self, readinto: Callable[[memoryview], int | None]) -> None:
        try:
            while (buffer := self._free.get()) is not None:
                n = readinto(memoryview(buffer))
                if n is None:  # a non-blocking descriptor with nothing to read
                    raise BlockingIOError("the input would block")
                self._full.put((buffer, n))
                if not n:
                    return
        except BaseException as exc:  # raised in the caller's thread
            self._full.put(exc)

    def get(self) -> tuple[bytearray, int]:
        """The next chunk: its buffer and length (0: the end of the file)."""
        item = self._full.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def give_back(self, buffer: bytearray) -> None:
        """``buffer`` may be filled again."""
        self._free.put(buffer)

    def close(self) -> None:
        self._free.put(None)
        self._thread.join()


def _regular_file(f: BinaryIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # no descriptor: a file-like object
        return False


def _transcode_direct(
    src: BinaryIO,
    dst: BinaryIO,
    run: _DirectRun,
    chunk_size: int,
    limit: int | None,
    progress: Callable[[int], object] | None,
) -> tuple[int, int]:
    """``_transcode_stream`` for a ``_DirectRun``, in reused memory: each chunk is read
    into an input buffer (``readinto``: a file cut short under us just ends sooner) and
    transcoded into one of two output buffers, which alternate: the writer thread writes
    one while the next chunk is read and transcoded (without the GIL) into the other.
    A regular file read to its end (no ``limit``) is read ahead by a ``_ReadAhead``.
    No bytes object per chunk, no fresh pages to fault in."""
    bytes_in = bytes_out = 0
    readinto: Callable[[memoryview], int | None] = cast(Any, src).readinto
    ahead = _ReadAhead(readinto, chunk_size) if limit is None and _regular_file(src) else None
    inbuf = bytearray(chunk_size if ahead is None else 0)
    inview = memoryview(inbuf)
    outs = [bytearray(), bytearray()]
    written: list[Any] = [None, None]  # the pending write of each output buffer
    writer = _Writer(dst)
    k = 0
    try:
        final = False
        while not final:
            if ahead is not None:
                buffer, n = ahead.get()
                data = memoryview(buffer)[:n]
            else:
                want = chunk_size if limit is None else min(chunk_size, limit - bytes_in)
                got = readinto(inview[:want]) if want > 0 else 0
                if got is None:  # a non-blocking source with nothing to read
                    raise BlockingIOError("the input would block")
                n = got
                data = inview[:n]
            final = n == 0
            if written[k] is not None:
                written[k].wait()  # the buffer is free again
                written[k] = None
            need = run.bound(n)
            if len(outs[k]) < need:
                outs[k] = bytearray(need)
            out = outs[k]
            try:
                size = run.transcode_into(data, out, final)
            except UnicodeDecodeError:
                writer.write(run.partial_output)  # all before the error, as iconv
                raise
            if ahead is not None:
                data.release()
                ahead.give_back(buffer)
            if size:
                written[k] = writer.write(memoryview(out)[:size])
            bytes_in += n
            bytes_out += size
            k ^= 1
            if progress is not None and n:
                progress(bytes_in)
    finally:
        if ahead is not None:
            ahead.close()
        writer.close()
        inview.release()
    return bytes_in, bytes_out


def _step(run: _Run | _DirectRun, writer: _Writer, chunk: bytes, final: bool) -> bytes:
    try:
        out = run.transcode(chunk, final)
    except UnicodeDecodeError:
        writer.write(run.partial_output)  # all before the error, as iconv
        raise
    except UnmappableCharacterError as exc:
        writer.write(exc.partial)
        raise
    writer.write(out)
    return out


class _Shift:
    """Make a piece's event offsets absolute."""

    def __init__(self, forward: Callable[[Malformed], object], by: int) -> None:
        self.forward, self.by = forward, by

    def __call__(self, event: Malformed) -> None:
        self.forward(Malformed(event.offset + self.by, event.data, event.kind))


def _check_options(source: str, target: str, errors: str, bom: str, unmappable: str) -> None:
    """Every combination is tried on a tiny probe before any file is touched."""
    if unmappable not in UNMAPPABLE_POLICIES:
        raise ValueError(f"unmappable must be one of {UNMAPPABLE_POLICIES}, not {unmappable!r}")
    _probe_input_policy(source, errors)
    run = _new_run(source, target, errors, bom, unmappable, _Counter(None))
    run.transcode(b"", final=True)


# -- output files -----------------------------------------------------------------------


def check_distinct(src: str, dst: str) -> None:
    """Raise ``SameFileError`` if ``dst`` is the file ``src`` (``"-"``: stdin) names,
    through any hard or symbolic link."""
    if dst == "-":
        return
    try:
        out = os.stat(dst)
        into = os.fstat(sys.stdin.fileno()) if src == "-" else os.stat(src)
    except (FileNotFoundError, NotADirectoryError, ValueError, io.UnsupportedOperation):
        return  # no such output yet, or no real stdin: they cannot be the same
    if stat.S_ISREG(out.st_mode) and (out.st_dev, out.st_ino) == (into.st_dev, into.st_ino):
        raise SameFileError("the output is the input file: refused, nothing was written")


class _Output:
    """An output file, written to a temporary file in its directory.

    ``commit`` flushes it to disk and renames it over the destination (a symbolic link
    stays a link: the file it names is replaced); ``discard`` removes it.  A destination
    that exists and is not a regular file (a FIFO, a device) is written in place.
    """

    def __init__(self, dst: str) -> None:
        self.destination = os.path.realpath(dst)
        try:
            existing: os.stat_result | None = os.stat(self.destination)
        except FileNotFoundError:
            existing = None
        self.in_place = existing is not None and not stat.S_ISREG(existing.st_mode)
        if self.in_place:
            self.path = dst
            self.file = cast(BinaryIO, open(dst, "wb"))  # noqa: SIM115 (closed by commit/discard)
            return
        folder, name = os.path.split(self.destination)
        fd = -1
        try:
            while fd < 0:
                path = os.path.join(folder, f".{name}.{os.urandom(4).hex()}.tmp")
                # 0o666 as for any new file (the umask applies); an existing file's own
                # permission bits are set below.
                with suppress(FileExistsError):
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            exc.filename = dst  # the user named the destination, not our temporary file
            raise
        self.path = path
        try:
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                with suppress(PermissionError):  # only root can give a file away
                    os.fchown(fd, existing.st_uid, existing.st_gid)
            self.file = cast(BinaryIO, os.fdopen(fd, "wb"))
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise

    def commit(self) -> None:
        try:
            self.file.flush()
            if not self.in_place:
                os.fsync(self.file.fileno())
        except BaseException:
            self.discard()
            raise
        self.file.close()
        if self.in_place:
            return
        try:
            os.replace(self.path, self.destination)
        except BaseException:
            self.discard()
            raise
        _fsync_directory(os.path.dirname(self.destination))

    def discard(self) -> None:
        with suppress(OSError):  # a failed flush of data nobody wants
            self.file.close()
        if not self.in_place:
            with suppress(FileNotFoundError):
                os.unlink(self.path)


def _fsync_directory(path: str) -> None:
    """Make the rename itself durable (best effort: some file systems refuse)."""
    try:
        fd = os.open(path or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def open_output(dst: str, src: str | None = None) -> Iterator[_Output | None]:
    """The output ``dst`` as an ``_Output`` (None for ``"-"``, stdout, streamed).

    The file takes the destination's place only if the block ends normally; any
    exception (``KeyboardInterrupt`` included) leaves the destination untouched.  With
    ``src``, an output that is the input is refused first (``SameFileError``).
    """
    if src is not None:
        check_distinct(src, dst)
    if dst == "-":
        yield None
        sys.stdout.buffer.flush()
        return
    output: _Output | None = None
    try:
        output = _Output(dst)
        yield output
    except BaseException:
        if output is not None:
            output.discard()
        raise
    output.commit()


def _name_output(exc: OSError, output: _Output | None, dst: str) -> None:
    """A write error is about the destination, not about the temporary file."""
    if output is not None and exc.filename in (None, output.path):
        exc.filename = dst


def transcode_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    source: str = "utf-8",
    target: str = "utf-8",
    errors: str = "replace",
    bom: str = "keep",
    unmappable: str = "strict",
    chunk_size: int = 1048576,
    workers: int = 1,
    progress: Progress | None = None,
    on_malformed: OnMalformed | None = None,
) -> TranscodeSummary:
    """Transcode the file ``src`` into ``dst`` (``"-"``: stdin/stdout), lazily.

    ``errors`` is the policy for malformed input; ``unmappable`` the one for characters
    the target cannot represent (``UNMAPPABLE_POLICIES``; the default ``strict`` raises
    ``UnmappableCharacterError`` with the character's position).  Both are tried on a
    tiny probe first: an unusable combination raises ``ValueError`` or ``LookupError``
    (also a codec that is not a text encoding) before any file is touched.

    ``dst`` is written to a temporary file in its directory and renamed into place only
    on success, keeping the permission bits of an existing ``dst``; after any exception
    ``dst`` is as it was.  ``SameFileError`` if ``dst`` is ``src``.

    ``progress(bytes_done, bytes_total)`` is called as the work advances (``bytes_total``
    is 0 when the size is unknown).  ``on_malformed`` receives every malformed unit, with
    absolute offsets, in stream order.  With ``workers > 1`` a UTF-8-family regular file
    is transcoded in parallel processes; the output and the events are exactly those of
    the sequential run.  A worker that fails or dies stops the run (``WorkerError``, or
    the worker's ``OSError``) and no worker outlives it.
    """
    source_name, target_name = _canonical(source), _canonical(target)
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    if workers < 1:
        raise ValueError("workers must be at least 1")
    _check_options(source_name, target_name, errors, bom, unmappable)
    src_path = os.fspath(src)
    dst_path = os.fspath(dst)
    total = 0 if src_path == "-" else os.path.getsize(src_path)
    with open_output(dst_path, src_path) as output:
        try:
            if (
                workers > 1
                and output is not None
                and not output.in_place  # workers write pieces at offsets: a regular file
                and src_path != "-"
                and source_name in _SPLITTABLE
                and bom != "detect"  # a BOM may say the file is not UTF-8 at all
                and total > chunk_size
            ):
                options = (source_name, target_name, errors, bom, unmappable, chunk_size)
                return _transcode_parallel(
                    src_path, output.path, options, workers, progress, on_malformed, total
                )
            counter = _Counter(on_malformed)
            run = _new_run(source_name, target_name, errors, bom, unmappable, counter)
            report = (lambda done: progress(done, total)) if progress is not None else None
            with open_binary(src_path, "rb") as fin:
                fout = sys.stdout.buffer if output is None else output.file
                bytes_in, bytes_out = _transcode_stream(fin, fout, run, chunk_size, None, report)
        except OSError as exc:
            _name_output(exc, output, dst_path)
            raise
    return TranscodeSummary(
        bytes_in,
        bytes_out,
        run.text_characters,
        MappingProxyType(run.counts()),
        unmappable=run.unmappable,
    )


@contextmanager
def open_binary(path: str, mode: str) -> Iterator[BinaryIO]:
    """``open`` for paths; the standard streams (left open) for ``"-"``."""
    if path == "-":
        stream = sys.stdin.buffer if "r" in mode else sys.stdout.buffer
        yield stream
        if "w" in mode:
            stream.flush()
        return
    with open(path, mode) as f:
        yield cast(BinaryIO, f)


# -- parallel ---------------------------------------------------------------------------

#: (source codec, target codec, errors, bom, unmappable, chunk size)
_Options = tuple[str, str, str, str, str, int]


@dataclass(frozen=True)
class _PieceResult:
    size: int  # bytes written to the piece's part file
    characters: int
    counts: dict[MalformedKind, int]
    events: list[Malformed] | None  # all events, when the caller wants them
    last: Malformed | None  # the piece's last event (may need renaming)
    error: Utf8DecodeError | UnmappableCharacterError | None
    unmappable: int


#: (source path, start, end, options, whether events are wanted, piece index, where to
#:  write: the temporary output file)
_Job = tuple[str, int, int, _Options, bool, int, str]


class _Turns:
    """Whose turn it is to write, shared by the worker processes.

    Pieces are transcoded in parallel but written in order: the worker of piece ``k``
    waits until every piece before it is written, then writes its output at the current
    end of the output file with ``os.pwrite``.  The output is written once, by the
    workers; the parent never touches it.  ``stopped`` ends the run for everybody: set
    by a piece that failed (the others must not wait for its turn) or by the parent.
    """

    def __init__(self, ctx: Any) -> None:
        self.cond = ctx.Condition()
        self.turn = ctx.Value("q", 0, lock=False)  # the next piece allowed to write
        self.offset = ctx.Value("q", 0, lock=False)  # where it writes
        self.stopped = ctx.Value("b", 0, lock=False)  # a piece failed: nobody writes


class _Stopped(Exception):
    """The run was stopped elsewhere: this piece gives up."""


_turns: _Turns | None = None
_PR_SET_PDEATHSIG = 1


def _init_worker(turns: _Turns, parent: int) -> None:
    global _turns
    _turns = turns
    # The parent handles Ctrl-C and stops the workers itself; a SIGTERM sent to a worker
    # ends it (the parent then stops the run), without the parent's handler.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes  # only here: the library itself needs no ctypes

        # Die with the parent, even if it is killed with SIGKILL: no orphan spins on.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _write_in_turn(index: int, dst: str, data: bytes | memoryview, failed: bool) -> None:
    turns = _turns
    assert turns is not None
    with turns.cond:
        try:
            while turns.turn.value != index and not turns.stopped.value:
                turns.cond.wait(1.0)
            if turns.stopped.value:
                raise _Stopped
            fd = os.open(dst, os.O_WRONLY)
            try:
                view, offset = memoryview(data), turns.offset.value
                while view:
                    written = os.pwrite(fd, view, offset)
                    view, offset = view[written:], offset + written
            finally:
                os.close(fd)
            turns.offset.value = offset
            if failed:
                turns.stopped.value = 1  # the output ends where the error is
        except BaseException:
            turns.stopped.value = 1  # wake the others: nobody waits for a failed turn
            raise
        finally:
            turns.turn.value = index + 1
            turns.cond.notify_all()


def _check_stopped(done: int) -> None:
    if _turns is not None and _turns.stopped.value:
        raise _Stopped


def _transcode_piece(job: _Job) -> _PieceResult | None:
    """Worker: transcode ``src[start:end]`` and write it in its turn (child process).

    None when the run was stopped meanwhile."""
    path, start, end, options, want_events, index, dst = job
    source, target, errors, bom, unmappable, chunk_size = options
    events: list[Malformed] = []
    last: list[Malformed] = []

    def keep(event: Malformed) -> None:
        if want_events:
            events.append(event)
        last[:] = [event]

    if want_events:
        counter = _Counter(keep)
        run = _new_run(source, target, errors, bom, unmappable, counter, start)
    else:
        # Counted by the decoder; only the last call's events are seen, for ``last``
        # (a unit cut by the piece's end is in that call).
        counter = _Counter(None)
        run = _new_run(source, target, errors, bom, unmappable, counter, start, on_final=keep)
    error: Utf8DecodeError | UnmappableCharacterError | None = None
    out = io.BytesIO()
    size = 0
    try:
        written = False
        try:
            with open(path, "rb") as f:
                f.seek(start)
                try:
                    if isinstance(run, _DirectRun):
                        size = _direct_piece(f, run, chunk_size, end - start)
                    else:
                        _transcode_stream(f, out, run, chunk_size, end - start, _check_stopped)
                except Utf8DecodeError as exc:
                    error = Utf8DecodeError(
                        Malformed(exc.offset + start, exc.malformed.data, exc.kind), exc.partial
                    )
                    size = _piece_size
                except UnmappableCharacterError as exc:
                    error = exc  # its index is within the piece: the parent adds the rest
            if isinstance(run, _DirectRun):
                with memoryview(_piece_buffers[1]) as view, view[:size] as piece:
                    _write_in_turn(index, dst, piece, error is not None)
            else:
                size = out.tell()
                with out.getbuffer() as piece:  # written from where it is, not copied first
                    _write_in_turn(index, dst, piece, error is not None)
            written = True
        finally:
            if not written and _turns is not None and not _turns.stopped.value:
                _write_in_turn(index, dst, b"", True)  # failed: stop the run, wake the rest
    except _Stopped:
        return None
    return _PieceResult(
        size,
        run.text_characters,
        run.counts(),
        events if want_events else None,
        last[0] if last else None,
        error,
        run.unmappable,
    )


#: A worker's input and output buffers, reused by every piece it transcodes directly.
#: The output buffer is anonymous memory (``mmap``), whose pages the kernel gives, zeroed,
#: when first written: it is as long as the piece's bound, which the output seldom fills,
#: and a ``bytearray`` of that size would be zeroed in full first (page faults and a
#: memset over the whole bound: half the page faults of a ``-j 2`` run).
_piece_buffers: list[Any] = [bytearray(), bytearray()]
#: The output of the piece being transcoded so far (what precedes a strict failure).
_piece_size = 0


def _direct_piece(f: BinaryIO, run: _DirectRun, chunk_size: int, length: int) -> int:
    """Worker: a piece of ``length`` bytes through a ``_DirectRun``, chunk by chunk from
    the reused input buffer into the reused output buffer (``_piece_buffers``), at
    increasing offsets: no writer thread, no growing ``BytesIO``.  The output's length
    (also in ``_piece_size``, with the output before a strict failure, when it raises)."""
    global _piece_size
    _piece_size = 0
    inbuf, out = _piece_buffers
    if len(inbuf) < chunk_size:
        inbuf = _piece_buffers[0] = bytearray(chunk_size)
    # Enough for the whole piece: what each call can give (its bound) never exceeds what
    # the bytes not yet written can give.
    need = run.bound(length)
    if len(out) < need:
        import mmap  # a worker's: the one-worker command starts without it

        if isinstance(out, mmap.mmap):
            out.close()
        out = _piece_buffers[1] = mmap.mmap(-1, need)
    readinto: Callable[[memoryview], int | None] = cast(Any, f).readinto
    done = 0
    with memoryview(inbuf) as inview, memoryview(out) as outview:
        final = False
        while not final:
            n = readinto(inview[: min(chunk_size, length - done)]) if done < length else 0
            final = not n
            try:
                size = run.transcode_into(inview[: n or 0], outview[_piece_size:], final)
            except UnicodeDecodeError:
                partial = run.partial_output  # all before the error, as iconv
                outview[_piece_size : _piece_size + len(partial)] = partial
                _piece_size += len(partial)
                raise
            _piece_size += size
            done += n or 0
            _check_stopped(done)
    return _piece_size


#: Bytes read on each side of a cut to find the character boundary before it (a
#: boundary is at most 7 bytes back: a CESU-8 surrogate pair, an MUTF-8 C0 80).
_CUT_WINDOW = 16


def _piece_points(path: str, total: int, workers: int, source: str) -> list[int]:
    """``boundaries.split_points`` of the file, from a few bytes read around each cut
    (not a memory map, which kills the process with SIGBUS when the file, a log, is
    truncated under us; here a file cut short just gives pieces that end sooner)."""
    pieces = max(workers, -(-total // PIECE_BYTES))
    points = [0]
    with open(path, "rb", buffering=0) as f:
        for k in range(1, pieces):
            cut = total * k // pieces
            lo = max(0, cut - _CUT_WINDOW)
            window = os.pread(f.fileno(), cut - lo + _CUT_WINDOW, lo)
            if len(window) <= cut - lo:  # the file shrank: the cut is past its end,
                points.append(max(points[-1], cut))  # and the pieces after it are empty
                continue
            start = lo + variant_char_start(window, cut - lo, source)
            points.append(max(points[-1], start))
    points.append(total)
    return sorted(set(points))


def _transcode_parallel(
    src: str,
    dst: str,
    options: _Options,
    workers: int,
    progress: Progress | None,
    on_malformed: OnMalformed | None,
    total: int,
) -> TranscodeSummary:
    points = _piece_points(src, total, workers, options[0])
    want_events = on_malformed is not None
    # Only the start of the stream is special: the later pieces keep a U+FEFF they hold,
    # and a target codec that writes a BOM first writes it in the first piece only.
    source, target = options[:2]
    rest = (source, _WITHOUT_BOM.get(target, target), options[2], "keep", *options[4:])
    jobs: list[_Job] = [
        (
            src,
            a,
            b,
            options if i == 0 else rest,
            want_events,
            i,
            dst,
        )
        for i, (a, b) in enumerate(itertools.pairwise(points))
    ]
    return _run_pieces(jobs, total, workers, progress, on_malformed)


def _run_pieces(
    jobs: list[_Job],
    total: int,
    workers: int,
    progress: Progress | None,
    on_malformed: OnMalformed | None,
) -> TranscodeSummary:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context()
    turns = _Turns(ctx)
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(turns, os.getpid()),
    )
    try:
        summary = _collect(pool, jobs, total, workers, progress, on_malformed)
    except BaseException:
        _stop(pool, turns)
        raise
    pool.shutdown(wait=True)
    return summary


def _stop(pool: ProcessPoolExecutor, turns: _Turns) -> None:
    """End a failed or interrupted run now: no worker goes on, none is left behind."""
    turns.stopped.value = 1
    # The executor has no public way to end its workers before Python 3.14
    # (terminate_workers); waiting for them could take a whole piece each, or forever
    # if one died holding the turn lock.
    processes = dict(getattr(pool, "_processes", None) or {})
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes.values():
        process.kill()
    for process in processes.values():
        process.join()
    # The executor's own thread sees its workers gone and closes its wake-up pipe; wait
    # for that, or the executor's exit hook may write to the pipe while it is closed
    # ("Bad file descriptor" and a traceback at exit, seen when stopped at start-up).
    if manager is not None and manager.ident is not None:
        manager.join(timeout=10)
    # (Interrupted between the executor making its thread and starting it, there is no
    # thread to wait for, and join() would raise "cannot join thread before it is
    # started": a traceback on Ctrl-C, seen once in CI.)


def _collect(
    pool: ProcessPoolExecutor,
    jobs: list[_Job],
    total: int,
    workers: int,
    progress: Progress | None,
    on_malformed: OnMalformed | None,
) -> TranscodeSummary:
    from concurrent.futures.process import BrokenProcessPool

    counts: dict[MalformedKind, int] = {}
    characters = bytes_out = unmappable = 0
    next_byte = _NextByte(jobs[0][0])
    window: deque[tuple[int, Future[_PieceResult | None]]] = deque()
    queue = iter(enumerate(jobs))
    for _ in range(workers * 2):
        _submit(pool, queue, window)
    while window:
        index, future = window.popleft()
        try:
            result = future.result()
        except BrokenProcessPool:
            raise WorkerError(
                "a worker process died (killed, or out of memory); the run was stopped"
            ) from None
        except (OSError, Utf8DecodeError, UnmappableCharacterError):
            raise
        except Exception as exc:
            raise WorkerError(f"a worker process failed: {exc!r}") from exc
        if result is None:  # stopped, though no piece before it failed
            raise WorkerError("the run was stopped")
        _submit(pool, queue, window)
        end = jobs[index][2]
        follower = next_byte(end) if end < total else None
        if isinstance(result.error, UnmappableCharacterError):
            error = result.error
            error.index += characters
            raise error
        if result.error is not None:
            raise _rejoined_error(result.error, end, follower)
        bytes_out += result.size
        characters += result.characters
        unmappable += result.unmappable
        for kind, n in result.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        renamed = _renamed_last(result.last, end, follower)
        if renamed is not None and result.last is not None:
            counts[result.last.kind] -= 1
            counts[renamed.kind] = counts.get(renamed.kind, 0) + 1
        if on_malformed is not None and result.events is not None:
            for event in result.events:
                if renamed is not None and event is result.events[-1]:
                    event = renamed
                on_malformed(event)
        if progress is not None:
            progress(end, total)
    counts = {k: n for k, n in counts.items() if n}
    return TranscodeSummary(
        total,
        bytes_out,
        characters,
        MappingProxyType(counts),
        pieces=len(jobs),
        unmappable=unmappable,
    )


def _submit(
    pool: ProcessPoolExecutor,
    queue: Iterator[tuple[int, _Job]],
    window: deque[tuple[int, Future[_PieceResult | None]]],
) -> None:
    from concurrent.futures.process import BrokenProcessPool

    item = next(queue, None)
    if item is not None:
        index, job = item
        try:
            future = pool.submit(_transcode_piece, job)
        except BrokenProcessPool:
            # A worker died after the result just collected was sent: the pool
            # refuses new pieces (this raised, a traceback, before).
            raise WorkerError(
                "a worker process died (killed, or out of memory); the run was stopped"
            ) from None
        window.append((index, future))


class _NextByte:
    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, offset: int) -> int | None:
        """The byte at ``offset``; None past the end (a file cut short under us)."""
        with open(self.path, "rb") as f:
            f.seek(offset)
            byte = f.read(1)
            return byte[0] if byte else None


def _renamed_last(last: Malformed | None, end: int, follower: int | None) -> Malformed | None:
    """The piece's last event as the sequential decoder names it, if that differs."""
    if last is None or follower is None or last.kind is not MalformedKind.TRUNCATED_AT_END:
        return None
    if last.offset + len(last.data) != end:
        return None
    renamed = rejoined_event(last, follower)
    return renamed if renamed.kind is not last.kind else None


def _rejoined_error(error: Utf8DecodeError, end: int, follower: int | None) -> Utf8DecodeError:
    renamed = _renamed_last(error.malformed, end, follower)
    if renamed is None:
        return error
    return Utf8DecodeError(renamed, error.partial)


# -- async ------------------------------------------------------------------------------


async def atranscode_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    source: str = "utf-8",
    target: str = "utf-8",
    errors: str = "replace",
    bom: str = "keep",
    unmappable: str = "strict",
    chunk_size: int = 1048576,
    workers: int = 1,
    progress: Progress | None = None,
    on_malformed: OnMalformed | None = None,
) -> TranscodeSummary:
    """``transcode_file`` for async code: anyio file I/O, the event loop stays free.

    The same guarantees: ``dst`` is replaced only on success (a cancelled run leaves it
    untouched).  With ``workers > 1`` the parallel run happens in a worker thread.
    """
    import anyio.to_thread  # the async layer loads only when used

    source_name, target_name = _canonical(source), _canonical(target)
    if workers > 1:
        return await anyio.to_thread.run_sync(
            lambda: transcode_file(
                src,
                dst,
                source=source_name,
                target=target_name,
                errors=errors,
                bom=bom,
                unmappable=unmappable,
                chunk_size=chunk_size,
                workers=workers,
                progress=progress,
                on_malformed=on_malformed,
            )
        )
    _check_options(source_name, target_name, errors, bom, unmappable)
    counter = _Counter(on_malformed)
    run = _new_run(source_name, target_name, errors, bom, unmappable, counter)
    src_path, dst_path = os.fspath(src), os.fspath(dst)
    total = (await anyio.Path(src_path).stat()).st_size
    bytes_in = bytes_out = 0
    check_distinct(src_path, dst_path)
    output = await anyio.to_thread.run_sync(_Output, dst_path)
    try:
        fout = anyio.wrap_file(output.file)
        async with await anyio.open_file(src_path, "rb") as fin:
            while chunk := await fin.read(chunk_size):
                out = run.transcode(chunk)
                await fout.write(out)
                bytes_in += len(chunk)
                bytes_out += len(out)
                if progress is not None:
                    progress(bytes_in, total)
            out = run.transcode(b"", final=True)
            await fout.write(out)
    except BaseException as exc:
        output.discard()
        if isinstance(exc, OSError):
            _name_output(exc, output, dst_path)
        raise
    await anyio.to_thread.run_sync(output.commit)
    return TranscodeSummary(
        bytes_in,
        bytes_out + len(out),
        run.text_characters,
        MappingProxyType(run.counts()),
        unmappable=run.unmappable,
    )


async def open_text(
    path: str | os.PathLike[str],
    *,
    start_offset: int = 0,
    errors: str = "replace",
    gap: str = "replace",
    on_malformed: OnMalformed | None = None,
) -> Utf8ReceiveStream:
    """An async text stream over a UTF-8 file (a ``Utf8ReceiveStream`` on anyio's file).

    A non-zero ``start_offset`` starts with a gap, as after lost bytes (``mark_gap()``):
    opened in the middle of a character, the stream yields one U+FFFD, then clean text;
    opened at a character start it still yields one U+FFFD, which says the text did not
    start at the file's beginning.
    """
    import anyio

    from ..aio.sources import as_byte_stream
    from ..aio.streams import Utf8ReceiveStream

    f = await anyio.open_file(path, "rb")
    try:
        if start_offset:
            await f.seek(start_offset)
        stream = Utf8ReceiveStream(
            as_byte_stream(f),
            errors=errors,
            start_offset=start_offset,
            gap=gap,
            on_malformed=on_malformed,
        )
    except BaseException:
        await f.aclose()
        raise
    if start_offset:
        stream.mark_gap()
    return stream
