"""Every ```python block of the README runs as written and does what the README says.

Each block runs in its own interpreter, from a file, in a temporary directory.  What a block
needs from the outside world is provided for real: a local TCP server for the socket
example, the input file for the large-file example, a log file that a writer appends to
for the log-tail example, a local Dask cluster for the Dask example.  Only the address of
such a resource is substituted in the block's text (``example.org:7000`` by the local
server, ``/var/log/app.log`` by the temporary log file, and so on).

Blocks are known by the README heading above them.  A block under a heading this file does
not know, or a second block under one heading, fails the suite: no block goes untested.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream
from anyio.from_thread import start_blocking_portal
from anyio.streams.buffered import BufferedByteReceiveStream

from utf8stream import CheckpointStore

README = Path(__file__).resolve().parent.parent / "README.md"
TIMEOUT = 60.0


def python_blocks(markdown: str) -> list[tuple[str, str]]:
    """``(heading, code)`` for every ```python block, the heading being the nearest above."""
    blocks: list[tuple[str, str]] = []
    heading = ""
    fence: str | None = None
    code: list[str] = []
    for line in markdown.splitlines(keepends=True):
        if fence is None:
            if line.startswith("```"):
                fence = line[3:].strip()
                code = []
            elif line.startswith("#"):
                heading = line.lstrip("#").strip()
        elif line.startswith("```"):
            if fence == "python":
                blocks.append((heading, "".join(code)))
            fence = None
        else:
            code.append(line)
    assert fence is None, "README.md ends inside a code block"
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def substitute(code: str, old: str, new: str) -> str:
    """``code`` with the one occurrence of ``old`` (an address) replaced by ``new``."""
    assert code.count(old) == 1, f"the block should name {old} exactly once"
    return code.replace(old, new)


def block_environment() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}


def run_block(code: str, cwd: Path) -> list[str]:
    """Run ``code`` to its end; its stdout lines."""
    script = cwd / "readme_block.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        cwd=cwd,
        env=block_environment(),
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stderr == b""
    return result.stdout.decode("utf-8").splitlines()


# -- one runner per block ----------------------------------------------------------------


GREETING = "HELLO ünïcode\n".encode()
REPLY = b"you said: " + GREETING + b"caf\xc3\xa9 \xff bad byte\nno newline at the end"


async def answer(client: SocketStream) -> None:
    """The server for the socket example: reads the greeting, answers, closes."""
    async with client:
        greeting = await BufferedByteReceiveStream(client).receive_until(b"\n", 1024)
        assert greeting + b"\n" == GREETING
        await client.send(REPLY)


def run_socket(code: str, tmp_path: Path) -> None:
    with start_blocking_portal() as portal:
        listener = portal.call(
            functools.partial(anyio.create_tcp_listener, local_host="127.0.0.1")
        )
        port = listener.extra(SocketAttribute.local_port)
        serving = portal.start_task_soon(listener.serve, answer)
        try:
            code = substitute(code, '"example.org", 7000', f'"127.0.0.1", {port}')
            out = run_block(code, tmp_path)
        finally:
            serving.cancel()
            portal.call(listener.aclose)
    assert out[:3] == ["you said: HELLO ünïcode", "café \ufffd bad byte", "no newline at the end"]
    (statistics,) = out[3:]
    assert statistics.startswith(f"StreamStatistics(bytes_in={len(REPLY)}, ")
    assert "MalformedKind.INVALID_BYTE" in statistics


def run_subprocess(code: str, tmp_path: Path) -> None:
    out = run_block(code, tmp_path)
    listing = subprocess.run(["ls", "-l", "/usr/bin"], capture_output=True, check=True).stdout
    assert out == listing.decode("utf-8", "replace").splitlines()


