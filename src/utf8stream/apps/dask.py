"""Block-parallel reading on Dask, from any fsspec filesystem: ``utf8stream.dask``.

Theory of operation
-------------------
``dask.bag.read_text`` cuts a file into blocks at the UTF-8 bytes of its delimiter and
decodes each block on its own, whatever the encoding: UTF-16 comes out wrong, and a bad
byte is reported at a block-relative position with no file name.  Here each block is read
by the library's own line engine (``LineEngine``, what ``LineReceiveStream`` uses), started
at a *true* line start, so the lines of a file are exactly those of reading it
sequentially, for every block size:

* Files are listed and their first bytes read once, on the client, through fsspec: the
  byte-order mark fixes the byte order (``utf-16``, ``utf-32``) and so the bytes of the
  newlines; each task gets them.
* Block ``k`` covers the bytes ``[start, end)`` (``start`` a multiple of the code unit, so
  that UTF-16/32 newlines are found at the offsets the sequential reader finds them).  It
  owns the lines that *start* in it.  A line starts at offset 0 and right after a newline
  (``\\n``; ``\\r\\n``; ``\\r`` not followed by ``\\n``; or the fixed ``newline``), at a
  code-unit offset from the file start.  The task finds the first line start ``p >= start``
  and the first line start ``q >= end`` by that one rule, and reads ``[p, q)``: the next
  block starts exactly where it stops, a ``\\r\\n`` cut by the block edge belongs to one
  block, and a line longer than a block is read whole (past ``end``) by the block where it
  starts, while the blocks it covers own nothing.
* Everything between, malformed bytes, ``max_line_bytes`` and the overlong-line policies,
  depends only on the bytes from the line start on, so the engine gives what the
  sequential reader gives.  A fixed ``newline`` that can overlap itself (``"aa"``) is
  refused with blocks: where its lines start depends on everything before.
* A compressed file (fsspec's ``compression="infer"``, by extension) is one block.

Malformed units (``malformed``, ``validate_files``) and transcoding (``transcode_files``)
need less than a line start: in the UTF-8 family a decoder holds nothing after an ASCII
byte, so blocks there start just after one (found the same way at both ends), and each
block's decoder, offset by its start, reports exactly the sequential decoder's units.

Memory per task: one block's lines, plus the line that crosses its end (bounded by
``max_line_bytes`` plus a read chunk).
"""

from __future__ import annotations

import codecs
import itertools
import os
import re
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, cast

import dask
import dask.bag
import fsspec
import fsspec.core
import fsspec.implementations.local
import fsspec.utils
from dask.utils import parse_bytes

from ..core.decoder import Utf8Decoder
from ..core.events import Malformed, MalformedKind, Utf8DecodeError
from ..core.linecodec import LineBatch, LineDecoder, LineEngine, LineItem, line_decoder
from ..core.lineoptions import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG, check_line_options
from ..core.variants import VARIANTS, get_variant
from ._linecol import LineColumnTracker
from ._sniff import AUTO, SNIFF_BYTES, sniff_encoding
from .files.codecrun import CodecRun
from .files.output import check_distinct, open_output
from .files.results import EventCounter, TranscodeSummary, UnmappableCharacterError
from .files.runs import SPLITTABLE, canonical, check_options
from .files.streaming import transcode_stream

if TYPE_CHECKING:
    from fsspec.spec import AbstractFileSystem

__all__ = [
    "FileSummary",
    "MalformedRecord",
    "malformed",
    "read_text",
    "transcode_files",
    "validate_files",
]

# Dask's own annotations are partial: its entry points are used through ``Any``.  Tasks
# are not pure (each call its own keys): a file may change between two calls.
_delayed: Any = cast(Any, dask).delayed
_compute: Any = cast(Any, dask).compute
_from_delayed: Any = cast(Any, dask.bag).from_delayed

#: What a task reads at once while it looks for a line start or copies a block.
_CHUNK = 1 << 20
_DEFAULT_BLOCKSIZE = "128 MiB"


# -- files and blocks -------------------------------------------------------------------


@dataclass(frozen=True)
class _File:
    """One input, as the client found it: what a task needs to open and cut it.

    ``name``: how records and messages name it (the name the caller gave, for a name
    that is not a pattern; with the URL's protocol, for a remote file)."""

    fs: AbstractFileSystem
    path: str
    name: str
    compression: str | None
    size: int  # -1 for a compressed file (read whole, by one task)
    head: bytes  # its first bytes (decompressed): a byte-order mark tells the byte order
    #: With ``encoding="auto"``: the encoding its first ``SNIFF_BYTES`` tell.
    detected: str | None = None

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        of = fsspec.core.OpenFile(self.fs, self.path, mode="rb", compression=self.compression)
        with of as f:
            yield cast(BinaryIO, f)


