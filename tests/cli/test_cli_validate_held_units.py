"""``utf8stream validate`` locates a unit its decoder held across a read: a CESU-8 high
surrogate is reported only once the next bytes show it unpaired, maybe in the next 64 KiB
chunk, and its column is still that of its first byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("before_boundary", [1, 3, 4, 5, 6])
def test_units_held_across_a_chunk_boundary_keep_their_columns(
    tmp_path: Path, before_boundary: int
) -> None:
    lead = 65536 - before_boundary  # where the 64 KiB reads of the command line end
    (tmp_path / "f.txt").write_bytes(b"a" * lead + b"\xed\xa0\x80" * 2 + b"\n")
    result = subprocess.run(
        [sys.executable, "-m", "utf8stream", "validate", "--variant", "cesu-8", "f.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout.splitlines() == [
        f"{lead} 1:{lead + 1} SURROGATE ed a0 80",
        f"{lead + 3} 1:{lead + 2} SURROGATE ed a0 80",
    ]