def run_large_file(code: str, tmp_path: Path) -> None:
    line = "2026-11-23 07:00:00 INFO Grüße, 日本語, 😀 — request served\n".encode()
    data = line * 40_000 + b"\xff truncated \xe6\x97"
    (tmp_path / "huge.log").write_bytes(data)
    out = run_block(code, tmp_path)
    expected = data.decode("utf-8", "replace").encode("utf-16-le")
    assert (tmp_path / "huge.utf16").read_bytes() == expected
    *progress, summary = out  # the progress figures end in "\r"
    assert progress[-1] == "100%"
    assert summary.startswith(f"{len(data)} {len(expected)} {{")
    assert "INVALID_BYTE" in summary and "TRUNCATED_AT_END" in summary


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def run_log_tail(code: str, tmp_path: Path) -> None:
    """Two runs: the first (no checkpoint yet) starts at the end of the log; the second
    resumes after the last line the first handed out, with what was written in between."""
    log = tmp_path / "app.log"
    log.write_bytes(b"ERROR before the first run: not shown (it starts at the end)\n")
    code = substitute(code, '"/var/log/app.log"', repr(str(log)))
    (tmp_path / "readme_block.py").write_text(code, encoding="utf-8")
    store = tmp_path / "app-log.db"

    def saved_offsets() -> list[int]:
        if not store.exists():
            return []
        with CheckpointStore(store) as checkpoints:
            return [cp.offset for cp in checkpoints.load_all().values()]

    written: list[str] = []  # the lines the example should print, as it prints them

    def append(text: str) -> None:
        offset = log.stat().st_size
        with log.open("ab") as f:
            f.write(text.encode() + b"\n")
        if "ERROR" in text:
            written.append(f"{log}:{offset}: {text}")

    def run(before: list[str], while_running: Callable[[int], None]) -> list[str]:
        for text in before:
            append(text)
        stdout = tmp_path / "stdout.txt"
        with stdout.open("wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "readme_block.py"],
                stdout=sink,
                stderr=subprocess.PIPE,
                cwd=tmp_path,
                env=block_environment(),
            )
        try:
            deadline = time.monotonic() + TIMEOUT
            n = 0
            while not stdout.read_bytes():  # until the example shows it is following
                assert proc.poll() is None, proc.communicate()[1].decode(errors="replace")
                assert time.monotonic() < deadline, "the example printed nothing"
                while_running(n)
                n += 1
                time.sleep(0.05)
            wait_for(lambda: stdout.read_text("utf-8").endswith(written[-1] + "\n"), "output")
            wait_for(
                lambda: saved_offsets() == [log.stat().st_size], "the checkpoint of the last line"
            )
            proc.send_signal(signal.SIGINT)
            stderr = proc.communicate(timeout=TIMEOUT)[1].decode(errors="replace")
            assert "KeyboardInterrupt" in stderr  # stopped by us, not by an error
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return stdout.read_text("utf-8").splitlines()

    # First run: lines are appended until it prints; those appended before it was
    # following are not its to show, every one after is.
    first = run([], lambda n: append(f"ERROR {n}: disk full" if n % 3 else f"INFO {n}: ok"))
    assert first and first == written[-len(first) :]
    assert "before the first run" not in "".join(first)
    # Second run: exactly what was appended while nothing was running.
    written.clear()
    second = run(
        ["ERROR while stopped: ünïcode", "INFO while stopped", "ERROR again"], lambda n: None
    )
    assert second == written


def run_dask(code: str, tmp_path: Path) -> None:
    import logging

    from distributed import LocalCluster

    logs = tmp_path / "logs" / "2026-11"
    logs.mkdir(parents=True)
    (logs / "a.log").write_bytes(b"07:00 INFO ok\n07:01 ERROR caf\xe9\n")
    (logs / "b.log").write_bytes("07:02 ERROR 日本語\n".encode() * 3 + b"\xe2\x82")
    with LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=logging.ERROR
    ) as cluster:
        code = substitute(code, "tcp://scheduler:8786", cluster.scheduler_address)
        code = substitute(
            code, "s3://my-bucket/logs/2026-*/*.log", f"{tmp_path}/logs/2026-*/*.log"
        )
        code = substitute(code, '{"profile": "logs-reader"}', "{}")
        out = run_block(code, tmp_path)
    assert out == [
        "4 errors",
        f"{logs / 'a.log'} 29 2:16 INCOMPLETE_SEQUENCE b'\\xe9'",
        f"{logs / 'b.log'} 66 4:1 TRUNCATED_AT_END b'\\xe2\\x82'",
    ]


RUNNERS: dict[str, Callable[[str, Path], None]] = {
    "A socket": run_socket,
    "A pipe or a subprocess": run_subprocess,
    "A large file": run_large_file,
    "A log tail": run_log_tail,
    "On a Dask cluster": run_dask,
}


def test_every_block_has_its_runner() -> None:
    headings = [heading for heading, _ in BLOCKS]
    assert len(headings) == len(set(headings)), "two python blocks under one README heading"
    assert headings == list(RUNNERS)


# The Dask block starts a cluster of worker processes: it runs in the soak step.
@pytest.mark.parametrize(
    ("heading", "code"),
    [
        pytest.param(
            heading, code, id=heading, marks=[pytest.mark.soak] if "Dask" in heading else []
        )
        for heading, code in BLOCKS
    ],
)
def test_readme_block_runs(heading: str, code: str, tmp_path: Path) -> None:
    runner = RUNNERS.get(heading)
    assert runner is not None, f"no runner for the README block under {heading!r}"
    runner(code, tmp_path)
