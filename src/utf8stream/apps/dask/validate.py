"""``malformed``, ``validate_files``: each block decoded from just after an ASCII byte."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import dask.bag

from ...core.decoder import Utf8Decoder
from ...core.events import Malformed, MalformedKind
from ...core.variants import VARIANTS, get_variant
from .._linecol import LineColumnTracker
from ..files.runs import canonical
from . import sources
from .sources import (
    DEFAULT_BLOCKSIZE,
    File,
    ascii_aligned,
    block_spans,
    compute,
    delayed,
    from_delayed,
    list_files,
    parse_blocksize,
)

__all__ = ["FileSummary", "MalformedRecord", "malformed", "validate_files", "validation_reports"]


class MalformedRecord(NamedTuple):
    """One malformed unit: the file, the absolute byte offset of its first byte, its
    kind (a ``MalformedKind`` name) and its bytes; its line and column with
    ``malformed(positions=True)``."""

    path: str
    offset: int
    kind: str
    data: bytes
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class FileSummary:
    """What ``validate_files`` found in one file: its bytes, the characters they decode
    to (a malformed unit counts one, as its U+FFFD), and the malformed units by kind."""

    path: str
    bytes: int
    characters: int
    malformed: dict[str, int] = field(default_factory=dict)

    @property
    def malformed_total(self) -> int:
        return sum(self.malformed.values())

    @property
    def valid(self) -> bool:
        return not self.malformed_total


def _check_variant(variant: str) -> str:
    name = canonical(variant)
    if name not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, not {variant!r}")
    return name


@dataclass(frozen=True)
class _Decoded:
    """A block, decoded: its malformed units (the first ``limit`` of them), each with its
    line (1 = the block's first) and column from the block's start, and their counts by
    kind; its bytes and characters; its newlines and the characters after the last one
    (to carry positions into the next block)."""

    events: list[tuple[Malformed, int, int]]
    counts: dict[str, int]
    bytes: int
    characters: int
    newlines: int
    tail: int


def _decode_block(
    file: File, start: int, end: int, variant: str, limit: int | None = None
) -> _Decoded:
    """Decode a block of ``file`` with a decoder offset by its start (a task)."""
    events: list[Malformed] = []
    located: list[tuple[Malformed, int, int]] = []
    counts: dict[str, int] = {}
    with file.open() as f:
        span = ascii_aligned(file, f, start, end)
        if span is None:
            return _Decoded(located, counts, 0, 0, 0, 0)
        p, q = span
        decoder = Utf8Decoder(
            "replace", start_offset=p, on_malformed=events.append, variant=variant
        )
        tracker = LineColumnTracker(joins_pairs=get_variant(variant).join_pairs, start=p)
        characters = 0
        f.seek(p)
        left = None if q < 0 else q - p
        # The bytes from where the tracker stands to the end of what was read: it only
        # passes bytes whose units are reported (a CESU-8 decoder holds a high surrogate
        # until it sees what follows), so that each unit is located where it starts.
        window, window_offset = b"", p
        while True:
            chunk = f.read(sources.CHUNK if left is None else min(sources.CHUNK, left))
            if left is not None:
                left -= len(chunk)
            window += chunk
            characters += len(decoder.decode(chunk, final=not chunk or left == 0))
            for event in events:
                counts[event.kind.name] = counts.get(event.kind.name, 0) + 1
                if limit is None or len(located) < limit:
                    tracker.advance(window, window_offset, event.offset)
                    located.append((event, *tracker.locate(event)))
                elif event.kind is MalformedKind.UNEXPECTED_CONTINUATION:
                    tracker.advance(window, window_offset, event.offset)
                    tracker.locate(event)  # it counts as a character of its own
            events.clear()
            settled = decoder.position - decoder.buffered
            tracker.advance(window, window_offset, settled)
            window, window_offset = window[settled - window_offset :], settled
            if not chunk or left == 0:
                break
        return _Decoded(
            located,
            counts,
            decoder.position - p,
            characters,
            tracker.line - 1,
            tracker.chars_in_line,
        )


#: Where a block starts in its file: the line number, and the characters of that line
#: before the block.
_Position = tuple[int, int]


def _after(position: _Position, block: _Decoded) -> _Position:
    line, carried = position
    if block.newlines:
        return line + block.newlines, block.tail
    return line, carried + block.tail


def _records(block: _Decoded, path: str, position: _Position | None) -> list[MalformedRecord]:
    if position is None:
        return [MalformedRecord(path, e.offset, e.kind.name, e.data) for e, _, _ in block.events]
    line, carried = position
    return [
        MalformedRecord(
            path,
            e.offset,
            e.kind.name,
            e.data,
            line + row - 1,
            column + (carried if row == 1 else 0),
        )
        for e, row, column in block.events
    ]


def _decoded_blocks(
    urlpath: str | Sequence[str],
    variant: str,
    blocksize: int | str | None,
    storage_options: dict[str, Any] | None,
    limit: int | None = None,
) -> list[tuple[File, list[Any]]]:
    size = parse_blocksize(blocksize)
    name = _check_variant(variant)
    return [
        (
            file,
            [
                delayed(_decode_block)(file, start, end, name, limit)
                for start, end in block_spans(file, size, 1)
            ],
        )
        for file in list_files(urlpath, storage_options)
    ]


def malformed(
    urlpath: str | Sequence[str],
    *,
    variant: str = "utf-8",
    blocksize: int | str | None = DEFAULT_BLOCKSIZE,
    positions: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> dask.bag.Bag:
    """Every malformed unit of the files ``urlpath`` names, as a bag of
    ``MalformedRecord`` (path, absolute byte offset, kind, bytes), in file order: the
    units a ``Utf8Decoder`` of ``variant`` (the UTF-8 family) reports reading each file
    whole.  ``positions``: each record also has the unit's 1-based line and column (in
    characters, a malformed unit counting one), as ``utf8stream validate`` prints them;
    a block's positions then wait for the counts of the blocks before it (a chain of
    small tasks, while the blocks themselves are still decoded in parallel)."""
    parts = []
    for file, blocks in _decoded_blocks(urlpath, variant, blocksize, storage_options):
        position: Any = (1, 0) if positions else None
        for block in blocks:
            parts.append(delayed(_records)(block, file.name, position))
            if positions:
                position = delayed(_after)(position, block)
    return cast(dask.bag.Bag, from_delayed(parts))


def _summary(path: str, blocks: list[_Decoded]) -> FileSummary:
    counts: dict[str, int] = {}
    for block in blocks:
        for kind, n in block.counts.items():
            counts[kind] = counts.get(kind, 0) + n
    return FileSummary(
        path, sum(b.bytes for b in blocks), sum(b.characters for b in blocks), counts
    )


def validate_files(
    urlpath: str | Sequence[str],
    *,
    variant: str = "utf-8",
    blocksize: int | str | None = DEFAULT_BLOCKSIZE,
    storage_options: dict[str, Any] | None = None,
) -> list[FileSummary]:
    """Validate the files ``urlpath`` names on the current Dask scheduler (a
    ``distributed.Client`` if one is active): a ``FileSummary`` per file, in order."""
    summaries = [
        delayed(_summary)(file.name, blocks)
        for file, blocks in _decoded_blocks(urlpath, variant, blocksize, storage_options)
    ]
    return list(compute(*summaries))


def _report(
    path: str, blocks: list[_Decoded], limit: int | None
) -> tuple[FileSummary, list[MalformedRecord]]:
    records: list[MalformedRecord] = []
    position: _Position = (1, 0)
    for block in blocks:
        records += _records(block, path, position)
        position = _after(position, block)
    return _summary(path, blocks), records[:limit]


def validation_reports(
    urlpath: str | Sequence[str],
    *,
    variant: str = "utf-8",
    blocksize: int | str | None = DEFAULT_BLOCKSIZE,
    storage_options: dict[str, Any] | None = None,
    limit: int | None = None,
) -> list[Any]:
    """For ``utf8stream validate --dask``: a delayed ``(FileSummary, records)`` per file,
    the records (with positions) of its first ``limit`` malformed units; built on the
    client, so that a name that matches nothing fails here, on its own."""
    return [
        delayed(_report)(file.name, blocks, limit)
        for file, blocks in _decoded_blocks(urlpath, variant, blocksize, storage_options, limit)
    ]
