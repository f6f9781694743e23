"""The follower's hot path: a slice of a read cut into ``Line`` records in bulk."""

from __future__ import annotations

from collections.abc import Sequence

from ...core.linecodec import LineBatch, LineItem
from ...core.lines import (
    LineTooLong,
)
from .._apps_accel import implementation as apps_implementation
from ._reading import _Open
from ._records import FileIdentity, Line

#: A queued result: (text, or a LineTooLong to raise, or None for a skipped line; the
#: line's offset; the offset just past it; its file; its path; whether it ends mid-line;
#: whether a newline ended it).  Handing it out moves the checkpoint to ``end``.
_Item = tuple[str | LineTooLong | None, int, int, FileIdentity, str, bool, bool]


def _fed_to(f: _Open, end: int) -> None:
    """The last read's bytes up to ``end`` have gone to ``f``'s engine."""
    if end >= f.unfed_end:
        f.unfed, f.unfed_at = b"", 0
    else:
        f.unfed_at = end


def _slice_records(f: _Open) -> tuple[list[Line], int, list[LineBatch | LineItem]] | None:
    """The next ``feed_size`` slice of ``f``'s last read cut into ``Line`` records in one
    call (``LineEngine.feed_slice``, made records), and marked fed: the records, the offset after
    them, and what else the slice gave; None where that does not apply (nothing fed)."""
    at = f.unfed_at
    stop = min(at + f.policy.feed_size, f.unfed_end)
    found = f.engine.feed_slice(f.unfed, at, stop)
    if found is None:
        return None
    (texts, offsets), end, items = found
    _fed_to(f, end)
    return _records(texts, offsets, f.identity, f.path), offsets[-1], items


class _Block:
    """The complete, ordinary lines of one slice of a read: the hot path, in bulk.

    ``lines`` holds the ``Line`` records last first (they are popped from its end, by
    ``Follower.__anext__`` or the C iterator that shares the list); ``end`` is the
    offset just past the last line, ``count`` how many lines it had.  Once ``k`` lines
    were handed out the checkpoint is the offset of the next one (``lines[-1]``), or
    ``end``.  ``resumes``: the checkpoint before its first line is handed out is that
    line's offset too (the block follows a block of the same file handed out whole).
    """

    __slots__ = ("count", "end", "file", "lines", "resumes")

    def __init__(
        self, lines: list[Line], end: int, file: FileIdentity, resumes: bool = False
    ) -> None:
        self.lines = lines
        self.count = len(lines)
        self.end = end
        self.file = file
        self.resumes = resumes

    def handed(self) -> int:
        return self.count - len(self.lines)

    def position(self) -> int | None:
        """The checkpoint's offset, or None while it is the one before the block."""
        lines = self.lines
        if len(lines) == self.count and not self.resumes:
            return None
        return lines[-1].offset if lines else self.end


def _records(
    texts: list[str], offsets: Sequence[int], file: FileIdentity, path: str
) -> list[Line]:
    """``Line`` records for ``texts`` (at ``offsets``), last first."""
    records: list[Line] = apps_implementation().records(Line, texts, offsets, file, path, True)
    return records
