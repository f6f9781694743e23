"""How the follower cuts the bytes it reads into lines: one ``LineEngine`` per file, the
queue of what is cut and not handed out yet, and the counts of what the lines held."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from ...core.autodecode import AUTO, DEFAULT_MAX_LOOKAHEAD
from ...core.autodoubt import DoubtTracker, EncodingDoubt, doubt_tracker
from ...core.autolines import line_codec
from ...core.events import Malformed
from ...core.linecodec import LineBatch, LineEngine, LineItem, line_decoder
from .._identity import FINGERPRINT_BYTES, head_fingerprint
from ._feed import _Block, _fed_to, _Item, _records, _slice_records
from ._reading import _detection, _is_utf8, _Open

if TYPE_CHECKING:
    from ...core.detector import Detection


@functools.lru_cache(maxsize=64)
def _engine_problem(
    encoding: str, errors: str, newline: str | None, max_line_bytes: int, on_overlong: str
) -> str | None:
    """Why no line engine can be made with these options (None: one can), known once
    per combination (``follow_many`` makes a follower per file).  An encoding with a
    prelude (a byte-order mark) is told by each file's first bytes: not checked here."""
    decoder = line_decoder(encoding, errors)
    if decoder.prelude:
        return None
    try:
        LineEngine(
            decoder, newline=newline, max_line_bytes=max_line_bytes, on_overlong=on_overlong
        )
    except ValueError as exc:
        return str(exc)
    return None


#: How many bytes before the position a file keeps to notice a rewrite (``_Open.anchor``).
ANCHOR_BYTES = 32


