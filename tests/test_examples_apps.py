"""The application examples run standalone, terminate and do what they say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode("utf-8")


def test_transcode_large() -> None:
    out = run_example("transcode_large.py", "--size", "3", "--jobs", "2")
    assert "output identical to a one-shot decode + encode: True" in out
    assert "malformed units: " in out and "INVALID_BYTE" in out


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_log_pipeline(backend: str) -> None:
    out = run_example("log_pipeline.py", "--backend", backend)
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["level"] for r in records] == ["WARN", "ERROR"] * 3
    # Lines from both sides of the rotation, the damaged byte replaced, nothing else.
    assert "upstream time\ufffdout (東京)" in records[1]["text"]
    assert all(r["text"].split(" ", 2)[1] == r["level"] for r in records)


def test_log_pipeline_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    log, cp = tmp_path / "app.log", tmp_path / "cp.json"
    log.write_text("x INFO a\nx WARN b\n")
    first = run_example("log_pipeline.py", str(log), "--checkpoint", str(cp))
    with open(log, "a") as f:
        f.write("x ERROR c\n")
    second = run_example("log_pipeline.py", str(log), "--checkpoint", str(cp))
    assert [json.loads(x)["text"] for x in first.splitlines()] == ["x WARN b"]
    assert [json.loads(x)["text"] for x in second.splitlines()] == ["x ERROR c"]
