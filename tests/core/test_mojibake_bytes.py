"""``MojibakeBytesRepairer``: for valid UTF-8 and every chunking, the output is
``repair_mojibake(data.decode()).encode()``; bytes that are not UTF-8 are kept (a line
holding them and mojibake is repaired as its ``surrogateescape`` reading is); the carry is
bounded; a resume from a JSON checkpoint gives the output of one run."""

from __future__ import annotations

import itertools
import random

import pytest
from _helpers import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_mojibake import LOOK_ALIKES, ONCE, SENTENCES, TWICE

from utf8stream.transforms import (
    MojibakeBytesRepairer,
    MojibakeRepairer,
    TransformCheckpoint,
    repair_mojibake,
    repair_mojibake_bytes,
)

# Every test runs with the accelerator and in pure Python (conftest's fixture).
pytestmark = pytest.mark.usefixtures("implementation")

ESCAPE = "surrogateescape"

words = st.sampled_from(
    [w for _, _, baked in ONCE[::5] + TWICE[::23] for w in baked.split(" ")]
    + [w for text in SENTENCES[::3] + LOOK_ALIKES[::2] for w in text.split(" ")]
    + ["é", "Ã", "©", "“", "abc", "\n", "\r\n", "\r", "ÉÉ", "Ã©Ã", "😀"]
)
texts = st.lists(words, max_size=24).map(" ".join)
# Bytes that are not UTF-8, put anywhere: lone bytes above 0x7F (some cut a sequence).
bad_bytes = st.lists(st.tuples(st.integers(0, 500), st.integers(0x80, 0xFF)), max_size=3)


def _oracle(data: bytes, max_carry: int = 256) -> bytes:
    return repair_mojibake(data.decode("utf-8", ESCAPE), max_carry=max_carry).encode(
        "utf-8", ESCAPE
    )


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def _run(pieces: list[bytes], **options: int) -> bytes:
    repairer = MojibakeBytesRepairer(**options)
    out = b"".join(repairer.transform(p) for p in pieces) + repairer.transform(b"", final=True)
    assert repairer.position == sum(map(len, pieces))
    assert repairer.output_position == len(out)
    return out


def _with_bytes(data: bytes, inserted: list[tuple[int, int]]) -> bytes:
    for at, byte in inserted:
        at %= len(data) + 1
        data = data[:at] + bytes([byte]) + data[at:]
    return data


def test_mojibake_bytes_lines_are_repaired_and_others_kept() -> None:
    lines = [baked for _, _, baked in ONCE[:30]] + SENTENCES + LOOK_ALIKES
    text = "\n".join(lines) + "\n"
    repaired = repair_mojibake_bytes(text.encode())
    assert repaired == repair_mojibake(text).encode()
    assert repaired.split(b"\n")[:30] != [line.encode() for line in lines[:30]]
    assert repaired.endswith(("\n".join(SENTENCES + LOOK_ALIKES) + "\n").encode())


@given(texts, st.lists(st.integers(0, 600), max_size=8), st.sampled_from([4, 9, 256]))
@settings(max_examples=examples(120), deadline=None)
def test_mojibake_bytes_any_chunking_is_the_text_repair(
    text: str, cuts: list[int], bound: int
) -> None:
    data = text.encode()
    expected = repair_mojibake(text, max_carry=bound).encode()
    assert repair_mojibake_bytes(data, max_carry=bound) == expected
    assert _run(_pieces(data, cuts), max_carry=bound) == expected
    assert _run(_pieces(data, cuts), max_carry=bound, max_line=3) == expected


@given(texts, st.sampled_from([1, 7, 4096]))
@settings(max_examples=examples(40), deadline=None)
def test_mojibake_bytes_byte_by_byte_is_the_text_repair(text: str, max_line: int) -> None:
    data = text.encode()
    pieces = [data[i : i + 1] for i in range(len(data))]
    assert _run(pieces, max_line=max_line) == repair_mojibake(text).encode()


@given(texts, bad_bytes, st.lists(st.integers(0, 600), max_size=6))
@example("cafÃ©\n", [(3, 0xFF)], [])
@example("cafÃ©\n", [(5, 0xC3)], [5])
@settings(max_examples=examples(120), deadline=None)
def test_mojibake_bytes_keeps_bytes_that_are_not_utf8(
    text: str, inserted: list[tuple[int, int]], cuts: list[int]
) -> None:
    data = _with_bytes(text.encode(), inserted)
    out = _run(_pieces(data, cuts), max_line=5)
    assert out == _oracle(data)
    # Every byte that is not UTF-8 is there, in order.
    bad = [c for c in data.decode("utf-8", ESCAPE) if "\udc80" <= c <= "\udcff"]
    assert [c for c in out.decode("utf-8", ESCAPE) if "\udc80" <= c <= "\udcff"] == bad


def test_mojibake_bytes_line_with_a_bad_byte_is_still_repaired() -> None:
    # The byte 0xFF reads as no letter: the run after it is repaired as it would be at
    # the start of a line, the byte is kept.
    assert repair_mojibake_bytes(b"\xff cafe\xcc \xc3\x83\xc2\xa9t\xc3\x83\xc2\xa9\n") == (
        b"\xff cafe\xcc \xc3\xa9t\xc3\xa9\n"
    )


