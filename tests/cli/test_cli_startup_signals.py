"""Ctrl-C or SIGTERM at any moment of the command line's start-up: no traceback, and the
status a shell reports for the signal (130, 143).

The start-up of ``utf8stream tail -F`` imports the line engine and the follower; a signal
that lands while they load must end the program as one that lands later does.  Each run
is the console script (``from utf8stream.apps.cli import main``, ``sys.exit(main())``),
with an audit hook that writes a word to a pipe when the first module inside the command
line package starts loading: from there on the start-up is the program's.  (Before it,
the interpreter starts and imports the package's few small modules; a signal landing
there meets Python's own handling, which no program changes.)  The signal is sent at
the delays of ``DELAYS`` after that word, which span the whole start-up.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: The console script, and the word on the file descriptor given first.
_ENTRY = """\
import os, re, sys

def hook(event, args, fd=int(sys.argv.pop(1))):
    if event == "import" and args[0].startswith("utf8stream.apps.cli.") and fd >= 0:
        os.write(fd, b"up")
        hook.__defaults__ = (-1,)

sys.addaudithook(hook)
from utf8stream.apps.cli import main
sys.exit(main())
"""

#: Seconds after the program takes over: the first ones land in the imports.
DELAYS = (0.0, 0.001, 0.002, 0.004, 0.007, 0.01, 0.015, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2, 0.3)


def _started(args: list[str]) -> subprocess.Popen[bytes]:
    """The command, started; returns when its start-up is the program's."""
    ready, marker = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, str(marker), *args],
            pass_fds=(marker,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(marker)
        readable, _, _ = select.select([ready], [], [], 60)
        assert readable and os.read(ready, 2) == b"up", process.communicate()[1]
    finally:
        os.close(ready)
    return process


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"]
)
def test_a_signal_at_any_moment_of_tail_start_up(
    tmp_path: Path, signum: signal.Signals, status: int
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"first\nsecond\n")
    outcomes = []
    for delay in DELAYS:
        process = _started(["tail", "-F", "-n", "1", str(log)])
        # The delay is the point of the test (where in the start-up the signal lands),
        # not a wait for something to happen.
        time.sleep(delay)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
        outcomes.append((delay, process.returncode, stderr.decode(errors="replace")[-300:]))
    wrong = [o for o in outcomes if o[1] != status or o[2]]
    assert not wrong, "\n".join(map(repr, wrong))


#: A Ctrl-C that lands while a class is being made by an import: Python 3.11 wraps what a
#: descriptor's ``__set_name__`` raises in a ``RuntimeError`` (anyio's stream classes are
#: made so when ``tail`` imports them).  The import of the command's first module does it
#: here, at a known moment.
_INTERRUPTED_CLASS = """\
import sys

class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == "utf8stream.apps.cli._main":
            class Field:
                def __set_name__(self, owner, name):
                    raise KeyboardInterrupt
            class Made:
                field = Field()
        return None

sys.meta_path.insert(0, Finder())
from utf8stream.apps.cli import main
sys.exit(main())
"""


def test_ctrl_c_while_an_import_makes_a_class_is_no_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_CLASS, "--version"],
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (130, b"")


#: A signal that lands while the event loop is being made, at a known moment: the loop's
#: construction asks for the clock's resolution early on.  A loop left half made would
#: print a traceback from its ``__del__`` as the program exits.
_INTERRUPTED_LOOP = """\
import os, signal, sys
import asyncio.base_events

clock_info = asyncio.base_events.time.get_clock_info
signum = getattr(signal, sys.argv.pop(1))

def landing(name):
    os.kill(os.getpid(), signum)
    return clock_info(name)

asyncio.base_events.time.get_clock_info = landing
from utf8stream.apps.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize(("name", "status"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_while_the_event_loop_is_made_is_no_traceback(
    tmp_path: Path, name: str, status: int
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"first\n")
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_LOOP, name, "tail", "-F", str(log)],
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr.decode(errors="replace")) == (status, "")
