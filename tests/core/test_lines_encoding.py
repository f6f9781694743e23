"""``LineSplitter(encoding=...)``: bytes in UTF-8, a named codec or a detected encoding cut
into the lines of the text they decode to, however the bytes are cut into pieces."""

from __future__ import annotations

import re

import pytest
from _helpers import CORE, cut_randomly, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream import LineSplitter, LineTooLong
from utf8stream.detect import EncodingDoubt

FRENCH = "Le cœur a ses raisons que la raison ne connaît point.\r\nOù est la bibliothèque ?\n"
RUSSIAN = "Съешь же ещё этих мягких французских булок,\rда выпей чаю.\n"
JAPANESE = (
    "すべての人間は、生まれながらにして自由であり、\nかつ、尊厳と権利とについて平等である。\n"
)

#: (the bytes, the codec that decodes them): each is also what "auto" detects on them.
SAMPLES = {
    "utf-8": ((FRENCH * 6).encode(), "utf-8"),
    "utf-8 malformed": ((FRENCH * 6).encode() + b"ok \xe2\x82\nfin \xff", "utf-8"),
    "cp1252": ((FRENCH * 20).encode("cp1252"), "cp1252"),
    "cp1251": ((RUSSIAN * 20).encode("cp1251"), "cp1251"),
    "koi8-r": ((RUSSIAN * 20).encode("koi8-r"), "koi8-r"),
    "shift_jis": ((JAPANESE * 20).encode("cp932"), "cp932"),
    "utf-16 bom": ((FRENCH * 4).encode("utf-16"), "utf-16"),
    "utf-16-be": ((FRENCH * 10).encode("utf-16-be"), "utf-16-be"),
}


def oracle(data: bytes, codec: str, newline: str | None) -> list[str]:
    """The whole input decoded at once, cut at its newlines."""
    text = data.decode(codec, "replace")
    lines = re.split(r"\r\n|\r|\n", text) if newline is None else text.split(newline)
    return lines[:-1] if lines[-1] == "" else lines


def split(
    chunks: list[bytes], encoding: str, newline: str | None = None
) -> list[str | LineTooLong]:
    splitter = LineSplitter(encoding=encoding, newline=newline)
    out: list[str | LineTooLong] = []
    for chunk in chunks:
        out += splitter.feed_encoded(chunk)
    return out + splitter.flush()


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("how", ["named", "auto"])
def test_whole_and_byte_by_byte_give_the_oracles_lines(name: str, how: str) -> None:
    data, codec = SAMPLES[name]
    encoding = codec if how == "named" else "auto"
    expected = oracle(data, codec, None)
    assert len(expected) > 2
    assert split([data], encoding) == expected
    assert split([data[i : i + 1] for i in range(len(data))], encoding) == expected


@settings(CORE, max_examples=examples(150))
@given(st.sampled_from(sorted(SAMPLES)), st.sampled_from([None, "\n"]), st.data())
def test_any_chunking_gives_the_oracles_lines(
    name: str, newline: str | None, data: st.DataObject
) -> None:
    whole, codec = SAMPLES[name]
    expected = oracle(whole, codec, newline)
    chunks = cut_randomly(data.draw, whole)
    assert split(chunks, "auto", newline) == expected
    assert split(chunks, codec, newline) == expected


def test_the_encoding_detected_is_known_once_decided() -> None:
    data, _ = SAMPLES["koi8-r"]
    splitter = LineSplitter(encoding="auto")
    assert splitter.feed_encoded(data[:10]) == []
    assert splitter.source_encoding is None
    assert splitter.buffered == 10  # the detector holds them
    lines = splitter.feed_encoded(data[10:]) + splitter.flush()
    assert splitter.source_encoding == "koi8-r"
    assert lines == oracle(data, "koi8-r", None)
    assert LineSplitter(encoding="cp1251").source_encoding == "cp1251"


def test_a_splitter_of_another_encoding_takes_bytes_only() -> None:
    splitter = LineSplitter(encoding="cp1252")
    with pytest.raises(TypeError, match="feed_encoded"):
        splitter.feed("text")
    with pytest.raises(ValueError, match="keepends is for UTF-8 only"):
        LineSplitter(encoding="cp1252", keepends=True)
    with pytest.raises(ValueError, match="unknown encoding"):
        LineSplitter(encoding="no-such-codec")


def test_utf8_bytes_and_text_mix_and_the_splitter_goes_on_after_flush() -> None:
    splitter = LineSplitter()
    assert splitter.feed_encoded(b"un\ndeu") == ["un"]
    assert splitter.feed("x\ntrois") == ["deux"]
    assert splitter.flush() == ["trois"]
    assert splitter.feed_encoded(b"quatre\n") == ["quatre"]
    assert splitter.statistics().lines == 4


def test_the_line_limit_counts_the_encodings_bytes() -> None:
    data = ("é" * 10 + "\n").encode("utf-16-le") * 3
    splitter = LineSplitter(encoding="utf-16-le", max_line_bytes=8, on_overlong="truncate")
    assert splitter.feed_encoded(data) + splitter.flush() == ["éééé"] * 3
    assert splitter.statistics().overlong_lines == 3


def test_auto_hears_a_doubt_about_the_encoding_detected() -> None:
    data = (FRENCH * 4).encode() + b"caf\xe9\n"
    heard: list[EncodingDoubt] = []
    splitter = LineSplitter(encoding="auto", on_doubt=heard.append)
    lines = splitter.feed_encoded(data) + splitter.flush()
    assert lines == oracle(data, "utf-8", None)
    assert heard == [EncodingDoubt(data.index(b"\xe9"), "utf-8", "cp1252")]
