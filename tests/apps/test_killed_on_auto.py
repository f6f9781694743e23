"""A transcoder and a follower on ``encoding="auto"``, killed with SIGKILL at random
moments and started again from their checkpoints, give the bytes of one uninterrupted run.

The transcoder is ``examples/resumable_transcode.py``; the follower ``_follow_killable.py``
here.  Each writes its output, flushes it to disk and only then replaces its checkpoint
record (with the output's size), so a restart truncates the output to what the record
covers and goes on.  The kills come at random points of the output's growth (and one
right after a start, before any checkpoint may exist); the run is then finished without
a kill.  The output must equal one uninterrupted run's and the oracle's (the input
decoded in the encoding it is in, in one piece), and at least one restart must have
resumed from a checkpoint.

One short case runs by default; the long ones are in the soak step.  Under CI the kill
points are the same on every run; ``UTF8STREAM_SOAK_SEED`` replays a local run's.
"""

from __future__ import annotations

import codecs
import os
import random
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from utf8stream import Transcoder, follow

ROOT = Path(__file__).resolve().parents[2]
TRANSCODE = ROOT / "examples" / "resumable_transcode.py"
FOLLOW = Path(__file__).resolve().parents[1] / "_follow_killable.py"
#: Each wait for a process, and each run to the end, gives up after this long.
DEADLINE = 120.0

RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю."
FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ?"
JAPANESE = "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"


def seed_for(case: str) -> int:
    """The same seed per case under CI, a chosen one, or a new one on each local run."""
    if "UTF8STREAM_SOAK_SEED" in os.environ:
        return int(os.environ["UTF8STREAM_SOAK_SEED"])
    if "CI" in os.environ or os.environ.get("HYPOTHESIS_PROFILE") == "ci":
        return zlib.crc32(case.encode())
    return random.SystemRandom().randrange(2**32)


@dataclass
class Runs:
    kills: int = 0
    resumed: int = 0  # starts that found a checkpoint record
    finished_early: int = 0  # runs that ended before their kill


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def kill_and_restart(
    command: list[str], grows: Path, record: Path, expected_size: int, kills: int, seed: int
) -> Runs:
    """Start ``command``, SIGKILL it when ``grows`` reaches a random size in the first half
    of what is left (the first time, a random moment after the start), ``kills`` times;
    then let it finish."""
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    runs = Runs()
    for kill in range(kills):
        runs.resumed += record.exists()
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        # A point in the first half of what is left, with a checkpoint record written: a
        # slow machine still reaches it before the run ends, so every kill but the first
        # lands inside the work, and the next start resumes.
        done = size(grows)
        half = done + (expected_size - done) // 2 + 2
        target = 0 if kill == 0 else rng.randrange(done + 1, half)
        deadline = time.monotonic() + DEADLINE
        while (
            process.poll() is None
            and (size(grows) < target or (kill > 0 and not record.exists()))
            and time.monotonic() < deadline
        ):
            time.sleep(0.001)
        if kill == 0:
            time.sleep(rng.uniform(0, 0.05))  # a random moment of the start, not a wait
        process.kill()
        _, stderr = process.communicate(timeout=DEADLINE)
        if process.returncode == 0:
            runs.finished_early += 1
        else:
            assert process.returncode == -9, stderr.decode(errors="replace")
            runs.kills += 1
    runs.resumed += record.exists()
    done = subprocess.run(command, capture_output=True, env=env, timeout=DEADLINE, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    return runs


# -- the transcoder ---------------------------------------------------------------------


def one_run(data: bytes, target: str) -> bytes:
    transcoder = Transcoder("auto", target)
    return transcoder.transcode(data, final=True)


def transcode_killed(
    tmp_path: Path, data: bytes, target: str, chunk: int, kills: int, case: str
) -> tuple[bytes, Runs, int]:
    src, dest = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data)
    command = [sys.executable, str(TRANSCODE), str(src), str(dest), "--to", target]
    command += ["--chunk", str(chunk)]
    seed = seed_for(case)
    expected_size = len(one_run(data, target))
    part, record = tmp_path / "out.part", tmp_path / "out.checkpoint"
    runs = kill_and_restart(command, part, record, expected_size, kills, seed)
    assert not part.exists() and not record.exists()
    return dest.read_bytes(), runs, seed


