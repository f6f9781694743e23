"""A log pipeline: follow a file -> keep warnings and errors -> JSON lines on stdout.

    python examples/log_pipeline.py [LOGFILE] [--checkpoint FILE] [--backend asyncio|trio]

Without LOGFILE it creates a log in a temporary folder and runs a writer task beside the
pipeline: lines arrive in pieces, one carries a bad byte, and the log is rotated half-way.
The pipeline prints one JSON object per kept line (file offset, level, text) and stops
when the writer is done.  With --checkpoint it resumes after the lines already printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import anyio

from utf8stream import FollowCheckpoint, follow
from utf8stream.follower import write_checkpoint

KEEP = ("WARN", "ERROR")


async def writer(path: Path, done: anyio.Event) -> None:
    """Append log lines in small pieces; rotate the file half-way."""
    lines = [
        f"2026-11-22T10:00:{i:02d}Z {level} {text}\n".encode()
        for i, (level, text) in enumerate(
            [
                ("INFO", "service started"),
                ("WARN", "disk at 91 % — čištění brzy"),
                ("INFO", "request served"),
                ("ERROR", "upstream timeout (東京)"),
            ]
            * 3
        )
    ]
    lines[3] = lines[3].replace(b"timeout", b"time\xffout")  # one damaged byte
    for i, line in enumerate(lines):
        if i == len(lines) // 2:
            os.rename(path, path.with_name(path.name + ".1"))  # rotation
            path.write_bytes(b"")
        for cut in range(0, len(line), 7):
            with open(path, "ab") as f:
                f.write(line[cut : cut + 7])
            await anyio.sleep(0.001)
    done.set()


async def pipeline(path: Path, checkpoint_file: Path | None, done: anyio.Event | None) -> None:
    checkpoint = None
    if checkpoint_file is not None and checkpoint_file.exists():
        checkpoint = FollowCheckpoint.from_json(checkpoint_file.read_text())
    # The writer above opens the path for every write, so a file renamed away gets nothing
    # more: a short rotate_grace (default 1 s) keeps this demo's 0.2 s quiet test valid.
    async with follow(
        path, start="beginning", checkpoint=checkpoint, poll_interval=0.01, rotate_grace=0.05
    ) as lines:
        while True:
            with anyio.move_on_after(0.2):
                line = await lines.__anext__()
                fields = line.text.split(" ", 2)
                level = fields[1] if len(fields) > 1 else ""
                if level in KEEP:
                    record = {"offset": line.offset, "level": level, "text": line.text}
                    print(json.dumps(record, ensure_ascii=False), flush=True)
                if checkpoint_file is not None:
                    write_checkpoint(lines.checkpoint(), checkpoint_file)
                continue
            if done is None or done.is_set():
                return  # quiet for a while and the writer (if any) is finished


async def main_async(args: argparse.Namespace) -> None:
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    if args.logfile:
        await pipeline(Path(args.logfile), checkpoint, None)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "app.log"
        path.write_bytes(b"")
        done = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer, path, done)
            await pipeline(path, checkpoint, done)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("logfile", nargs="?")
    parser.add_argument("--checkpoint", help="resume file (written atomically)")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args(argv)
    anyio.run(main_async, args, backend=args.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
