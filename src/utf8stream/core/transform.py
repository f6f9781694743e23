"""Text transforms on a stream: the protocol every transform follows, its events, its
checkpoint, and ``chain``.

A transform takes text in pieces and gives text out: ``transform(text, final=False)``.
Between calls it carries at most ``max_carry`` code points of input it cannot decide on
yet (the end of a run that a later character could still change); ``final=True`` hands
out everything it carries, and the transform goes on from there as if at the start of a
new text, its positions still counting.  For every way of cutting a text into pieces the
output is the same as that of one call with the whole text and ``final=True``.

What a transform changes it reports as ``TextChange`` events, to its ``on_change``
callback, with absolute offsets in code points of its input and of its output.  A
transform computes its events only when a callback is set, so a stream nobody listens to
pays nothing for them.

``checkpoint()`` is a ``TransformCheckpoint``: the options, the positions and the carry.
``from_checkpoint`` builds a transform that goes on exactly where the first one stood; the
JSON form (``to_json``/``from_json``) is what the decoder's checkpoints are made of too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Chain",
    "OnChange",
    "TextChange",
    "TextTransform",
    "TransformCheckpoint",
    "chain",
    "register_transform",
    "transform_from_checkpoint",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class TextChange:
    """One change a transform made to the text.

    ``offset`` is the absolute offset (in code points) of ``original`` in the transform's
    input, ``output_offset`` that of ``replacement`` in its output.  ``kind`` names the
    change (``"normalized"``, ``"stream-safe"``, ``"mojibake"``...); ``detail`` says more
    where the kind has more to say (for a mojibake repair, the encodings undone, in the
    order they are undone).
    """

    offset: int
    original: str
    replacement: str
    output_offset: int
    kind: str
    detail: tuple[str, ...] = ()

    @property
    def end(self) -> int:
        """Offset in the input just past ``original``."""
        return self.offset + len(self.original)


OnChange = Callable[[TextChange], object]


@dataclass(frozen=True)
class TransformCheckpoint:
    """An immutable, serialisable snapshot of a transform.

    ``kind`` names the transform (``register_transform``); ``options`` are the arguments
    that build it again; ``position`` and ``output_position`` count the code points taken
    in and handed out; ``carry`` is the input held back; ``state`` is anything else the
    transform needs (JSON values); ``parts`` are the checkpoints of a chain's transforms.
    """

    kind: str
    position: int = 0
    output_position: int = 0
    carry: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    state: Mapping[str, Any] = field(default_factory=dict)
    parts: tuple[TransformCheckpoint, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The checkpoint as JSON values."""
        raw: dict[str, Any] = {
            "kind": self.kind,
            "position": self.position,
            "output_position": self.output_position,
            "options": dict(self.options),
            "state": dict(self.state),
            "parts": [part.to_dict() for part in self.parts],
        }
        if _SURROGATE.search(self.carry):
            # JSON reads the escapes of a high and a low surrogate as one character:
            # text holding lone surrogates is written as its code points.
            raw["carry_code_points"] = [ord(c) for c in self.carry]
        else:
            raw["carry"] = self.carry
        return raw

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> TransformCheckpoint:
        """Inverse of ``to_dict``; ``ValueError`` for anything else."""
        if not isinstance(raw, Mapping) or not isinstance(raw.get("kind"), str):
            raise ValueError("not a utf8stream transform checkpoint")
        raw = dict(raw)
        if "carry_code_points" in raw:
            raw["carry"] = "".join(map(chr, raw.pop("carry_code_points")))
        raw["parts"] = tuple(cls.from_dict(part) for part in raw.get("parts", ()))
        known = {"kind", "position", "output_position", "carry", "options", "state", "parts"}
        unknown = set(raw) - known
        if unknown:
            raise ValueError(f"unknown transform checkpoint fields: {sorted(unknown)}")
        return cls(**raw)

    def to_json(self) -> str:
        """Serialise to a JSON object."""
        import json

        return json.dumps({**self.to_dict(), "version": 1}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TransformCheckpoint:
        """Inverse of ``to_json``."""
        import json

        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.pop("version", None) != 1:
            raise ValueError("not a utf8stream transform checkpoint (version 1)")
        return cls.from_dict(raw)


@runtime_checkable
class TextTransform(Protocol):
    """What every transform offers (see the module's docstring)."""

    on_change: OnChange | None

    @property
    def max_carry(self) -> int:
        """The most input, in code points, carried between calls."""

    @property
    def position(self) -> int:
        """Code points of input taken so far (carried ones included)."""

    @property
    def output_position(self) -> int:
        """Code points handed out so far."""

    def transform(self, text: str, final: bool = False) -> str:
        """The output ``text`` lets out; with ``final``, all that is carried too."""

    def checkpoint(self) -> TransformCheckpoint:
        """Where this transform stands."""

    def reset(self) -> None:
        """Drop the carry; positions start again from zero."""


_KINDS: dict[str, Callable[[TransformCheckpoint, OnChange | None], TextTransform]] = {}
#: Where the transforms that ship with utf8stream live, imported on first use.
_HOMES = {"normalize": "normalize", "mojibake": "mojibake"}


def register_transform(
    kind: str, build: Callable[[TransformCheckpoint, OnChange | None], TextTransform]
) -> None:
    """Let ``transform_from_checkpoint`` build transforms of ``kind``."""
    _KINDS[kind] = build


def transform_from_checkpoint(
    checkpoint: TransformCheckpoint, on_change: OnChange | None = None
) -> TextTransform:
    """The transform ``checkpoint`` was taken of, going on where it stood."""
    build = _KINDS.get(checkpoint.kind)
    if build is None and checkpoint.kind in _HOMES:
        from importlib import import_module

        import_module(f".{_HOMES[checkpoint.kind]}", __package__)
        build = _KINDS.get(checkpoint.kind)
    if build is None:
        raise ValueError(f"no transform of kind {checkpoint.kind!r}")
    return build(checkpoint, on_change)


class Chain:
    """Transforms one after the other: each one's output is the next one's input.

    The events of each part keep their own offsets (in that part's input and output);
    ``on_change``, set on the chain, is set on every part.
    """

    def __init__(self, *transforms: TextTransform) -> None:
        self.parts: tuple[TextTransform, ...] = transforms
        self._passed = 0  # what an empty chain passed through: its positions

    @property
    def max_carry(self) -> int:
        return sum(part.max_carry for part in self.parts)

    @property
    def on_change(self) -> OnChange | None:
        return self.parts[0].on_change if self.parts else None

    @on_change.setter
    def on_change(self, callback: OnChange | None) -> None:
        for part in self.parts:
            part.on_change = callback

    @property
    def position(self) -> int:
        return self.parts[0].position if self.parts else self._passed

    @property
    def output_position(self) -> int:
        return self.parts[-1].output_position if self.parts else self._passed

    def transform(self, text: str, final: bool = False) -> str:
        for part in self.parts:
            text = part.transform(text, final)
        if not self.parts:
            self._passed += len(text)
        return text

    def checkpoint(self) -> TransformCheckpoint:
        return TransformCheckpoint(
            "chain",
            self.position,
            self.output_position,
            parts=tuple(part.checkpoint() for part in self.parts),
        )

    def reset(self) -> None:
        for part in self.parts:
            part.reset()
        self._passed = 0

    @classmethod
    def from_checkpoint(
        cls, checkpoint: TransformCheckpoint, on_change: OnChange | None = None
    ) -> Chain:
        if checkpoint.kind != "chain":
            raise ValueError(f"not a chain's checkpoint: {checkpoint.kind!r}")
        built = cls(*(transform_from_checkpoint(p, on_change) for p in checkpoint.parts))
        if not checkpoint.parts:
            built._passed = checkpoint.position
        return built


register_transform("chain", Chain.from_checkpoint)


def chain(*transforms: TextTransform) -> TextTransform:
    """One transform doing ``transforms`` in order (a chain of one is that one)."""
    return transforms[0] if len(transforms) == 1 else Chain(*transforms)
