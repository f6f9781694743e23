"""The line splitter (sans-IO) and LineReceiveStream."""

from __future__ import annotations

from itertools import pairwise

import anyio
import pytest
from _helpers import examples
from _stream_helpers import (
    ChunkStream,
    all_chunkings,
    as_comparable,
    cut,
    decode_all,
    reference_byte_lines,
    reference_lines,
)
from anyio import EndOfStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import (
    LineReceiveStream,
    LineSplitter,
    LineTooLong,
    MalformedKind,
    Utf8DecodeError,
    Utf8Decoder,
    Utf8ReceiveStream,
)
from utf8stream.lines import LineItem

NEWLINES = [None, "\n", "\r\n", "\0", "<>"]
POLICIES = ["raise", "truncate", "split", "skip"]
SETTINGS = settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])


def split_text(pieces: list[str], **options: object) -> list[object]:
    limit = options.pop("max_line_bytes", None)
    splitter = LineSplitter(max_line_bytes=limit, **options)  # type: ignore[arg-type]
    out = []
    for piece in pieces:
        out += splitter.feed(piece)
    out += splitter.flush()
    return as_comparable(out)


def text_chunkings(text: str, most_cuts: int | None = None) -> list[list[str]]:
    """Every way to cut a short text into pieces (with at most ``most_cuts`` cuts, and
    then one character a piece too)."""
    n = len(text)
    result = []
    for mask in range(1 << max(0, n - 1)):
        if most_cuts is not None and mask.bit_count() > most_cuts:
            continue
        edges = [0] + [i + 1 for i in range(n - 1) if mask >> i & 1] + [n]
        result.append([text[a:b] for a, b in pairwise(edges)])
    if most_cuts is not None and n > most_cuts + 1:
        result.append(list(text))
    return result


# -- readable examples ---------------------------------------------------------------


@SETTINGS
@given(
    text=st.text(alphabet="ab\n\r€😀\ud800\udfff\udbff", max_size=30),
    cuts=st.lists(st.integers(0, 30), max_size=6),
    newline=st.sampled_from([None, "\n"]),
    limit=st.sampled_from([None, 4, 7]),
)
def test_lone_surrogates_in_text_come_back_whatever_comes_first(
    text: str, cuts: list[int], newline: str | None, limit: int | None
) -> None:
    """Text with lone surrogates, first anywhere (after text without any, a character
    cut in the bytes held): each comes back as itself."""
    bounds = [0, *sorted(c for c in cuts if c <= len(text)), len(text)]
    pieces = [text[a:b] for a, b in pairwise(bounds)]
    options = {"newline": newline, "max_line_bytes": limit, "on_overlong": "split"}
    assert split_text(pieces, **options) == as_comparable(
        reference_lines(text, newline, limit=limit, policy="split")
    )


@pytest.mark.parametrize(
    ("text", "options", "expected"),
    [
        ("a\nb\r\nc\rd", {}, ["a", "b", "c", "d"]),
        ("a\nb\r\nc\rd", {"keepends": True}, ["a\n", "b\r\n", "c\r", "d"]),
        ("a\n\nb\n", {}, ["a", "", "b"]),
        ("\r\r\n\n", {}, ["", "", ""]),
        ("a\x0bb\x0cc\u2028d\x85e", {}, ["a\x0bb\x0cc\u2028d\x85e"]),
        ("a\x0bb\nc", {"keepends": True}, ["a\x0bb\n", "c"]),
        ("a\rb\r\nc", {"newline": "\r\n"}, ["a\rb", "c"]),
        ("a\0b\0", {"newline": "\0", "keepends": True}, ["a\0", "b\0"]),
        ("x<>y<<>>z", {"newline": "<>"}, ["x", "y<", ">z"]),
        ("", {}, []),
        ("no newline", {}, ["no newline"]),
    ],
)
def test_examples(text: str, options: dict[str, object], expected: list[str]) -> None:
    assert split_text([text], **options) == expected


def test_cr_at_chunk_end_is_held_until_the_next_piece_decides() -> None:
    splitter = LineSplitter(keepends=True)
    assert splitter.feed("one\r") == []
    assert splitter.feed("\ntwo\r") == ["one\r\n"]
    assert splitter.feed("three") == ["two\r"]
    assert splitter.flush() == ["three"]


