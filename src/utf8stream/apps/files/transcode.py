"""``transcode_file`` and ``atranscode_file``."""

from __future__ import annotations

import os
import sys
from types import MappingProxyType

from .output import Output, check_distinct, name_output, open_binary, open_output
from .parallel import transcode_parallel, workers_for
from .results import EventCounter, OnMalformed, Progress, TranscodeSummary
from .runs import SPLITTABLE, canonical, check_options, is_direct, new_run
from .streaming import transcode_stream

__all__ = ["atranscode_file", "transcode_file"]


def transcode_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    source: str = "utf-8",
    target: str = "utf-8",
    errors: str = "replace",
    bom: str = "keep",
    unmappable: str = "strict",
    chunk_size: int = 1048576,
    workers: int = 1,
    progress: Progress | None = None,
    on_malformed: OnMalformed | None = None,
) -> TranscodeSummary:
    """Transcode the file ``src`` into ``dst`` (``"-"``: stdin/stdout), lazily.

    ``errors`` is the policy for malformed input; ``unmappable`` the one for characters
    the target cannot represent (``UNMAPPABLE_POLICIES``; the default ``strict`` raises
    ``UnmappableCharacterError`` with the character's position).  Both are tried on a
    tiny probe first: an unusable combination raises ``ValueError`` or ``LookupError``
    (also a codec that is not a text encoding) before any file is touched.

    ``dst`` is written to a temporary file in its directory and renamed into place only
    on success, keeping the permission bits of an existing ``dst``; after any exception
    ``dst`` is as it was.  ``SameFileError`` if ``dst`` is ``src``.

    ``progress(bytes_done, bytes_total)`` is called as the work advances (``bytes_total``
    is 0 when the size is unknown).  ``on_malformed`` receives every malformed unit, with
    absolute offsets, in stream order.  With ``workers > 1`` a UTF-8-family regular file
    is transcoded in parallel processes, at most ``workers``, where that is faster than
    one worker on this machine (``parallel.plan``: never for UTF-8 into UTF-16/32 or the
    repair, which one worker does at the speed of writing its output); the output and
    the events are exactly those of the sequential run.  A worker that fails or dies
    stops the run (``WorkerError``, or the worker's ``OSError``) and no worker outlives
    it.
    """
    source_name, target_name = canonical(source), canonical(target)
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    if workers < 1:
        raise ValueError("workers must be at least 1")
    check_options(source_name, target_name, errors, bom, unmappable)
    src_path = os.fspath(src)
    dst_path = os.fspath(dst)
    total = 0 if src_path == "-" else os.path.getsize(src_path)
    with open_output(dst_path, src_path) as output:
        try:
            if (
                workers > 1
                and output is not None
                and not output.in_place  # workers write pieces at offsets: a regular file
                and src_path != "-"
                and source_name in SPLITTABLE
                and bom != "detect"  # a BOM may say the file is not UTF-8 at all
                and total > chunk_size
                and (
                    count := workers_for(
                        workers, total, direct=is_direct(source_name, target_name, errors, bom)
                    )
                )
                > 1
            ):
                options = (source_name, target_name, errors, bom, unmappable, chunk_size)
                return transcode_parallel(
                    src_path, output.path, options, count, progress, on_malformed, total
                )
            counter = EventCounter(on_malformed)
            run = new_run(source_name, target_name, errors, bom, unmappable, counter)
            report = (lambda done: progress(done, total)) if progress is not None else None
            with open_binary(src_path, "rb") as fin:
                fout = sys.stdout.buffer if output is None else output.file
                bytes_in, bytes_out = transcode_stream(fin, fout, run, chunk_size, None, report)
        except OSError as exc:
            name_output(exc, output, dst_path)
            raise
    return TranscodeSummary(
        bytes_in,
        bytes_out,
        run.text_characters,
        MappingProxyType(run.counts()),
        unmappable=run.unmappable,
    )


async def atranscode_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    source: str = "utf-8",
    target: str = "utf-8",
    errors: str = "replace",
    bom: str = "keep",
    unmappable: str = "strict",
    chunk_size: int = 1048576,
    workers: int = 1,
    progress: Progress | None = None,
    on_malformed: OnMalformed | None = None,
) -> TranscodeSummary:
    """``transcode_file`` for async code: anyio file I/O, the event loop stays free.

    The same guarantees: ``dst`` is replaced only on success (a cancelled run leaves it
    untouched).  With ``workers > 1`` the parallel run happens in a worker thread.
    """
    import anyio.to_thread  # the async layer loads only when used

    source_name, target_name = canonical(source), canonical(target)
    if workers > 1:
        return await anyio.to_thread.run_sync(
            lambda: transcode_file(
                src,
                dst,
                source=source_name,
                target=target_name,
                errors=errors,
                bom=bom,
                unmappable=unmappable,
                chunk_size=chunk_size,
                workers=workers,
                progress=progress,
                on_malformed=on_malformed,
            )
        )
    check_options(source_name, target_name, errors, bom, unmappable)
    counter = EventCounter(on_malformed)
    run = new_run(source_name, target_name, errors, bom, unmappable, counter)
    src_path, dst_path = os.fspath(src), os.fspath(dst)
    total = (await anyio.Path(src_path).stat()).st_size
    bytes_in = bytes_out = 0
    check_distinct(src_path, dst_path)
    output = await anyio.to_thread.run_sync(Output, dst_path)
    try:
        fout = anyio.wrap_file(output.file)
        async with await anyio.open_file(src_path, "rb") as fin:
            while chunk := await fin.read(chunk_size):
                out = run.transcode(chunk)
                await fout.write(out)
                bytes_in += len(chunk)
                bytes_out += len(out)
                if progress is not None:
                    progress(bytes_in, total)
            out = run.transcode(b"", final=True)
            await fout.write(out)
    except BaseException as exc:
        output.discard()
        if isinstance(exc, OSError):
            name_output(exc, output, dst_path)
        raise
    await anyio.to_thread.run_sync(output.commit)
    return TranscodeSummary(
        bytes_in,
        bytes_out + len(out),
        run.text_characters,
        MappingProxyType(run.counts()),
        unmappable=run.unmappable,
    )
