"""Differential fuzzing: the C accelerator and the pure-Python decoder, side by side.

Hypothesis drives two decoders, one of each implementation (``use_accelerator``), with the
same random script: bytes from the fragment alphabet of ``_helpers`` cut at random,
``mark_gap()`` at random points, checkpoints taken mid-stream and restored into the
*other* implementation (through JSON), and callbacks that record, raise, replace
themselves or try to drive their own decoder.  After every step the two must agree on
the text (or the exception), the events, the statistics, the position and the state;
over the whole script the text must be ``bytes.decode(data, errors)`` wherever that
oracle applies (no gap: a gap is not in the bytes).  The UTF-8 variants and
``surrogatepass`` (a policy over the same scanner) are driven the same way, with bytes
full of what they read differently from UTF-8, against the reference of
``test_variants``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest
from _helpers import CORE, FRAGMENTS
from hypothesis import example, given
from hypothesis import strategies as st
from test_variants import variant_reference

import utf8stream.core.decoder as decoder_module
from utf8stream import (
    DecoderCheckpoint,
    LineSplitter,
    Malformed,
    Utf8DecodeError,
    Utf8Decoder,
)
from utf8stream.accel import use_accelerator
from utf8stream.core.scanner import PyScanner, Scanner
from utf8stream.core.variantscan import VariantScanner

pytestmark = pytest.mark.skipif(
    not decoder_module.accelerated(),
    reason="the C accelerator is not built here (pure-Python install)",
)

#: The constant policies (the scanner puts them in itself) and policies that map each
#: unit through the decoder (the scanner hands it each unit): both implementations
#: scan every one of them.
POLICIES = ["replace", "ignore", "strict", "surrogateescape", "backslashreplace"]
#: What the callback does: nothing, record only, raise on some events, read and try to
#: drive its own decoder, or replace itself with another callback.
BEHAVIOURS = [None, "record", "raise", "reenter", "replace"]


class Boom(Exception):
    pass


def utf8_scanner(decoder: Utf8Decoder) -> Scanner:
    """The UTF-8 scanner a decoder uses: its own, or the one its variant scanner wraps."""
    scanner = decoder._scanner
    assert scanner is not None
    return scanner._inner if isinstance(scanner, VariantScanner) else scanner


@dataclass
class Side:
    """One implementation's decoder, its events, and what its callback saw."""

    accelerated: bool
    errors: str
    behaviour: str | None
    raise_at: frozenset[int]
    log: list[Any] = field(default_factory=list)
    decoder: Utf8Decoder = field(init=False)
    count: int = 0
    variant: str = "utf-8"

    def __post_init__(self) -> None:
        with use_accelerator(self.accelerated):
            self.decoder = Utf8Decoder(
                self.errors, on_malformed=self._initial_callback(), variant=self.variant
            )
        # Every policy and variant goes through the scanner of the implementation chosen.
        assert isinstance(utf8_scanner(self.decoder), PyScanner) != self.accelerated

    def _initial_callback(self) -> Any:
        return None if self.behaviour is None else self.callback

    def callback(self, event: Malformed) -> None:
        self.count += 1
        self.log.append(("event", event.offset, event.data, event.kind))
        if self.behaviour == "reenter":
            self.log.append(("inside", self.decoder.statistics(), self.decoder.position))
            for attempt in (
                lambda: self.decoder.decode(b"\xff"),
                lambda: self.decoder.decode(bytearray(b"x")),
                self.decoder.checkpoint,
                self.decoder.mark_gap,
                self.decoder.getstate,
            ):
                try:
                    attempt()
                except RuntimeError:
                    self.log.append("refused")
                else:
                    self.log.append("accepted")
        elif self.behaviour == "replace" and self.count % 2:
            self.decoder.on_malformed = self.other_callback
        if self.count in self.raise_at:
            raise Boom

    def other_callback(self, event: Malformed) -> None:
        self.count += 1
        self.log.append(("other", event.offset, event.data, event.kind))
        self.decoder.on_malformed = self.callback
        if self.count in self.raise_at:
            raise Boom

    def run(self, step: Any) -> Any:
        """One step of the script; what it returned or raised, comparable across sides."""
        kind = step[0]
        try:
            if kind == "decode":
                return ("text", self.decoder.decode(step[1], final=step[2]))
            if kind == "decode_view":
                return ("text", self.decoder.decode(memoryview(step[1]), final=step[2]))
            if kind == "gap":
                self.decoder.mark_gap(lost=step[1])
                return ("gap",)
            if kind == "restore":
                # Restored into the *other* implementation, through JSON.
                text = self.decoder.checkpoint().to_json()
                cp = DecoderCheckpoint.from_json(text)
                with use_accelerator(not self.accelerated):
                    self.decoder = Utf8Decoder.from_checkpoint(
                        cp, on_malformed=self._initial_callback()
                    )
                self.accelerated = not self.accelerated
                return ("checkpoint", cp)
            raise AssertionError(kind)
        except Utf8DecodeError as exc:
            return ("strict", exc.offset, exc.kind, exc.malformed.data, exc.partial)
        except Boom:
            return ("boom",)

    def state(self) -> Any:
        d = self.decoder
        return (d.position, d.buffered, d.getstate(), d.statistics())


