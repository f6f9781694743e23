"""``utf8stream.dask`` on a real ``distributed.LocalCluster``: two worker *processes*
(one thread each), so every block's task, its arguments (the fsspec filesystem, the
options, the sniffed head) and its results (lines, ``LineTooLong``, ``Utf8DecodeError``)
cross a process boundary.  One cluster for the module, to keep the suite fast."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import dask
import pytest
from _dask_helpers import (
    ENCODINGS,
    Raised,
    contents,
    line_options,
    sequential,
    transcodings,
    utf8_contents,
    whole_file_events,
)
from _helpers import examples
from distributed import Client, LocalCluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import LineTooLong, UnmappableCharacterError, Utf8DecodeError, transcode_file
from utf8stream.dask import malformed, read_text, transcode_files, validate_files

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_SETTINGS = settings(
    max_examples=examples(12),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.fixture
def on_cluster(client: Client) -> Iterator[Client]:
    with dask.config.set(scheduler=client):
        yield client


def test_the_workers_are_other_processes(on_cluster: Client) -> None:
    pids = on_cluster.run(os.getpid)
    assert len(pids) == 2
    assert os.getpid() not in pids.values()


@_SETTINGS
@given(
    encoding=st.sampled_from(sorted(ENCODINGS)),
    data=st.data(),
    blocksize=st.integers(1, 64),
)
def test_read_text_on_worker_processes(
    tmp_path: Path, on_cluster: Client, encoding: str, data: st.DataObject, blocksize: int
) -> None:
    content = data.draw(contents(encoding))
    options = data.draw(line_options(encoding))
    path = tmp_path / "f.txt"
    path.write_bytes(content)
    expected = sequential(content, encoding, **options)
    bag = read_text(str(path), encoding=encoding, blocksize=blocksize, **options)  # type: ignore[arg-type]
    if isinstance(expected, Raised):
        with pytest.raises(type(expected.error)):
            bag.compute()
    else:
        assert bag.compute() == expected


def test_overlong_line_error_crosses_the_process_boundary(
    tmp_path: Path, on_cluster: Client
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"ok\n" + "é".encode() * 20 + b"\n")
    with pytest.raises(LineTooLong) as raised:
        read_text(str(path), blocksize=4, max_line_bytes=8).compute()
    assert raised.value.partial == "éééé"


@_SETTINGS
@given(data=utf8_contents, blocksize=st.integers(1, 48))
def test_malformed_on_worker_processes(
    tmp_path: Path, on_cluster: Client, data: bytes, blocksize: int
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    events, characters = whole_file_events(data)
    records = malformed(str(path), blocksize=blocksize).compute()
    assert [(r.offset, r.kind, r.data) for r in records] == [
        (e.offset, e.kind.name, e.data) for e in events
    ]
    (summary,) = validate_files(str(path), blocksize=blocksize)
    assert (summary.bytes, summary.characters) == (len(data), characters)


@_SETTINGS
@given(data=utf8_contents, blocksize=st.integers(1, 48), options=transcodings())
def test_transcode_files_on_worker_processes(
    tmp_path: Path, on_cluster: Client, data: bytes, blocksize: int, options: dict[str, str]
) -> None:
    src, want, got = tmp_path / "in.txt", tmp_path / "want.out", tmp_path / "got.out"
    src.write_bytes(data)
    got.unlink(missing_ok=True)
    try:
        transcode_file(src, want, **options)
    except (Utf8DecodeError, UnmappableCharacterError) as exc:
        with pytest.raises(type(exc)):
            transcode_files(str(src), str(got), blocksize=blocksize, **options)
        assert not got.exists()
        return
    transcode_files(str(src), str(got), blocksize=blocksize, **options)
    assert got.read_bytes() == want.read_bytes()
