"""``Normalizer`` against ``unicodedata.normalize`` of the whole text, over many chunkings.

The text is made to be hard: long runs of combining marks of every canonical combining
class, Hangul syllables and conjoining jamo, singletons, composition exclusions, starters
that compose with the starter before them, characters whose decomposition starts with a
non-starter, characters that NFKC/NFKD decompose but NFC/NFD keep.  The alphabet is read
from ``unicodedata`` here, by properties, not from the tables of the code under test.
The stream-safe text process has its own oracle below, written from UAX 15 section 13.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from _helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import utf8stream
from utf8stream.accel import use_accelerator
from utf8stream.transforms import (
    Normalizer,
    SegmentTooLongError,
    TextChange,
    TextTransform,
    TransformCheckpoint,
    chain,
    transform_from_checkpoint,
)

FORMS = ("NFC", "NFD", "NFKC", "NFKD")
CGJ = "\u034f"


def _alphabet() -> tuple[list[str], list[str]]:
    """(starters and the like, non-starters): a few of every kind that makes trouble."""
    by_class: dict[int, list[str]] = {}
    singletons, exclusions, compat = [], [], []
    for cp in range(0x3000):
        c = chr(cp)
        ccc = unicodedata.combining(c)
        if ccc:
            by_class.setdefault(ccc, []).append(c)
        d = unicodedata.decomposition(c)
        if not d:
            continue
        if d.startswith("<"):
            compat.append(c)
        elif len(d.split()) == 1:
            singletons.append(c)
        elif unicodedata.normalize("NFC", c) != c:
            exclusions.append(c)
    marks = [chars[0] for chars in by_class.values()] + [chars[-1] for chars in by_class.values()]
    rnd = random.Random(34)
    starters = [
        *"aeouAEOU kx\n",
        *rnd.sample(singletons, 8),
        *rnd.sample(exclusions, 8),
        *rnd.sample(compat, 16),
        # Hangul: leading, vowel and trailing jamo, LV and LVT syllables.
        "\u1100", "\u1112", "\u1161", "\u1175", "\u11a8", "\u11c2", "\uac00", "\uac01",
        "\ud7a3",
        # Starters that compose with the starter before them, and their partners.
        "\u0b47", "\u0b3e", "\u0b57", "\u0cc6", "\u0cc2", "\u0cd5", "\u0dd9", "\u0dcf",
        "\u0dca", "\u1025", "\u102e", "\u09c7", "\u09be",
        # Decompositions that start with a non-starter, NFKC changing a decomposition.
        "\u0f73", "\u0f75", "\u0f81", "\u0344", "\uff9e", "\uff76", "\u1e9b", "\u00a8",
        "\u01d5", "\u1fc1", "\u0f77", "\ufdfa", "\u3300", "\u2460", "\U0001f213",
        "\U0001d15e", "\u212b", "\u2126", "\u1f80", "\u0958", "\u2adc", "\ufb1d",
        CGJ,
    ]  # fmt: skip
    return starters, marks


STARTERS, MARKS = _alphabet()
#: Characters that compose or reorder with their neighbours, to be drawn densely.
CLOSE = [
    *"\u1100\u1112\u1161\u1175\u11a8\u11c2\uac00\uac01",
    *"\u0b47\u0b3e\u0b57\u0cc6\u0cc2\u0cd5\u0cbf\u0dd9\u0dcf\u0dca\u0ddf",
    *"\u1025\u102e\u09c7\u09be\u09d7\u1b05\u1b35\u0f73\u0f71\u0f72\u0f80",
    *"\u0344\uff9e\u3099\u304b\u0301\u0323\u0308\u0345\u0b3c\u1e9b\u017f",
    *"\u00a8ae\u212b",
]


def _nonstarters(c: str) -> tuple[int, int, bool]:
    """Leading and trailing non-starters of ``c``'s NFKD, and whether it has no starter."""
    flags = [unicodedata.combining(x) != 0 for x in unicodedata.normalize("NFKD", c)]
    lead = next((i for i, f in enumerate(flags) if not f), len(flags))
    trail = next((i for i, f in enumerate(reversed(flags)) if not f), len(flags))
    return lead, trail, all(flags)


