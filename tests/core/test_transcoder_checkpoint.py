"""Transcoder on ``source="auto"``, and resumed from its checkpoints.

``Transcoder("auto", target)`` decodes what the detector looked at and the rest in the
encoding it chose, once.  A transcoder resumed from ``checkpoint()`` (through JSON) after
any chunk continues exactly: the output equals one uninterrupted run's and the one-shot
round trip ``data.decode(source, errors).encode(target, errors)``; the malformed units of
a UTF-8 source come at the offsets the reference decoder of Table 3-7 gives.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator

import pytest
from _helpers import CORE, HEAVY, cut_randomly, examples, reference_decode
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream import Malformed, Transcoder, Utf8DecodeError, Utf8EncodeError
from utf8stream.detect import NotTextError
from utf8stream.transcoding import CheckpointUnsupported, TranscoderCheckpoint

FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ?\n"
RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю.\n"
JAPANESE = "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。\n"

#: Inputs ``auto`` meets: (bytes, the encoding they are in, the length of their BOM).
SAMPLES = {
    "ascii": (b"GET /index.html 200\n" * 3, "utf-8", 0),
    "utf-8": ((FRENCH * 4).encode(), "utf-8", 0),
    "utf-8 bom": ((FRENCH * 4).encode("utf-8-sig"), "utf-8", 3),
    "utf-8 then malformed": ((FRENCH * 4).encode() + b"ok \xe2\x82 \xff end\n", "utf-8", 0),
    "cp1252": ((FRENCH * 20).encode("cp1252"), "cp1252", 0),
    "koi8-r": ((RUSSIAN * 20).encode("koi8-r"), "koi8-r", 0),
    "shift_jis": ((JAPANESE * 20).encode("shift_jis"), "cp932", 0),
    "iso2022_jp": ((JAPANESE * 10).encode("iso2022_jp"), "iso2022_jp", 0),
    "utf-16-le bom": (codecs.BOM_UTF16_LE + (FRENCH * 3).encode("utf-16-le"), "utf-16-le", 2),
    "utf-16-be": ((FRENCH * 10).encode("utf-16-be"), "utf-16-be", 0),
    "utf-32 bom": (codecs.BOM_UTF32_BE + (RUSSIAN * 2).encode("utf-32-be"), "utf-32-be", 4),
}

#: Sources and targets with state between chunks: lead bytes, shift states, UTF-7's
#: base64 runs, BOMs read or written, a WTF-8 surrogate held, a Big5-HKSCS base letter
#: held for a combining mark.
SOURCES = (
    "utf-8",
    "wtf-8",
    "cesu-8",
    "utf-16",
    "utf-16-be",
    "utf-32",
    "cp1252",
    "shift_jis",
    "iso2022_jp",
    "utf-7",
    "gb18030",
)
#: (Not UTF-7: CPython's incremental UTF-7 encoder closes its base64 run at the end of
#: each call, so its output depends on the chunks, though it decodes to the same text.)
TARGETS = (
    "utf-8",
    "wtf-8",
    "mutf-8",
    "utf-16",
    "utf-8-sig",
    "utf-32-be",
    "cp1252",
    "iso2022_jp",
    "big5hkscs",
)
TEXTS = st.lists(
    st.one_of(
        st.sampled_from("aé€😀\ufeffア日本\r\n\x00Ωж~+"),
        st.sampled_from(["\u00ca\u0304", "\u00ea\u030c"]),  # one Big5-HKSCS code each
        st.characters(codec="utf-8"),
    ),
    max_size=30,
).map("".join)

Make = Callable[[], Transcoder]


def resumed(chunks: list[bytes], make: Make, **options: object) -> bytes:
    """Output of a transcoder saved after every chunk, restored from the JSON of its
    checkpoint, and given the next chunk."""
    transcoder = make()
    out = []
    for chunk in chunks:
        out.append(transcoder.transcode(chunk))
        saved = transcoder.checkpoint()
        restored = TranscoderCheckpoint.from_json(saved.to_json())
        assert restored == saved
        transcoder = Transcoder.from_checkpoint(restored, **options)  # type: ignore[arg-type]
    return b"".join(out) + transcoder.transcode(b"", final=True)


def whole_run(chunks: list[bytes], make: Make | Transcoder) -> bytes:
    transcoder = make if isinstance(make, Transcoder) else make()
    return b"".join(transcoder.transcode(c) for c in chunks) + transcoder.transcode(b"", True)


def ways(draw: st.DrawFn, data: bytes) -> Iterator[list[bytes]]:
    yield [data]
    yield [data[i : i + 1] for i in range(len(data))]
    yield cut_randomly(draw, data)


def round_trip(data: bytes, source: str, target: str, errors: str = "replace") -> bytes:
    return data.decode(source, errors).encode(target, errors)


# -- auto --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_auto_gives_the_text_of_the_encoding_the_input_is_in(name: str) -> None:
    data, encoding, bom = SAMPLES[name]
    expected = round_trip(data[bom:], encoding, "utf-16-be")
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        transcoder = Transcoder("auto", "utf-16-be")
        assert whole_run(chunks, lambda t=transcoder: t) == expected  # type: ignore[misc]
        assert transcoder.source_encoding == encoding
        assert transcoder.detection is not None
        assert transcoder.detection.encoding == encoding
        assert transcoder.detection.bom_length == bom
        assert transcoder.characters == len(data[bom:].decode(encoding, "replace"))


def test_auto_decides_nothing_until_the_detector_does() -> None:
    transcoder = Transcoder("auto", "utf-8")
    assert transcoder.source_encoding is None and transcoder.detection is None
    assert transcoder.transcode(b"plain ascii, so far\n") == b""
    assert transcoder.source_encoding is None
    assert transcoder.transcode(b"", final=True) == b"plain ascii, so far\n"
    assert transcoder.source_encoding == "utf-8"


def test_auto_refuses_what_is_not_text() -> None:
    transcoder = Transcoder("auto", "utf-8")
    with pytest.raises(NotTextError, match="not text"):
        transcoder.transcode(bytes(range(256)) * 4, final=True)


def auto_to_utf8(events: list[Malformed]) -> Make:
    return lambda: Transcoder("auto", "utf-8", on_malformed=events.append)


def test_auto_reports_malformed_units_at_their_offsets_in_the_whole_input() -> None:
    data, _, _ = SAMPLES["utf-8 then malformed"]
    units = [(u.offset, u.data) for u in reference_decode(data).units]
    assert units  # the sample has some
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        events: list[Malformed] = []
        transcoder = Transcoder("auto", "utf-8", on_malformed=events.append)
        whole_run(chunks, transcoder)
        assert [(e.offset, e.data) for e in events] == units
        events.clear()
        resumed(chunks, auto_to_utf8(events), on_malformed=events.append)
        assert [(e.offset, e.data) for e in events] == units


def test_auto_and_a_bom_policy() -> None:
    """The detector reads a BOM (never text); ``add`` writes the target's."""
    data = (FRENCH * 4).encode("utf-8-sig")
    assert Transcoder("auto", "utf-8", bom="keep").transcode(data, True) == data[3:]
    assert Transcoder("auto", "utf-8", bom="detect").transcode(data, True) == data[3:]
    assert Transcoder("auto", "utf-16-be", bom="add").transcode(data, True) == (
        codecs.BOM_UTF16_BE + (FRENCH * 4).encode("utf-16-be")
    )


