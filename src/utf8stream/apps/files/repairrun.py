"""The mojibake repair of UTF-8 into UTF-8 on bytes: the direct path, then the repair."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from ...transforms import MojibakeBytesRepairer, MojibakeRepairer
from .directrun import DirectRun

if TYPE_CHECKING:
    from ...core.events import MalformedKind
    from ...core.transform import TextTransform
    from .results import EventCounter, OnMalformed

__all__ = ["RepairRun", "repairs_in_bytes"]


def repairs_in_bytes(
    transform: TextTransform, source: str, target: str, errors: str
) -> TypeGuard[MojibakeRepairer]:
    """Whether the only transform is a fresh ``MojibakeRepairer`` nobody listens to, from
    UTF-8 into UTF-8 with a policy that leaves valid UTF-8 or stops (``replace``,
    ``ignore``, ``strict``): then the text is not needed at all (``RepairRun``)."""
    return (
        type(transform) is MojibakeRepairer
        and transform.on_change is None
        and transform.position == 0
        and source == target == "utf-8"
        and errors in ("replace", "ignore", "strict")
    )


class RepairRun:
    """``CodecRun`` with a ``MojibakeRepairer`` for UTF-8 into UTF-8: the input goes the
    direct path (malformed units replaced and counted, as bytes, offsets in the input),
    then ``MojibakeBytesRepairer``, which decodes only the lines it could change.  The
    output is the text path's: the direct path gives what the decoder decodes, encoded,
    and the byte repair gives what the text repair gives on it.  Stopped by malformed
    input (``strict``), ``partial_output`` is the text path's too: the output before it,
    but for what the text repair holds."""

    unmappable = 0

    def __init__(
        self,
        errors: str,
        bom: str,
        counter: EventCounter,
        transform: MojibakeRepairer,
        start: int = 0,
        on_final: OnMalformed | None = None,
    ) -> None:
        self.direct = DirectRun("utf-8", "utf-8", errors, bom, counter, start, on_final)
        self.repairer = MojibakeBytesRepairer(max_carry=transform.max_carry)
        self.partial_output = b""

    @property
    def text_characters(self) -> int:
        """Characters of the repaired text handed out so far."""
        return self.direct.text_characters - self.repairer.characters_removed

    def transcode(self, data: bytes | memoryview, final: bool = False) -> bytes:
        try:
            out = self.direct.transcode(data, final)
        except UnicodeDecodeError:
            before = self.repairer.transform(self.direct.partial_output)
            self.partial_output = before + self.repairer.release()
            raise
        return self.repairer.transform(out, final)

    def counts(self) -> dict[MalformedKind, int]:
        return self.direct.counts()