def stream_safe(text: str) -> tuple[str, list[int]]:
    """UAX 15 section 13, the Stream-Safe Text Process, step by step; also the input
    offsets before which it put a CGJ."""
    out: list[str] = []
    at: list[int] = []
    count = 0  # step 2: nonStarterCount
    for i, c in enumerate(text):  # step 3
        lead, trail, none_starter = _nonstarters(c)  # 3a: the NFKD decomposition S
        if count + lead > 30:  # 3b
            out.append(CGJ)
            at.append(i)
            count = 0
        out.append(c)  # 3c
        count = count + lead if none_starter else trail  # 3d
    return "".join(out), at


def is_stream_safe(text: str) -> bool:
    return stream_safe(text)[0] == text


def _runs(draw: st.DrawFn, longest: int) -> str:
    pieces = [draw(st.text(st.sampled_from(CLOSE), max_size=12))]
    for _ in range(draw(st.integers(0, 5))):
        pieces.append(draw(st.sampled_from(STARTERS)))
        pieces.append("".join(draw(st.lists(st.sampled_from(MARKS), max_size=longest))))
    return "".join(pieces)


@st.composite
def safe_texts(draw: st.DrawFn) -> str:
    """Stream-safe text: runs of up to 30 non-starters (fewer code points may count more)."""
    text = _runs(draw, 30)
    return text if is_stream_safe(text) else stream_safe(text)[0]


@st.composite
def long_texts(draw: st.DrawFn) -> str:
    """Text with runs of non-starters around and past the limit."""
    pieces = [_runs(draw, 8)]
    for _ in range(draw(st.integers(1, 3))):
        mark = draw(st.sampled_from(MARKS))
        pieces.append(draw(st.sampled_from(STARTERS)) + mark * draw(st.integers(25, 70)))
        pieces.append(_runs(draw, 4))
    return "".join(pieces)


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def run(t: TextTransform, pieces: list[str]) -> str:
    out = "".join(t.transform(p) for p in pieces) + t.transform("", final=True)
    return out


