"""``MojibakeRepairer``: mojibake made here with ``str.encode("utf-8").decode(code_page)``
(once and twice) is repaired back to the text it was made from; correct text full of
characters that look like mojibake is left as it is; every chunking, and every resume
from a JSON checkpoint, gives the output of ``repair_mojibake`` on the whole text."""

from __future__ import annotations

import itertools

import pytest
from _helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream.transforms import (
    MojibakeRepairer,
    TextChange,
    TextTransform,
    TransformCheckpoint,
    repair_mojibake,
    transform_from_checkpoint,
)

# Every test runs with the accelerator and in pure Python (conftest's fixture).
pytestmark = pytest.mark.usefixtures("implementation")

SENTENCES = [
    "Le café était déjà fermé, hélas ; à demain, peut-être.",
    "Über den Wolken muss die Freiheit wohl grenzenlos sein, sagte Jürgen in Köln.",
    "El niño comió piñones y jamón en la montaña española.",
    "A informação não está disponível, então voltaremos à questão amanhã.",
    "Zażółć gęślą jaźń, powiedział Paweł w Łodzi.",
    "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Árvíztűrő tükörfúrógép és ő még nem látta.",
    "Şimdi İstanbul'da güzel bir gün, çok sıcak değil.",
    "Привет! Как у тебя дела? Всё хорошо, спасибо.",
    "Слава Україні, їжак і ґава п'ють чай.",
    "Ελληνικά: η γρήγορη καφέ αλεπού πηδά πάνω από τον σκύλο.",
    "עברית היא שפה שמית, נכתבת מימין לשמאל.",
    "اللغة العربية جميلة جدا.",
    "日本語のテキストと中文字符、そして한국어 문장.",
    "हिन्दी भाषा में लिखा गया वाक्य।",
    "ภาษาไทยเป็นภาษาที่สวยงาม",
    "Tiếng Việt có nhiều dấu thanh.",
    "Smart quotes “like these”, an em dash — and an ellipsis… cost 5 € or £3.",
    "Emoji too: 🎉🙂 and a ✓ check.",
    "Ærlig talt, så er blåbærsyltetøy godt på Østlandet.",
    "Ķekava un Rīga ir Latvijā, bet Šiauliai – Lietuvoje.",
]
CODE_PAGES = [
    "cp1252",
    "latin-1",
    "cp1250",
    "cp1251",
    "cp1253",
    "cp1254",
    "cp1257",
    "iso8859-2",
    "mac_roman",
]


def _bake(text: str, *code_pages: str) -> str | None:
    for code_page in code_pages:
        try:
            text = text.encode("utf-8").decode(code_page)
        except UnicodeDecodeError:
            return None
    return text


def _read_otherwise(baked: str, page: str) -> bool:
    """Whether a code page tried before ``page`` also reads ``baked`` as UTF-8, to another
    text: ISO 8859-2 and cp1250 differ in a few bytes, and cp1250 is tried first."""
    earlier = CODE_PAGES[: CODE_PAGES.index(page)]
    for other in earlier:
        try:
            if baked.encode(other).decode("utf-8") != baked.encode(page).decode("utf-8"):
                return True
        except UnicodeError:
            pass
    return False


def _cases(layers: int) -> list[tuple[str, tuple[str, ...], str]]:
    cases = []
    for sentence, pages in itertools.product(
        SENTENCES, itertools.product(CODE_PAGES, repeat=layers)
    ):
        baked = _bake(sentence, *pages)
        stages = [_bake(sentence, *pages[: i + 1]) for i in range(len(pages))]
        if baked is not None and not any(
            _read_otherwise(stage or "", page) for stage, page in zip(stages, pages, strict=True)
        ):
            cases.append((sentence, pages, baked))
    return cases


ONCE = _cases(1)
TWICE = [case for case in _cases(2) if case[1][1] in ("cp1252", "latin-1", "cp1251")]

