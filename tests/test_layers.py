"""The layers are visible and kept: core does no I/O and imports no event loop, no cycles.

``core/`` (pure state machines) must not import ``aio/``, ``apps/`` or any event loop
library; no module of the package may take part in an import cycle, not even through an
import hidden inside a function; every module of ``core/`` imports on its own, in a
fresh interpreter, without the package's ``__init__`` having loaded its neighbours first.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "src" / "utf8stream"
CORE_MODULES = sorted(
    f"utf8stream.core.{path.stem}"
    for path in (PACKAGE_DIR / "core").glob("*.py")
    if path.stem != "__init__"
)
EVENT_LOOPS = ("anyio", "trio", "asyncio")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking_block(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports at run time, anywhere in it (functions included)."""
    name = _module_name(path)
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if _is_type_checking_block(node):
            return  # never executed: annotations only
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append(module)
            # ``from . import x`` imports the submodule x when there is one.
            found.extend(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _graph() -> dict[str, set[str]]:
    """Who imports whom inside the package.

    An import of an enclosing package is left out: the package is always loaded (its
    ``__init__`` run or running) before anything inside it, so it cannot close a cycle.
    """
    sources = {_module_name(p): p for p in PACKAGE_DIR.rglob("*.py")}
    return {
        name: {
            target
            for target in _imports(path)
            if target in sources and target != name and not name.startswith(target + ".")
        }
        for name, path in sources.items()
    }


def test_the_graph_sees_imports_hidden_in_functions() -> None:
    graph = _graph()
    # open_text imports the async layer inside the function that needs it.
    assert "utf8stream.aio.sources" in graph["utf8stream.apps.files.opentext"]
    assert "utf8stream.core.decoder" in graph["utf8stream.core.registry"]


def test_no_import_cycles() -> None:
    graph = _graph()
    done: set[str] = set()

    def walk(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name) :], name]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        for target in sorted(graph[name]):
            walk(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        walk(name, [])


@pytest.mark.parametrize("path", sorted((PACKAGE_DIR / "core").glob("*.py")), ids=str)
def test_core_imports_no_event_loop_and_no_upper_layer(path: Path) -> None:
    for module in _imports(path):
        top = module.split(".")[0]
        assert top not in EVENT_LOOPS, f"{path.name} imports {module}"
        assert not module.startswith(("utf8stream.aio", "utf8stream.apps")), (
            f"{path.name} imports {module}"
        )


#: Import one module with a bare ``utf8stream`` package (its ``__init__`` not run), so
#: that only what the module itself imports gets loaded.
_ISOLATED = f"""
import sys, types
package = types.ModuleType("utf8stream")
package.__path__ = [sys.argv[1]]
sys.modules["utf8stream"] = package
__import__(sys.argv[2])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {set(EVENT_LOOPS)!r})
upper = sorted(m for m in sys.modules if m.startswith(("utf8stream.aio", "utf8stream.apps")))
print(loaded, upper)
"""


@pytest.mark.parametrize("module", CORE_MODULES)
def test_each_core_module_imports_alone(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _ISOLATED, str(PACKAGE_DIR), module],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "[]"]


_REGISTRATION = """
import codecs, sys, types
package = types.ModuleType("utf8stream")
package.__path__ = [sys.argv[1]]
sys.modules["utf8stream"] = package
import utf8stream.core.decoder, utf8stream.core.encoder, utf8stream.core.variants

def known(name):
    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True

before = known("wtf-8")
import utf8stream.core.registry
print(before, known("wtf-8"), codecs.lookup_error("optu-8").__name__)
"""


def test_only_the_registry_module_registers_codecs() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _REGISTRATION, str(PACKAGE_DIR)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "optu8_errors"]


def _private_decoder_names() -> set[str]:
    from utf8stream import Utf8Decoder

    names = set(vars(Utf8Decoder)) | set(vars(Utf8Decoder()))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


#: Modules allowed to touch the decoder's private attributes: the decoder itself.
_DECODER_INSIDERS: dict[str, set[str]] = {"utf8stream.core.decoder": set()}


def test_no_module_calls_decoder_privates() -> None:
    private = _private_decoder_names()
    assert {"_scanner", "_ready"} <= private
    for path in PACKAGE_DIR.rglob("*.py"):
        name = _module_name(path)
        if name == "utf8stream.core.decoder":
            continue
        allowed = _DECODER_INSIDERS.get(name, set())
        used = {
            node.attr
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute)
            and node.attr in private
            # A decoder is always called one (``decoder``, ``f.decoder``, ``self._decoder``).
            and ast.unparse(node.value).lower().endswith("decoder")
        }
        assert used <= allowed, f"{name} uses Utf8Decoder privates {sorted(used - allowed)}"
