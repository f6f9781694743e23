"""``utf8stream.dask`` on a real ``distributed.LocalCluster``: two worker *processes*
(one thread each), so every block's task, its arguments (the fsspec filesystem, the
options, the sniffed head) and its results (lines, ``LineTooLong``, ``Utf8DecodeError``)
cross a process boundary.  One cluster for the module, to keep the suite fast.

Everything that starts a cluster or waits for one is in the soak step (``-m soak``): the
cluster's worker processes take seconds to start.  The CLI's refusals need none and run
by default."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import LineTooLong, UnmappableCharacterError, Utf8DecodeError, transcode_file
from utf8stream.dask import malformed, read_text, transcode_files, validate_files

if TYPE_CHECKING:  # imported by the fixture: the cluster tests are the soak step's
    from distributed import Client

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
#: The tests that start a cluster (the ``client`` fixture or ``--dask local:N``).
on_a_cluster = pytest.mark.soak

_SETTINGS = settings(
    max_examples=examples(12),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.fixture
def on_cluster(client: Client) -> Iterator[Client]:
    with dask.config.set(scheduler=client):
        yield client


@on_a_cluster
def test_the_workers_are_other_processes(on_cluster: Client) -> None:
    pids = on_cluster.run(os.getpid)
    assert len(pids) == 2
    assert os.getpid() not in pids.values()


@on_a_cluster
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
        with pytest.raises((LineTooLong, UnicodeDecodeError)):
            bag.compute()
    else:
        assert bag.compute() == expected


@on_a_cluster
def test_overlong_line_error_crosses_the_process_boundary(
    tmp_path: Path, on_cluster: Client
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"ok\n" + "é".encode() * 20 + b"\n")
    with pytest.raises(LineTooLong) as raised:
        read_text(str(path), blocksize=4, max_line_bytes=8, on_overlong="raise").compute()
    assert raised.value.partial == "éééé"


@on_a_cluster
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


@on_a_cluster
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


# -- the command line, against the module's cluster (and one local:N of its own) ----------

_CLI = [sys.executable, "-m", "utf8stream"]
_BAD = b"ok\n" * 5 + b"caf\xc3\xa9 \xff\r\n" + "é".encode() * 7 + b"\xe2\x82\n\x80x\n"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@on_a_cluster
def test_cli_validate_on_the_cluster_reports_as_validate(tmp_path: Path, client: Client) -> None:
    (tmp_path / "a.txt").write_bytes(_BAD)
    (tmp_path / "b.txt").write_bytes(b"fine\n")
    for extra in ([], ["--json", "--max-errors", "2"], ["--summary"]):
        plain = _cli("validate", *extra, "a.txt", "b.txt", cwd=tmp_path)
        on_dask = _cli(
            "validate",
            *extra,
            "--dask",
            client.scheduler.address,
            "--blocksize",
            "5",
            "a.txt",
            "b.txt",
            cwd=tmp_path,
        )
        assert (on_dask.returncode, on_dask.stdout, on_dask.stderr) == (
            plain.returncode,
            plain.stdout,
            plain.stderr,
        ), extra
    assert plain.returncode == 1


@on_a_cluster
def test_cli_validate_fsspec_url_and_glob(tmp_path: Path, client: Client) -> None:
    (tmp_path / "a.log").write_bytes(b"x\xff\n")
    (tmp_path / "b.log").write_bytes(b"ok\n")
    address = client.scheduler.address
    by_url = _cli("validate", "--dask", address, f"file://{tmp_path}/a.log", cwd=tmp_path)
    assert (by_url.returncode, by_url.stdout) == (1, "1 1:2 INVALID_BYTE ff\n")
    by_glob = _cli("validate", "--dask", address, "--summary", "*.log", "none.log", cwd=tmp_path)
    assert by_glob.returncode == 2  # a name that matches nothing wins over invalid input
    assert by_glob.stdout.splitlines() == [
        "a.log: 1 malformed; 3 bytes, 3 characters (INVALID_BYTE 1)",
        "b.log: valid; 3 bytes, 3 characters",
    ]
    assert by_glob.stderr.startswith("utf8stream: none.log: ")
    assert "Traceback" not in by_glob.stderr


@on_a_cluster
def test_cli_transcode_on_the_cluster_is_the_sequential_output(
    tmp_path: Path, client: Client
) -> None:
    (tmp_path / "in.txt").write_bytes(_BAD * 3)
    address = client.scheduler.address
    options = ["--errors", "replace", "-t", "utf-16-be", "-v"]
    want = _cli("transcode", *options, "in.txt", "want.txt", cwd=tmp_path)
    got = _cli(
        "transcode",
        *("--dask", address, "--blocksize", "7", *options, "in.txt", "got.txt"),
        cwd=tmp_path,
    )
    assert (got.returncode, got.stderr) == (want.returncode, want.stderr) == (0, want.stderr)
    assert (tmp_path / "got.txt").read_bytes() == (tmp_path / "want.txt").read_bytes()
    (tmp_path / "kept.txt").write_bytes(b"before")
    strict = _cli(
        "transcode",
        *("--dask", address, "--blocksize", "7", "--errors", "strict", "in.txt", "kept.txt"),
        cwd=tmp_path,
    )
    sequential = _cli("transcode", "--errors", "strict", "in.txt", "kept.txt", cwd=tmp_path)
    assert (strict.returncode, strict.stderr) == (sequential.returncode, sequential.stderr)
    assert strict.returncode == 1 and "position 21" in strict.stderr
    assert (tmp_path / "kept.txt").read_bytes() == b"before"
    assert sorted(os.listdir(tmp_path)) == ["got.txt", "in.txt", "kept.txt", "want.txt"]


def test_cli_dask_refusals_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(b"x\n")
    stdin = _cli("validate", "--dask", "local:1", "-", cwd=tmp_path)
    assert (stdin.returncode, stdin.stderr) == (
        2,
        "utf8stream: --dask reads files or URLs, not the standard input\n",
    )
    bad = _cli("validate", "--dask", "local:0", "in.txt", cwd=tmp_path)
    assert bad.returncode == 2 and "positive number of worker processes" in bad.stderr
    alone = _cli("transcode", "--blocksize", "1MiB", "in.txt", "out.txt", cwd=tmp_path)
    assert (alone.returncode, alone.stderr) == (2, "utf8stream: --blocksize is for --dask\n")


@pytest.mark.soak  # waits out the CLI's connection timeout
def test_cli_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(b"x\n")
    nobody = _cli("transcode", "--dask", "tcp://127.0.0.1:9", "in.txt", "out.txt", cwd=tmp_path)
    assert nobody.returncode == 2
    assert nobody.stderr.startswith(
        "utf8stream: cannot reach the Dask scheduler tcp://127.0.0.1:9"
    )
    assert nobody.stderr.count("\n") == 1
    assert not (tmp_path / "out.txt").exists()


@on_a_cluster
def test_cli_local_cluster(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(_BAD)
    plain = _cli("validate", "in.txt", cwd=tmp_path)
    local = _cli("validate", "--dask", "local:2", "--blocksize", "4", "in.txt", cwd=tmp_path)
    assert (local.returncode, local.stdout, local.stderr) == (1, plain.stdout, "")
