"""Pure-Python scanner designs without a codec error handler, against ``PyScanner`` (issue 12).

    .venv/bin/python benchmarks/scanner_designs.py [--check-only] [--calls N]
        [--designs NAME ...] [--sizes BYTES ...]

``PyScanner`` (``core/scanner.py``) decodes a damaged buffer with CPython's UTF-8
decoder and an error handler registered by name (``codecs.register_error``), finding
the running scanner through a ``threading.local``: CPython calls it once per maximal
subpart.  Issue 12 asks to get rid of both, at no cost.  This script holds the
handler-free designs tried for the cheapest case (the decoder's ``replace`` policy with
no ``on_malformed``: only the text and the units counted by kind are needed, no byte
offsets), checks that each gives ``PyScanner``'s text, held prefix and counts on the
corrupted benchmark corpus cut into chunks, then counts each one's instructions per
chunk under callgrind (``N`` and ``2 N`` rounds, the difference over ``N``, so the
interpreter's start and the corpus's making are left out):

``handler``
    ``PyScanner.feed`` in its damaged mode (the dirty window held open), as today.
``floor``
    ``codecs.utf_8_decode(buf, "replace")`` alone: the text with no counts, what any
    design pays at least.
``search``
    decode with the built-in ``replace`` (no Python call per unit), find each U+FFFD
    (``str.find``, memchr), and find the unit's byte offset by searching the bytes
    (``bytes.find``) for the encoded last characters before it, followed by a byte
    that starts no valid character (exact: see ``_search_offset``); classify from there.
``search-fast``
    ``search`` tuned (the search starts at the least offset the piece's characters
    allow, the first candidate is tested inline, a lone byte's kind from a table).
``reencode``
    branch handler18's idea: ``replace``, split at U+FFFD, each piece's UTF-8 length
    from ``len(piece.encode())``.
``escape``
    decode with the built-in ``surrogateescape`` (each bad byte one U+DC80..U+DCFF),
    find the damaged runs with a regular expression, split each run into units by
    Table 3-7.

``handler-events`` and ``search-events``: the same two with every unit reported to a
callback (``on_malformed``: a ``Malformed`` event with its offset, bytes and kind; the
events checked equal).  Events need each unit's byte offset, which ``search`` and
``reencode`` find and ``escape`` does not (it would add ``reencode``'s cost).
Instructions are not time; run ``bench_decoder.py`` for that.

Counted on 2026-11-27 (CPython 3.11.7, ``--calls 4``; instructions per 64 KiB of input,
41.5 units in it; ``handler`` and ``handler-events`` are today's ``PyScanner``)::

    chunk   design               instructions   vs handler
    64 KiB  floor                     710,193   0.71
    64 KiB  handler                 1,006,190   1.00
    64 KiB  search-fast             1,103,836   1.10   <- the one row it loses
    64 KiB  search                  1,344,159   1.34
    64 KiB  search-split            1,628,832   1.62
    64 KiB  reencode                2,208,223   2.19
    64 KiB  escape                 11,946,100  11.87
    64 KiB  handler-events          1,262,248   1.00
    64 KiB  search-fast-events      1,259,859   1.00
    256 B   floor                   1,741,077   0.65
    256 B   handler                 2,679,494   1.00
    256 B   search-fast             2,346,087   0.88
    256 B   search                  2,613,658   0.97
    256 B   search-split            2,264,939   0.84
    256 B   reencode                2,188,487   0.82
    256 B   escape                 13,238,711   4.94
    256 B   handler-events          2,994,204   1.00
    256 B   search-fast-events      2,509,491   0.84

A handler call costs about 7,100 instructions a unit with no callback; ``search-fast``
about 9,500 (``str.find`` for U+FFFD, memchr over a UCS-2 string with its false hits at
U+00FD and the like, about 2,500; slicing and encoding the tail, ``bytes.find``, the
inline tests and the count, the rest).  Every design that rescans the text costs more
than the handler's whole work at this density: re-encoding 59,000 characters costs
705,000 instructions, a regular expression over them 11 million.
"""

from __future__ import annotations

import argparse
import codecs
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from _corpora import chunked, corrupt, mixed  # noqa: E402