cuts = st.lists(st.integers(0, 400), max_size=8)
SETTINGS = settings(max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("form", FORMS)
@given(text=safe_texts(), where=cuts)
@SETTINGS
def test_any_chunking_gives_the_whole_text_normalized(
    form: str, text: str, where: list[int]
) -> None:
    expected = unicodedata.normalize(form, text)  # type: ignore[arg-type]
    assert Normalizer(form).transform(text, final=True) == expected
    assert run(Normalizer(form), _pieces(text, where)) == expected
    one_by_one = Normalizer(form)
    out = []
    for c in text:
        out.append(one_by_one.transform(c))
        assert len(one_by_one.checkpoint().carry) <= 32
    assert "".join(out) + one_by_one.transform("", final=True) == expected
    assert one_by_one.position == len(text)
    assert one_by_one.output_position == len(expected)


@pytest.mark.parametrize("form", FORMS)
@given(text=long_texts(), where=cuts)
@SETTINGS
def test_long_runs_get_the_stream_safe_process(form: str, text: str, where: list[int]) -> None:
    safe, at = stream_safe(text)
    expected = unicodedata.normalize(form, safe)  # type: ignore[arg-type]
    changes: list[TextChange] = []
    t = Normalizer(form, on_change=changes.append)
    out = []
    for piece in _pieces(text, where):
        out.append(t.transform(piece))
        assert len(t.checkpoint().carry) <= 32
    assert "".join(out) + t.transform("", final=True) == expected
    assert t.position == len(text)
    joined = [c for c in changes if c.kind == "stream-safe"]
    assert [c.offset for c in joined] == at
    assert all(c.original == "" and c.replacement == CGJ for c in joined)
    assert all(expected[c.output_offset] == CGJ for c in joined)


@pytest.mark.parametrize("form", FORMS)
@given(text=long_texts(), where=cuts)
@SETTINGS
def test_without_the_process_it_is_exact_up_to_max_carry(
    form: str, text: str, where: list[int]
) -> None:
    expected = unicodedata.normalize(form, text)  # type: ignore[arg-type]
    t = Normalizer(form, stream_safe=False, max_carry=len(text) + 1)
    assert run(t, _pieces(text, where)) == expected


def test_past_max_carry_without_the_process_is_refused() -> None:
    t = Normalizer("NFC", stream_safe=False, max_carry=40)
    assert t.transform("ab" + "\u0301" * 20) == "a"
    with pytest.raises(SegmentTooLongError) as caught:
        t.transform("\u0323" * 20)
    assert isinstance(caught.value, ValueError)
    assert (caught.value.offset, caught.value.length, caught.value.max_carry) == (1, 41, 40)
    assert "max_carry=40" in str(caught.value)
    # The refused call changed nothing: the normalizer goes on with what it had.
    assert t.position == 22
    assert t.transform("c", final=True) == unicodedata.normalize("NFC", "b" + "\u0301" * 20 + "c")


def test_the_options_are_checked() -> None:
    with pytest.raises(ValueError, match="form must be one of"):
        Normalizer("NFX")
    with pytest.raises(ValueError, match="at least 32"):
        Normalizer("NFC", max_carry=31)
    assert Normalizer("NFD", stream_safe=False, max_carry=1).max_carry == 1


def _apply(text: str, changes: list[TextChange]) -> str:
    """``text`` with every change made, from the events alone."""
    out, at = [], 0
    for c in sorted(changes, key=lambda c: (c.offset, c.original != "")):
        out.append(text[at : c.offset])
        out.append(c.replacement)
        at = c.end
    out.append(text[at:])
    return "".join(out)


@pytest.mark.parametrize("form", FORMS)
@given(text=st.one_of(safe_texts(), long_texts()), where=cuts)
@SETTINGS
def test_events_describe_the_changes_whatever_the_chunking(
    form: str, text: str, where: list[int]
) -> None:
    whole: list[TextChange] = []
    expected = Normalizer(form, on_change=whole.append).transform(text, final=True)
    pieces: list[TextChange] = []
    assert run(Normalizer(form, on_change=pieces.append), _pieces(text, where)) == expected
    assert pieces == whole
    assert _apply(text, whole) == expected
    for c in whole:
        assert text[c.offset : c.end] == c.original
        assert expected[c.output_offset : c.output_offset + len(c.replacement)] == c.replacement
        if c.kind == "normalized":
            assert c.original != c.replacement
            assert unicodedata.normalize(form, c.original) == c.replacement  # type: ignore[arg-type]


def test_normalized_text_gives_no_event_and_comes_back_as_it_is() -> None:
    changes: list[TextChange] = []
    text = unicodedata.normalize("NFC", "Příliš žluťoučký kůň úpěl ďábelské ódy. 한국어")
    t = Normalizer("NFC", on_change=changes.append)
    assert t.transform(text, final=True) == text
    assert changes == []


def test_an_event_names_the_segment() -> None:
    changes: list[TextChange] = []
    t = Normalizer("NFC", on_change=changes.append)
    assert t.transform("xe\u0301") == "x"
    assert t.transform("\u0323y", final=True) == "\u1eb9\u0301y"
    assert changes == [TextChange(1, "e\u0301\u0323", "\u1eb9\u0301", 1, "normalized")]


@pytest.mark.parametrize("form", FORMS)
@given(text=st.one_of(safe_texts(), long_texts()))
@settings(SETTINGS, max_examples=examples(15))
def test_a_checkpoint_at_every_cut_resumes_as_one_run(form: str, text: str) -> None:
    whole: list[TextChange] = []
    expected = Normalizer(form, on_change=whole.append).transform(text, final=True)
    for cut in range(len(text) + 1):
        changes: list[TextChange] = []
        first = Normalizer(form, on_change=changes.append)
        head = first.transform(text[:cut])
        saved = TransformCheckpoint.from_json(first.checkpoint().to_json())
        resumed = transform_from_checkpoint(saved, changes.append)
        assert isinstance(resumed, Normalizer)
        assert head + resumed.transform(text[cut:], final=True) == expected
        assert changes == whole
        assert resumed.position == len(text)


def test_a_chain_and_its_checkpoint() -> None:
    text = "e\u0301\u0323" * 3
    t = chain(Normalizer("NFD"), Normalizer("NFC"))
    head = t.transform(text[:4])
    resumed = transform_from_checkpoint(TransformCheckpoint.from_json(t.checkpoint().to_json()))
    assert head + resumed.transform(text[4:], final=True) == unicodedata.normalize("NFC", text)


def test_final_starts_a_new_text_and_reset_starts_over() -> None:
    t = Normalizer("NFC")
    assert t.transform("e", final=True) == "e"
    # After ``final`` nothing before composes with what follows.
    assert t.transform("\u0301", final=True) == "\u0301"
    assert (t.position, t.output_position) == (2, 2)
    t.transform("a")
    t.reset()
    assert (t.position, t.output_position, t.checkpoint().carry) == (0, 0, "")


def test_the_normalizer_is_a_transform() -> None:
    assert isinstance(Normalizer(), TextTransform)
    assert Normalizer().max_carry == 32


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "text",
    [
        "\u1100\u1161\u11a8\u11a8\u1161\u1100\u1161\u0301\u11a8",  # jamo: L V T T V L V . T
        "\uac00\u11a8\uac01\u11a8\u1100\u11a8",  # an LV syllable takes a T, LVT does not
        "\u0cc6\u0cc2\u0cd5\u0cd5\u0cbf\u0cd5\u0cc6\u0cd5",  # three starters compose in a row
        "\u0b47\u0b3e\u0b3e\u0b47\u0b57\u0b47\u0323\u0b3e",  # a mark between blocks them
        "\u0dd9\u0dca\u0dcf\u0dd9\u0dcf\u0dca\u0dd9\u0ddf",
        "\u1025\u102e\u09c7\u09be\u09c7\u09d7\u1b05\u1b35",
        "e\u0301\u0323\u0f73\u0344\u1e9b\u0323\u017f\u0307\u0323\uff76\uff9e\u304b\u3099",
        "\u212b\u0958\u2adc\ufb1d\u0345\u0300\u1f80\u00a8\u0301\u1fc1",
    ],
)
def test_every_split_of_composing_neighbours(form: str, text: str) -> None:
    expected = unicodedata.normalize(form, text)  # type: ignore[arg-type]
    for a, b in itertools.combinations(range(len(text) + 1), 2):
        assert run(Normalizer(form), [text[:a], text[a:b], text[b:]]) == expected, (a, b)


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
def test_the_longest_carry_on_stream_safe_text_is_32(form: str) -> None:
    # U+0DD9 U+0DCF compose into U+0DDC, which U+0DCA still composes with: neither
    # starter can go before the 30 non-starters after them are all in.
    marks = "\u0dca" + "\u0301\u0323" * 14 + "\u0300"
    t = Normalizer(form)
    assert t.transform("a\u0dd9\u0dcf" + marks) == "a"
    assert len(t.checkpoint().carry) == 32
    expected = unicodedata.normalize(form, "\u0dd9\u0dcf" + marks + "b")  # type: ignore[arg-type]
    assert t.transform("b", final=True) == expected
    # One more non-starter: a joiner goes in before it, and the carry stays short.
    t = Normalizer(form)
    assert t.transform("a\u0dd9\u0dcf" + marks + "\u0301") == "a" + unicodedata.normalize(
        form,  # type: ignore[arg-type]
        "\u0dd9\u0dcf" + marks + CGJ,
    )
    assert t.checkpoint().carry == "\u0301"


