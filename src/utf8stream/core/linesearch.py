"""The line engine's search for line ends in encoded bytes: the only code in Python that
looks for newlines.  Two functions, one per direction, for any code-unit size (1 for
UTF-8 and the ASCII-compatible codecs, 2 and 4 for UTF-16/32): a newline counts only
at a multiple of the unit from the start of the bytes searched.

``line_ends`` finds every line end forwards (the line engine, the pure scanner's cut of
lines, the Dask splitter's line starts); ``last_unit`` finds the last newline unit
backwards (the end of the last complete line of a read, the end of a slice of a long
read, the last N lines of ``tail``).  Both search with ``bytes.find``/``bytes.rfind``
(memchr): a regular expression scans a long line at a few tens of MB/s.  The C scanner
cuts lines in the pass that decodes them; that cut is this search's fast path inside
the scanner (``_lines.h``), tested against it.
"""

from __future__ import annotations

import re
from itertools import accumulate, compress, repeat
from operator import add

__all__ = ["last_unit", "line_ends", "split_text"]

_UNIVERSAL = re.compile("\r\n|\r|\n")
_UNIVERSAL_KEPT = re.compile("(\r\n|\r|\n)")


def line_ends(
    buf: bytes,
    newline: bytes | tuple[bytes, bytes],
    unit: int,
    start: int = 0,
    hold_cr: bool = True,
) -> list[tuple[int, int]]:
    """``(content end, next line start)`` for each complete line in ``buf``, looked for
    from ``start`` on (a code-unit offset; the bytes before it hold none).

    ``newline`` is the encoded fixed newline, or for universal newlines (``\\r\\n``,
    ``\\r`` and ``\\n``) the pair of the encoded ``\\r`` and ``\\n`` units.  With
    ``hold_cr``, a universal ``\\r`` with no whole code unit after it ends no line yet: it
    may be the first half of ``\\r\\n``.
    """
    if isinstance(newline, tuple):
        return _universal_ends(buf, newline[0], newline[1], unit, start, hold_cr)
    return _fixed_ends(buf, newline, unit, start)


def last_unit(buf: bytes, sub: bytes, start: int, end: int, unit: int, shift: int = 0) -> int:
    """The last ``sub`` in ``buf[start:end]`` at a code unit, or -1: at an offset ``at``
    with ``at + shift`` a multiple of ``unit``."""
    at = buf.rfind(sub, start, end)
    while at >= 0 and (at + shift) % unit:
        at = buf.rfind(sub, start, at + len(sub) - 1)
    return at


def split_text(text: str, newline: str | None, keepends: bool = False) -> list[str]:
    """The lines of ``text``, the decoded text of whole lines the search above cut (it
    ends in a newline), with their newlines if ``keepends``; ``newline`` None for
    universal newlines.  The text has exactly the newlines of its bytes, so one split of
    the text (``str.split``, C-speed) cuts all the lines of a block decoded in one call,
    where decoding line by line would cost a call per line."""
    if newline is None:
        if "\r" not in text:
            newline = "\n"  # str.split is many times faster than a regex
        elif keepends:
            parts = _UNIVERSAL_KEPT.split(text)  # line, newline, ..., line, newline, ""
            return [a + b for a, b in zip(parts[::2], parts[1::2], strict=False)]
        else:
            lines = _UNIVERSAL.split(text)
            lines.pop()  # the empty rest after the last newline
            return lines
    lines = text.split(newline)
    lines.pop()
    return [line + newline for line in lines] if keepends else lines


def _fixed_ends(buf: bytes, nl: bytes, unit: int, start: int) -> list[tuple[int, int]]:
    width = len(nl)
    if width == unit > 1:
        # One code unit of 2 or 4 bytes: found in C loops, no Python step per line.
        offsets = _unit_offsets(buf, nl, start)
        return list(zip(offsets, map(add, offsets, repeat(width)), strict=True))
    out: list[tuple[int, int]] = []
    append = out.append
    find = buf.find
    at = find(nl, start)
    if unit == 1:  # every offset is a code unit's: memchr (or memmem), nothing else
        while at >= 0:
            append((at, at + width))
            at = find(nl, at + width)
        return out
    while at >= 0:
        if at % unit:
            at = find(nl, at + 1)
            continue
        append((at, at + width))
        at = find(nl, at + width)
    return out


def _unit_offsets(buf: bytes, unit_bytes: bytes, start: int) -> list[int]:
    """The offsets of the code unit ``unit_bytes`` in ``buf`` from ``start`` (a unit's
    offset), at multiples of its size.

    ``bytes.split`` at the unit's last nonzero byte (memchr; a search for a unit with
    the NULs of UTF-16/32 text in it runs at a fraction of that speed) and the sums of
    the pieces' lengths give each candidate; then those aligned and whole are kept.
    """
    unit = len(unit_bytes)
    last = unit - 1
    while last and not unit_bytes[last]:
        last -= 1
    key = unit_bytes[last : last + 1]
    pieces = buf[start + last :].split(key)
    pieces.pop()  # after the last candidate
    # Each piece and its key: the candidate's unit starts ``last`` bytes before its key.
    at = list(accumulate(map(add, map(len, pieces), repeat(1)), initial=start - 1))
    del at[0]
    aligned = [a for a in at if not a % unit]
    return list(compress(aligned, map(buf.startswith, repeat(unit_bytes), aligned)))


def _universal_ends(
    buf: bytes, cr: bytes, lf: bytes, unit: int, start: int, hold_cr: bool
) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    find = buf.find
    # The first \r unit (for 2- or 4-byte units by the memchr of ``_unit_offsets``).
    cr_at = find(cr, start) if unit == 1 else next(iter(_unit_offsets(buf, cr, start)), -1)
    if cr_at < 0:  # the common case: "\n" only
        return _fixed_ends(buf, lf, unit, start)
    lf_at = find(lf, start)
    if unit == 1 and buf.count(cr, start) == buf.count(lf, start) == buf.count(cr + lf, start):
        # "\r\n" only (Windows): one search, as cheap as for "\n".
        while cr_at >= 0:
            out.append((cr_at, cr_at + 2))
            cr_at = find(cr, cr_at + 2)
        return out
    while cr_at >= 0 and cr_at % unit:
        cr_at = find(cr, cr_at + 1)
    size = len(buf)
    while lf_at >= 0 or cr_at >= 0:
        # The "\n"s before the next "\r" (all of them when there is none), in a tight loop.
        before = cr_at if cr_at >= 0 else size
        while 0 <= lf_at < before:
            if lf_at % unit:
                lf_at = find(lf, lf_at + 1)
                continue
            out.append((lf_at, lf_at + unit))
            lf_at = find(lf, lf_at + unit)
        if cr_at < 0:
            break
        after = cr_at + unit
        if lf_at == after:
            after += unit
            lf_at = find(lf, after)
        elif hold_cr and size < after + unit:
            break  # the \r may be the first half of \r\n
        out.append((cr_at, after))
        cr_at = find(cr, after)
        while cr_at >= 0 and cr_at % unit:
            cr_at = find(cr, cr_at + 1)
    return out