from utf8stream.core._accel import ACCEL_KINDS  # noqa: E402
from utf8stream.core._bytes import (  # noqa: E402
    BAD_SECOND_KIND,
    LONE_KIND,
    SECOND_HI,
    SECOND_LO,
    SEQ_LEN,
    classify_unit,
    is_proper_prefix,
    unit_length,
)
from utf8stream.core.events import Malformed, MalformedKind  # noqa: E402
from utf8stream.core.scanner import PyScanner  # noqa: E402

_new_object = object.__new__
_set_offset = Malformed.__dict__["offset"].__set__
_set_data = Malformed.__dict__["data"].__set__
_set_kind = Malformed.__dict__["kind"].__set__

_KIND_INDEX = {kind: i for i, kind in enumerate(ACCEL_KINDS)}
_FFFD = "\ufffd"
_decode = codecs.utf_8_decode
_RUNS = re.compile("([\udc80-\udcff]+)")
#: How many characters before a unit are searched for in the bytes.
_TAIL = 8

Feed = Callable[[bytes, bytes, bool], tuple[str, bytes]]


def corpus(size: int = 1 << 18, seed: int = 2026) -> bytes:
    """The corrupted corpus of ``_corpora`` (mixed text, one random byte in 1000)."""
    rnd = random.Random(seed)
    return corrupt(mixed(size, rnd), rnd)


def _held(buf: bytes, text: str, used: int, errors: str) -> tuple[str, bytes]:
    """What CPython held at a non-final end; ED A0..BF (no byte completes it) now."""
    if used == len(buf):
        return text, b""
    tail = buf[used:]
    if is_proper_prefix(tail):
        return text, tail
    return text + _decode(tail, errors, True)[0], b""


def _valid_at(buf: bytes, q: int) -> bool:
    """A well-formed character other than U+FFFD starts at ``buf[q]``."""
    x = buf[q]
    if x < 0x80:
        return True
    need = SEQ_LEN[x]
    if need == 0 or q + need > len(buf):
        return False
    y = buf[q + 1]
    if not SECOND_LO[x] <= y <= SECOND_HI[x]:
        return False
    if need > 2 and not 0x80 <= buf[q + 2] <= 0xBF:
        return False
    if need > 3 and not 0x80 <= buf[q + 3] <= 0xBF:
        return False
    return not (x == 0xEF and y == 0xBF and buf[q + 2] == 0xBD)


def _search_offset(buf: bytes, lo: int, piece_tail: bytes) -> int:
    """Where the unit after a valid piece ending in ``piece_tail`` starts (``lo``: where
    the piece starts, ``piece_tail`` whole characters).

    Exact: an occurrence of ``piece_tail`` before the true one lies inside the piece, at
    a character boundary (it starts with a non-continuation byte), so a whole character
    other than U+FFFD follows it; the first occurrence followed by anything else is the
    true one (a U+FFFD of the input there is a character, told apart by the caller).
    """
    j = buf.find(piece_tail, lo)
    while True:
        q = j + len(piece_tail)
        if q >= len(buf) or not _valid_at(buf, q):
            return q
        j = buf.find(piece_tail, j + 1)


def make_search() -> Feed:
    counts = [0] * len(ACCEL_KINDS)

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        buf = pending + data if pending else data
        text, used = _decode(buf, "replace", final)
        text, held = _held(buf, text, used, "replace")
        find = text.find
        r = find(_FFFD)
        if r < 0:
            return text, held
        lo = 0  # byte offset after the last unit
        a = 0  # its character index
        while r >= 0:
            if r == a:
                b = lo
            elif r - a <= _TAIL:
                b = lo + len(text[a:r].encode())
            else:
                b = _search_offset(buf, lo, text[r - _TAIL : r].encode())
            x = buf[b]
            kind = LONE_KIND[x]
            if kind is None:
                if x == 0xEF and buf[b + 1 : b + 3] == b"\xbf\xbd":  # the input's own
                    lo = b + 3
                    a = r + 1
                    r = find(_FFFD, a)
                    continue
                e = b + unit_length(buf, b)
                kind = classify_unit(buf, b, e, True)
            else:
                e = b + 1
            counts[_KIND_INDEX[kind]] += 1
            lo = e
            a = r + 1
            r = find(_FFFD, a)
        return text, held

    feed.counts = counts  # type: ignore[attr-defined]
    return feed