#: Plain text of each width around what needs work: normalized stretches the accelerator
#: passes over, segments it hands to ``unicodedata``, and enough of them in a row that
#: it gives up on segments; compatibility characters that narrow the text's width.
PLAIN = ["plain text ", "café ", "Ελλάδα ", "中文字 ", "한국어 ", "🙂🙃 ", "x"]
WORK = ["e\u0301", "\u212b", "\ufb01", "\U0001f213", "\u1100\u1161", "\u0323\u0302"]


#: Code points of any plane, each next to marks: blocks neither implementation has met
#: yet, met for the first time in a later piece.
ANYWHERE = st.lists(
    st.tuples(st.sampled_from(MARKS), st.characters(), st.sampled_from(MARKS)).map("".join),
    max_size=6,
).map("".join)


@st.composite
def wide_texts(draw: st.DrawFn) -> str:
    pieces = []
    for _ in range(draw(st.integers(1, 6))):
        pieces.append(draw(st.sampled_from(PLAIN)) * draw(st.integers(0, 40)))
        pieces.append(draw(st.sampled_from(WORK)) * draw(st.integers(0, 80)))
        pieces.append(draw(st.one_of(safe_texts(), long_texts())))
        pieces.append(draw(ANYWHERE))
    return "".join(pieces)