fragments = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.binary(min_size=1, max_size=3)), max_size=12
).map(b"".join)

step = st.one_of(
    st.tuples(st.just("decode"), fragments, st.just(False)),
    st.tuples(st.just("decode"), fragments, st.booleans()),
    st.tuples(st.just("decode_view"), fragments, st.just(False)),
    st.tuples(st.just("gap"), st.one_of(st.none(), st.integers(0, 5), st.just(2**64))),
    st.tuples(st.just("restore")),
)


def run_script(
    errors: str,
    behaviour: str | None,
    raise_at: frozenset[int],
    steps: list[Any],
    variant: str = "utf-8",
):
    fast = Side(True, errors, behaviour, raise_at, variant=variant)
    pure = Side(False, errors, behaviour, raise_at, variant=variant)
    outcomes = []
    for s in steps:
        got_fast = fast.run(s)
        got_pure = pure.run(s)
        assert got_fast == got_pure, s
        assert fast.log == pure.log, s
        assert fast.state() == pure.state(), s
        outcomes.append(got_fast)
    # The end of the stream, retried while callbacks raise.
    for _ in range(len(raise_at) + 2):
        end = (fast.run(("decode", b"", True)), pure.run(("decode", b"", True)))
        assert end[0] == end[1]
        assert fast.log == pure.log
        assert fast.state() == pure.state()
        outcomes.append(end[0])
        if end[0] != ("boom",):
            break
    assert "accepted" not in fast.log
    return outcomes, fast


@CORE
@given(
    errors=st.sampled_from(POLICIES),
    behaviour=st.sampled_from(BEHAVIOURS),
    raise_at=st.frozensets(st.integers(1, 10), max_size=4),
    steps=st.lists(step, max_size=12),
)
def test_both_implementations_agree_step_by_step(
    errors: str, behaviour: str | None, raise_at: frozenset[int], steps: list[Any]
) -> None:
    if behaviour is None:
        raise_at = frozenset()
    outcomes, side = run_script(errors, behaviour, raise_at, steps)
    if errors == "strict" or any(s[0] == "gap" for s in steps):
        return
    # The oracle: nothing lost, nothing added, whatever raised and wherever the
    # implementation changed.  Each final call ends a stream (the next bytes start a new
    # one); a final call whose callback raised ends it only once retried, so with raising
    # callbacks only a script whose one final call is the last is compared.
    segments = [b""]
    for s in steps:
        if s[0] in ("decode", "decode_view"):
            segments[-1] += s[1]
            if s[2]:
                segments.append(b"")
    if ("boom",) in outcomes and len(segments) > 1:
        return
    text = "".join(o[1] for o in outcomes if o[0] == "text")
    assert text == "".join(seg.decode("utf-8", errors) for seg in segments)
    assert side.decoder.statistics().bytes_fed == sum(map(len, segments))


#: Damaged text: characters of every length (a U+FFFD of the input among them, and a
#: Hangul syllable whose bytes start with ED, as a surrogate's would) between runs of
#: bytes from 80..FF, mostly malformed: many units of every kind to a chunk, back to
#: back or apart, on the Python scanner's damaged path.
damaged = st.lists(
    st.one_of(
        st.sampled_from(["a", "\u00e9", "\u65e5\u672c", "\ufffd", "\ud7a3", "\U0001f600"]).map(
            str.encode
        ),
        st.binary(min_size=1, max_size=4).map(lambda b: bytes(x | 0x80 for x in b)),
    ),
    min_size=1,
    max_size=40,
).map(b"".join)


@CORE
@given(
    errors=st.sampled_from(POLICIES),
    behaviour=st.sampled_from(BEHAVIOURS),
    raise_at=st.frozensets(st.integers(1, 30), max_size=4),
    steps=st.lists(st.tuples(st.just("decode"), damaged, st.booleans()), max_size=6),
)
def test_damaged_text_agrees(
    errors: str, behaviour: str | None, raise_at: frozenset[int], steps: list[Any]
) -> None:
    """Text with many malformed units, chunk after chunk: the same text, events,
    statistics and state from both implementations, and ``bytes.decode``'s text."""
    if behaviour is None:
        raise_at = frozenset()
    outcomes, _ = run_script(errors, behaviour, raise_at, steps)
    if errors == "strict" or ("boom",) in outcomes:
        return
    segments = [b""]
    for s in steps:
        segments[-1] += s[1]
        if s[2]:
            segments.append(b"")
    text = "".join(o[1] for o in outcomes if o[0] == "text")
    assert text == "".join(seg.decode("utf-8", errors) for seg in segments)