def test_cr_held_at_the_end_of_input_ends_the_line() -> None:
    splitter = LineSplitter()
    assert splitter.feed("last\r") == []
    assert splitter.flush() == ["last"]
    assert splitter.flush() == []


def test_delimiter_split_across_pieces() -> None:
    splitter = LineSplitter(newline="<END>")
    assert splitter.feed("alpha<E") == []
    assert splitter.feed("N") == []
    assert splitter.feed("D>beta<EN") == ["alpha"]
    assert splitter.flush() == ["beta<EN"]


def test_partial_is_cut_at_a_character_boundary() -> None:
    splitter = LineSplitter(max_line_bytes=5, on_overlong="raise")
    (error,) = splitter.feed("aaaa€€\n")  # "aaaa" is 4 bytes, "aaaa€" would be 7
    assert isinstance(error, LineTooLong)
    assert error.partial == "aaaa"
    assert error.max_line_bytes == 5


@pytest.mark.anyio
async def test_by_default_an_overlong_line_is_split_and_nothing_is_lost() -> None:
    text = "aaaa€€bb\nnext\n"  # the first line is 12 bytes
    splitter = LineSplitter(max_line_bytes=5)
    pieces = splitter.feed(text)
    assert pieces == ["aaaa", "€", "€bb", "next"]
    assert splitter.statistics().overlong_lines == 1
    stream = LineReceiveStream(ChunkStream([text.encode()]), max_line_bytes=5)
    assert [line async for line in stream] == pieces


# -- every chunking, every mode ------------------------------------------------------

SAMPLES = [
    "ab\r\ncd\re\n",
    "\r\n\r\r\n",
    "é€\n😀\r\n",
    "a\0b<>\0<",
    "x<><>y\r",
    "\n\n<",
]


@pytest.mark.parametrize("text", SAMPLES)
@pytest.mark.parametrize("newline", NEWLINES)
@pytest.mark.parametrize("keepends", [False, True])
def test_every_chunking_gives_the_same_lines(
    text: str, newline: str | None, keepends: bool
) -> None:
    expected = reference_lines(text, newline, keepends)
    for pieces in text_chunkings(text):
        assert split_text(pieces, newline=newline, keepends=keepends) == expected, pieces


LIMIT = 6


# Every chunking of the longer texts (thousands each) runs in the soak step; the default
# run cuts them at most three times, and into single characters.
@pytest.mark.parametrize("most_cuts", [3, pytest.param(None, marks=pytest.mark.soak)])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("newline", [None, "\r\n"])
@pytest.mark.parametrize(
    "content",
    [
        "abcde",  # limit - 1
        "abcdef",  # exactly the limit
        "abcdefg",  # limit + 1
        "abc€",  # 6 bytes with a 3-byte character at the end
        "abcd€",  # 7 bytes: the character would straddle the limit
        "😀😀",  # 8 bytes of 4-byte characters
        "a" * 13,  # more than two limits
    ],
)
def test_limits_at_and_around_max_line_bytes(
    policy: str, newline: str | None, content: str, most_cuts: int | None
) -> None:
    text = f"{content}\r\nok\r\n{content}"
    for keepends in (False, True):
        expected = reference_lines(text, newline, keepends, LIMIT, policy)
        for pieces in text_chunkings(text, most_cuts) if len(text) <= 14 else [[text]]:
            got = split_text(
                pieces,
                newline=newline,
                keepends=keepends,
                max_line_bytes=LIMIT,
                on_overlong=policy,
            )
            assert got == expected, pieces


def test_limit_applies_to_content_not_newline() -> None:
    assert split_text(["abcd\r\n"], max_line_bytes=4, keepends=True) == ["abcd\r\n"]
    assert split_text(["abcd<>"], newline="<>", max_line_bytes=4) == ["abcd"]


