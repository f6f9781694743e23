"""``transcode_file`` and ``atranscode_file``."""

from __future__ import annotations

import dataclasses
import os
import sys
from types import MappingProxyType
from typing import TYPE_CHECKING, BinaryIO, cast

from ...core.autodecode import (
    AUTO,
    DEFAULT_MAX_LOOKAHEAD,
    NotTextError,
    is_auto,
    marked_codec,
)
from ...core.autodoubt import DoubtTracker, OnDoubt, doubt_tracker
from ...core.transformed import as_transform
from .output import Output, check_distinct, name_output, open_binary, open_output
from .parallel import transcode_parallel, workers_for
from .results import EventCounter, OnMalformed, Progress, TranscodeSummary
from .runs import SPLITTABLE, canonical, check_options, is_direct, new_run
from .streaming import transcode_stream

if TYPE_CHECKING:
    from ...core.detector import Detection
    from ...core.transform import TextTransform
    from ...core.transformed import Transforms

__all__ = ["atranscode_file", "transcode_file"]


class _Replayed:
    """A stream read from ``head`` first, then from ``rest``: the bytes the detector read
    from a pipe are transcoded like the others."""

    def __init__(self, head: bytes, rest: BinaryIO, doubt: DoubtTracker | None) -> None:
        self._head, self._rest = head, rest
        self._doubt = doubt

    def read(self, size: int = -1) -> bytes:
        data = self._read(size)
        if self._doubt is not None:
            self._doubt.feed(data, final=not data)
            if self._doubt.done:
                self._doubt = None
        return data

    def _read(self, size: int) -> bytes:
        head = self._head
        if not head:
            return self._rest.read(size)
        if size < 0 or size >= len(head):
            self._head = b""
            return head
        self._head = head[size:]
        return head[:size]


def _tracker(detection: Detection, on_doubt: OnDoubt | None) -> DoubtTracker | None:
    return doubt_tracker(
        detection, start=0, max_lookahead=DEFAULT_MAX_LOOKAHEAD, on_doubt=on_doubt
    )


def _doubt_in_head(path: str, detection: Detection, on_doubt: OnDoubt | None) -> None:
    """Whether the bytes after those the file's encoding was detected on put it in doubt
    (``on_doubt``): the tracker reads only the head of the file, before any output."""
    tracker = _tracker(detection, on_doubt)
    if tracker is not None:
        # Past the tracker's limit: a doubt at its last byte is settled in these.
        size = detection.looked_at + DEFAULT_MAX_LOOKAHEAD + 4
        with open_binary(path, "rb") as fin:
            head = fin.read(size)
        tracker.feed(head, final=len(head) < size)


def _detect(fin: BinaryIO, name: str) -> tuple[Detection, bytes]:
    """The decision of the core's transcoder on ``"auto"`` on the head of ``fin`` (at
    most ``DEFAULT_MAX_LOOKAHEAD`` bytes read) and the bytes read: the decision a stream
    gets, made in one place; ``NotTextError`` for input that is not text."""
    # The detector's model loads only for "auto".
    from ...core.transcoder import Transcoder

    transcoder = Transcoder(AUTO, "utf-8")
    read = bytearray()
    try:
        while (found := transcoder.detection) is None:
            chunk = fin.read(DEFAULT_MAX_LOOKAHEAD - len(read))
            read += chunk
            transcoder.transcode(chunk, final=not chunk)
    except NotTextError as refused:
        raise NotTextError(refused.detection, name) from None
    return found, bytes(read)


def detect_file(path: str) -> Detection:
    """The encoding of a file as ``source="auto"`` decides it, on its head."""
    with open_binary(path, "rb") as fin:
        return _detect(fin, path)[0]


def _detected(src_path: str, on_doubt: OnDoubt | None) -> tuple[Detection, _Replayed | None]:
    """``source="auto"``: the decision on the head of ``src_path``, and for stdin the
    stream that replays the bytes the detector read."""
    if src_path == "-":
        detection, head = _detect(sys.stdin.buffer, "stdin")
        return detection, _Replayed(head, sys.stdin.buffer, _tracker(detection, on_doubt))
    detection = detect_file(src_path)
    _doubt_in_head(src_path, detection, on_doubt)
    return detection, None


