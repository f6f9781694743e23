"""``utf8stream tail``'s output: lines to stdout with ``==> FILE <==`` headers, and the
checkpoint of what stdout has really been given (one FILE's JSON file, or the store of
several files followed together)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import TYPE_CHECKING, BinaryIO

from ._common import CommandError, warn
from ._output_mark import Replay, appended_file, mark_of, replay_for, resumed_mark

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..follow import FollowCheckpoint, Follower, OutputMark
    from ..many import ManyFollower

__all__ = ["Output"]


class Output:
    """Lines to stdout, with ``==> FILE <==`` headers, and the checkpoint of what stdout
    has really been given.

    Lines are gathered here and go out in one write at ``flush`` (when the follower has
    nothing more ready, or ``BATCH_BYTES`` are gathered).  With a checkpoint, each flush
    that wrote lines is followed at once by a save of the position just past them
    (without fsync: a process killed with SIGKILL loses nothing the kernel was given), so
    a SIGKILL repeats at most the lines of the one write between its return and the save.
    Into a regular file not even those: each checkpoint records how far the file was
    written (``OutputMark``), and a restart skips what lies past that as it writes those
    lines again (``_output_mark``).
    """

    BATCH_BYTES = 1 << 16

    def __init__(
        self,
        out: BinaryIO,
        headers: bool,
        follower: Follower | None,
        checkpoint_path: str | None,
        many: ManyFollower | None = None,
        following: bool = True,
        marks: str | None = None,
        resume: Iterable[OutputMark] = (),
        line_end: bytes = b"\n",
    ):
        self.out = out
        self.following = following  # saved after every flush, not only on stopping
        self.headers = headers
        self.current: str | None = None  # the file whose lines are being written
        self.follower = follower
        self.checkpoint_path = checkpoint_path
        self.batch: list[bytes] = []
        self.batch_size = 0
        self.delivered: FollowCheckpoint | None = None  # as of the last good flush
        self.saved: FollowCheckpoint | None = None  # what the checkpoint file says
        #: With several files (-f), their store and checkpoints as of the last good flush.
        self.many = many
        self.many_delivered: dict[str, FollowCheckpoint] | None = None
        self.broken = False
        #: ``marks``: the checkpoint (named in notices) recording how far the output file
        #: was written, ``fd`` (None: the output is not a file written at its end).
        self.marks = marks
        self.fd = appended_file(out) if marks else None
        self.mark: OutputMark | None = None  # as of the last flush
        self.replay: Replay | None = None
        self.resume = None if self.fd is None else resumed_mark(self.fd, resume)
        if self.fd is not None and self.resume is not None:
            self.replay = replay_for(self.fd, self.resume, line_end)
            if self.replay is not None:
                self.current = self.resume.header  # the same file: its header is there
                self.told_differs()
        self.plain: dict[str, FollowCheckpoint] = {}  # what ``marked`` marked, unmarked
        self.marked: dict[str, FollowCheckpoint] = {}

    def switch_to(self, name: str) -> None:
        """Lines of ``name`` come next: a header if they are not the previous ones'."""
        if self.headers and name != self.current:
            blank = b"" if self.current is None else b"\n"
            self.write(blank + b"==> " + os.fsencode(name) + b" <==\n")
        self.current = name

    def write(self, data: bytes) -> bool:
        """Gather ``data``; True once a batch is full (time to flush)."""
        self.batch.append(data)
        self.batch_size += len(data)
        return self.batch_size >= self.BATCH_BYTES

    def flush(self) -> None:
        """Send the lines handed out so far to stdout: they are delivered (and recorded
        in a checkpoint file at once)."""
        if self.batch:
            data = b"".join(self.batch)
            self.batch.clear()
            self.batch_size = 0
            if self.replay is not None:
                data = self.replay.take(data)
                self.told_differs()
            if data:
                self.out.write(data)
                self.out.flush()
        if self.fd is not None:
            self.mark = self.mark_now()
        if self.follower is not None:
            # RuntimeError: the file could not be opened, there is no position to record.
            with contextlib.suppress(RuntimeError):
                self.delivered = self.with_mark(self.follower.checkpoint())
            if self.following:
                self.record(durable=False)
        if self.many is not None:
            self.many_delivered = self.with_marks(self.many.checkpoints())

    def mark_now(self) -> OutputMark:
        """How far the output file holds what was delivered: its size, or while the bytes
        a killed run left are being skipped, the mark plus what was skipped."""
        assert self.fd is not None
        replay, resume = self.replay, self.resume
        if replay is not None and not replay.done and resume is not None:
            return mark_of(self.fd, self.header(), resume.size + replay.skipped)
        return mark_of(self.fd, self.header())

    def header(self) -> str | None:
        """The name of the last header written, if headers are."""
        return self.current if self.headers else None

    def told_differs(self) -> None:
        """A notice, once, when the bytes past the mark are not what this run writes."""
        if self.replay is not None and self.replay.differs:
            why, self.replay = self.replay.differs, None
            warn(
                f"the output file holds bytes written after this checkpoint was saved that"
                f" {why}: writing the lines after them (some may come twice)",
                self.marks,
            )

    def with_mark(self, checkpoint: FollowCheckpoint) -> FollowCheckpoint:
        return dataclasses.replace(checkpoint, output=self.mark)

    def with_marks(self, checkpoints: dict[str, FollowCheckpoint]) -> dict[str, FollowCheckpoint]:
        """Each file's checkpoint, marked as of this flush where it moved: only rows that
        moved are saved again, and the newest mark is on those of the last save (all of
        them when a file was dropped: its row goes, and the mark must stay)."""
        if self.fd is None:
            return checkpoints
        every = not self.plain.keys() <= checkpoints.keys()
        for key, checkpoint in checkpoints.items():
            if every or self.plain.get(key) != checkpoint:
                self.marked[key] = self.with_mark(checkpoint)
        self.plain = dict(checkpoints)
        self.marked = {key: self.marked[key] for key in checkpoints}
        return dict(self.marked)

    def record(self, durable: bool) -> None:
        """Write the checkpoint of what was delivered, if it moved (or ``durable``)."""
        if not self.checkpoint_path or self.delivered is None:
            return
        if durable or self.delivered != self.saved:
            from ..follow import write_checkpoint

            try:
                write_checkpoint(self.delivered, self.checkpoint_path, durable=durable)
            except OSError as exc:  # not the FILE's error: said of the checkpoint
                raise CommandError(exc.strerror or str(exc), self.checkpoint_path) from None
            self.saved = self.delivered

    async def commit(self) -> None:
        """``flush``, and with several files, one transaction for what they delivered."""
        self.flush()
        if self.many is not None and self.many_delivered is not None:
            await self.many.save(self.many_delivered)

    def save(self) -> None:
        """Flush, and record the position after the last line delivered (on disk)."""
        if not self.broken:
            try:
                self.flush()
            except BrokenPipeError:
                self.broken = True
        self.record(durable=True)

    async def save_all(self) -> None:
        """``save``, and with several files, one transaction for what they delivered."""
        self.save()
        if self.many is not None and self.many_delivered is not None:
            await self.many.save(self.many_delivered)
