"""Draw the headline ratios of the benchmarks' JSON output into one chart (a PNG).

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python benchmarks/chart.py [JSON ...] [-o docs/benchmarks.png]

Reads the documents the benchmark scripts print with ``--json`` (by default every file in
``benchmarks/results/``) and draws four panels, each bar the peer's time divided by ours
(higher is faster; a whisker spans the runs or backends behind the bar):

* the decoder against ``codecs`` per corpus at 64 KiB chunks, outputs kept and streamed
  (``bench_decoder.py``), with what a bare copy of the chunks reaches where it was
  measured, and simdutf's speed over ``codecs`` from ``simdutf_reference.json`` (a
  published reference, not a run here);
* ``LineReceiveStream`` against ``io.TextIOWrapper`` and anyio's ``receive_until``
  (``bench_streams.py --only lines``);
* ``follow()`` over a finished log against ``for line in open()``, and UTF-16LE following
  against UTF-8 (``bench_files.py --only follow-speed``);
* ``utf8stream transcode`` against iconv or CPython's codecs (``bench_files.py --only
  transcode``).

A dashed line marks each panel's target.  Rows of other tables are ignored; a panel with
no rows says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # a file, no display
import matplotlib.pyplot as plt

HERE = Path(__file__).resolve().parent
Row = dict[str, Any]

CORPORA = ["ascii-log", "mixed", "cjk", "emoji", "dense-emoji", "web", "corrupted"]


def load(paths: Iterable[Path]) -> dict[str, list[Row]]:
    """The rows of every document, by table (an accelerated run's only: the pure-Python
    decoder is another chart)."""
    tables: dict[str, list[Row]] = defaultdict(list)
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("accelerator") is False:
            continue
        for row in document["rows"]:
            tables[row["table"]].append(row)
    return tables


def bars(
    axes: Any,
    groups: Sequence[str],
    series: dict[str, dict[str, list[float]]],
    target: float | None,
) -> list[float]:
    """One bar per series in each group: the median of its values, a whisker from the
    least to the greatest.  The x position of each group's centre."""
    width = 0.8 / max(len(series), 1)
    centres = [float(i) for i in range(len(groups))]
    for k, (label, values) in enumerate(series.items()):
        xs, heights, low, high = [], [], [], []
        for i, group in enumerate(groups):
            found = values.get(group)
            if not found:
                continue
            middle = statistics.median(found)
            xs.append(i - 0.4 + width * (k + 0.5))
            heights.append(middle)
            low.append(middle - min(found))
            high.append(max(found) - middle)
        axes.bar(xs, heights, width, yerr=[low, high], capsize=2, label=label)
    axes.axhline(1.0, color="black", linewidth=0.8)
    if target is not None:
        axes.axhline(
            target, color="grey", linestyle="--", linewidth=0.8, label=f"target {target:g}"
        )
    axes.set_xticks(centres, groups, rotation=30, ha="right", fontsize=8)
    axes.set_ylim(bottom=0)
    return centres


def decoder_panel(axes: Any, tables: dict[str, list[Row]]) -> None:
    rows = [r for r in tables["decoder"] if r["chunk"] == 65536]
    groups = [c for c in [*CORPORA, "corrupted + events"] if any(label(r) == c for r in rows)]
    series: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    copies: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        series[f"outputs {row['outputs']}"][label(row)].append(row["ratio"])
        if "copy_ratio" in row:
            copies[label(row)].append(row["copy_ratio"])
    centres = bars(axes, groups, series, 1.5)
    simdutf = {r["corpus"]: r["simdutf_mb_s"] / r["codecs_mb_s"] for r in tables["simdutf"]}
    points = [(centres[groups.index(c)], v) for c, v in simdutf.items() if c in groups]
    if points:
        axes.scatter(*zip(*points, strict=True), marker="D", color="black", zorder=3,
                     label="simdutf / codecs (published figures, not run here)")  # fmt: skip
    points = [(centres[groups.index(c)], max(v)) for c, v in copies.items() if c in groups]
    if points:
        axes.scatter(*zip(*points, strict=True), marker="_", s=200, color="red", zorder=3,
                     label="a bare copy of the chunks")  # fmt: skip
    axes.set_title("decoder: codecs / utf8stream, 64 KiB chunks", fontsize=9)


def label(row: Row) -> str:
    return "corrupted + events" if row.get("variant") == "+ all events" else str(row["corpus"])


def lines_panel(axes: Any, tables: dict[str, list[Row]]) -> None:
    series: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in tables["lines"]:
        series[f"vs {row['peer']}"][row["corpus"]].append(row["ratio"])
    groups = [c for c in CORPORA if any(c in values for values in series.values())]
    bars(axes, groups, series, None)
    axes.set_title("LineReceiveStream: peer / utf8stream (asyncio, trio)", fontsize=9)


def follow_panel(axes: Any, tables: dict[str, list[Row]]) -> None:
    speed: dict[str, list[float]] = defaultdict(list)
    wide: dict[str, list[float]] = defaultdict(list)
    for row in tables["follow-speed"]:
        if "UTF-8" in row["case"]:
            speed[f"UTF-8, {row['file_system']}"].append(row["ratio"])
    for row in tables["follow-utf16"]:
        wide["UTF-16LE"].append(row["ratio"])
    series = {"open() / follow()": speed, "UTF-16LE's speed / UTF-8's (target 0.5)": wide}
    bars(axes, [*sorted(speed), *wide], series, 1.0)
    axes.set_title("following a finished log: open() / follow()", fontsize=9)


def transcode_panel(axes: Any, tables: dict[str, list[Row]]) -> None:
    values: dict[str, list[float]] = defaultdict(list)
    for row in tables["transcode"]:
        if row["case"].startswith("start-up"):
            continue
        values[f"{row['case']};\n{row['peer']}"].append(row["ratio"])
    bars(axes, list(values), {"one worker": values}, 3.0)
    axes.set_title("utf8stream transcode of a file: peer / utf8stream", fontsize=9)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("json", nargs="*", type=Path, help="default: benchmarks/results/*.json")
    parser.add_argument(
        "-o", "--output", type=Path, default=HERE.parent / "docs" / "benchmarks.png"
    )
    args = parser.parse_args()
    tables = load(args.json or sorted((HERE / "results").glob("*.json")))
    figure, grid = plt.subplots(2, 2, figsize=(12, 9))
    panels = (decoder_panel, lines_panel, follow_panel, transcode_panel)
    for axes, panel in zip(grid.flat, panels, strict=True):
        panel(axes, tables)
        if axes.has_data():
            axes.set_ylim(0, axes.get_ylim()[1] * 1.3)  # room for the legend above the bars
            axes.legend(fontsize=7, loc="upper left", ncols=2)
        else:
            axes.text(0.5, 0.5, "no rows", ha="center", transform=axes.transAxes)
    figure.suptitle("utf8stream against its peers: the peer's time / ours (higher is faster)")
    figure.tight_layout()
    figure.savefig(args.output, dpi=80)
    print(args.output)


if __name__ == "__main__":
    main()