@SETTINGS
@given(
    text=st.text(
        alphabet=st.sampled_from(["a", "é", "€", "😀", "\r", "\n", "\0", "<", ">", "\udcff"]),
        max_size=60,
    ),
    points=st.lists(st.integers(0, 60), max_size=8),
    newline=st.sampled_from(NEWLINES),
    keepends=st.booleans(),
    limit=st.sampled_from([None, 4, 5, 7, 12]),
    policy=st.sampled_from(POLICIES),
)
def test_splitter_matches_reference_for_any_chunking(
    text: str,
    points: list[int],
    newline: str | None,
    keepends: bool,
    limit: int | None,
    policy: str,
) -> None:
    edges = sorted({p for p in points if 0 < p < len(text)})
    pieces = [text[a:b] for a, b in zip([0, *edges], [*edges, len(text)], strict=True)]
    expected = reference_lines(text, newline, keepends, limit, policy)
    got = split_text(
        pieces, newline=newline, keepends=keepends, max_line_bytes=limit, on_overlong=policy
    )
    assert got == expected


# -- policies, counting, memory ------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("raise", ["short", ("LineTooLong", "0123456789"), "end"]),
        ("truncate", ["short", "0123456789", "end"]),
        ("split", ["short", "0123456789", "0123456789", "01234", "end"]),
        ("skip", ["short", "end"]),
    ],
)
def test_each_policy_is_counted(policy: str, expected: list[object]) -> None:
    splitter = LineSplitter(max_line_bytes=10, on_overlong=policy)
    out = splitter.feed("short\n" + "0123456789" * 2 + "01234\nend")
    out += splitter.flush()
    assert as_comparable(out) == expected
    stats = splitter.statistics()
    assert stats.overlong_lines == 1
    assert stats.lines == sum(isinstance(x, str) for x in out)
    assert stats.chars_in == len("short\n") + 25 + len("\nend")


@pytest.mark.parametrize("policy", POLICIES)
def test_memory_stays_bounded_for_an_endless_line(policy: str) -> None:
    splitter = LineSplitter(max_line_bytes=1000, on_overlong=policy)
    chunk = "€" * 100  # 300 bytes
    out: list[object] = []
    for _ in range(1000):
        out += splitter.feed(chunk)
        assert splitter.buffered <= 1000 + len(chunk)
    out += splitter.feed("\nnext\n")
    assert out[-1] == "next"
    if policy == "split":
        pieces = out[:-1]
        assert "".join(pieces) == chunk * 1000  # type: ignore[arg-type]
        assert all(len(p.encode()) <= 1000 for p in pieces)  # type: ignore[union-attr]
    else:
        assert len(out) == {"raise": 2, "truncate": 2, "skip": 1}[policy]