@CORE
@given(
    behaviour=st.sampled_from([None, "raise", "replace"]),
    raise_at=st.frozensets(st.integers(1, 10), max_size=3),
    chunks=st.lists(st.one_of(fragments, fragments.map(lambda b: b + b"\r\n" + b)), max_size=8),
    newline=st.sampled_from([None, "\n"]),
)
def test_line_splitting_agrees(
    behaviour: str | None, raise_at: frozenset[int], chunks: list[bytes], newline: str | None
) -> None:
    """``LineSplitter.feed_bytes``: the accelerator cuts lines from the bytes itself."""
    if behaviour is None:
        raise_at = frozenset()
    sides = [Side(accel, "replace", behaviour, raise_at) for accel in (True, False)]
    splitters = [LineSplitter(newline=newline, max_line_bytes=None) for _ in sides]
    results: list[list[Any]] = [[], []]
    for chunk in [*chunks, b"", b""]:
        for side, splitter, out in zip(sides, splitters, results, strict=True):
            try:
                out.extend(splitter.feed_bytes(side.decoder, chunk))
            except Boom:
                out.append("boom")
        assert results[0] == results[1]
        assert sides[0].log == sides[1].log
        assert sides[0].state() == sides[1].state()
    for side, splitter, out in zip(sides, splitters, results, strict=True):
        for _ in range(len(raise_at) + 1):  # the end, retried while callbacks raise
            try:
                out.extend(splitter.feed_bytes(side.decoder, b"", final=True))
            except Boom:
                out.append("boom")
            else:
                break
        out.extend(splitter.flush())
    assert results[0] == results[1]
    whole = b"".join(chunks)
    oracle = LineSplitter(newline=newline, max_line_bytes=None)
    expected = oracle.feed(whole.decode("utf-8", "replace")) + oracle.flush()
    assert [x for x in results[0] if x != "boom"] == expected


line_pieces = st.lists(
    st.one_of(
        st.sampled_from([*FRAGMENTS, b"\r", b"\r\n", b"\n", b"abcdefgh", b"\xf0\x9f\x98\x80"]),
        st.binary(min_size=1, max_size=3),
    ),
    max_size=10,
).map(b"".join)


@CORE
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("bytes"), line_pieces),
            st.tuples(st.just("view"), line_pieces),
            st.tuples(st.just("text"), line_pieces),
        ),
        max_size=10,
    ),
    newline=st.sampled_from([None, "\n", "\0"]),
    limit=st.sampled_from([4, 5, 9, 16, None]),
    on_overlong=st.sampled_from(["raise", "truncate", "split", "skip"]),
)
def test_line_splitting_near_the_limit_agrees(
    steps: list[Any], newline: str | None, limit: int | None, on_overlong: str
) -> None:
    """``LineSplitter.feed_bytes`` with lines around ``max_line_bytes``, chunks that
    end in a ``\r``, text between the bytes, memoryviews: the accelerated decoder, whose
    chunks the engine cuts with one call of the C scanner's ``lines`` (``feed_cut``),
    and the pure-Python one (``feed``) give the same lines, errors, state and counts at
    every step."""
    sides = [Side(accel, "replace", None, frozenset()) for accel in (True, False)]
    splitters = [
        LineSplitter(newline=newline, max_line_bytes=limit, on_overlong=on_overlong) for _ in sides
    ]

    def step(splitter: LineSplitter, decoder: Utf8Decoder, kind: str, data: bytes) -> Any:
        if kind == "text":
            splitter.sync_decoder()
            return splitter.feed(data.decode("utf-8", "surrogateescape"))
        return splitter.feed_bytes(decoder, memoryview(data) if kind == "view" else data)

    def seen(splitter: LineSplitter, side: Side) -> Any:
        engine = splitter._engine
        return (
            splitter.statistics(),
            splitter.buffered,
            engine.partial,
            engine.line_start,
            engine.position,
            side.decoder.position,
            side.decoder.statistics(),
        )

    for kind, data in [*steps, ("bytes", b"")]:
        got = [
            step(sp, side.decoder, kind, data) for sp, side in zip(splitters, sides, strict=True)
        ]
        assert [[repr(x) for x in g] for g in got[:1]] == [[repr(x) for x in g] for g in got[1:]]
        assert seen(splitters[0], sides[0]) == seen(splitters[1], sides[1])
    ends = [
        sp.feed_bytes(side.decoder, b"", True) + sp.flush()
        for sp, side in zip(splitters, sides, strict=True)
    ]
    assert [repr(x) for x in ends[0]] == [repr(x) for x in ends[1]]
    assert sides[0].state() == sides[1].state()


