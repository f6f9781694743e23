"""``Line``: with the accelerator, a C type (cheap to build and to free) made to behave
as the frozen dataclass that declares it; these tests pin that it does, field for field.
Without the accelerator ``Line`` is the declaration itself and they hold trivially."""

from __future__ import annotations

import copy
import dataclasses
import gc
import inspect
import pickle
from typing import Any

import pytest

from utf8stream import Line
from utf8stream.apps import _apps_accel as _accel
from utf8stream.apps.follow import FileIdentity
from utf8stream.apps.follow._records import _DECLARED_LINE

IDENTITY = FileIdentity(7, 9, 3, "ab" * 32, "utf-8")
ARGS: tuple[Any, ...] = ("text é", 1 << 40, IDENTITY)


def both(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    return Line(*args, **kwargs), _DECLARED_LINE(*args, **kwargs)


def test_line_is_the_accelerators_type_when_built() -> None:
    if _accel.LINE_TYPE is None:
        assert Line is _DECLARED_LINE
    else:
        assert Line is _accel.LINE_TYPE and Line is not _DECLARED_LINE
        # Not tracked by the garbage collector: what makes it cheap per line.
        assert not gc.is_tracked(Line(*ARGS))
    assert (Line.__module__, Line.__qualname__, Line.__name__) == (
        "utf8stream",
        "Line",
        "Line",
    )
    assert Line.__doc__ == _DECLARED_LINE.__doc__


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (ARGS, {}),
        ((*ARGS, "p/app.log", False), {}),
        ((), {"text": "t", "offset": 0, "file": IDENTITY, "terminated": False}),
        (("t",), {"offset": 3, "file": IDENTITY, "path": "x"}),
    ],
)
def test_same_fields_repr_equality_and_hash(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    ours, declared = both(*args, **kwargs)
    for field in dataclasses.fields(_DECLARED_LINE):
        assert getattr(ours, field.name) == getattr(declared, field.name)
    assert repr(ours) == repr(declared)
    assert hash(ours) == hash(declared)
    assert dataclasses.astuple(ours) == dataclasses.astuple(declared)
    assert dataclasses.asdict(ours) == dataclasses.asdict(declared)
    assert ours == Line(*args, **kwargs)
    assert ours != dataclasses.replace(ours, text=ours.text + "!")
    assert ours != declared or Line is _DECLARED_LINE  # another class is never equal
    assert ours != tuple(dataclasses.astuple(ours))


def test_dataclass_metadata_and_constructor() -> None:
    assert dataclasses.is_dataclass(Line)
    assert [(f.name, f.default) for f in dataclasses.fields(Line)] == [
        (f.name, f.default) for f in dataclasses.fields(_DECLARED_LINE)
    ]
    assert Line.__match_args__ == ("text", "offset", "file", "path", "terminated")
    assert list(inspect.signature(Line).parameters) == list(Line.__match_args__)
    line = dataclasses.replace(Line(*ARGS), path="q", terminated=False)
    assert (type(line), line.path, line.terminated, line.text) == (Line, "q", False, ARGS[0])
    with pytest.raises(TypeError):
        Line("only text")
    with pytest.raises(TypeError):
        Line(*ARGS, surplus=1)
    match Line(*ARGS):
        case Line(text, offset, file):
            assert (text, offset, file) == ARGS


def test_frozen() -> None:
    line = Line(*ARGS)
    for name in Line.__match_args__:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(line, name, "x")
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(line, name)
    assert line.text == ARGS[0]
    with pytest.raises(AttributeError):
        line.__dict__  # noqa: B018  (no per-instance dict, as with slots=True)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_and_copy(protocol: int) -> None:
    line = Line(*ARGS, "app.log", False)
    back = pickle.loads(pickle.dumps(line, protocol))
    assert (type(back), back) == (Line, line)
    assert copy.copy(line) == line
    assert copy.deepcopy(line) == line
