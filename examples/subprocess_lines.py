"""Read lines from a subprocess's stdout as it produces them, on asyncio or trio.

    python examples/subprocess_lines.py [--backend asyncio|trio] [-- command ...]

By default the child is a small Python program that writes multibyte text in odd-sized,
flushed pieces (so characters and ``\\r\\n`` pairs arrive split), one over-long line and
one bad byte.  Give a command after ``--`` to read lines from that instead.
"""

from __future__ import annotations

import argparse
import sys

import anyio

from utf8stream import LineReceiveStream, LineTooLong

CHILD = r"""
import sys, time
out = sys.stdout.buffer
text = ("première ligne\r\nвторая строка\n第三行\n" + "x" * 300 + "\nlast 😀").encode()
text = text.replace(b"\xd0\xb2", b"\xd0\xb2\xff", 1)   # one bad byte
sizes = [1, 2, 3, 5, 7, 11]
i = 0
while i < len(text):
    step = sizes[i % len(sizes)]
    out.write(text[i:i + step]); out.flush()
    i += step
    time.sleep(0.001)
"""


async def main_async(command: list[str], max_line_bytes: int) -> int:
    async with await anyio.open_process(command) as process:
        assert process.stdout is not None
        lines = LineReceiveStream(
            process.stdout, max_line_bytes=max_line_bytes, on_overlong="raise"
        )
        while True:
            try:
                line = await lines.receive()
            except LineTooLong as exc:
                print(f"  (line longer than {exc.max_line_bytes} bytes: {exc.partial[:20]}...)")
                continue
            except anyio.EndOfStream:
                break
            print(f"  line: {line}")
    stats = lines.statistics()
    print(
        f"{stats.lines} lines, {stats.overlong_lines} too long, "
        f"{stats.malformed_total} malformed unit(s); exit status {process.returncode}"
    )
    return process.returncode or 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--max-line-bytes", type=int, default=256)
    parser.add_argument("command", nargs="*", help="command to run (default: a demo child)")
    args = parser.parse_args(argv)
    command = args.command or [sys.executable, "-c", CHILD]
    status = anyio.run(main_async, command, args.max_line_bytes, backend=args.backend)
    raise SystemExit(status)


if __name__ == "__main__":
    main()