def _run_with(accelerated: bool, form: str, pieces: list[str], **options: object) -> object:
    changes: list[TextChange] = []
    try:
        with use_accelerator(accelerated):
            t = Normalizer(form, on_change=changes.append, **options)  # type: ignore[arg-type]
    except RuntimeError:
        pytest.skip("the C accelerator is not built here (pure-Python install)")
    outs, saved = [], []
    for piece in pieces:
        try:
            outs.append(t.transform(piece))
        except SegmentTooLongError as refused:
            outs.append(repr((refused.offset, refused.length)))
        saved.append(t.checkpoint().to_json())
    outs.append(t.transform("", final=True))
    # The narrowest kind its characters allow, as every str: the sizes tell.
    return outs, [sys.getsizeof(out) for out in outs], changes, saved


@pytest.mark.parametrize("form", FORMS)
@given(
    text=st.one_of(wide_texts(), safe_texts(), long_texts()),
    where=st.lists(st.integers(0, 5000), max_size=8),
    safe=st.booleans(),
    pure_first=st.booleans(),
)
@settings(SETTINGS, max_examples=examples(20))
def test_the_accelerator_and_pure_python_give_the_same(
    form: str, text: str, where: list[int], safe: bool, pure_first: bool
) -> None:
    pieces = _pieces(text, where)
    options = {"stream_safe": safe, "max_carry": 32 if safe else 64}
    # Whichever runs first is the first to meet the blocks of the text.
    pure = _run_with(False, form, pieces, **options) if pure_first else None
    accelerated = _run_with(True, form, pieces, **options)
    assert accelerated == (pure or _run_with(False, form, pieces, **options))
    if safe:
        outs = accelerated[0]  # type: ignore[index]
        expected = unicodedata.normalize(form, stream_safe(text)[0])  # type: ignore[arg-type]
        assert "".join(outs) == expected


@pytest.mark.soak
@pytest.mark.parametrize("form", FORMS)
def test_the_accelerator_passes_what_the_quick_check_passes(form: str) -> None:
    """Every code point, doubled: the accelerator hands the text on as it is (the same
    object) exactly where the quick check of the running CPython lets
    ``unicodedata.normalize`` do so, and the output is the normalization."""
    try:
        with use_accelerator(True):
            t = Normalizer(form, stream_safe=False)
    except RuntimeError:
        pytest.skip("the C accelerator is not built here (pure-Python install)")
    for cp in range(0x110000):
        s = chr(cp) * 2
        out = t.transform(s, final=True)
        expected = unicodedata.normalize(form, s)  # type: ignore[arg-type]
        assert out == expected, hex(cp)
        assert (out is s) == (expected is s), hex(cp)


#: Whole blocks of 256 code points, in every plane that has something: marks,
#: decompositions, composition exclusions, pairs outside the BMP, Hangul, unassigned.
SAMPLE_BLOCKS = (0x0300, 0x0F00, 0x1100, 0xAC00, 0x11100, 0x1D100, 0x2F800, 0x50000, 0xE0100)


