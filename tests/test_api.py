"""The public surface: records, exports, defaults and the names of the state flags."""

from __future__ import annotations

import dataclasses
import inspect
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
from utf8stream.core._accel import accelerated
from utf8stream.core.decoder import (
    GAP_ABSORB_SHIFT,
    GAP_SKIP_SHIFT,
    DecodedLines,
    DecoderStateFlag,
)
from utf8stream.core.lines import DEFAULT_MAX_LINE_BYTES, DEFAULT_ON_OVERLONG
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


def test_exports() -> None:
    assert {"LineSplitterStatistics", "ValidUtf8ReceiveStream", "use_accelerator"} <= set(
        utf8stream.__all__
    )
    from utf8stream.aio.trio_stream import ValidUtf8ReceiveStream

    assert utf8stream.ValidUtf8ReceiveStream is ValidUtf8ReceiveStream
    assert LineSplitterStatistics is type(LineSplitter().statistics())
    # Internal-grade helpers: importable, not advertised.
    assert "rejoined_event" not in utf8stream.__all__
    from utf8stream.core.boundaries import rejoined_event

    assert utf8stream.rejoined_event is rejoined_event
    for name in utf8stream.__all__:
        assert getattr(utf8stream, name) is not None


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
    with utf8stream.use_accelerator(True):
        decoder = Utf8Decoder()
    assert decoder.decode(b"a\r\nb\xff\r") == "a\r\nb\ufffd\r"
    lines = decoder.decode_lines(b"", b"c\nd", ord("\n"), 100)
    assert lines == DecodedLines(["c"], [6, 8])  # the 6 bytes before: a \r \n b \xff \r
    assert decoder.position == 8
