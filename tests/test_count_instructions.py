"""benchmarks/count_instructions.py's ``--per-line`` child, run without valgrind: each side
reads every line of the input this script writes for it (``per_line_input``), and the
``setup-`` run reads none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import count_instructions  # noqa: E402 - beside the benchmarks, not a package

SIDES = sorted({side for pair in count_instructions.PER_LINE_SIDES for side in pair})


def test_the_input_holds_exactly_the_lines_asked_for() -> None:
    for side in SIDES:
        data = count_instructions.per_line_input(side, 300).read_bytes()
        if "utf-16" in side:
            assert data == count_instructions.LINE_80.decode().encode("utf-16-le") * 300
        elif side.startswith(("follow", "open")):
            assert data == count_instructions.LINE_80 * 300
        else:
            assert data.count(b"\n") == 300 and data.endswith(b"\n")


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("setup", ["", "setup-"])
def test_the_child_reads_its_input(side: str, setup: str) -> None:
    arg = f"300:{count_instructions.per_line_input(side, 300)}"
    # The child asserts that it read 300 lines; setup- stops before reading.
    subprocess.run(
        [sys.executable, "-c", count_instructions.PER_LINE_CHILD, setup + side, arg, "0"],
        check=True,
        timeout=60,
    )