@pytest.mark.parametrize(
    "options",
    [
        {"newline": ""},
        {"max_line_bytes": 3},
        {"max_line_bytes": 0},
        {"on_overlong": "explode"},
    ],
)
def test_bad_options_are_rejected(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        LineSplitter(**options)  # type: ignore[arg-type]


# -- LineReceiveStream ---------------------------------------------------------------


async def collect(stream: LineReceiveStream) -> list[object]:
    out: list[object] = []
    while True:
        try:
            out.append(await stream.receive())
        except LineTooLong as exc:
            out.append(("LineTooLong", exc.partial))
        except EndOfStream:
            return out


BYTE_SAMPLES = [
    b"ab\r\ncd\re\n",
    "é\r\n😀\r".encode(),
    b"a\0b\r\0\n",
    b"o \xff t\nth",  # an invalid byte mid-line: the rest of the line survives
    b"\xe2\x82\nx\xf0\x9f\x98",  # a cut-off sequence before a newline, another at the end
]


@pytest.mark.anyio
@pytest.mark.parametrize("data", BYTE_SAMPLES)
@pytest.mark.parametrize("newline", [None, "\r\n", "\0"])
@pytest.mark.parametrize("keepends", [False, True])
async def test_stream_lines_for_every_chunking(
    data: bytes, newline: str | None, keepends: bool
) -> None:
    expected = reference_lines(decode_all(data), newline, keepends)
    for chunks in all_chunkings(data):
        stream = LineReceiveStream(ChunkStream(chunks), newline=newline, keepends=keepends)
        assert await collect(stream) == expected, chunks


@pytest.mark.anyio
async def test_invalid_byte_mid_line_keeps_the_rest_of_the_line() -> None:
    stream = LineReceiveStream(ChunkStream([b"caf\xc3", b"\xa9 \xff ok\nnext"]))
    assert await collect(stream) == ["café \ufffd ok", "next"]
    stats = stream.statistics()
    assert stats.malformed == {MalformedKind.INVALID_BYTE: 1}
    assert stats.lines == 2
    assert stats.bytes_in == len(b"caf\xc3\xa9 \xff ok\nnext")


@pytest.mark.anyio
@pytest.mark.parametrize("policy", POLICIES)
async def test_overlong_policies_through_the_stream(policy: str) -> None:
    data = b"ok\n" + "é".encode() * 8 + b"\r\n" + b"x" * 9 + b"\nend"
    expected = reference_lines(decode_all(data), None, False, 8, policy)
    for points in ([], [1, 5, 6, 11, 20, 24], list(range(len(data)))):
        stream = LineReceiveStream(
            ChunkStream(cut(data, points)), max_line_bytes=8, on_overlong=policy
        )
        assert await collect(stream) == expected
        assert stream.statistics().overlong_lines == 2


@pytest.mark.anyio
async def test_line_too_long_leaves_the_stream_usable() -> None:
    stream = LineReceiveStream(
        ChunkStream([b"first\n", b"x" * 30, b"y" * 30, b"\nafter\n"]),
        max_line_bytes=16,
        on_overlong="raise",
    )
    assert await stream.receive() == "first"
    with pytest.raises(LineTooLong) as info:
        await stream.receive()
    assert info.value.partial == "x" * 16
    assert await stream.receive() == "after"
    with pytest.raises(EndOfStream):
        await stream.receive()
    with pytest.raises(EndOfStream):
        await stream.receive()


@pytest.mark.anyio
async def test_strict_errors_in_a_line_stream_are_raised_in_place() -> None:
    stream = LineReceiveStream(ChunkStream([b"a\nb\xffc\nd\n"]), errors="strict")
    assert await stream.receive() == "a"
    with pytest.raises(Utf8DecodeError) as info:
        await stream.receive()
    assert info.value.offset == 3
    assert await stream.receive() == "bc"
    assert await stream.receive() == "d"


@pytest.mark.anyio
async def test_text_sources_are_split_as_they_are() -> None:
    send, receive = anyio.create_memory_object_stream[str](10)
    for piece in ["a\r", "\nb", "\udcff\n", "c"]:
        send.send_nowait(piece)
    send.close()
    stream = LineReceiveStream(receive, keepends=True)
    assert await collect(stream) == ["a\r\n", "b\udcff\n", "c"]
    assert stream.decoder is None
    assert stream.statistics().chars_out == 7
    with pytest.raises(TypeError):
        stream.mark_gap()


@pytest.mark.anyio
async def test_object_stream_of_bytes_is_decoded() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    for piece in [b"\xe2\x82", b"\xac\n", b"x"]:
        send.send_nowait(piece)
    send.close()
    stream = LineReceiveStream(receive)
    assert await collect(stream) == ["€", "x"]
    assert stream.decoder is not None
    assert stream.statistics().bytes_in == 5


@pytest.mark.anyio
@pytest.mark.parametrize("policy", ["split", "truncate", "skip"])
@pytest.mark.parametrize(
    "pieces",
    [[b"\xff\xff\xff\n", b"ab"], [b"\xff", b"\xff\xffab\ncd"], [b"\xf0\x9f\x98", b"ab\n"]],
)
async def test_object_stream_of_bytes_counts_source_bytes_as_a_byte_stream_does(
    pieces: list[bytes], policy: str
) -> None:
    """The limit counts source bytes (a malformed byte is one) from the first item on: a
    first chunk decoded to text first would count each U+FFFD as three."""
    send, receive = anyio.create_memory_object_stream[bytes](10)
    for piece in pieces:
        send.send_nowait(piece)
    send.close()
    options = {"max_line_bytes": 4, "on_overlong": policy}
    from_objects = await collect(LineReceiveStream(receive, **options))  # type: ignore[arg-type]
    from_bytes = await collect(LineReceiveStream(ChunkStream(pieces), **options))  # type: ignore[arg-type]
    assert from_objects == from_bytes


@pytest.mark.anyio
async def test_line_stream_over_a_text_stream_reports_its_decoder() -> None:
    text = Utf8ReceiveStream(ChunkStream([b"a\xff\n", b"b"]))
    stream = LineReceiveStream(text)
    assert stream.decoder is text.decoder
    assert await collect(stream) == ["a\ufffd", "b"]
    stats = stream.statistics()
    assert stats.malformed_total == 1
    assert stats.lines == 2


@pytest.mark.anyio
async def test_mark_gap_through_a_line_stream() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    stream = LineReceiveStream(Utf8ReceiveStream(receive))
    send.send_nowait(b"ab\xc3")
    with anyio.move_on_after(0.05):  # reads "ab\xc3", completes no line, waits: cancelled
        await stream.receive()
    assert stream.statistics().bytes_in == 3
    stream.mark_gap()
    # The A9 that completed "\xc3" belongs to the gap: one U+FFFD stands for all of it.
    send.send_nowait(b"\xa9cd\n")
    send.close()
    assert await collect(stream) == ["ab\ufffdcd"]
    stats = stream.statistics()
    assert stats.gaps == 1
    assert stats.malformed == {MalformedKind.LOST_BYTES: 1}


async def iterate(stream: LineReceiveStream) -> list[object]:
    """Like ``collect``, through ``async for`` (started again after a ``LineTooLong``)."""
    out: list[object] = []
    while True:
        try:
            async for line in stream:
                out.append(line)
            return out
        except LineTooLong as exc:
            out.append(("LineTooLong", exc.partial))


@pytest.mark.anyio
@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize("data", [*BYTE_SAMPLES, b"x" * 9 + b"\nab\n" + b"y" * 20])
@pytest.mark.parametrize("newline", [None, "\r\n"])
@pytest.mark.parametrize("policy", POLICIES)
async def test_iteration_gives_what_receive_gives(
    data: bytes, newline: str | None, policy: str, anyio_backend: str
) -> None:
    options = {"newline": newline, "max_line_bytes": 8, "on_overlong": policy}
    expected = await collect(LineReceiveStream(ChunkStream([data]), **options))  # type: ignore[arg-type]
    head = data[:12]
    # The backend cannot change where an in-memory stream's lines are cut: every chunking
    # of the head on asyncio; on trio one cut anywhere, and byte by byte.
    if anyio_backend == "asyncio":
        chunkings = list(all_chunkings(head))
    else:
        one_cut = [cut(head, [i]) for i in range(1, len(head))]
        chunkings = [*one_cut, cut(head, range(1, len(head)))]
    for chunks in chunkings:
        chunks = [*chunks, data[12:]] if len(data) > 12 else chunks
        stream = LineReceiveStream(ChunkStream(chunks), **options)  # type: ignore[arg-type]
        assert await iterate(stream) == expected, chunks


@pytest.mark.anyio
@pytest.mark.usefixtures("implementation")
async def test_a_cancelled_iteration_step_leaves_the_iterator_usable() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    stream = LineReceiveStream(receive)
    lines = aiter(stream)
    await send.send(b"one\ntw")
    assert await anext(lines) == "one"
    with anyio.move_on_after(0.01) as scope:
        await anext(lines)  # "two" is not complete: cancelled while waiting
    assert scope.cancelled_caught
    await send.send(b"o\nthree\n")
    await send.aclose()
    assert [line async for line in lines] == ["two", "three"]


@pytest.mark.anyio
@pytest.mark.usefixtures("implementation")
async def test_iteration_and_receive_mix_freely() -> None:
    data = b"".join(b"line %d\n" % i for i in range(60))
    stream = LineReceiveStream(ChunkStream(cut(data, range(0, len(data), 23))))
    got: list[str] = []
    lines = aiter(stream)
    while len(got) < 60:
        if len(got) % 3 == 0:
            got.append(await stream.receive())
        elif len(got) % 3 == 1:
            got.append(await anext(lines))
        else:
            got.append(await anext(aiter(stream)))  # a new iterator each time
    assert got == [f"line {i}" for i in range(60)]
    with pytest.raises(StopAsyncIteration):
        await anext(lines)


@pytest.mark.anyio
@pytest.mark.usefixtures("implementation")
async def test_async_iteration_and_leaving_the_loop_early_lose_nothing() -> None:
    data = b"".join(b"line %d\n" % i for i in range(100))
    stream = LineReceiveStream(ChunkStream(cut(data, range(0, len(data), 37))))
    got = []
    async for line in stream:
        got.append(line)
        if len(got) == 10:
            break
    async for line in stream:
        got.append(line)
    assert got == [f"line {i}" for i in range(100)]
    assert stream.statistics().lines == 100


@pytest.mark.anyio
async def test_aclose_drops_buffered_lines_and_closes_the_source() -> None:
    transport = ChunkStream([b"a\nb\nc\n"])
    stream = LineReceiveStream(transport)
    assert await stream.receive() == "a"
    await stream.aclose()
    assert transport.closed
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()


# -- bytes: the limit counts source bytes (the line engine's rule) ----------------------

BYTE_FRAGMENTS = [
    b"a",
    b"xyz",
    b"\xff",
    b"\xe2\x82",
    b"\xe2\x82\xac",
    b"\xc3\xa9",
    b"\xf0\x9f\x98",
]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("raise", ["ab\ufffd\ufffd", ("LineTooLong", "\ufffd" * 4), "end"]),
        ("truncate", ["ab\ufffd\ufffd", "\ufffd" * 4, "end"]),
        ("split", ["ab\ufffd\ufffd", "\ufffd" * 4, "\ufffd" * 2, "end"]),
        ("skip", ["ab\ufffd\ufffd", "end"]),
    ],
)
def test_feed_bytes_counts_a_malformed_byte_as_one(policy: str, expected: list[object]) -> None:
    # 4 source bytes fit a limit of 4, though their text is 8 bytes in UTF-8.
    data = b"ab\xff\xff\n" + b"\xff" * 6 + b"\nend"
    for points in ([], [3, 5, 8], list(range(len(data)))):
        splitter = LineSplitter(max_line_bytes=4, on_overlong=policy)
        decoder = Utf8Decoder()
        out: list[str | LineTooLong] = []
        for chunk in cut(data, points):
            out += splitter.feed_bytes(decoder, chunk)
        out += splitter.feed_bytes(decoder, b"", True) + splitter.flush()
        assert as_comparable(out) == expected
        assert splitter.overlong_lines == 1


