"""``TranscoderCheckpoint``: an immutable, serialisable snapshot of a ``Transcoder``.

The decoding side is whichever of three the transcoder holds: the UTF-8 decoder's own
``DecoderCheckpoint`` (``utf8``), the ``AutoCheckpoint`` of ``source="auto"`` (``auto``),
or for any other codec the state its incremental decoder reports (``getstate()``:
``held`` bytes and a ``flag``).  The encoding side is the encoder's ``getstate()`` (a
pending WTF-8 high surrogate, whether a ``utf-16``/``utf-32``/``utf-8-sig`` target wrote
its BOM, the shift state of ISO-2022, a held IDNA label) and the code points it was
given.  Codecs whose incremental coders cannot report their state are refused with
``CheckpointUnsupported`` (``unsupported_reason``), never checkpointed wrongly.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, fields
from typing import Any

from .autodecode import AutoCheckpoint
from .decoderstate import DecoderCheckpoint

__all__ = ["CheckpointUnsupported", "TranscoderCheckpoint", "unsupported_reason"]

#: Codecs whose incremental coders decode or encode each call as a whole input, so that
#: a stream cut anywhere has no state to save (nor to lose).
_WHOLE_INPUT_ONLY = frozenset({"punycode"})

#: Fields by JSON type, for ``from_json``'s checks.
_STRINGS = ("source", "target", "errors", "bom", "decoding")
_INTS = ("flag", "encoder_position", "characters")
_BOOLS = ("sniffing", "at_text_start")
_BYTES = ("sniffed", "held", "carry")


class CheckpointUnsupported(ValueError):
    """A transcoder whose codec cannot report its state is asked for a checkpoint."""


def unsupported_reason(codec: str) -> str | None:
    """Why a transcoder reading or writing ``codec`` cannot be checkpointed, or None.

    The stdlib's codecs report their state (``getstate()``), or keep none between calls
    (the single-byte code pages), except those in ``_WHOLE_INPUT_ONLY``.  A codec
    registered by a program is trusted only if both its incremental decoder and encoder
    define ``getstate`` themselves: ``codecs``' defaults report no state whatever the
    coder holds.
    """
    info = codecs.lookup(codec)
    if not getattr(info, "_is_text_encoding", True):
        return f"{info.name} is not a text encoding"
    if info.name in _WHOLE_INPUT_ONLY:
        return f"the {info.name} codec decodes and encodes each call as a whole input"
    if info.incrementaldecoder is None or info.incrementalencoder is None:
        return f"the {info.name} codec has no incremental decoder or encoder"
    if (getattr(info.incrementaldecoder, "__module__", "") or "").startswith("encodings."):
        return None
    plain = (
        getattr(info.incrementaldecoder, "getstate", None) is codecs.IncrementalDecoder.getstate
        or getattr(info.incrementalencoder, "getstate", None) is codecs.IncrementalEncoder.getstate
    )
    if plain:
        return f"the {info.name} codec's incremental coders do not report their state"
    return None


@dataclass(frozen=True)
class TranscoderCheckpoint:
    """A serialisable snapshot of a ``Transcoder``, from which
    ``Transcoder.from_checkpoint`` continues exactly: the same bytes out, the same
    ``Malformed`` events and offsets, the same counts.

    ``source`` (a codec name, or ``"auto"``), ``target``, ``errors`` and ``bom`` are the
    transcoder's settings.  ``sniffing``: a BOM is still being looked for in ``sniffed``.
    ``decoding``: the codec the input is decoded with once known (what a BOM chose, or
    ``source``; ``"auto"`` for detection).  ``utf8``/``auto``: the decoder's checkpoint
    for the UTF-8 family and ``"auto"``; for any other codec, ``held`` and ``flag`` are
    its incremental decoder's state.  ``encoder_state`` is the encoder's ``getstate()``,
    ``encoder_position`` the code points it was given; ``at_text_start``: nothing decoded
    yet (the BOM policy still applies); ``characters``: ``Transcoder.characters``;
    ``carry``: ``Transcoder.partial_output``.
    """

    source: str
    target: str
    errors: str = "replace"
    bom: str = "keep"
    sniffing: bool = False
    sniffed: bytes = b""
    decoding: str = ""
    utf8: DecoderCheckpoint | None = None
    auto: AutoCheckpoint | None = None
    held: bytes = b""
    flag: int = 0
    encoder_state: int | str = 0
    encoder_position: int = 0
    at_text_start: bool = True
    characters: int = 0
    carry: bytes = b""

    def to_json(self) -> str:
        """Serialise to a JSON object (bytes as hex strings, the decoder's checkpoint as
        its own ``to_json`` object)."""
        import json  # here: importing the transcoder does without it

        raw: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in _BYTES:
            raw[name] = raw[name].hex()
        for name in ("utf8", "auto"):
            inner = raw[name]
            raw[name] = None if inner is None else json.loads(inner.to_json())
        raw["version"] = 1
        return json.dumps(raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TranscoderCheckpoint:
        """Inverse of ``to_json``; ``ValueError`` for anything that is not one."""
        import json

        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.pop("version", None) != 1:
            raise ValueError("not a utf8stream transcoder checkpoint (version 1)")
        unknown = set(raw) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown checkpoint fields: {sorted(unknown)}")
        missing = {"source", "target"} - set(raw)
        if missing:
            raise ValueError(f"missing checkpoint fields: {sorted(missing)}")
        _check_types(raw)
        for name in _BYTES:
            raw[name] = _hex(raw, name)
        if raw.get("utf8") is not None:
            raw["utf8"] = DecoderCheckpoint.from_json(json.dumps(raw["utf8"]))
        if raw.get("auto") is not None:
            raw["auto"] = AutoCheckpoint.from_json(json.dumps(raw["auto"]))
        return cls(**raw)


def _check_types(raw: dict[str, Any]) -> None:
    def bad(name: str, what: str) -> ValueError:
        return ValueError(f"checkpoint field {name!r} must be {what}, not {raw[name]!r}")

    for name in _STRINGS:
        if name in raw and not isinstance(raw[name], str):
            raise bad(name, "a string")
    for name in _INTS:
        if name in raw and (type(raw[name]) is not int or raw[name] < 0):
            raise bad(name, "a non-negative integer")
    for name in _BOOLS:
        if name in raw and not isinstance(raw[name], bool):
            raise bad(name, "true or false")
    if "encoder_state" in raw and type(raw["encoder_state"]) not in (int, str):
        raise bad("encoder_state", "an integer or a string")
    for name in ("utf8", "auto"):
        if raw.get(name) is not None and not isinstance(raw[name], dict):
            raise bad(name, "an object or null")


def _hex(raw: dict[str, Any], name: str) -> bytes:
    value = raw.get(name, "")
    try:
        return bytes.fromhex(value)
    except (TypeError, ValueError):
        raise ValueError(f"checkpoint field {name!r} must be hex digits, not {value!r}") from None