def test_every_code_point_of_sample_blocks_cut_next_to_what_it_meets() -> None:
    """Each code point of the sample blocks, after a mark it may reorder or compose with,
    before one, and decomposed and cut inside: the characters the normalizer has to know
    are found wherever they are, not only where the other tests' alphabet looks."""
    sample = [chr(cp) for block in SAMPLE_BLOCKS for cp in range(block, block + 256)]
    kinds = {
        "mark": [c for c in sample if unicodedata.combining(c)],
        "decomposition": [c for c in sample if unicodedata.decomposition(c)],
        "Hangul": [c for c in sample if unicodedata.name(c, "").startswith("HANGUL SYLLABLE")],
        "unassigned": [c for c in sample if unicodedata.category(c) == "Cn"],
    }
    assert all(kinds.values()), {kind: len(chars) for kind, chars in kinds.items()}
    for form in ("NFC", "NFKD"):
        normalizer = Normalizer(form)
        for c in sample:
            decomposed = unicodedata.normalize("NFD", c)
            cuts = [("a\u0345", c), (c, "\u0323")]
            inside = range(1, len(decomposed))
            cuts += [(decomposed[:i], decomposed[i:] + "\u0323") for i in inside]
            for head, tail in cuts:
                normalizer.reset()
                got = normalizer.transform(head) + normalizer.transform(tail, final=True)
                assert got == unicodedata.normalize(form, head + tail), (form, head, tail)


#: Run in a new interpreter, so that no block is known before the text reaches it: for
#: each form and chunking, code points of every 48th block of all planes (a different
#: set each time), in order, each between marks and next to its decomposition.
LATE_BLOCKS = r"""
import json, random, sys, unicodedata
from utf8stream.accel import use_accelerator
from utf8stream.transforms import Normalizer

MARKS = ["\u0301", "\u0323\u0302", "\u0345", "\U0001d165\U0001d16e", "\u0f72\u0f71", "\u3099"]


def text_of(group):
    rnd = random.Random(group)
    out = ["a\u0301"]
    for block in range(group, 0x1100, 48):
        if 0xD8 <= block < 0xE0:
            continue
        for _ in range(4):
            c = chr(block << 8 | rnd.randrange(256))
            mark = rnd.choice(MARKS)
            out.append("a" + mark + c + rnd.choice(MARKS) + unicodedata.normalize("NFD", c) + mark)
    return "".join(out)


def chunks(text, how, rnd):
    sizes = {"one": lambda: 1, "seven": lambda: 7, "random": lambda: rnd.randrange(1, 300)}[how]
    at = 0
    while at < len(text):
        size = sizes()
        yield text[at : at + size]
        at += size


wrong = []
group = 0
for form in ("NFC", "NFD", "NFKC", "NFKD"):
    for how in ("one", "seven", "random"):
        text = text_of(group)
        group += 1
        with use_accelerator(sys.argv[1] == "accelerated"):
            normalizer = Normalizer(form)
        pieces = chunks(text, how, random.Random(group))
        out = "".join(normalizer.transform(piece) for piece in pieces)
        out += normalizer.transform("", final=True)
        expected = unicodedata.normalize(form, text)
        if out != expected:
            at = next((i for i, (x, y) in enumerate(zip(out, expected)) if x != y), len(out))
            around = slice(max(0, at - 5), at + 5)
            wrong.append([form, how, ascii(out[around]), ascii(expected[around])])
print(json.dumps(wrong))
"""


@pytest.mark.parametrize("implementation", ["accelerated", "pure"])
def test_blocks_first_met_late_in_a_new_process(implementation: str) -> None:
    if implementation == "accelerated":
        try:
            with use_accelerator(True):
                pass
        except RuntimeError:
            pytest.skip("the C accelerator is not built here (pure-Python install)")
    package = str(Path(utf8stream.__file__).resolve().parent.parent)
    path = os.pathsep.join([package, os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", LATE_BLOCKS, implementation],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
