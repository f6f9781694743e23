"""A trio-native ``ReceiveStream`` whose bytes are always valid UTF-8.

``ValidUtf8ReceiveStream(transport)`` reads bytes from a trio ``ReceiveStream`` and hands
out the same bytes with every malformed unit replaced by EF BF BD (U+FFFD), never splitting
a character between two ``receive_some`` results, and flushing a cut-off final sequence at
the end of the stream.  It is a drop-in ``trio.abc.ReceiveStream`` for code that wants
bytes it can decode piece by piece without an incremental decoder.

Decoding is ``Utf8Decoder``'s; this module only re-encodes its text and cuts the result to
``max_bytes`` at character boundaries.
"""

from __future__ import annotations

from ..core.boundaries import char_start
from ..core.decoder import OnMalformed, Utf8Decoder
from ._trio import missing_trio
from .sources import DEFAULT_MAX_BYTES

try:
    import trio
except ImportError as exc:
    raise missing_trio("utf8stream.aio.trio_stream") from exc

__all__ = ["ValidUtf8ReceiveStream"]


def _char_boundary(data: bytes, limit: int) -> int:
    """The largest cut <= ``limit`` that does not split a character of valid ``data``.

    With ``limit`` < 4 and a longer first character there is none; then ``limit`` itself.
    """
    return char_start(data, limit) or limit


class ValidUtf8ReceiveStream(trio.abc.ReceiveStream):
    """Valid UTF-8 from any trio ``ReceiveStream``.

    ``receive_some(max_bytes)`` returns at most ``max_bytes`` bytes, ending on a character
    boundary (a ``max_bytes`` below 4 that cannot hold the next character gets its first
    bytes: the only way to honour such a limit), and ``b""`` once the transport is at its
    end and everything was handed out.  Like every trio stream method it is a checkpoint,
    raises ``trio.BusyResourceError`` if another task is already receiving and
    ``trio.ClosedResourceError`` after ``aclose()``; a cancelled call loses nothing.

    ``gap`` and ``on_malformed`` are the decoder's; ``decoder`` is exposed, so ``mark_gap``
    and ``statistics`` are available through it.
    """

    def __init__(
        self,
        transport: trio.abc.ReceiveStream,
        *,
        gap: str = "replace",
        on_malformed: OnMalformed | None = None,
    ) -> None:
        if not callable(getattr(transport, "receive_some", None)):
            # Checked now: a wrong argument would fail only at the first read.
            raise TypeError(
                f"ValidUtf8ReceiveStream needs a trio ReceiveStream (with receive_some()), "
                f"not {type(transport).__name__}"
            )
        self.transport = transport
        self.decoder = Utf8Decoder("replace", gap=gap, on_malformed=on_malformed)
        self._out = b""
        self._eof = False
        self._closed = False
        self._busy = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if max_bytes is None:
            max_bytes = DEFAULT_MAX_BYTES
        elif not isinstance(max_bytes, int):
            raise TypeError("max_bytes must be an integer or None")
        elif max_bytes < 1:
            raise ValueError("max_bytes must be >= 1")
        if self._busy:
            raise trio.BusyResourceError("another task is already receiving")
        self._busy = True
        try:
            if self._closed:
                raise trio.ClosedResourceError
            if self._out or self._eof:
                await trio.lowlevel.checkpoint()
                if self._closed:
                    raise trio.ClosedResourceError
                return self._take(max_bytes)
            while True:
                data = await self.transport.receive_some(max_bytes)
                if not data:
                    self._eof = True
                    self._out = self.decoder.decode(b"", final=True).encode()
                    return self._take(max_bytes)
                text = self.decoder.decode(data)
                if text:
                    self._out = text.encode()
                    return self._take(max_bytes)
        finally:
            self._busy = False

    def _take(self, max_bytes: int) -> bytes:
        out = self._out
        if len(out) <= max_bytes:
            self._out = b""
            return out
        cut = _char_boundary(out, max_bytes)
        self._out = out[cut:]
        return out[:cut]

    async def aclose(self) -> None:
        self._closed = True
        await self.transport.aclose()
