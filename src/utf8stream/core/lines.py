"""The line splitter: text in, lines out.  A pure state machine, no I/O.

Theory of operation
-------------------
Text arrives in pieces of any size.  Each ``feed`` splits the new text with C string
methods (``str.split``, ``str.splitlines``, ``str.replace``) and keeps between calls only:

* the *tail*: the last characters that may be the start of a newline the next piece
  completes (a ``\\r`` in universal mode, which may become ``\\r\\n``; up to
  ``len(newline) - 1`` characters of a fixed newline);
* the *carry*: the content of the current, unfinished line, at most ``max_line_bytes``
  long (plus the unfinished part of one piece) because a line is judged overlong as soon as
  its content passes the limit;
* whether the current line is already known to be overlong, and for ``truncate`` the head
  that will be delivered when it ends.

The limit applies to the line's content (without its newline) encoded as UTF-8, lone
surrogates (from ``surrogateescape``/``surrogatepass`` decoding) counting three bytes each.
Because only the content decides, the same text gives the same lines and the same errors
however it is cut into pieces.  Per piece the Python work is O(1) plus O(lines): one
``max(map(len, lines))`` bounds every line at once, and lines are measured one by one only
when that bound does not already prove them short.

Overlong lines under ``on_overlong="raise"`` are not raised here: ``feed`` returns a
``LineTooLong`` instance in the place where the line would have been, and the adapter
raises it when the caller gets there.  That keeps the lines before and after it, and the
splitter never has to stop half-way through a piece.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, cast

from ._accel import SPLIT_ASCII_ONLY, SPLIT_ENDS_CR, SPLIT_STARTS_LF
from ._bytes import is_continuation

if TYPE_CHECKING:
    from .decoder import Utf8Decoder

__all__ = [
    "DEFAULT_FOLLOW_ON_OVERLONG",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_ON_OVERLONG",
    "OVERLONG_POLICIES",
    "LineSplitter",
    "LineSplitterStatistics",
    "LineTooLong",
]

#: What to do with a line longer than ``max_line_bytes``.
OVERLONG_POLICIES = ("raise", "truncate", "split", "skip")
#: The limit of every line reader (``LineSplitter``, ``LineReceiveStream``, ``LineEngine``,
#: ``follow`` and ``utf8stream tail``).
DEFAULT_MAX_LINE_BYTES = 1 << 20
#: The policy of the readers a program consumes (``LineSplitter``, ``LineReceiveStream``,
#: ``LineEngine``): an overlong line is an error the program sees where the line was.
DEFAULT_ON_OVERLONG = "raise"
#: The policy of the log followers (``follow``, ``utf8stream tail``): one overlong line
#: must not stop a follower, and splitting it loses nothing (its pieces joined are the line).
DEFAULT_FOLLOW_ON_OVERLONG = "split"

_NO_LIMIT = sys.maxsize
# Characters ``str.splitlines`` treats as line breaks besides \n and \r: universal
# newlines must not split on them, so a piece containing one is split by a regex instead.
_ASCII_EXTRA_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e")
_OTHER_EXTRA_BREAKS = ("\x85", "\u2028", "\u2029")
_UNIVERSAL_SPLIT = re.compile("(\r\n|\r|\n)")


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


@dataclass(frozen=True)
class LineSplitterStatistics:
    """What a splitter has seen so far."""

    chars_in: int = 0
    lines: int = 0
    overlong_lines: int = 0


def check_line_options(newline: str | None, max_line_bytes: int | None, on_overlong: str) -> None:
    """``ValueError`` for options no line reader accepts."""
    if newline is not None and (not isinstance(newline, str) or not newline):
        raise ValueError("newline must be None or a non-empty string")
    if max_line_bytes is not None and (not isinstance(max_line_bytes, int) or max_line_bytes < 4):
        raise ValueError("max_line_bytes must be None or an integer of at least 4")
    if on_overlong not in OVERLONG_POLICIES:
        raise ValueError(f"on_overlong must be one of {OVERLONG_POLICIES}, not {on_overlong!r}")


def utf8_length(text: str) -> int:
    """Bytes of ``text`` in UTF-8, a lone surrogate counting three."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _has_extra_breaks(text: str) -> bool:
    for char in _ASCII_EXTRA_BREAKS:
        if char in text:
            return True
    if text.isascii():
        return False
    return any(char in text for char in _OTHER_EXTRA_BREAKS)


