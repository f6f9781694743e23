"""Doubt after commitment: bytes after the decision that the encoding chosen cannot decode,
while one the detector set aside on statistics can, are reported once, at the same
absolute offset however the input is cut; the text decoded stays that of the encoding
chosen."""

from __future__ import annotations

import pytest
from _helpers import CORE, cut_randomly, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream import Malformed
from utf8stream.detect import AutoDecoder, EncodingDoubt, detect
from utf8stream.lines import AutoLineEngine

FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ?\n"
LOOKAHEAD = 256
#: UTF-8 decided on the first bytes (a few multi-byte sequences), then a cp1252 "é".
HEAD = (FRENCH * 4).encode()
LATE_CP1252 = HEAD + b"plain ascii line\n" * 4 + b"caf\xe9 au lait\n" + b"tail\n" * 3
#: The same, but a byte cp1252 leaves undefined: only Latin-1 of the common ones fits.
LATE_UNDEFINED = HEAD + b"x\x81y\n" + b"tail\n" * 3
#: Valid UTF-8 throughout: no doubt.
ALL_VALID = HEAD + ("ça va très bien\n" * 20).encode()
#: Two invalid bytes: one doubt, at the first.
TWICE = LATE_CP1252 + b"encore \xe8 et \xe0\n"

#: Shift_JIS text (cp932 chosen, the superset), then 81 20, which no double-byte encoding
#: of the candidates decodes: of the code pages that decode it all, Latin-1 is the likeliest.
JAPANESE = "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。\n"
LATE_CP932 = (JAPANESE * 3).encode("shift_jis") + b"x\x81\x20 ok\n"

CASES = {
    "late cp932": (LATE_CP932, [(LATE_CP932.index(b"\x81\x20"), "cp932", "iso8859-1")]),
    "late cp1252": (LATE_CP1252, [(LATE_CP1252.index(b"\xe9"), "utf-8", "cp1252")]),
    "late undefined": (LATE_UNDEFINED, [(LATE_UNDEFINED.index(b"\x81"), "utf-8", "iso8859-1")]),
    "all valid": (ALL_VALID, []),
    "twice": (TWICE, [(TWICE.index(b"\xe9"), "utf-8", "cp1252")]),
}


def doubts(chunks: list[bytes], max_lookahead: int = LOOKAHEAD) -> list[tuple[int, str, str]]:
    found: list[EncodingDoubt] = []
    decoder = AutoDecoder(max_lookahead=max_lookahead, on_doubt=found.append)
    for chunk in chunks:
        decoder.decode(chunk)
    decoder.decode(b"", True)
    return [(d.offset, d.chosen, d.candidate) for d in found]


def test_the_head_is_decided_utf8_before_the_late_byte() -> None:
    found = detect(LATE_CP1252, LOOKAHEAD)
    assert found.encoding == "utf-8"
    assert found.looked_at < LATE_CP1252.index(b"\xe9")


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole_and_byte_by_byte_report_the_same_doubt(name: str) -> None:
    data, oracle = CASES[name]
    assert doubts([data]) == oracle
    assert doubts([data[i : i + 1] for i in range(len(data))]) == oracle


@settings(CORE, max_examples=examples(100))
@given(st.sampled_from(sorted(CASES)), st.data())
def test_any_chunking_reports_the_same_doubt(name: str, data: st.DataObject) -> None:
    whole, oracle = CASES[name]
    assert doubts(cut_randomly(data.draw, whole)) == oracle


def test_the_text_stays_that_of_the_encoding_chosen_with_its_malformed_units() -> None:
    events: list[Malformed] = []
    found: list[EncodingDoubt] = []
    decoder = AutoDecoder(on_malformed=events.append, on_doubt=found.append)
    text = decoder.decode(LATE_CP1252, True)
    assert text == LATE_CP1252.decode("utf-8", "replace")
    assert [(e.offset, e.data) for e in events] == [(LATE_CP1252.index(b"\xe9"), b"\xe9")]
    assert found == [EncodingDoubt(LATE_CP1252.index(b"\xe9"), "utf-8", "cp1252")]


def test_an_invalid_byte_at_the_very_end_is_weighed_at_the_end() -> None:
    data = HEAD + b"fin \xe9"
    assert doubts([data]) == [(len(data) - 1, "utf-8", "cp1252")]
    # A truncated UTF-8 sequence at the end: cp1252 reads it as two characters.
    data = HEAD + b"fin \xc3"
    assert doubts([data]) == [(len(data) - 1, "utf-8", "cp1252")]


def test_a_legacy_choice_doubts_too() -> None:
    # cp1252 chosen on statistics; a byte it leaves undefined, which Latin-1 decodes.
    data = (FRENCH * 4).encode("cp1252") + b"\x81\n"
    assert detect(data, LOOKAHEAD).encoding == "cp1252"
    assert doubts([data]) == [(len(data) - 2, "cp1252", "iso8859-1")]


def test_no_doubt_beyond_the_tracking_window() -> None:
    late = HEAD + b"ascii\n" * 100 + b"caf\xe9\n"
    assert doubts([late], max_lookahead=64) == []
    assert doubts([late], max_lookahead=1024) == [(late.index(b"\xe9"), "utf-8", "cp1252")]


def test_no_doubt_after_a_byte_order_mark() -> None:
    data = LATE_CP1252.decode("utf-8", "surrogateescape").encode("utf-8-sig", "surrogateescape")
    assert doubts([data]) == []


def test_the_line_engine_reports_the_same_doubt() -> None:
    found: list[EncodingDoubt] = []
    engine = AutoLineEngine(max_lookahead=LOOKAHEAD, on_doubt=found.append)
    for i in range(0, len(TWICE), 7):
        engine.records(engine.feed(TWICE[i : i + 7]))
    engine.records(engine.finish())
    assert found == [EncodingDoubt(TWICE.index(b"\xe9"), "utf-8", "cp1252")]


def test_offsets_count_from_the_start_offset() -> None:
    found: list[EncodingDoubt] = []
    decoder = AutoDecoder(start_offset=1000, on_doubt=found.append)
    decoder.decode(LATE_CP1252, True)
    assert [d.offset for d in found] == [1000 + LATE_CP1252.index(b"\xe9")]


def test_a_candidate_ruled_out_by_an_invalid_byte_before_is_not_named() -> None:
    # "Ё" in UTF-8 is d0 81, and cp1252 leaves 81 undefined: only Latin-1 fits all.
    data = "Ёлка\n".encode() + HEAD + b"caf\xe9\n"
    assert doubts([data], max_lookahead=1024) == [(data.index(b"\xe9"), "utf-8", "iso8859-1")]