@SETTINGS
@given(
    st.lists(st.sampled_from([*BYTE_FRAGMENTS, b"\n", b"\r", b"\r\n"]), max_size=40).map(b"".join),
    st.integers(4, 9),
    st.sampled_from(POLICIES),
    st.lists(st.integers(0, 200), max_size=8),
)
def test_feed_bytes_with_malformed_bytes_near_the_limit(
    data: bytes, limit: int, policy: str, points: list[int]
) -> None:
    expected = reference_byte_lines(data, None, False, limit, policy)
    splitter = LineSplitter(max_line_bytes=limit, on_overlong=policy)
    decoder = Utf8Decoder()
    out: list[str | LineTooLong] = []
    for chunk in cut(data, sorted(p for p in points if p <= len(data))):
        out += splitter.feed_bytes(decoder, chunk)
    out += splitter.feed_bytes(decoder, b"", True) + splitter.flush()
    assert as_comparable(out) == expected


@pytest.mark.anyio
@pytest.mark.parametrize("policy", POLICIES)
async def test_a_line_stream_counts_source_bytes(policy: str) -> None:
    data = b"ok\n" + b"\xe2\x82" * 3 + b"\n" + b"\xff" * 9 + b"\r\nend"
    expected = reference_byte_lines(data, None, False, 6, policy)
    assert expected[1] == "\ufffd" * 3  # 6 bytes: not overlong, though 9 in UTF-8
    for points in ([], [1, 4, 7, 12, 20], list(range(len(data)))):
        stream = LineReceiveStream(
            ChunkStream(cut(data, points)), max_line_bytes=6, on_overlong=policy
        )
        assert await collect(stream) == expected
        assert stream.statistics().overlong_lines == 1