def make_search_fast() -> Feed:
    """``search`` tuned: the bytes searched from the piece's least possible length on
    (one byte a character), the first candidate tested inline, each unit cut and
    classified inline, a lone byte's kind from a table."""
    counts = [0] * len(ACCEL_KINDS)
    lone_index = [None if kind is None else _KIND_INDEX[kind] for kind in LONE_KIND]
    bad_second = [0] * 256
    for lead, kind in BAD_SECOND_KIND.items():
        bad_second[lead] = _KIND_INDEX[kind]
    incomplete = _KIND_INDEX[MalformedKind.INCOMPLETE_SEQUENCE]
    truncated = _KIND_INDEX[MalformedKind.TRUNCATED_AT_END]

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        buf = pending + data if pending else data
        text, used = _decode(buf, "replace", final)
        if used != len(buf):
            text, held = _held(buf, text, used, "replace")
        else:
            held = b""
        find = text.find
        r = find(_FFFD)
        if r < 0:
            return text, held
        n = len(buf)
        lo = 0
        a = 0
        while r >= 0:
            m = r - a
            if not m:
                b = lo
            elif m <= _TAIL:
                b = lo + len(text[a:r].encode())
            else:
                tail = text[r - _TAIL : r].encode()
                # Unbounded: CPython 3.11's bytes.find takes its two-way search
                # over 30,000 bytes or more, which costs more to set up, yet bounding
                # the haystack below that counted 20,000 instructions a 64 KiB more.
                b = buf.find(tail, lo + m - _TAIL) + len(tail)
                x = buf[b]
                if x < 0x80 or (
                    (need := SEQ_LEN[x])
                    and b + need <= n
                    and SECOND_LO[x] <= buf[b + 1] <= SECOND_HI[x]
                    and (need < 3 or 0x80 <= buf[b + 2] <= 0xBF)
                    and (need < 4 or 0x80 <= buf[b + 3] <= 0xBF)
                    and not (x == 0xEF and buf[b + 1] == 0xBF and buf[b + 2] == 0xBD)
                ):
                    # A whole character follows: not this occurrence (see
                    # ``_search_offset``).
                    b = _search_offset(buf, b - len(tail) + 1, tail)
            x = buf[b]
            index = lone_index[x]
            e = b + 1
            if index is None:
                # A lead byte (or the input's own U+FFFD): its maximal subpart.
                if e < n and SECOND_LO[x] <= buf[e] <= SECOND_HI[x]:
                    e += 1
                    stop = min(b + SEQ_LEN[x], n)
                    while e < stop and 0x80 <= buf[e] <= 0xBF:
                        e += 1
                    if e - b == SEQ_LEN[x]:  # EF BF BD: a character
                        lo = e
                        a = r + 1
                        r = find(_FFFD, a)
                        continue
                    index = truncated if e == n else incomplete
                elif e == n:
                    index = truncated
                elif 0x80 <= buf[e] <= 0xBF:
                    index = bad_second[x]
                else:
                    index = incomplete
            counts[index] += 1
            lo = e
            a = r + 1
            r = find(_FFFD, a)
        return text, held

    feed.counts = counts  # type: ignore[attr-defined]
    return feed