def _cut_points(data: bytes, limit: int) -> list[int]:
    """Offsets that cut valid UTF-8 ``data`` into pieces of at most ``limit`` bytes.

    Each piece is as long as it can be without splitting a character (greedy from the
    start), so the cut depends on the content alone.
    """
    points = [0]
    start = 0
    end = len(data)
    while end - start > limit:
        cut = start + limit
        # Not boundaries.char_start: ``data`` may hold surrogates (ED A0..BF xx), which
        # are characters here, not malformed units.
        while is_continuation(data[cut]):
            cut -= 1
        points.append(cut)
        start = cut
    points.append(end)
    return points


def cut_to_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form has at most ``limit`` bytes."""
    if len(text) <= limit and utf8_length(text) <= limit:
        return text
    # Every character is at least one byte, so the prefix has at most ``limit`` of them.
    head = text[:limit].encode("utf-8", "surrogatepass")
    if len(head) <= limit:
        return text[:limit]
    cut = _cut_points(head, limit)[1]
    return head[:cut].decode("utf-8", "surrogatepass")


def split_to_bytes(text: str, limit: int) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` UTF-8 bytes at character boundaries."""
    if len(text) <= limit and utf8_length(text) <= limit:
        return [text]
    data = text.encode("utf-8", "surrogatepass")
    points = _cut_points(data, limit)
    return [data[a:b].decode("utf-8", "surrogatepass") for a, b in pairwise(points)]


