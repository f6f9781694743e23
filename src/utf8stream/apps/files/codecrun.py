"""The codec path: any codecs, through a ``Transcoder``, with both policies."""

from __future__ import annotations

import codecs
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ...core import translit
from ...core.decoder import Utf8Decoder
from ...core.encoder import Utf8Encoder
from ...core.events import Malformed, MalformedKind, codec_error_kind
from ...core.transcoder import Transcoder
from ...core.variants import VARIANTS
from .results import EventCounter, OnMalformed, Shift, UnmappableCharacterError

if TYPE_CHECKING:
    from ...core.transform import TextTransform

__all__ = ["UNMAPPABLE_POLICIES", "CodecRun"]

#: What happens to a character the target cannot represent (iconv's choices):
#: ``strict`` stops with ``UnmappableCharacterError``, ``ignore`` drops it (``-c``,
#: ``//IGNORE``), ``translit`` writes an approximation as glibc's (``ß`` → ``ss``, ``é``
#: → ``e``), or ``?`` when there is none (``//TRANSLIT``), ``translit-ignore`` drops
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


# -- the two policies -------------------------------------------------------------------

#: The run whose codec calls the two error handlers below.  Codecs find their error
#: handlers by a global name, so the handlers look up the run in this context variable,
#: set around each chunk (threads and tasks each see their own).
_active_run: contextvars.ContextVar[CodecRun | None] = contextvars.ContextVar(
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
    """``char`` approximated in ``target`` as glibc's ``//TRANSLIT`` does (``ß`` → ``ss``,
    ``é`` → ``e``, ``€`` → ``EUR``; see ``core/translit.py``), else ``fallback``."""
    for candidate in (*translit.candidates(char), fallback):
        try:
            codecs.encode(candidate, target, "strict")
        except UnicodeError:
            continue
        return candidate
    return ""


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

    def __init__(self, inner: Any, run: CodecRun) -> None:
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


class CodecRun:
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
        counter: EventCounter,
        start: int = 0,
        on_final: OnMalformed | None = None,
        transform: TextTransform | None = None,
    ) -> None:
        self.target, self.errors, self.unmappable_policy = target, errors, unmappable
        self.counter, self.start = counter, start
        self.fed = 0  # bytes given so far
        self.chunk_end = start  # absolute offset just past the chunk being decoded
        self.characters = 0  # characters given to the encoder so far
        self.call_base = 0  # ... before the current encoder call
        self.unmappable = 0
        transcoder = Transcoder(source, target, errors=errors, bom=bom, transforms=transform)
        decoder = transcoder.decoder
        self.input_handler: Callable[[UnicodeError], tuple[str | bytes, int]] | None
        try:
            self.input_handler = codecs.lookup_error(errors)
        except LookupError:
            self.input_handler = None  # a Utf8Decoder-only policy (optu-8)
        self.on_final = on_final
        self.counted_by_decoder = isinstance(decoder, Utf8Decoder) and counter.forward is None
        if isinstance(decoder, Utf8Decoder) and not self.counted_by_decoder:
            decoder.on_malformed = counter if not start else Shift(counter, start)
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
            decoder.on_malformed = on_final if not self.start else Shift(on_final, self.start)
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
        prefix by prefix (a binary search), by a fresh decoder in the same state.  None
        after a transform: its text is not the decoder's, character for character."""
        if self.transcoder.transform is not None:
            return None
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
