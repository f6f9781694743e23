"""The documentation site (docs/, mkdocs.yml) says what the code does.

* Every name in ``utf8stream.__all__`` has an entry in the API reference, and the
  reference documents nothing else: a new export without documentation fails here.
* Every page is in the navigation, and the navigation names no missing page.
* Every ```python block runs as written, in its own interpreter, in a temporary directory.
  When a ```text block follows it (nothing but blank lines between), that block is what
  the program prints, exactly.
* Every ```console block is a shell session: each ``$ `` line runs in bash, in a
  temporary directory holding a copy of ``examples/sample.txt``, with ``python`` being
  this interpreter and ``utf8stream`` its ``-m utf8stream``; the lines up to the next
  ``$ `` are its output (stdout and stderr as a terminal shows them, interleaved).
* The ```mermaid block is the follower's state diagram: ``_machine.diagram()``'s output.
* A ```sh block is a command that sets something up (an install, serving the site); it is
  shown, not run here.

Building the site itself (``mkdocs build --strict``, which fails on a broken link or a
reference to a name that does not exist) needs the docs extra; ``.ci/run`` does it.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import utf8stream

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
TIMEOUT = 60.0


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    code: str
    output: str | None  # the ```text block that follows, if any


def fenced_blocks(markdown: str) -> list[tuple[int, str, str]]:
    """``(line number, language, code)`` of every fenced block, in order; a block indented
    under a list item loses its indentation."""
    blocks: list[tuple[int, str, str]] = []
    fence: tuple[int, str, str] | None = None  # line, language, indentation
    code: list[str] = []
    for number, line in enumerate(markdown.splitlines(keepends=True), 1):
        opening = re.match(r"( *)```(.*)", line)
        if fence is None:
            if opening:
                fence = (number, opening[2].strip(), opening[1])
                code = []
        elif opening and opening[1] == fence[2]:
            blocks.append((fence[0], fence[1], "".join(code)))
            fence = None
        else:
            assert line.startswith(fence[2]) or not line.strip(), f"line {number}: indentation"
            code.append(line[len(fence[2]) :] if line.strip() else line.lstrip(" "))
    assert fence is None, f"the page ends inside the code block of line {fence[0]}"
    return blocks


def page_blocks(page: Path) -> list[Block]:
    markdown = page.read_text("utf-8")
    lines = markdown.splitlines()
    raw = fenced_blocks(markdown)
    blocks = []
    for i, (line, language, code) in enumerate(raw):
        if language == "text":
            continue
        output = None
        if i + 1 < len(raw) and raw[i + 1][1] == "text":
            end = line + code.count("\n") + 1  # the closing fence
            between = lines[end : raw[i + 1][0] - 1]
            if not any(text.strip() for text in between):
                output = raw[i + 1][2]
        blocks.append(Block(str(page.relative_to(DOCS)), line, language, code, output))
    return blocks


BLOCKS = [block for page in PAGES for block in page_blocks(page)]


def block_id(block: Block) -> str:
    return f"{block.page}:{block.line}"


def environment() -> dict[str, str]:
    # Unbuffered: stdout and stderr interleave as they would on a terminal.
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}


#: The public submodules: ``src/utf8stream/*.py`` not named with a leading underscore.
SUBMODULES = sorted(
    path for path in Path(utf8stream.__file__).parent.glob("*.py") if path.stem[0] != "_"
)


def _public_names() -> set[str]:
    """The top-level names and those of each public submodule, read from their
    ``__all__`` without importing them (``utf8stream.trio`` and ``.dask`` need extras)."""
    names = {f"utf8stream.{name}" for name in utf8stream.__all__}
    for path in SUBMODULES:
        for node in ast.parse(path.read_text("utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
            ):
                names |= {
                    f"utf8stream.{path.stem}.{name}" for name in ast.literal_eval(node.value)
                }
    return names


def test_the_api_reference_documents_exactly_the_public_names() -> None:
    documented = [
        match
        for page in PAGES
        for match in re.findall(r"^::: (utf8stream(?:\.\w+)+)\s*$", page.read_text("utf-8"), re.M)
    ]
    assert len(documented) == len(set(documented)), "a name documented twice"
    modules = {f"utf8stream.{path.stem}" for path in SUBMODULES}
    assert sorted(set(documented) - modules) == sorted(_public_names())


def test_every_page_is_in_the_navigation() -> None:
    nav = re.findall(
        r"^\s*- (?:[^:\n]+: )?(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M
    )
    assert sorted(nav) == sorted(str(page.relative_to(DOCS)) for page in PAGES)


def test_every_code_block_is_checked() -> None:
    languages = {block.language for block in BLOCKS}
    assert languages <= {"python", "console", "sh", "mermaid"}, "a block nothing here would run"
    assert all(block.output is None for block in BLOCKS if block.language == "console")


def test_the_follower_diagram_is_drawn_from_its_transition_table() -> None:
    from utf8stream.apps.follow._machine import diagram

    drawn = [block.code for block in BLOCKS if block.language == "mermaid"]
    assert drawn == [diagram()], (
        "docs/layout.md: paste the output of python -m utf8stream.apps.follow._machine"
    )


def _python_blocks() -> list[object]:
    # A block that starts a cluster of worker processes takes seconds by its nature: it
    # runs in the soak step, as the other cluster tests do.
    return [
        pytest.param(b, marks=pytest.mark.soak) if "LocalCluster(" in b.code else b
        for b in BLOCKS
        if b.language == "python"
    ]


@pytest.mark.parametrize("block", _python_blocks(), ids=block_id)
def test_python_block_runs_and_prints_what_the_page_shows(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "page_block.py"
    script.write_text(block.code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        cwd=tmp_path,
        env=environment(),
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stderr == b""
    if block.output is not None:
        assert result.stdout.decode("utf-8") == block.output


def console_steps(code: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` for each ``$ `` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in code.splitlines(keepends=True):
        if line.startswith("$ "):
            steps.append((line[2:].rstrip("\n"), []))
        else:
            assert steps, "a console block starts with a command"
            steps[-1][1].append(line)
    return [(command, "".join(output)) for command, output in steps]


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "console"], ids=block_id)
def test_console_block_prints_what_the_page_shows(block: Block, tmp_path: Path) -> None:
    shutil.copy(ROOT / "examples" / "sample.txt", tmp_path / "sample.txt")
    program = (
        f'python() {{ "{sys.executable}" "$@"; }}\n'
        f'utf8stream() {{ "{sys.executable}" -m utf8stream "$@"; }}\n'
    )
    for command, expected in console_steps(block.code):
        result = subprocess.run(
            ["bash", "-c", program + command],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env=environment(),
            timeout=TIMEOUT,
            check=False,
        )
        assert result.stdout.decode("utf-8") == expected, command
