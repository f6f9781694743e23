"""The follower's records: ``records`` of its accelerator (``_apps_speedups``) and of the
pure twin (``_apps_native``) build the same ``Line`` records in bulk."""

from __future__ import annotations

import pickle
import sys
from array import array

import pytest

from utf8stream.apps import _apps_accel
from utf8stream.apps.follow import FileIdentity, Line

# Every test runs with the accelerator and in pure Python (conftest's fixture).
pytestmark = pytest.mark.usefixtures("implementation")


# -- records: Line records in bulk ------------------------------------------------------


def test_records_build_lines_last_first() -> None:
    identity = FileIdentity(1, 2)
    impl = _apps_accel.implementation()
    out = impl.records(Line, ["a", "b", "c"], [0, 2, 4, 6], identity, "p", True)
    assert out == [
        Line("c", 4, identity, "p"),
        Line("b", 2, identity, "p"),
        Line("a", 0, identity, "p"),
    ]
    assert all(type(r) is Line for r in out)
    assert impl.records(Line, [], [0], identity, "p", True) == []
    with pytest.raises(ValueError, match="fewer offsets"):
        impl.records(Line, ["a", "b"], [0], identity, "p", True)
    with pytest.raises(TypeError, match="the Line type expected"):
        impl.records(FileIdentity, ["a"], [0], identity, "p", True)


def test_records_are_made_in_the_list_of_texts() -> None:
    """The records take the place of the texts in the list given (the follower's batch:
    no second list, no string's reference count touched), last first at every length;
    a refused call leaves the list as it was, and no reference is lost or leaked."""
    identity = FileIdentity(1, 2)
    impl = _apps_accel.implementation()
    for n in range(6):
        words = [f"line {k} " + "x" * k for k in range(n)]  # strings of their own
        texts = list(words)
        before = [sys.getrefcount(w) for w in words]
        out = impl.records(Line, texts, list(range(n + 1)), identity, "p", True)
        assert out is texts
        assert out == [Line(words[k], k, identity, "p") for k in reversed(range(n))]
        assert [sys.getrefcount(w) for w in words] == before
        del out, texts
        assert [sys.getrefcount(w) for w in words] == [r - 1 for r in before]
    texts = ["a", "b"]
    with pytest.raises(ValueError, match="fewer offsets"):
        impl.records(Line, texts, [0], identity, "p", True)
    with pytest.raises(TypeError, match="the Line type expected"):
        impl.records(FileIdentity, texts, [0, 1, 2], identity, "p", True)
    assert texts == ["a", "b"]


def test_records_from_packed_offsets_are_the_same_lines(implementation: str) -> None:
    """The follower's blocks keep their offsets packed (int64, format "q"): the records
    built from them are those built from a list, field for field; the C record makes
    its offset's int when it is read (once: then it keeps it)."""
    identity = FileIdentity(1, 2)
    impl = _apps_accel.implementation()
    offsets = [0, 2, (1 << 62) + 5, (1 << 63) - 1]
    packed = memoryview(array("q", offsets)).cast("B").cast("q")
    out = impl.records(Line, ["a", "b", "c"], packed, identity, "p", True)
    listed = impl.records(Line, ["a", "b", "c"], offsets, identity, "p", True)
    assert out == listed
    assert [r.offset for r in out] == [(1 << 62) + 5, 2, 0]
    assert all(type(r.offset) is int for r in out)
    assert out[0].offset is out[0].offset
    assert [hash(r) for r in out] == [hash(r) for r in listed]
    assert [repr(r) for r in out] == [repr(r) for r in listed]
    assert pickle.loads(pickle.dumps(out[0])) == listed[0]
    with pytest.raises(ValueError, match="fewer offsets"):
        impl.records(Line, ["a", "b"], memoryview(array("q", [0])), identity, "p", True)
    if implementation == "accelerated":
        with pytest.raises(TypeError, match="format 'q'"):
            impl.records(Line, ["a"], memoryview(array("i", [0, 1])), identity, "p", True)