def make_search_split() -> Feed:
    """``search-fast`` over ``str.split`` at U+FFFD (one C call) rather than a
    ``str.find`` a unit.

    ``search`` tuned: the bytes searched from the piece's least possible length on
    (one byte a character), the first candidate tested inline, each unit cut and
    classified inline, a lone byte's kind from a table."""
    counts = [0] * len(ACCEL_KINDS)
    lone_index = [None if kind is None else _KIND_INDEX[kind] for kind in LONE_KIND]
    bad_second = [0] * 256
    for lead, kind in BAD_SECOND_KIND.items():
        bad_second[lead] = _KIND_INDEX[kind]
    incomplete = _KIND_INDEX[MalformedKind.INCOMPLETE_SEQUENCE]
    truncated = _KIND_INDEX[MalformedKind.TRUNCATED_AT_END]

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        buf = pending + data if pending else data
        text, used = _decode(buf, "replace", final)
        if used != len(buf):
            text, held = _held(buf, text, used, "replace")
        else:
            held = b""
        pieces = text.split(_FFFD)
        if len(pieces) == 1:
            return text, held
        pieces.pop()
        n = len(buf)
        lo = 0
        for piece in pieces:
            m = len(piece)
            if not m:
                b = lo
            elif m <= _TAIL:
                b = lo + len(piece.encode())
            else:
                tail = piece[-_TAIL:].encode()
                b = buf.find(tail, lo + m - _TAIL) + len(tail)
                x = buf[b]
                if x < 0x80 or (
                    (need := SEQ_LEN[x])
                    and b + need <= n
                    and SECOND_LO[x] <= buf[b + 1] <= SECOND_HI[x]
                    and (need < 3 or 0x80 <= buf[b + 2] <= 0xBF)
                    and (need < 4 or 0x80 <= buf[b + 3] <= 0xBF)
                    and not (x == 0xEF and buf[b + 1] == 0xBF and buf[b + 2] == 0xBD)
                ):
                    # A whole character follows: not this occurrence (see
                    # ``_search_offset``).
                    b = _search_offset(buf, b - len(tail) + 1, tail)
            x = buf[b]
            index = lone_index[x]
            e = b + 1
            if index is None:
                # A lead byte (or the input's own U+FFFD): its maximal subpart.
                if e < n and SECOND_LO[x] <= buf[e] <= SECOND_HI[x]:
                    e += 1
                    stop = min(b + SEQ_LEN[x], n)
                    while e < stop and 0x80 <= buf[e] <= 0xBF:
                        e += 1
                    if e - b == SEQ_LEN[x]:  # EF BF BD: a character
                        lo = e
                        continue
                    index = truncated if e == n else incomplete
                elif e == n:
                    index = truncated
                elif 0x80 <= buf[e] <= 0xBF:
                    index = bad_second[x]
                else:
                    index = incomplete
            counts[index] += 1
            lo = e
        return text, held

    feed.counts = counts  # type: ignore[attr-defined]
    return feed


def make_search_fast_events() -> Feed:
    """``search-fast`` with every unit reported to a callback, as ``on_malformed``.

    ``search`` tuned: the bytes searched from the piece's least possible length on
    (one byte a character), the first candidate tested inline, each unit cut and
    classified inline, a lone byte's kind from a table."""
    counts = [0] * len(ACCEL_KINDS)
    events: list[Malformed] = []
    callback = events.append
    kinds = ACCEL_KINDS
    lone_index = [None if kind is None else _KIND_INDEX[kind] for kind in LONE_KIND]
    bad_second = [0] * 256
    for lead, kind in BAD_SECOND_KIND.items():
        bad_second[lead] = _KIND_INDEX[kind]
    incomplete = _KIND_INDEX[MalformedKind.INCOMPLETE_SEQUENCE]
    truncated = _KIND_INDEX[MalformedKind.TRUNCATED_AT_END]

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        buf = pending + data if pending else data
        text, used = _decode(buf, "replace", final)
        if used != len(buf):
            text, held = _held(buf, text, used, "replace")
        else:
            held = b""
        find = text.find
        r = find(_FFFD)
        if r < 0:
            return text, held
        n = len(buf)
        lo = 0
        a = 0
        while r >= 0:
            m = r - a
            if not m:
                b = lo
            elif m <= _TAIL:
                b = lo + len(text[a:r].encode())
            else:
                tail = text[r - _TAIL : r].encode()
                # Unbounded: CPython 3.11's bytes.find takes its two-way search
                # over 30,000 bytes or more, which costs more to set up, yet bounding
                # the haystack below that counted 20,000 instructions a 64 KiB more.
                b = buf.find(tail, lo + m - _TAIL) + len(tail)
                x = buf[b]
                if x < 0x80 or (
                    (need := SEQ_LEN[x])
                    and b + need <= n
                    and SECOND_LO[x] <= buf[b + 1] <= SECOND_HI[x]
                    and (need < 3 or 0x80 <= buf[b + 2] <= 0xBF)
                    and (need < 4 or 0x80 <= buf[b + 3] <= 0xBF)
                    and not (x == 0xEF and buf[b + 1] == 0xBF and buf[b + 2] == 0xBD)
                ):
                    # A whole character follows: not this occurrence (see
                    # ``_search_offset``).
                    b = _search_offset(buf, b - len(tail) + 1, tail)
            x = buf[b]
            index = lone_index[x]
            e = b + 1
            if index is None:
                # A lead byte (or the input's own U+FFFD): its maximal subpart.
                if e < n and SECOND_LO[x] <= buf[e] <= SECOND_HI[x]:
                    e += 1
                    stop = min(b + SEQ_LEN[x], n)
                    while e < stop and 0x80 <= buf[e] <= 0xBF:
                        e += 1
                    if e - b == SEQ_LEN[x]:  # EF BF BD: a character
                        lo = e
                        a = r + 1
                        r = find(_FFFD, a)
                        continue
                    index = truncated if e == n else incomplete
                elif e == n:
                    index = truncated
                elif 0x80 <= buf[e] <= 0xBF:
                    index = bad_second[x]
                else:
                    index = incomplete
            counts[index] += 1
            event: Malformed = _new_object(Malformed)
            _set_offset(event, b)
            _set_data(event, buf[b:e])
            _set_kind(event, kinds[index])
            callback(event)
            lo = e
            a = r + 1
            r = find(_FFFD, a)
        return text, held

    feed.counts = counts  # type: ignore[attr-defined]
    feed.events = events  # type: ignore[attr-defined]
    return feed


