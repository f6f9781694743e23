"""``utf8stream tail``'s output: lines to stdout with ``==> FILE <==`` headers, and the
checkpoint of what stdout has really been given (one FILE's JSON file, or the store of
several files followed together)."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, BinaryIO

from ._common import CommandError

if TYPE_CHECKING:
    from ..follow import FollowCheckpoint, Follower
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
            self.out.write(b"".join(self.batch))
            self.out.flush()
            self.batch.clear()
            self.batch_size = 0
        if self.follower is not None:
            # RuntimeError: the file could not be opened, there is no position to record.
            with contextlib.suppress(RuntimeError):
                self.delivered = self.follower.checkpoint()
            if self.following:
                self.record(durable=False)
        if self.many is not None:
            self.many_delivered = self.many.checkpoints()

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