#: What makes a name a pattern for fsspec's glob.
_GLOB = re.compile(r"[*?\[]")


def _is_local(fs: AbstractFileSystem) -> bool:
    return isinstance(fs, fsspec.implementations.local.LocalFileSystem)


def _names(urlpath: str | Sequence[str], fs: AbstractFileSystem, paths: list[str]) -> list[str]:
    if isinstance(urlpath, str) and len(paths) == 1 and not _GLOB.search(urlpath):
        return [urlpath]
    if not _is_local(fs):
        return [fs.unstrip_protocol(path) for path in paths]
    patterns = [urlpath] if isinstance(urlpath, str) else list(urlpath)
    relative = not any(os.path.isabs(p) or "://" in p for p in patterns)
    return [os.path.relpath(path) if relative else path for path in paths]


def _list_files(
    urlpath: str | Sequence[str], storage_options: dict[str, Any] | None, sniff: bool = False
) -> list[_File]:
    """Every file ``urlpath`` names (globs expanded), with its size and first bytes, and
    with ``sniff`` the encoding they tell (``encoding="auto"``)."""
    fs, _, paths = fsspec.core.get_fs_token_paths(
        urlpath, mode="rb", storage_options=storage_options or {}
    )
    if not paths:
        raise FileNotFoundError(f"no file matches {urlpath!r}")
    files = []
    for path, name in zip(paths, _names(urlpath, fs, paths), strict=True):
        compression = fsspec.utils.infer_compression(path)
        of = fsspec.core.OpenFile(fs, path, mode="rb", compression=compression)
        with of as f:
            head = f.read(SNIFF_BYTES + 1 if sniff else 4)
        size = -1 if compression else int(fs.size(path))
        detected = sniff_encoding(head, len(head) <= SNIFF_BYTES) if sniff else None
        files.append(_File(fs, path, name, compression, size, head[:4], detected))
    return files


def _blocks(
    file: _File, blocksize: int | None, unit: int, prelude: int = 0
) -> list[tuple[int, int]]:
    """``[start, end)`` of each block, starts at code-unit offsets (one for a compressed
    file, or with no block size); ``prelude``: the bytes the first block holds at least."""
    size = file.size
    if size < 0 or blocksize is None or size <= blocksize:
        return [(0, max(size, 0) if size >= 0 else -1)]
    # The first block holds at least the byte-order mark's bytes: the line engine cuts
    # no line before it knows the byte order.
    starts = sorted({max(k - k % unit, prelude) for k in range(blocksize, size, blocksize)})
    return list(itertools.pairwise([0, *(s for s in starts if s < size), size]))


def _parse_blocksize(blocksize: int | str | None) -> int | None:
    if blocksize is None:
        return None
    size = parse_bytes(blocksize) if isinstance(blocksize, str) else blocksize
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"blocksize must be a positive number of bytes, not {blocksize!r}")
    return size


