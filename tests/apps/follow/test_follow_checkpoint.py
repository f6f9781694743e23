"""Checkpoints of the log follower read from files anyone may have edited or damaged:
anything but a well-formed checkpoint is one ``CheckpointError``, never another exception
and never a huge allocation."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from _helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import CheckpointError, FollowCheckpoint, follow
from utf8stream.follower import FileIdentity, OutputMark, read_checkpoint, write_checkpoint

DIGEST = hashlib.sha256(b"first line\n").hexdigest()
VALID: dict[str, Any] = {
    "version": 1,
    "path": "/var/log/app.log",
    "offset": 42,
    "mid_line": False,
    "file": {"device": 2049, "inode": 131, "head_length": 11, "head_sha256": DIGEST},
}
OUTPUT: dict[str, Any] = {"device": 64768, "inode": 77, "size": 4096, "header": "a.log"}
FUZZ = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=20,
)


def parse_or_refuse(text: str | bytes) -> FollowCheckpoint | None:
    """None when refused with ``CheckpointError``; any other exception fails the test."""
    try:
        checkpoint = FollowCheckpoint.from_json(text)
    except CheckpointError:
        return None
    # Accepted: every field is what a follower can use without harm.
    assert type(checkpoint.offset) is int and 0 <= checkpoint.offset < 2**63
    identity = checkpoint.file
    assert type(identity.head_length) is int and 0 <= identity.head_length <= 1024
    assert len(identity.head_sha256) == 64
    assert type(checkpoint.mid_line) is bool
    return checkpoint


def test_a_valid_checkpoint_round_trips() -> None:
    checkpoint = FollowCheckpoint.from_json(json.dumps(VALID))
    assert checkpoint == FollowCheckpoint(
        "/var/log/app.log", FileIdentity(2049, 131, 11, DIGEST), 42, False
    )
    assert FollowCheckpoint.from_json(checkpoint.to_json()) == checkpoint


def test_an_output_record_round_trips_and_is_optional() -> None:
    """How far a program had written its output file (``utf8stream tail`` records it); a
    checkpoint without it (any written before it existed) loads as before."""
    checkpoint = FollowCheckpoint.from_json(json.dumps({**VALID, "output": OUTPUT}))
    assert checkpoint.output == OutputMark(64768, 77, 4096, "a.log")
    assert FollowCheckpoint.from_json(checkpoint.to_json()) == checkpoint
    unnamed = {k: v for k, v in OUTPUT.items() if k != "header"}
    assert FollowCheckpoint.from_json(json.dumps({**VALID, "output": unnamed})).output == (
        OutputMark(64768, 77, 4096, None)
    )
    assert FollowCheckpoint.from_json(json.dumps(VALID)).output is None
    assert "output" not in json.loads(FollowCheckpoint.from_json(json.dumps(VALID)).to_json())


@FUZZ
@given(json_values)
def test_arbitrary_json_is_refused_cleanly(value: object) -> None:
    assert parse_or_refuse(json.dumps(value)) is None


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes_are_refused_cleanly(data: bytes) -> None:
    assert parse_or_refuse(data) is None


def _paths(record: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    if isinstance(record, dict):
        for key, value in record.items():
            out += _paths(value, (*prefix, key))
    return out


@FUZZ
@given(st.sampled_from(_paths(VALID)[1:]), json_values, st.sampled_from(["set", "del", "add"]))
def test_mutated_checkpoints_are_used_only_when_sane(
    where: tuple[str, ...], value: object, how: str
) -> None:
    record = json.loads(json.dumps(VALID))
    parent = record
    for key in where[:-1]:
        parent = parent[key]
    if how == "set":
        parent[where[-1]] = value
    elif how == "del":
        del parent[where[-1]]
    else:
        parent[where[-1] + "_extra"] = value
    checkpoint = parse_or_refuse(json.dumps(record))
    if how != "set":  # a missing or an unknown key
        assert checkpoint is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"offset": -5}, '"offset" must be an integer'),
        ({"offset": 2**63}, '"offset" must be an integer'),
        ({"offset": 4.0}, '"offset" must be an integer'),
        ({"offset": True}, '"offset" must be an integer'),
        ({"offset": "42"}, '"offset" must be an integer'),
        ({"mid_line": 0}, '"mid_line" must be true or false'),
        ({"path": ""}, '"path" must be a file name'),
        ({"path": 7}, '"path" must be a file name'),
        ({"path": "a\0b"}, '"path" must be a file name'),
        ({"path": "\ud800"}, '"path" is not a file name'),
        ({"version": True}, "unknown version true"),
        ({"version": 2}, "unknown version 2"),
        ({"extra": 1}, 'unknown keys: "extra"'),
        ({"file": [1, 2]}, '"file" must be a JSON object'),
        ({"file": {**VALID["file"], "head_length": 1e11}}, '"head_length" must be'),
        ({"file": {**VALID["file"], "head_length": 1025}}, '"head_length" must be'),
        ({"file": {**VALID["file"], "inode": -1}}, '"inode" must be'),
        ({"file": {**VALID["file"], "device": 2**64}}, '"device" must be'),
        ({"file": {**VALID["file"], "head_sha256": DIGEST.upper()}}, "64 hex digits"),
        ({"file": {**VALID["file"], "head_sha256": DIGEST[:-1]}}, "64 hex digits"),
        ({"output": None}, '"output" must be a JSON object'),
        ({"output": {**OUTPUT, "size": -1}}, '"size" must be an integer'),
        ({"output": {**OUTPUT, "size": 2**63}}, '"size" must be an integer'),
        ({"output": {**OUTPUT, "inode": 2**64}}, '"inode" must be'),
        ({"output": {**OUTPUT, "header": 3}}, '"header" must be a file name'),
        ({"output": {**OUTPUT, "header": "a\0b"}}, '"header" must be a file name'),
        ({"output": {**OUTPUT, "extra": 1}}, '"output" has unknown keys: "extra"'),
        ({"output": {"device": 1, "inode": 2}}, '"output" lacks size'),
    ],
)
def test_each_defect_is_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(CheckpointError, match=message.replace("(", r"\(")):
        FollowCheckpoint.from_json(json.dumps({**VALID, **change}))


def test_missing_keys_are_named() -> None:
    record = {k: v for k, v in VALID.items() if k != "offset"}
    with pytest.raises(CheckpointError, match="the checkpoint lacks offset"):
        FollowCheckpoint.from_json(json.dumps(record))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 30_000 + "]" * 30_000, "nested too deeply"),
        ("[" * 70_000, "larger than 65536 bytes"),
        ('{"offset": ' + "9" * 5000 + "}", "not JSON"),
        ("", "not JSON"),
    ],
)
def test_hostile_texts(text: str, message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        FollowCheckpoint.from_json(text)


def test_read_checkpoint_reads_a_bounded_amount(tmp_path: Path) -> None:
    huge = tmp_path / "cp.json"
    with open(huge, "wb") as f:
        f.truncate(10 * 2**30)  # sparse: 10 GiB of zero bytes that cost no disk
    with pytest.raises(CheckpointError, match="larger than"):
        read_checkpoint(huge)
    write_checkpoint(FollowCheckpoint.from_json(json.dumps(VALID)), huge)
    assert read_checkpoint(huge).offset == 42


def test_write_errors_name_the_checkpoint_not_its_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "cp.json"
    with pytest.raises(FileNotFoundError) as caught:
        write_checkpoint(FollowCheckpoint.from_json(json.dumps(VALID)), target)
    assert caught.value.filename == str(target)
    directory = tmp_path / "dir-in-the-way"
    (directory / "cp.json").mkdir(parents=True)
    with pytest.raises(IsADirectoryError) as caught_dir:
        write_checkpoint(FollowCheckpoint.from_json(json.dumps(VALID)), directory / "cp.json")
    assert caught_dir.value.filename == str(directory / "cp.json")
    assert sorted(p.name for p in directory.iterdir()) == ["cp.json"]  # no temporary left


@pytest.mark.anyio
async def test_the_path_followed_is_the_argument_never_the_checkpoints(
    tmp_path: Path,
) -> None:
    app, other = tmp_path / "app.log", tmp_path / "other.log"
    app.write_bytes(b"app 1\napp 2\n")
    other.write_bytes(b"other 1\nother 2\n")
    async with follow(other, start="beginning", until_eof=True) as lines:
        assert [line.text async for line in lines] == ["other 1", "other 2"]
        of_other = lines.checkpoint()
    with pytest.raises(CheckpointError, match="another file"):
        follow(app, checkpoint=of_other)
    # The same file by another name is the same file.
    os.symlink(other, tmp_path / "link.log")
    append = other.open("ab")
    append.write(b"other 3\n")
    append.close()
    async with follow(tmp_path / "link.log", checkpoint=of_other, until_eof=True) as lines:
        assert [line.text async for line in lines] == ["other 3"]


@pytest.mark.anyio
async def test_checkpoint_records_the_path_followed_while_a_rotated_file_drains(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"a\nb\n")
    async with follow(path, start="beginning", poll_interval=0.005) as lines:
        assert (await lines.__anext__()).text == "a"
        checkpoint = lines.checkpoint()
    os.rename(path, tmp_path / "app.log.1")  # rotated while stopped
    path.write_bytes(b"c\n")
    async with follow(path, checkpoint=checkpoint, poll_interval=0.005) as lines:
        with anyio.fail_after(5):
            line = await lines.__anext__()
        assert (line.text, line.path) == ("b", str(tmp_path / "app.log.1"))
        checkpoint = lines.checkpoint()
    assert checkpoint.path == str(path)
    async with follow(path, checkpoint=checkpoint, poll_interval=0.005) as lines:
        with anyio.fail_after(5):
            assert (await lines.__anext__()).text == "c"
