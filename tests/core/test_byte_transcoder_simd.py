"""The AVX2 kernels of the byte transcoder (``_transcode.c``): UTF-16 to UTF-8 sixteen
code units a block (ASCII, or ASCII and two-byte characters), and the repair's UTF-8
validation, 32 bytes a block.

Each kernel takes only clean blocks and leaves everything else to the scalar loops that
decide the malformed units, so the output, events, counts, held bytes and positions must
be those of the pure-Python twin whichever kernels run.  Every malformed unit (and every
character of another length) is put at every position of the blocks and run through
three transcoders: the accelerator's (AVX2 where the CPU has it), one from a module
object made with ``UTF8STREAM_NO_AVX2=1`` (SSE2 and scalar loops, in the same process),
and the pure-Python twin; they must agree step by step, and with the str path
(``str_path``: CPython's codecs, ``Utf8Decoder`` and ``bytes.decode``).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from _extension import HAS_AVX2, module_with
from test_byte_transcoder import run, str_path

from utf8stream import Malformed
from utf8stream.core import _accel, _native
from utf8stream.core._accel import ACCEL_KINDS

speedups: Any = _accel.accelerator()
pytestmark = pytest.mark.skipif(
    speedups is None, reason="the C accelerator is not built here (pure-Python install)"
)

if speedups is not None:
    KINDS: list[Any] = [
        _native.ByteTranscoder,
        speedups.ByteTranscoder,
        module_with("1").ByteTranscoder,
    ]


def agree(source: str, target: str, errors: str, data: bytes, cut: int | None) -> None:
    """The three transcoders agree on every step (in one call, or two cut at ``cut``),
    and their output and events are the str path's."""
    chunks = [data] if cut is None else [data[:cut], data[cut:]]
    runs = [run(kind, source, target, errors, chunks, True, into=False) for kind in KINDS]
    runs.append(run(speedups.ByteTranscoder, source, target, errors, chunks, True, into=True))
    for other in runs[1:]:
        assert other == runs[0], (data, cut)
    steps, seen, drained = runs[0]
    expected, expected_events = str_path(
        data, source, target, "ignore" if errors == "strict" else errors
    )
    assert b"".join(out for out, *_ in steps) == expected, (data, cut)
    assert seen == expected_events
    assert drained[-1] == len(expected.decode(target))


def test_the_kernels_are_the_modules_choice() -> None:
    args = ("utf-16-le", "utf-8", "replace", None, 0, Malformed, ACCEL_KINDS)
    assert speedups.ByteTranscoder(*args)._avx2 == (speedups.simd == "avx2")
    assert speedups.simd == "avx2" or not HAS_AVX2 or speedups.simd == "sse2"
    assert KINDS[2](*args)._avx2 == 0


# -- UTF-16 to UTF-8 ----------------------------------------------------------------------

#: Three blocks of 16 code units: ASCII only, ASCII with two-byte characters,
#: two-byte characters only (the kernel's first two cases), characters of one, two and
#: three bytes, three-byte characters only (its third).
UTF16_BASES = [
    "plain ASCII text, three blocks of it: 48 units long!",
    "Größe ändern: ça va? Привет, мир! Ωμέγα ok ÿ߿",
    "éèêëàâäôöùûüçñßøåæœЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯабвг",
    "日本語 text, €5 and ½ ok; 한국어 and Ωμέγα, ࠀ￿\ufffd end",
    "日本語のテキストと中文文本和한국어텍스트ꀀ가힣豈ﬀ\ue000\ud7ff",
]
UTF16_IDS = ["ascii", "mixed", "two-byte", "three-byte", "cjk"]
#: Put at each position: a lone low surrogate, a lone high one, a pair, a high one
#: before a lone low one, characters of three bytes, the edges of one and two bytes.
UTF16_SPECIALS = [
    [0xDC00],
    [0xDFFF],
    [0xD800],
    [0xD83D, 0xDE00],
    [0xDBFF, 0xDFFF],
    [0xD83D, 0xD83D, 0xDE00],
    [0x800],
    [0xFFFF],
    [0xD7FF],
    [0xE000],
    [0x7FF],
    [0x80],
    [0x7F],
    [0x00],
]


def utf16(units: list[int], big: bool) -> bytes:
    return b"".join(u.to_bytes(2, "big" if big else "little") for u in units)


@pytest.mark.parametrize("big", [False, True], ids=["le", "be"])
@pytest.mark.parametrize("base", UTF16_BASES, ids=UTF16_IDS)
def test_utf16_every_unit_at_every_position_of_a_block(base: str, big: bool) -> None:
    source = "utf-16-be" if big else "utf-16-le"
    units = [ord(c) for c in (base * 2)[:48]]
    assert len(units) == 48 and not any(0xD800 <= u < 0xE000 for u in units)
    agree(source, "utf-8", "replace", utf16(units, big), None)
    for special in UTF16_SPECIALS:
        for position in range(48):
            changed = units[:position] + special + units[position + len(special) :]
            data = utf16(changed, big)
            agree(source, "utf-8", "replace", data, None)
            # cut in the middle of the unit, or before it (a high half held)
            agree(source, "utf-8", "ignore", data, 2 * position + 1)
            if special[0] >= 0xD800:
                agree(source, "utf-8", "strict", data, 2 * position + 2)


