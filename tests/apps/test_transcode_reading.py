"""``transcode_file`` with one worker reads a regular file a chunk ahead, in a thread of
its own (``apps/_readahead.py``), while the chunk before is transcoded; other inputs
(pipes, file-like objects) are read in turn.  The output and counts are those of the
codecs for every chunk size, on the accelerator and on pure Python; the thread is gone
when the run ends, however it ends; a failed read is raised by the run."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Any

import pytest

from utf8stream import transcode_file
from utf8stream.apps import _readahead
from utf8stream.apps.files import results, runs, streaming

TEXT = "Größe €uro 😀 日本語 plain ASCII, " * 300


def threads_seen() -> tuple[list[int], Any]:
    """A progress callback recording how many read-ahead threads run at each chunk."""
    seen: list[int] = []
    return seen, lambda done, total: seen.append(_readahead.threads())


@pytest.mark.parametrize("chunk_size", [1, 7, 1000, 1 << 20])
@pytest.mark.parametrize(
    ("source", "target"), [("utf-16-le", "utf-8"), ("utf-8", "utf-8"), ("utf-8", "utf-16-be")]
)
def test_a_regular_file_is_read_ahead(
    kind: str, tmp_path: Path, chunk_size: int, source: str, target: str
) -> None:
    data = TEXT.encode(source)
    if source == "utf-8":
        data = data.replace(b"\xe2\x82", b"\xe2\x82\xff")  # damaged: units to replace
    src = tmp_path / "in"
    src.write_bytes(data)
    seen, progress = threads_seen()
    summary = transcode_file(
        src,
        tmp_path / "out",
        source=source,
        target=target,
        chunk_size=chunk_size,
        progress=progress,
    )
    assert (tmp_path / "out").read_bytes() == data.decode(source, "replace").encode(target)
    assert summary.bytes_in == len(data)
    assert seen and set(seen) == {1}  # each chunk was handed out with the next read started
    assert _readahead.threads() == 0


def test_the_thread_is_gone_after_a_strict_failure(kind: str, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"ok " * 5000 + b"\xff" + b"more " * 5000)
    seen, progress = threads_seen()
    with pytest.raises(UnicodeDecodeError):
        transcode_file(
            src,
            tmp_path / "out",
            target="utf-16-le",
            errors="strict",
            chunk_size=64,
            progress=progress,
        )
    assert set(seen) == {1}
    assert _readahead.threads() == 0
    assert not (tmp_path / "out").exists()


def new_run() -> Any:
    counter = results.EventCounter(None)
    return runs.new_run("utf-8", "utf-16-le", "replace", "keep", "strict", counter)


def test_the_stream_is_left_at_its_end(kind: str, tmp_path: Path) -> None:
    """Read ahead from where the stream stood (not from the file's start), the stream
    is left where reading it to its end leaves it."""
    src = tmp_path / "in"
    src.write_bytes(b"skipped\n" + b"abc" * 1000)
    out = io.BytesIO()
    with open(src, "rb") as f:
        assert f.readline() == b"skipped\n"  # and more of the file is in f's buffer
        streaming.transcode_stream(f, out, new_run(), 100, None, None)
        assert f.tell() == src.stat().st_size
        assert f.read() == b""
    assert out.getvalue() == ("abc" * 1000).encode("utf-16-le")
    assert _readahead.threads() == 0


def test_a_failed_read_ahead_is_raised_and_the_thread_ends(kind: str, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"abc" * 1000)
    with io.FileIO(os.fspath(src), "r+") as f:
        fd = os.open(src, os.O_WRONLY)  # the same file, but not open for reading
        os.dup2(fd, f.fileno())
        os.close(fd)
        with pytest.raises(OSError) as caught:
            streaming.transcode_stream(f, io.BytesIO(), new_run(), 100, None, None)
    assert caught.value.errno == errno.EBADF
    assert _readahead.threads() == 0


class FailingReader(io.BufferedReader):
    """A stream with no descriptor (read in turn) whose third read fails."""

    reads = 0

    def readinto(self, buffer: Any) -> int:
        self.reads += 1
        if self.reads == 3:
            raise OSError(5, "Input/output error")
        return super().readinto(buffer)


def test_a_failed_read_in_turn_is_raised(kind: str) -> None:
    out = io.BytesIO()
    with FailingReader(io.BytesIO(b"abc" * 1000)) as f, pytest.raises(OSError, match="Input"):
        streaming.transcode_stream(f, out, new_run(), 100, None, None)
    assert out.getvalue() == ("abc" * 100).encode("utf-16-le")[:400]  # two chunks written


def test_a_pipe_is_read_in_turn(kind: str) -> None:
    """No thread for what is not a regular file: a pipe's read could wait for ever."""
    read_end, write_end = os.pipe()
    os.write(write_end, "pipe €".encode())
    os.close(write_end)
    out = io.BytesIO()
    seen: list[int] = []
    with open(read_end, "rb") as f:
        streaming.transcode_stream(
            f, out, new_run(), 4, None, lambda done: seen.append(_readahead.threads())
        )
    assert out.getvalue() == "pipe €".encode("utf-16-le")
    assert seen and set(seen) == {0}