# Correct text with the characters of mojibake in it, each a trap for a careless repair:
# an accented capital before punctuation, a no-break space or a symbol, math, faces,
# Cyrillic capitals that are the cp1251 reading of UTF-8 lead bytes, and so on.
LOOK_ALIKES = [
    "Η ¨ανατροφή¨ δεν ήταν καλή",
    "higher values (“+” and “×” curves)",
    "Bremer – DrÃ¥ber",
    "per la strada,\u00a0è sempre così",
    "1024×…",
    "``pra lá´´",
    "TUDO BEM Õ…",
    "OBRIGADO VOCÊ…",
    "C'EST L'ÉTÉ…",
    "AINDA NÃO SEI SÓ…",
    "the ZOÉ’s band",
    "L’école est fermée",
    "Ôôô NÃO",
    "[ ]\u00a0©",
    "1999—∞",
    "CAFÉ®, ÉLAN¿",
    "HÄÄ\u00a0EDELLÄ\u00a0KOTIIN",
    "Price 3×£20",
    "Look at Āø here",
    "P A L A V R A S Ã O",
    "(-1)! = √π and ∆°",
    "├┤x┼┐x┼┐",
    "«ЛЬВОВ» Её ВІ",
    "ЕЁ, Её, СЁ",
    "a—été b",
    "Ñ° Ö° ×½",
    "«\u00a0À bientôt\u00a0»",
    "Fuß“ weiter",
    "GÓŁ",
    "Α© ©Α",
    "x = 5 µm ± 0,2 ‰, 20 °C",
    "„Größe“ und „Maß“",
    "zaěžšky",
]


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _run(pieces: list[str], **options: int) -> str:
    repairer = MojibakeRepairer(**options)
    return "".join(repairer.transform(p) for p in pieces) + repairer.transform("", final=True)


def test_it_is_a_transform() -> None:
    assert isinstance(MojibakeRepairer(), TextTransform)
    assert MojibakeRepairer().max_carry == 256
    assert MojibakeRepairer(max_carry=40).max_carry == 40


@pytest.mark.parametrize("sentence,pages,baked", ONCE, ids=lambda v: str(v)[:12])
def test_mojibake_once_is_repaired(sentence: str, pages: tuple[str, ...], baked: str) -> None:
    assert repair_mojibake(baked) == sentence


def test_enough_cases_are_made() -> None:
    assert len(ONCE) >= 100
    assert len(TWICE) >= 250


@pytest.mark.parametrize("sentence,pages,baked", TWICE, ids=lambda v: str(v)[:12])
def test_mojibake_twice_is_repaired(sentence: str, pages: tuple[str, ...], baked: str) -> None:
    assert repair_mojibake(baked) == sentence


@pytest.mark.parametrize("text", SENTENCES + LOOK_ALIKES)
def test_correct_text_is_left_alone(text: str) -> None:
    assert repair_mojibake(text) == text
    assert repair_mojibake(text + "\n" + text) == text + "\n" + text


def test_a_line_of_mojibake_next_to_correct_lines() -> None:
    good, bad = SENTENCES[0], _bake(SENTENCES[0], "cp1252")
    assert bad is not None
    assert repair_mojibake(f"{good}\n{bad}\r\n{good}") == f"{good}\n{good}\r\n{good}"


def test_a_line_of_mojibake_made_once_and_twice() -> None:
    text = "naïve and café"
    once, twice = _bake(text, "cp1252"), _bake(text, "cp1252", "cp1252")
    assert once is not None and twice is not None
    mixed = twice[: twice.index(" and")] + once[once.index(" and") :]
    assert mixed == "naÃƒÂ¯ve and cafÃ©"
    assert repair_mojibake(mixed) == text


def test_events_say_what_was_undone() -> None:
    changes: list[TextChange] = []
    repairer = MojibakeRepairer(on_change=changes.append)
    text = "ok cafÃ©\nand ÃƒÂ©t\n"
    out = repairer.transform(text[:9]) + repairer.transform(text[9:], final=True)
    assert out == "ok café\nand ét\n"
    assert changes == [
        TextChange(6, "Ã©", "é", 6, "mojibake", ("latin-1",)),
        TextChange(13, "ÃƒÂ©", "é", 12, "mojibake", ("cp1252", "latin-1")),
    ]
    for change in changes:
        assert text[change.offset : change.end] == change.original
        assert out[change.output_offset : change.output_offset + 1] == change.replacement


