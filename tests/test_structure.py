"""The structure a reader can hold, checked: sizes of the Python and C sources of the
layers listed in ``LAYERS``, the core extension's exported names (nothing only the
follower uses), and no record type, file identity or path taken by a function of the core.

A layer is added by adding its directory to ``LAYERS``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from utf8stream.core import _accel

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "utf8stream"
#: The layers whose sources are held to the sizes below.
LAYERS = ("core", "aio")

MAX_PY_FILE, MAX_CLASS, MAX_METHODS, MAX_FUNCTION = 800, 400, 30, 100
MAX_C_FILE, MAX_C_FUNCTION = 1500, 150

#: What the core extension (``utf8stream._speedups``) exports: the scanner and what its
#: decoder, encoder, line streams, byte transcoder, encoding detector and normalizer call.
#: A name only the follower uses belongs in the apps layer's extension
#: (``utf8stream.apps._apps_speedups``).
CORE_EXPORTS = {
    "BufferedAsyncIterator",
    "ByteTranscoder",
    "PlainEncoder",
    "Units",
    "find_moji",
    "find_moji_bytes",
    "find_run",
    "join_cut",
    "moji_repair",
    "normalize_piece",
    "_classify_all",
    "cheapest_language",
    "class_counts",
    "code_page_scores",
    "count_bytes",
    "count_east_asian",
    "count_runs",
    "count_text",
    "setup",
    "simd",
    "split_lines",
}
#: Parameter names that would be a caller's record type, file identity or path.
CALLERS_TYPES = {"record", "records", "record_type", "line_type", "file", "identity", "path"}


def sources(suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(
        path
        for layer in LAYERS
        for path in (PACKAGE / layer).rglob("*")
        if path.suffix in suffixes
    )


def python_sizes(path: Path) -> list[str]:
    """What in ``path`` is over its size, as ``name: size``."""
    text = path.read_text("utf-8")
    over = []
    if len(text.splitlines()) > MAX_PY_FILE:
        over.append(f"the file: {len(text.splitlines())} lines")
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        size = (node.end_lineno or node.lineno) - node.lineno + 1
        if isinstance(node, ast.ClassDef):
            methods = sum(isinstance(x, ast.FunctionDef | ast.AsyncFunctionDef) for x in node.body)
            if size > MAX_CLASS or methods > MAX_METHODS:
                over.append(f"class {node.name}: {size} lines, {methods} methods")
        elif size > MAX_FUNCTION:
            over.append(f"{node.name}: {size} lines")
    return over


def c_definitions(text: str) -> list[tuple[str, int]]:
    """The functions (a body opened by a ``{`` alone on a line at the left margin) and the
    multi-line macros of a C source, with their sizes in lines."""
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#define") and line.rstrip().endswith("\\"):
            end = i
            while lines[end].rstrip().endswith("\\"):
                end += 1
            found.append((line.split()[1].split("(")[0], end - i + 1))
            i = end + 1
            continue
        if line == "{":
            head = i - 1
            while head > 0 and "(" not in lines[head]:
                head -= 1
            name = re.search(r"(\w+)\s*\(", lines[head])
            depth, end = 0, i
            while True:
                depth += lines[end].count("{") - lines[end].count("}")
                if depth == 0:
                    break
                end += 1
            found.append((name.group(1) if name else "?", end - head + 1))
            i = end + 1
            continue
        i += 1
    return found


@pytest.mark.parametrize("path", sources((".py",)), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_python_files_classes_and_functions_are_small(path: Path) -> None:
    assert python_sizes(path) == []


@pytest.mark.parametrize("path", sources((".c", ".h")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_c_files_functions_and_macros_are_small(path: Path) -> None:
    text = path.read_text("utf-8")
    assert len(text.splitlines()) <= MAX_C_FILE
    assert [(name, size) for name, size in c_definitions(text) if size > MAX_C_FUNCTION] == []


def test_the_c_size_check_sees_functions_and_macros() -> None:
    text = "static int\nf(int a)\n{\n    if (a) {\n        return 1;\n    }\n    return 0;\n}\n"
    text += "#define M(x) \\\n    do { \\\n    } while (0)\n"
    assert c_definitions(text) == [("f", 7), ("M", 3)]


def test_the_python_size_check_sees_what_is_too_big(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    body = "".join(f"    def m{k}(self) -> None:\n        pass\n" for k in range(31))
    path.write_text(f"class C:\n{body}\n\ndef f() -> None:\n" + "    pass\n" * 100)
    assert python_sizes(path) == ["class C: 63 lines, 31 methods", "f: 101 lines"]


def test_the_core_extension_exports_nothing_only_the_follower_uses() -> None:
    stub = ast.parse((PACKAGE / "_speedups.pyi").read_text("utf-8"))
    declared = {
        target.id if isinstance(target, ast.Name) else target.name  # type: ignore[attr-defined]
        for node in stub.body
        for target in (
            [node]
            if isinstance(node, ast.ClassDef | ast.FunctionDef)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
    }
    assert declared == CORE_EXPORTS
    built = _accel.built_accelerator()
    if built is not None:
        assert {name for name in dir(built) if not name.startswith("__")} == CORE_EXPORTS


def test_no_core_function_takes_a_callers_record_type_identity_or_path() -> None:
    found = [
        f"{path.name}: {node.name}({arg.arg})"
        for path in sorted((PACKAGE / "core").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
        if arg.arg in CALLERS_TYPES
    ]
    assert found == []


#: The module that searches text or bytes for newlines: the line engine's search
#: (``linesearch``: forwards, backwards, and the split of decoded lines).
LINE_SEARCH = {"core/linesearch.py"}
#: Not line readers: a line number for a report (``validate``'s ``line:column`` counts
#: ``\n``), the kernel's tables under /proc read by the follower's watchers, and the
#: mojibake repairers (the text repairer's pure pass, the byte-domain repairer), whose unit
#: of decision ends at a line end (they read no lines).
NOT_LINE_READERS = {
    "apps/_linecol.py",
    "apps/_holders.py",
    "apps/_watch.py",
    "core/_mojibake_native.py",
    "core/mojibakebytes.py",
}
#: The methods of ``str`` and ``bytes`` that search for their argument.
SEARCHES = {"find", "rfind", "index", "rindex", "count", "split", "rsplit", "partition"}


def newline_searches(tree: ast.AST) -> list[str]:
    """The searches for a newline in a module: a ``str``/``bytes`` search method given a
    literal that holds ``\\r`` or ``\\n``, ``splitlines()``, a regular expression whose
    pattern holds one; as ``line: call``."""

    def newline(node: ast.expr) -> bool:
        value = node.value if isinstance(node, ast.Constant) else None
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        return isinstance(value, str) and any(c in value for c in ("\r", "\n", r"\r", r"\n"))

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        if (
            name == "splitlines"
            or (name in SEARCHES and node.args and newline(node.args[0]))
            or (name == "compile" and node.args and newline(node.args[0]))
        ):
            found.append(f"{node.lineno}: {name}")
    return found


def test_only_the_line_engine_searches_for_newlines() -> None:
    """Every line reader gets its line ends from the line engine's one search."""
    found = {
        name: calls
        for path in sorted(PACKAGE.rglob("*.py"))
        if (name := str(path.relative_to(PACKAGE))) not in LINE_SEARCH | NOT_LINE_READERS
        if (calls := newline_searches(ast.parse(path.read_text("utf-8"))))
    }
    assert found == {}
    # In C: the scanner's one byte search (``line_stop``) and the code-unit search of
    # ``split_lines`` (``find_unit``); no ``memchr`` of a newline.
    c_sources = sorted(PACKAGE.rglob("*.c")) + sorted(PACKAGE.rglob("*.h"))
    memchr = re.compile(r"memchr\([^;]*'\\[rn]'")
    assert [p.name for p in c_sources if memchr.search(p.read_text("utf-8"))] == []


def test_the_newline_search_check_sees_each_kind_of_search() -> None:
    source = (
        'a.find(b"\\n")\nb.rfind("\\r", 0)\nc.splitlines()\nre.compile(rb"[\\r\\n]")\n'
        'd.split("\\r\\n")\ne.find(b"x")\nf.split(sep)\n'
    )
    assert newline_searches(ast.parse(source)) == [
        "1: find",
        "2: rfind",
        "3: splitlines",
        "4: compile",
        "5: split",
    ]


def _replacing_assignments(tree: ast.Module) -> list[str]:
    """Attributes set on a class from outside its body: ``setattr(Class, ...)``,
    ``Class.name = ...`` (a class spelled, as this project names them, in CapWords)."""

    def is_class(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id[:1].isupper()

    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and node.args
            and is_class(node.args[0])
        ):
            found.append(f"setattr({ast.unparse(node.args[0])}, ...)")
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign | ast.AnnAssign)
            else []
        )
        found += [
            ast.unparse(t) for t in targets if isinstance(t, ast.Attribute) and is_class(t.value)
        ]
    return found


