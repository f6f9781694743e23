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
  newlines; each task gets them, and finds newlines with the engine's own search
  (``LineEngine.newlines``, in ``linestarts``).
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

The modules: ``sources`` (the files listed, their blocks, the reads), ``linestarts``,
``readtext`` (``read_text``), ``validate`` (``malformed``, ``validate_files``) and
``transcode`` (``transcode_files``).
"""

from __future__ import annotations

from .readtext import read_text
from .transcode import transcode_files
from .validate import (
    FileSummary,
    MalformedRecord,
    malformed,
    validate_files,
    validation_reports,
)

__all__ = [
    "FileSummary",
    "MalformedRecord",
    "malformed",
    "read_text",
    "transcode_files",
    "validate_files",
    "validation_reports",
]
