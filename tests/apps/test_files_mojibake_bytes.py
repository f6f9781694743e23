"""The mojibake repair of UTF-8 into UTF-8, which ``transcode_file`` makes on bytes: the
output, the counts and the events are the text path's (a program's own subclass of
``MojibakeRepairer`` goes that path), for every chunk size and policy; and the command
line, end to end on a real file in a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from utf8stream import Malformed, transcode_file
from utf8stream.transforms import MojibakeRepairer, TextChange, repair_mojibake

UTF8STREAM = str(Path(sys.executable).with_name("utf8stream"))
GOOD = ["Grüße aus Köln", "déjà vu, naïve café", "plain ASCII", "Привет, мир", "日本語"]
BAKED = [line.encode().decode("cp1252") for line in GOOD[:2]] + ["ÐŸÑ€Ð¸Ð²ÐµÑ‚"]


class OwnRepairer(MojibakeRepairer):
    """A program's own transform: ``transcode_file`` hands it the text."""


def _file(tmp_path: Path) -> tuple[Path, bytes]:
    lines = [GOOD[i % len(GOOD)] if i % 7 else BAKED[i % len(BAKED)] for i in range(300)]
    data = ("\n".join(lines) + "\n").encode()
    # Malformed bytes: alone on a line, and in a line to repair.
    data = data.replace(b"plain", b"pl\xffain", 3) + b"caf\xc3\x83\xc2\xa9\xe2\x82 x\n"
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    return src, data


@pytest.mark.parametrize("chunk_size", [3, 13, 1 << 20])
@pytest.mark.parametrize("errors", ["replace", "ignore"])
def test_mojibake_bytes_path_is_the_text_path(
    tmp_path: Path, chunk_size: int, errors: str
) -> None:
    src, data = _file(tmp_path)
    runs = {}
    for name, repairer in (("bytes", MojibakeRepairer()), ("text", OwnRepairer())):
        events: list[Malformed] = []
        dst = tmp_path / f"{name}.txt"
        summary = transcode_file(
            src,
            dst,
            errors=errors,
            chunk_size=chunk_size,
            on_malformed=events.append,
            transforms=repairer,
        )
        runs[name] = (dst.read_bytes(), summary.characters, summary.malformed_total, events)
    assert runs["bytes"] == runs["text"]
    expected = repair_mojibake(data.decode("utf-8", errors)).encode()
    assert runs["bytes"][0] == expected
    assert runs["bytes"][1] == len(expected.decode())
    assert [event.offset for event in runs["bytes"][3]] == [
        data.index(b"\xff", 0),
        data.index(b"\xff", data.index(b"\xff") + 1),
        data.index(b"\xff", data.index(b"\xff", data.index(b"\xff") + 1) + 1),
        data.index(b"\xe2\x82 x"),
    ]


def test_mojibake_bytes_path_keeps_the_events_of_a_listened_repairer(tmp_path: Path) -> None:
    # A repairer whose changes are listened to needs the text: its events come.
    src, data = _file(tmp_path)
    changes: list[TextChange] = []
    transcode_file(
        src, tmp_path / "out.txt", transforms=MojibakeRepairer(on_change=changes.append)
    )
    assert changes
    assert (tmp_path / "out.txt").read_bytes() == repair_mojibake(
        data.decode("utf-8", "replace")
    ).encode()


def _cli(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([UTF8STREAM, *argv], capture_output=True, timeout=60, check=False)


def test_mojibake_bytes_cli_transcode_repairs_a_file(tmp_path: Path) -> None:
    src, data = _file(tmp_path)
    out = tmp_path / "out.txt"
    result = _cli(
        "transcode", "-f", "utf-8", "-t", "utf-8", "--errors", "replace", "--fix-mojibake",
        str(src), str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == repair_mojibake(data.decode("utf-8", "replace")).encode()
    first = data.index(b"\xff")
    said = "4 malformed input units replaced with U+FFFD (--errors replace), the first at byte"
    assert f"{said} offset {first}\n".encode() in result.stderr


def test_mojibake_bytes_cli_strict_stops_with_the_text_before_the_error(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    for head, written in (
        ("ok line\ncafe x", "ok line\ncafe x"),
        ("ok line\ncafÃ© x", "ok line\ncaf"),  # the text repair holds the stretch
        ("caf\u00c3\u0192\u00c2\u00a9\n", "café\n"),
    ):
        src.write_bytes(head.encode() + b"\xff rest\n")
        result = _cli("transcode", "-f", "utf-8", "-t", "utf-8", "--fix-mojibake", str(src))
        assert result.returncode == 1
        assert result.stdout == written.encode()
        assert f"illegal input sequence at position {len(head.encode())}".encode() in result.stderr


@pytest.mark.parametrize("bom", ["keep", "strip", "add"])
def test_mojibake_bytes_path_takes_the_bom_policy(tmp_path: Path, bom: str) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes("\ufeff".encode() + BAKED[0].encode() + b"\nok\n")
    outputs = []
    for repairer in (MojibakeRepairer(), OwnRepairer()):
        dst = tmp_path / "out.txt"
        summary = transcode_file(src, dst, bom=bom, transforms=repairer)
        outputs.append((dst.read_bytes(), summary.characters))
    assert outputs[0] == outputs[1]
    assert outputs[0][0].endswith(f"{GOOD[0]}\nok\n".encode())