@settings(HEAVY, max_examples=examples(60))
@given(st.sampled_from(sorted(SAMPLES)), st.sampled_from(TARGETS), st.data())
def test_auto_resumed_after_every_chunk_gives_the_same_bytes(
    name: str, target: str, draw: st.DataObject
) -> None:
    data, encoding, bom = SAMPLES[name]
    expected = round_trip(data[bom:], encoding, target)
    chunks = cut_randomly(draw.draw, data)
    assert whole_run(chunks, lambda: Transcoder("auto", target)) == expected
    assert resumed(chunks, lambda: Transcoder("auto", target)) == expected


def test_a_resumed_auto_transcoder_never_detects_again() -> None:
    data, _, _ = SAMPLES["cp1252"]
    first = Transcoder("auto", "utf-8")
    out = first.transcode(data)
    saved = first.checkpoint()
    assert json.loads(saved.to_json())["auto"]["encoding"] == "cp1252"
    second = Transcoder.from_checkpoint(saved)
    assert second.source_encoding == "cp1252"
    assert second.detection is None  # the decision is kept, not made again
    # Bytes that alone would be detected as UTF-8 stay cp1252.
    assert out + second.transcode("é".encode(), True) == round_trip(data, "cp1252", "utf-8") + (
        "Ã©".encode()
    )