@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("split", ["\ufffd", "\ufffd\ufffd"]),
        ("truncate", ["\ufffd"]),
        ("raise", [("LineTooLong", "\ufffd")]),
        ("skip", []),
    ],
)
def test_a_piece_that_is_one_cut_off_sequence_keeps_its_replacement(
    policy: str, expected: list[object]
) -> None:
    # Each E2 82 is one malformed unit (one U+FFFD) that the next byte ends: the first
    # piece, cut before the second unit so that it ends on a boundary, is that unit.
    data = b"\xe2\x82" * 3 + b"\n"
    for points in ([], [1, 2, 3], list(range(len(data)))):
        splitter = LineSplitter(max_line_bytes=4, on_overlong=policy)
        decoder = Utf8Decoder()
        out: list[str | LineTooLong] = []
        for chunk in cut(data, points):
            out += splitter.feed_bytes(decoder, chunk)
        out += splitter.feed_bytes(decoder, b"", True) + splitter.flush()
        assert as_comparable(out) == expected
        assert decoder.statistics().malformed == {MalformedKind.INCOMPLETE_SEQUENCE: 3}


def test_sync_decoder_hands_over_the_held_bytes_before_a_gap() -> None:
    splitter = LineSplitter()
    decoder = Utf8Decoder()
    assert splitter.feed_bytes(decoder, b"ab\xe2\x82") == []
    splitter.sync_decoder()
    decoder.mark_gap()
    assert splitter.feed_bytes(decoder, b"\xaccd\n") == ["ab\ufffdcd"]
    assert splitter.statistics().chars_in == len("ab\ufffdcd\n")


