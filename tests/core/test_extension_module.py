"""The C module's own lifecycle: multi-phase initialisation and per-module state (PEP 489).

Each module object made from the extension has its own types and its own state (what
``setup()`` sets from Python); a second one shares nothing with the first, a reload does
not disturb the one in use, and a module object that is dropped is freed with its types.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import weakref

import pytest
from _extension import fresh_module, set_up

from utf8stream import Malformed, MalformedKind
from utf8stream.core import _accel

speedups = _accel.accelerator()
pytestmark = pytest.mark.skipif(
    speedups is None, reason="the C accelerator is not built here (pure-Python install)"
)


def test_a_second_module_object_has_its_own_types_and_state() -> None:
    other = fresh_module()
    assert other is not speedups
    for name in ("Units", "PlainEncoder", "BufferedAsyncIterator"):
        assert getattr(other, name) is not getattr(speedups, name)
    # The module in use was set up; the new one was not: its state is its own.
    with pytest.raises(RuntimeError, match=r"setup\(\) not called"):
        other.Units("\ufffd", None).feed(b"", b"a", False, 1)
    assert speedups.Units("\ufffd", None).feed(b"", b"a", False, 1) == ("a", b"")

    set_up(other)
    events: list[Malformed] = []
    assert other.Units("\ufffd", events.append).feed(b"", b"a\xff", True, 2) == ("a\ufffd", b"")
    assert [(e.offset, e.data, e.kind) for e in events] == [
        (1, b"\xff", MalformedKind.INVALID_BYTE)
    ]


def test_reload_keeps_the_module_in_use_working() -> None:
    units_type = speedups.Units
    assert importlib.reload(speedups) is speedups
    assert speedups.Units is units_type
    events: list[Malformed] = []
    assert speedups.Units("", events.append).feed(b"", b"\xc0x", True, 2) == ("x", b"")
    assert [e.kind for e in events] == [MalformedKind.OVERLONG]


def test_a_dropped_module_object_is_freed_with_its_types_and_state() -> None:
    other = fresh_module()
    set_up(other)
    units = other.Units("\ufffd", None)
    assert units.feed(b"", b"ok", False, 2) == ("ok", b"")
    gone = [weakref.ref(obj) for obj in (other, other.Units, other.BufferedAsyncIterator)]
    # An object keeps its type, and the type its module, alive.
    del other
    gc.collect()
    assert all(ref() is not None for ref in gone)
    del units
    gc.collect()
    assert [ref() for ref in gone] == [None, None, None]


def test_units_made_without_init_are_safe() -> None:
    units = speedups.Units.__new__(speedups.Units)
    assert units.callback is None and units.fail_start == -1
    assert units.feed(b"", b"a\xff", True, 2) == ("a\ufffd", b"")
