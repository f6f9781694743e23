"""The C accelerator's reading of UTF-8 against the Python table, exhaustively.

Unicode Table 3-7 is written once in Python (``core/_bytes.py``).  The C decoder has its
own hand-written version (``sequence_at`` and ``classify`` in ``_speedups.c``); here it
classifies every three-byte buffer (2^24 of them) and every four-byte buffer that starts
with a four-byte lead (5 x 2^24), and each result must be what the Python table says: the
length of the character or of the maximal subpart, a proper prefix cut off by the end of
the buffer, and the unit's kind.  The byte transcoder (``_transcode.c``) has a reading
of its own too (``classify_utf8``): every three-byte buffer and the four-byte ones go
through it and must cut the units CPython cuts and count the kinds the C decoder counts.
"""

from __future__ import annotations

import itertools
import re

import pytest

import utf8stream.core.decoder as decoder_module
from utf8stream import Malformed, Utf8Decoder
from utf8stream.core._accel import ACCEL_KINDS
from utf8stream.core._bytes import UTF8, classify_unit, unit_length
from utf8stream.core.events import MalformedKind
from utf8stream.core.scanner import held_prefix_set
from utf8stream.core.variants import get_variant

pytestmark = pytest.mark.skipif(
    not decoder_module.accelerated(),
    reason="the C accelerator is not built here (pure-Python install)",
)

_CONTINUATION = bytes(1 if 0x80 <= b <= 0xBF else 0 for b in range(256))


def table_view(buf: bytes) -> tuple[int, MalformedKind | None]:
    """What the Python table says of the sequence at ``buf[0]``, ``buf`` being all there is.

    ``(length, None)`` for a character, ``(-length, None)`` for a proper prefix that the
    end of ``buf`` cuts off, ``(length, kind)`` for a malformed unit (a maximal subpart).
    """
    lead = buf[0]
    need = UTF8.seq_len[lead]
    if need == 0:
        return 1, classify_unit(buf, 0, 1, False)
    for i in range(1, need):
        if i == len(buf):
            return -i, None
        lo, hi = (UTF8.second_lo[lead], UTF8.second_hi[lead]) if i == 1 else (0x80, 0xBF)
        if not lo <= buf[i] <= hi:
            return i, classify_unit(buf, 0, i, False)
    return need, None


def encode(view: tuple[int, MalformedKind | None]) -> int:
    """``table_view`` in the C function's one-byte form (``_classify_all``)."""
    length, kind = view
    code = 0 if kind is None else ACCEL_KINDS.index(kind) + 1
    return ((length + 4) & 0x0F) | (code << 4)


def expected(prefix: bytes, width: int) -> bytes:
    """What ``_classify_all(prefix, width)`` must return, built from ``table_view``.

    The table looks at a byte after the second only to ask whether it is a continuation
    byte, so each run of 256 results (the last byte varying) is one of two values spread
    by the continuation mask; ``table_view`` decides both for every earlier prefix.
    """
    rows = []
    free = width - len(prefix) - 1
    for middle in itertools.product(range(256), repeat=free):
        head = prefix + bytes(middle)
        if not head:  # one-byte buffers: every byte its own answer
            rows.append(bytes(encode(table_view(bytes((b,)))) for b in range(256)))
            continue
        values = {}
        for probe, is_cont in ((0x00, 0), (0x80, 1)):
            values[is_cont] = encode(table_view(head + bytes((probe,))))
        if len(head) == 1:  # the last byte is the second: its range depends on the lead
            rows.append(bytes(encode(table_view(head + bytes((b,)))) for b in range(256)))
        else:
            rows.append(_CONTINUATION.translate(bytes((values[0], values[1])) + bytes(254)))
    return b"".join(rows)


def first_difference(got: bytes, want: bytes, prefix: bytes, width: int) -> str:
    i = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
    buf = prefix + i.to_bytes(width - len(prefix), "big")
    return f"{buf.hex(' ')}: C says {got[i]:#04x}, the table {want[i]:#04x}"


