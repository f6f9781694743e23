"""``transforms=`` on the core: ``LineSplitter`` (each line transformed whole, nothing
carried across a newline) and ``TransformingDecoder`` (decoder and transform resumed
together), over many chunkings against an oracle; ``fresh_copy`` and ``as_transform``."""

from __future__ import annotations

import itertools

import pytest
from _helpers import examples
from _stream_helpers import cut, decode_all, reference_lines
from _transform_helpers import Pairs, paired, paired_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream import LineSplitter, Utf8DecodeError, Utf8Decoder
from utf8stream.core.transformed import as_transform, fresh_copy
from utf8stream.transforms import (
    Chain,
    TextChange,
    TransformedCheckpoint,
    TransformingDecoder,
    chain,
)

TEXT = st.text(alphabet="ab\n\r\0Xé€😀", max_size=40)
CUTS = st.lists(st.integers(0, 160), max_size=8)
NEWLINES = st.sampled_from([None, "\n", "\r\n", "\0", "ba"])
SETTINGS = settings(max_examples=examples(200), deadline=None)


def _text_pieces(text: str, cuts: list[int]) -> list[str]:
    edges = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(edges)]


def _ends(newline: str | None, keepends: bool) -> tuple[str, ...]:
    return () if not keepends else ("\r\n", "\n", "\r") if newline is None else (newline,)


@given(TEXT, CUTS, NEWLINES, st.booleans(), st.booleans())
@SETTINGS
def test_each_line_is_transformed_whole_over_any_chunking(
    text: str, cuts: list[int], newline: str | None, keepends: bool, as_bytes: bool
) -> None:
    expected = paired_lines(
        [str(x) for x in reference_lines(text, newline, keepends, None)], _ends(newline, keepends)
    )
    splitter = LineSplitter(
        newline=newline, keepends=keepends, max_line_bytes=None, transforms=Pairs()
    )
    decoder = Utf8Decoder()
    out: list[object] = []
    pieces: list[bytes] | list[str] = (
        cut(text.encode(), cuts) if as_bytes else _text_pieces(text, cuts)
    )
    for piece in pieces:
        if isinstance(piece, bytes):
            out += splitter.feed_bytes(decoder, piece)
        else:
            out += splitter.feed(piece)
        # A line boundary needs no transform state: the carry is empty after every line.
        assert splitter.line_transform is not None
        assert splitter.line_transform.transform.checkpoint().carry == ""
    if as_bytes:
        out += splitter.feed_bytes(decoder, b"", True)
    out += splitter.flush()
    assert out == expected


def test_the_newline_is_kept_out_of_the_transform() -> None:
    # With newline "ba" the line "xa" + "ba" must not become "xX" + "a".
    splitter = LineSplitter(newline="ba", keepends=True, transforms=Pairs())
    assert splitter.feed("xababa") == ["xaba", "ba"]
    assert splitter.feed("abbay") == ["Xba"]
    assert splitter.flush() == ["y"]


def test_a_split_overlong_line_is_transformed_piece_by_piece() -> None:
    splitter = LineSplitter(max_line_bytes=4, on_overlong="split", transforms=[Pairs()])
    # The cut falls inside "ab": each piece is a text of its own.
    assert splitter.feed("aaaabab\n") == ["aaaa", "bX"]


def test_line_events_count_the_lines_characters_without_newlines() -> None:
    changes: list[TextChange] = []
    splitter = LineSplitter(transforms=Pairs(changes.append))
    assert splitter.feed("ab\nxab\n") == ["X", "xX"]
    assert [(c.offset, c.output_offset) for c in changes] == [(0, 0), (3, 2)]


BYTES = st.lists(
    st.sampled_from([b"a", b"b", b"ab", b"\n", b"\xc3\xa9", b"\xff", b"\xe2\x82", b"\xac"]),
    max_size=30,
).map(b"".join)


@given(BYTES, st.integers(0, 80), CUTS)
@SETTINGS
def test_a_transforming_decoder_resumed_from_json_gives_one_run(
    data: bytes, at: int, cuts: list[int]
) -> None:
    at %= len(data) + 1
    first = TransformingDecoder(Utf8Decoder(), chain(Pairs(), Pairs()))
    head = "".join(first.decode(piece) for piece in cut(data[:at], cuts))
    saved = TransformedCheckpoint.from_json(first.checkpoint().to_json())
    assert saved == first.checkpoint()
    resumed = TransformingDecoder.from_checkpoint(saved)
    tail = "".join(resumed.decode(piece) for piece in cut(data[at:], cuts))
    tail += resumed.decode(b"", True)
    assert head + tail == paired(paired(decode_all(data)))


def test_a_strict_error_carries_the_transformed_text_before_it() -> None:
    decoder = TransformingDecoder(Utf8Decoder("strict"), Pairs())
    with pytest.raises(Utf8DecodeError) as caught:
        decoder.decode(b"xab\xffab")
    assert caught.value.partial == "xX"
    assert decoder.decode(b"", True) == "X"


def test_a_bad_transformed_checkpoint_is_refused() -> None:
    with pytest.raises(ValueError):
        TransformedCheckpoint.from_json('{"version": 1, "decoder": {}}')


def test_a_fresh_copy_carries_nothing_and_keeps_the_callback() -> None:
    changes: list[TextChange] = []
    used = chain(Pairs(changes.append), Pairs())
    assert used.transform("xxa") == "xx"
    copy = fresh_copy(used)
    assert isinstance(copy, Chain) and copy is not used
    assert copy.position == 0 and copy.checkpoint().parts[0].carry == ""
    assert copy.transform("ab", True) == "X"
    assert changes == [TextChange(0, "ab", "X", 0, "test-pairs")]
    assert used.transform("b", True) == "X"  # the original goes on unchanged


def test_as_transform_takes_one_a_sequence_or_nothing() -> None:
    one = Pairs()
    assert as_transform(None) is None
    assert as_transform([]) is None
    assert as_transform(one) is one
    assert as_transform([one]) is one
    both = as_transform((Pairs(), Pairs()))
    assert isinstance(both, Chain) and len(both.parts) == 2
    for wrong in ("NFC", [Pairs(), "NFC"], 3):
        with pytest.raises(TypeError, match="transforms= takes a text transform"):
            as_transform(wrong)  # type: ignore[arg-type]


@pytest.mark.parametrize("encoding", ["utf-16-le", "auto", "utf-8"])
def test_lines_of_encoded_bytes_are_transformed(encoding: str) -> None:
    data = "xab\nab é\nxa".encode("utf-16-le" if encoding != "utf-8" else "utf-8")
    if encoding == "auto":
        data = b"\xff\xfe" + data  # a byte-order mark tells it
    splitter = LineSplitter(encoding=encoding, transforms=Pairs())
    out = [line for k in range(0, len(data), 3) for line in splitter.feed_encoded(data[k : k + 3])]
    assert out + splitter.flush() == ["xX", "X é", "xa"]
