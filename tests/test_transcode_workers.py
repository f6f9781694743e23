"""How many worker processes a parallel ``transcode_file`` gets: ``parallel.plan``, a
pure function of the workers asked, the usable cores, the file's size and the kind of
run, so that more workers are never slower than one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from utf8stream import transcode_file
from utf8stream.apps.files import parallel
from utf8stream.apps.files.parallel import MIN_WORKER_BYTES, plan, usable_cores

M = MIN_WORKER_BYTES


@pytest.mark.parametrize(
    ("workers", "cores", "size", "expected"),
    [
        (1, 8, 100 * M, 1),  # one asked
        (4, 1, 100 * M, 1),  # one core
        (2, 2, 2 * M, 2),
        (2, 2, 2 * M - 1, 1),  # a worker would get less than MIN_WORKER_BYTES
        (4, 2, 100 * M, 2),  # no more workers than cores
        (2, 16, 100 * M, 2),  # no more than asked
        (8, 16, 8 * M, 8),
        (8, 16, 5 * M + 1, 5),  # fewer workers, each with enough to do
        (8, 16, M, 1),
        (3, 3, 0, 1),
    ],
)
def test_a_codec_run_gets_the_workers_that_pay(
    workers: int, cores: int, size: int, expected: int
) -> None:
    assert plan(workers, cores, size, direct=False) == expected


@pytest.mark.parametrize(("workers", "cores", "size"), [(2, 2, 100 * M), (64, 64, 1 << 40)])
def test_a_direct_run_is_never_split(workers: int, cores: int, size: int) -> None:
    assert plan(workers, cores, size, direct=True) == 1


def test_usable_cores_are_those_of_this_process() -> None:
    cores = usable_cores()
    assert 1 <= cores <= (os.cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        assert cores == len(os.sched_getaffinity(0))


@pytest.fixture
def many_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine of four cores, where a worker's share is 1,000 bytes."""
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    monkeypatch.setattr(parallel, "MIN_WORKER_BYTES", 1_000)


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


def test_a_file_too_small_for_two_workers_is_not_split(tmp_path: Path, many_cores: None) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"x" * 1_999)
    summary = transcode_file(src, tmp_path / "out", target="latin-1", chunk_size=100, workers=4)
    assert summary.pieces == 1
    assert (tmp_path / "out").read_bytes() == b"x" * 1_999