def make_search_events() -> Feed:
    """``search`` with every unit reported to a callback, as ``on_malformed``."""
    counts = [0] * len(ACCEL_KINDS)
    events: list[Malformed] = []
    callback = events.append

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        buf = pending + data if pending else data
        text, used = _decode(buf, "replace", final)
        text, held = _held(buf, text, used, "replace")
        find = text.find
        r = find(_FFFD)
        if r < 0:
            return text, held
        lo = 0
        a = 0
        while r >= 0:
            if r == a:
                b = lo
            elif r - a <= _TAIL:
                b = lo + len(text[a:r].encode())
            else:
                b = _search_offset(buf, lo, text[r - _TAIL : r].encode())
            x = buf[b]
            kind = LONE_KIND[x]
            if kind is None:
                if x == 0xEF and buf[b + 1 : b + 3] == b"\xbf\xbd":
                    lo = b + 3
                    a = r + 1
                    r = find(_FFFD, a)
                    continue
                e = b + unit_length(buf, b)
                kind = classify_unit(buf, b, e, True)
            else:
                e = b + 1
            counts[_KIND_INDEX[kind]] += 1
            event: Malformed = _new_object(Malformed)
            _set_offset(event, b)
            _set_data(event, buf[b:e])
            _set_kind(event, kind)
            callback(event)
            lo = e
            a = r + 1
            r = find(_FFFD, a)
        return text, held

    feed.counts = counts  # type: ignore[attr-defined]
    feed.events = events  # type: ignore[attr-defined]
    return feed


def make_reencode() -> Feed:
    counts = [0] * len(ACCEL_KINDS)

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        buf = pending + data if pending else data
        text, used = _decode(buf, "replace", final)
        text, held = _held(buf, text, used, "replace")
        if _FFFD not in text:
            return text, held
        pieces = text.split(_FFFD)
        b = 0
        for piece in pieces[:-1]:
            b += len(piece.encode())
            x = buf[b]
            kind = LONE_KIND[x]
            if kind is None:
                if x == 0xEF and buf[b + 1 : b + 3] == b"\xbf\xbd":
                    b += 3
                    continue
                e = b + unit_length(buf, b)
                kind = classify_unit(buf, b, e, True)
            else:
                e = b + 1
            counts[_KIND_INDEX[kind]] += 1
            b = e
        return text, held

    feed.counts = counts  # type: ignore[attr-defined]
    return feed


