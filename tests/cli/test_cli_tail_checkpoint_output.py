"""``utf8stream tail --checkpoint`` into a regular file: the checkpoint records how far
the file was written, and a run that finds bytes past that (what a run killed between a
write and its save left) skips them as it writes the same lines again; bytes that are not
those lines are kept, with a notice, and the lines written after them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from _helpers import append
from _tail_cli import UTF8STREAM

from utf8stream.follower import read_checkpoint


def _tail(tmp_path: Path, *options: str) -> str:
    """One run of ``tail --checkpoint cp app.log >> out`` (to the end of the log); its
    stderr."""
    command = [UTF8STREAM, "tail", *options, "--checkpoint", str(tmp_path / "cp")]
    with open(tmp_path / "out", "ab") as out:
        done = subprocess.run(
            [*command, str(tmp_path / "app.log")], stdout=out, stderr=subprocess.PIPE
        )
    assert done.returncode == 0, done.stderr
    return done.stderr.decode()


def _numbered(first: int, last: int) -> bytes:
    return b"".join(b"line %d\n" % i for i in range(first, last + 1))


@pytest.mark.parametrize(
    "left",
    [
        pytest.param(b"line 11\nline 12\n", id="whole lines"),
        pytest.param(b"line 11\nline 1", id="a line cut in half"),
        pytest.param(_numbered(11, 20), id="all of them"),
    ],
)
def test_what_a_killed_run_left_past_the_mark_is_not_written_again(
    tmp_path: Path, left: bytes
) -> None:
    (tmp_path / "app.log").write_bytes(_numbered(1, 10))
    assert _tail(tmp_path, "-n", "+1") == ""
    out = tmp_path / "out"
    mark = read_checkpoint(tmp_path / "cp").output
    assert mark is not None and mark.size == out.stat().st_size
    append(tmp_path / "app.log", _numbered(11, 20))
    append(out, left)  # written, and the kill came before the save
    assert _tail(tmp_path) == ""
    assert out.read_bytes() == _numbered(1, 20)
    assert read_checkpoint(tmp_path / "cp").output.size == out.stat().st_size  # type: ignore[union-attr]


def test_bytes_past_the_mark_that_are_not_the_lines_are_kept_with_a_notice(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.log").write_bytes(_numbered(1, 3))
    _tail(tmp_path, "-n", "+1")
    append(tmp_path / "app.log", _numbered(4, 6))
    append(tmp_path / "out", b"line 4\nsomeone else")
    stderr = _tail(tmp_path)
    assert stderr.startswith(f"utf8stream: {tmp_path / 'cp'}: the output file holds bytes")
    assert "are not the lines it resumes" in stderr
    # Line 4 was there whole; from the line that differs on, everything is written, on a
    # line of its own.
    assert (tmp_path / "out").read_bytes() == _numbered(1, 4) + b"someone else\n" + (
        _numbered(5, 6)
    )


def test_another_output_file_gets_every_line_after_the_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_bytes(_numbered(1, 3))
    _tail(tmp_path, "-n", "+1")
    (tmp_path / "out").rename(tmp_path / "out.1")
    (tmp_path / "out").write_bytes(b"line 4\n")  # another file: nothing to skip in it
    append(tmp_path / "app.log", _numbered(4, 5))
    assert _tail(tmp_path) == ""
    assert (tmp_path / "out").read_bytes() == b"line 4\n" + _numbered(4, 5)


def test_a_checkpoint_without_an_output_record_resumes(tmp_path: Path) -> None:
    """As written before the record existed: nothing to skip, the lines after it."""
    (tmp_path / "app.log").write_bytes(_numbered(1, 3))
    _tail(tmp_path, "-n", "+1")
    record = json.loads((tmp_path / "cp").read_text())
    del record["output"]
    (tmp_path / "cp").write_text(json.dumps(record))
    append(tmp_path / "app.log", _numbered(4, 5))
    assert _tail(tmp_path) == ""
    assert (tmp_path / "out").read_bytes() == _numbered(1, 5)


def test_into_a_pipe_no_output_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_bytes(_numbered(1, 3))
    command = [UTF8STREAM, "tail", "-n", "+1", "--checkpoint", str(tmp_path / "cp")]
    done = subprocess.run([*command, str(tmp_path / "app.log")], capture_output=True)
    assert (done.returncode, done.stdout) == (0, _numbered(1, 3))
    assert read_checkpoint(tmp_path / "cp").output is None
