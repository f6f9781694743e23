"""The encoding detector with the C accelerator and in pure Python: the same Detection,
confidence and reason included, on text in every candidate encoding cut anywhere, on
mixtures of encodings and on random bytes."""

from __future__ import annotations

import random

import pytest
from _helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_detector import GLUED, LEGACY, TEXTS

from utf8stream.accel import accelerated, use_accelerator
from utf8stream.detect import Detection, EncodingDetector

pytestmark = pytest.mark.skipif(
    not accelerated(), reason="the C accelerator is not built here (pure-Python install)"
)

#: Encodings whose text the statistics weigh beside the legacy ones.
WIDE = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")


def _both(data: bytes, cuts: list[int] | None = None, lookahead: int = 65536) -> Detection:
    """The decision of each implementation on ``data`` fed in pieces ending at ``cuts``,
    checked equal; that decision."""
    found = []
    for enabled in (True, False):
        with use_accelerator(enabled):
            detector = EncodingDetector(lookahead)
        start, decision = 0, None
        for end in [*(cuts or []), len(data)]:
            decision = detector.feed(data[start:end]) or decision
            start = max(start, end)
        found.append(decision or detector.finish())
    assert found[0] == found[1]
    return found[0]


def _text(language: str, size: int) -> str:
    text = TEXTS[language]
    return (text + " ") * (size // len(text) + 1)


@pytest.mark.parametrize(("language", "encoding", "_alike"), LEGACY, ids=lambda v: str(v))
def test_legacy_text_at_every_kind_of_prefix(language: str, encoding: str, _alike: object) -> None:
    data = _text(language, 6000).encode(encoding)
    for end in (64, 65, 255, 1024, 1500, 4096, 4097, len(data)):
        _both(data[:end])


@pytest.mark.parametrize("encoding", WIDE)
def test_wide_text_without_a_mark(encoding: str) -> None:
    for language in ("fr", "ru", "ja", "ko", "km"):
        data = _text(language, 3000).encode(encoding)
        _both(data)
        _both(data[:300])
    # No ASCII character, so no NUL byte: weighed for its share of East Asian letters.
    for language in ("ja", "zh", "ko"):
        text = "".join(c for c in _text(language, 2000) if not c.isascii())
        _both(text.encode(encoding))


def test_ascii_padded_with_nul_and_utf8_after_many_ascii_bytes() -> None:
    _both(b"log line\n" * 200 + b"\x00" * 64 + b"more\n")
    _both(b"plain " * 2000 + TEXTS["de"].encode("utf-8"))


@settings(max_examples=examples(200), deadline=None)
@given(st.binary(max_size=5000), st.integers(4, 70000))
def test_random_bytes(data: bytes, lookahead: int) -> None:
    _both(data, lookahead=lookahead)


@settings(max_examples=examples(120), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(TEXTS)),
            st.sampled_from([e for _, e, _ in LEGACY] + ["utf-8", *WIDE]),
            st.integers(1, 400),
        ),
        min_size=1,
        max_size=6,
    ),
    st.binary(max_size=40),
    st.randoms(use_true_random=False),
)
def test_mixtures_cut_anywhere(
    parts: list[tuple[str, str, int]], noise: bytes, rng: random.Random
) -> None:
    """Pieces of text in several encodings (what each cannot write dropped), bytes that are
    none, cut into random pieces: both implementations decide alike."""
    data = b"".join(TEXTS[lang][:size].encode(enc, "ignore") for lang, enc, size in parts)
    data = data[: len(data) // 2] + noise + data[len(data) // 2 :]
    cuts = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randrange(6)))
    _both(data, cuts)


@pytest.mark.parametrize("encoding", ["cp1251", "koi8-r"])
def test_both_count_the_capitals_of_glued_words_alike(encoding: str) -> None:
    # Cut inside the words too: each piece's runs are counted on their own.
    data = (GLUED + " " + TEXTS["ru"]).encode(encoding)
    for cuts in ([], list(range(7, len(data), 23)), list(range(1, len(data)))):
        assert _both(data, cuts).encoding == encoding
