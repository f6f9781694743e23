"""The options every line reader shares: the overlong-line policies, the defaults, the
check of the options and ``LineTooLong``.  Its own module so that the line engine
(``linecodec``) and its consumers (``lines``, the follower) import it without a cycle."""

from __future__ import annotations

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_ON_OVERLONG",
    "OVERLONG_POLICIES",
    "LineTooLong",
    "check_line_options",
]

OVERLONG_POLICIES = ("raise", "truncate", "split", "skip")
"""What a line reader may do with a line longer than ``max_line_bytes``."""

DEFAULT_MAX_LINE_BYTES = 1 << 20
"""The limit of every line reader (``LineSplitter``, ``LineReceiveStream``, ``LineEngine``,
``follow`` and ``utf8stream tail``): 1 MiB of source bytes."""

DEFAULT_ON_OVERLONG = "split"
"""The overlong policy of every line reader (``LineSplitter``, ``LineReceiveStream``,
``LineEngine``, ``follow`` and ``utf8stream tail``): the one policy that loses no byte (the
pieces joined are the line) and never stops a reader; memory stays bounded by
``max_line_bytes``.  ``"raise"`` (as anyio's ``receive_until`` and asyncio's ``readline``)
keeps only the start of the line: a protocol reader that must refuse one asks for it."""


class LineTooLong(ValueError):
    """A line is longer than ``max_line_bytes`` (``on_overlong="raise"``).

    ``partial`` is the start of the line: its first ``max_line_bytes`` bytes, cut back to a
    character boundary.  The rest of the line is skipped; the stream stays usable and the
    next ``receive()`` returns the line after it.
    """

    partial: str
    max_line_bytes: int

    def __init__(self, partial: str, max_line_bytes: int) -> None:
        super().__init__(f"line longer than {max_line_bytes} bytes")
        self.partial = partial
        self.max_line_bytes = max_line_bytes

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.partial, self.max_line_bytes))


def check_line_options(newline: str | None, max_line_bytes: int | None, on_overlong: str) -> None:
    """``ValueError`` for options no line reader accepts."""
    if newline is not None and (not isinstance(newline, str) or not newline):
        raise ValueError("newline must be None or a non-empty string")
    if max_line_bytes is not None and (not isinstance(max_line_bytes, int) or max_line_bytes < 4):
        raise ValueError("max_line_bytes must be None or an integer of at least 4")
    if on_overlong not in OVERLONG_POLICIES:
        raise ValueError(f"on_overlong must be one of {OVERLONG_POLICIES}, not {on_overlong!r}")