def test_no_events_without_a_callback_and_same_output() -> None:
    text = "\n".join(b for _, _, b in ONCE[:40])
    changes: list[TextChange] = []
    repaired = MojibakeRepairer(on_change=changes.append).transform(text, final=True)
    assert repaired == repair_mojibake(text)
    assert changes


words = st.sampled_from(
    [w for _, _, baked in ONCE[::7] + TWICE[::31] for w in baked.split(" ")]
    + ["é", "Ã", "©", "“", "—", "abc", "\n", "\r\n", "ÉÉ", "Ã©Ã", "×½"]
)
texts = st.lists(words, max_size=30).map(" ".join)


@given(texts, st.lists(st.integers(0, 400), max_size=8), st.sampled_from([4, 9, 32, 256]))
@settings(max_examples=examples(200), deadline=None)
def test_any_chunking_gives_the_whole_text_repair(text: str, cuts: list[int], bound: int) -> None:
    whole = repair_mojibake(text, max_carry=bound)
    assert _run(_pieces(text, cuts), max_carry=bound) == whole
    repairer = MojibakeRepairer(max_carry=bound)
    repairer.transform(text)
    assert len(repairer.checkpoint().carry) <= bound


@given(texts, st.sampled_from([4, 9, 256]))
@settings(max_examples=examples(60), deadline=None)
def test_char_by_char_gives_the_whole_text_repair(text: str, bound: int) -> None:
    assert _run(list(text), max_carry=bound) == repair_mojibake(text, max_carry=bound)


@given(texts, st.integers(0, 400), st.sampled_from([9, 256]))
@settings(max_examples=examples(150), deadline=None)
def test_resumed_from_json_is_one_run(text: str, cut: int, bound: int) -> None:
    cut %= len(text) + 1
    first = MojibakeRepairer(max_carry=bound)
    head = first.transform(text[:cut])
    saved = TransformCheckpoint.from_json(first.checkpoint().to_json())
    resumed = transform_from_checkpoint(saved)
    assert isinstance(resumed, MojibakeRepairer)
    assert resumed.max_carry == bound
    tail = resumed.transform(text[cut:], final=True)
    assert head + tail == repair_mojibake(text, max_carry=bound)
    assert resumed.position == len(text)
    assert resumed.output_position == len(head + tail)


def test_a_long_run_is_cut_at_the_bound() -> None:
    # Forty Cyrillic words with no space between them: one run of mojibake longer than
    # the bound, held no further than the bound.
    baked = _bake("ж" * 200, "cp1251")
    assert baked is not None
    repairer = MojibakeRepairer(max_carry=64)
    out = repairer.transform(baked)
    assert len(repairer.checkpoint().carry) <= 64
    out += repairer.transform("", final=True)
    assert out == repair_mojibake(baked, max_carry=64)
    assert out.startswith("ж" * 30)


def test_final_starts_a_new_text() -> None:
    repairer = MojibakeRepairer()
    assert repairer.transform("caf", final=True) == "caf"
    # "f" before the run no longer counts: the run stands at the start of a text.
    assert repairer.transform("Ã©", final=True) == repair_mojibake("Ã©")


def test_reset_forgets_the_carry() -> None:
    repairer = MojibakeRepairer()
    assert repairer.transform("cafÃ") == "caf"
    repairer.reset()
    assert repairer.position == 0
    assert repairer.transform("©", final=True) == "©"


@pytest.mark.parametrize(
    "checkpoint",
    [
        TransformCheckpoint("pairs"),
        TransformCheckpoint("mojibake", carry="x" * 300),
        TransformCheckpoint("mojibake", state={"before": "ab"}),
    ],
)
def test_a_bad_checkpoint_is_refused(checkpoint: TransformCheckpoint) -> None:
    with pytest.raises(ValueError):
        MojibakeRepairer.from_checkpoint(checkpoint)


def test_a_tiny_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_carry"):
        MojibakeRepairer(max_carry=3)
