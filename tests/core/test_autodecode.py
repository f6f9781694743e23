"""``encoding="auto"`` in the core: ``AutoDecoder`` replays what the detector looked at into
the decoder it chose, so that the text and the malformed units' offsets are those of
decoding the whole input in the encoding detected on it, however the input is cut; binary
input is refused; a checkpoint carries the choice."""

from __future__ import annotations

import pytest
from _helpers import CORE, cut_randomly, examples, reference_decode, run_engine
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream import Malformed
from utf8stream.core.autolines import auto_line_decoder
from utf8stream.detect import AutoCheckpoint, AutoDecoder, NotTextError, detect
from utf8stream.lines import AutoLineEngine, ByteLine, LineEngine, line_decoder

FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ?\n"
RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю.\n"
JAPANESE = "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。\n"

#: Inputs in the encodings users meet, with and without a byte-order mark.
SAMPLES = {
    "ascii": b"GET /index.html 200\n" * 3,
    "utf-8": (FRENCH * 4).encode(),
    "utf-8 bom": (FRENCH * 4).encode("utf-8-sig"),
    "utf-8 then malformed": (FRENCH * 4).encode() + b"ok \xe2\x82 \xff end\n",
    "cp1252": (FRENCH * 20).encode("cp1252"),
    "cp1251": (RUSSIAN * 20).encode("cp1251"),
    "koi8-r": (RUSSIAN * 20).encode("koi8-r"),
    "shift_jis": (JAPANESE * 20).encode("shift_jis"),
    "utf-16 bom": (FRENCH * 3).encode("utf-16"),
    "utf-16-be": (FRENCH * 10).encode("utf-16-be"),
    "utf-32 bom": (RUSSIAN * 2).encode("utf-32"),
    "cp1252 with an undefined byte": (FRENCH * 20).encode("cp1252") + b"\x81\n",
}
#: A lookahead short enough that the bytes after it are not looked at.
LOOKAHEAD = 256


def expected(data: bytes) -> tuple[str, list[tuple[int, bytes]]]:
    """The oracle: the whole input decoded in the encoding detected on it (a UTF-8
    decode by the reference of Table 3-7, with offsets from the start of the input)."""
    found = detect(data, LOOKAHEAD)
    assert found.encoding is not None
    rest = data[found.bom_length :]
    if found.encoding == "utf-8":
        reference = reference_decode(rest, start_offset=found.bom_length)
        return reference.render(), [(u.offset, u.data) for u in reference.units]
    return rest.decode(found.encoding, "replace"), []


def run(chunks: list[bytes]) -> tuple[str, list[tuple[int, bytes]]]:
    events: list[Malformed] = []
    decoder = AutoDecoder(on_malformed=events.append, max_lookahead=LOOKAHEAD)
    text = "".join(decoder.decode(chunk) for chunk in chunks) + decoder.decode(b"", True)
    assert decoder.statistics().bytes_fed == sum(map(len, chunks))
    return text, [(e.offset, e.data) for e in events]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_whole_and_byte_by_byte_give_the_text_of_the_encoding_detected(name: str) -> None:
    data = SAMPLES[name]
    oracle = expected(data)
    assert run([data]) == oracle
    assert run([data[i : i + 1] for i in range(len(data))]) == oracle


@settings(CORE, max_examples=examples(150))
@given(st.sampled_from(sorted(SAMPLES)), st.data())
def test_any_chunking_gives_the_text_of_the_encoding_detected(
    name: str, data: st.DataObject
) -> None:
    whole = SAMPLES[name]
    assert run(cut_randomly(data.draw, whole)) == expected(whole)


def test_the_malformed_units_after_the_lookahead_have_absolute_offsets() -> None:
    data = SAMPLES["utf-8 then malformed"]
    _, units = run([data])
    head = len((FRENCH * 4).encode())
    assert units == [(head + 3, b"\xe2\x82"), (head + 6, b"\xff")]


def test_the_encoding_and_the_detection_are_known_once_decided() -> None:
    decoder = AutoDecoder(max_lookahead=LOOKAHEAD)
    data = SAMPLES["cp1251"]
    assert decoder.decode(data[:10]) == ""
    assert decoder.encoding is None
    decoder.decode(data[10:], True)
    assert decoder.encoding == "cp1251"
    assert decoder.detection is not None and decoder.detection.looked_at <= LOOKAHEAD


def test_binary_input_is_refused_and_nothing_of_it_decoded() -> None:
    data = bytes(range(256)) * 4
    decoder = AutoDecoder()
    with pytest.raises(NotTextError, match="not text") as caught:
        decoder.decode(data, True)
    assert isinstance(caught.value, ValueError)
    assert caught.value.detection.encoding is None


def test_a_stateful_encoding_is_refused_where_lines_are_cut() -> None:
    data = "日本語のテキスト\n".encode("iso2022_jp") * 20
    found = detect(data)
    assert found.encoding == "iso2022_jp"
    with pytest.raises(ValueError, match="lines cannot be cut"):
        auto_line_decoder(found)
    # Decoded whole (not cut in lines), it is text like any other.
    decoder = AutoDecoder()
    assert decoder.decode(data, True) == data.decode("iso2022_jp")


