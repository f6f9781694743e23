"""Follow text over a lossy channel: lost packets become one U+FFFD each, not garbage.

    python examples/lossy_channel.py [--backend asyncio|trio] [--loss 0.1] [--seed 3]

A sender cuts UTF-8 text into small numbered packets (cut anywhere, even inside a
character) and "sends" them over a channel that drops some at random.  The receiver sees
the gaps in the sequence numbers and calls ``mark_gap()`` before decoding the next packet:
the bytes around each hole resynchronise to the next whole character, so every line that
arrived intact is printed intact, and each hole shows as a single U+FFFD.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ObjectReceiveStream

from utf8stream import LineReceiveStream, Utf8ReceiveStream

TEXT = "".join(
    f"{i:02d} Příliš žluťoučký kůň úpěl ďábelské ódy · 日本語 · 😀\n" for i in range(12)
).encode()
PACKET = 13  # bytes per packet: an odd size, so packets end inside characters


class SequencedReceiver(ByteReceiveStream):
    """Bytes from numbered packets; calls ``on_gap(lost_bytes)`` where packets are missing."""

    def __init__(self, packets: ObjectReceiveStream[tuple[int, bytes]]) -> None:
        self.packets = packets
        self.expected = 0
        self.on_gap: Callable[[int | None], None] = lambda lost: None

    async def receive(self, max_bytes: int = 65536) -> bytes:
        seq, payload = await self.packets.receive()
        if seq != self.expected:
            # Tell the decoder before it sees the bytes after the hole.
            self.on_gap((seq - self.expected) * PACKET)
        self.expected = seq + 1
        return payload

    async def aclose(self) -> None:
        await self.packets.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {}


async def main_async(loss: float, seed: int) -> None:
    rng = random.Random(seed)
    send, receive = anyio.create_memory_object_stream[tuple[int, bytes]](100)
    dropped = 0
    for seq, start in enumerate(range(0, len(TEXT), PACKET)):
        if seq > 0 and rng.random() < loss:
            dropped += 1
            continue  # lost in transit
        send.send_nowait((seq, TEXT[start : start + PACKET]))
    send.close()

    channel = SequencedReceiver(receive)
    text = Utf8ReceiveStream(channel)
    channel.on_gap = text.mark_gap
    async for line in LineReceiveStream(text):
        print(line)
    stats = text.statistics()
    print(
        f"-- {dropped} packet(s) dropped, {stats.gaps} gap(s) marked (adjacent losses make one), "
        f"{stats.bytes_in} bytes received, {stats.malformed_total} other malformed unit(s)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--loss", type=float, default=0.1, help="drop probability")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    anyio.run(main_async, args.loss, args.seed, backend=args.backend)


if __name__ == "__main__":
    main()
