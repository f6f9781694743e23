"""``transcode_file(..., source="auto")``: the encoding detected on the file's head, the
whole file transcoded from it; input that is not text refused before any output."""

from __future__ import annotations

from pathlib import Path

import pytest

from utf8stream import Transcoder, atranscode_file, transcode_file
from utf8stream.detect import EncodingDoubt, NotTextError

RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю.\n"
GREEK = "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια.\n"

CASES = [
    (RUSSIAN * 40, "koi8-r"),
    (GREEK * 40, "cp1253"),
    (RUSSIAN * 40, "utf-8"),
    (GREEK * 3000, "utf-16-le"),  # longer than the detector's lookahead
]


@pytest.mark.parametrize(("text", "encoding"), CASES)
def test_transcode_auto_writes_the_text_and_says_what_was_detected(
    tmp_path: Path, text: str, encoding: str
) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(text.encode(encoding))
    summary = transcode_file(src, dst, source="auto", chunk_size=1000)
    assert dst.read_bytes() == text.encode("utf-8")
    assert summary.detection is not None
    assert summary.detection.encoding == encoding
    assert summary.bytes_in == src.stat().st_size
    assert summary.characters == len(text)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_a_byte_order_mark_is_read_as_a_mark_not_as_text(tmp_path: Path, encoding: str) -> None:
    # As everywhere encoding="auto" is taken: the mark the detector found is no character.
    src = tmp_path / "in"
    mark = {"utf-16-be": "\ufeff"}.get(encoding, "")
    src.write_bytes((mark + GREEK * 3).encode(encoding))
    summary = transcode_file(src, tmp_path / "auto", source="auto")
    assert summary.detection is not None and summary.detection.bom_length > 0
    assert (tmp_path / "auto").read_bytes() == (GREEK * 3).encode("utf-8")
    transcode_file(src, tmp_path / "marked", source="auto", target="utf-16-le", bom="add")
    assert (tmp_path / "marked").read_bytes() == ("\ufeff" + GREEK * 3).encode("utf-16-le")


def test_binary_input_is_refused_and_no_output_is_left(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(NotTextError, match="is not text"):
        transcode_file(src, dst, source="auto")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


@pytest.mark.anyio
async def test_atranscode_auto(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes((RUSSIAN * 40).encode("koi8-r"))
    for workers in (1, 2):
        summary = await atranscode_file(src, dst, source="auto", workers=workers)
        assert dst.read_text("utf-8") == RUSSIAN * 40
        assert summary.detection is not None and summary.detection.encoding == "koi8-r"
    src.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(NotTextError):
        await atranscode_file(src, tmp_path / "other", source="auto")
    assert not (tmp_path / "other").exists()


#: Detected as UTF-8 on its first bytes; a cp1252 "é" after them, then valid UTF-8.
LATE_CP1252 = (RUSSIAN * 4).encode() + b"caf\xe9\n" + (RUSSIAN * 2).encode()
#: What fits: not cp1252, which leaves 8d undefined ("э" in UTF-8 is d1 8d), but Latin-1.
DOUBT = EncodingDoubt(LATE_CP1252.index(b"\xe9"), "utf-8", "iso8859-1")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_doubt_is_told_and_the_file_transcoded_from_the_encoding_detected(
    tmp_path: Path, workers: int
) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(LATE_CP1252 * 20 if workers > 1 else LATE_CP1252)
    heard: list[EncodingDoubt] = []
    summary = transcode_file(
        src, dst, source="auto", chunk_size=1000, workers=workers, on_doubt=heard.append
    )
    assert summary.detection is not None and summary.detection.encoding == "utf-8"
    assert dst.read_bytes() == src.read_bytes().decode("utf-8", "replace").encode()
    assert heard == [DOUBT]


def test_no_doubt_when_the_file_is_valid_throughout(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes((RUSSIAN * 40).encode())
    heard: list[EncodingDoubt] = []
    transcode_file(src, dst, source="auto", on_doubt=heard.append)
    assert heard == []


@pytest.mark.anyio
async def test_atranscode_tells_the_doubt_too(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(LATE_CP1252)
    heard: list[EncodingDoubt] = []
    await atranscode_file(src, dst, source="auto", on_doubt=heard.append)
    assert heard == [DOUBT]


class _ShortReads:
    """A pipe's reads: at most ``size`` bytes each, whatever was asked."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size = data, size

    def read(self, n: int = -1) -> bytes:
        piece = self.data[: min(self.size, n if n >= 0 else len(self.data))]
        self.data = self.data[len(piece) :]
        return piece


#: ASCII for 4,000 bytes and more, then Russian in cp1251: no decision on the first reads.
ASCII_THEN_CP1251 = (b"plain ascii log line\n" * 200) + (RUSSIAN * 20).encode("cp1251")


@pytest.mark.parametrize("read_size", [1000, 4096])
def test_a_file_and_a_stream_on_auto_make_one_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_size: int
) -> None:
    """``transcode_file`` reading standard input in short pieces decides as the core's
    ``Transcoder("auto")`` given the same pieces: the same encoding, confidence, bytes
    looked at and output."""
    data = ASCII_THEN_CP1251
    stdin = _ShortReads(data, read_size)
    monkeypatch.setattr("sys.stdin", type("Stdin", (), {"buffer": stdin})())
    dst = tmp_path / "out"
    summary = transcode_file("-", dst, source="auto", chunk_size=read_size)
    core = Transcoder("auto", "utf-8")
    pieces = [data[i : i + read_size] for i in range(0, len(data), read_size)]
    out = b"".join(core.transcode(piece) for piece in pieces) + core.transcode(b"", True)
    assert core.detection is not None and core.detection.looked_at > read_size
    assert summary.detection == core.detection
    assert core.detection.encoding == "cp1251"
    assert dst.read_bytes() == out == data.decode("cp1251").encode()
    # A regular file is read in one piece: the same decision on the same bytes.
    src = tmp_path / "in"
    src.write_bytes(data)
    assert transcode_file(src, tmp_path / "whole", source="auto").detection == core.detection
