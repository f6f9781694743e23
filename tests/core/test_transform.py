"""The transform protocol: ``chain``, ``TextChange`` events and checkpoints, driven with
the tests' small transform (``_transform_helpers.Pairs``: every ``ab`` becomes ``X``, so
it must carry a trailing ``a`` between pieces)."""

from __future__ import annotations

import itertools

import pytest
from _helpers import examples
from _transform_helpers import KIND, Pairs
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream.transforms import (
    TextChange,
    TextTransform,
    TransformCheckpoint,
    chain,
    transform_from_checkpoint,
)

texts = st.text(alphabet="abX\udc80é", max_size=40)


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def test_the_toy_is_a_transform() -> None:
    assert isinstance(Pairs(), TextTransform)
    assert isinstance(chain(Pairs(), Pairs()), TextTransform)


def test_a_chain_of_one_is_that_transform() -> None:
    one = Pairs()
    assert chain(one) is one


@given(texts, st.lists(st.integers(0, 40), max_size=6))
@settings(max_examples=examples(200))
def test_chain_over_any_chunking_equals_one_call(text: str, cuts: list[int]) -> None:
    # "aabb" -> "aXb" -> "X": the second transform sees what the first lets out.
    expected = text.replace("ab", "X").replace("ab", "X")
    changes: list[TextChange] = []
    whole = chain(Pairs(), Pairs())
    assert whole.transform(text, final=True) == text.replace("ab", "X").replace("ab", "X")
    pieces = chain(Pairs(), Pairs())
    pieces.on_change = changes.append
    out = "".join(pieces.transform(p) for p in _pieces(text, cuts)) + pieces.transform(
        "", final=True
    )
    assert out == expected
    assert pieces.position == len(text)
    assert pieces.output_position == len(expected)
    assert all(c.original == "ab" and c.replacement == "X" for c in changes)


@given(texts, st.integers(0, 40))
@settings(max_examples=examples(200))
def test_a_chain_resumed_from_json_gives_one_run(text: str, cut: int) -> None:
    cut %= len(text) + 1
    first = chain(Pairs(), Pairs())
    head = first.transform(text[:cut])
    saved = TransformCheckpoint.from_json(first.checkpoint().to_json())
    assert saved == first.checkpoint()
    resumed = transform_from_checkpoint(saved)
    tail = resumed.transform(text[cut:], final=True)
    assert head + tail == text.replace("ab", "X").replace("ab", "X")


def test_events_carry_absolute_offsets() -> None:
    changes: list[TextChange] = []
    t = Pairs(changes.append)
    assert t.transform("xa") == "x"
    assert t.transform("bza", final=True) == "Xza"
    assert changes == [TextChange(1, "ab", "X", 1, KIND)]
    assert changes[0].end == 3


def test_lone_surrogates_survive_the_json_form() -> None:
    cp = TransformCheckpoint(KIND, 3, 2, "\udc80\ud800", {"a": 1}, {"b": [1]})
    assert TransformCheckpoint.from_json(cp.to_json()) == cp


@pytest.mark.parametrize(
    "text",
    ['{"kind": "pairs"}', '{"version": 1, "kind": 3}', '{"version": 1, "kind": "x", "y": 1}'],
)
def test_a_bad_checkpoint_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        TransformCheckpoint.from_json(text)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="no transform of kind 'nothing'"):
        transform_from_checkpoint(TransformCheckpoint("nothing"))


def test_an_empty_chain_passes_text_through_and_resumes() -> None:
    empty = chain()
    assert empty.transform("abc") == "abc"
    resumed = transform_from_checkpoint(empty.checkpoint())
    assert resumed.position == 3
    assert resumed.transform("d", final=True) == "d"