@pytest.mark.parametrize("width", [1, 2, 3])
def test_every_short_buffer(width: int) -> None:
    got = decoder_module.accelerator()._classify_all(b"", width)
    want = expected(b"", width)
    assert len(got) == 256**width
    assert got == want, first_difference(got, want, b"", width)


@pytest.mark.parametrize("lead", range(0xF0, 0xF5))
def test_every_four_byte_buffer_after_a_four_byte_lead(lead: int) -> None:
    prefix = bytes((lead,))
    got = decoder_module.accelerator()._classify_all(prefix, 4)
    want = expected(prefix, 4)
    assert got == want, first_difference(got, want, prefix, 4)


def test_the_table_view_itself() -> None:
    # A few rows of Table 3-7, so that a wrong helper cannot hide a wrong C table.
    k = MalformedKind
    assert table_view(b"\xe0\x9f\x80") == (1, k.OVERLONG)
    assert table_view(b"\xe0\xa0\x80") == (3, None)
    assert table_view(b"\xed\xa0\x80") == (1, k.SURROGATE)
    assert table_view(b"\xf4\x90\x80") == (1, k.OUT_OF_RANGE)
    assert table_view(b"\xf0\x90\x80") == (-3, None)
    assert table_view(b"\xf0\x90\x41") == (2, k.INCOMPLETE_SEQUENCE)
    assert table_view(b"\xc1\x80") == (1, k.OVERLONG)
    assert table_view(b"\xf5") == (1, k.OUT_OF_RANGE)
    assert table_view(b"\xe1\x80") == (-2, None)


@pytest.mark.parametrize("shift", range(8))
def test_every_two_and_three_byte_sequence_through_the_decoding_loop(shift: int) -> None:
    # The loop decodes runs of two- and three-byte characters two at a time from one
    # 32- or 64-bit load, with masks of its own: every lead with every pair of
    # continuation bytes, back to back (so that the runs form), at every alignment of
    # the loads, must decode as CPython decodes it.
    cont = range(0x80, 0xC0)
    two = b"".join(bytes((lead, b1)) for lead in range(0xC0, 0xE0) for b1 in cont)
    three = b"".join(
        bytes((lead, b1, b2)) for lead in range(0xE0, 0xF0) for b1 in cont for b2 in cont
    )
    four = b"".join(
        bytes((lead, b1, b2, 0x80)) for lead in range(0xF0, 0xF5) for b1 in cont for b2 in cont
    )
    for data in (two, three, four, two + three + four):
        data = b"a" * shift + data
        assert Utf8Decoder().decode(data, final=True) == data.decode("utf-8", "replace")


@pytest.mark.parametrize("width", [1, 2, 3])
def test_the_decoders_held_prefixes_are_those_of_the_c_decoder(width: int) -> None:
    # A chunk that ends in a proper prefix keeps it for the next call: the Python paths
    # ask core/_bytes.py (``held_prefix_set``), the accelerator its own loop.  The
    # buffers the C decoder reads as one proper prefix cut off by their end (length
    # -width, no kind) must be exactly the ones the Python scanners hold.
    got = decoder_module.accelerator()._classify_all(b"", width)
    code = re.escape(bytes(((-width + 4) & 0x0F,)))
    c_held = {m.start().to_bytes(width, "big") for m in re.finditer(code, got)}
    held = held_prefix_set(get_variant("utf-8"), surrogates_pass=False)
    if width < 3:
        candidates = (i.to_bytes(width, "big") for i in range(256**width))
    else:
        # Only a four-byte lead starts a three-byte proper prefix.
        assert {buf[0] for buf in c_held} == set(range(0xF0, 0xF5))
        candidates = (
            bytes((lead, b1, b2)) for lead in range(0xF0, 0xF5) for b1 in range(256)
            for b2 in range(256)
        )  # fmt: skip
    assert {buf for buf in candidates if buf in held} == c_held
    # Table 3-7 by hand: leads C2..F4; then the second-byte ranges of E0..F4 (E0 A0..BF,
    # ED 80..9F, F0 90..BF, F4 80..8F, the others 80..BF); then F0..F4 only, any third.
    counts = {1: 51, 2: 32 + 12 * 64 + 32 + 2 * 64 + 48 + 3 * 64 + 16, 3: (48 + 3 * 64 + 16) * 64}
    assert len(c_held) == counts[width]