# -- named codecs ------------------------------------------------------------------------


@HEAVY
@given(
    st.sampled_from(SOURCES),
    st.sampled_from(TARGETS),
    TEXTS,
    st.sampled_from(["keep", "strip", "add", "detect"]),
    st.data(),
)
def test_resumed_after_every_chunk_gives_the_bytes_of_one_run(
    source: str, target: str, text: str, bom: str, draw: st.DataObject
) -> None:
    data = text.encode(source, "replace")
    make: Make = lambda: Transcoder(source, target, bom=bom)  # noqa: E731
    for chunks in ways(draw.draw, data):
        uninterrupted = whole_run(chunks, make)
        assert resumed(chunks, make) == uninterrupted, (source, target, bom, chunks)
        if bom == "keep":
            assert uninterrupted == round_trip(data, source, target)


@CORE
@given(
    st.sampled_from(("utf-8", "cesu-8", "cp1252", "shift_jis", "utf-16-le")),
    st.sampled_from(TARGETS),
    st.binary(max_size=30),
    st.data(),
)
def test_any_bytes_resumed_after_every_chunk(
    source: str, target: str, data: bytes, draw: st.DataObject
) -> None:
    expected = round_trip(data, source, target)
    for chunks in ways(draw.draw, data):
        assert resumed(chunks, lambda: Transcoder(source, target)) == expected, chunks


@pytest.mark.parametrize(
    ("source", "target", "text"),
    [
        ("iso2022_jp", "utf-8", JAPANESE + "abc" + JAPANESE),  # the decoder's shift state
        ("utf-8", "iso2022_jp", JAPANESE + "abc" + JAPANESE),  # the encoder's
        ("utf-7", "utf-8", "a+b é😀 ~ 日本\n"),  # a base64 run
        ("utf-8", "utf-16", "héllo"),  # the BOM written once
        ("utf-8", "utf-8-sig", "héllo"),
        ("utf-16", "utf-8", "\ufeffhéllo"),  # the BOM read, byte by byte
        ("utf-32", "utf-8", "\ufeffhéllo"),
        ("gb18030", "big5hkscs", "\u00ca\u0304x\u00ca\u030c\u00ca"),  # a base letter held
    ],
    ids=lambda value: value if value.isascii() and len(value) < 12 else "text",
)
def test_state_between_bytes_survives_a_checkpoint(source: str, target: str, text: str) -> None:
    data = text.encode(source)
    chunks = [data[i : i + 1] for i in range(len(data))]
    assert resumed(chunks, lambda: Transcoder(source, target)) == round_trip(data, source, target)


def test_utf7_output_is_that_of_one_run() -> None:
    text = "a+b é😀 ~ 日本\n"
    data = text.encode()
    chunks = [data[i : i + 1] for i in range(len(data))]
    out = resumed(chunks, lambda: Transcoder("utf-8", "utf-7"))
    assert out == whole_run(chunks, lambda: Transcoder("utf-8", "utf-7"))
    assert out.decode("utf-7") == text


