"""A follower on ``encoding="auto"`` that a test kills with SIGKILL and starts again.

    python _follow_killable.py LOG OUT CHECKPOINT

It follows LOG from its first byte to its end (``until_eof``), appending each line to OUT
in UTF-8; after each line the output is flushed to disk, then a record of the follower's
checkpoint and OUT's size replaces CHECKPOINT atomically, so the record never claims more
than the disk holds.  Started again, it truncates OUT to the size recorded and follows on
from the checkpoint.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from utf8stream import FollowCheckpoint, follow


def save(path: Path, record: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(record, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


async def main(log: Path, out_path: Path, checkpoint_path: Path) -> None:
    checkpoint = None
    written = 0
    if checkpoint_path.exists():
        record = json.loads(checkpoint_path.read_text(encoding="utf-8"))
        checkpoint = FollowCheckpoint.from_json(json.dumps(record["follow"]))
        written = record["output_size"]
    with open(out_path, "ab") as out:
        out.truncate(written)
        async with follow(
            log, start="beginning", encoding="auto", checkpoint=checkpoint, until_eof=True
        ) as lines:
            async for line in lines:
                data = (line.text + "\n").encode()
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
                written += len(data)
                follow_json = json.loads(lines.checkpoint().to_json())
                save(checkpoint_path, {"output_size": written, "follow": follow_json})


if __name__ == "__main__":
    anyio.run(main, *map(Path, sys.argv[1:4]))
