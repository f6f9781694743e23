"""The README's decoder examples run and print what the README says they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def test_decoder_example(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {}
    exec(BLOCKS[0], namespace)
    assert namespace["text"] == "café \ufffd\ufffd"
    assert capsys.readouterr().out.splitlines() == [
        "6 SURROGATE ed",
        "7 UNEXPECTED_CONTINUATION a0",
    ]


def test_strict_example(capsys: pytest.CaptureFixture[str]) -> None:
    exec(BLOCKS[1], {})
    assert capsys.readouterr().out.splitlines() == ["3 INVALID_BYTE"]


def test_gap_example() -> None:
    namespace: dict[str, object] = {}
    exec(BLOCKS[2], namespace)
    assert namespace["text"] == "\ufffd hello"
