"""tail -F --checkpoint killed with SIGKILL repeats at most the lines of one write.

The checkpoint is saved right after every write to stdout (one write of at most 64 KiB of
lines), so a SIGKILL can only repeat the lines of the write it came during or just after,
before the save.  A save on a timer instead would let a kill repeat everything printed
since the last one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

UTF8STREAM = str(Path(sys.executable).with_name("utf8stream"))
ONE_WRITE = (1 << 16) + 100  # tail's batch, and the line that filled it
LINES = 150_000


@pytest.mark.soak  # four runs over 11 MB of lines, three of them killed
@pytest.mark.parametrize("many", [False, True], ids=["one FILE", "a PATTERN"])
def test_a_kill_repeats_at_most_one_write(tmp_path: Path, many: bool) -> None:
    """A JSON checkpoint for one FILE; a checkpoint store for a pattern (follow_many)."""
    log, cp, out = tmp_path / "app.log", tmp_path / "cp", tmp_path / "out"
    log.write_bytes(b"".join(b"line %06d %s\n" % (i, b"x" * 66) for i in range(LINES)))
    out.touch()
    followed = str(tmp_path / "app*.log") if many else str(log)
    command = [UTF8STREAM, "tail", "-F", "-n", "+1", "--checkpoint", str(cp), followed]
    starts: list[int] = []

    def start() -> subprocess.Popen[bytes]:
        data = out.read_bytes()
        torn = len(data) - (data.rfind(b"\n") + 1)  # a line the kill cut: it comes again
        os.truncate(out, len(data) - torn)
        starts.append(len(data) - torn)
        with out.open("ab") as stdout:
            return subprocess.Popen(command, stdout=stdout, stderr=subprocess.DEVNULL)

    for kill_at in (1 << 20, 4 << 20, 8 << 20):
        proc = start()
        deadline = time.monotonic() + 60
        while out.stat().st_size < kill_at and time.monotonic() < deadline:
            time.sleep(0.001)
        proc.kill()
        proc.wait()
    proc = start()
    try:
        deadline = time.monotonic() + 60
        last = b"line %06d" % (LINES - 1)
        while last not in out.read_bytes()[-200:] and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    data = out.read_bytes()
    seen: set[bytes] = set()
    for begin, end in zip(starts, [*starts[1:], len(data)], strict=True):
        # (A pattern's lines come under a '==> app.log <==' header, once per run.)
        run = [line for line in data[begin:end].splitlines(keepends=True) if line[:4] == b"line"]
        repeated = sum(len(line) for line in run if line in seen)
        assert repeated <= ONE_WRITE, f"a restart repeated {repeated} bytes"
        seen.update(run)
    assert len(seen) == LINES  # none lost
