"""``read_text``: the lines of each block, from a true line start."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import dask.bag

from ...core.autodecode import AUTO
from ...core.linecodec import LineBatch, LineEngine, LineItem, line_decoder
from ...core.lineoptions import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG, check_line_options
from ...core.transformed import LineTransform, as_transform, fresh_copy, fresh_from
from . import sources
from .linestarts import LineStarts
from .sources import (
    DEFAULT_BLOCKSIZE,
    File,
    block_spans,
    delayed,
    from_delayed,
    list_files,
    parse_blocksize,
)

if TYPE_CHECKING:
    from ...core.transform import TransformCheckpoint
    from ...core.transformed import Transforms

__all__ = ["read_text"]


@dataclass(frozen=True)
class _LineOptions:
    encoding: str
    errors: str
    newline: str | None
    keepends: bool
    max_line_bytes: int | None
    on_overlong: str
    #: What each line goes through, as plain data: each task builds a fresh copy.
    transform: TransformCheckpoint | None = None

    def engine(self, offset: int, head: bytes | None) -> LineEngine:
        """A line engine whose stream starts at ``offset`` (a line start) of a file whose
        first bytes are ``head`` (``None``: the engine reads them itself)."""
        decoder = line_decoder(self.encoding, self.errors, start_offset=offset)
        return LineEngine(
            decoder,
            newline=self.newline,
            keepends=self.keepends,
            max_line_bytes=self.max_line_bytes,
            on_overlong=self.on_overlong,
            offset=offset,
            head=head,
        )

    def line_starts(self, head: bytes) -> LineStarts:
        """The line starts of a file whose first bytes are ``head``."""
        return LineStarts(self.engine(0, head))


def _overlaps_itself(starts: LineStarts) -> bool:
    """Whether two matches of a fixed newline can overlap (then which is a newline
    depends on every byte before)."""
    engine = starts.engine
    if engine.newline is None:
        return False
    nl, unit = engine.decoder.encode_newline(engine.newline), starts.unit
    return any(nl[k:] == nl[: len(nl) - k] for k in range(unit, len(nl), unit))


def _texts(items: list[LineBatch | LineItem], out: list[str]) -> None:
    """The lines of the engine's ``items``, appended to ``out``; a ``LineTooLong``
    (``on_overlong="raise"``) is raised, as the sequential reader raises it."""
    for item in items:
        if isinstance(item, LineBatch):
            out += item.texts
        elif isinstance(item.line, str):
            out.append(item.line)
        elif item.line is not None:
            raise item.line


def _read_lines(file: File, start: int, end: int, options: _LineOptions) -> list[str]:
    """The lines that start in block ``[start, end)`` of ``file`` (a task), through the
    transforms, if any."""
    lines = _block_lines(file, start, end, options)
    if options.transform is not None:
        transform = fresh_from(options.transform)
        LineTransform(transform, options.newline, options.keepends).lines(lines)
    return lines


def _block_lines(file: File, start: int, end: int, options: _LineOptions) -> list[str]:
    """The lines that start in block ``[start, end)`` of ``file``."""
    out: list[str] = []
    starts = options.line_starts(file.head)
    with file.open() as f:
        if start == 0:
            p = 0
        else:
            found = starts.find(f, start, end, file.size)
            if found is None or found >= min(end, file.size):
                return out  # inside a line that started in an earlier block
            p = found
        # To the end, or to the first line start at or after the block's end.
        q = None if end < 0 or end >= file.size else starts.find(f, end, file.size, file.size)
        engine = options.engine(p, file.head if p else None)
        f.seek(p)
        left = None if q is None else q - p
        while left is None or left > 0:
            chunk = f.read(sources.CHUNK if left is None else min(sources.CHUNK, left))
            if not chunk:
                break
            if left is not None:
                left -= len(chunk)
            _texts(engine.feed(chunk), out)
        # The engine drops a last line of at most a byte-order mark's size and no text
        # at the start of its stream (a mark alone is no line).  That is only right at
        # the very end of a file that starts there: a block that ends before the end
        # (its last line cut at a newline here, not at the end) or starts later keeps it.
        held = bool(engine.partial)
        items = engine.finish()
        _texts(items, out)
        if held and not items and (p > 0 or q is not None):
            out.append("")
    return out


def _with_path(lines: list[str], path: str) -> list[tuple[str, str]]:
    return [(line, path) for line in lines]


def read_text(
    urlpath: str | Sequence[str],
    *,
    encoding: str = "utf-8",
    blocksize: int | str | None = DEFAULT_BLOCKSIZE,
    errors: str = "replace",
    newline: str | None = None,
    keepends: bool = False,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    on_overlong: str = DEFAULT_ON_OVERLONG,
    include_path: bool = False,
    storage_options: dict[str, Any] | None = None,
    transforms: Transforms = None,
) -> dask.bag.Bag:
    """The lines of the files ``urlpath`` names (a path, a glob, an fsspec URL such as
    ``s3://bucket/logs/*.log``, or a list of them), as a ``dask.bag.Bag``.

    The lines are exactly those ``LineReceiveStream`` reads from each file (with the same
    ``encoding``, ``errors``, ``newline``, ``keepends``, ``max_line_bytes`` and
    ``on_overlong``; ``encoding="auto"``: each file's own, told on the client from its first
    64 KiB as ``follow(encoding="auto")`` tells it — a byte-order mark, UTF-16's zero
    bytes, valid UTF-8, else cp1252), for every ``blocksize`` (bytes, or a string such as
    ``"64 MiB"``; ``None``: one partition per file).  A compressed file (by its extension) is one
    partition.  ``include_path``: items are ``(line, name)``.  ``storage_options`` go to
    the fsspec filesystem (credentials, endpoints).  Where the sequential reader raises
    (``LineTooLong`` under ``on_overlong="raise"``, ``UnicodeDecodeError`` under
    ``errors="strict"``), computing the bag raises too: the error of the first task to
    fail, which need not be the first in the file.

    A task holds one block's lines, and of the line that crosses its end at most
    ``max_line_bytes`` bytes and a read chunk (unless ``max_line_bytes=None``).

    ``transforms``: a ``TextTransform`` or a sequence of them (``utf8stream.transforms``)
    done on each line, as ``LineReceiveStream``'s (the line's text whole, its newline kept
    out): the lines are the same for every ``blocksize``.  Each task gets a fresh copy,
    built on the worker from the transforms' checkpoint: their ``on_change`` is not
    called (events are made where the tasks run).
    """
    check_line_options(newline, max_line_bytes, on_overlong)
    auto = encoding == AUTO
    transform = as_transform(transforms)
    chosen = _LineOptions(
        encoding,
        errors,
        newline,
        bool(keepends),
        max_line_bytes,
        on_overlong,
        None if transform is None else fresh_copy(transform).checkpoint(),
    )
    if not auto:
        _probe(chosen, encoding)  # an unknown or refused encoding fails here
    size = parse_blocksize(blocksize)
    parts = []
    for file in list_files(urlpath, storage_options, sniff=auto):
        options = chosen
        if file.detected is not None:
            # Each file's own, as the follower decides it: told once, here on the client.
            options = replace(chosen, encoding=file.detected)
        probe = _probe(options, file.name)
        starts = options.line_starts(file.head)
        # A file shorter than a byte-order mark is one block: the line engine reads it as
        # one last line, whatever newlines it holds, and so must every block size.
        short = 0 <= file.size < probe.prelude
        blocks = block_spans(file, None if short else size, starts.unit, probe.prelude)
        if len(blocks) > 1 and _overlaps_itself(starts):
            raise ValueError(
                f"newline {newline!r} can overlap itself, so where a line starts depends on"
                " everything before it: read such files with blocksize=None"
            )
        for start, end in blocks:
            part = delayed(_read_lines)(file, start, end, options)
            if include_path:
                part = delayed(_with_path)(part, file.name)
            parts.append(part)
    return cast(dask.bag.Bag, from_delayed(parts))


def _probe(options: _LineOptions, name: str) -> Any:
    """The line decoder ``options`` make (``ValueError`` for an unknown or refused
    encoding), checked against ``keepends``."""
    probe = line_decoder(options.encoding, options.errors)
    if options.keepends and probe.encoding != "utf-8":
        raise ValueError(f"{name}: keepends is for UTF-8 only, not {options.encoding}")
    return probe
