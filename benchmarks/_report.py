"""The results a benchmark prints as JSON with ``--json``: what ``benchmarks/chart.py`` reads.

With ``--json`` the human-readable tables go to stderr and one JSON document to stdout::

    {"benchmark": "bench_decoder", "command": "benchmarks/bench_decoder.py --size 16 ...",
     "python": "3.11.2", "accelerator": true, "cpus": 2, "load_average": [1.0, 1.1, 1.2],
     "rows": [{"table": "decoder", "corpus": "cjk", ..., "ratio": 2.87}, ...]}

Each row is one line of a table: ``table`` says which, the other fields are that table's
columns, and ``ratio`` is always the peer's time divided by ours (higher is better).
``benchmarks/results/`` holds such documents; ``chart.py`` draws them.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import sys
from collections.abc import Iterator
from pathlib import Path

ROWS: list[dict[str, object]] = []


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the results as one JSON document on stdout (the tables go to stderr);"
        " benchmarks/chart.py reads it",
    )


def record(table: str, **fields: object) -> None:
    """One row of ``table``; ``fields`` are JSON-serialisable (``ratio``: peer / ours)."""
    ROWS.append({"table": table, **fields})


def accelerator() -> bool:
    """Whether utf8stream runs with its C accelerator in this process."""
    pure = os.environ.get("UTF8STREAM_PURE_PYTHON", "") not in ("", "0")
    return not pure and importlib.util.find_spec("utf8stream._speedups") is not None


@contextlib.contextmanager
def reporting(enabled: bool) -> Iterator[None]:
    """Around a benchmark's ``main``: with ``enabled`` (``--json``), what it prints goes
    to stderr, and the rows it recorded are printed as JSON on stdout at the end."""
    if not enabled:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield
    script = Path(sys.argv[0])
    document = {
        "benchmark": script.stem,
        "command": " ".join(
            [f"benchmarks/{script.name}", *(a for a in sys.argv[1:] if a != "--json")]
        ),
        "python": platform.python_version(),
        "accelerator": accelerator(),
        "cpus": os.cpu_count(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "rows": ROWS,
    }
    json.dump(document, sys.stdout, indent=1, ensure_ascii=False)
    print()
