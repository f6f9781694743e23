"""The scanner seam: its two implementations (C ``Units``, Python ``PyScanner``) agree.

Driven directly, call by call, with random bytes and chunkings, both separators modes,
line limits and callbacks that raise or try to re-enter: same text, held prefix, parts,
flags, offsets, events, counts, and the same ``fail_start``/``resume_at`` after a raise.
Both are also held to ``bytes.decode``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from _helpers import CORE, FRAGMENTS, any_bytes, event_tuples
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import Malformed
from utf8stream.core import _accel
from utf8stream.core.scanner import PyScanner, scanner_type

pytestmark = pytest.mark.skipif(
    not _accel.accelerated(), reason="the C accelerator is not built here (pure-Python install)"
)

_NEWLINES = [b"\n", b"\r", b"\r\n", b"\n\r"]
line_bytes = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(_NEWLINES), st.binary(max_size=2)),
    max_size=30,
).map(b"".join)


class Boom(Exception):
    pass


@dataclass
class Side:
    """One implementation, with a callback that records, raises or re-enters."""

    scanner: Any
    raise_at: frozenset[int]
    reenter: bool
    events: list[Malformed] = field(default_factory=list)
    reentry_errors: int = 0

    def callback(self, event: Malformed) -> None:
        self.events.append(event)
        if self.reenter:
            try:
                self.scanner.feed(b"", b"x", False, 0)
            except RuntimeError:
                self.reentry_errors += 1
        if len(self.events) in self.raise_at:
            raise Boom

    def call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.scanner, method)(*args)
        except Boom:
            return ("boom", self.scanner.fail_start, self.scanner.resume_at)


def make_sides(replacement: str, raise_at: frozenset[int], reenter: bool) -> list[Side]:
    sides = []
    for accelerated in (True, False):
        with _accel.use_accelerator(accelerated):
            make = scanner_type()
        side = Side(None, raise_at, reenter)
        side.scanner = make(replacement, side.callback)
        assert isinstance(side.scanner, PyScanner) != accelerated
        sides.append(side)
    return sides


def assert_same(sides: list[Side], results: list[Any]) -> None:
    assert results[0] == results[1]
    assert event_tuples(sides[0].events) == event_tuples(sides[1].events)
    assert sides[0].reentry_errors == sides[1].reentry_errors
    assert sides[0].scanner.drain() == sides[1].scanner.drain()


@CORE
@given(
    data=st.one_of(any_bytes, line_bytes),
    cuts=st.lists(st.integers(0, 200), max_size=6),
    replacement=st.sampled_from(["\ufffd", ""]),
    raise_at=st.frozensets(st.integers(1, 8), max_size=3),
    reenter=st.booleans(),
    start=st.integers(0, 1 << 40),
)
def test_feed_agrees(
    data: bytes,
    cuts: list[int],
    replacement: str,
    raise_at: frozenset[int],
    reenter: bool,
    start: int,
) -> None:
    sides = make_sides(replacement, raise_at, reenter)
    bounds = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    pendings = [b"", b""]
    position = start
    texts: list[str] = []
    for a, b in zip(bounds, [*bounds[1:], len(data)], strict=True):
        chunk = data[a:b]
        position += len(chunk)
        final = b == len(data)
        results = [
            side.call("feed", pending, chunk, final, position)
            for side, pending in zip(sides, pendings, strict=True)
        ]
        assert_same(sides, results)
        if results[0][0] == "boom":
            return  # the decoder takes over from here (test_differential)
        texts.append(results[0][0])
        pendings = [results[0][1], results[1][1]]
    if not raise_at:
        assert "".join(texts) == data.decode("utf-8", "replace" if replacement else "ignore")


@CORE
@given(
    data=line_bytes,
    cut=st.integers(0, 100),
    sep=st.sampled_from([-1, 10, 13, 0]),
    final=st.booleans(),
    raise_at=st.frozensets(st.integers(1, 8), max_size=2),
    reenter=st.booleans(),
)
def test_split_agrees(
    data: bytes, cut: int, sep: int, final: bool, raise_at: frozenset[int], reenter: bool
) -> None:
    sides = make_sides("\ufffd", raise_at, reenter)
    pending, chunk = data[: min(cut, 3)], data[min(cut, 3) :]
    results = [side.call("split", pending, chunk, final, 100 + len(data), sep) for side in sides]
    assert_same(sides, results)
    if raise_at or results[0][0] == "boom":
        return
    parts, _, _, chars = results[0]
    text, held = PyScanner("\ufffd", None).feed(pending, chunk, final, 0)
    assert chars == len(text) and results[0][1] == held
    if sep >= 0:
        assert parts == text.split(chr(sep))


@CORE
@given(
    head=line_bytes,
    data=line_bytes,
    sep=st.sampled_from([-1, 10]),
    limit=st.integers(0, 12),
    raise_at=st.frozensets(st.integers(1, 8), max_size=2),
    reenter=st.booleans(),
)
def test_lines_agree(
    head: bytes, data: bytes, sep: int, limit: int, raise_at: frozenset[int], reenter: bool
) -> None:
    sides = make_sides("\ufffd", raise_at, reenter)
    results = [side.call("lines", head, data, 1000, sep, limit) for side in sides]
    assert_same(sides, results)
    if raise_at or results[0][0] == "boom":
        return
    texts, offsets = results[0]
    buf = head + data
    consumed = buf[: offsets[-1] - 1000]
    newline = "\n" if sep == 10 else "\r\n|\r|\n"
    expected = re.split(newline, consumed.decode("utf-8", "replace"))[:-1]
    assert texts == expected
    assert len(offsets) == len(texts) + 1


def test_the_argument_checks_agree() -> None:
    for make in (PyScanner, _accel.accelerator().Units):
        with pytest.raises(ValueError, match="one character or none"):
            make("ab", None)
        with pytest.raises(ValueError, match="one-character replacement"):
            make("", None).split(b"", b"a\nb", False, 3, -1)
        with pytest.raises(ValueError, match="sep must be"):
            make("\ufffd", None).lines(b"", b"a\nb", 0, 128, 10)
        with pytest.raises(ValueError, match="limit must be non-negative"):
            make("\ufffd", None).lines(b"", b"a\nb", 0, 10, -1)