def test_no_method_is_replaced_at_import() -> None:
    """A class's methods are those its body defines: no module sets one on a class
    afterwards, and no core class holds a callable made by an extension module (the
    decoder's ``decode`` is the Python function its class defines)."""
    found = [
        f"{path.relative_to(PACKAGE)}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for what in _replacing_assignments(ast.parse(path.read_text("utf-8")))
    ]
    assert found == []
    import importlib
    import inspect

    from utf8stream import Utf8Decoder

    foreign = []
    for path in sorted((PACKAGE / "core").glob("*.py")):
        module = importlib.import_module(f"utf8stream.core.{path.stem}")
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            for name, value in vars(cls).items():
                made_by = type(value).__module__
                if made_by.startswith("utf8stream") and callable(value):
                    foreign.append(f"{cls.__qualname__}.{name}: {type(value).__name__}")
    assert foreign == []
    assert inspect.isfunction(vars(Utf8Decoder)["decode"])


def test_the_replacement_check_sees_a_method_set_from_outside() -> None:
    tree = ast.parse(
        "setattr(Utf8Decoder, 'decode', fast)\nUtf8Decoder.decode = fast\n"
        "setattr(decoder, 'x', 1)\ndecoder.x = 1\nclass C:\n    y = 1\n"
    )
    assert sorted(_replacing_assignments(tree)) == [
        "Utf8Decoder.decode",
        "setattr(Utf8Decoder, ...)",
    ]


