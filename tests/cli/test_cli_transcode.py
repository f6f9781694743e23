"""``utf8stream transcode`` and ``decode`` as a user runs them: the real console script in
a subprocess, real files, real signals, writes that really fail, and a check for orphans.

Orphans are found by a harness process that is a child subreaper (Linux): the command runs
as its child, so any worker the command leaves behind is re-parented to the harness,
which reports (and then kills) whatever is still alive a moment after the command ended.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _tail_cli import outcome

COMMAND = [sys.executable, "-m", "utf8stream"]
#: The command, split into as many workers as asked: the tests of ``-j`` are of the
#: parallel machinery, which ``parallel.plan`` keeps out of runs this small (or direct,
#: or on two cores).
SPLIT_AS_ASKED = (
    "import sys\n"
    "from utf8stream.apps.files import parallel\n"
    "parallel.plan = lambda workers, cores, size, *, direct: workers\n"
    "from utf8stream.apps.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
SPLIT_COMMAND = [sys.executable, "-c", SPLIT_AS_ASKED]

HARNESS = r"""
import ctypes, json, os, resource, signal, subprocess, sys, time

ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come to us
limit = int(os.environ.get("HARNESS_FSIZE", "0"))


def limit_file_size():
    if limit:
        # As ``ulimit -f``: a write past the limit fails with EFBIG (SIGXFSZ ignored).
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


command = subprocess.Popen(
    [sys.executable, "-c", SPLIT_AS_ASKED, *sys.argv[1:]], preexec_fn=limit_file_size
)
status = command.wait()
deadline = time.monotonic() + 2.0
orphans = []
while True:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break  # nobody left
    if pid == 0:
        if time.monotonic() > deadline:
            orphans = [int(p) for p in os.listdir("/proc") if p.isdigit()
                       and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]
                       == str(os.getpid())]
            for p in orphans:
                os.kill(p, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.01)
print(json.dumps({"status": status, "orphans": orphans}))
""".replace("SPLIT_AS_ASKED", repr(SPLIT_AS_ASKED))

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="needs /proc and PR_SET_CHILD_SUBREAPER"
)


# -- helpers ----------------------------------------------------------------------------


def run(
    *args: str, stdin: bytes = b"", command: list[str] = COMMAND
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, timeout=30, check=False
    )


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(entry))
    return found


def ignores_sigint(pid: int) -> bool:
    """A worker whose initializer has run (it ignores SIGINT: the parent handles it)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    except OSError:
        pass
    return False


def wait_for(condition: Callable[[], list[int]], what: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.002)
    raise AssertionError(f"never saw {what}")


class Harness:
    """The command under the orphan-detecting harness, in its own session."""

    def __init__(self, *args: str, fsize: int = 0) -> None:
        env = dict(os.environ, HARNESS_FSIZE=str(fsize))
        self.process = subprocess.Popen(
            [sys.executable, "-c", HARNESS, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )

    def command_pid(self) -> int:
        return wait_for(lambda: children(self.process.pid), "the command")[0]

    def workers(self, count: int) -> list[int]:
        pid = self.command_pid()

        def ready() -> list[int]:
            found = [c for c in children(pid) if ignores_sigint(c)]
            return found if len(found) >= count else []

        return wait_for(ready, f"{count} initialised workers")

    def finish(self, timeout: float = 10.0) -> tuple[int, list[int], str]:
        """(exit status, orphans, stderr); the run must end within ``timeout`` (generous:
        a hang never ends, and a loaded machine, tests run in parallel, is slow to stop
        two worker processes)."""
        try:
            out, err = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.communicate()
            raise AssertionError("the command hangs") from None
        report = json.loads(out)
        return report["status"], report["orphans"], err.decode()


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


SLOW_TEXT = "éa" * 2_000_000  # 6 MB; a Python transliteration call for each é: seconds


@pytest.fixture
def slow_input(tmp_path: Path) -> Path:
    path = tmp_path / "in.txt"
    path.write_text(SLOW_TEXT, "utf-8")
    return path


# -- 1. the output is never the input ---------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["transcode", "{x}", "{x}"],
        ["transcode", "-t", "utf-16", "{x}", "-o", "{x}"],
        ["transcode", "-j", "2", "{x}", "{x}"],
        ["transcode", "{x}", "{hard}"],
        ["transcode", "{x}", "{soft}"],
        ["transcode", "-o", "{x}"],  # stdin is the file
        ["decode", "{x}", "-o", "{x}"],
        ["decode", "{soft}", "-o", "{hard}"],
    ],
)
def test_output_is_input_is_refused(tmp_path: Path, argv: list[str]) -> None:
    x = tmp_path / "x.txt"
    data = "Grüße\n".encode() * 400_000  # parallel-sized: over one chunk
    x.write_bytes(data)
    os.link(x, tmp_path / "hard")
    (tmp_path / "soft").symlink_to(x)
    names = {"x": str(x), "hard": str(tmp_path / "hard"), "soft": str(tmp_path / "soft")}
    args = [a.format(**names) for a in argv]
    with open(x, "rb") as stdin:
        result = subprocess.run([*COMMAND, *args], stdin=stdin, capture_output=True, timeout=30)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert err.count("\n") == 1
    assert "the output is the input file" in err
    assert x.read_bytes() == data
    assert listing(tmp_path) == ["hard", "soft", "x.txt"]