def test_unit_length_is_the_c_decoders_length() -> None:
    # ``_bytes.unit_length`` (what boundaries.py cuts with) against the C loop: every
    # two-byte buffer, every lead and second byte with the third byte at the edges of
    # the continuation range, and the four-byte leads with the same edges.
    def check(buf: bytes, code: int) -> None:
        length = (code & 0x0F) - 4
        assert unit_length(buf, 0) == abs(length), buf.hex(" ")

    accel = decoder_module.accelerator()
    for i, code in enumerate(accel._classify_all(b"", 2)):
        check(i.to_bytes(2, "big"), code)
    edges = (0x00, 0x7F, 0x80, 0xBF, 0xC0)
    for lead in range(256):
        for second in range(256):
            for third in edges:
                buf = bytes((lead, second, third))
                check(buf, accel._classify_all(buf, 3)[0])
    for lead in range(0xF0, 0xF5):
        for second in range(256):
            for third in edges:
                for fourth in edges:
                    buf = bytes((lead, second, third, fourth))
                    check(buf, accel._classify_all(buf, 4)[0])


def _all_buffers(width: int, lead: int | None = None, lasts: bytes = b"") -> bytes:
    """Every ``width``-byte buffer (after ``lead`` if given, the last byte only from
    ``lasts`` if given), each followed by a newline, which no unit takes in."""
    free = [range(256)] * (width - (lead is not None) - bool(lasts))
    if lasts:
        free.append(lasts)  # type: ignore[arg-type]
    count = 1
    for values in free:
        count *= len(values)
    step = width + 1
    out = bytearray(step * count)
    column = 0
    if lead is not None:
        out[0::step] = bytes((lead,)) * count
        column = 1
    repeat = count
    for values in free:
        repeat //= len(values)
        out[column::step] = b"".join(bytes((v,)) * repeat for v in values) * (
            count // (repeat * len(values))
        )
        column += 1
    out[width::step] = b"\n" * count
    return bytes(out)


@pytest.mark.parametrize(
    ("width", "lead", "lasts"),
    [(3, None, b"")]
    + [
        (4, lead, bytes((0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xF0, 0xFF)))
        for lead in range(0xF0, 0xF5)
    ],
)
def test_the_byte_transcoder_reads_every_buffer_as_the_table_does(
    width: int, lead: int | None, lasts: bytes
) -> None:
    """``_transcode.c`` has its own reading of Table 3-7 (``classify_utf8``): every
    three-byte buffer, and every four-byte one after a four-byte lead (its last byte
    from each class a continuation check can tell apart), must cut into the units
    CPython's decoder cuts (one U+FFFD each), and count the kinds the C decoder counts
    (whose reading of the table the tests above check against ``_bytes``)."""
    data = _all_buffers(width, lead, lasts)
    assert (
        data[: width + 1]
        == (bytes((lead,)) if lead is not None else b"")
        + bytes(width - (lead is not None) - bool(lasts))
        + lasts[:1]
        + b"\n"
    )
    transcoder = decoder_module.accelerator().ByteTranscoder(
        "utf-8", "utf-16-le", "replace", None, 0, Malformed, ACCEL_KINDS
    )
    out = transcoder.transcode(data, True)
    assert out == data.decode("utf-8", "replace").encode("utf-16-le")
    reference = Utf8Decoder()
    reference.decode(data, final=True)
    counts = transcoder.drain()[: len(ACCEL_KINDS)]
    assert dict(zip(ACCEL_KINDS, counts, strict=True)) == {
        kind: reference.statistics().malformed.get(kind, 0) for kind in ACCEL_KINDS
    }
