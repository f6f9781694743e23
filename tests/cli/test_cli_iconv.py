"""``utf8stream transcode`` and ``decode`` on malformed input, as iconv treats it.

By default a malformed unit stops ``transcode`` (exit status 1, its byte offset on
stderr, an output file untouched); ``-c`` and ``//IGNORE`` drop it; ``--errors`` repairs
it, said in one line on stderr unless ``-q``.  ``decode`` replaces by default, and says
so too.  The expectations are literals; where iconv (glibc's ``libc-bin``) is on the
machine, it is run on the same input and must agree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = [sys.executable, "-m", "utf8stream"]
ICONV = shutil.which("iconv")


def _run(
    *args: str, stdin: bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*PROGRAM, *args], input=stdin, capture_output=True, timeout=60, check=False, cwd=cwd
    )


def _iconv(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes] | None:
    """iconv on the same input, where it is installed (the literal expectations stand
    without it)."""
    if ICONV is None:
        return None
    return subprocess.run([ICONV, *args], input=stdin, capture_output=True, timeout=60)


def test_malformed_input_stops_transcode_with_its_offset_as_iconv() -> None:
    result = _run("transcode", "-t", "utf-16le", stdin=b"a\xffb\n")
    assert result.returncode == 1
    assert result.stdout == b"a\0"  # standard output is a stream: what came before
    assert result.stderr == (
        b"utf8stream: -: illegal input sequence at position 1 (ff: byte that never occurs "
        b"in UTF-8)\n"
    )
    iconv = _iconv("-f", "utf-8", "-t", "utf-16le", stdin=b"a\xffb\n")
    if iconv is not None:
        assert (iconv.returncode, iconv.stdout) == (1, b"a\0")
        assert iconv.stderr.split(b": ", 1)[1] == b"illegal input sequence at position 1\n"


@pytest.mark.parametrize(
    ("data", "offset", "what"),
    [
        (b"ok \xe2\x82 then", 3, b"e2 82: incomplete sequence"),
        (b"abc\xc0\xaf", 3, b"c0: overlong encoding"),
        (b"\xed\xa0\x80", 0, b"ed: encoded surrogate"),
        ("日本".encode() + b"\xf0\x9f\x98", 6, b"f0 9f 98: sequence truncated at end of stream"),
    ],
)
def test_the_offset_is_the_first_malformed_units(data: bytes, offset: int, what: bytes) -> None:
    result = _run("transcode", "-t", "utf-32", stdin=data)
    assert result.returncode == 1
    assert result.stderr == b"utf8stream: -: illegal input sequence at position %d (%s)\n" % (
        offset,
        what,
    )
    iconv = _iconv("-f", "utf-8", "-t", "utf-32", stdin=data)
    if iconv is not None:  # at the end, iconv says "incomplete character" instead
        assert iconv.returncode == 1
        assert b" at position %d" % offset in iconv.stderr or b"incomplete" in iconv.stderr


def test_an_output_file_is_untouched_when_malformed_input_stops_the_run(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_bytes(b"good line\n" * 1000 + b"bad \xff\n")
    dst.write_bytes(b"previous contents")
    result = _run("transcode", "-t", "utf-16", str(src), str(dst))
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"utf8stream: {src}: illegal input sequence at position 10004 (ff: byte that never "
        "occurs in UTF-8)\n"
    )
    assert dst.read_bytes() == b"previous contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]
    assert _run("transcode", str(src), "-o", str(tmp_path / "new.txt")).returncode == 1
    assert not (tmp_path / "new.txt").exists()


@pytest.mark.parametrize("source", ["pipe", "file"])
def test_errors_replace_repairs_and_says_so_in_one_line(tmp_path: Path, source: str) -> None:
    data = b"a\xffb\xc0\xafc\n"
    (tmp_path / "in").write_bytes(data)
    name = "-" if source == "pipe" else "in"  # a file is read again for the first unit
    result = _run(
        "transcode", "--errors", "replace", "-t", "utf-16le", name, stdin=data, cwd=tmp_path
    )
    assert result.returncode == 0
    assert result.stdout == "a\ufffdb\ufffd\ufffdc\n".encode("utf-16le")
    assert result.stderr == (
        b"utf8stream: %s: 3 malformed input units replaced with U+FFFD (--errors replace), "
        b"the first at byte offset 1\n" % name.encode()
    )
    quiet = _run("transcode", "-q", "--errors", "replace", "-t", "utf-16le", stdin=data)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, result.stdout, b"")
    valid = _run("transcode", "--errors", "replace", "-t", "utf-16le", stdin=b"fine\n")
    assert (valid.returncode, valid.stderr) == (0, b"")  # nothing repaired, nothing said


# Malformed units (ff, a cut e2 82) and a character ASCII lacks (é).
MIXED = b"a\xffb \xc3\xa9t\xc3\xa9 \xe2\x82z\n"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("utf-8", "ab été z\n".encode()),
        ("utf-16le", "ab été z\n".encode("utf-16le")),
        ("ascii", b"ab t z\n"),
        ("latin1", "ab été z\n".encode("latin-1")),  # a name glibc knows too
    ],
)
def test_c_drops_malformed_input_and_unmappable_characters_as_iconv_c(
    target: str, expected: bytes
) -> None:
    result = _run("transcode", "-c", "-t", target, stdin=MIXED)
    assert (result.returncode, result.stdout) == (0, expected)
    assert result.stderr == (
        b"utf8stream: -: 2 malformed input units dropped (-c), the first at byte offset 1\n"
    )
    assert _run("transcode", "-qc", "-t", target, stdin=MIXED).stderr == b""
    iconv = _iconv("-c", "-f", "utf-8", "-t", target, stdin=MIXED)
    if iconv is not None:
        assert (iconv.returncode, iconv.stdout) == (0, expected)


@pytest.mark.parametrize(
    ("target", "expected"),
    [("ascii//IGNORE", b"ab t z\n"), ("utf-8//IGNORE", "ab été z\n".encode())],
)
def test_ignore_suffix_drops_what_c_drops(target: str, expected: bytes) -> None:
    result = _run("transcode", "-t", target, stdin=MIXED)
    # Exit status 0: the drop was asked for (glibc's iconv says 1 with //IGNORE).
    assert (result.returncode, result.stdout) == (0, expected)
    assert result.stderr == (
        b"utf8stream: -: 2 malformed input units dropped (//IGNORE), the first at byte offset 1\n"
    )
    iconv = _iconv("-f", "utf-8", "-t", target, stdin=MIXED)
    if iconv is not None:
        assert iconv.stdout == expected


def test_errors_chooses_for_malformed_input_with_c_dropping_unmappable_characters() -> None:
    result = _run("transcode", "-c", "--errors", "replace", stdin=MIXED)
    assert result.returncode == 0
    assert result.stdout == "a\ufffdb été \ufffdz\n".encode()
    assert result.stderr == (
        b"utf8stream: -: 2 malformed input units replaced with U+FFFD (--errors replace), "
        b"the first at byte offset 1\n"
    )
    # U+FFFD has no ASCII form, not even transliterated: -c drops it with the rest.
    result = _run("transcode", "-qc", "--errors", "replace", "-t", "ascii//TRANSLIT", stdin=MIXED)
    assert (result.returncode, result.stdout) == (0, b"ab ete z\n")
    strict = _run("transcode", "-c", "--errors", "strict", "-t", "ascii", stdin=MIXED)
    assert (strict.returncode, strict.stdout) == (1, b"a")


def test_decode_replaces_by_default_and_says_so(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"ok\n\xe2\x82 cut\n\xff\n")
    result = _run("decode", str(src))
    assert result.returncode == 0
    assert result.stdout == "ok\n\ufffd cut\n\ufffd\n".encode()
    assert result.stderr.decode() == (
        f"utf8stream: {src}: 2 malformed input units replaced with U+FFFD "
        "(--errors replace), the first at byte offset 3\n"
    )
    assert _run("decode", "-q", str(src)).stderr == b""
    ignore = _run("decode", "--errors", "ignore", "-", stdin=b"a\xffb")
    assert (ignore.stdout, ignore.stderr) == (
        b"ab",
        b"utf8stream: -: 1 malformed input unit dropped (--errors ignore), the first at byte "
        b"offset 1\n",
    )
    strict = _run("decode", "--errors", "strict", "-", stdin=b"a\xffb")
    assert (strict.returncode, strict.stdout) == (1, b"a")
    assert strict.stderr == (
        b"utf8stream: -: illegal input sequence at position 1 (ff: byte that never occurs "
        b"in UTF-8)\n"
    )


def test_other_source_codecs_stop_at_the_absolute_offset(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"plain ascii\n" * 100_000 + b"caf\xe9\n")  # beyond the first chunk
    result = _run("transcode", "-f", "ascii", str(src), "-o", str(tmp_path / "out"))
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"utf8stream: {src}: illegal input sequence at position 1200003 "
        "(e9: ordinal not in range(128))\n"
    )
    assert not (tmp_path / "out").exists()
    iconv = _iconv("-f", "ascii", "-t", "utf-8", stdin=src.read_bytes())
    if iconv is not None:
        assert iconv.stderr.split(b": ", 1)[1] == b"illegal input sequence at position 1200003\n"
