"""``encoding="auto"``: tell a log's encoding from its first bytes.

Logs on Windows are often UTF-16LE (SQL Server's ERRORLOG, PowerShell's ``Out-File`` and
``>`` before PowerShell 6), with a byte-order mark or without; elsewhere UTF-8, and old
programs write the legacy code page.  The follower decides once per file, on the first
``SNIFF_BYTES`` of it (or what there is when its first line is needed), in this order:

1. a byte-order mark: UTF-8 (``utf-8-sig``, the mark dropped), UTF-32 or UTF-16 (the
   codecs that read the mark and drop it);
2. the NUL pattern of UTF-16 without a mark: text in the Latin scripts has a zero high
   byte in most code units, so zero bytes at odd offsets and almost none at even ones is
   UTF-16LE (the reverse, UTF-16BE);
3. UTF-8 if the bytes are valid UTF-8 (a character cut by the end of the prefix does not
   count against it; pure ASCII is UTF-8);
4. UTF-16 by its newlines, for text in scripts with no zero high byte (CJK): bytes that
   are not UTF-8, hold newline code units (0A 00 for UTF-16LE, 00 0A for UTF-16BE) only
   at even offsets, the other order's nowhere at an even offset, and decode as that
   UTF-16 without an error, a U+0000 or another C0 control than tab, CR, LF, VT, FF
   (the same test is made on bytes that are UTF-8 with zero bytes: much of CJK in
   UTF-16 is all ASCII-range bytes);
5. else ``cp1252``, the legacy fallback (Windows' Western code page, a superset of the
   printable Latin-1).

UTF-16 without a mark, with no zero high bytes and no newline in the prefix, takes step
5.  The decision is made on bytes already read: nothing is consumed, so
no byte is lost, and the follower keeps it (and records it in its checkpoint).
"""

from __future__ import annotations

import codecs
import re

from ..core.decoder import Utf8Decoder

__all__ = ["AUTO", "DETECTED_ENCODINGS", "SNIFF_BYTES", "sniff_encoding"]

#: The encoding name that asks for detection.
AUTO = "auto"
#: Every encoding ``sniff_encoding`` can decide on.
DETECTED_ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "cp1252")
#: The prefix the decision is made on.
SNIFF_BYTES = 1 << 16
#: Share of code units with a zero byte on one side (and at most the other share on the
#: other side) that makes a marked-less file UTF-16.
_NUL_SIDE = 0.3
_NUL_OTHER_SIDE = 0.05
#: What text does not hold: a UTF-16 guess that decodes to one of them is wrong (a UTF-8
#: log padded with zero bytes after a crash would be U+0000s).
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f]")

_MARKS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16LE's mark, which starts it
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def sniff_encoding(head: bytes, whole: bool) -> str:
    """The encoding of a file that starts with ``head`` (its first bytes; ``whole``: all
    of them, so a character cut at the end is malformed, not cut by the prefix)."""
    whole = whole and len(head) <= SNIFF_BYTES
    head = head[:SNIFF_BYTES]
    for mark, encoding in _MARKS:
        if head.startswith(mark):
            return encoding
    utf16 = _utf16_by_nuls(head)
    if utf16 is not None:
        return utf16
    try:
        Utf8Decoder("strict").decode(head, final=whole)
    except UnicodeDecodeError:
        return _utf16_by_newlines(head, whole) or "cp1252"
    if b"\x00" in head:
        # Valid UTF-8 rarely holds a zero byte; UTF-16 whose code units are all two
        # ASCII-range bytes (much of CJK) is valid UTF-8 with zeros in its newlines.
        return _utf16_by_newlines(head, whole) or "utf-8"
    return "utf-8"


def _utf16_by_nuls(head: bytes) -> str | None:
    units = len(head) // 2
    if units == 0:
        return None
    low_zeros = head[0 : 2 * units : 2].count(0)  # the bytes at even offsets
    high_zeros = head[1 : 2 * units : 2].count(0)
    if high_zeros >= units * _NUL_SIDE and low_zeros <= units * _NUL_OTHER_SIDE:
        return "utf-16-le"
    if low_zeros >= units * _NUL_SIDE and high_zeros <= units * _NUL_OTHER_SIDE:
        return "utf-16-be"
    return None


def _aligned(head: bytes, pattern: bytes) -> tuple[int, int]:
    """How many times ``pattern`` is in ``head`` at an even offset, and at an odd one."""
    even = odd = 0
    i = head.find(pattern)
    while i >= 0:
        if i % 2:
            odd += 1
        else:
            even += 1
        i = head.find(pattern, i + 1)
    return even, odd


def _utf16_by_newlines(head: bytes, whole: bool) -> str | None:
    for encoding, newline, other in (
        ("utf-16-le", b"\n\x00", b"\x00\n"),
        ("utf-16-be", b"\x00\n", b"\n\x00"),
    ):
        even, odd = _aligned(head, newline)
        if not even or odd or _aligned(head, other)[0]:
            continue
        try:
            text = codecs.getincrementaldecoder(encoding)("strict").decode(head, final=whole)
        except UnicodeDecodeError:
            continue
        if _CONTROLS.search(text) is None:
            return encoding
    return None
