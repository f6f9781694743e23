"""Mojibake repair on UTF-8 bytes: ``MojibakeRepairer``'s repair, made on the encoded text.

A line (ended by ``\n`` or ``\r``) that the text repairer could change holds a run of
the code pages' characters that could be undone (``find_moji``).  The bytes are searched
for such runs as they are (``find_moji_bytes``, the same search over code points decoded
inline, which decodes only the bytes that can begin a character of the pages), and the
lines without one are handed through as bytes, never decoded or encoded.  The lines that
hold one go to a ``MojibakeRepairer`` in spans of whole lines, with the short clean gaps
between them (cheaper in the text repairer than apart); where such lines keep coming, a
span grows in strides taken as they are, so dense mojibake goes through the text
repairer nearly as a whole piece.  A piece's spans are decoded, repaired and encoded in
one call, then cut back into their places by their line ends (a repair gives no ASCII,
so it keeps every line end).  The text repairer decides a stretch on the stretch and the
characters beside it, never across a line end, and to it a line end before a line reads
as the start of a text does (no letter), so the output is
``repair_mojibake(data.decode()).encode()`` for every chunking of valid UTF-8, whatever
lines the spans take in.

Bytes that are not UTF-8 are kept: outside the lines repaired they are not looked at, and
a line repaired is decoded with ``surrogateescape`` (each such byte a character no code
page holds, next to which nothing reads as a letter) and encoded back the same way.

Streaming.  The unfinished last line is held, at most ``max_line`` bytes; past that it
goes to the text repairer as it comes (which holds at most ``max_carry`` code points,
and a cut UTF-8 sequence of at most three bytes), whatever it holds: the output is the
same, only slower.
"""

from __future__ import annotations

from typing import Any

from ._accel import implementation
from .decoder import Utf8Decoder
from .mojibake import _ENCODERS, _INDEX, _PAGES, DEFAULT_MAX_CARRY, MojibakeRepairer
from .transform import TransformCheckpoint

__all__ = ["DEFAULT_MAX_LINE", "MojibakeBytesRepairer", "repair_mojibake_bytes"]

#: Longer than nearly every line of text, so that a line is decided as bytes once it
#: has ended; short enough that holding it, and searching it again as it grows, is cheap.
DEFAULT_MAX_LINE = 4096
_WIDTH = len(_ENCODERS)
_KIND = "mojibake-bytes"
#: Clean bytes between two lines to repair that go through the text repairer with them:
#: decoding, repairing and encoding that few costs less than a call of their own.
_GAP = 512
#: How far a span first grows past a line to repair followed closely by another.
_STRIDE = 2048


def _line_start(buf: bytes, at: int, end: int) -> int:
    """Where the line holding ``buf[end]`` begins, not before ``at``."""
    start = buf.rfind(b"\n", at, end) + 1 or at
    return buf.rfind(b"\r", start, end) + 1 or start


def _line_end(buf: bytes, at: int, stop: int) -> int:
    """Just after the line end at or after ``buf[at]``, or ``stop`` if none is before it."""
    newline = buf.find(b"\n", at, stop)
    end = buf.find(b"\r", at, stop if newline < 0 else newline)
    end = newline if end < 0 else end
    return stop if end < 0 else end + 1


def _after_lines(out: bytes, at: int, bound: int, lines: int) -> int:
    """Just after the ``lines``-th line end of ``out`` from ``at``, which is at most
    ``bound``: a span's repaired output is no longer than the span (a repair takes the
    bytes of two characters or more for each byte it gives)."""
    if lines == 1:
        return _line_end(out, at, bound)
    extra = out.count(b"\n", at, bound) + out.count(b"\r", at, bound) - lines
    end = bound
    for _ in range(extra + 1):
        end = max(out.rfind(b"\n", at, end), out.rfind(b"\r", at, end))
    return end + 1


