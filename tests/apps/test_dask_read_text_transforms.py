"""``utf8stream.dask.read_text(transforms=...)``: the lines of every block size are the
sequential reader's (``LineReceiveStream`` with the same transforms)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import dask
import pytest
from _dask_helpers import sequential
from _transform_helpers import Pairs, paired_lines

from utf8stream.dask import read_text
from utf8stream.transforms import Normalizer, TextChange

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DATA = b"".join(b"%d %s\r\n" % (k, b"xa" + b"b" * (k % 2) + b"ab" * (k % 3)) for k in range(200))


@pytest.mark.parametrize("keepends", [False, True])
@pytest.mark.parametrize("blocksize", [7, 64, 1000, None])
def test_every_block_size_gives_the_sequential_lines(
    tmp_path: Path, blocksize: int | None, keepends: bool
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(DATA)
    plain = sequential(DATA, "utf-8", keepends=keepends)
    expected = paired_lines([str(line) for line in plain], ("\r\n",) if keepends else ())
    assert expected != plain  # the transform changes something
    changes: list[TextChange] = []
    given = Pairs(changes.append)
    bag = read_text(str(path), blocksize=blocksize, keepends=keepends, transforms=[given])
    with dask.config.set(scheduler="sync"):
        assert bag.compute() == expected
    assert given.position == 0 and changes == []  # each task had a copy of its own


def test_tasks_in_other_processes_build_real_transforms_from_their_checkpoint(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    text = "".join(f"{k} cafe\u0301 A\u030a\n" for k in range(300))
    path.write_text(text, encoding="utf-8")
    bag = read_text(str(path), blocksize=1000, transforms=Normalizer("NFC"))
    with dask.config.set(scheduler="processes", num_workers=2):
        lines = bag.compute()
    assert lines == [unicodedata.normalize("NFC", line) for line in text.splitlines()]
