"""Where a block's lines start, found by the line engine's own newline search.

A line starts at offset 0 and just after a newline, at a code-unit offset from the file
start.  ``LineEngine.newlines`` says where the newlines of some bytes are, as the engine
cuts them; this module only chooses which bytes to give it: those from just before the
offset (a newline that ends exactly there) on, read in chunks until a newline ends at or
after the offset.  Cutting the bytes anywhere is safe: a universal ``\\n`` seen without
the ``\\r`` before it ends where the ``\\r\\n`` does, and a fixed newline that could
overlap itself is refused with blocks (``read_text``).
"""

from __future__ import annotations

from typing import BinaryIO

from ...core.linecodec import LineEngine
from . import sources

__all__ = ["LineStarts"]

#: The first read of a search, in bytes.
_FIRST_READ = 4096


class LineStarts:
    """The line starts of one file, for ``engine``, an engine that has begun (its byte
    order known: a file's first bytes given as ``head``)."""

    def __init__(self, engine: LineEngine) -> None:
        self.engine = engine
        self.unit = engine.decoder.unit
        #: Bytes before an offset that a newline ending there can start at.
        self.back = engine.newline_width
        #: A ``\r`` (universal newlines): a newline whose end depends on the unit after it.
        self.cr = engine.decoder.encode_newline("\r") if engine.newline is None else b""

    def find(self, f: BinaryIO, pos: int, stop: int, size: int) -> int | None:
        """The first line start at or after ``pos`` (a code-unit offset) whose newline
        starts before ``stop``, in a file of ``size`` bytes; ``None`` if there is none."""
        if pos <= 0:
            return 0
        base = max(0, pos - self.back)  # a code-unit offset: ``back`` is whole units
        # The newline is usually near: a small first read, then larger ones, so that the
        # search (which lists every newline of what it is given) stays short.
        step = min(_FIRST_READ, sources.CHUNK)
        buf = sources.read_at(f, base, step)
        while True:
            at_end = base + len(buf) >= size
            found = self._first(buf, base, pos, stop, at_end)
            if found is not None:
                return found if found >= 0 else None
            if at_end or base + len(buf) >= stop + self.back:
                return None
            step = min(step * 8, sources.CHUNK)
            chunk = f.read(step)
            if not chunk:
                return None
            # Keep the bytes a newline cut by the read's end (or a held \r) starts in.
            keep = max(0, len(buf) - self.back)
            keep -= (base + keep) % self.unit
            base, buf = base + keep, buf[keep:] + chunk

    def _first(self, buf: bytes, base: int, pos: int, stop: int, at_end: bool) -> int | None:
        """The line start after the first newline in ``buf`` (at file offset ``base``)
        that ends at or after ``pos``; -1 if it starts at or after ``stop`` (or if the
        file ends in a ``\\r`` and a cut code unit, which the engine keeps in the line's
        content); ``None``: read on."""
        unit = self.unit
        for start, end in self.engine.newlines(buf):
            if base + end < pos:
                continue
            if base + start >= stop:
                return -1
            rest = len(buf) - end
            if self.cr and rest < unit and buf[start:end] == self.cr:
                if not at_end:
                    return None  # \r or \r\n: the next unit tells
                if rest:
                    return -1
            return base + end
        return None