def test_a_held_surrogate_of_the_wtf8_encoder_survives_a_checkpoint() -> None:
    # With surrogatepass, ED A0 BD and ED B8 80 decode as two halves; the WTF-8 encoder
    # joins them into one 4-byte sequence even when a checkpoint comes between.
    data = b"a\xed\xa0\xbd\xed\xb8\x80b"
    expected = "a😀b".encode()
    assert round_trip(data, "utf-8", "wtf-8", "surrogatepass") == expected
    for cut in range(len(data) + 1):
        first = Transcoder("utf-8", "wtf-8", errors="surrogatepass")
        out = first.transcode(data[:cut])
        second = Transcoder.from_checkpoint(
            TranscoderCheckpoint.from_json(first.checkpoint().to_json())
        )
        assert out + second.transcode(data[cut:], True) == expected, cut


def test_bom_detect_resumed_while_the_bom_is_still_unknown() -> None:
    data = codecs.BOM_UTF32_LE + "AB".encode("utf-32-le")
    for cut in range(5):
        first = Transcoder("latin-1", "utf-8", bom="detect")
        out = first.transcode(data[:cut])
        saved = first.checkpoint()
        assert saved.sniffing == (cut < 4)
        second = Transcoder.from_checkpoint(saved)
        assert second.source_encoding == (None if cut < 4 else "utf-32-le")
        assert out + second.transcode(data[cut:], True) == b"AB"


def test_a_strict_decoding_error_loses_nothing_across_a_checkpoint() -> None:
    first = Transcoder("utf-8", "utf-16-be", errors="strict")
    out = first.transcode(b"ok")
    with pytest.raises(Utf8DecodeError):
        first.transcode(b" then \xff fine")
    second = Transcoder.from_checkpoint(first.checkpoint())
    assert second.partial_output == " then ".encode("utf-16-be")
    out += second.transcode(b"", final=True)
    assert out == "ok then  fine".encode("utf-16-be")


def test_an_encoding_error_after_a_checkpoint_has_the_offset_of_one_run() -> None:
    # A lone surrogate from WTF-8 cannot be written in UTF-8: the error's offset counts
    # every code point given to the encoder, before the checkpoint too.
    head, tail = "héllo ".encode(), b"x\xed\xa0\xbd"
    first = Transcoder("wtf-8", "utf-8", errors="strict")
    first.transcode(head)
    second = Transcoder.from_checkpoint(first.checkpoint())
    with pytest.raises(Utf8EncodeError) as info:
        second.transcode(tail, final=True)
    assert info.value.offset == len("héllo x")
    assert second.characters == len("héllo x\ud83d")


# -- the record ---------------------------------------------------------------------------


def test_the_checkpoint_is_frozen_and_plain_json() -> None:
    transcoder = Transcoder("shift_jis", "utf-16")
    transcoder.transcode("日本".encode("shift_jis")[:3])
    saved = transcoder.checkpoint()
    with pytest.raises(AttributeError):
        saved.held = b""  # type: ignore[misc]
    raw = json.loads(saved.to_json())
    assert raw["version"] == 1
    assert raw["decoding"] == "shift_jis"
    assert bytes.fromhex(raw["held"]) == "日本".encode("shift_jis")[2:3]
    assert raw["encoder_state"] == 0  # the UTF-16 BOM is written: no BOM pending


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda raw: raw.pop("version"), "transcoder checkpoint"),
        (lambda raw: raw.update(version=2), "transcoder checkpoint"),
        (lambda raw: raw.update(extra=1), r"unknown checkpoint fields: \['extra'\]"),
        (lambda raw: raw.pop("target"), r"missing checkpoint fields: \['target'\]"),
        (lambda raw: raw.update(held="zz"), "'held' must be hex digits"),
        (lambda raw: raw.update(flag=-1), "'flag' must be a non-negative integer"),
        (lambda raw: raw.update(characters="3"), "'characters' must be a non-negative"),
        (lambda raw: raw.update(sniffing=1), "'sniffing' must be true or false"),
        (lambda raw: raw.update(encoder_state=[]), "'encoder_state' must be an integer"),
        (lambda raw: raw.update(utf8=[]), "'utf8' must be an object"),
    ],
)
def test_from_json_refuses_what_is_not_a_checkpoint(
    change: Callable[[dict[str, object]], object], message: str
) -> None:
    raw = json.loads(Transcoder("cp1252", "utf-8").checkpoint().to_json())
    change(raw)
    with pytest.raises(ValueError, match=message):
        TranscoderCheckpoint.from_json(json.dumps(raw))
    with pytest.raises(ValueError, match="transcoder checkpoint"):
        TranscoderCheckpoint.from_json("[]")