def test_a_decoder_used_behind_the_splitters_back_is_an_error() -> None:
    splitter = LineSplitter()
    decoder = Utf8Decoder()
    splitter.feed_bytes(decoder, b"ab")
    decoder.mark_gap()  # the gap would come before "ab", which the decoder has not seen
    with pytest.raises(RuntimeError, match="sync_decoder"):
        splitter.feed_bytes(decoder, b"cd\n")


@pytest.mark.anyio
async def test_mark_gap_on_a_line_stream_over_bytes_keeps_the_line_in_order() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    stream = LineReceiveStream(receive)
    send.send_nowait(b"first\nab\xc3")
    assert await stream.receive() == "first"
    stream.mark_gap()
    send.send_nowait(b"\xa9cd\nz")
    send.close()
    assert await collect(stream) == ["ab\ufffdcd", "z"]
    assert stream.statistics().gaps == 1


def test_a_gap_reaches_the_bytes_of_a_splitter_never_its_text() -> None:
    """The splitter's source keeps the line engine's contract: a gap told to the engine
    (``finish(lost=...)``) goes to the decoder of the bytes; text cannot have one."""
    splitter = LineSplitter()
    decoder = Utf8Decoder()
    assert splitter.feed_bytes(decoder, b"ab") == []
    engine = splitter._engine
    [item] = engine.finish(lost=3)
    assert isinstance(item, LineItem) and item.line == "ab"
    # The gap is the bytes decoder's now: its next text starts with the one U+FFFD.
    assert decoder.statistics().gaps == 1
    assert decoder.decode(b"c", True) == "\ufffdc"
    text_only = LineSplitter()
    text_only.feed("ab")
    with pytest.raises(ValueError, match="no gap in text"):
        text_only._engine.finish(lost=3)


@pytest.mark.usefixtures("implementation")
@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        ("ab\n", [b"cd\nx", b"y\r\nz\n"]),
        ("\n", [b"\r\x00"]),
        ("ab", [b"c\nd\n", b"e\n"]),
        ("", [b"cd\nx", b"y\n"]),
    ],
)
def test_bytes_after_text_give_each_line_once(text: str, chunks: list[bytes]) -> None:
    """Text fed, then bytes: the engine counts the text's bytes, the decoder only its
    own, so the decoder's line offsets are not the engine's; each line still comes out
    once (the first line of the bytes came out twice)."""
    decoder = Utf8Decoder()
    splitter = LineSplitter(newline=None, max_line_bytes=64)
    out = splitter.feed(text) if text else []
    for chunk in chunks:
        out += splitter.feed_bytes(decoder, chunk)
    out += splitter.feed_bytes(decoder, b"", True) + splitter.flush()
    whole = text + b"".join(chunks).decode()
    assert out == whole.splitlines()
