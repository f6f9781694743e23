"""encoding="auto": each followed file's encoding told by its first bytes.

The encoding detector's decision (``utf8stream.detect``) on the first 64 KiB (or what the
file holds when its first bytes are read), kept in the checkpoint, and told again for each
new file a rotation brings.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from _helpers import append, take_texts
from hypothesis import assume, given
from hypothesis import strategies as st

from utf8stream import (
    CheckpointError,
    CheckpointStore,
    FollowCheckpoint,
    Notice,
    follow,
    follow_many,
)
from utf8stream.detect import DEFAULT_MAX_LOOKAHEAD as SNIFF_BYTES
from utf8stream.detect import NotTextError
from utf8stream.lines import detect_line_codec

UTF8STREAM = str(Path(sys.executable).with_name("utf8stream"))

#: As SQL Server's ERRORLOG and PowerShell's Out-File write them: UTF-16LE, CRLF.
EVENTS = [
    "2026-11-23 10:00:00.12 Server      Microsoft SQL Server 2022 (RTM) - 16.0.1000.6",
    "2026-11-23 10:00:00.13 Server      Dateiname: C:\\Programme\\Microsoft SQL Server",
    "2026-11-23 10:00:01.00 spid51      Prüfung abgeschlossen: 0 Fehler, événement ✓",
]


def utf16_log(lines: list[str], bom: bool) -> bytes:
    data = "".join(f"{line}\r\n" for line in lines).encode("utf-16-le")
    return (codecs.BOM_UTF16_LE if bom else b"") + data


# -- the decision ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (codecs.BOM_UTF8 + "é\n".encode(), "utf-8-sig"),
        (codecs.BOM_UTF16_LE + "é\r\n".encode("utf-16-le"), "utf-16"),
        (codecs.BOM_UTF16_BE + "é\r\n".encode("utf-16-be"), "utf-16"),
        (codecs.BOM_UTF32_LE + "é\n".encode("utf-32-le"), "utf-32"),
        ("Spid 51 événement\r\n".encode("utf-16-le"), "utf-16-le"),
        ("Spid 51 événement\r\n".encode("utf-16-be"), "utf-16-be"),
        ("événement ✓\n".encode(), "utf-8"),
        (b"plain ascii\n", "utf-8"),
        ("événement, 50 €\n".encode("cp1252"), "cp1252"),
        # A character cut by the end of what was read is not malformed UTF-8.
        ("événement ✓".encode()[:-1], "utf-8"),
    ],
)
def test_sniff_encoding(head: bytes, expected: str) -> None:
    assert detect_line_codec(head) == expected


def test_only_the_first_64_kib_are_looked_at() -> None:
    assert detect_line_codec(b"a" * SNIFF_BYTES + "é".encode("cp1252")) == "utf-8"
    head = b"a" * (SNIFF_BYTES - 100) + "é".encode("cp1252") + b"a" * 200
    assert detect_line_codec(head) == "cp1252"


@given(
    st.text(
        alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_categories=("Cc",))
    )
)
def test_latin_text_in_utf16_without_a_mark_is_told(text: str) -> None:
    """Latin-1 text: every high byte zero."""
    data = (text + "\r\n").encode("utf-16-le")
    assert detect_line_codec(data) == "utf-16-le"


@pytest.mark.parametrize("order", ["le", "be"])
def test_cjk_text_in_utf16_without_a_mark_is_told_by_its_newlines(order: str) -> None:
    """CJK code units have no zero byte: the newline code units tell UTF-16 instead."""
    data = "2026年11月23日 服务已启动\r\nログを開始しました\n".encode(f"utf-16-{order}")
    assert detect_line_codec(data) == f"utf-16-{order}"
    assert detect_line_codec(data[:-3]) == f"utf-16-{order}"  # cut anywhere


_CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF) | st.sampled_from(
    "ぁあいうアイウ"
)


@given(st.lists(st.text(alphabet=_CJK, min_size=1, max_size=20), min_size=1, max_size=8))
def test_cjk_lines_in_utf16_without_a_mark_are_told(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    # Without a mark, the detector wants more than one character and a newline.
    assume(len(text) >= 4)
    assert detect_line_codec(text.encode("utf-16-le")) == "utf-16-le"
    assert detect_line_codec(text.encode("utf-16-be")) == "utf-16-be"


@pytest.mark.parametrize(
    "head",
    [
        b"started\nworking\n" + b"\x00" * 100,  # a log padded with zeros after a crash
        b"ab\n\x00\x00\x00\x00",
        "événement\n".encode() + b"\x00" * 6 + b"more\n" + b"\x00" * 4096,
    ],
)
def test_utf8_padded_with_zero_bytes_stays_utf8(head: bytes) -> None:
    assert detect_line_codec(head) == "utf-8"


def test_binary_and_iso2022_jp_are_refused() -> None:
    with pytest.raises(NotTextError, match="not text"):
        detect_line_codec(bytes(range(256)) * 4, "app.log")
    with pytest.raises(ValueError, match="lines cannot be cut"):
        detect_line_codec("ログを開始しました\n".encode("iso2022_jp") * 10)


# -- follow() ----------------------------------------------------------------------------

pytestmark = [pytest.mark.anyio]


@pytest.mark.parametrize("bom", [True, False], ids=["BOM", "no BOM"])
async def test_a_utf16le_log_rotated_and_restarted(tmp_path: Path, bom: bool) -> None:
    log = tmp_path / "ERRORLOG"
    log.write_bytes(utf16_log(EVENTS[:2], bom))
    async with follow(log, start="beginning", encoding="auto", rotate_grace=0) as lines:
        first = await lines.__anext__()
        assert first.text == EVENTS[0]
        assert first.offset == 0  # the byte-order mark is the first line's
        assert first.file.encoding == ("utf-16" if bom else "utf-16-le")
        assert await take_texts(lines, 1, 10) == EVENTS[1:2]
        checkpoint = lines.checkpoint()
    # Restart from the checkpoint: the decision comes back with it.
    record = json.loads(checkpoint.to_json())
    assert record["file"]["encoding"] == ("utf-16" if bom else "utf-16-le")
    checkpoint = FollowCheckpoint.from_json(checkpoint.to_json())
    append(log, utf16_log(EVENTS[2:], bom=False))
    # Rotated (SQL Server cycles ERRORLOG to ERRORLOG.1): the new file is told again,
    # and is UTF-8 this time.
    log.rename(tmp_path / "ERRORLOG.1")
    log.write_bytes("new file, UTF-8 ✓\n".encode())
    async with follow(log, checkpoint=checkpoint, encoding="auto", until_eof=True) as lines:
        rest = [line async for line in lines]
    assert [line.text for line in rest] == [EVENTS[2], "new file, UTF-8 ✓"]
    assert [line.file.encoding for line in rest] == [record["file"]["encoding"], "utf-8"]


async def test_a_file_empty_at_first_is_told_by_its_first_bytes(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"")
    async with follow(log, encoding="auto", poll_interval=0.01) as lines:
        async with anyio.create_task_group() as group:
            got: list[str] = []

            async def read() -> None:
                got.extend(await take_texts(lines, 2, 10))

            group.start_soon(read)
            with anyio.fail_after(10):
                await lines.caught_up()  # the empty file open, nothing decided yet
            append(log, utf16_log(EVENTS[:2], bom=False))
        assert got == EVENTS[:2]
        assert lines.checkpoint().file.encoding == "utf-16-le"


async def test_utf8_and_cp1252(tmp_path: Path) -> None:
    utf8, legacy = tmp_path / "a.log", tmp_path / "b.log"
    utf8.write_bytes("événement ✓\r\n".encode())
    legacy.write_bytes("événement, 50 €\r\n".encode("cp1252"))
    for path, text in ((utf8, "événement ✓"), (legacy, "événement, 50 €")):
        async with follow(path, start="beginning", encoding="auto", until_eof=True) as lines:
            assert [line.text async for line in lines] == [text]


async def test_the_checkpoints_decision_is_kept(tmp_path: Path) -> None:
    """A restart reads the file as the checkpoint says it was read, not as told again."""
    log = tmp_path / "app.log"
    log.write_bytes(b"caf\xc3\xa9\n" * 2)  # UTF-8, or cp1252's "cafÃ©"
    async with follow(log, start="beginning", encoding="auto") as lines:
        assert await take_texts(lines, 1, 10) == ["café"]
        told = lines.checkpoint()
    assert told.file.encoding == "utf-8"
    legacy = dataclasses.replace(told, file=dataclasses.replace(told.file, encoding="cp1252"))
    async with follow(log, checkpoint=legacy, encoding="auto", until_eof=True) as lines:
        assert [line.text async for line in lines] == ["cafÃ©"]


def test_a_checkpoint_without_an_encoding_still_reads(tmp_path: Path) -> None:
    plain = FollowCheckpoint.from_json(
        '{"file": {"device": 1, "head_length": 0, "head_sha256": "'
        + "0" * 64
        + '", "inode": 2}, "mid_line": false, "offset": 0, "path": "/x", "version": 1}'
    )
    assert plain.file.encoding is None
    assert "encoding" not in plain.to_json()
    with pytest.raises(CheckpointError, match='"encoding" must be an encoding lines'):
        FollowCheckpoint.from_json(
            plain.to_json().replace('"inode"', '"encoding": "rot13", "inode"')
        )


async def test_follow_many_with_auto_for_one_pattern(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_bytes(b"")
    (tmp_path / "ERRORLOG.txt").write_bytes(b"")
    async with follow_many(
        [tmp_path / "*.log", tmp_path / "*.txt"],
        encodings={str(tmp_path / "*.txt"): "auto"},
        start="beginning",
    ) as lines:
        append(tmp_path / "ERRORLOG.txt", utf16_log(EVENTS[:1], bom=True))
        append(tmp_path / "app.log", "événement\n".encode())
        got: list[tuple[str, str]] = []
        with anyio.fail_after(10):
            while len(got) < 2:
                line = await lines.__anext__()
                got.append((os.path.basename(line.path), line.text))
    assert sorted(got) == [("ERRORLOG.txt", EVENTS[0]), ("app.log", "événement")]


def test_tail_encoding_auto(tmp_path: Path) -> None:
    log = tmp_path / "ERRORLOG"
    log.write_bytes(utf16_log(EVENTS, bom=False))
    result = subprocess.run(
        [UTF8STREAM, "tail", "-n", "2", "--encoding", "auto", str(log)],
        capture_output=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    # Cut at "\n" only, as GNU tail: the CR stays, printed in UTF-8.
    assert result.stdout == "".join(f"{e}\r\n" for e in EVENTS[1:]).encode()


async def test_the_store_keeps_the_decision(tmp_path: Path) -> None:
    log, db = tmp_path / "ERRORLOG.log", tmp_path / "tail.db"
    log.write_bytes(utf16_log(EVENTS[:2], bom=False))
    async with follow_many(
        [tmp_path / "*.log"], store=db, encoding="auto", start="beginning"
    ) as lines:
        with anyio.fail_after(10):
            assert (await lines.__anext__()).text == EVENTS[0]
    with CheckpointStore(db) as store:
        saved = store.load(str(log))
    assert saved is not None and saved.file.encoding == "utf-16-le"
    append(log, utf16_log(EVENTS[2:], bom=False))
    async with follow_many([tmp_path / "*.log"], store=db, encoding="auto") as lines:
        with anyio.fail_after(10):
            assert [(await lines.__anext__()).text for _ in range(2)] == EVENTS[1:]


@pytest.mark.parametrize("stop_after", [1, 5, 17])
async def test_a_follower_stopped_and_resumed_gives_the_text_of_one_run(
    tmp_path: Path, stop_after: int
) -> None:
    log = tmp_path / "app.log"
    rows = [f"{i:03} Съешь же ещё этих мягких французских булок, да выпей чаю." for i in range(30)]
    log.write_bytes("".join(f"{row}\n" for row in rows).encode("koi8-r"))
    async with follow(log, start="beginning", encoding="auto", until_eof=True) as lines:
        whole = [line.text async for line in lines]
    assert whole == rows
    async with follow(log, start="beginning", encoding="auto") as lines:
        first = await take_texts(lines, stop_after, 10)
        saved = lines.checkpoint()
    assert saved.file.encoding == "koi8-r"
    restored = FollowCheckpoint.from_json(saved.to_json())
    async with follow(log, checkpoint=restored, encoding="auto", until_eof=True) as lines:
        rest = [line.text async for line in lines]
    assert first + rest == whole


#: Detected as UTF-8 on its first bytes; a cp1252 "é" in a later line.
FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ?\n"
LATE_CP1252 = (FRENCH * 4).encode() + b"caf\xe9 au lait\n" + b"tail\n"


async def test_a_late_byte_the_encoding_detected_cannot_decode_is_a_notice(
    tmp_path: Path,
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(LATE_CP1252)
    notices: list[Notice] = []
    async with follow(
        log, start="beginning", encoding="auto", until_eof=True, on_notice=notices.append
    ) as lines:
        texts = [line.text async for line in lines]
    assert texts == LATE_CP1252.decode("utf-8", "replace").split("\n")[:-1]
    doubts = [n for n in notices if n.kind == "encoding-doubt"]
    assert [n.path for n in doubts] == [str(log)]
    offset = LATE_CP1252.index(b"\xe9")
    assert f"byte {offset} is not valid utf-8" in doubts[0].message
    assert "cp1252 would decode it" in doubts[0].message


async def test_no_doubt_for_a_file_valid_throughout(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes((FRENCH * 8).encode())
    notices: list[Notice] = []
    async with follow(
        log, start="beginning", encoding="auto", until_eof=True, on_notice=notices.append
    ) as lines:
        assert len([line async for line in lines]) == 8
    assert notices == []


def test_tail_tells_the_doubt_on_stderr(tmp_path: Path) -> None:
    # The invalid byte near the end: weighed when the file is left.
    data = (FRENCH * 4).encode() + b"caf\xe9\n"
    log = tmp_path / "app.log"
    log.write_bytes(data)
    result = subprocess.run(
        [UTF8STREAM, "tail", "-n", "+1", "--encoding", "auto", str(log)],
        capture_output=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == data.decode("utf-8", "replace").encode()
    offset = data.index(b"\xe9")
    assert f"{log}: byte {offset} is not valid utf-8".encode() in result.stderr
