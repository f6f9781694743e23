"""Events and errors the decoder reports: small immutable records with structured fields."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["DecoderStatistics", "Malformed", "MalformedKind", "Utf8DecodeError"]


class MalformedKind(enum.Enum):
    """Why a unit of the input is malformed.

    A unit is a maximal subpart of ill-formed input, as the Unicode Standard cuts it (one
    U+FFFD each under ``replace``), or bytes declared lost with ``mark_gap()``.
    """

    UNEXPECTED_CONTINUATION = "unexpected continuation byte"
    OVERLONG = "overlong encoding"
    SURROGATE = "encoded surrogate"
    OUT_OF_RANGE = "code point beyond U+10FFFF"
    INVALID_BYTE = "byte that never occurs in UTF-8"
    INCOMPLETE_SEQUENCE = "incomplete sequence"
    TRUNCATED_AT_END = "sequence truncated at end of stream"
    LOST_BYTES = "bytes lost in a gap"

    # Members are singletons compared by identity; identity hashing keeps counting by
    # kind cheap (Enum's own __hash__ is a Python-level call).
    __hash__ = object.__hash__

    @property
    def reason(self) -> str:
        """Human-readable description, used in error messages."""
        return self.value


@dataclass(frozen=True, slots=True)
class Malformed:
    """One malformed unit (a maximal subpart) or one gap.

    ``offset`` is the absolute byte offset of ``data[0]`` in the stream (for a gap with no
    held or skipped bytes, the offset of the first byte after the gap); ``data`` holds the
    unit's bytes (1..3, or 0..6 for ``LOST_BYTES``).
    """

    offset: int
    data: bytes
    kind: MalformedKind

    @property
    def end(self) -> int:
        """Offset just past the unit's last byte."""
        return self.offset + len(self.data)

    def __str__(self) -> str:
        return f"{self.kind.name} at offset {self.offset}: {self.data.hex(' ') or '(none)'}"


def codec_error_kind(reason: str) -> MalformedKind:
    """The nearest ``MalformedKind`` for the reason a Python codec gives for a decoding
    error (a codec outside the UTF-8 family): ``TRUNCATED_AT_END`` for input cut at the
    end, ``SURROGATE`` for a broken UTF-16 surrogate or a UTF-32 one, ``INVALID_BYTE``
    for the rest."""
    if reason in ("truncated data", "unexpected end of data", "incomplete multibyte sequence"):
        return MalformedKind.TRUNCATED_AT_END
    if "surrogate" in reason:
        return MalformedKind.SURROGATE
    return MalformedKind.INVALID_BYTE


class Utf8DecodeError(UnicodeDecodeError):
    """Raised in strict mode at the first malformed unit.

    The unit counts as consumed; the decoder keeps the rest of the input of the failing
    call and continues right after the unit on the next call, so nothing but the unit is
    lost.  ``partial`` is the text decoded before the unit in the failing call.
    ``object[start:end]`` is the unit itself.
    """

    offset: int
    kind: MalformedKind
    malformed: Malformed
    partial: str

    def __init__(self, malformed: Malformed, partial: str = "", encoding: str = "utf-8") -> None:
        super().__init__(encoding, malformed.data, 0, len(malformed.data), malformed.kind.reason)
        self.malformed = malformed
        self.offset = malformed.offset
        self.kind = malformed.kind
        self.partial = partial

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.malformed, self.partial, self.encoding))

    def __str__(self) -> str:
        return (
            f"{self.encoding!r} codec can't decode {self.malformed.data.hex(' ') or 'input'}"
            f" at offset {self.offset}: {self.kind.reason} ({self.kind.name})"
        )


def _empty_counts() -> Mapping[MalformedKind, int]:
    return MappingProxyType({})


@dataclass(frozen=True)
class DecoderStatistics:
    """A snapshot of what a decoder has seen so far."""

    bytes_fed: int = 0
    chars_out: int = 0
    malformed: Mapping[MalformedKind, int] = field(default_factory=_empty_counts)
    gaps: int = 0
    lost_bytes_declared: int = 0

    @property
    def malformed_total(self) -> int:
        """Malformed units of every kind except gaps."""
        return sum(n for k, n in self.malformed.items() if k is not MalformedKind.LOST_BYTES)
