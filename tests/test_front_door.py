"""The front door: a README that fits on a screen or two and starts with a Quick start that
works, and source comments that say why, not the project's diary.

* README.md has at most 250 lines, and its first section is the Quick start: one ```sh
  block of exactly two command lines.  The second is the command ``.ci/run`` runs; the
  first runs the main jobs on the bundled sample, and its ``utf8stream`` commands are run
  here (this interpreter's ``-m utf8stream`` for ``.venv/bin/utf8stream``, the install
  left out) with the exit statuses its ``&&`` and ``;`` expect.
* No comment or docstring in ``src/`` or ``tests/`` holds an issue number, a measurement
  (a figure in ms, %, MB/s, ...) or history ("used to", "was tried", ...): figures go to
  docs/benchmarks.md with their command, history to CHANGELOG.md and commit messages.
"""

from __future__ import annotations

import ast
import io
import re
import shlex
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEST_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'"
    " && .venv/bin/python -m pytest -q -n auto"
)
INSTALL = "python3 -m venv .venv && .venv/bin/pip install -q . && "
TIMEOUT = 120.0
THIS = Path(__file__).name

#: What the diary looks like in a comment.  Each is checked to match nothing in the tree
#: and to match the example beside it, so that a pattern that can no longer fail fails.
DIARY = {
    # "#26" of "Unicode Technical Report #26" (TR #26) is not ours.
    "an issue number": (
        r"\bissues?\s*#?\d+|(?<![\w#])(?<!Report )(?<!TR )#\d+\b",
        "see issue 14",
    ),
    "a measurement": (
        r"(?<![\w.])\d+(?:[.,]\d+)?\s?(?:ms|µs|ns|%|[KMG]i?B/s)(?!\w)",
        "slices were 1-7 % faster",
    ),
    "instructions counted": (r"\d[\d,]*\s+instructions\b", "about 17,000 instructions"),
    "history": (
        r"\b(?:used to|was tried|were tried|tried and not kept|previous landing|this landing"
        r"|found by the soak test|found by the deep profile)\b",
        "it used to be kept to segments",
    ),
}


def quick_start() -> list[str]:
    """The lines of the first code block under the README's first ``##`` heading, which
    must be the Quick start's ``sh`` block."""
    lines = README.read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert lines[first] == "## Quick start", "the README's first section is the Quick start"
    opening = next(i for i in range(first + 1, len(lines)) if lines[i].startswith("```"))
    assert all(not line.strip() for line in lines[first + 1 : opening]), "nothing before it"
    assert lines[opening] == "```sh"
    closing = next(i for i in range(opening + 1, len(lines)) if lines[i].startswith("```"))
    return lines[opening + 1 : closing]


def test_the_readme_fits_on_a_screen_or_two() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_quick_start_is_two_command_lines_and_ci_runs_the_second() -> None:
    commands = quick_start()
    assert len(commands) == 2 and all(command.strip() for command in commands)
    assert commands[1] == TEST_COMMAND
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0].startswith(INSTALL)


def test_the_first_quick_start_line_runs_on_the_sample(tmp_path: Path) -> None:
    """Each command of the first line, in order: one that ``&&`` follows (and the last)
    must succeed; one that ``;`` follows may report invalid input (status 1) but no
    usage error.  A file written under /tmp goes to a temporary directory instead."""
    steps = re.split(r"\s*(&&|;)\s*", quick_start()[0][len(INSTALL) :])
    commands, separators = steps[0::2], [*steps[1::2], "&&"]
    assert len(commands) >= 3  # validate, transcode, tail
    for command, separator in zip(commands, separators, strict=True):
        argv = shlex.split(command)
        assert argv[0] == ".venv/bin/utf8stream", command
        argv = [str(tmp_path / Path(arg).name) if arg.startswith("/tmp/") else arg for arg in argv]
        done = subprocess.run(
            [sys.executable, "-m", "utf8stream", *argv[1:]],
            cwd=ROOT,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        allowed = {0} if separator == "&&" else {0, 1}
        assert done.returncode in allowed, (command, done.stderr.decode(errors="replace"))
        assert b"Traceback" not in done.stderr


def comments(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every comment and docstring of a Python or C source file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".c", ".h"):
        return [
            (text.count("\n", 0, m.start()) + 1, m[0])
            for m in re.finditer(r"/\*.*?\*/|//[^\n]*", text, re.S)
        ]
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            found.append((body[0].lineno, body[0].value.value))
    return found


def diary(root: Path) -> list[str]:
    """Every diary entry in the comments of ``root``'s src/ and tests/."""
    entries = []
    for folder in ("src", "tests"):
        for path in sorted((root / folder).rglob("*")):
            # This file names the diary's patterns, so it is left out.
            if path.suffix not in (".py", ".pyi", ".c", ".h") or path.name == THIS:
                continue
            # A comment or docstring is the file's own text: a file the patterns find
            # nothing in has no entry, and is not tokenized.
            raw = path.read_text(encoding="utf-8")
            if not any(re.search(pattern, raw, re.I) for pattern, _ in DIARY.values()):
                continue
            for line, text in comments(path):
                for what, (pattern, _) in DIARY.items():
                    for match in re.finditer(pattern, text, re.I):
                        where = line + text.count("\n", 0, match.start())
                        entries.append(f"{path.relative_to(root)}:{where}: {what}: {match[0]!r}")
    return entries


@pytest.mark.parametrize("what", list(DIARY))
def test_each_diary_pattern_finds_its_example(what: str) -> None:
    pattern, example = DIARY[what]
    assert re.search(pattern, example, re.I)


def test_comments_say_why_not_the_diary() -> None:
    assert diary(ROOT) == []


def test_the_diary_is_found_in_comments_and_docstrings_not_in_code(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "src" / "a.py").write_text(
        '"""It used to be kept."""\nx = "see issue 14"  # 5 % faster\n', encoding="utf-8"
    )
    (tmp_path / "tests" / "b.c").write_text("/* about 17,000 instructions */\n", encoding="utf-8")
    (tmp_path / "tests" / "c.py").write_text('x = "was tried"\n', encoding="utf-8")
    assert diary(tmp_path) == [
        "src/a.py:2: a measurement: '5 %'",
        "src/a.py:1: history: 'used to'",
        "tests/b.c:1: instructions counted: '17,000 instructions'",
    ]