#: The scanner: the one reader of UTF-8 bytes (its pure twin's fast path is CPython's
#: codec, inside it).
SCANNER_MODULES = {"core/scanner.py"}
#: Direct UTF-8 decodes outside the scanner, by module: how many, each for a reason other
#: than reading a stream.
NOT_STREAM_DECODES = {
    # The byte transcoder's pure twin (``_transcode.c``'s): bytes to bytes in another
    # encoding, a primitive of its own beside the scanner, on the same Table 3-7.
    "core/_native.py": 1,
    # The encoder's rewrite of the UTF-8 it has just made from text: one 4-byte sequence
    # to a CESU-8 pair, one OPTU-8 escape back to its byte.
    "core/encoder.py": 2,
    # The name of a checkpoint, stored as bytes in the database: not text of a stream.
    "apps/checkpoints.py": 1,
    # The mojibake repairer's pure pass: ``find_moji``'s trial of a run of text put back
    # into the bytes a code page read, and the repair of a stretch so put back; a few
    # bytes of text, never a stream's input; and ``find_moji_bytes`` (``_mojibytes.h``'s
    # twin), reading a stretch of bytes above 0x7F.
    "core/_mojibake_native.py": 3,
}
#: The functions of ``codecs`` (and ``str``) that decode with a codec named in a literal.
NAMED_DECODES = {"decode", "getincrementaldecoder", "getdecoder", "getreader", "iterdecode", "str"}


def _names_utf8(node: ast.expr | None) -> bool:
    import codecs

    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return False
    try:
        return codecs.lookup(node.value).name in ("utf-8", "utf-8-sig")
    except LookupError:
        return False


def utf8_decodes(tree: ast.AST) -> list[str]:
    """The direct decodes of UTF-8 bytes in a module, as ``line: what``: ``bytes.decode()``
    (UTF-8 by default) or with a UTF-8 codec name, ``codecs.utf_8_decode``, and the
    ``codecs`` functions given a UTF-8 codec name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "utf_8_decode":
            found.append((node.lineno, "utf_8_decode"))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in NAMED_DECODES:
            continue
        named = [*node.args, *(k.value for k in node.keywords if k.arg == "encoding")]
        if any(_names_utf8(arg) for arg in named) or (
            name == "decode" and isinstance(func, ast.Attribute) and not named
        ):
            found.append((node.lineno, name))
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_only_the_scanner_decodes_utf8_bytes() -> None:
    """Every other module reaches UTF-8 bytes through the scanner (or the decoder)."""
    found = {
        name: len(calls)
        for path in sorted(PACKAGE.rglob("*.py"))
        if (name := str(path.relative_to(PACKAGE))) not in SCANNER_MODULES
        if (calls := utf8_decodes(ast.parse(path.read_text("utf-8"))))
    }
    assert found == NOT_STREAM_DECODES


def test_the_utf8_decode_check_sees_each_kind_of_decode() -> None:
    source = (
        'a.decode()\nb.decode("utf-8", "replace")\nc.decode(errors="strict")\n'
        'codecs.utf_8_decode(d)\ncodecs.getincrementaldecoder("UTF8")()\nstr(e, "u8")\n'
        'f.decode("latin-1")\ng.decode(data)\nh.decode(encoding="utf_8")\n'
        "codecs.getincrementaldecoder(name)()\n"
    )
    assert utf8_decodes(ast.parse(source)) == [
        "1: decode",
        "2: decode",
        "3: decode",
        "4: utf_8_decode",
        "5: getincrementaldecoder",
        "6: str",
        "9: decode",
    ]
