"""The public surface: the top-level names and the submodules, what importing the package
loads, records, defaults and the names of the state flags."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import utf8stream
from utf8stream import (
    LineReceiveStream,
    LineSplitter,
    Utf8DecodeError,
    Utf8Decoder,
    Utf8ReceiveStream,
    Utf8Stream,
)
from utf8stream.accel import accelerated, use_accelerator
from utf8stream.core.decoder import (
    GAP_ABSORB_SHIFT,
    GAP_SKIP_SHIFT,
    DecodedLines,
    DecoderStateFlag,
)
from utf8stream.lines import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG
from utf8stream.stats import DecoderStatistics, LineSplitterStatistics, StreamStatistics


def _assert_frozen_record(record: Any, cls: type) -> None:
    assert type(record) is cls and dataclasses.is_dataclass(record)
    first = dataclasses.fields(record)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, first, 1)
    malformed = getattr(record, "malformed", None)
    if malformed is not None:
        with pytest.raises(TypeError):
            malformed[utf8stream.MalformedKind.OVERLONG] = 1


def test_core_statistics_are_frozen_records() -> None:
    decoder = Utf8Decoder()
    decoder.decode(b"a\xc0b")
    _assert_frozen_record(decoder.statistics(), DecoderStatistics)
    splitter = LineSplitter()
    splitter.feed("a\nb")
    _assert_frozen_record(splitter.statistics(), LineSplitterStatistics)


@pytest.mark.anyio
async def test_stream_statistics_are_frozen_records() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](4)
    await send.send(b"a\xc0\n")
    send.close()
    stream = Utf8ReceiveStream(receive)
    assert await stream.receive() == "a\ufffd\n"
    _assert_frozen_record(stream.statistics(), StreamStatistics)

    send, receive = anyio.create_memory_object_stream[bytes](4)
    await send.send(b"a\xc0\nb")
    send.close()
    lines = LineReceiveStream(receive)
    assert [line async for line in lines] == ["a\ufffd", "b"]
    _assert_frozen_record(lines.statistics(), StreamStatistics)

    left, right = anyio.create_memory_object_stream[bytes](4)
    both = Utf8Stream(anyio.streams.stapled.StapledObjectStream(left, right))
    _assert_frozen_record(both.statistics(), StreamStatistics)


#: The top level, as decided for the 0.x API: what most programs need, nothing more.
TOP_LEVEL = {
    "Utf8Decoder", "DecoderCheckpoint", "Utf8Encoder", "Transcoder",
    "Utf8ReceiveStream", "Utf8SendStream", "Utf8Stream", "LineReceiveStream", "LineSplitter",
    "as_byte_stream", "follow", "follow_many", "Line", "FollowCheckpoint", "CheckpointStore",
    "Notice", "transcode_file", "atranscode_file", "open_text", "TranscodeSummary",
    "Malformed", "MalformedKind", "Utf8DecodeError", "Utf8EncodeError", "LineTooLong",
    "CheckpointError", "UnmappableCharacterError", "SameFileError", "WorkerError",
}  # fmt: skip

#: The public submodules: ``src/utf8stream/*.py`` not named with a leading underscore.
SUBMODULES = sorted(
    f"utf8stream.{path.stem}"
    for path in Path(utf8stream.__file__).parent.glob("*.py")
    if not path.stem.startswith("_")
)


def test_the_top_level_is_small_and_every_name_imports() -> None:
    assert len(utf8stream.__all__) <= 30
    assert set(utf8stream.__all__) == TOP_LEVEL
    assert len(utf8stream.__all__) == len(TOP_LEVEL)
    namespace: dict[str, Any] = {}
    exec("from utf8stream import *", namespace)
    assert set(namespace) - {"__builtins__"} == TOP_LEVEL
    for name in utf8stream.__all__:
        assert getattr(utf8stream, name) is namespace[name]
    assert set(dir(utf8stream)) >= TOP_LEVEL


def test_every_submodule_name_imports_and_none_is_also_at_the_top() -> None:
    assert {"utf8stream.lines", "utf8stream.follower", "utf8stream.stats"} <= set(SUBMODULES)
    for module_name in SUBMODULES:
        module = importlib.import_module(module_name)
        assert module.__all__, module_name
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module_name}.{name}"
            # Moved, not aliased: one public place for each name.
            assert name not in TOP_LEVEL, f"{module_name}.{name}"
            if module_name == f"utf8stream.{name}":  # utf8stream.detect.detect
                assert getattr(utf8stream, name) is module
                continue
            with pytest.raises(AttributeError):
                getattr(utf8stream, name)


def test_a_moved_name_is_an_attribute_error_at_the_top() -> None:
    with pytest.raises(AttributeError, match="no attribute 'LineEngine'"):
        utf8stream.LineEngine  # noqa: B018
    with pytest.raises(ImportError):
        exec("from utf8stream import Follower", {})


def test_the_submodules_hold_the_objects_their_methods_return() -> None:
    from utf8stream.follower import Follower
    from utf8stream.lines import LineEngine, line_decoder
    from utf8stream.stats import FollowerStatistics

    assert LineSplitterStatistics is type(LineSplitter().statistics())
    assert DecoderStatistics is type(Utf8Decoder().statistics())
    assert type(LineEngine(line_decoder("utf-8"))).__name__ == "LineEngine"
    assert inspect.signature(Follower.statistics).return_annotation in (
        FollowerStatistics,
        "FollowerStatistics",
    )


#: Run in a fresh interpreter: what ``import utf8stream`` loads, and that it still
#: registers the codecs (looked up only after the modules loaded were listed).
_IMPORT_ALONE = """
import sys
import utf8stream
loaded = sorted(sys.modules)
import codecs
print(" ".join(loaded))
print(codecs.lookup("WTF_8").name, codecs.lookup_error("optu-8").__name__)
"""

#: What a program that only imports the package must not pay for.
_HEAVY = ("anyio", "asyncio", "sqlite3", "dask", "trio")
_HEAVY_OURS = (
    "utf8stream.core.linecodec",
    "utf8stream.core.lines",
    "utf8stream.apps.follow",
    "utf8stream.apps.many",
)


def test_importing_the_package_loads_no_event_loop_line_engine_or_follower() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALONE], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded_line, registered = result.stdout.splitlines()
    loaded = set(loaded_line.split())
    assert "utf8stream" in loaded
    assert not {m for m in loaded if m.split(".")[0] in _HEAVY}
    assert not loaded & set(_HEAVY_OURS)
    assert registered == "wtf-8 optu8_errors"


def _default(function: Any, name: str) -> Any:
    return inspect.signature(function).parameters[name].default


def test_one_default_for_each_line_option() -> None:
    assert DEFAULT_ON_OVERLONG == "split"
    assert DEFAULT_MAX_LINE_BYTES == 1 << 20
    for reader in (LineSplitter, LineReceiveStream):
        assert _default(reader, "on_overlong") == DEFAULT_ON_OVERLONG
        assert _default(reader, "max_line_bytes") == DEFAULT_MAX_LINE_BYTES
    splitter = LineSplitter()
    assert (splitter.on_overlong, splitter.max_line_bytes) == (
        DEFAULT_ON_OVERLONG,
        DEFAULT_MAX_LINE_BYTES,
    )


def test_getstate_flags_are_named() -> None:
    # The values are stored in io.TextIOWrapper.tell() cookies: pinned.
    assert (DecoderStateFlag.GAP_OPEN, DecoderStateFlag.UNREAD_FINAL) == (1, 64)
    assert DecoderStateFlag.ORPHAN_LOW == 128
    assert (GAP_ABSORB_SHIFT, GAP_SKIP_SHIFT) == (1, 4)

    decoder = Utf8Decoder()
    decoder.decode(b"a\xe6\x97")
    decoder.mark_gap()
    buffered, flags = decoder.getstate()
    assert type(flags) is int
    assert buffered == b"\xe6\x97" and flags & DecoderStateFlag.GAP_OPEN
    assert (flags >> GAP_ABSORB_SHIFT) & 7 == 2 and (flags >> GAP_SKIP_SHIFT) & 3 == 3

    strict = Utf8Decoder("strict")
    with pytest.raises(Utf8DecodeError):
        strict.decode(b"a\xffbc", final=True)
    buffered, flags = strict.getstate()
    assert buffered == b"bc" and flags == DecoderStateFlag.UNREAD_FINAL

    twin = Utf8Decoder("strict")
    twin.setstate((buffered, int(DecoderStateFlag.UNREAD_FINAL)))
    assert twin.decode(b"") == "bc"  # the unread rest ended the stream: nothing held after
    assert twin.getstate() == (b"", 0)


def test_the_line_seam_declines_without_changing_anything() -> None:
    # A policy other than "replace", or a held prefix: the reader decodes.
    decoder = Utf8Decoder()
    decoder.decode(b"\xe6\x97")
    assert decoder.decode_lines(b"", b"\xa5\n", -1, 100) is None
    assert decoder.position == 2 and decoder.buffered == 2
    for errors in ("ignore", "strict", "surrogateescape"):
        assert Utf8Decoder(errors).decode_lines(b"", b"a\n", -1, 100) is None
    ignoring = Utf8Decoder("ignore")
    assert ignoring.decode_lines(b"", b"a\nb", ord("\n"), 100) is None
    assert ignoring.position == 0


@pytest.mark.skipif(
    not accelerated(), reason="the C accelerator is not built here (pure-Python install)"
)
def test_the_line_seam_when_accelerated() -> None:
    with use_accelerator(True):
        decoder = Utf8Decoder()
    assert decoder.decode(b"a\r\nb\xff\r") == "a\r\nb\ufffd\r"
    lines = decoder.decode_lines(b"", b"c\nd", ord("\n"), 100)
    assert lines == DecodedLines(["c"], [6, 8])  # the 6 bytes before: a \r \n b \xff \r
    assert decoder.position == 8
