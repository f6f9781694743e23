"""Transcode a file of unknown encoding, chunk by chunk, so that a killed run resumes.

    python examples/resumable_transcode.py SRC DEST [--to utf-8] [--chunk 65536]

The source encoding is detected (``Transcoder("auto", ...)``).  The output grows in
``DEST.part``; after each chunk the output is written and flushed to disk, then the
transcoder's checkpoint, the input offset and the output size are saved to
``DEST.checkpoint`` (written to a temporary file, flushed, renamed over the old one), so the
checkpoint never claims more than the disk holds.  Run it again after a crash, a reboot or
``kill -9``: it truncates ``DEST.part`` to the size the checkpoint records and goes on from
there, never detecting again.  The output is renamed to DEST when the input is done; input
that is not text is refused with a message and exit status 1, and nothing is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from utf8stream import Transcoder
from utf8stream.detect import NotTextError
from utf8stream.transcoding import TranscoderCheckpoint


def save(path: Path, record: dict[str, Any]) -> None:
    """Replace ``path`` by ``record`` atomically: a kill leaves the old one or the new."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(record, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself reaches the disk
    finally:
        os.close(directory)


def transcode(src: Path, dest: Path, target: str, chunk_size: int) -> str | None:
    """Go on from the last checkpoint, or start; return the source encoding."""
    part = dest.with_name(dest.name + ".part")
    checkpoint_path = dest.with_name(dest.name + ".checkpoint")
    if checkpoint_path.exists():
        record = json.loads(checkpoint_path.read_text(encoding="utf-8"))
        saved = TranscoderCheckpoint.from_json(json.dumps(record["transcoder"]))
        transcoder = Transcoder.from_checkpoint(saved)
        offset, written, done = record["input_offset"], record["output_size"], record["done"]
    else:
        transcoder = Transcoder("auto", target)
        offset, written, done = 0, 0, False
    if done and not part.exists():  # killed between the rename and the unlink below
        checkpoint_path.unlink()
        return transcoder.source_encoding
    with open(part, "ab") as out:
        out.truncate(written)  # what a killed run wrote after its last checkpoint goes
        with open(src, "rb") as source:
            source.seek(offset)
            while not done:
                chunk = source.read(chunk_size)
                done = not chunk
                data = transcoder.transcode(chunk, final=done)
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
                offset, written = offset + len(chunk), written + len(data)
                record = {
                    "input_offset": offset,
                    "output_size": written,
                    "done": done,
                    "transcoder": json.loads(transcoder.checkpoint().to_json()),
                }
                save(checkpoint_path, record)
    os.replace(part, dest)
    checkpoint_path.unlink()
    return transcoder.source_encoding


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--to", default="utf-8", help="the output's encoding")
    parser.add_argument("--chunk", type=int, default=65536, help="bytes read at a time")
    args = parser.parse_args()
    try:
        encoding = transcode(args.src, args.dest, args.to, args.chunk)
    except NotTextError as exc:
        for name in (".part", ".checkpoint"):  # nothing of it is kept
            args.dest.with_name(args.dest.name + name).unlink(missing_ok=True)
        print(f"resumable_transcode: {exc}", file=sys.stderr)
        return 1
    print(f"{args.src} ({encoding}) -> {args.dest} ({args.to})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
