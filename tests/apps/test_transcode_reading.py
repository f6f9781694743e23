"""``transcode_file`` with one worker reads a regular file a chunk ahead, in a thread of
its own (``streaming.ReadAhead``), while the chunk before is transcoded; other inputs (pipes,
file-like objects) are read in turn.  The output and counts are those of the
codecs for every chunk size; the thread is gone when the run ends, however it ends; a
failed read is raised by the run."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from utf8stream import transcode_file
from utf8stream.apps.files import results, runs, streaming

TEXT = "Größe €uro 😀 日本語 plain ASCII, " * 300


def readers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "utf8stream-reader"]


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ``ReadAhead`` objects the runs make."""
    made: list[Any] = []

    class Spy(streaming.ReadAhead):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(streaming, "ReadAhead", Spy)
    return made


@pytest.mark.parametrize("chunk_size", [1, 7, 1000, 1 << 20])
@pytest.mark.parametrize(
    ("source", "target"), [("utf-16-le", "utf-8"), ("utf-8", "utf-8"), ("utf-8", "utf-16-be")]
)
def test_a_regular_file_is_read_ahead(
    tmp_path: Path, chunk_size: int, source: str, target: str, made: list[Any]
) -> None:
    data = TEXT.encode(source)
    if source == "utf-8":
        data = data.replace(b"\xe2\x82", b"\xe2\x82\xff")  # damaged: units to replace
    src = tmp_path / "in"
    src.write_bytes(data)
    summary = transcode_file(
        src, tmp_path / "out", source=source, target=target, chunk_size=chunk_size
    )
    assert (tmp_path / "out").read_bytes() == data.decode(source, "replace").encode(target)
    assert summary.bytes_in == len(data)
    assert len(made) == 1
    assert readers() == []


def test_the_thread_is_gone_after_a_strict_failure(tmp_path: Path, made: list[Any]) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"ok " * 5000 + b"\xff" + b"more " * 5000)
    with pytest.raises(UnicodeDecodeError):
        transcode_file(src, tmp_path / "out", target="utf-16-le", errors="strict", chunk_size=64)
    assert len(made) == 1
    assert readers() == []
    assert not (tmp_path / "out").exists()


class FailingReader(io.BufferedReader):
    """A regular file whose third read fails."""

    reads = 0

    def readinto(self, buffer: Any) -> int:
        self.reads += 1
        if self.reads == 3:
            raise OSError(5, "Input/output error")
        return super().readinto(buffer)


def test_a_failed_read_is_raised_and_the_thread_ends(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"abc" * 1000)
    counter = results.EventCounter(None)
    run = runs.new_run("utf-8", "utf-16-le", "replace", "keep", "strict", counter)
    out = io.BytesIO()
    with FailingReader(io.FileIO(os.fspath(src))) as f, pytest.raises(OSError, match="Input"):
        streaming.transcode_stream(f, out, run, 100, None, None)
    assert readers() == []
    assert out.getvalue() == ("abc" * 100).encode("utf-16-le")[:400]  # two chunks written


def test_a_pipe_is_read_in_turn(tmp_path: Path, made: list[Any]) -> None:
    """No thread for what is not a regular file: a pipe's read could wait for ever."""
    read_end, write_end = os.pipe()
    os.write(write_end, "pipe €".encode())
    os.close(write_end)
    counter = results.EventCounter(None)
    run = runs.new_run("utf-8", "utf-16-le", "replace", "keep", "strict", counter)
    out = io.BytesIO()
    with open(read_end, "rb") as f:
        streaming.transcode_stream(f, out, run, 4, None, None)
    assert out.getvalue() == "pipe €".encode("utf-16-le")
    assert made == []
