"""Each example runs standalone and terminates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode("utf-8")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_tcp_decode(backend: str) -> None:
    out = run_example("tcp_decode.py", "--backend", backend)
    assert "  line: Hello from the server 👋\n" in out
    assert "  line: 日本語のテキストも大丈夫\n" in out
    assert "  line: a bad byte \ufffd does not stop the stream\n" in out
    assert "1 malformed unit(s)" in out


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_subprocess_lines(backend: str) -> None:
    out = run_example("subprocess_lines.py", "--backend", backend)
    assert out.splitlines()[:3] == [
        "  line: première ligne",
        "  line: в\ufffdторая строка",
        "  line: 第三行",
    ]
    assert "(line longer than 256 bytes" in out
    assert "  line: last 😀\n" in out
    assert "4 lines, 1 too long, 1 malformed unit(s); exit status 0" in out


def test_subprocess_lines_with_a_command() -> None:
    out = run_example(
        "subprocess_lines.py", "--", sys.executable, "-c", "print('hello'); print('wörld')"
    )
    assert out.splitlines()[:2] == ["  line: hello", "  line: wörld"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_lossy_channel(backend: str) -> None:
    out = run_example("lossy_channel.py", "--backend", backend, "--loss", "0.15", "--seed", "5")
    lines = out.splitlines()
    summary = lines.pop()
    intact = "Příliš žluťoučký kůň úpěl ďábelské ódy · 日本語 · 😀"
    # Every line is either intact, or damaged only where a U+FFFD marks the hole.
    assert any(line.endswith(intact) for line in lines)
    for line in lines:
        if "\ufffd" not in line:
            assert line.endswith(intact) and line[:2].isdigit()
    gaps = int(summary.split(" gap(s)")[0].rsplit(" ", 1)[1])
    assert gaps > 0
    assert sum(line.count("\ufffd") for line in lines) == gaps
    assert summary.endswith("0 other malformed unit(s)")
    no_loss = run_example("lossy_channel.py", "--backend", backend, "--loss", "0")
    assert "\ufffd" not in no_loss
    assert no_loss.count(intact) == 12
