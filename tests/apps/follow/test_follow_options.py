"""``FollowOptions``: the options of ``follow()`` and ``follow_many()``, their defaults and
their checks, held once."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from utf8stream import follow, follow_many
from utf8stream.follower import Follower, FollowOptions, ManyFollower, ReadPolicy
from utf8stream.lines import MultilineJoiner


def keywords(function: Callable[..., object]) -> dict[str, object]:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }


def fields_taken_by(function: str) -> dict[str, object]:
    return {
        field.name: field.default
        for field in dataclasses.fields(FollowOptions)
        if field.metadata["option"].takes in (function, "both")
    }


def test_follows_keywords_and_defaults_are_the_options_fields() -> None:
    assert keywords(follow) == fields_taken_by("follow")


def test_follow_manys_keywords_and_defaults_are_the_options_fields() -> None:
    assert keywords(follow_many) == fields_taken_by("many")


def test_every_field_is_taken_by_one_function_at_least() -> None:
    names = {field.name for field in dataclasses.fields(FollowOptions)}
    assert set(keywords(follow)) | set(keywords(follow_many)) == names


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"start": "middle"}, "start='middle': must be 'end', 'beginning' or a byte offset"),
        ({"start": -1}, "start=-1: must be"),
        ({"last_lines": -1}, "last_lines=-1: must be non-negative"),
        ({"last_bytes": -3}, "last_bytes=-3: must be non-negative"),
        ({"poll_interval": 0}, "poll_interval=0: must be a positive number"),
        ({"poll_interval": float("nan")}, "poll_interval=nan: must be a positive number"),
        ({"rotate_grace": -1.0}, "rotate_grace=-1.0: must be a number of seconds >= 0"),
        ({"newline": ""}, "newline='': must be None or a non-empty string"),
        ({"max_line_bytes": 3}, "max_line_bytes=3: must be at least 4"),
        ({"max_line_bytes": 4.5}, "max_line_bytes=4.5: must be an integer"),
        ({"on_overlong": "wrap"}, "on_overlong='wrap': must be one of"),
        ({"errors": "strict"}, "errors='strict': must be one of"),
        ({"encoding": "klingon"}, "encoding='klingon': unknown encoding"),
        ({"multiline": "cobol"}, "multiline='cobol': unknown multi-line preset"),
        ({"multiline_timeout": 0}, "multiline_timeout=0: must be a positive number"),
        ({"partial_after": -1}, "partial_after=-1: must be a number of seconds >= 0"),
        ({"multiline": "python", "partial_after": 0.5}, "partial_after is for lines"),
        ({"multilines": {"*.log": "java"}, "partial_after": 0}, "partial_after is for lines"),
        ({"on_malformed": print, "encoding": "utf-16"}, "on_malformed is reported for UTF-8"),
        ({"encodings": {"*.log": "klingon"}}, "encodings=.*'\\*.log': unknown encoding"),
        ({"multilines": {"*.log": "cobol"}}, "'\\*.log': unknown multi-line preset"),
        ({"save_every": 0}, "save_every=0: must be >= 1"),
        ({"save_interval": 0}, "save_interval=0: must be a positive number"),
        ({"rescan_interval": -1}, "rescan_interval=-1: must be a positive number"),
    ],
)
def test_a_value_out_of_range_is_a_value_error_naming_the_option(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FollowOptions(**options)


def test_follow_and_follow_many_check_through_the_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="poll_interval=0: must be a positive number"):
        follow(tmp_path / "app.log", poll_interval=0)
    with pytest.raises(ValueError, match="rotate_grace=-1: must be a number of seconds"):
        follow_many(str(tmp_path / "*.log"), rotate_grace=-1)


def test_the_defaults_are_valid_and_a_value_is_frozen() -> None:
    options = FollowOptions()
    assert options == FollowOptions(**options.as_kwargs("follow"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.start = "beginning"  # type: ignore[misc]


def test_as_kwargs_gives_each_function_its_options_and_drops_none() -> None:
    options = FollowOptions(start="beginning", last_bytes=10, save_every=5, errors="ignore")
    with pytest.raises(ValueError, match=r"follow\(\) does not take save_every="):
        options.as_kwargs("follow")
    with pytest.raises(ValueError, match=r"follow_many\(\) does not take last_bytes="):
        options.as_kwargs("many")
    assert FollowOptions(start=3).as_kwargs("follow")["start"] == 3
    with pytest.raises(ValueError, match="follow_many\\(\\)'s start must be"):
        FollowOptions(start=3).as_kwargs("many")
    one = FollowOptions(start="beginning", errors="ignore").as_kwargs("follow")
    assert set(one) == set(keywords(follow))
    assert (one["start"], one["errors"]) == ("beginning", "ignore")
    many = FollowOptions(save_every=5).as_kwargs("many")
    assert set(many) == set(keywords(follow_many)) and many["save_every"] == 5


@pytest.mark.anyio
async def test_a_follower_from_the_options_reads_as_follow_does(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\ntwo\nthree\n")
    options = FollowOptions(start="beginning", until_eof=True, multiline="indented")
    async with follow(log, **options.as_kwargs("follow")) as lines:
        texts = [line.text async for line in lines]
    assert texts == ["one", "two", "three"]


def test_a_joiner_is_taken_as_it_is_and_a_preset_by_its_name() -> None:
    joiner = MultilineJoiner(continuation="^ ")
    assert FollowOptions(multiline=joiner).multiline is joiner
    assert FollowOptions.joiner_of(joiner) is joiner
    assert FollowOptions.joiner_of(None) is None
    preset = FollowOptions.joiner_of("python")
    assert isinstance(preset, MultilineJoiner)


def test_the_options_pickle_and_name_their_public_module() -> None:
    options = FollowOptions(start=5, errors="ignore", multiline="java")
    assert pickle.loads(pickle.dumps(options)) == options
    assert FollowOptions.__module__ == "utf8stream.follower"
    assert repr(FollowOptions) == "<class 'utf8stream.follower.FollowOptions'>"


@pytest.mark.anyio
async def test_the_classes_take_the_options_and_refuse_what_they_do_not_take(
    tmp_path: Path,
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"one\ntwo\n")
    options = FollowOptions(start="beginning", until_eof=True)
    async with Follower(log, options) as lines:
        assert [line.text async for line in lines] == ["one", "two"]
    with pytest.raises(ValueError, match=r"follow\(\) does not take store="):
        Follower(log, FollowOptions(store=tmp_path / "cp.db"))
    with pytest.raises(ValueError, match=r"follow_many\(\) does not take until_eof="):
        ManyFollower([log], options)
    with pytest.raises(ValueError, match=r"follow_many\(\)'s start must be"):
        ManyFollower([log], FollowOptions(start=3))
    many = FollowOptions(start="beginning", save_every=3)
    async with ManyFollower([tmp_path / "*.log"], many) as lines:
        assert [(await lines.__anext__()).text for _ in range(2)] == ["one", "two"]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"read_size": 0}, "read_size=0: must be an integer >= 1"),
        ({"read_size": 1.5}, "read_size=1.5: must be an integer"),
        ({"cached_read_size": 63}, "cached_read_size=63: must be an integer >= 64"),
        ({"feed_size": True}, "feed_size=True: must be an integer"),
        ({"read_ahead_threads": -1}, "read_ahead_threads=-1: must be an integer >= 0"),
        ({"read_ahead": 1}, "read_ahead=1: must be True or False"),
        ({"in_memory": "yes"}, "in_memory='yes': must be None, True or False"),
    ],
)
def test_a_read_policy_out_of_range_is_a_value_error(policy: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReadPolicy(**policy)


def test_the_read_policy_is_one_option_of_both_functions() -> None:
    with pytest.raises(ValueError, match=r"reading=.*: must be a ReadPolicy"):
        FollowOptions(reading={"read_size": 64})  # type: ignore[arg-type]
    policy = ReadPolicy(read_size=64)
    assert FollowOptions(reading=policy).as_kwargs("follow")["reading"] is policy
    assert FollowOptions(reading=policy).as_kwargs("many")["reading"] is policy
    assert pickle.loads(pickle.dumps(policy)) == policy
    assert repr(ReadPolicy) == "<class 'utf8stream.follower.ReadPolicy'>"