class LineSplitter:
    """Splits text, fed in pieces of any size, into lines.

    ``newline``: ``None`` for universal newlines (``\\n``, ``\\r\\n`` and ``\\r``; a ``\\r``
    at the end of a piece is held until the next piece, or the end, decides), or any
    non-empty string used as a fixed delimiter (``"\\n"``, ``"\\r\\n"``, ``"\\0"``, ...),
    which may be split across pieces.

    ``keepends``: keep each line's newline (the overlong-line policies add it to the last
    piece they deliver of that line).

    ``max_line_bytes``: limit on a line's content in UTF-8 bytes (at least 4, so that any
    character fits; ``None`` for no limit).  ``on_overlong``: ``"raise"`` (a ``LineTooLong``
    takes the line's place in the output), ``"truncate"`` (the line's first
    ``max_line_bytes`` bytes, cut at a character boundary), ``"split"`` (pieces of at most
    ``max_line_bytes`` bytes, cut at character boundaries) or ``"skip"``.
    """

    def __init__(
        self,
        *,
        newline: str | None = None,
        keepends: bool = False,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        on_overlong: str = DEFAULT_ON_OVERLONG,
    ) -> None:
        check_line_options(newline, max_line_bytes, on_overlong)
        self.newline = newline
        self.keepends = bool(keepends)
        self.max_line_bytes = max_line_bytes
        self.on_overlong = on_overlong
        self._limit = _NO_LIMIT if max_line_bytes is None else max_line_bytes
        # feed_bytes: the newline as a byte value the decoder can split at (-1: universal)
        self._byte_sep: int | None = None
        if not self.keepends:
            if newline is None:
                self._byte_sep = -1
            elif len(newline) == 1 and newline.isascii():
                self._byte_sep = ord(newline)
        self._tail = ""
        self._carry: list[str] = []
        self._carry_bytes = 0
        self._overlong = False
        self._truncated = ""
        self._chars_in = 0
        self._lines = 0
        self._overlong_lines = 0
        self._raised = 0
        self._text_size = 0

    # -- public API ------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Characters held for the current line (carry, tail, truncated head)."""
        return sum(map(len, self._carry)) + len(self._tail) + len(self._truncated)

    @property
    def overlong_lines(self) -> int:
        """Lines found longer than ``max_line_bytes`` so far, whatever the policy."""
        return self._overlong_lines

    def feed(self, text: str) -> list[str | LineTooLong]:
        """Add text; return what it completes, in order.

        Items are lines, and under ``on_overlong="raise"`` a ``LineTooLong`` in the place
        of each overlong line (for an unfinished line, as soon as its content passes the
        limit; the rest of it is then skipped).
        """
        self._chars_in += len(text)
        if self._tail:
            text = self._tail + text
            self._tail = ""
        if not text:
            return []
        complete, rest = self._split(text)
        return self._emit(complete, rest, text.isascii(), len(text))

    def feed_bytes(
        self, decoder: Utf8Decoder, data: bytes, final: bool = False
    ) -> list[str | LineTooLong]:
        """``feed(decoder.decode(data, final))``, in one step where the decoder can.

        With ``errors="replace"``, no ``keepends`` and universal newlines or a
        one-character ASCII newline, the decoder's scanner cuts the bytes at newline
        bytes as it decodes them (``Utf8Decoder.decode_split``): the same lines, events
        and state, without building the chunk's text and splitting it again.
        """
        sep = self._byte_sep
        if sep is not None and type(data) is bytes:
            split = decoder.decode_split(data, final, sep)
            if split is not None:
                return self._feed_parts(*split)
        return self.feed(decoder.decode(data, final))

    def _feed_parts(self, parts: list[str], flags: int, chars: int) -> list[str | LineTooLong]:
        """``feed`` for text that arrives already split (see ``feed_bytes``)."""
        self._chars_in += chars
        if self._tail:  # a held "\r": universal newlines
            if not chars:
                return []
            self._tail = ""
            chars += 1
            if not flags & SPLIT_STARTS_LF:
                parts.insert(0, "")  # the "\r" ended the current line by itself
        if flags & SPLIT_ENDS_CR:
            self._tail = "\r"
        rest = parts.pop()
        return self._emit(parts, rest, bool(flags & SPLIT_ASCII_ONLY), chars)

    def _emit(
        self, complete: list[str], rest: str, ascii_only: bool, size: int
    ) -> list[str | LineTooLong]:
        """The output for a piece of ``size`` characters split into complete lines and
        an unfinished rest."""
        raised = self._raised
        self._text_size = size
        out = self._take_complete(complete, ascii_only) if complete else []
        if rest:
            self._extend_carry(rest, out)
        self._lines += len(out) - (self._raised - raised)
        return out

    def flush(self) -> list[str | LineTooLong]:
        """End of input: return the final line, if any, and start afresh."""
        raised = self._raised
        out: list[str | LineTooLong] = []
        tail = self._tail
        self._tail = ""
        ending = ""
        if self.newline is None:
            ending = tail  # a held "\r" ends the final line
        elif tail:
            self._extend_carry(tail, out)  # an unfinished newline is content after all
        if ending or self._carry or self._overlong:
            self._finish(out, ending)
        self._lines += len(out) - (self._raised - raised)
        return out

    def statistics(self) -> LineSplitterStatistics:
        """Characters fed, lines returned (pieces of split lines included), overlong lines."""
        return LineSplitterStatistics(self._chars_in, self._lines, self._overlong_lines)

    # -- splitting -------------------------------------------------------------------

    def _split(self, text: str) -> tuple[list[str], str]:
        """Complete lines (with their newline if ``keepends``) and the unfinished rest.

        Sets the tail for the next piece.
        """
        newline = self.newline
        if newline is None:
            if text[-1] == "\r":
                self._tail = "\r"
                text = text[:-1]
            if self.keepends:
                if _has_extra_breaks(text):
                    parts = _UNIVERSAL_SPLIT.split(text)
                    rest = parts.pop()
                    lines = [a + b for a, b in zip(parts[::2], parts[1::2], strict=True)]
                    return lines, rest
                lines = text.splitlines(True)
                if lines and lines[-1][-1] not in "\r\n":
                    return lines, lines.pop()
                return lines, ""
            if "\r" in text:
                text = text.replace("\r\n", "\n")
                if "\r" in text:
                    text = text.replace("\r", "\n")
            lines = text.split("\n")
            return lines, lines.pop()
        lines = text.split(newline)
        rest = lines.pop()
        keep = len(newline) - 1
        if keep and rest:
            # The end of the rest may be the start of a newline split across pieces.
            self._tail = rest[-keep:]
            rest = rest[:-keep]
        if self.keepends:
            lines = [line + newline for line in lines]
        return lines, rest

    def _content(self, line: str) -> tuple[str, str]:
        """A complete line as (content, newline)."""
        if not self.keepends:
            return line, ""
        newline = self.newline
        if newline is None:
            content = line.rstrip("\r\n")
            return content, line[len(content) :]
        return line[: -len(newline)], newline

    # -- limits and policies ---------------------------------------------------------

    def _take_complete(self, lines: list[str], ascii_only: bool) -> list[str | LineTooLong]:
        """The output for complete lines; the first one ends the current line."""
        out: list[str | LineTooLong] = []
        if self._overlong or self._carry:
            content, ending = self._content(lines[0])
            self._carry.append(content)
            self._finish(out, ending)
            if len(out) == 1 and type(out[0]) is str:
                lines[0] = out[0]  # the usual case: the carried line simply ends
                out = []
                first = 1
            else:
                del lines[0]
                first = 0
        else:
            first = 0
        # Every character is 1..4 bytes: bound all lines at once, measure only if needed.
        limit = self._limit
        size = self._text_size
        if size * 4 > limit and not (ascii_only and size <= limit) and lines:
            longest = max(map(len, lines))
            if longest * 4 > limit and not (ascii_only and longest <= limit):
                if first:
                    out.append(lines[0])
                for line in lines[first:]:
                    content, ending = self._content(line)
                    self._judge(line, content, ending, out)
                return out
        if out:
            out.extend(lines)
            return out
        return cast("list[str | LineTooLong]", lines)

    def _judge(self, line: str, content: str, ending: str, out: list[str | LineTooLong]) -> None:
        """Append a complete line (``content + ending``), or what its policy makes of it."""
        limit = self._limit
        if len(content) * 4 <= limit or utf8_length(content) <= limit:
            out.append(line)
            return
        self._overlong_lines += 1
        policy = self.on_overlong
        if policy == "raise":
            self._raised += 1
            out.append(LineTooLong(cut_to_bytes(content, limit), limit))
        elif policy == "truncate":
            out.append(cut_to_bytes(content, limit) + ending)
        elif policy == "split":
            pieces = split_to_bytes(content, limit)
            pieces[-1] += ending
            out.extend(pieces)

    def _extend_carry(self, rest: str, out: list[str | LineTooLong]) -> None:
        """Add the unfinished end of a piece to the current line."""
        policy = self.on_overlong
        if self._overlong and policy != "split":
            return  # the rest of an overlong line is skipped
        self._carry.append(rest)
        self._carry_bytes += utf8_length(rest)
        limit = self._limit
        if self._carry_bytes <= limit:
            return
        # The line is overlong whatever follows: decide now, so memory stays bounded.
        content = "".join(self._carry)
        self._carry = []
        self._carry_bytes = 0
        if not self._overlong:
            self._overlong = True
            self._overlong_lines += 1
        if policy == "raise":
            self._raised += 1
            out.append(LineTooLong(cut_to_bytes(content, limit), limit))
        elif policy == "truncate":
            self._truncated = cut_to_bytes(content, limit)
        elif policy == "split":
            pieces = split_to_bytes(content, limit)
            last = pieces.pop()
            out.extend(pieces)
            self._carry = [last]
            self._carry_bytes = utf8_length(last)

    def _finish(self, out: list[str | LineTooLong], ending: str) -> None:
        """End the current line with ``ending``; append what it becomes to ``out``."""
        content = "".join(self._carry)
        self._carry = []
        self._carry_bytes = 0
        if not self._overlong:
            line = content + ending if self.keepends else content
            self._judge(line, content, ending if self.keepends else "", out)
            return
        self._overlong = False
        policy = self.on_overlong
        if policy == "truncate":
            out.append(self._truncated + (ending if self.keepends else ""))
            self._truncated = ""
        elif policy == "split":
            pieces = split_to_bytes(content, self._limit)
            if self.keepends:
                pieces[-1] += ending
            out.extend(pieces)
