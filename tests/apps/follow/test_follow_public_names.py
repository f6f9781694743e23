"""The follower's public types name the public module they are imported from, in their
``repr``, their ``__module__`` and their pickles; and pickles round-trip."""

from __future__ import annotations

import importlib
import pickle

import pytest

import utf8stream
from utf8stream import CheckpointError, CheckpointStore, FollowCheckpoint, Line, Notice
from utf8stream.follower import FileIdentity, FollowOptions
from utf8stream.stats import FollowerStatistics

IDENTITY = FileIdentity(1, 2, 3, "ab" * 32, "utf-16-le")
VALUES = [
    IDENTITY,
    Line("text", 7, IDENTITY, "/var/log/app.log", terminated=False),
    Notice("rotated", "/var/log/app.log", "has been replaced; following new file"),
    FollowCheckpoint("/var/log/app.log", IDENTITY, 12, mid_line=True),
    FollowerStatistics(lines=3, rotations=1),
    FollowOptions(start="beginning", last_lines=4),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda value: type(value).__name__)
def test_a_public_record_pickles_and_names_its_public_module(value: object) -> None:
    assert pickle.loads(pickle.dumps(value)) == value
    cls = type(value)
    home = importlib.import_module(cls.__module__)
    assert getattr(home, cls.__name__) is cls
    assert "._" not in cls.__module__
    assert repr(cls) == f"<class '{cls.__module__}.{cls.__name__}'>"
    # A pickle names the class by its public module.
    assert b"_records" not in pickle.dumps(value)
    assert b"_checkpoint" not in pickle.dumps(value)


def test_the_top_level_ones_name_the_top_level() -> None:
    for cls in (Line, Notice, FollowCheckpoint, CheckpointError, CheckpointStore):
        assert cls.__module__ == "utf8stream"
        assert getattr(utf8stream, cls.__name__) is cls


def test_the_checkpoint_error_pickles() -> None:
    error = pickle.loads(pickle.dumps(CheckpointError("not a checkpoint")))
    assert type(error) is CheckpointError and str(error) == "not a checkpoint"