#: What the variants read differently from UTF-8, and pieces of it (a chunk often ends
#: in a start that the next one completes): surrogate halves, pairs, C0 80, NUL,
#: four-byte forms (malformed in CESU-8 and MUTF-8).
VARIANT_FRAGMENTS = [
    b"\xed\xa0\x80",
    b"\xed\xaf\xbf",
    b"\xed\xb0\x80",
    b"\xed\xbf\xbf",
    b"\xed\xa0\xbd\xed\xb8\x80",
    b"\xed\xa0\xbd\xed",
    b"\xed\xa0\xbd\xed\xb8",
    b"\xed\xa0",
    b"\xed\xb0",
    b"\xed",
    b"\xb8\x80",  # the rest of a low half cut by the end of the chunk before
    b"\xbf",
    b"\xc0\x80",
    b"\xc0",
    b"\xc0\x81",
    b"\x80",
    b"\x00",
    b"\xf0\x9f\x98\x80",
    b"\xf0\x9f",
    b"\xf4\x8f\xbf\xbf",
    b"\xf4",
    b"a",
    b"\xc3\xa9",
    b"\xe2\x82\xac",
]
variant_fragments = st.lists(
    st.one_of(st.sampled_from(VARIANT_FRAGMENTS), st.binary(min_size=1, max_size=3)), max_size=12
).map(b"".join)
variant_step = st.one_of(
    st.tuples(st.just("decode"), variant_fragments, st.just(False)),
    st.tuples(st.just("decode"), variant_fragments, st.booleans()),
    st.tuples(st.just("decode_view"), variant_fragments, st.just(False)),
    st.tuples(st.just("gap"), st.one_of(st.none(), st.integers(0, 5), st.just(2**64))),
    st.tuples(st.just("restore")),
)


@st.composite
def cut_decodes(draw: st.DrawFn) -> list[Any]:
    """Bytes cut at random points, one non-final decode per piece: pairs and sequences
    cut anywhere, so that the tail a variant holds (up to five bytes) is exercised."""
    data = draw(variant_fragments)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=4)))
    bounds = [0, *cuts, len(data)]
    return [("decode", data[a:b], False) for a, b in itertools.pairwise(bounds)]


variant_script = st.lists(
    st.one_of(variant_step.map(lambda step: [step]), cut_decodes()), max_size=8
).map(lambda groups: [step for group in groups for step in group])
#: Every variant with every policy, and plain UTF-8 with the policy that reads surrogates.
VARIANT_POLICIES = [
    *(
        (variant, errors)
        for variant in ("wtf-8", "cesu-8", "mutf-8", "utf-8z")
        for errors in [*POLICIES, "surrogatepass", "optu-8"]
    ),
    ("utf-8", "surrogatepass"),
]


@CORE
@given(
    variant_policy=st.sampled_from(VARIANT_POLICIES),
    behaviour=st.sampled_from(BEHAVIOURS),
    raise_at=st.frozensets(st.integers(1, 10), max_size=4),
    steps=variant_script,
)
# The checkpoint's carried text (a lone high half, then a surrogateescape byte) must come
# back from JSON as two code points, not joined into one character.
@example(
    variant_policy=("wtf-8", "surrogateescape"),
    behaviour="record",
    raise_at=frozenset([1]),
    steps=[("decode", b"\xed\xa0\xbd\xed\xed\xa0\x80", False), ("restore",)],
)
def test_variants_agree_step_by_step(
    variant_policy: tuple[str, str],
    behaviour: str | None,
    raise_at: frozenset[int],
    steps: list[Any],
) -> None:
    """A variant over the C scanner and over the Python one: same everything."""
    variant, errors = variant_policy
    if behaviour is None:
        raise_at = frozenset()
    outcomes, _ = run_script(errors, behaviour, raise_at, steps, variant)
    if errors not in ("replace", "ignore", "backslashreplace", "surrogateescape"):
        return  # no rendering of the reference for these (strict raises; see test_variants)
    if any(s[0] == "gap" for s in steps):
        return
    segments = [b""]
    for s in steps:
        if s[0] in ("decode", "decode_view"):
            segments[-1] += s[1]
            if s[2]:
                segments.append(b"")
    if ("boom",) in outcomes and len(segments) > 1:
        return
    text = "".join(o[1] for o in outcomes if o[0] == "text")
    assert text == "".join(variant_reference(seg, variant).render(errors) for seg in segments)