@settings(CORE, max_examples=examples(100))
@given(st.sampled_from(sorted(SAMPLES)), st.data())
def test_a_checkpoint_resumes_with_the_same_text(name: str, data: st.DataObject) -> None:
    whole = SAMPLES[name]
    oracle_text, _ = expected(whole)
    cut = data.draw(st.integers(0, len(whole)))
    first = AutoDecoder(max_lookahead=LOOKAHEAD)
    text = first.decode(whole[:cut])
    checkpoint = first.checkpoint()
    second = AutoDecoder.from_checkpoint(checkpoint)
    assert second.encoding == checkpoint.encoding
    text += second.decode(whole[cut:], True)
    assert text == oracle_text


def test_a_decoder_resumed_after_the_choice_never_detects_again() -> None:
    first = AutoDecoder(max_lookahead=LOOKAHEAD)
    first.decode(SAMPLES["cp1252"])
    checkpoint = first.checkpoint()
    assert checkpoint.encoding == "cp1252"
    resumed = AutoDecoder.from_checkpoint(checkpoint)
    # Bytes that alone would be detected as UTF-8 stay cp1252.
    assert resumed.decode("é\n".encode(), True) == "Ã©\n"
    assert resumed.detection is None
    assert isinstance(checkpoint, AutoCheckpoint)


def test_a_utf8_checkpoint_keeps_a_held_sequence_and_the_offsets() -> None:
    data = SAMPLES["utf-8 then malformed"]
    events: list[Malformed] = []
    first = AutoDecoder(on_malformed=events.append, max_lookahead=LOOKAHEAD)
    cut = len(data) - 9  # inside the truncated sequence ``e2 82``
    text = first.decode(data[:cut])
    second = AutoDecoder.from_checkpoint(first.checkpoint(), on_malformed=events.append)
    text += second.decode(data[cut:], True)
    oracle_text, oracle_units = expected(data)
    assert text == oracle_text
    assert [(e.offset, e.data) for e in events] == oracle_units


def expected_lines(data: bytes, **options: object) -> list[tuple[int, int, str]]:
    """The oracle for lines: a line engine in the encoding detected on the whole input,
    fed it whole after the byte-order mark."""
    found = detect(data, LOOKAHEAD)
    assert found.encoding is not None
    bom = found.bom_length
    engine = LineEngine(line_decoder(found.encoding, start_offset=bom), offset=bom, **options)
    return [(r.offset, r.end, r.text) for r in run_engine(engine, data[bom:], [])]


def auto_lines(chunks: list[bytes], **options: object) -> list[tuple[int, int, str]]:
    engine = AutoLineEngine(max_lookahead=LOOKAHEAD, **options)
    records: list[ByteLine] = []
    for chunk in chunks:
        records += engine.records(engine.feed(chunk))
    records += engine.records(engine.finish())
    return [(r.offset, r.end, r.text) for r in records]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_lines_whole_and_byte_by_byte_are_those_of_the_encoding_detected(name: str) -> None:
    data = SAMPLES[name]
    oracle = expected_lines(data)
    assert len(oracle) > 1
    assert auto_lines([data]) == oracle
    assert auto_lines([data[i : i + 1] for i in range(len(data))]) == oracle


@settings(CORE, max_examples=examples(150))
@given(st.sampled_from(sorted(SAMPLES)), st.booleans(), st.data())
def test_lines_of_any_chunking_are_those_of_the_encoding_detected(
    name: str, keepends: bool, data: st.DataObject
) -> None:
    whole = SAMPLES[name]
    chunks = cut_randomly(data.draw, whole)
    assert auto_lines(chunks, keepends=keepends) == expected_lines(whole, keepends=keepends)


def test_the_line_engine_refuses_binary_and_iso2022_jp() -> None:
    with pytest.raises(NotTextError):
        auto_lines([bytes(range(256)) * 4])
    with pytest.raises(ValueError, match=r"iso2022_jp.*lines cannot be cut"):
        auto_lines(["日本語\n".encode("iso2022_jp") * 20])


def test_the_lookahead_default_is_the_detectors() -> None:
    from utf8stream.core import autodecode
    from utf8stream.detect import DEFAULT_MAX_LOOKAHEAD

    assert autodecode.DEFAULT_MAX_LOOKAHEAD == DEFAULT_MAX_LOOKAHEAD


@settings(CORE, max_examples=examples(100))
@given(st.sampled_from(sorted(SAMPLES)), st.data())
def test_a_checkpoint_survives_json_and_resumes_with_the_same_text(
    name: str, data: st.DataObject
) -> None:
    whole = SAMPLES[name]
    oracle_text, _ = expected(whole)
    cut = data.draw(st.integers(0, len(whole)))
    first = AutoDecoder(max_lookahead=LOOKAHEAD)
    text = first.decode(whole[:cut])
    checkpoint = first.checkpoint()
    restored = AutoCheckpoint.from_json(checkpoint.to_json())
    assert restored == checkpoint
    text += AutoDecoder.from_checkpoint(restored).decode(whole[cut:], True)
    assert text == oracle_text


def test_a_checkpoint_from_json_refuses_what_is_not_one() -> None:
    with pytest.raises(ValueError, match="auto-decoder checkpoint"):
        AutoCheckpoint.from_json('{"encoding": null}')
    good = AutoDecoder().checkpoint().to_json()
    with pytest.raises(ValueError, match=r"unknown checkpoint fields: \['extra'\]"):
        AutoCheckpoint.from_json(good.replace('"version"', '"extra": 1, "version"'))