@pytest.mark.parametrize("big", [False, True], ids=["le", "be"])
def test_utf16_a_block_cut_short_by_the_end(big: bool) -> None:
    """Input of every length around a block, an odd byte or a high half at its end."""
    source = "utf-16-be" if big else "utf-16-le"
    for base in UTF16_BASES[1::2]:
        units = [ord(c) for c in base * 2]
        for length in range(0, 70):
            data = utf16(units[:length], big)
            for tail in (b"", b"A", utf16([0xD83D], big), utf16([0xD83D], big) + b"\x00"):
                agree(source, "utf-8", "replace", data + tail, None)
                agree(source, "utf-8", "strict", data + tail, len(data))


# -- the repair ---------------------------------------------------------------------------

#: Well-formed text of every sequence length, long enough for three blocks.
UTF8_BASES = [
    (b"plain ASCII text that fills three blocks of 32 bytes each, and more " * 2)[:100],
    "Größe ändern, €uro 😀 and 日本語, Ωμέγα ok; Привет ߿ ࠀ \U0010ffff the end! okay".encode(),
]
#: Inserted at each byte position (inside a character too): every kind of malformed
#: unit, proper prefixes, and the edges of Table 3-7.
UTF8_INSERTS = [
    b"\x80",
    b"\xbf\xbf",
    b"\xc0\xaf",
    b"\xc1\xbf",
    b"\xc2",
    b"\xe0\x9f\x80",
    b"\xe0\xa0",
    b"\xed\xa0\x80",
    b"\xed\x9f",
    b"\xf0\x8f\xbf\xbf",
    b"\xf0\x9f\x98",
    b"\xf4\x90\x80\x80",
    b"\xf4\x8f",
    b"\xf5\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\xff",
    b"\xfe\xfe",
    b"\xc2\x80",  # well-formed edges: nothing to replace when put between characters
    b"\xef\xbf\xbf",
    b"\xf4\x8f\xbf\xbf",
]


@pytest.mark.parametrize("base", UTF8_BASES, ids=["ascii", "mixed"])
def test_repair_every_unit_at_every_position_of_a_block(base: bytes) -> None:
    assert len(base) >= 96
    agree("utf-8", "utf-8", "replace", base, None)
    for insert in UTF8_INSERTS:
        for position in range(97):
            data = base[:position] + insert + base[position:]
            agree("utf-8", "utf-8", "replace", data, None)
            agree("utf-8", "utf-8", "ignore", data, position + 1)
    for insert in UTF8_INSERTS[::3]:
        for position in range(0, 97, 5):
            data = base[:position] + insert + base[position:]
            agree("utf-8", "utf-8", "strict", data, position + len(insert))


def test_repair_a_sequence_cut_by_the_end_of_a_block_or_chunk() -> None:
    """A sequence of each length ending, or cut, at each of the last bytes of a block:
    the kernel must leave a cut one to the scalar loop (held, or malformed if ASCII
    follows)."""
    for seq in ("é", "€", "😀"):
        raw = seq.encode()
        for length in range(28, 70):
            for keep in range(1, len(raw) + 1):
                head = b"a" * (length - keep) + raw[:keep]
                for tail in (b"", b"x" * 40, "é".encode() * 20):
                    data = head + tail
                    agree("utf-8", "utf-8", "replace", data, None)
                    agree("utf-8", "utf-8", "replace", data, len(head))


def test_long_corrupted_text_in_random_chunks() -> None:
    """Long text with damage everywhere, in random chunks, all three paths agree."""
    rng = random.Random(16)
    text = "".join(
        rng.choice(["ASCII words and more words. ", "é", "Ж", "€", "😀", "日本", "\x7f"])
        for _ in range(3000)
    )
    raw = bytearray(text.encode())
    for _ in range(len(raw) // 300):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    data = bytes(raw)
    wide = text.encode("utf-16-le")
    wide = b"".join(
        (wide[k : k + 40] + (b"\x00\xdc" if rng.random() < 0.2 else b""))
        for k in range(0, len(wide), 40)
    )
    for source, sample in (("utf-8", data), ("utf-16-le", wide)):
        cuts = sorted(rng.sample(range(len(sample)), 25))
        pieces = [sample[a:b] for a, b in zip([0, *cuts], [*cuts, len(sample)], strict=True)]
        for errors in ("replace", "ignore", "strict"):
            runs = [run(kind, source, "utf-8", errors, pieces, True) for kind in KINDS]
            assert runs[1] == runs[0]
            assert runs[2] == runs[0]
        expected, events = str_path(sample, source, "utf-8", "replace")
        steps, seen, _ = run(speedups.ByteTranscoder, source, "utf-8", "replace", pieces, True)
        assert b"".join(out for out, *_ in steps) == expected
        assert seen == events
