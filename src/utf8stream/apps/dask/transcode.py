"""``transcode_files``: blocks transcoded into part files, joined in order."""

from __future__ import annotations

import codecs
import secrets
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, BinaryIO

import fsspec
import fsspec.core
import fsspec.implementations.local

from ...core.events import Malformed, MalformedKind, Utf8DecodeError
from ...core.variants import VARIANTS
from ..files.codecrun import CodecRun
from ..files.output import check_distinct, open_output
from ..files.results import EventCounter, TranscodeSummary, UnmappableCharacterError
from ..files.runs import SPLITTABLE, canonical, check_options
from ..files.streaming import transcode_stream
from . import sources
from .sources import (
    DEFAULT_BLOCKSIZE,
    File,
    ascii_aligned,
    block_spans,
    compute,
    delayed,
    list_files,
    parse_blocksize,
)

if TYPE_CHECKING:
    from fsspec.spec import AbstractFileSystem

__all__ = ["assemble", "transcode_files"]


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
    file: File,
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
            span = ascii_aligned(file, f, start, end) if end >= 0 else (0, -1)
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
                    f, out, run, sources.CHUNK, None if q < 0 else q - p, None
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


def assemble(
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
                while chunk := f.read(sources.CHUNK):
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
    blocksize: int | str | None = DEFAULT_BLOCKSIZE,
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
    size = parse_blocksize(blocksize)
    splittable = source_name in SPLITTABLE and bom != "detect" and _stateless_target(target_name)
    files = list_files(urlpath, storage_options)
    results = []
    every_part: list[tuple[AbstractFileSystem, list[str]]] = []
    for index, file in enumerate(files):
        dst = _output_path(out_pattern, file.path, index, len(files))
        out_fs, out_path = fsspec.core.url_to_fs(dst, **(storage_options or {}))
        if isinstance(out_fs, fsspec.implementations.local.LocalFileSystem) and isinstance(
            file.fs, fsspec.implementations.local.LocalFileSystem
        ):
            check_distinct(file.path, out_path)
        blocks = block_spans(file, size if splittable else None, 1)
        folder, name = out_path.rsplit("/", 1) if "/" in out_path else ("", out_path)
        token = secrets.token_hex(4)
        parts = [f"{folder}/.{name}.{token}.part{k}.tmp" for k in range(len(blocks))]
        pieces = [
            delayed(_transcode_block)(file, start, end, options, out_fs, part)
            for (start, end), part in zip(blocks, parts, strict=True)
        ]
        results.append(delayed(assemble)(out_fs, out_path, parts, pieces))
        every_part.append((out_fs, parts))
    try:
        summaries = compute(*results)
    except BaseException:
        # A task that raised unexpectedly, a worker that died (Dask's KilledWorker), an
        # interrupt: the joining task of some file never ran, and it is the one that
        # removes the parts.  Remove them here, so no part file is left behind.
        for out_fs, parts in every_part:
            _remove(out_fs, parts)
        raise
    return dict(zip((file.name for file in files), summaries, strict=True))
