"""UTF-8 to UTF-16 or UTF-32 and back, and UTF-8 repaired into UTF-8, straight from bytes
to bytes: no ``str`` is built.

``byte_transcoder`` makes a ``ByteTranscoder`` (``_speedups``, in C, or its twin in
``_native``, chosen by ``_accel.implementation()``).  Its output, events, counts and
failures are those of the str path, for every chunking:

* from UTF-8 (into UTF-16/32, or into UTF-8: the repair, well-formed stretches copied
  as they are): ``Utf8Decoder(errors)`` then ``str.encode(target)``: each malformed unit
  (a maximal subpart, Table 3-7) is one U+FFFD in the target (``replace``), nothing
  (``ignore``), or stops the call (``strict``), with the decoder's ``Malformed`` events
  and absolute offsets;
* to UTF-8: the source codec's decoder then UTF-8, each unit the codec reports named by
  ``codec_error_kind`` (what ``transcode_file`` reports for these codecs): a lone low
  surrogate ``INVALID_BYTE``, a high one without its low one ``SURROGATE``, a UTF-32 code
  point past U+10FFFF ``INVALID_BYTE``, a UTF-32 surrogate ``SURROGATE``, input cut at
  the end of the stream ``TRUNCATED_AT_END``.

Units are counted inside the transcoder (``drain()``); an event object is made only for
a callback or for the strict policy.  ``transcode(data, final)`` returns the output
that is certain; in strict mode a call that meets a unit returns the output before it
and sets ``failure`` to the unit's event (the caller raises); the next call goes on
after the unit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ._accel import ACCEL_KINDS, ACCEL_MAX_POSITION, implementation
from ._native import ByteTranscoder as PyByteTranscoder
from .events import Malformed

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, WriteableBuffer

__all__ = [
    "COUNTED_KINDS",
    "DIRECT_ENCODINGS",
    "DIRECT_POLICIES",
    "ByteTranscoder",
    "byte_transcoder",
    "direct",
]

#: The encodings a ``ByteTranscoder`` writes from UTF-8 or reads into UTF-8.
DIRECT_ENCODINGS = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
#: The input policies it applies itself.
DIRECT_POLICIES = ("replace", "ignore", "strict")
#: The kinds ``ByteTranscoder.drain()`` counts, in its order.
COUNTED_KINDS = ACCEL_KINDS


class ByteTranscoder(Protocol):
    """What ``byte_transcoder`` returns (``_transcode.c`` documents each member)."""

    @property
    def failure(self) -> Malformed | None: ...
    @property
    def position(self) -> int: ...
    @property
    def buffered(self) -> int: ...
    @property
    def reporting(self) -> int: ...
    def transcode(self, data: ReadableBuffer, final: bool = False, /) -> bytes: ...
    def transcode_into(
        self, data: ReadableBuffer, out: WriteableBuffer, offset: int = 0, final: bool = False, /
    ) -> int: ...
    def bound(self, n: int, /) -> int: ...
    def drain(self) -> tuple[int, ...]: ...


def direct(source: str, target: str, errors: str) -> bool:
    """Can a ``ByteTranscoder`` do this (canonical codec names)?  UTF-8 to or from one
    of ``DIRECT_ENCODINGS``, or UTF-8 to UTF-8 (the repair: well-formed bytes copied,
    each malformed unit replaced or dropped)."""
    return errors in DIRECT_POLICIES and (
        (source, target) == ("utf-8", "utf-8")
        or (source == "utf-8" and target in DIRECT_ENCODINGS)
        or (target == "utf-8" and source in DIRECT_ENCODINGS)
    )


def byte_transcoder(
    source: str,
    target: str,
    errors: str = "replace",
    on_malformed: Callable[[Malformed], object] | None = None,
    start_offset: int = 0,
) -> ByteTranscoder:
    """A transcoder from ``source`` to ``target`` (one of them ``utf-8``, the other one of
    ``DIRECT_ENCODINGS`` or ``utf-8`` too) whose input starts at the absolute offset
    ``start_offset``.

    ``on_malformed`` gets every malformed unit's event, in stream order.  Past
    ``ACCEL_MAX_POSITION`` the pure-Python twin does the work (the C one counts offsets
    in 64-bit integers).
    """
    if not direct(source, target, errors):
        raise ValueError(f"no byte transcoder from {source} to {target} with errors={errors!r}")
    kind = implementation().ByteTranscoder
    if start_offset >= ACCEL_MAX_POSITION:
        kind = PyByteTranscoder
    transcoder: ByteTranscoder = kind(
        source, target, errors, on_malformed, start_offset, Malformed, ACCEL_KINDS
    )
    return transcoder
