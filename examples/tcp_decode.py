"""Decode a TCP connection into text and lines, on asyncio or trio.

    python examples/tcp_decode.py [--backend asyncio|trio] [--port N]

Without ``--port`` it starts its own server on 127.0.0.1 (port 0: any free port) that
sends multibyte text in pieces cut inside characters, with one bad byte, then connects to
it.  With ``--port`` it connects to a server you run and prints whatever it sends.
"""

from __future__ import annotations

import argparse

import anyio
from anyio.abc import SocketAttribute, SocketStream

from utf8stream import LineReceiveStream, Utf8Stream

GREETING = (
    "Hello from the server 👋\n"
    "Příliš žluťoučký kůň úpěl ďábelské ódy\r\n"
    "日本語のテキストも大丈夫\n"
).encode() + b"a bad byte \xff does not stop the stream\n"


async def serve(client: SocketStream) -> None:
    """Send GREETING in 5-byte pieces: most characters arrive split in two."""
    async with client:
        for start in range(0, len(GREETING), 5):
            await client.send(GREETING[start : start + 5])
            await anyio.sleep(0.002)


async def read(host: str, port: int) -> None:
    async with Utf8Stream(await anyio.connect_tcp(host, port)) as stream:
        print(f"connected to {host}:{stream.extra(SocketAttribute.remote_port)}")
        async for line in LineReceiveStream(stream):
            print(f"  line: {line}")
        stats = stream.statistics()
        print(
            f"{stats.bytes_in} bytes, {stats.chars_out} characters, "
            f"{stats.malformed_total} malformed unit(s)"
        )


async def main_async(host: str, port: int | None) -> None:
    if port is not None:
        await read(host, port)
        return
    listener = await anyio.create_tcp_listener(local_host=host, local_port=0)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        await read(host, listener.extra(SocketAttribute.local_port))
        tg.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=None)
    args = parser.parse_args(argv)
    anyio.run(main_async, args.host, args.port, backend=args.backend)


if __name__ == "__main__":
    main()
