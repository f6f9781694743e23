"""What a malformed unit becomes: the decoder's error policies, the fallback codec,
and the reporting of events to ``on_malformed``."""

from __future__ import annotations

import codecs
from collections.abc import Callable

from .events import Malformed, MalformedKind, Utf8DecodeError
from .variants import OPTU8

OnMalformed = Callable[[Malformed], object]

_REPLACEMENT = "\ufffd"

#: Error policies understood without a ``codecs.register_error`` lookup.
ERROR_POLICIES = (
    "replace",
    "strict",
    "ignore",
    "backslashreplace",
    "surrogateescape",
    "surrogatepass",
    OPTU8,
)
_GAP_POLICIES = ("replace", "skip")


def _fallback_table(codec: str) -> tuple[str | None, ...]:
    """What each byte decodes to in a single-byte codec (None where it is undefined)."""
    info = codecs.lookup(codec)  # LookupError for unknown names, as codecs does
    table: list[str | None] = []
    for b in range(256):
        try:
            text = info.decode(bytes((b,)), "strict")[0]
        except UnicodeDecodeError:
            table.append(None)
            continue
        table.append(text)
        if len(text) != 1:
            raise ValueError(f"fallback codec {codec!r} is not a single-byte codec")
    every_byte = bytes(range(256))
    one_shot = info.decode(every_byte, "surrogateescape")[0]
    if one_shot != "".join(c if c is not None else chr(0xDC00 + b) for b, c in enumerate(table)):
        raise ValueError(f"fallback codec {codec!r} is not a single-byte codec")
    return tuple(table)


_new_object = object.__new__
_set_offset = Malformed.__dict__["offset"].__set__
_set_data = Malformed.__dict__["data"].__set__
_set_kind = Malformed.__dict__["kind"].__set__


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


class _Policy:
    """What a malformed unit becomes, and the reporting of events to ``on_malformed``.

    A mapping scanner's callback is ``map_unit``.  The decoder holds this object and the
    scanner; this object holds no reference to the decoder, so that no reference cycle
    keeps a decoder (and what its scanner holds) alive until the cyclic collector runs.
    """

    __slots__ = (
        "codec",
        "constant",
        "custom",
        "errors",
        "failed_text",
        "fallback_table",
        "gap_policy",
        "on_malformed",
        "reporting",
        "surrogates_pass",
    )

    def __init__(
        self,
        errors: str,
        codec: str,
        gap_policy: str,
        fallback_table: tuple[str | None, ...] | None,
        on_malformed: OnMalformed | None,
    ) -> None:
        self.errors = errors
        self.codec = codec
        self.gap_policy = gap_policy
        self.fallback_table = fallback_table
        self.on_malformed = on_malformed
        self.surrogates_pass = errors == "surrogatepass"
        self.constant: str | None = None
        self.custom: Callable[[UnicodeError], tuple[str | bytes, int]] | None = None
        if errors == "replace":
            self.constant = _REPLACEMENT
        elif errors == "ignore":
            self.constant = ""
        elif errors not in ERROR_POLICIES:
            # Raises LookupError for unknown names, as codecs does.
            self.custom = codecs.lookup_error(errors)
        #: True while ``on_malformed`` runs from here (a scanner keeps its own flag).
        self.reporting = False
        #: The text of the unit whose callback raised, for ``Utf8Decoder._recover``.
        self.failed_text = ""

    def map_unit(self, event: Malformed) -> str:
        """A mapping scanner's callback: report the unit, return its text (or raise)."""
        if self.on_malformed is not None:
            self.report(event)
        return self.unit_text(event)

    def report(self, event: Malformed) -> None:
        """Hand ``event`` to the callback; if it raises, keep the unit's text for later.

        ``Utf8Decoder._recover`` puts that text after the text decoded before the unit,
        so a raising callback loses nothing (the decoder's class docstring).
        """
        callback = self.on_malformed
        assert callback is not None
        self.reporting = True
        try:
            callback(event)
        except BaseException:
            self.failed_text = self.text_despite_failure(event)
            raise
        finally:
            self.reporting = False

    def gap_text(self) -> str:
        return _REPLACEMENT if self.gap_policy == "replace" else ""

    def text_despite_failure(self, event: Malformed) -> str:
        """The text of the unit of ``event``, whose callback raised."""
        if event.kind is MalformedKind.LOST_BYTES:
            return self.gap_text()
        try:
            return self.unit_text(event)
        except Utf8DecodeError:
            return ""  # strict: the unit has no text, the callback's exception stands for it

    def unit_text(self, event: Malformed) -> str:
        """The text for one unit: surrogatepass, the fallback codec, or the policy."""
        data, kind = event.data, event.kind
        if self.surrogates_pass and kind is MalformedKind.SURROGATE and len(data) == 3:
            # ED A0..BF 80..BF: the surrogate its bits spell, as ``surrogatepass`` does.
            return chr(0xD000 | ((data[1] & 0x3F) << 6) | (data[2] & 0x3F))
        table = self.fallback_table
        if table is not None:
            chars = [table[b] for b in data]
            if None not in chars:
                return "".join(chars)  # type: ignore[arg-type]
        constant = self.constant
        if constant is not None:
            return constant
        errors = self.errors
        if errors == "surrogateescape":
            return _escape_surrogates(data)
        if errors == "backslashreplace":
            return _escape_backslash(data)
        if errors == OPTU8:
            return "".join([chr(0xEF00 + b) for b in data])
        if self.custom is not None:
            return self._call_custom(data, kind)
        # strict, and surrogatepass for anything that is not a surrogate
        raise Utf8DecodeError(event, "", self.codec)

    def _call_custom(self, data: bytes, kind: MalformedKind) -> str:
        assert self.custom is not None
        exc = UnicodeDecodeError(self.codec, data, 0, len(data), kind.reason)
        result = self.custom(exc)
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