def test_a_transcoder_on_auto_killed_and_resumed_gives_the_bytes_of_one_run(
    tmp_path: Path,
) -> None:
    """cp1251 detected on its first 1 KiB, read 300 bytes at a time (the first checkpoints
    hold the detector's bytes), written as UTF-16 (whose BOM comes once)."""
    text = "".join(f"{i:04} {RUSSIAN}\n" for i in range(120))
    data = text.encode("cp1251")
    out, runs, seed = transcode_killed(tmp_path, data, "utf-16", 300, 3, "transcode cp1251")
    assert out == one_run(data, "utf-16"), f"UTF8STREAM_SOAK_SEED={seed}: {runs}"
    assert out == text.encode("utf-16")
    assert runs.resumed >= 1, f"UTF8STREAM_SOAK_SEED={seed}: never resumed: {runs}"


def test_the_transcoder_refuses_what_is_not_text(tmp_path: Path) -> None:
    src, dest = tmp_path / "in", tmp_path / "out"
    src.write_bytes(bytes(range(256)) * 16)
    done = subprocess.run(
        [sys.executable, str(TRANSCODE), str(src), str(dest)],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 1
    assert b"is not text" in done.stderr and b"Traceback" not in done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in"]


SOAK_INPUTS = {
    # (text, encoding, bytes of BOM written first)
    "utf-16-le without a BOM": ([f"{i:05} {FRENCH}\r\n" for i in range(3000)], "utf-16-le", b""),
    "utf-8 with a BOM and bad bytes": (
        [f"{i:05} {JAPANESE}\n" for i in range(2000)],
        "utf-8",
        codecs.BOM_UTF8,
    ),
    "shift_jis": ([f"{i:05} {JAPANESE}\n" for i in range(2000)], "shift_jis", b""),
}


@pytest.mark.soak  # tens of restarts over hundreds of chunks, each flushed to disk
@pytest.mark.parametrize("case", sorted(SOAK_INPUTS))
@pytest.mark.parametrize("target", ["utf-8", "utf-16-be", "utf-8-sig"])
def test_a_transcoder_on_auto_killed_many_times(tmp_path: Path, case: str, target: str) -> None:
    lines, encoding, bom = SOAK_INPUTS[case]
    data = bom + "".join(lines).encode(encoding)
    if "bad bytes" in case:  # malformed units the UTF-8 decoder holds across chunks
        data = data.replace("人間".encode(), b"\xe4\xba\xba\xe9\x96")
    out, runs, seed = transcode_killed(tmp_path, data, target, 1024, 12, f"{case} {target}")
    message = f"UTF8STREAM_SOAK_SEED={seed}: {runs}"
    assert out == one_run(data, target), message
    decoded = data[len(bom) :].decode("cp932" if encoding == "shift_jis" else encoding, "replace")
    assert out == decoded.encode(target, "replace"), message
    assert runs.resumed >= 6, message


# -- the follower ------------------------------------------------------------------------


def lines_of(text: str) -> bytes:
    """What the follower writes: each line's text (without its end) and a newline."""
    return "".join(line + "\n" for line in text.splitlines()).encode()


def follow_once(log: Path) -> bytes:
    """The lines of one uninterrupted follower, written as the killed one writes them."""

    async def read() -> bytes:
        async with follow(log, start="beginning", encoding="auto", until_eof=True) as lines:
            return "".join([line.text + "\n" async for line in lines]).encode()

    return anyio.run(read)


def follow_killed(tmp_path: Path, text: str, encoding: str, kills: int) -> None:
    log, out, record = tmp_path / "app.log", tmp_path / "out", tmp_path / "record"
    log.write_bytes(text.encode(encoding))
    seed = seed_for(f"follow {encoding} {kills}")
    command = [sys.executable, str(FOLLOW), str(log), str(out), str(record)]
    expected = lines_of(text)
    runs = kill_and_restart(command, out, record, len(expected), kills, seed)
    message = f"UTF8STREAM_SOAK_SEED={seed}: {runs}"
    assert out.read_bytes() == follow_once(log) == expected, message
    assert runs.resumed >= (kills + 1) // 2, message


def test_a_follower_on_auto_killed_and_resumed_gives_the_lines_of_one_run(
    tmp_path: Path,
) -> None:
    """A UTF-16LE log without a BOM (as SQL Server writes them), detected on its head."""
    text = "".join(f"{i:04} {RUSSIAN}\r\n" for i in range(40))
    follow_killed(tmp_path, text, "utf-16-le", 2)


@pytest.mark.soak  # hundreds of lines, each flushed to disk, and a dozen restarts
@pytest.mark.parametrize("encoding", ["koi8-r", "utf-16-be", "utf-8"])
def test_a_follower_on_auto_killed_many_times(tmp_path: Path, encoding: str) -> None:
    text = "".join(f"{i:04} {RUSSIAN}\n" for i in range(400))
    follow_killed(tmp_path, text, encoding, 12)
