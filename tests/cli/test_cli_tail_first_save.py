"""tail -F --checkpoint saves where it starts as soon as the file is open.

A run killed (kill -9) before its first periodic save must still leave a checkpoint:
without one, the next run would start at the end of whatever file the path named by then,
and after a rotation the lines written to the old file in between would never be
printed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

UTF8STREAM = str(Path(sys.executable).with_name("utf8stream"))


def test_a_run_killed_before_any_line_leaves_its_start(tmp_path: Path) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_bytes(b"")  # nothing to print: no periodic save would ever happen
    proc = subprocess.Popen(
        [UTF8STREAM, "tail", "-F", "--checkpoint", str(cp), str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while not cp.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert cp.exists(), "no checkpoint while following"
    finally:
        proc.kill()
        proc.communicate()
    # While nothing runs: lines go to the old file, which is rotated away.
    log.write_bytes(b"late 1\nlate 2\n")
    log.rename(tmp_path / "app.log.1")
    log.write_bytes(b"new 1\n")
    again = subprocess.run(
        [UTF8STREAM, "tail", "-n", "+1", "--checkpoint", str(cp), str(log)],
        capture_output=True,
        timeout=30,
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == b"late 1\nlate 2\nnew 1\n"