def test_failed_run_leaves_the_destination_and_no_temporary_file(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("fine text, then ① which latin-1 lacks", "utf-8")
    dst.write_bytes(b"precious")
    for argv in (
        ["transcode", "-t", "latin-1", str(src), str(dst)],
        ["transcode", "--errors", "strict", "-f", "ascii", str(src), "-o", str(dst)],
        ["decode", "--errors", "strict", str(tmp_path / "bad"), "-o", str(dst)],
    ):
        (tmp_path / "bad").write_bytes(b"ok \xff")
        assert run(*argv).returncode == 1
        assert dst.read_bytes() == b"precious"
        assert listing(tmp_path) == ["bad", "in.txt", "out.txt"]


def test_success_replaces_the_destination_keeping_its_mode_and_links(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("Grüße", "utf-8")
    dst.write_bytes(b"old")
    dst.chmod(0o640)
    (tmp_path / "link").symlink_to(dst)
    assert run("transcode", "-t", "utf-16-le", str(src), str(tmp_path / "link")).returncode == 0
    assert dst.read_bytes() == "Grüße".encode("utf-16-le")
    assert (dst.stat().st_mode & 0o777) == 0o640
    assert (tmp_path / "link").is_symlink()
    assert run("decode", str(src), "-o", str(dst)).returncode == 0
    assert dst.read_text("utf-8") == "Grüße"
    assert (dst.stat().st_mode & 0o777) == 0o640
    assert listing(tmp_path) == ["in.txt", "link", "out.txt"]


# -- 2. a failing write or worker ends the run ------------------------------------------


@linux_only
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_write_error_ends_the_run(tmp_path: Path, jobs: str) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("Příliš žluťoučký kůň 😀\n" * 150_000, "utf-8")  # 4.5 MB, 2 pieces
    dst.write_bytes(b"precious")
    # UTF-16 output is larger than the 1 MiB the file size limit allows: EFBIG.
    harness = Harness("transcode", "-j", jobs, "-t", "utf-16", str(src), str(dst), fsize=1 << 20)
    status, orphans, err = harness.finish()
    assert status == 2
    assert err == f"utf8stream: {dst}: File too large\n"
    assert orphans == []
    assert dst.read_bytes() == b"precious"
    assert listing(tmp_path) == ["in.txt", "out.txt"]


@linux_only
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_dead_worker_ends_the_run(tmp_path: Path, slow_input: Path, how: int) -> None:
    dst = tmp_path / "out.txt"
    harness = Harness("transcode", "-j", "2", "-t", "ascii//TRANSLIT", str(slow_input), str(dst))
    victim = harness.workers(2)[0]
    os.kill(victim, how)
    status, orphans, err = harness.finish(timeout=30)
    assert status == 2
    assert err.count("\n") == 1
    assert "worker process died" in err
    assert "Traceback" not in err
    assert orphans == []
    assert listing(tmp_path) == ["in.txt"]


@linux_only
def test_killed_parent_leaves_no_worker_behind(tmp_path: Path, slow_input: Path) -> None:
    harness = Harness("transcode", "-j", "2", "-t", "ascii//TRANSLIT", str(slow_input), "-o",
                      str(tmp_path / "out.txt"))  # fmt: skip
    harness.workers(2)
    os.kill(harness.command_pid(), signal.SIGKILL)
    status, orphans, _ = harness.finish(timeout=30)
    assert status == -signal.SIGKILL
    assert orphans == []  # the workers died with their parent
    # Killed outright, the command cannot remove its temporary file; it never took
    # the destination's name.
    assert "out.txt" not in listing(tmp_path)


# -- 6. interruption ---------------------------------------------------------------------


@linux_only
@pytest.mark.parametrize(
    ("how", "status"),
    # Each run waits for two slow workers: the second signal runs in the soak step.
    [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.soak)],
)
def test_interrupted_parallel_run(tmp_path: Path, slow_input: Path, how: int, status: int) -> None:
    dst = tmp_path / "out.txt"
    dst.write_bytes(b"precious")
    harness = Harness("transcode", "-j", "2", "-t", "ascii//TRANSLIT", str(slow_input), str(dst))
    harness.workers(2)
    os.kill(harness.command_pid(), how)
    code, orphans, err = harness.finish(timeout=30)
    assert (code, err, orphans) == (status, "", [])
    assert dst.read_bytes() == b"precious"
    assert listing(tmp_path) == ["in.txt", "out.txt"]


# The signal arrives while the parent runs the callbacks of fork() for a worker: code
# whose exceptions the interpreter only prints ("Exception ignored in ..."), so the
# KeyboardInterrupt or Terminated raised there was lost and the run went on to exit 0.
SIGNAL_IN_A_FORK_CALLBACK = r"""
import multiprocessing, os, signal, sys
from utf8stream.apps.cli._main import main
from utf8stream.apps.files import parallel

parallel.plan = lambda workers, cores, size, *, direct: workers  # split as asked

def signalled_in_the_callback():
    os.kill(os.getpid(), int(sys.argv[1]))
    for _ in range(1000):  # its handler runs here, inside the callback
        pass

multiprocessing.set_start_method("fork")  # the parent itself forks each worker
os.register_at_fork(after_in_parent=signalled_in_the_callback)
sys.exit(main(sys.argv[2:]))
"""


@linux_only
@pytest.mark.parametrize(("how", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interruption_in_a_fork_callback_is_not_lost(
    tmp_path: Path, how: int, status: int
) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("Grüße\n" * 1_500_000, "utf-8")  # 12 MB: two pieces at least
    dst.write_bytes(b"precious")
    args = ["transcode", "-j", "2", "-t", "utf-16-le", str(src), str(dst)]
    result = subprocess.run(
        [sys.executable, "-c", SIGNAL_IN_A_FORK_CALLBACK, str(int(how)), *args],
        capture_output=True,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (status, b"")
    assert dst.read_bytes() == b"precious"
    assert listing(tmp_path) == ["in.txt", "out.txt"]


@pytest.mark.parametrize("command", ["transcode", "decode"])
@pytest.mark.parametrize(("how", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_streaming_run(tmp_path: Path, command: str, how: int, status: int) -> None:
    dst = tmp_path / "out.txt"
    dst.write_bytes(b"precious")
    output = ["-o", str(dst)]
    process = subprocess.Popen(
        [*COMMAND, command, "-", *output],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    process.stdin.write("Grüße\n".encode() * 50_000)
    process.stdin.flush()
    # Mid-run: the temporary output exists, the input is still open.
    wait_for(lambda: [1] if len(listing(tmp_path)) == 2 else [], "the temporary file")
    process.send_signal(how)
    _, err = process.communicate(timeout=10)
    assert (process.returncode, err) == (status, b"")
    assert dst.read_bytes() == b"precious"
    assert listing(tmp_path) == ["out.txt"]


# -- 3. characters the target cannot represent ------------------------------------------

CIRCLED = "No. ①②③ ok"  # ① is at character 4, byte 4 (all ASCII before it)


def test_unmappable_character_stops_the_run(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("Grüße " + CIRCLED, "utf-8")  # ü and ß are 2 bytes each
    result = run("transcode", "-t", "shift_jis", str(src), str(dst))
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"utf8stream: {src}: cannot convert U+00FC LATIN SMALL LETTER U WITH DIAERESIS "
        "at character 2 (byte offset 2) to shift-jis\n"
    )
    assert not dst.exists()
    result = run("transcode", "-t", "latin-1", str(src))  # to stdout: what came before
    assert result.returncode == 1
    assert result.stdout == "Grüße No. ".encode("latin-1")
    assert "U+2460 CIRCLED DIGIT ONE at character 10 (byte offset 12)" in result.stderr.decode()


@pytest.mark.parametrize(
    ("options", "expected", "report"),
    [
        (["-c", "-t", "shift_jis"], "No.  ok", "3 unmappable characters dropped"),
        (["-t", "shift_jis//IGNORE"], "No.  ok", "3 unmappable characters dropped"),
        # As glibc's iconv -t ascii//TRANSLIT
        (["-t", "ASCII//TRANSLIT"], "No. (1)(2)(3) ok", "3 unmappable characters transliterated"),
        (
            ["-t", "latin-1//translit"],
            "No. (1)(2)(3) ok",
            "3 unmappable characters transliterated",
        ),
    ],
)
def test_unmappable_policies(options: list[str], expected: str, report: str) -> None:
    # GNU iconv -c (glibc 2.36 here) exits 0 after dropping characters: so do we.
    result = run("transcode", "-v", *options, stdin=CIRCLED.encode())
    assert result.returncode == 0
    assert result.stdout == expected.encode()
    assert result.stderr.decode() == (
        f"utf8stream: 16 bytes in, {len(expected)} bytes out, 10 characters, "
        f"0 malformed input units, {report}\n"
    )


def test_transliteration_falls_back_to_a_question_mark_or_nothing() -> None:
    text = "café α ﬁ"  # é decomposes to e; glibc has nothing for α; ﬁ is f + i
    assert run("transcode", "-t", "ascii//TRANSLIT", stdin=text.encode()).stdout == b"cafe ? fi"
    result = run("transcode", "-t", "ascii//TRANSLIT//IGNORE", stdin=text.encode())
    assert result.stdout == b"cafe  fi"


def test_verbose_counts_malformed_input_of_any_codec() -> None:
    truncated = "hi".encode("utf-16-le") + b"\x3d\xd8" + b"!"  # a cut surrogate, odd length
    result = run("transcode", "-qv", "--errors", "replace", "-f", "utf-16-le", stdin=truncated)
    assert result.returncode == 0
    assert result.stdout == "hi\ufffd".encode()
    assert result.stderr.decode() == (
        "utf8stream: 7 bytes in, 5 bytes out, 3 characters, 1 malformed input units "
        "(TRUNCATED_AT_END 1), 0 unmappable characters\n"
    )
    result = run(
        "transcode", "-v", "--errors", "replace", "-f", "shift_jis", stdin=b"a\xff\x82\xa0b\x81"
    )
    assert result.stdout == "a\ufffdあb\ufffd".encode()
    assert "2 malformed input units (INVALID_BYTE 1, TRUNCATED_AT_END 1)" in result.stderr.decode()


def test_strict_utf16_input_stops_where_the_unit_is_and_keeps_what_came_before() -> None:
    data = "abc".encode("utf-16-le") + b"\x00\xdc" + "d".encode("utf-16-le")
    result = run("transcode", "--errors", "strict", "-f", "utf-16-le", stdin=data)
    assert result.returncode == 1
    assert result.stdout == b"abc"  # as iconv: the output before the unit is written
    assert result.stderr.decode() == (
        "utf8stream: -: illegal input sequence at position 6 (00 dc: illegal encoding)\n"
    )
    result = run("transcode", "--errors", "strict", "-t", "utf-16-be", stdin=b"ab\xc0cd")
    assert result.returncode == 1
    assert result.stdout == "ab".encode("utf-16-be")
    assert result.stderr.decode() == (
        "utf8stream: -: illegal input sequence at position 2 (c0: overlong encoding)\n"
    )


def test_parallel_utf16_output_has_one_bom_and_the_counts(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    text = "Grüße, 世界 😀 " * 200_000  # 5.6 MB: several pieces of the default chunk size
    src.write_bytes(text.encode() + b"\xed\xa0\x80")
    options = ["-v", "-j", "2", "--errors", "replace", "-t", "utf-16"]
    result = run("transcode", *options, str(src), str(dst), command=SPLIT_COMMAND)
    assert result.returncode == 0, result.stderr
    assert dst.read_bytes() == (text + "\ufffd" * 3).encode("utf-16")
    notice, summary = result.stderr.decode().splitlines()
    # The workers' first unit, found again by the parent.
    assert notice == (
        f"utf8stream: {src}: 3 malformed input units replaced with U+FFFD (--errors replace),"
        f" the first at byte offset {len(text.encode())}"
    )
    assert "3 malformed input units (SURROGATE 1, UNEXPECTED_CONTINUATION 2)" in summary


def test_verbose_lists_kinds_in_the_order_validate_summary_does(tmp_path: Path) -> None:
    # One unit of each of five kinds, first met in an order that is not alphabetical.
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a\xff b\xe2\x82 c\xed\xa0\x80 d\xc0\xaf\n")
    summary = run("validate", "--summary", str(bad)).stdout.decode()
    verbose = run(
        "transcode", "-qv", "--errors", "replace", "-t", "utf-16", str(bad), str(tmp_path / "out")
    ).stderr
    validate_kinds = summary[summary.index("(") + 1 : summary.index(")")]
    transcode_kinds = verbose.decode().split("units (")[1].split(")")[0]
    assert validate_kinds == transcode_kinds
    assert validate_kinds.startswith("INCOMPLETE_SEQUENCE 1, INVALID_BYTE 1, OVERLONG 1")


# -- 4. codecs and handlers that cannot work --------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-f", "base64"], "not a text encoding: base64"),
        (["-t", "rot13"], "not a text encoding: rot13"),
        (["-t", "zlib"], "not a text encoding: zlib"),
        (["-f", "hex"], "not a text encoding: hex"),
        (["-t", "bz2"], "not a text encoding: bz2"),
        (["-f", "uu"], "not a text encoding: uu"),
        (["-t", "quopri"], "not a text encoding: quopri"),
        (["--errors", "xmlcharrefreplace"], "'xmlcharrefreplace' cannot be used for decoding"),
        (["-f", "latin-1", "--errors", "namereplace"], "'namereplace' cannot be used"),
        (["-c", "-t", "idna"], "idna cannot drop or transliterate characters (only strict)"),
        (["-t", "utf-8//FOO"], "unknown suffix //FOO"),
        (["-f", "no-such-codec"], "unknown encoding: no-such-codec"),
    ],
)
def test_unusable_codecs_and_handlers_are_usage_errors(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], options: list[str], message: str
) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_bytes(b"bad \xff input")
    status, _, err = outcome(capsysbinary, "transcode", *options, str(src), str(dst))
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("utf8stream: ")
    assert message in err
    assert listing(tmp_path) == ["in.txt"]


# -- 5. iconv's interface ---------------------------------------------------------------


def test_list_encodings() -> None:
    result = run("transcode", "-l")
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    first = {line.split(", ")[0]: line.split(", ")[1:] for line in lines}
    assert "utf8" in first["utf-8"]
    assert "latin1" in first["iso8859-1"]
    assert "sjis" in first["shift-jis"]
    assert "wtf-8" in first and "cesu-8" in first
    assert "base64" not in first and "rot-13" not in first


def test_stdin_stdout_and_output_option(tmp_path: Path) -> None:
    text = "Grüße, ¿qué tal?"
    result = run("transcode", "-f", "latin1", "-t", "utf-8", stdin=text.encode("latin-1"))
    assert (result.returncode, result.stdout) == (0, text.encode())
    src = tmp_path / "in.txt"
    src.write_bytes(text.encode("latin-1"))
    assert run("transcode", "-f", "latin1", str(src), "-o", str(tmp_path / "o")).returncode == 0
    assert (tmp_path / "o").read_text("utf-8") == text
    result = run("transcode", str(src), str(tmp_path / "a"), "-o", str(tmp_path / "b"))
    assert result.returncode == 2
    assert "two outputs given" in result.stderr.decode()


def test_version() -> None:
    from utf8stream import __version__

    result = run("--version")
    assert (result.returncode, result.stdout.decode()) == (0, f"utf8stream {__version__}\n")


#: What ``utf8stream transcode`` runs without: validate's --json and decoder checkpoints
#: (json), --dask (logging), and the other commands with the line engine (tail).
NOT_FOR_TRANSCODE = (
    "json",
    "logging",
    "utf8stream.apps.cli.tail",
    "utf8stream.apps.cli.validate",
    "utf8stream.core.linecodec",
    "utf8stream.core.lines",
    "utf8stream.core.multiline",
)


def test_a_transcode_run_starts_without_what_it_does_not_use(tmp_path: Path) -> None:
    """Start-up counts against iconv on every file: the modules other commands need are
    imported where they are used, not by the command line's start; the output is written
    and the process ends cleanly."""
    src = tmp_path / "in"
    src.write_bytes("kůň €".encode("utf-16-le"))
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['utf8stream', 'transcode', '-f', 'utf-16-le', {str(src)!r},"
        f" {str(tmp_path / 'out')!r}]\n"
        "try:\n"
        "    runpy.run_module('utf8stream', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        f"print(sorted(m for m in {NOT_FOR_TRANSCODE!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert done.stdout.decode().strip() == "[]"
    assert (tmp_path / "out").read_bytes() == "kůň €".encode()


@pytest.mark.parametrize(
    "argv",
    [
        ["transcode", "--bogus"],
        ["transcode", "a", "b", "c"],
        ["decode"],
        ["transcode", "-h"],
        ["decode", "--help"],
        ["tail", "-h"],
        ["-h"],
        ["transcoder"],
    ],
)
def test_the_short_parser_of_transcode_parses_as_the_whole_one(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``main`` builds only the transcode and decode parsers when the command is one of
    them: what it prints and how it exits are the whole parser's."""
    from utf8stream.apps.cli import _main

    results = []
    for parser in (_main.build_parser(), _main._build_parser(argv[0])):
        with pytest.raises(SystemExit) as stopped:
            parser.parse_args(argv)
        results.append((stopped.value.code, capsys.readouterr()))
    assert results[0] == results[1]