def _read_at(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    return f.read(size)


# -- line starts ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Newlines:
    """The bytes of a file's newlines, and how to find them.

    ``nl``: a fixed newline's bytes, or ``b""`` for universal newlines (``cr``, ``lf``).
    Found only at multiples of ``unit`` from the file start, as the line engine finds them.
    """

    unit: int
    cr: bytes
    lf: bytes
    nl: bytes

    @classmethod
    def of(cls, decoder: LineDecoder, newline: str | None) -> _Newlines:
        """For a decoder that has begun (its byte order is known)."""
        unit = decoder.unit
        if newline is None:
            return cls(unit, decoder.encode_newline("\r"), decoder.encode_newline("\n"), b"")
        return cls(unit, b"", b"", decoder.encode_newline(newline))

    def overlaps_itself(self) -> bool:
        """Whether two of a fixed newline's matches can overlap (then which is a newline
        depends on every byte before)."""
        nl, unit = self.nl, self.unit
        return any(nl[k:] == nl[: len(nl) - k] for k in range(unit, len(nl), unit))

    def line_start(self, f: BinaryIO, pos: int, stop: int, size: int) -> int | None:
        """The first line start at or after ``pos`` (a code-unit offset) whose newline
        starts before ``stop``, or ``None``."""
        if pos <= 0:
            return 0
        unit = self.unit
        if not self.nl:
            before = _read_at(f, pos - unit, unit)
            if before == self.lf:
                return pos
            if before == self.cr:
                if pos >= size:
                    return pos
                following = _read_at(f, pos, unit)
                if len(following) < unit:
                    return None  # a \r and a cut code unit end the file: one line's content
                # A \r before a \n is not a line end: the line starts after the \n.
                return pos + unit if following == self.lf else pos
            return self._scan(f, pos, stop, size)
        width = len(self.nl)
        if pos >= width and _read_at(f, pos - width, width) == self.nl:
            return pos
        return self._scan(f, max(0, pos - width + unit), stop, size)

    def _scan(self, f: BinaryIO, begin: int, stop: int, size: int) -> int | None:
        """The line start after the first newline at a code-unit offset in
        ``[begin, stop)``."""
        unit = self.unit
        pattern = self.nl or None
        keep = len(self.nl) - 1 if pattern else unit  # a match or a \r\n cut by a read
        base, buf = begin, _read_at(f, begin, _CHUNK)
        search = 0
        while True:
            at_end = base + len(buf) >= size
            found = self._find(buf, search, base)
            if found is not None:
                j, width = found
                if base + j >= stop:
                    return None
                after = j + width
                if pattern is None and self.cr == buf[j : j + unit]:
                    rest = len(buf) - after
                    if rest < unit and not at_end:
                        found = None  # is it \r\n? read on
                    elif 0 < rest < unit:
                        # A \r and a cut code unit end the file: the line engine keeps the
                        # \r held as a possible \r\n, and it ends up in the content.
                        return None
                    elif buf[after : after + unit] == self.lf:
                        after += unit
                if found is not None:
                    return base + after
            if at_end or base + len(buf) >= stop + keep + unit:
                return None
            chunk = f.read(_CHUNK)
            if not chunk:
                return None
            start = max(0, len(buf) - keep - unit)
            start -= (base + start) % unit
            base, buf = base + start, buf[start:] + chunk
            search = 0

    def _find(self, buf: bytes, search: int, base: int) -> tuple[int, int] | None:
        """The first newline at a code-unit offset (from the file start) in ``buf``:
        its index and width (a \\r alone for universal newlines)."""
        unit = self.unit
        if self.nl:
            j = buf.find(self.nl, search)
            while j >= 0 and (base + j) % unit:
                j = buf.find(self.nl, j + 1)
            return None if j < 0 else (j, len(self.nl))
        while True:
            cr, lf = buf.find(self.cr, search), buf.find(self.lf, search)
            hits = [j for j in (cr, lf) if j >= 0]
            if not hits:
                return None
            j = min(hits)
            if (base + j) % unit:
                search = j + 1
                continue
            return j, unit


# -- read_text --------------------------------------------------------------------------


@dataclass(frozen=True)
class _LineOptions:
    encoding: str
    errors: str
    newline: str | None
    keepends: bool
    max_line_bytes: int | None
    on_overlong: str

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

    def newlines(self, head: bytes) -> _Newlines:
        decoder = line_decoder(self.encoding, self.errors)
        decoder.begin(head)
        return _Newlines.of(decoder, self.newline)


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


def _read_lines(
    file: _File, start: int, end: int, options: _LineOptions, newlines: _Newlines
) -> list[str]:
    """The lines that start in block ``[start, end)`` of ``file`` (a task)."""
    out: list[str] = []
    with file.open() as f:
        if start == 0:
            p = 0
        else:
            found = newlines.line_start(f, start, end, file.size)
            if found is None or found >= min(end, file.size):
                return out  # inside a line that started in an earlier block
            p = found
        if end < 0 or end >= file.size:
            q = None  # to the end
        else:
            q = newlines.line_start(f, end, file.size, file.size)
        engine = options.engine(p, file.head if p else None)
        f.seek(p)
        left = None if q is None else q - p
        while left is None or left > 0:
            chunk = f.read(_CHUNK if left is None else min(_CHUNK, left))
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
    blocksize: int | str | None = _DEFAULT_BLOCKSIZE,
    errors: str = "replace",
    newline: str | None = None,
    keepends: bool = False,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    on_overlong: str = DEFAULT_ON_OVERLONG,
    include_path: bool = False,
    storage_options: dict[str, Any] | None = None,
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
    """
    check_line_options(newline, max_line_bytes, on_overlong)
    auto = encoding == AUTO
    chosen = _LineOptions(encoding, errors, newline, bool(keepends), max_line_bytes, on_overlong)
    if not auto:
        _probe(chosen, encoding)  # an unknown or refused encoding fails here
    size = _parse_blocksize(blocksize)
    parts = []
    for file in _list_files(urlpath, storage_options, sniff=auto):
        options = chosen
        if file.detected is not None:
            # Each file's own, as the follower decides it: told once, here on the client.
            options = replace(chosen, encoding=file.detected)
        probe = _probe(options, file.name)
        newlines = options.newlines(file.head)
        # A file shorter than a byte-order mark is one block: the line engine reads it as
        # one last line, whatever newlines it holds, and so must every block size.
        short = 0 <= file.size < probe.prelude
        blocks = _blocks(file, None if short else size, newlines.unit, probe.prelude)
        if newlines.nl and len(blocks) > 1 and newlines.overlaps_itself():
            raise ValueError(
                f"newline {newline!r} can overlap itself, so where a line starts depends on"
                " everything before it: read such files with blocksize=None"
            )
        for start, end in blocks:
            part = _delayed(_read_lines)(file, start, end, options, newlines)
            if include_path:
                part = _delayed(_with_path)(part, file.name)
            parts.append(part)
    return cast(dask.bag.Bag, _from_delayed(parts))


def _probe(options: _LineOptions, name: str) -> Any:
    """The line decoder ``options`` make (``ValueError`` for an unknown or refused
    encoding), checked against ``keepends``."""
    probe = line_decoder(options.encoding, options.errors)
    if options.keepends and probe.encoding != "utf-8":
        raise ValueError(f"{name}: keepends is for UTF-8 only, not {options.encoding}")
    return probe


# -- malformed units --------------------------------------------------------------------


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


def _after_ascii(f: BinaryIO, pos: int, stop: int) -> int | None:
    """The first offset at or after ``pos`` that follows an ASCII byte (where a UTF-8
    family decoder holds nothing), looking at bytes before ``stop``; ``None`` if none."""
    if pos <= 0:
        return 0
    offset = pos - 1
    while offset < stop:
        chunk = _read_at(f, offset, min(_CHUNK, stop - offset))
        if not chunk:
            return None
        for k, byte in enumerate(chunk):
            if byte < 0x80:
                return offset + k + 1
        offset += len(chunk)
    return None


def _ascii_aligned(file: _File, f: BinaryIO, start: int, end: int) -> tuple[int, int] | None:
    """The bytes a UTF-8 family block really covers: from just after an ASCII byte to
    just after one, by the same rule at both ends (``None``: it covers none)."""
    p = _after_ascii(f, start, end)
    if p is None:
        return None
    if end >= file.size or end < 0:
        return p, -1
    q = _after_ascii(f, end, file.size)
    return p, -1 if q is None else q


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
    file: _File, start: int, end: int, variant: str, limit: int | None = None
) -> _Decoded:
    """Decode a block of ``file`` with a decoder offset by its start (a task)."""
    events: list[Malformed] = []
    located: list[tuple[Malformed, int, int]] = []
    counts: dict[str, int] = {}
    with file.open() as f:
        span = _ascii_aligned(file, f, start, end)
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
            chunk = f.read(_CHUNK if left is None else min(_CHUNK, left))
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
) -> list[tuple[_File, list[Any]]]:
    size = _parse_blocksize(blocksize)
    name = _check_variant(variant)
    return [
        (
            file,
            [
                _delayed(_decode_block)(file, start, end, name, limit)
                for start, end in _blocks(file, size, 1)
            ],
        )
        for file in _list_files(urlpath, storage_options)
    ]


def malformed(
    urlpath: str | Sequence[str],
    *,
    variant: str = "utf-8",
    blocksize: int | str | None = _DEFAULT_BLOCKSIZE,
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
            parts.append(_delayed(_records)(block, file.name, position))
            if positions:
                position = _delayed(_after)(position, block)
    return cast(dask.bag.Bag, _from_delayed(parts))


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
    blocksize: int | str | None = _DEFAULT_BLOCKSIZE,
    storage_options: dict[str, Any] | None = None,
) -> list[FileSummary]:
    """Validate the files ``urlpath`` names on the current Dask scheduler (a
    ``distributed.Client`` if one is active): a ``FileSummary`` per file, in order."""
    summaries = [
        _delayed(_summary)(file.name, blocks)
        for file, blocks in _decoded_blocks(urlpath, variant, blocksize, storage_options)
    ]
    return list(_compute(*summaries))


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
    blocksize: int | str | None = _DEFAULT_BLOCKSIZE,
    storage_options: dict[str, Any] | None = None,
    limit: int | None = None,
) -> list[Any]:
    """For ``utf8stream validate --dask``: a delayed ``(FileSummary, records)`` per file,
    the records (with positions) of its first ``limit`` malformed units; built on the
    client, so that a name that matches nothing fails here, on its own."""
    return [
        _delayed(_report)(file.name, blocks, limit)
        for file, blocks in _decoded_blocks(urlpath, variant, blocksize, storage_options, limit)
    ]


# -- transcoding ------------------------------------------------------------------------


@dataclass(frozen=True)
class _TranscodeOptions:
    source: str
    target: str
    errors: str
    bom: str
    unmappable: str


@dataclass(frozen=True)
class _Piece:
    """What a task made of a block: its part file (``None``: the block covered no
    bytes) and counts, or the error that stopped it."""

    part: str | None
    bytes_in: int = 0
    bytes_out: int = 0
    characters: int = 0
    counts: dict[MalformedKind, int] = field(default_factory=dict)
    unmappable: int = 0
    error: Utf8DecodeError | UnmappableCharacterError | OSError | None = None


def _stateless_target(target: str) -> bool:
    """Whether the target's encoder writes the same bytes for the same text wherever it
    starts (not so for ``utf-16``, which writes a byte-order mark first)."""
    if target in VARIANTS:
        return True
    encoder = codecs.getincrementalencoder(target)()
    return bool(encoder.encode("a") == encoder.encode("a"))


def _transcode_block(
    file: _File,
    start: int,
    end: int,
    options: _TranscodeOptions,
    out_fs: AbstractFileSystem,
    part: str,
) -> _Piece:
    """Transcode a block into the part file ``part`` (a task).  Errors are returned, not
    raised: the task that joins the parts removes them all, then raises the first."""
    try:
        with file.open() as f:
            span = _ascii_aligned(file, f, start, end) if end >= 0 else (0, -1)
            if span is None:
                return _Piece(None)
            p, q = span
            counter = EventCounter(None)
            bom = options.bom if p == 0 else "keep"  # only the start of the stream is special
            run = CodecRun(
                options.source, options.target, options.errors, bom, options.unmappable, counter, p
            )
            f.seek(p)
            with out_fs.open(part, "wb") as out:
                bytes_in, bytes_out = transcode_stream(
                    f, out, run, _CHUNK, None if q < 0 else q - p, None
                )
    except Utf8DecodeError as exc:
        error = Utf8DecodeError(
            Malformed(exc.offset + p, exc.malformed.data, exc.kind), exc.partial
        )
        return _Piece(part, error=error)
    except UnmappableCharacterError as exc:
        return _Piece(part, characters=run.transcoder.characters, error=exc)
    except OSError as exc:
        return _Piece(part, error=exc)
    return _Piece(
        part,
        bytes_in,
        bytes_out,
        run.transcoder.characters,
        run.counts(),
        run.unmappable,
    )


def _remove(fs: AbstractFileSystem, paths: list[str]) -> None:
    for path in paths:
        with suppress(FileNotFoundError):
            fs.rm_file(path)


def _assemble(
    out_fs: AbstractFileSystem, dst: str, parts: list[str], pieces: list[_Piece]
) -> TranscodeSummary:
    """Join the parts in order into ``dst`` (a task): written beside it and renamed into
    place only when every piece succeeded; the parts are removed in any case."""
    try:
        characters = 0
        for piece in pieces:
            if isinstance(piece.error, UnmappableCharacterError):
                piece.error.index += characters  # its index was within the piece
                raise piece.error
            if isinstance(piece.error, OSError) and piece.error.filename in parts:
                piece.error.filename = dst  # the caller named the output, not our part file
            if piece.error is not None:
                raise piece.error
            characters += piece.characters
        if isinstance(out_fs, fsspec.implementations.local.LocalFileSystem):
            with open_output(dst) as output:
                assert output is not None
                _copy_parts(out_fs, pieces, output.file)
        else:
            folder, name = dst.rsplit("/", 1) if "/" in dst else ("", dst)
            temporary = f"{folder}/.{name}.{secrets.token_hex(4)}.tmp".lstrip("/")
            try:
                with out_fs.open(temporary, "wb") as out:
                    _copy_parts(out_fs, pieces, out)
                out_fs.mv(temporary, dst)
            except BaseException:
                _remove(out_fs, [temporary])
                raise
    finally:
        _remove(out_fs, parts)
    counts: dict[MalformedKind, int] = {}
    for piece in pieces:
        for kind, n in piece.counts.items():
            counts[kind] = counts.get(kind, 0) + n
    return TranscodeSummary(
        sum(p.bytes_in for p in pieces),
        sum(p.bytes_out for p in pieces),
        characters,
        MappingProxyType(counts),
        pieces=len(pieces),
        unmappable=sum(p.unmappable for p in pieces),
    )


def _copy_parts(fs: AbstractFileSystem, pieces: list[_Piece], out: BinaryIO) -> None:
    for piece in pieces:
        if piece.part is not None:
            with fs.open(piece.part, "rb") as f:
                while chunk := f.read(_CHUNK):
                    out.write(chunk)


def _output_path(pattern: str, path: str, index: int, count: int) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    fields = {"name": name, "stem": name.rsplit(".", 1)[0] if "." in name else name}
    out = pattern.format(index=index, **fields)
    if count > 1 and out == pattern:
        raise ValueError(
            "out_pattern must name each output ({name}, {stem} or {index}) when several"
            " files are transcoded"
        )
    return out


def transcode_files(
    urlpath: str | Sequence[str],
    out_pattern: str,
    *,
    source: str = "utf-8",
    target: str = "utf-8",
    errors: str = "replace",
    bom: str = "keep",
    unmappable: str = "strict",
    blocksize: int | str | None = _DEFAULT_BLOCKSIZE,
    storage_options: dict[str, Any] | None = None,
) -> dict[str, TranscodeSummary]:
    """Transcode each file ``urlpath`` names into its own output, on the current Dask
    scheduler: a ``TranscodeSummary`` per input, by its name, in order.

    ``out_pattern`` names each output: ``{name}`` (the input's file name), ``{stem}``
    (without its last extension) and ``{index}`` are replaced, e.g.
    ``"s3://bucket/utf8/{stem}.txt"``.  The options are ``transcode_file``'s, and so is
    each output, byte for byte.  A UTF-8 family source is cut into blocks (just after an
    ASCII byte, where its decoder holds nothing) transcoded in parallel into part files
    beside the output, then joined in order; other sources, ``bom="detect"``, a target
    that writes a byte-order mark (``utf-16``) and compressed files are one block each.
    An output is written beside its destination and renamed into place only when its
    file was transcoded without error; the part files are removed either way: by the
    task that joins them, or, when the computation fails before that task ran (a worker
    killed, an unexpected error, an interrupt), here before the error is raised again.  A
    task still running on a cluster after the computation was given up may write its part
    after that removal.  ``storage_options`` serve the inputs and the outputs.
    """
    source_name, target_name = canonical(source), canonical(target)
    check_options(source_name, target_name, errors, bom, unmappable)
    options = _TranscodeOptions(source_name, target_name, errors, bom, unmappable)
    size = _parse_blocksize(blocksize)
    splittable = source_name in SPLITTABLE and bom != "detect" and _stateless_target(target_name)
    files = _list_files(urlpath, storage_options)
    results = []
    every_part: list[tuple[AbstractFileSystem, list[str]]] = []
    for index, file in enumerate(files):
        dst = _output_path(out_pattern, file.path, index, len(files))
        out_fs, out_path = fsspec.core.url_to_fs(dst, **(storage_options or {}))
        if isinstance(out_fs, fsspec.implementations.local.LocalFileSystem) and isinstance(
            file.fs, fsspec.implementations.local.LocalFileSystem
        ):
            check_distinct(file.path, out_path)
        blocks = _blocks(file, size if splittable else None, 1)
        folder, name = out_path.rsplit("/", 1) if "/" in out_path else ("", out_path)
        token = secrets.token_hex(4)
        parts = [f"{folder}/.{name}.{token}.part{k}.tmp" for k in range(len(blocks))]
        pieces = [
            _delayed(_transcode_block)(file, start, end, options, out_fs, part)
            for (start, end), part in zip(blocks, parts, strict=True)
        ]
        results.append(_delayed(_assemble)(out_fs, out_path, parts, pieces))
        every_part.append((out_fs, parts))
    try:
        summaries = _compute(*results)
    except BaseException:
        # A task that raised unexpectedly, a worker that died (Dask's KilledWorker), an
        # interrupt: the joining task of some file never ran, and it is the one that
        # removes the parts.  Remove them here, so no part file is left behind.
        for out_fs, parts in every_part:
            _remove(out_fs, parts)
        raise
    return dict(zip((file.name for file in files), summaries, strict=True))
