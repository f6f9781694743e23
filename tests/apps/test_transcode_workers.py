"""How many worker processes a parallel ``transcode_file`` gets: ``parallel.plan``, a
pure function of the workers asked, the usable cores, the file's size and the kind of
run, so that more workers are never slower than one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from utf8stream import transcode_file
from utf8stream.apps.files import parallel
from utf8stream.apps.files.parallel import plan, usable_cores

MB = 1_000_000


# With the model's figures, k workers are faster than one from START_SECONDS /
# (SECONDS_PER_BYTE * (1 / ONE_WORKER_CORES - PARALLEL_COST / k)) bytes on: 139.8 MB for
# two, 49.6 MB for three, 37.5 MB for four.
@pytest.mark.parametrize(
    ("workers", "cores", "size", "expected"),
    [
        (1, 8, 1000 * MB, 1),  # one asked
        (4, 1, 1000 * MB, 1),  # one core
        (2, 2, 141 * MB, 2),
        (2, 2, 138 * MB, 1),  # two cores: the processes' start is not paid back yet
        (4, 2, 141 * MB, 2),  # no more workers than cores
        (2, 16, 141 * MB, 2),  # no more than asked
        (3, 3, 51 * MB, 3),
        (3, 3, 48 * MB, 1),
        (4, 4, 38 * MB, 4),
        (4, 4, 37 * MB, 1),
        (4, 4, 0, 1),
    ],
)
def test_a_codec_run_is_split_where_that_is_faster(
    workers: int, cores: int, size: int, expected: int
) -> None:
    assert plan(workers, cores, size, direct=False) == expected


@pytest.mark.parametrize(("workers", "cores", "size"), [(2, 2, 1000 * MB), (64, 64, 1 << 40)])
def test_a_direct_run_is_never_split(workers: int, cores: int, size: int) -> None:
    assert plan(workers, cores, size, direct=True) == 1


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no affinity masks here")
def test_usable_cores_are_those_of_this_process() -> None:
    # A process allowed one core counts one, however many the machine has.
    one = min(os.sched_getaffinity(0))
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "from utf8stream.apps.files.parallel import usable_cores as u; print(u())",
        ],
        preexec_fn=lambda: os.sched_setaffinity(0, {one}),
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == "1"
    assert usable_cores() == len(os.sched_getaffinity(0))


@pytest.fixture
def many_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine of four cores, and a codec that costs a millisecond a byte: a split
    pays from 113 bytes on."""
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    monkeypatch.setattr(parallel, "SECONDS_PER_BYTE", 1e-3)


TEXT = "Grüße, 世界 😀 " * 500  # 10,500 bytes of UTF-8


def test_transcode_file_splits_as_the_rule_says(tmp_path: Path, many_cores: None) -> None:
    src = tmp_path / "in"
    src.write_text(TEXT, "utf-8")
    # A codec run (surrogateescape is not a direct policy): four workers, one piece each.
    codec = transcode_file(
        src, tmp_path / "codec", target="utf-16-le", errors="surrogateescape",
        chunk_size=500, workers=8,
    )  # fmt: skip
    assert codec.pieces == 4
    assert (tmp_path / "codec").read_bytes() == TEXT.encode("utf-16-le")
    # A direct run: one worker, however many are asked.
    direct = transcode_file(
        src, tmp_path / "direct", target="utf-16-le", chunk_size=500, workers=8
    )
    assert direct.pieces == 1
    assert (tmp_path / "direct").read_bytes() == TEXT.encode("utf-16-le")


def test_a_file_too_small_to_pay_for_the_workers_is_not_split(
    tmp_path: Path, many_cores: None
) -> None:
    src = tmp_path / "in"
    for size, pieces in ((112, 1), (114, 4)):
        src.write_bytes(b"x" * size)
        summary = transcode_file(src, tmp_path / "out", target="latin-1", chunk_size=10, workers=4)
        assert summary.pieces == pieces
        assert (tmp_path / "out").read_bytes() == b"x" * size
