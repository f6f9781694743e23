"""``utf8stream.dask.read_text``: the lines of every block size are the sequential ones.

Most examples run on Dask's synchronous scheduler (the block logic is the same
whatever runs the tasks, and it is fast); the cluster tests run the same property on a
real ``distributed.LocalCluster`` with two worker processes, where every task's
arguments and results cross a process boundary.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import dask
import pytest
from _dask_helpers import ENCODINGS, Raised, contents, line_options, sequential
from _helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import LineTooLong
from utf8stream.apps.dask import sources
from utf8stream.dask import read_text
from utf8stream.detect import NotTextError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_SETTINGS = settings(
    max_examples=examples(300),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _compare(
    path: Path, data: bytes, encoding: str, blocksize: int, options: dict[str, object]
) -> None:
    path.write_bytes(data)
    expected = sequential(data, encoding, **options)
    bag = read_text(str(path), encoding=encoding, blocksize=blocksize, **options)  # type: ignore[arg-type]
    if isinstance(expected, Raised):
        # Which error: the first task's to fail, not necessarily the first in the file.
        with pytest.raises((LineTooLong, UnicodeDecodeError)):
            bag.compute()
    else:
        assert bag.compute() == expected, (data, blocksize)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[str, bytes, int, dict[str, object]]:
    encoding = draw(st.sampled_from(sorted(ENCODINGS)))
    return (
        encoding,
        draw(contents(encoding)),
        draw(st.integers(1, 64)),
        draw(line_options(encoding)),
    )


@_SETTINGS
@given(case=_cases(), chunk=st.sampled_from([1 << 20, 1, 2, 3, 5, 8]))
def test_every_blocksize_gives_the_sequential_lines(
    tmp_path: Path, case: tuple[str, bytes, int, dict[str, object]], chunk: int
) -> None:
    encoding, data, blocksize, options = case
    # Tasks read (and look for line starts) in chunks: tiny ones cut newlines too.
    with dask.config.set(scheduler="sync"), mock.patch.object(sources, "CHUNK", chunk):
        _compare(tmp_path / "f.txt", data, encoding, blocksize, options)


@pytest.mark.parametrize(
    ("data", "encoding", "blocksize", "expected"),
    [
        # A \r\n cut by the block edge is one newline, in the block where the line starts.
        (b"ab\r\ncd\r\n", "utf-8", 3, ["ab", "cd"]),
        (b"ab\r\ncd", "utf-8", 4, ["ab", "cd"]),
        # A lone \r at a block edge ends its line.
        (b"ab\rcd", "utf-8", 3, ["ab", "cd"]),
        # A line longer than several blocks is read whole by the block where it starts.
        (b"x\n" + b"y" * 50 + b"\nz", "utf-8", 4, ["x", "y" * 50, "z"]),
        # A malformed byte right before the block edge, then a newline after it.
        (b"ab\xe2\x82\ncd", "utf-8", 4, ["ab\ufffd", "cd"]),
        # UTF-16 without a BOM: dask's own read_text splits 0A 00 at the UTF-8 newline.
        ("a\n\u0a00b\nc".encode("utf-16-le"), "utf-16-le", 3, ["a", "\u0a00b", "c"]),
        # UTF-16 with a BOM: the byte order comes from the client's sniff of the head.
        (codecs.BOM_UTF16_BE + "a\nb\r\nc".encode("utf-16-be"), "utf-16", 2, ["a", "b", "c"]),
        # The last line is a lone \r in a block of its own: an empty line, as sequentially.
        ("a\n\r".encode("utf-16-le"), "utf-16-le", 4, ["a", ""]),
        # A \r then a cut code unit at the end: the \r ends its line, the cut unit is one.
        ("a\r".encode("utf-32-be") + b"\xff", "utf-32-be", 1, ["a", "\ufffd"]),
        ("a\r".encode("utf-32-be") + b"\xff", "utf-32-be", 4, ["a", "\ufffd"]),
        # An empty line ended by \r where the block ends, in the byte-order mark's place.
        (b"\r\x00\xe2\x82", "utf-16", 1, ["", "\u82e2"]),
        (b"\n\n\n\n", "utf-8-sig", 1, ["", "", "", ""]),
        # Shorter than its possible byte-order mark: cut into lines like any bytes.
        (b"\n\xff", "utf-8-sig", 1, ["", "\ufffd"]),
        (b"\r", "utf-8-sig", 1, [""]),
    ],
)
def test_block_edges(
    tmp_path: Path, data: bytes, encoding: str, blocksize: int, expected: list[str]
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    assert sequential(data, encoding) == expected
    with dask.config.set(scheduler="sync"):
        assert read_text(str(path), encoding=encoding, blocksize=blocksize).compute() == expected


def test_overlong_line_raises_from_the_computation(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"ok\n" + b"x" * 40 + b"\nok\n")
    bag = read_text(str(path), blocksize=8, max_line_bytes=16, on_overlong="raise")
    with dask.config.set(scheduler="sync"), pytest.raises(LineTooLong):
        bag.compute()
    split = read_text(str(path), blocksize=8, max_line_bytes=16, on_overlong="split")
    with dask.config.set(scheduler="sync"):
        assert split.compute() == ["ok", "x" * 16, "x" * 16, "x" * 8, "ok"]


def test_include_path_and_globs(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"1\n2\n")
    (tmp_path / "b.log").write_bytes(b"3\n")
    with dask.config.set(scheduler="sync"):
        items = read_text(str(tmp_path / "*.log"), include_path=True, blocksize=2).compute()
    assert [(line, Path(path).name) for line, path in items] == [
        ("1", "a.log"),
        ("2", "a.log"),
        ("3", "b.log"),
    ]


def test_compressed_file_is_one_partition(tmp_path: Path) -> None:
    import gzip

    data = "α\nβ\r\nγ".encode("utf-16")
    path = tmp_path / "f.txt.gz"
    path.write_bytes(gzip.compress(data))
    bag = read_text(str(path), encoding="utf-16", blocksize=4)
    assert bag.npartitions == 1
    with dask.config.set(scheduler="sync"):
        assert bag.compute() == ["α", "β", "γ"]


def test_self_overlapping_newline_is_refused_with_blocks(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"1aaa2aa3" * 4)
    with pytest.raises(ValueError, match="overlap itself"):
        read_text(str(path), newline="aa", blocksize=4)
    with dask.config.set(scheduler="sync"):
        whole = read_text(str(path), newline="aa", blocksize=None).compute()
    assert whole == sequential(path.read_bytes(), "utf-8", newline="aa")


def test_bad_options_fail_on_the_client(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"x\n")
    with pytest.raises(ValueError, match="unknown encoding"):
        read_text(str(path), encoding="no-such-codec")
    with pytest.raises(ValueError, match="UTF-8 only"):
        read_text(str(path), encoding="utf-16", keepends=True)
    with pytest.raises(ValueError, match="blocksize"):
        read_text(str(path), blocksize=0)
    with pytest.raises(ValueError, match="cannot escape"):
        read_text(str(path), encoding="utf-16-le", errors="surrogateescape")
    with pytest.raises(FileNotFoundError):
        read_text(str(tmp_path / "none-*.txt"))


# -- fsspec's memory:// filesystem --------------------------------------------------------


@pytest.fixture
def memory_root() -> Iterator[str]:
    import fsspec

    fs = fsspec.filesystem("memory")
    root = "/utf8stream-test"
    yield root
    if fs.exists(root):
        fs.rm(root, recursive=True)


def test_memory_filesystem(memory_root: str) -> None:
    # memory:// lives in one process: worker processes would each see an empty one.  And
    # every open of a file returns the same object, whose one position the threaded
    # scheduler's tasks would share: the synchronous scheduler reads it.
    import fsspec

    data = codecs.BOM_UTF16_LE + "one\r\ntwo\rthree\n\u00e9".encode("utf-16-le")
    with fsspec.open(f"memory://{memory_root}/f.txt", "wb") as f:
        f.write(data)
    bag = read_text(f"memory://{memory_root}/f.txt", encoding="utf-16", blocksize=3)
    with dask.config.set(scheduler="sync"):
        assert bag.compute() == sequential(data, "utf-16") == ["one", "two", "three", "é"]


def test_utf8stream_and_its_command_line_do_not_import_dask() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, utf8stream, utf8stream.apps.cli._main;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout == "[]\n"


def test_auto_reads_each_file_in_the_encoding_it_tells(tmp_path: Path) -> None:
    """``encoding="auto"``: each file's own encoding, told once on the client from its
    first 64 KiB (as the follower tells it), then read in blocks like any other."""
    text = "première ligne\r\nzweite Zeile\nlast"
    files = {
        "bom16.log": codecs.BOM_UTF16_LE + text.encode("utf-16-le"),
        "nobom16.log": text.encode("utf-16-le"),
        "utf8.log": ("héllo 😀\n" * 50).encode(),
        "legacy.log": "café\nnaïve\n".encode("cp1252"),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    with dask.config.set(scheduler="sync"):
        got = read_text(str(tmp_path / "*.log"), encoding="auto", blocksize=7, include_path=True)
        by_file: dict[str, list[str]] = {}
        for line, path in got.compute():
            by_file.setdefault(Path(path).name, []).append(line)
    told = {"bom16.log": "utf-16", "nobom16.log": "utf-16-le", "utf8.log": "utf-8"}
    told["legacy.log"] = "cp1252"
    for name, data in files.items():
        assert by_file[name] == sequential(data, told[name]), name
    assert by_file["nobom16.log"] == ["première ligne", "zweite Zeile", "last"]
    assert by_file["legacy.log"] == ["café", "naïve"]
    with pytest.raises(ValueError, match="keepends is for UTF-8 only"):
        read_text(str(tmp_path / "nobom16.log"), encoding="auto", keepends=True)


def test_auto_decides_once_on_the_head_and_refuses_binary(tmp_path: Path) -> None:
    rows = [f"{i:03} Съешь же ещё этих мягких французских булок." for i in range(200)]
    data = "".join(f"{row}\n" for row in rows).encode("cp1251")
    (tmp_path / "ru.log").write_bytes(data)
    with dask.config.set(scheduler="sync"):
        got = read_text(str(tmp_path / "ru.log"), encoding="auto", blocksize=500)
        assert got.npartitions > 2
        assert got.compute() == rows
    (tmp_path / "data.bin").write_bytes(bytes(range(256)) * 16)
    with pytest.raises(NotTextError, match=r"data\.bin is not text"):
        read_text(str(tmp_path / "data.bin"), encoding="auto")
