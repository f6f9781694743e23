"""``encoding="auto"`` on the streams: ``Utf8ReceiveStream`` and ``LineReceiveStream`` detect
the encoding on the first bytes and give the text of the whole input in it, however the
transport cuts it; binary input raises ``NotTextError``.

Every test runs on asyncio and on trio (the ``anyio_backend`` fixture in conftest.py).
"""

from __future__ import annotations

import pytest
from _helpers import examples, split_at
from _stream_helpers import ChunkStream
from anyio import EndOfStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import LineReceiveStream, Utf8ReceiveStream
from utf8stream.detect import AutoDecoder, EncodingDoubt, NotTextError

pytestmark = pytest.mark.anyio

SETTINGS = settings(
    max_examples=examples(60),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю.\n"
FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ?\n"

#: (the text, its encoding, the bytes), the encoding as the detector names it.
CASES = [
    (RUSSIAN * 30, "cp1251", (RUSSIAN * 30).encode("cp1251")),
    (FRENCH * 30, "cp1252", (FRENCH * 30).encode("cp1252")),
    (FRENCH * 5, "utf-8", (FRENCH * 5).encode()),
    (FRENCH * 5, "utf-16-le", (FRENCH * 5).encode("utf-16")),  # with its mark, skipped
    ("a\nbc\n" * 3, "utf-8", b"a\nbc\n" * 3),
]
BINARY = bytes(range(256)) * 8


async def text_of(stream: Utf8ReceiveStream) -> str:
    out = []
    while True:
        try:
            out.append(await stream.receive())
        except EndOfStream:
            return "".join(out)


async def lines_of(stream: LineReceiveStream) -> list[str]:
    return [line async for line in stream]


@pytest.mark.parametrize(("text", "encoding", "data"), CASES)
async def test_receive_stream_auto_whole_and_byte_by_byte(
    text: str, encoding: str, data: bytes
) -> None:
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        stream = Utf8ReceiveStream(ChunkStream(chunks), encoding="auto")
        assert await text_of(stream) == text
        assert isinstance(stream.decoder, AutoDecoder)
        assert stream.decoder.encoding == encoding
        assert stream.statistics().bytes_in == len(data)


@pytest.mark.parametrize(("text", "encoding", "data"), CASES)
async def test_line_stream_auto_whole_and_byte_by_byte(
    text: str, encoding: str, data: bytes
) -> None:
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        stream = LineReceiveStream(ChunkStream(chunks), encoding="auto")
        assert await lines_of(stream) == text.split("\n")[:-1]
        assert stream.source_encoding == encoding


@SETTINGS
@given(case=st.sampled_from(CASES), points=st.lists(st.integers(0, 10**6), max_size=20))
async def test_any_chunking_gives_the_same_text_and_lines(
    case: tuple[str, str, bytes], points: list[int]
) -> None:
    text, _, raw = case
    cuts = [point % (len(raw) + 1) for point in points]
    stream = Utf8ReceiveStream(ChunkStream(split_at(raw, cuts)), encoding="auto")
    assert await text_of(stream) == text
    line_stream = LineReceiveStream(
        ChunkStream(split_at(raw, cuts)), encoding="auto", keepends=True
    )
    assert "".join(await lines_of(line_stream)) == text


async def test_binary_input_is_refused_by_both_streams() -> None:
    with pytest.raises(NotTextError, match="not text"):
        await text_of(Utf8ReceiveStream(ChunkStream([BINARY]), encoding="auto"))
    with pytest.raises(NotTextError, match="not text"):
        await lines_of(LineReceiveStream(ChunkStream([BINARY]), encoding="auto"))


async def test_iso2022_jp_is_refused_where_lines_are_cut_but_decoded_whole() -> None:
    data = "日本語のテキスト\n".encode("iso2022_jp") * 20
    with pytest.raises(ValueError, match="lines cannot be cut"):
        await lines_of(LineReceiveStream(ChunkStream([data]), encoding="auto"))
    stream = Utf8ReceiveStream(ChunkStream([data]), encoding="auto")
    assert await text_of(stream) == data.decode("iso2022_jp")


async def test_auto_needs_bytes_and_a_receive_stream_decodes_utf8_or_auto() -> None:
    with pytest.raises(TypeError, match="byte source"):
        LineReceiveStream(Utf8ReceiveStream(ChunkStream([])), encoding="auto")
    with pytest.raises(ValueError, match="UTF-8 or encoding='auto'"):
        Utf8ReceiveStream(ChunkStream([]), encoding="cp1252")


async def test_both_streams_report_a_late_byte_the_choice_cannot_decode() -> None:
    # Decided UTF-8 on the first bytes; a cp1252 "é" after them.
    data = (FRENCH * 4).encode() + b"caf\xe9\n" + b"tail\n" * 3
    offset = data.index(b"\xe9")
    for chunks in ([data], [data[i : i + 3] for i in range(0, len(data), 3)]):
        heard: list[EncodingDoubt] = []
        stream = Utf8ReceiveStream(ChunkStream(chunks), encoding="auto", on_doubt=heard.append)
        assert await text_of(stream) == data.decode("utf-8", "replace")
        assert heard == [EncodingDoubt(offset, "utf-8", "cp1252")]
        heard.clear()
        lines = LineReceiveStream(ChunkStream(chunks), encoding="auto", on_doubt=heard.append)
        assert await lines_of(lines) == data.decode("utf-8", "replace").split("\n")[:-1]
        assert heard == [EncodingDoubt(offset, "utf-8", "cp1252")]
