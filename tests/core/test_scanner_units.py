"""Every short input, cut into units as Table 3-7 and the reference cut it.

The pure-Python scanner learns each unit from CPython's decoder through its registered
error handler (``_on_unit`` in ``core/scanner.py``), which reads the unit's kind from the
bytes where it starts.  Held against the reference decoder
of ``_helpers`` (written from the tables, sharing no code with ``utf8stream``) for every
input of up to two bytes and for every input of three and four bytes over the edges of
Table 3-7: the text, the held prefix and each unit's offset, bytes and kind, with and
without a callback, replacing, ignoring or mapping, on the damaged path of the scanner
(after a unit) and on its clean path (strict first), behind nothing, ASCII, a
two-byte character, a U+FFFD of the input and a Hangul syllable that starts with ED
(whose bytes look like the start of a surrogate).  The accelerator's ``Units``, when
built, is held to the same reference.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from _helpers import Unit, reference_decode

from utf8stream import Malformed
from utf8stream.core import _accel
from utf8stream.core.scanner import PyScanner

#: Each edge of Table 3-7: ASCII, each end of each continuation range of a second byte
#: (80..8F, 90..9F, A0..BF), each kind of lead, never-valid bytes.
EDGES = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF]
EDGES += [0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
#: Fewer, for four bytes.
EDGES_4 = [0x41, 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xFF]
#: What comes before the input in the scanner's buffer: valid text of each sort.
BEFORE = [b"", b"ab", "\u00e9".encode(), "\ufffd".encode(), "\ud7a3".encode()]


def _implementations() -> list[str]:
    return ["python", "c"] if _accel.accelerated() else ["python"]


def _make(implementation: str, replacement: str | None, callback: Any) -> Any:
    if implementation == "python":
        return PyScanner(replacement, callback)
    accel = _accel.accelerator()
    assert accel is not None
    return accel.Units(replacement, callback)


def _surrogateescape(unit: Unit) -> str:
    return "".join(chr(0xDC00 + b) for b in unit.data)


#: (replacement, maps units, render for the reference)
POLICIES: list[tuple[str | None, bool, str | Callable[[Unit], str]]] = [
    ("\ufffd", False, "replace"),
    ("", False, "ignore"),
    (None, True, _surrogateescape),
]


def _check(implementation: str, inputs: list[bytes], policies: list[int]) -> None:
    """Feed each input to a fresh scanner, both finalities, after one of ``BEFORE`` and
    on the damaged path or not, in turn; compare with the reference under each of the
    ``policies`` (indices in ``POLICIES``; a replacing one with and without a callback)."""
    position = 1000
    for i, data in enumerate(inputs):
        buf = BEFORE[i % len(BEFORE)] + data
        damaged = bool(i // len(BEFORE) % 2)
        for final in (True, False):
            reference = reference_decode(buf, final=final, start_offset=position - len(buf))
            for replacement, maps, render in (POLICIES[p] for p in policies):
                events: list[Malformed] = []

                def callback(event: Malformed, events: list[Malformed] = events) -> Any:
                    events.append(event)
                    return _surrogateescape(Unit(event.offset, event.data, event.kind))

                with_events = maps or bool(i % 3)
                scanner = _make(implementation, replacement, callback if with_events else None)
                if damaged:
                    # A unit first, so that the scanner decodes the next call the damaged
                    # way (the Python one strictly again only some bytes later).
                    scanner.feed(b"", b"\xff", True, 0)
                    scanner.drain()
                    events.clear()
                text, held = scanner.feed(b"", buf, final, position)
                assert (text, held) == (reference.render(render), reference.held), (buf, final)
                if with_events:
                    units = [(e.offset, e.data, e.kind) for e in events]
                    assert units == reference.units, (buf, final)
                counts = scanner.drain()
                assert sum(counts[:-1]) == len(reference.units), (buf, final)
                assert counts[-1] == len(text)


def test_every_input_of_up_to_two_bytes() -> None:
    inputs = [bytes([a]) for a in range(256)]
    inputs += [bytes([a, b]) for a in range(0x80, 0x100) for b in range(256)]
    inputs += [bytes([a, b]) for a in (0x00, 0x41) for b in range(0x80, 0x100)]
    _check("python", inputs, [0])


@pytest.mark.parametrize("implementation", _implementations())
def test_every_input_of_three_edge_bytes(implementation: str) -> None:
    inputs = [bytes(t) for t in itertools.product(EDGES, repeat=3)]
    _check(implementation, inputs, [0, 1, 2])


def test_every_input_of_four_edge_bytes() -> None:
    inputs = [bytes(t) for t in itertools.product(EDGES_4, repeat=4)]
    _check("python", inputs, [0])