def _parallel_count(
    workers: int,
    output: Output | None,
    names: tuple[str, str, str, str, str],
    total: int,
    chunk_size: int,
    transform: TextTransform | None,
) -> int:
    """How many workers transcode the file (``names``: its path, the source, the target,
    ``errors``, ``bom``): more than one only for a regular UTF-8-family file into a regular
    file, where ``workers_for`` finds it faster, and with no transform (it carries text
    across any cut)."""
    src_path, source_name, target_name, errors, bom = names
    if (
        workers > 1
        and transform is None
        and output is not None
        and not output.in_place  # workers write pieces at offsets: a regular file
        and src_path != "-"
        and source_name in SPLITTABLE
        and bom != "detect"  # a BOM may say the file is not UTF-8 at all
        and total > chunk_size
    ):
        return workers_for(workers, total, direct=is_direct(source_name, target_name, errors, bom))
    return 1


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
    on_doubt: OnDoubt | None = None,
    transforms: Transforms = None,
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

    ``source="auto"``: the encoding is detected on the head of ``src`` (at most 64 KiB,
    ``utf8stream.detect``) and the whole input transcoded from it, as if named; a
    byte-order mark it found is read as a mark, not as text (``summary.detection`` says
    what was found and why); input that is not text raises
    ``NotTextError`` (a ``ValueError``) before any output is made.  ``on_doubt`` hears of
    bytes after those looked at that the encoding detected cannot decode while another
    candidate can (``utf8stream.detect.EncodingDoubt``): the input is transcoded from the
    encoding detected all the same.

    ``progress(bytes_done, bytes_total)`` is called as the work advances (``bytes_total``
    is 0 when the size is unknown).  ``on_malformed`` receives every malformed unit, with
    absolute offsets, in stream order.  With ``workers > 1`` a UTF-8-family regular file
    is transcoded in parallel processes, at most ``workers``, where that is faster than
    one worker on this machine (``parallel.plan``: never for UTF-8 into UTF-16/32 or the
    repair, which one worker does at the speed of writing its output); the output and
    the events are exactly those of the sequential run.  A worker that fails or dies
    stops the run (``WorkerError``, or the worker's ``OSError``) and no worker outlives
    it.

    ``transforms``: a ``TextTransform`` or a sequence of them (``utf8stream.transforms``)
    done on the decoded text before it is encoded.  They carry text across any cut of
    the input, so one worker does the run; ``summary.characters`` counts the transformed
    text, an ``UnmappableCharacterError``'s ``index`` is in it (its ``offset`` None).
    A ``MojibakeRepairer`` alone, without ``on_change``, from UTF-8 into UTF-8 is done on
    the bytes (``MojibakeBytesRepairer``, with the same output): the repairer given is
    then not used, its counts stay at zero.
    """
    transform = as_transform(transforms)
    src_path = os.fspath(src)
    detection = replay = None
    if is_auto(source):
        detection, replay = _detected(src_path, on_doubt)
        source = marked_codec(detection)
    source_name, target_name = canonical(source), canonical(target)
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    if workers < 1:
        raise ValueError("workers must be at least 1")
    check_options(source_name, target_name, errors, bom, unmappable)
    dst_path = os.fspath(dst)
    total = 0 if src_path == "-" else os.path.getsize(src_path)
    with open_output(dst_path, src_path) as output:
        try:
            names = (src_path, source_name, target_name, errors, bom)
            count = _parallel_count(workers, output, names, total, chunk_size, transform)
            if count > 1:
                assert output is not None
                options = (source_name, target_name, errors, bom, unmappable, chunk_size)
                summary = transcode_parallel(
                    src_path, output.path, options, count, progress, on_malformed, total
                )
                return dataclasses.replace(summary, detection=detection)
            counter = EventCounter(on_malformed)
            run = new_run(
                source_name, target_name, errors, bom, unmappable, counter, transform=transform
            )
            report = (lambda done: progress(done, total)) if progress is not None else None
            with open_binary(src_path, "rb") as fin:
                fout = sys.stdout.buffer if output is None else output.file
                reader = fin if replay is None else cast(BinaryIO, replay)
                bytes_in, bytes_out = transcode_stream(reader, fout, run, chunk_size, None, report)
        except OSError as exc:
            name_output(exc, output, dst_path)
            raise
    return TranscodeSummary(
        bytes_in,
        bytes_out,
        run.text_characters,
        MappingProxyType(run.counts()),
        unmappable=run.unmappable,
        detection=detection,
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
    on_doubt: OnDoubt | None = None,
    transforms: Transforms = None,
) -> TranscodeSummary:
    """``transcode_file`` for async code: anyio file I/O, the event loop stays free.

    The same guarantees: ``dst`` is replaced only on success (a cancelled run leaves it
    untouched).  With ``workers > 1`` the parallel run happens in a worker thread.
    ``transforms`` are ``transcode_file``'s.
    """
    transform = as_transform(transforms)
    import anyio.to_thread  # the async layer loads only when used

    detection = None
    if is_auto(source):
        detection = await anyio.to_thread.run_sync(detect_file, os.fspath(src))
        source = marked_codec(detection)
        await anyio.to_thread.run_sync(_doubt_in_head, os.fspath(src), detection, on_doubt)
    source_name, target_name = canonical(source), canonical(target)
    if workers > 1 and transform is None:
        summary = await anyio.to_thread.run_sync(
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
        return dataclasses.replace(summary, detection=detection)
    check_options(source_name, target_name, errors, bom, unmappable)
    counter = EventCounter(on_malformed)
    run = new_run(source_name, target_name, errors, bom, unmappable, counter, transform=transform)
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
        detection=detection,
    )