def make_escape() -> Feed:
    counts = [0] * len(ACCEL_KINDS)

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        buf = pending + data if pending else data
        text, used = _decode(buf, "surrogateescape", final)
        text, held = _held(buf, text, used, "surrogateescape")
        parts = _RUNS.split(text)
        if len(parts) == 1:
            return text, held
        out = [parts[0]]
        n = len(text)
        pos = len(parts[0])
        for i in range(1, len(parts), 2):
            run = parts[i].encode("utf-8", "surrogateescape")
            pos += len(run)
            # The byte after the run starts a character or a held prefix (or there is
            # none).
            context = run + b"A" if pos < n or held else run
            s = 0
            units = 0
            while s < len(run):
                e = s + unit_length(context, s)
                counts[_KIND_INDEX[classify_unit(context, s, e, True)]] += 1
                units += 1
                s = e
            out.append(_FFFD * units)
            out.append(parts[i + 1])
            pos += len(parts[i + 1])
        return "".join(out), held

    feed.counts = counts  # type: ignore[attr-defined]
    return feed


def make_handler() -> Feed:
    scanner = PyScanner(_FFFD, None)
    scanner._dirty = 1 << 62

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        return scanner.feed(pending, data, final, 0)

    feed.scanner = scanner  # type: ignore[attr-defined]
    return feed


def make_handler_events() -> Feed:
    """``handler`` with every unit reported to a callback, as ``on_malformed``."""
    events: list[Malformed] = []
    scanner = PyScanner(_FFFD, events.append)
    scanner._dirty = 1 << 62

    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        # Each event's offset in its call's buffer, as ``search-events`` gives it.
        return scanner.feed(pending, data, final, len(pending) + len(data))

    feed.scanner = scanner  # type: ignore[attr-defined]
    feed.events = events  # type: ignore[attr-defined]
    return feed


def make_floor() -> Feed:
    def feed(pending: bytes, data: bytes, final: bool) -> tuple[str, bytes]:
        buf = pending + data if pending else data
        text, used = _decode(buf, "replace", final)
        return text, buf[used:]

    return feed


DESIGNS: dict[str, Callable[[], Feed]] = {
    "handler": make_handler,
    "floor": make_floor,
    "search": make_search,
    "search-fast": make_search_fast,
    "search-split": make_search_split,
    "handler-events": make_handler_events,
    "search-events": make_search_events,
    "search-fast-events": make_search_fast_events,
    "reencode": make_reencode,
    "escape": make_escape,
}


def event_list(feed: Feed) -> list[tuple[int, bytes, str]] | None:
    events = getattr(feed, "events", None)
    if events is None:
        return None
    return [(e.offset, e.data, e.kind.name) for e in events]


def run(feed: Feed, chunks: list[bytes]) -> str:
    pending = b""
    texts = []
    last = len(chunks) - 1
    for i, chunk in enumerate(chunks):
        text, pending = feed(pending, chunk, i == last)
        texts.append(text)
    return "".join(texts)


def counts_of(feed: Feed) -> tuple[int, ...]:
    scanner = getattr(feed, "scanner", None)
    if scanner is not None:
        return scanner.drain()[:-1]  # type: ignore[no-any-return]
    return tuple(feed.counts)  # type: ignore[attr-defined]


def check(data: bytes, sizes: list[int]) -> None:
    """Each design gives the handler's text and counts (the floor: its text)."""
    for size in sizes:
        chunks = chunked(data, size)
        reference = make_handler()
        text = run(reference, chunks)
        assert text == data.decode("utf-8", "replace")
        expected = counts_of(reference)
        reporter = make_handler_events()
        run(reporter, chunks)
        events = event_list(reporter)
        for name, make in DESIGNS.items():
            feed = make()
            assert run(feed, chunks) == text, (name, size)
            if name != "floor":
                assert counts_of(feed) == expected, (name, size, counts_of(feed), expected)
            assert event_list(feed) in (None, events), (name, size)
        print(f"{size:>6} B chunks: every design agrees ({sum(expected)} units)")
    fuzz()


