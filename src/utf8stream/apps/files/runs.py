"""Choosing and checking a run: codec names, the probe of the policies, the path."""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING

from ...core.decoder import Utf8Decoder
from ...core.direct import direct
from ...core.variants import VARIANTS
from .codecrun import UNMAPPABLE_POLICIES, CodecRun
from .directrun import NATIVE_ORDER, DirectRun
from .results import EventCounter, OnMalformed

if TYPE_CHECKING:
    from ...core.transform import TextTransform
    from .repairrun import RepairRun

__all__ = ["SPLITTABLE", "canonical", "check_options", "is_direct", "new_run"]

#: Sources whose bytes can be cut at UTF-8 character boundaries.
SPLITTABLE = {"utf-8", "wtf-8", "cesu-8", "mutf-8"}


def canonical(encoding: str) -> str:
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise LookupError(f"unknown encoding: {encoding}") from None
    name = info.name.replace("_", "-")
    # Our UTF-8 variants are registered as codecs that str.encode refuses, yet are text.
    if name not in VARIANTS and not getattr(info, "_is_text_encoding", True):
        raise LookupError(f"not a text encoding: {encoding}")
    return name


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


def is_direct(source: str, target: str, errors: str, bom: str) -> bool:
    """Whether ``new_run`` makes a ``DirectRun`` for these options (canonical names).

    (``bom="detect"`` may find that the input is not in ``source`` at all: the codec
    path reads it.)"""
    return bom != "detect" and direct(source, NATIVE_ORDER.get(target, target), errors)


def new_run(
    source: str,
    target: str,
    errors: str,
    bom: str,
    unmappable: str,
    counter: EventCounter,
    start: int = 0,
    on_final: OnMalformed | None = None,
    transform: TextTransform | None = None,
) -> CodecRun | DirectRun | RepairRun:
    """A ``DirectRun`` where a ``ByteTranscoder`` can do the work, else a ``CodecRun``
    (with a ``transform``: the text is then decoded, transformed and encoded), except for
    the mojibake repair of UTF-8 into UTF-8 alone, made on bytes (``RepairRun``)."""
    if transform is None and is_direct(source, target, errors, bom):
        return DirectRun(source, target, errors, bom, counter, start, on_final)
    if transform is not None and is_direct(source, target, errors, bom):
        # Here, not at the top: the transforms load only for a program that asks for one.
        from .repairrun import RepairRun, repairs_in_bytes

        if repairs_in_bytes(transform, source, target, errors):
            return RepairRun(errors, bom, counter, transform, start, on_final)
    return CodecRun(source, target, errors, bom, unmappable, counter, start, on_final, transform)


def check_options(source: str, target: str, errors: str, bom: str, unmappable: str) -> None:
    """Every combination is tried on a tiny probe before any file is touched."""
    if unmappable not in UNMAPPABLE_POLICIES:
        raise ValueError(f"unmappable must be one of {UNMAPPABLE_POLICIES}, not {unmappable!r}")
    _probe_input_policy(source, errors)
    run = new_run(source, target, errors, bom, unmappable, EventCounter(None))
    run.transcode(b"", final=True)