class _Cutter:
    """The line options of a follower, its engines and the queue of lines cut."""

    def __init__(
        self,
        *,
        newline: str | None,
        max_line_bytes: int,
        on_overlong: str,
        errors: str,
        encoding: str,
        on_malformed: Callable[[Malformed], object] | None,
        notice: Callable[[str, str], None],
        doubt: bool = False,
    ) -> None:
        #: "auto": each file's encoding is detected from its first bytes (``_detect``).
        self.auto = encoding == AUTO
        self.encoding = "utf-8" if self.auto else encoding
        self._newline = newline
        self._max = max_line_bytes
        self.on_overlong = on_overlong
        self._errors = errors
        self._on_malformed = on_malformed
        self._notice = notice
        #: Whether anyone hears of doubt about an encoding detected (a notice).
        self._doubt = doubt
        # The newline in the encoding is checked now, not at the first read (the other
        # options are ``FollowOptions``'s to check).
        problem = _engine_problem(self.encoding, errors, newline, max_line_bytes, on_overlong)
        if problem is not None:
            raise ValueError(problem)
        self.queue: deque[_Item | _Block] = deque()
        #: What ``on_malformed`` raised, raised once the read is taken in.
        self.callback_error: Exception | None = None
        self.skipped = 0
        self.overlong = 0
        self.malformed = 0

    def engine_for(
        self,
        offset: int,
        fd: int = -1,
        head: bytes | None = None,
        *,
        encoding: str | None,
    ) -> LineEngine:
        """The line engine for a file in ``encoding`` (None: not known yet, UTF-8 until
        the first bytes come) read from ``offset`` (``fd``'s first bytes, or ``head``,
        tell a byte-order mark)."""
        encoding = encoding or "utf-8"
        decoder = line_decoder(
            encoding,
            self._errors,
            start_offset=offset,
            on_malformed=self._count if _is_utf8(encoding) else None,
        )
        if head is None and fd >= 0 and decoder.prelude:
            head = os.pread(fd, decoder.prelude, 0)
        return LineEngine(
            decoder,
            newline=self._newline,
            max_line_bytes=self._max,
            on_overlong=self.on_overlong,
            on_overlong_line=self._found_overlong,
            offset=offset,
            head=head,
            # The offsets of a block stay packed (the C ``Line`` makes each int on use).
            packed_offsets=True,
        )

    def doubt_tracker(self, found: Detection | None) -> DoubtTracker | None:
        """For a file read from its first byte in the encoding detected as ``found``: the
        tracker of a doubt about it, told as an "encoding-doubt" notice."""
        if not self._doubt or found is None:
            return None
        return doubt_tracker(
            found, start=0, max_lookahead=DEFAULT_MAX_LOOKAHEAD, on_doubt=self._tell_doubt
        )

    def _tell_doubt(self, doubt: EncodingDoubt) -> None:
        self._notice(
            "encoding-doubt",
            f"byte {doubt.offset} is not valid {doubt.chosen}, the encoding detected;"
            f" {doubt.candidate} would decode it: reading on in {doubt.chosen}",
        )

    def _count(self, event: Malformed) -> None:
        self.malformed += 1
        if self._on_malformed is not None:
            try:
                self._on_malformed(event)
            except Exception as exc:  # raised once the read is taken in
                if self.callback_error is None:
                    self.callback_error = exc

    def _found_overlong(self, offset: int) -> None:
        """Truncated or skipped: text is lost, so say so (a split loses nothing)."""
        self.overlong += 1
        done = {"truncate": "truncated", "skip": "skipped"}.get(self.on_overlong)
        if done is not None:
            self._notice(
                "overlong", f"line at byte {offset} longer than {self._max} bytes: {done}"
            )

    def finish(self, f: _Open, lost: int = 0, unfinished: bool = False) -> None:
        """Leaving a file: its unfinished last line is complete now."""
        if f.doubt is not None:
            f.doubt.feed(b"", final=True)
            f.doubt = None
        self.queue_items(f, f.engine.finish(lost=lost, unfinished=unfinished))

    def take(self, f: _Open, data: bytes, start: int = 0) -> None:
        """Cut newly read bytes (``data`` from ``start`` on) into lines and queue the
        complete ones (those of the first ``feed_size`` bytes; the rest when asked)."""
        if f.undecided:
            # The first bytes of a file that was empty: its encoding is told now.
            found = _detection(f.fd) or _detect_head(data[start:])
            encoding = line_codec(found)
            f.engine = self.engine_for(f.read_pos, f.fd, encoding=encoding)
            f.identity = dataclasses.replace(f.identity, encoding=encoding)
            f.undecided = False
            f.doubt = self.doubt_tracker(found) if f.read_pos == 0 else None
        end = len(data)
        if end - start > f.policy.feed_size:
            # A long read ends at a line's end: the rest, the start of a line, is read
            # again with the next bytes (positional reads), so no slice holds a line
            # that the engine must join to the next read's (that costs the general path
            # twice per read).  A read with no newline is taken whole.
            end = f.engine.slice_end(data, start, end)
        if f.doubt is not None:
            f.doubt.feed(memoryview(data)[start:end])
            if f.doubt.done:
                f.doubt = None
        f.read_pos += end - start
        f.fed_at = anyio.current_time()
        f.anchor = (f.anchor + data[max(start, end - ANCHOR_BYTES) : end])[-ANCHOR_BYTES:]
        if f.identity.head_length < FINGERPRINT_BYTES and f.read_pos > f.identity.head_length:
            # A young file: fingerprint more of it, so a reused inode is recognised.
            head = os.pread(f.fd, FINGERPRINT_BYTES, 0)[: f.read_pos]
            length, digest = head_fingerprint(head)
            f.identity = dataclasses.replace(f.identity, head_length=length, head_sha256=digest)
        f.unfed, f.unfed_at, f.unfed_end = data, start, end
        self.feed_slice(f)

    def feed_slice(self, f: _Open) -> None:
        """Cut the next ``feed_size`` bytes of the last read into lines, and queue them.

        The slice ends just past a newline where it can: the engine then holds nothing
        to join to the next slice (a copy of it), and the slice is not copied either."""
        found = _slice_records(f)
        if found is not None:
            # In one call where it can: the slice cut straight into records.
            lines, after, items = found
            if lines:
                self.queue.append(_Block(lines, after, f.identity))
            self.queue_items(f, items)
            return
        data, at, limit = f.unfed, f.unfed_at, f.unfed_end
        stop = min(at + f.policy.feed_size, limit)
        end = f.engine.slice_end(data, at, stop) if stop < limit else limit
        _fed_to(f, end)
        # A slice is a view: the engine's fast path reads it where it lies (no copy).
        piece = memoryview(data)[at:end] if at or end < len(data) else data
        self.queue_items(f, f.engine.feed(piece))

    def queue_items(
        self, f: _Open, items: list[LineBatch | LineItem], path: str | None = None
    ) -> None:
        queue = self.queue
        identity = f.identity
        path = f.path if path is None else path
        for item in items:
            if isinstance(item, LineBatch):
                texts, offsets = item
                records = _records(texts, offsets, identity, path)
                queue.append(_Block(records, offsets[-1], identity))
            else:
                line, offset, end, mid_line, terminated = item
                if line is None and self.on_overlong == "skip":
                    self.skipped += 1  # (under "raise", None only moves the checkpoint)
                queue.append((line, offset, end, identity, path, mid_line, terminated))


def _detect_head(head: bytes) -> Detection:
    from ...core.detector import detect  # the model loads only when asked for

    return detect(head[:DEFAULT_MAX_LOOKAHEAD])