def fuzz(rounds: int = 3000, seed: int = 12) -> None:
    """Damaged text with many units of every kind, the input's own U+FFFD and ED-lead
    Hangul, cut anywhere: each design agrees with the handler."""
    rnd = random.Random(seed)
    pieces = [
        b"a",
        b"\xc3\xa9",
        b"\xe2\x80\x99",
        b"\xf0\x9f\x98\x80",
        b"\xef\xbf\xbd",
        b"\xed\x9f\xbf",
        b"\xed",
        b"\xed\xa0",
        b"\xed\xa0\x80",
        b"\xe2\x80",
        b"\xf0\x9f",
        b"\x80",
        b"\xc0",
        b"\xff",
        b"\xf4\x90",
        b"\xe0\x80",
        b"\n",
    ]
    for _ in range(rounds):
        data = b"".join(
            rnd.choice(pieces) if rnd.random() < 0.7 else bytes([rnd.randrange(256)])
            for _ in range(rnd.randrange(1, 40))
        )
        cuts = sorted(rnd.randrange(len(data) + 1) for _ in range(rnd.randrange(3)))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        reference = make_handler()
        text = run(reference, chunks)
        expected = counts_of(reference)
        reporter = make_handler_events()
        run(reporter, chunks)
        events = event_list(reporter)
        for name, make in DESIGNS.items():
            feed = make()
            got = run(feed, chunks)
            assert got == text, (name, data, cuts)
            if name != "floor":
                assert counts_of(feed) == expected, (name, data, cuts)
            assert event_list(feed) in (None, events), (name, data, cuts)
    print(f"{rounds} damaged inputs: every design agrees")
    # Long pieces: the unit far past the least offset the piece allows.
    for data in (
        "é".encode() * 40_000 + b"\xff",
        "€".encode() * 20_000 + b"\xe2\x82" + b"x" * 40_000 + b"\xc3",
        b"a" * 70_000 + b"\x80" + "é€".encode() * 16_000 + b"\xed\xa0",
    ):
        reference = make_handler()
        text = run(reference, [data])
        expected = counts_of(reference)
        for name, make in DESIGNS.items():
            feed = make()
            assert run(feed, [data]) == text, name
            if name != "floor":
                assert counts_of(feed) == expected, name
    print("long pieces: every design agrees")


CHILD = """
import sys
sys.argv = ["x"]
sys.path.insert(0, {here!r})
import scanner_designs as m
data = m.corpus({corpus_size})
chunks = m.chunked(data, {size})
feed = m.DESIGNS[{design!r}]()
events = getattr(feed, "events", None)
for _ in range({rounds}):
    m.run(feed, chunks)
    if events is not None:
        events.clear()  # the same live objects in every round
"""


def instructions(design: str, size: int, rounds: int, corpus_size: int) -> int:
    code = CHILD.format(
        here=str(HERE), corpus_size=corpus_size, size=size, design=design, rounds=rounds
    )
    result = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            code,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    match = re.search(r"Collected : (\d+)", result.stderr)
    assert match is not None, result.stderr[-2000:]
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check-only", action="store_true")
    parser.add_argument("--calls", type=int, default=2, help="rounds over the corpus (N)")
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=DESIGNS)
    parser.add_argument("--sizes", nargs="+", type=int, default=[65536, 256])
    parser.add_argument("--corpus-kib", type=int, default=256)
    args = parser.parse_args()
    corpus_size = args.corpus_kib * 1024
    data = corpus(corpus_size)
    check(data, args.sizes)
    if args.check_only:
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    n = args.calls
    print(f"instructions per 64 KiB of the corrupted corpus ({args.corpus_kib} KiB, N={n})")
    for size in args.sizes:
        per = {}
        for design in args.designs:
            one = instructions(design, size, n, corpus_size)
            two = instructions(design, size, 2 * n, corpus_size)
            per[design] = (two - one) / n / (corpus_size / 65536)
        base = per.get("handler")
        for design, value in per.items():
            ratio = f"{value / base:6.2f}x handler" if base else ""
            print(f"{size:>6} B chunks  {design:9} {value:14,.0f}  {ratio}")


if __name__ == "__main__":
    main()
