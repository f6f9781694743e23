"""The codecs registered on ``import utf8stream``: names, one-shot, incremental, streams, files.

Expected bytes come from the per-code-point reference in ``test_variants.py``'s spirit,
rebuilt here from CPython's codecs for single characters.
"""

from __future__ import annotations

import codecs
import io
import itertools
from pathlib import Path

import pytest
from _helpers import CORE, cut_randomly
from hypothesis import given
from hypothesis import strategies as st

import utf8stream
from utf8stream import Utf8DecodeError, Utf8Decoder

REGISTERED = ("wtf-8", "cesu-8", "mutf-8", "utf-8z")

#: Text every registered codec round-trips: NUL, every UTF-8 length, a supplementary
#: character, line ends of every kind.
SAMPLE = "a\x00é€\n😀 line\r\nnext\rlast \U0010ffff"
#: What only WTF-8 and MUTF-8 can hold: lone surrogates (a high one last).
LONE = "x\udc00y\ud800z\udbff"


def reference(text: str, name: str) -> bytes:
    """``text`` in the variant ``name``, one code point at a time with CPython."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 and name in ("mutf-8", "utf-8z"):
            out.append(b"\xc0\x80")
        elif cp >= 0x10000 and name in ("cesu-8", "mutf-8"):
            units = ch.encode("utf-16-be")
            pair = chr(int.from_bytes(units[:2], "big")) + chr(int.from_bytes(units[2:], "big"))
            out.append(pair.encode("utf-8", "surrogatepass"))
        else:
            out.append(ch.encode("utf-8", "surrogatepass"))
    return b"".join(out)


# -- names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("wtf-8", "wtf-8"),
        ("WTF-8", "wtf-8"),
        ("wtf_8", "wtf-8"),
        ("wtf8", "wtf-8"),
        ("Wtf 8", "wtf-8"),
        ("cesu-8", "cesu-8"),
        ("CESU_8", "cesu-8"),
        ("mutf-8", "mutf-8"),
        ("MUTF8", "mutf-8"),
        ("java-modified-utf-8", "mutf-8"),
        ("Java_Modified_UTF_8", "mutf-8"),
        ("utf-8z", "utf-8z"),
    ],
)
def test_names_are_normalised_as_codecs_does(alias: str, name: str) -> None:
    info = codecs.lookup(alias)
    assert info.name == name
    assert issubclass(info.incrementaldecoder, Utf8Decoder)  # type: ignore[arg-type]
    assert issubclass(info.incrementalencoder, utf8stream.Utf8Encoder)  # type: ignore[arg-type]
    assert issubclass(info.streamreader, codecs.StreamReader)  # type: ignore[arg-type]
    assert issubclass(info.streamwriter, codecs.StreamWriter)  # type: ignore[arg-type]


def test_utf8_stays_cpythons_and_unknown_names_fail() -> None:
    assert codecs.lookup("utf-8").encode is codecs.utf_8_encode
    assert codecs.lookup("utf8").name == "utf-8"
    for name in ("wtf-9", "cesu", "utf-8zz"):
        with pytest.raises(LookupError):
            codecs.lookup(name)
    assert codecs.lookup_error("optu-8") is utf8stream.core.variants.optu8_errors


# -- one shot ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", REGISTERED)
def test_one_shot_encode_and_decode(name: str) -> None:
    data = SAMPLE.encode(name)
    assert data == reference(SAMPLE, name)
    assert data.decode(name) == SAMPLE
    assert codecs.decode(bytearray(data), name) == SAMPLE
    assert codecs.encode(SAMPLE, name) == data
    if name in ("wtf-8", "mutf-8"):
        assert LONE.encode(name) == reference(LONE, name)
        assert LONE.encode(name).decode(name) == LONE
    else:
        with pytest.raises(UnicodeEncodeError) as info:
            LONE.encode(name)
        assert (info.value.encoding, info.value.start) == (name, 1)


def test_one_shot_errors_and_policies() -> None:
    with pytest.raises(UnicodeDecodeError) as info:
        b"ok \xf0\x9f\x98\x80".decode("cesu-8")
    assert isinstance(info.value, Utf8DecodeError)
    assert (info.value.encoding, info.value.offset) == ("cesu-8", 3)
    assert b"ok \xf0\x9f\x98\x80".decode("cesu-8", "replace") == "ok \ufffd\ufffd\ufffd\ufffd"
    assert b"a\x00".decode("mutf-8", "backslashreplace") == "a\\x00"
    assert b"\xed\xa0\x80\xed\xb0\x80".decode("wtf-8", "surrogatepass") == "\ud800\udc00"
    assert "\ud800".encode("cesu-8", "surrogatepass") == b"\xed\xa0\x80"
    assert "a\udcff".encode("utf-8z", "surrogateescape") == b"a\xff"
    assert b"\xff".decode("wtf-8", "optu-8") == "\uefff"
    assert "\uefff".encode("wtf-8", "optu-8") == b"\xff"


# -- incremental: iterdecode / iterencode -------------------------------------------------

text_for_codec = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(["\x00", "😀", "\r"])),
    max_size=30,
)


@CORE
@given(st.sampled_from(REGISTERED), text_for_codec, st.data())
def test_iterdecode_and_iterencode_any_chunking(name: str, text: str, draw: st.DataObject) -> None:
    data = reference(text, name)
    chunks = cut_randomly(draw.draw, data)
    assert "".join(codecs.iterdecode(chunks, name)) == text
    assert "".join(codecs.iterdecode([data[i : i + 1] for i in range(len(data))], name)) == text
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(text)), max_size=5)))
    pieces = [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]
    assert b"".join(codecs.iterencode(pieces, name)) == data


def test_registered_incremental_decoder_is_strict_and_holds_pairs() -> None:
    decoder = codecs.getincrementaldecoder("cesu-8")()
    assert decoder.errors == "strict"
    assert decoder.decode(b"\xed\xa0\xbd") == ""
    assert decoder.getstate() == (b"\xed\xa0\xbd", 0)
    assert decoder.decode(b"\xed\xb8\x80") == "😀"
    with pytest.raises(UnicodeDecodeError):
        decoder.decode(b"\x80")


def test_registered_incremental_encoder_completes_every_call() -> None:
    # io.TextIOWrapper never calls encode(final=True): a held surrogate would be lost at
    # close, so the registered WTF-8 encoder writes a split pair as two halves.
    encoder = codecs.getincrementalencoder("wtf-8")()
    assert encoder.encode("a\ud83d") == b"a\xed\xa0\xbd"
    assert encoder.encode("\ude00") == b"\xed\xb8\x80"
    assert encoder.getstate() == 0
    assert utf8stream.Utf8Encoder(variant="wtf-8").encode("a\ud83d") == b"a"  # holds


# -- files: open(), tell() and seek() through io.TextIOWrapper ------------------------------


def _texts(name: str) -> list[str]:
    base = SAMPLE * 3 + "\n" + "😀" * 7 + "\x00\n" * 5
    return [base, base + LONE] if name in ("wtf-8", "mutf-8") else [base]


@pytest.mark.parametrize("name", REGISTERED)
@pytest.mark.parametrize("chunk_size", [1, 2, 5, 8192])
def test_open_read_tell_seek(tmp_path: Path, name: str, chunk_size: int) -> None:
    for text in _texts(name):
        path = tmp_path / f"{name}.txt"
        with open(path, "w", encoding=name, newline="") as f:
            for piece in text.split("\n"):  # many write() calls
                f.write(piece + "\n")
        expected = text + "\n"
        assert path.read_bytes() == reference(expected, name)
        with open(path, encoding=name, newline="") as f:
            f._CHUNK_SIZE = chunk_size  # type: ignore[attr-defined]
            cookies = []
            read = []
            while True:
                cookies.append(f.tell())
                ch = f.read(1)
                if not ch:
                    break
                read.append(ch)
            assert "".join(read) == expected
            for i in [*range(0, len(cookies), 7), len(cookies) - 2]:
                f.seek(cookies[i])
                assert f.read() == expected[i:], (name, chunk_size, i)
            f.seek(0)
            assert f.readlines() == expected.splitlines(keepends=True)


def test_open_with_errors_replace_reports_nothing_lost(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\n\xf0\x9f\x98\x80 and \xc0\x80\n\xed\xa0\xbd")
    with open(path, encoding="cesu-8", errors="replace") as f:
        assert f.read() == "ok\n\ufffd\ufffd\ufffd\ufffd and \x00\n\ufffd"
    with open(path, encoding="cesu-8") as f, pytest.raises(UnicodeDecodeError):
        f.read()


def test_text_file_keeps_a_trailing_high_surrogate(tmp_path: Path) -> None:
    path = tmp_path / "w.txt"
    with open(path, "w", encoding="wtf-8") as f:
        f.write("a\ud83d")
        f.write("\ude00b\ud800")  # a split pair: two halves (see above); the last one kept
    assert path.read_bytes() == b"a\xed\xa0\xbd\xed\xb8\x80b\xed\xa0\x80"
    with open(path, encoding="wtf-8", errors="surrogatepass") as f:
        assert f.read() == "a\ud83d\ude00b\ud800"


# -- codecs.open: StreamReader and StreamWriter ---------------------------------------------


@pytest.mark.parametrize("name", REGISTERED)
def test_stream_reader_and_writer(name: str) -> None:
    text = _texts(name)[-1]
    raw = io.BytesIO()
    writer = codecs.getwriter(name)(raw)
    for piece in text.split("\n"):
        writer.write(piece + "\n")
    data = raw.getvalue()
    assert data == reference(text + "\n", name)
    for size in (1, 3, 64, -1):
        reader = codecs.getreader(name)(io.BytesIO(data))
        out = []
        while True:
            piece = reader.read(size)
            if not piece:
                break
            out.append(piece)
        assert "".join(out) == text + "\n", size
    reader = codecs.getreader(name)(io.BytesIO(data))
    assert reader.readlines() == (text + "\n").splitlines(keepends=True)


def test_stream_reader_decodes_the_held_tail_at_the_end() -> None:
    # A high half held to see what follows, with nothing following: at the end of the
    # stream it is decoded (a character in MUTF-8), not dropped.
    reader = codecs.getreader("mutf-8")(io.BytesIO(b"ab\xed\xa0\x80"))
    assert reader.read(2) == "ab"
    assert reader.read() == "\ud800"
    reader = codecs.getreader("cesu-8")(io.BytesIO(b"ab\xe2\x82"), errors="replace")
    assert reader.read() == "ab\ufffd"


def test_codecs_open_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    with codecs.open(str(path), "w", encoding="java-modified-utf-8") as f:
        f.write(SAMPLE)
    assert path.read_bytes() == reference(SAMPLE, "mutf-8")
    with codecs.open(str(path), "r", encoding="mutf-8") as f:
        assert f.read() == SAMPLE
