"""``MojibakeRepairer`` with the C accelerator and in pure Python: the same output and the
same events, on mojibake made here (sentences in many scripts through each code page,
once and twice), on correct text that looks like mojibake and on random mixes of the
code pages' characters, cut anywhere, at small and default bounds."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _helpers import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_mojibake import CODE_PAGES, LOOK_ALIKES, ONCE, SENTENCES, TWICE, _bake, _pieces

from utf8stream.accel import accelerated, use_accelerator
from utf8stream.transforms import MojibakeRepairer, TextChange, repair_mojibake

pytestmark = pytest.mark.skipif(
    not accelerated(), reason="the C accelerator is not built here (pure-Python install)"
)

#: Every sentence through every code page and pair of them that makes mojibake of it.
BAKED = sorted(
    {
        baked
        for sentence in SENTENCES
        for pages in [(p,) for p in CODE_PAGES] + [(p, q) for p in CODE_PAGES for q in CODE_PAGES]
        if (baked := _bake(sentence, *pages)) is not None and baked != sentence
    }
)
#: Characters that make runs of the code pages, letters around them, line ends, and
#: characters of every width (a lone surrogate too).
ALPHABET = "aZé Ã©Â¤™€‚ƒ„\x81\x9d\xa0˘ŁŚ√ß≈ÐÑ¸ЂЯяΣαΑ中🎉\n\r\ud800"

baked_words = st.sampled_from([w for baked in BAKED for w in baked.split(" ")])
words = st.one_of(
    baked_words,
    # Glued to ASCII letters, as in "“name”" inside a CJK sentence.
    st.builds(
        "".join,
        st.tuples(
            st.sampled_from(["a", "Zq", "-"]), baked_words, st.sampled_from(["b", "id", "."])
        ),
    ),
    st.sampled_from(LOOK_ALIKES + SENTENCES),
    st.text(alphabet=ALPHABET, max_size=10),
)
texts = st.lists(words, max_size=14).flatmap(
    lambda parts: st.lists(
        st.sampled_from([" ", "\n", "\r\n", ""]), min_size=len(parts), max_size=len(parts)
    ).map(lambda seps: "".join(p + s for p, s in zip(parts, seps, strict=True)))
)


def _run(enabled: bool, pieces: list[str], bound: int) -> tuple[str, list[TextChange], int]:
    """The output, events and carry of one repairer of one implementation."""
    changes: list[TextChange] = []
    with use_accelerator(enabled):
        repairer = MojibakeRepairer(max_carry=bound, on_change=changes.append)
    out = [repairer.transform(piece) for piece in pieces]
    carry = len(repairer.checkpoint().carry)
    out.append(repairer.transform("", final=True))
    return "".join(out), changes, carry


def _both(text: str, cuts: list[int], bound: int) -> str:
    pieces = _pieces(text, cuts)
    compiled, pure = _run(True, pieces, bound), _run(False, pieces, bound)
    assert compiled == pure
    with use_accelerator(True):
        whole = repair_mojibake(text, max_carry=bound)
    with use_accelerator(False):
        assert repair_mojibake(text, max_carry=bound) == whole
    assert compiled[0] == whole
    return whole


@given(texts, st.lists(st.integers(0, 600), max_size=6), st.sampled_from([4, 5, 9, 32, 256]))
@example("ÃƒÂ©Ã", [2], 4)
@example("naÃƒÂ¯ve and cafÃ©\r\nok", [], 256)
@example("Ãž", [], 256)
@example("ðŸŽ‰ ok", [1], 9)
@example("name" + (_bake("也没有", "cp1252") or "") + "id", [], 256)
@settings(max_examples=examples(150), deadline=None)
def test_compiled_and_pure_agree(text: str, cuts: list[int], bound: int) -> None:
    _both(text, cuts, bound)


@pytest.mark.soak
@given(texts, st.lists(st.integers(0, 600), max_size=12), st.sampled_from([4, 7, 16, 64, 256]))
@settings(max_examples=examples(3000), deadline=None)
def test_compiled_and_pure_agree_deep(text: str, cuts: list[int], bound: int) -> None:
    _both(text, cuts, bound)


def test_every_baked_sentence_is_repaired_the_same() -> None:
    text = "\n".join(BAKED)
    assert _both(text, [], 256) != text
    # Line by line too: each line is a text of its own, with nothing around it.
    for line in BAKED:
        _both(line, [], 256)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_tiny_bound_is_refused_by_both(enabled: bool) -> None:
    with use_accelerator(enabled), pytest.raises(ValueError, match="max_carry"):
        repair_mojibake("cafÃ©", max_carry=3)


#: Imports the package three times in one process, each after dropping every module of
#: the previous import (the accelerator's included) and collecting it, and repairs the
#: texts of stdin (a JSON list) with both repairers each time: one JSON line a time.
_REIMPORT = """
import gc, json, sys
texts = json.loads(sys.stdin.read())
for _ in range(3):
    from utf8stream.accel import accelerated
    from utf8stream.transforms import repair_mojibake, repair_mojibake_bytes
    text = [repair_mojibake(t) for t in texts]
    data = [repair_mojibake_bytes(t.encode()).decode() for t in texts]
    print(json.dumps([accelerated(), text, data]))
    del accelerated, repair_mojibake, repair_mojibake_bytes
    for name in [n for n in sys.modules if n == "utf8stream" or n.startswith("utf8stream.")]:
        del sys.modules[name]
    gc.collect()
"""


def test_each_new_import_of_the_accelerator_repairs_alike() -> None:
    # Each import makes a new accelerator module, with tables of its own to derive and
    # keep; the one before is freed with everything it kept.
    cases = ONCE[::4] + TWICE[::40]
    env = dict(os.environ)
    env.pop("UTF8STREAM_PURE_PYTHON", None)
    child = subprocess.run(
        [sys.executable, "-c", _REIMPORT],
        input=json.dumps([baked for _, _, baked in cases]),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rounds = [json.loads(line) for line in child.stdout.splitlines()]
    sentences = [sentence for sentence, _, _ in cases]
    assert rounds == [[True, sentences, sentences]] * 3
