"""``utf8stream.dask``: malformed units, per-file summaries and transcoding, each equal to
the sequential run (a whole-file ``Utf8Decoder``, ``transcode_file``) for every block size.
These run on Dask's synchronous scheduler; test_dask_cluster.py runs them on processes."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import dask
import pytest
from _dask_helpers import (
    transcodings,
    utf8_contents,
    whole_file_events,
    whole_file_positions,
)
from _helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import (
    SameFileError,
    UnmappableCharacterError,
    Utf8DecodeError,
    transcode_file,
)
from utf8stream.apps.dask import sources
from utf8stream.apps.dask import transcode as dask_transcode
from utf8stream.dask import (
    FileSummary,
    MalformedRecord,
    malformed,
    transcode_files,
    validate_files,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_SETTINGS = settings(
    max_examples=examples(150),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@_SETTINGS
@given(
    data=utf8_contents,
    blocksize=st.integers(1, 48),
    variant=st.sampled_from(["utf-8", "cesu-8", "mutf-8", "wtf-8"]),
    chunk=st.sampled_from([1 << 20, 1, 2, 5]),
)
def test_malformed_and_summary_equal_the_whole_file_decoder(
    tmp_path: Path, data: bytes, blocksize: int, variant: str, chunk: int
) -> None:
    with mock.patch.object(sources, "CHUNK", chunk):
        _check_malformed(tmp_path, data, blocksize, variant)


def _check_malformed(tmp_path: Path, data: bytes, blocksize: int, variant: str) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    events, characters = whole_file_events(data, variant)
    with dask.config.set(scheduler="sync"):
        records = malformed(str(path), variant=variant, blocksize=blocksize).compute()
        (summary,) = validate_files(str(path), variant=variant, blocksize=blocksize)
    assert records == [MalformedRecord(str(path), e.offset, e.kind.name, e.data) for e in events]
    counts: dict[str, int] = {}
    for e in events:
        counts[e.kind.name] = counts.get(e.kind.name, 0) + 1
    assert summary == FileSummary(str(path), len(data), characters, counts)
    assert summary.valid is (not events)
    with dask.config.set(scheduler="sync"):
        located = malformed(str(path), variant=variant, blocksize=blocksize, positions=True)
        positions = [(r.line, r.column) for r in located.compute()]
    assert positions == whole_file_positions(data, variant)


def test_malformed_offsets_are_absolute_with_the_file_name(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes(b"0123456789\nabc\xffdef\n")
    second.write_bytes(b"ok\n" * 10 + b"\xe2\x82\n")
    with dask.config.set(scheduler="sync"):
        records = malformed(str(tmp_path / "*.txt"), blocksize=4).compute()
    assert records == [
        MalformedRecord(str(first), 14, "INVALID_BYTE", b"\xff"),
        MalformedRecord(str(second), 30, "INCOMPLETE_SEQUENCE", b"\xe2\x82"),
    ]
    with dask.config.set(scheduler="sync"):
        located = malformed(str(tmp_path / "*.txt"), blocksize=4, positions=True).compute()
    assert [(r.line, r.column) for r in located] == [(2, 4), (11, 1)]


# -- transcode_files ------------------------------------------------------------------------


def _leftovers(folder: Path, *keep: str) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name not in keep)


@_SETTINGS
@given(data=utf8_contents, blocksize=st.integers(1, 48), options=transcodings())
def test_transcode_files_equals_transcode_file(
    tmp_path: Path, data: bytes, blocksize: int, options: dict[str, str]
) -> None:
    src, want, got = tmp_path / "in.txt", tmp_path / "want.out", tmp_path / "got.out"
    for path in (want, got):
        path.write_bytes(b"before")
    src.write_bytes(data)
    try:
        expected = transcode_file(src, want, **options)
    except (Utf8DecodeError, UnmappableCharacterError) as exc:
        with dask.config.set(scheduler="sync"), pytest.raises(type(exc)) as raised:
            transcode_files(str(src), str(got), blocksize=blocksize, **options)
        assert raised.value.args == exc.args  # the same unit or character, at the same place
        assert got.read_bytes() == b"before"
        assert _leftovers(tmp_path, "in.txt", "want.out", "got.out") == []
        return
    with dask.config.set(scheduler="sync"):
        (summary,) = transcode_files(str(src), str(got), blocksize=blocksize, **options).values()
    assert got.read_bytes() == want.read_bytes()
    assert summary.bytes_in == expected.bytes_in
    assert summary.bytes_out == expected.bytes_out
    assert summary.characters == expected.characters
    assert dict(summary.malformed) == dict(expected.malformed)
    assert summary.unmappable == expected.unmappable
    assert _leftovers(tmp_path, "in.txt", "want.out", "got.out") == []


def test_transcode_files_names_each_output(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "in" / "a.log").write_bytes("α\n".encode())
    (tmp_path / "in" / "b.log").write_bytes(b"b\xff\n")
    with dask.config.set(scheduler="sync"):
        summaries = transcode_files(
            str(tmp_path / "in" / "*.log"),
            str(tmp_path / "out" / "{stem}.{index}.txt"),
            target="utf-16-le",
            blocksize=2,
        )
    assert {Path(name).name: s.malformed_total for name, s in summaries.items()} == {
        "a.log": 0,
        "b.log": 1,
    }
    assert (tmp_path / "out" / "a.0.txt").read_bytes() == "α\n".encode("utf-16-le")
    assert (tmp_path / "out" / "b.1.txt").read_bytes() == "b\ufffd\n".encode("utf-16-le")
    with pytest.raises(ValueError, match="name each output"):
        transcode_files(str(tmp_path / "in" / "*.log"), str(tmp_path / "out" / "one.txt"))


def test_transcode_files_refuses_the_input_as_output(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"data\n")
    with pytest.raises(SameFileError):
        transcode_files(str(src), str(src))
    assert src.read_bytes() == b"data\n"


def test_transcode_files_keeps_the_destination_mode(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_bytes(b"x\n" * 20)
    dst.write_bytes(b"old")
    dst.chmod(0o640)
    with dask.config.set(scheduler="sync"):
        transcode_files(str(src), str(dst), blocksize=8)
    assert dst.read_bytes() == b"x\n" * 20
    assert dst.stat().st_mode & 0o777 == 0o640


def test_transcode_files_into_a_missing_folder_leaves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"x\n" * 20)
    missing = tmp_path / "none" / "out.txt"
    with dask.config.set(scheduler="sync"), pytest.raises(FileNotFoundError) as raised:
        transcode_files(str(src), str(missing), blocksize=8)
    assert raised.value.filename == str(missing)
    assert _leftovers(tmp_path, "in.txt") == []


def test_transcode_files_between_memory_filesystems() -> None:
    # Not the local filesystem: the output is written beside the destination through
    # fsspec and moved into place.  memory:// lives in one process (worker processes
    # would each see an empty one), and every open of a file returns the same object,
    # whose one position threads would share: the synchronous scheduler reads it.
    import fsspec

    fs = fsspec.filesystem("memory")
    data = "grüße\n".encode() * 10 + b"\xff\n"
    fs.pipe("/dask-transcode/in/a.txt", data)
    try:
        with dask.config.set(scheduler="sync"):
            (summary,) = transcode_files(
                "memory:///dask-transcode/in/*.txt",
                "memory:///dask-transcode/out/{stem}.utf16",
                target="utf-16-le",
                blocksize=10,
            ).values()
        assert summary.pieces > 1 and summary.malformed_total == 1
        expected = data.decode("utf-8", "replace").encode("utf-16-le")
        assert fs.cat_file("/dask-transcode/out/a.utf16") == expected
        assert fs.ls("/dask-transcode/out", detail=False) == ["/dask-transcode/out/a.utf16"]
    finally:
        fs.rm("/dask-transcode", recursive=True)


def test_malformed_in_a_compressed_file_has_offsets_in_its_text(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "a.log.gz"
    path.write_bytes(gzip.compress(b"ok\n" * 100 + b"\xc0\xaf\n"))
    with dask.config.set(scheduler="sync"):
        records = malformed(str(path), blocksize=16, positions=True).compute()
    assert records == [
        MalformedRecord(str(path), 300, "OVERLONG", b"\xc0", 101, 1),
        MalformedRecord(str(path), 301, "UNEXPECTED_CONTINUATION", b"\xaf", 101, 2),
    ]


def test_transcode_files_removes_the_parts_when_the_joining_task_never_runs(
    tmp_path: Path,
) -> None:
    # On a cluster a worker can die (KilledWorker) or the driver be interrupted after the
    # blocks were written but before the task that joins them (and removes the parts)
    # ran.  The driver removes them before raising again.
    src = tmp_path / "in.txt"
    src.write_bytes(b"line\n" * 40)

    class WorkerDied(Exception):
        pass

    def dies(*args: object) -> None:
        raise WorkerDied("the joining task's worker died")

    with (
        dask.config.set(scheduler="sync"),
        mock.patch.object(dask_transcode, "assemble", dies),
        pytest.raises(WorkerDied),
    ):
        transcode_files(str(src), str(tmp_path / "out.txt"), blocksize=16)
    assert _leftovers(tmp_path, "in.txt") == []