class MojibakeBytesRepairer:
    """Repairs UTF-8 mojibake in UTF-8 bytes given in pieces (see the module's docstring).

    Carries at most ``max_line`` bytes (the unfinished line) or, in a line going through
    the text repairer, ``max_carry`` code points and three bytes.  ``position`` and
    ``output_position`` count the bytes taken in and handed out, ``characters_removed``
    the code points the repairs took out (a repair is shorter than its mojibake).  It
    reports no events: ``MojibakeRepairer``'s ``on_change`` does, on text.
    """

    def __init__(
        self, *, max_carry: int = DEFAULT_MAX_CARRY, max_line: int = DEFAULT_MAX_LINE
    ) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self._text = MojibakeRepairer(max_carry=max_carry)
        self._max_line = max_line
        self._decoder = Utf8Decoder("surrogateescape")
        self.position = 0
        self.output_position = 0
        self._held = b""
        # In a line going through the text repairer, until it ends.
        self._inside = False
        # How far the last span was growing when the piece ended (a speed, not a state).
        self._stride = 0

    @property
    def max_carry(self) -> int:
        return self._text.max_carry

    @property
    def max_line(self) -> int:
        return self._max_line

    @property
    def characters_removed(self) -> int:
        text = self._text
        return text.position - text.output_position - len(text.checkpoint().carry)

    def transform(self, data: bytes, final: bool = False) -> bytes:
        buf = bytes(data)
        self.position += len(buf)
        out: list[bytes | memoryview] = []
        at = 0
        if self._held:
            # The held line, ended, goes out as it is when it has nothing to repair (the
            # piece is not copied); else the piece is joined to it (a span may go on).
            end = _line_end(buf, 0, len(buf))
            head = self._held + buf[:end] if buf[end - 1 : end] in (b"\n", b"\r") else b""
            if head and self._find(head, 0) < 0:
                out.append(head)
                at = end
            else:
                buf = self._held + buf
            self._held = b""
        if self._inside:
            at = _line_end(buf, 0, len(buf))
            ended = buf[at - 1 : at] in (b"\n", b"\r")
            self._inside = not ended and not final
            out.append(self._through(buf[:at], final and not ended))
        if not self._inside:
            # The ended lines (all of it when final); the unfinished one is held.
            stop = len(buf) if final else _line_start(buf, at, len(buf))
            if stop > at:
                out += self._lines(buf, at, stop, final)
                at = stop
            if len(buf) - at > self._max_line:
                self._inside = True
                out.append(self._through(buf[at:], False))
                at = len(buf)
        self._held = buf[at:]
        result = out[0] if len(out) == 1 and isinstance(out[0], bytes) else b"".join(out)
        self.output_position += len(result)
        return result

    def _spans(self, buf: bytes, at: int, stop: int) -> list[tuple[int, int]]:
        """Spans of whole lines of ``buf[at:stop]`` that hold every line the text repairer
        could change.  A clean gap shorter than ``_GAP`` goes in with the lines around it;
        while lines to repair keep coming that close, a span grows by a stride four times
        longer each time, taken as it is, so that dense mojibake is a few spans per piece."""
        find = implementation().find_moji_bytes
        longest = self._text.max_carry
        spans: list[tuple[int, int]] = []
        found = find(buf, _INDEX, _PAGES, _WIDTH, at, longest)
        while 0 <= found < stop:
            start, end = _line_start(buf, at, found), _line_end(buf, found, stop)
            stride = self._stride if start == at else 0
            while end < stop:
                found = find(buf, _INDEX, _PAGES, _WIDTH, end, longest)
                if not 0 <= found < min(stop, end + _GAP):
                    stride = 0
                    break
                end = _line_end(buf, max(found, end + stride), stop)
                stride = stride * 4 or _STRIDE
            else:
                found = -1
            self._stride = stride
            spans.append((start, end))
            at = end
        return spans

    def _find(self, buf: bytes, at: int) -> int:
        """Where the first run the text repairer could undo is in ``buf`` from ``at``."""
        find = implementation().find_moji_bytes
        found: int = find(buf, _INDEX, _PAGES, _WIDTH, at, self._text.max_carry)
        return found

    def _lines(self, buf: bytes, at: int, stop: int, final: bool) -> list[bytes | memoryview]:
        """``buf[at:stop]`` (whole lines, the last one unended only when final), its spans
        to repair through the text repairer in one call, the rest as it is.  Each span
        but the last ends at a line end, which the text repairer keeps (a repair gives no
        ASCII), so it holds nothing back, and each span's output is cut back into place
        after as many line ends as the span holds."""
        spans = self._spans(buf, at, stop)
        view = memoryview(buf)
        if not spans:
            return [view[at:stop]]
        joined = (
            view[spans[0][0] : spans[0][1]]
            if len(spans) == 1
            else b"".join([view[a:b] for a, b in spans])
        )
        text = self._decoder.decode(joined, True)
        repaired = self._text.transform(text, final).encode("utf-8", "surrogateescape")
        out: list[bytes | memoryview] = []
        cut = 0
        for a, b in spans[:-1]:
            lines = buf.count(b"\n", a, b) + buf.count(b"\r", a, b)
            end = _after_lines(repaired, cut, cut + b - a, lines)
            out += (view[at:a], repaired[cut:end])
            at, cut = b, end
        out += (view[at : spans[-1][0]], repaired[cut:], view[spans[-1][1] : stop])
        return [piece for piece in out if piece]

    def release(self) -> bytes:
        """The unfinished line held, given to the text repairer now: what
        ``MojibakeRepairer`` would have handed out by now (for a stream stopped short).
        The output of the run stays the same."""
        if self._inside or not self._held:
            return b""
        held, self._held, self._inside = self._held, b"", True
        result = self._through(held, False)
        self.output_position += len(result)
        return result

    def _through(self, data: bytes, final: bool) -> bytes:
        """``data`` decoded, repaired and encoded."""
        text = self._text.transform(self._decoder.decode(data, final), final)
        return text.encode("utf-8", "surrogateescape")

    def checkpoint(self) -> TransformCheckpoint:
        """A JSON-able snapshot (``to_dict``) from which ``from_checkpoint`` continues with
        the output of one run; the text repairer's is its one part."""
        pending = self._decoder.getstate()[0]
        return TransformCheckpoint(
            _KIND,
            self.position,
            self.output_position,
            "",
            {"max_carry": self._text.max_carry, "max_line": self._max_line},
            {"held": self._held.hex(), "pending": pending.hex(), "inside": self._inside},
            (self._text.checkpoint(),),
        )

    @classmethod
    def from_checkpoint(cls, checkpoint: TransformCheckpoint) -> MojibakeBytesRepairer:
        """The repairer ``checkpoint`` was taken of; ``ValueError`` for anything else."""
        if checkpoint.kind != _KIND:
            raise ValueError(f"not a byte mojibake repairer's checkpoint: {checkpoint.kind!r}")
        options: dict[str, Any] = dict(checkpoint.options)
        state: dict[str, Any] = dict(checkpoint.state)
        try:
            built = cls(
                max_carry=int(options.get("max_carry", DEFAULT_MAX_CARRY)),
                max_line=int(options.get("max_line", DEFAULT_MAX_LINE)),
            )
            held = bytes.fromhex(state["held"])
            pending = bytes.fromhex(state["pending"])
            inside = state["inside"]
            (text,) = checkpoint.parts
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a byte mojibake repairer's checkpoint: {exc}") from None
        if (
            not isinstance(inside, bool)
            or len(held) > built.max_line
            or len(pending) > 3
            or ((pending or text.carry) and not inside)
            or (inside and held)
        ):
            raise ValueError("not a byte mojibake repairer's checkpoint: bad carry")
        built._text = MojibakeRepairer.from_checkpoint(text)
        if built._text.max_carry != built.max_carry:
            raise ValueError("not a byte mojibake repairer's checkpoint: bad carry")
        built._decoder.setstate((pending, 0))
        built.position = checkpoint.position
        built.output_position = checkpoint.output_position
        built._held, built._inside = held, inside
        return built

    def reset(self) -> None:
        self._text.reset()
        self._decoder.reset()
        self.position = self.output_position = 0
        self._held = b""
        self._inside = False
        self._stride = 0


def repair_mojibake_bytes(data: bytes, *, max_carry: int = DEFAULT_MAX_CARRY) -> bytes:
    """``data`` with its UTF-8 mojibake repaired: for valid UTF-8,
    ``repair_mojibake(data.decode()).encode()``; other bytes are kept."""
    return MojibakeBytesRepairer(max_carry=max_carry).transform(data, final=True)
