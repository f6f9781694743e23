"""What a transcoding run reports: its summary, its errors, the malformed units it counts."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from ...core.events import Malformed, MalformedKind

if TYPE_CHECKING:
    from ...core.detector import Detection

__all__ = [
    "EventCounter",
    "OnMalformed",
    "Progress",
    "SameFileError",
    "Shift",
    "TranscodeSummary",
    "UnmappableCharacterError",
    "WorkerError",
]

Progress = Callable[[int, int], object]
OnMalformed = Callable[[Malformed], object]


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
    #: With ``source="auto"``: what the detector decided (the encoding, and why).
    detection: Detection | None = None

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


class EventCounter:
    """Counts events by kind and passes them on."""

    def __init__(self, forward: OnMalformed | None) -> None:
        self.counts: dict[MalformedKind, int] = {}
        self.forward = forward

    def __call__(self, event: Malformed) -> None:
        self.counts[event.kind] = self.counts.get(event.kind, 0) + 1
        if self.forward is not None:
            self.forward(event)


class Shift:
    """Make a piece's event offsets absolute."""

    def __init__(self, forward: Callable[[Malformed], object], by: int) -> None:
        self.forward, self.by = forward, by

    def __call__(self, event: Malformed) -> None:
        self.forward(Malformed(event.offset + self.by, event.data, event.kind))