@given(texts, bad_bytes, st.integers(0, 600), st.sampled_from([2, 64, 4096]))
@settings(max_examples=examples(100), deadline=None)
def test_mojibake_bytes_resumed_from_json_is_one_run(
    text: str, inserted: list[tuple[int, int]], cut: int, max_line: int
) -> None:
    data = _with_bytes(text.encode(), inserted)
    cut %= len(data) + 1
    first = MojibakeBytesRepairer(max_carry=9, max_line=max_line)
    head = first.transform(data[:cut])
    saved = TransformCheckpoint.from_json(first.checkpoint().to_json())
    resumed = MojibakeBytesRepairer.from_checkpoint(saved)
    assert (resumed.max_carry, resumed.max_line) == (9, max_line)
    tail = resumed.transform(data[cut:], final=True)
    assert head + tail == _oracle(data, max_carry=9)
    assert resumed.position == len(data)
    assert resumed.output_position == len(head + tail)


def test_mojibake_bytes_carry_is_bounded() -> None:
    repairer = MojibakeBytesRepairer(max_line=100)
    # A long line without an end: past the bound it goes through the text repairer,
    # which holds at most its own bound.
    piece = "été Привет ÃƒÂ© ".encode()
    out = []
    for _ in range(50):
        out.append(repairer.transform(piece))
        state = repairer.checkpoint()
        assert len(bytes.fromhex(state.state["held"])) <= 100
        assert len(state.parts[0].carry) <= repairer.max_carry
    out.append(repairer.transform(b"\n", final=True))
    assert b"".join(out) == _oracle(piece * 50 + b"\n")


def test_mojibake_bytes_reset_forgets_the_carry() -> None:
    repairer = MojibakeBytesRepairer()
    repairer.transform("cafÃ".encode())
    repairer.reset()
    assert repairer.transform("©\n".encode(), final=True) == "©\n".encode()
    assert repairer.position == 3


@pytest.mark.parametrize(
    "checkpoint",
    [
        TransformCheckpoint("mojibake"),
        TransformCheckpoint("mojibake-bytes"),
        TransformCheckpoint(
            "mojibake-bytes",
            options={"max_line": 2},
            state={"held": "414243", "pending": "", "inside": False},
            parts=(TransformCheckpoint("mojibake"),),
        ),
        TransformCheckpoint(
            "mojibake-bytes",
            state={"held": "", "pending": "c3", "inside": False},
            parts=(TransformCheckpoint("mojibake"),),
        ),
        TransformCheckpoint(
            "mojibake-bytes",
            state={"held": "zz", "pending": "", "inside": False},
            parts=(TransformCheckpoint("mojibake"),),
        ),
    ],
)
def test_mojibake_bytes_bad_checkpoint_is_refused(checkpoint: TransformCheckpoint) -> None:
    with pytest.raises(ValueError):
        MojibakeBytesRepairer.from_checkpoint(checkpoint)


def test_mojibake_bytes_bad_options_are_refused() -> None:
    with pytest.raises(ValueError):
        MojibakeBytesRepairer(max_line=0)
    with pytest.raises(ValueError):
        MojibakeBytesRepairer(max_carry=3)


@pytest.mark.parametrize("chunk", [1, 5, 700, 1 << 20])
def test_mojibake_bytes_lines_far_apart_and_close_together(chunk: int) -> None:
    # Lines to repair next to each other, and with more correct lines between them than
    # the repairer sends to the text repairer with them.
    correct = "\n".join(SENTENCES) + "\n"
    baked = [b for _, _, b in ONCE[:12]]
    text = "".join(f"{baked[i]}\n" + (correct * (i % 3)) for i in range(12)) + baked[0]
    data = text.encode()
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    assert _run(pieces) == repair_mojibake(text).encode()


def test_mojibake_bytes_release_hands_out_what_the_text_repairer_would() -> None:
    for head in ("ok\ncafe x", "ok\ncafÃ© x", "ok\nÃ©"):
        repairer = MojibakeBytesRepairer()
        out = repairer.transform(head.encode()) + repairer.release()
        assert out == MojibakeRepairer().transform(head).encode()
        assert repairer.release() == b""
        rest = repairer.transform(b" more\n", final=True)
        assert out + rest == repair_mojibake(head + " more\n").encode()
        assert repairer.output_position == len(out + rest)


SCRIPTS = ["中文的句子，没有问题。", "مرحبا بالعالم", "שלום עולם", "Привет, мир", "Γειά σου κόσμε"]


def _blocks(seed: int) -> bytes:
    """Blocks of lines, dense with mojibake and look-alikes (longer than a span first
    grows) or sparse (lines to repair far apart), in many scripts, with every line end
    and a few bytes that are not UTF-8."""
    rnd = random.Random(seed)
    correct = SENTENCES + SCRIPTS + ["😀 ok", ""]
    odd = [b for _, _, b in ONCE[::7] + TWICE[::11]] + LOOK_ALIKES
    lines = []
    for _ in range(30):
        share = rnd.choice([0.0, 0.05, 0.3, 0.9])
        for _ in range(rnd.randint(1, 120)):
            lines.append(rnd.choice(odd) if rnd.random() < share else rnd.choice(correct))
    ends = rnd.choices(["\n", "\r\n", "\r"], weights=[8, 1, 1], k=len(lines))
    data = "".join(line + end for line, end in zip(lines, ends, strict=True)).encode()
    return _with_bytes(
        data, [(rnd.randrange(len(data)), rnd.randrange(0x80, 0x100)) for _ in range(4)]
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_mojibake_bytes_dense_and_sparse_blocks_are_the_text_repair(seed: int) -> None:
    data = _blocks(seed)
    expected = _oracle(data)
    assert repair_mojibake_bytes(data) == expected
    rnd = random.Random(seed)
    for size in (700, 4099, 65536):
        assert _run([data[i : i + size] for i in range(0, len(data), size)]) == expected
    cuts = sorted(rnd.randrange(len(data)) for _ in range(40))
    assert _run(_pieces(data, cuts)) == expected
    head = data[: data.index(b"\n", 3000) + 1]
    assert _run([head[i : i + 1] for i in range(len(head))]) == _oracle(head)
