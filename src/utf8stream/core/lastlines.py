"""Where the last N lines of some bytes start: ``tail -n N``'s search, backwards.

One search for every reader of last lines: a file read with positional reads (the
follower's start at ``last_lines``), and the window of a pipe kept in memory
(``utf8stream tail`` of standard input).  The bytes are read backwards in blocks, each
twice the size of the one before (up to ``MAX_BLOCK``: a long line costs few reads), and
each block's newlines are found by the line engine's own search (``LineEngine.newlines``:
``bytes.find``, the engine's newline and code units), so a line here is a line to the
engine that cuts them afterwards.
"""

from __future__ import annotations

from collections.abc import Callable

from .linecodec import LineEngine

__all__ = ["FIRST_BLOCK", "MAX_BLOCK", "start_of_last_lines"]

FIRST_BLOCK = 1 << 16
MAX_BLOCK = 1 << 23


def start_of_last_lines(
    read: Callable[[int, int], bytes],
    size: int,
    count: int,
    engine: LineEngine,
    block: int = FIRST_BLOCK,
) -> int:
    """Offset where the last ``count`` lines of ``size`` bytes start, as ``tail -n``
    counts them (an unfinished last line is a line); 0 when there are fewer.

    ``read(offset, n)``: ``n`` bytes from ``offset`` (fewer at the end).  With ``count ==
    0``: the start of the unfinished last line (just past the last newline), so that it
    is delivered whole when it completes.
    """
    unit = engine.decoder.unit
    overlap = engine.newline_width - unit
    found: list[list[int]] = []  # the line ends of each block read, the last block first
    total = 0
    pos = size
    while pos > 0 and total <= count:
        start = max(0, pos - block) // unit * unit
        # A newline is the block's that holds its first byte.  Read a little on either
        # side, so that one cut by an edge is seen whole, and so that the second half of
        # a "\r\n" begun in the block before is not taken for a "\n" of its own.
        lead = min(overlap, start)
        data = read(start - lead, lead + pos - start + overlap)
        first = start - lead
        ends = [first + end for at, end in engine.newlines(data) if start <= first + at < pos]
        found.append(ends)
        total += len(ends)
        pos = start
        block = min(block * 2, MAX_BLOCK)
    if count == 0:
        return next((ends[-1] for ends in found if ends), 0)
    starts = [0, *[e for ends in reversed(found) for e in ends if e < size]]
    return starts[-count] if count <= len(starts) else 0