def _utf8_part() -> object:
    return Transcoder("utf-8", "utf-8").checkpoint().utf8


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"decoding": "utf-8"}, "UTF-8 decoder checkpoint goes with"),
        ({"decoding": "no-such-codec"}, "not a codec's own name"),
        ({"decoding": "latin1"}, "not a codec's own name"),
        ({"decoding": "auto"}, "decoding 'auto' from source 'cp1252'"),
        ({"sniffing": True}, "looking for a BOM"),
        ({"utf8": "utf-8 part"}, "UTF-8 decoder checkpoint goes with"),
    ],
)
def test_from_checkpoint_refuses_parts_that_do_not_fit(
    fields: dict[str, object], message: str
) -> None:
    import dataclasses

    if fields.get("utf8") == "utf-8 part":
        fields = {"utf8": _utf8_part()}
    good = Transcoder("cp1252", "utf-8").checkpoint()
    with pytest.raises(ValueError, match=message):
        Transcoder.from_checkpoint(dataclasses.replace(good, **fields))  # type: ignore[arg-type]


def test_a_utf8_part_with_other_errors_does_not_fit() -> None:
    import dataclasses

    good = Transcoder("utf-8", "utf-16").checkpoint()
    strict = Transcoder("utf-8", "utf-16", errors="strict").checkpoint()
    with pytest.raises(ValueError, match="errors 'strict' are not 'replace'"):
        Transcoder.from_checkpoint(dataclasses.replace(good, utf8=strict.utf8))


# -- what cannot be checkpointed ---------------------------------------------------------------


@pytest.mark.parametrize(("source", "target"), [("punycode", "utf-8"), ("utf-8", "punycode")])
def test_punycode_cannot_be_checkpointed(source: str, target: str) -> None:
    transcoder = Transcoder(source, target)
    with pytest.raises(CheckpointUnsupported, match="punycode codec decodes and encodes each"):
        transcoder.checkpoint()
    assert issubclass(CheckpointUnsupported, ValueError)


class _Stateless(codecs.IncrementalDecoder):
    def decode(self, input: bytes, final: bool = False) -> str:  # noqa: A002
        return bytes(input).decode("latin-1")


class _StatelessEncoder(codecs.IncrementalEncoder):
    def encode(self, input: str, final: bool = False) -> bytes:  # noqa: A002
        return input.encode("latin-1")


def _search(name: str) -> codecs.CodecInfo | None:
    if name != "test_plain_state":
        return None
    latin = codecs.lookup("latin-1")
    return codecs.CodecInfo(
        latin.encode,
        latin.decode,
        name="test_plain_state",
        incrementaldecoder=_Stateless,
        incrementalencoder=_StatelessEncoder,
    )


def test_a_codec_registered_without_getstate_cannot_be_checkpointed() -> None:
    codecs.register(_search)
    try:
        transcoder = Transcoder("test_plain_state", "utf-8")
        assert transcoder.transcode(b"caf\xe9", True) == "café".encode()
        with pytest.raises(CheckpointUnsupported, match="do not report their state"):
            transcoder.checkpoint()
    finally:
        codecs.unregister(_search)
