"""The encoding detector: the same decision however the input is cut, the rules that always
hold (ASCII, valid UTF-8, byte-order marks), real text in each legacy encoding, UTF-16 and
UTF-32 without a mark, binary input, and memory bounded by the lookahead."""

from __future__ import annotations

import codecs
import gzip
import random

import pytest
from _helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream.detect import Detection, EncodingDetector, detect

#: A few sentences of each language, written for these tests.
TEXTS = {
    "ru": "Съешь же ещё этих мягких французских булок, да выпей чаю. Москва - столица России, "
    "крупнейший по численности населения город страны. В городе много музеев и парков.",
    "uk": "Усі люди народжуються вільними і рівними у своїй гідності та правах. Вони наділені "
    "розумом і совістю і повинні діяти у відношенні один до одного в дусі братерства.",
    "fr": "Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ? Elle "
    "se trouve à côté de l'église, près du marché où l'on vend des légumes frais.",
    "de": "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich. Die Straße führt "
    "über die Brücke zum Bahnhof, wo die Züge nach München abfahren. Grüße aus Köln!",
    "pl": "Zażółć gęślą jaźń. Wszyscy ludzie rodzą się wolni i równi pod względem swej "
    "godności i swych praw. Są oni obdarzeni rozumem i sumieniem.",
    "cs": "Příliš žluťoučký kůň úpěl ďábelské ódy. Všichni lidé rodí se svobodní a sobě "
    "rovní co do důstojnosti a práv. Jsou nadáni rozumem a svědomím.",
    "el": "Άρθρο 1. Όλοι οι άνθρωποι γεννιούνται “ελεύθεροι” και ίσοι στην αξιοπρέπεια και "
    "τα δικαιώματα. Είναι προικισμένοι με λογική και συνείδηση.",
    "tr": "Bütün insanlar hür, haysiyet ve haklar bakımından eşit doğarlar. Akıl ve vicdana "
    "sahiptirler ve birbirlerine karşı kardeşlik zihniyeti ile hareket etmelidirler.",
    "he": "כל בני האדם נולדו בני חורין ושווים בערכם ובזכויותיהם. כולם חוננו בתבונה ובמצפון, "
    "לפיכך חובה עליהם לנהוג איש ברעהו ברוח של אחווה.",
    "ar": "يولد جميع الناس أحرارًا متساوين في الكرامة والحقوق. وقد وهبوا عقلاً وضميرًا وعليهم "
    "أن يعامل بعضهم بعضًا بروح الإخاء.",
    "lt": "Visi žmonės gimsta laisvi ir lygūs savo orumu ir teisėmis. Jiems suteiktas protas "
    "ir sąžinė ir jie turi elgtis vienas kito atžvilgiu kaip broliai.",
    "lv": "Visi cilvēki piedzimst brīvi un vienlīdzīgi savā pašcieņā un tiesībās. Viņi ir "
    "apveltīti ar saprātu un sirdsapziņu, un viņiem jāizturas citam pret citu brālīgi.",
    "ja": "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"
    "人間は、理性と良心とを授けられており、互いに同胞の精神をもって行動しなければならない。",
    "zh": "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。"
    "我们今天去图书馆看书，然后在公园里散步。",
    "zh-hant": "人人生而自由，在尊嚴和權利上一律平等。"
    "他們賦有理性和良心，並應以兄弟關係的精神相對待。"
    "我們今天去圖書館看書，然後在公園裡散步。",
    "ko": "모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다. 인간은 천부적으로 "
    "이성과 양심을 부여받았으며 서로 형제애의 정신으로 행동하여야 한다.",
    # ISO-8859-7 has no curly double quotes.
    "el-iso": "Άρθρο 1. Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και "
    "τα δικαιώματα. Είναι προικισμένοι με λογική και συνείδηση.",
    # Scripts the model has no language for.
    "km": "ស្វាគមន៍មកកាន់ប្រទេសកម្ពុជា។ យើងរីករាយណាស់ដែលបានជួបអ្នក។",
    "te": "తెలుగు భాష ద్రావిడ భాషల్లో ఒకటి. ఇది ఆంధ్రప్రదేశ్ రాష్ట్ర అధికార భాష.",
}

#: (language, encoding, encodings that decode those bytes to the same text and may be
#: named instead: a superset of the encoding).
LEGACY = [
    ("ru", "cp1251", ()),
    ("ru", "koi8-r", ()),
    ("ru", "iso-8859-5", ()),
    ("uk", "cp1251", ()),
    ("fr", "cp1252", ()),
    ("de", "cp1252", ()),
    ("fr", "mac_roman", ()),
    ("de", "mac_roman", ()),
    ("pl", "cp1250", ()),
    ("pl", "iso-8859-2", ()),
    ("cs", "cp1250", ()),
    ("cs", "iso-8859-2", ()),
    ("el", "cp1253", ()),
    ("el-iso", "iso-8859-7", ()),
    ("tr", "cp1254", ()),
    ("he", "cp1255", ()),
    ("ar", "cp1256", ()),
    ("lt", "cp1257", ()),
    ("lv", "cp1257", ()),
    ("ja", "shift_jis", ("cp932",)),
    ("ja", "euc-jp", ()),
    ("ja", "iso-2022-jp", ()),
    ("zh", "gb18030", ("gbk",)),
    ("zh-hant", "big5", ("cp950",)),
    ("ko", "euc-kr", ("cp949",)),
]


def _name(encoding: str) -> str:
    return codecs.lookup(encoding).name


def _feed_in(data: bytes, sizes: list[int]) -> tuple[Detection, bytes]:
    """Feed ``data`` cut after each size in turn (then in one piece); the decision and the
    bytes a caller replays: those the detector looked at, then the rest of what it fed."""
    detector = EncodingDetector()
    fed, found = 0, None
    pieces, start = [], 0
    for size in sizes:
        pieces.append(data[start : start + size])
        start += size
    pieces.append(data[start:])
    for piece in pieces:
        fed += len(piece)
        found = detector.feed(piece)
        assert detector.looked_at <= detector.max_lookahead
        if found is not None:
            break
    if found is None:
        found = detector.finish()
    assert detector.buffered() == data[: found.looked_at]
    rest = piece[len(piece) - (fed - found.looked_at) :] if fed > found.looked_at else b""
    return found, detector.buffered() + rest + data[fed:]


SAMPLES = [
    TEXTS["ru"].encode("koi8-r") * 8,
    TEXTS["ja"].encode("shift_jis") * 5,
    TEXTS["fr"].encode("utf-16-le"),
    ("ASCII " * 300 + TEXTS["de"]).encode("cp1252"),
    "\ufeffcafé".encode("utf-8"),
    b"\xff\xfe\x00\x00a\x00\x00\x00",
    gzip.compress(b"not text " * 50, mtime=0),
    b"",
]


@pytest.mark.parametrize("data", SAMPLES, ids=range(len(SAMPLES)))
def test_byte_by_byte_decides_as_the_whole(data: bytes) -> None:
    whole = detect(data)
    found, replayed = _feed_in(data, [1] * len(data))
    assert found == whole
    assert replayed == data


@settings(max_examples=examples(60), deadline=None)
@given(st.sampled_from(SAMPLES), st.lists(st.integers(0, 700), max_size=20))
def test_any_chunking_decides_as_the_whole(data: bytes, sizes: list[int]) -> None:
    found, replayed = _feed_in(data, sizes)
    assert found == detect(data)
    assert replayed == data


@settings(max_examples=examples(100), deadline=None)
@given(st.text(st.characters(min_codepoint=1, max_codepoint=0x7F, exclude_characters="\x1b")))
def test_ascii_is_utf8(text: str) -> None:
    found = detect(text.encode("ascii"))
    assert (found.encoding, found.bom_length, found.is_text) == ("utf-8", 0, True)


@settings(max_examples=examples(100), deadline=None)
@given(
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00\ufeff"), min_size=1)
)
def test_valid_utf8_with_any_byte_above_7f_is_utf8(text: str) -> None:
    data = text.encode("utf-8")
    found = detect(data)
    assert found.encoding == "utf-8"
    assert found.bom_length == 0


@settings(max_examples=examples(100), deadline=None)
@given(
    st.sampled_from(["utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00")),
)
def test_a_byte_order_mark_decides(encoding: str, text: str) -> None:
    data = ("\ufeff" + text).encode(encoding)
    found = detect(data)
    assert found.encoding == encoding
    assert found.bom_length == len("\ufeff".encode(encoding))
    assert found.confidence == 1.0
    assert data[found.bom_length :].decode(found.encoding) == text


@pytest.mark.parametrize(("language", "encoding", "also"), LEGACY)
def test_real_text_in_each_legacy_encoding(language: str, encoding: str, also: tuple[str]) -> None:
    data = TEXTS[language].encode(encoding)
    assert 100 <= len(data) <= 400
    found = detect(data)
    assert found.encoding in {_name(encoding), *map(_name, also)}, found.reason
    assert found.is_text


#: A phrase repeated without a space: "этихСъешь", a capital after lower-case letters.
GLUED = "Съешь же ещё этих" * 20


@pytest.mark.parametrize("encoding", ["cp1251", "koi8-r"])
def test_words_glued_together_are_not_letters_in_the_wrong_case(encoding: str) -> None:
    """KOI8-R read as cp1251, and the other way round, swaps the case of every letter: a
    capital after a lower-case letter says so, but not where it starts a word glued to
    the one before (the wrong reading has its own: "Съешь" reads "сЪЕШЬ")."""
    found = detect(GLUED.encode(encoding))
    assert found.encoding == encoding, found.reason


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("language", ["ja", "zh", "ko", "fr", "ru", "km", "te"])
def test_utf16_and_utf32_without_a_mark(encoding: str, language: str) -> None:
    found = detect(TEXTS[language].encode(encoding))
    assert found.encoding == encoding, found.reason
    assert found.bom_length == 0


@pytest.mark.parametrize(
    ("language", "encoding", "also"),
    [("zh", "gb18030", ("gbk",)), ("ko", "euc-kr", ("cp949",)), ("ja", "shift_jis", ("cp932",))],
)
def test_cjk_text_quoting_russian(language: str, encoding: str, also: tuple[str]) -> None:
    """Double-byte character sets hold Cyrillic too: a Russian sentence inside is theirs."""
    data = (TEXTS[language] + " " + TEXTS["ru"][:60] + " " + TEXTS[language]).encode(encoding)
    found = detect(data)
    assert found.encoding in {_name(encoding), *map(_name, also)}, found.reason


def test_statistics_decide_before_the_end_of_a_long_text() -> None:
    data = TEXTS["ru"].encode("cp1251") * 20
    found = detect(data)
    assert found.encoding == "cp1251"
    assert found.looked_at < len(data)


def test_ascii_waits_for_the_lookahead_then_is_utf8() -> None:
    data = b"plain words " * 100 + TEXTS["fr"].encode("cp1252")
    assert detect(data, max_lookahead=256) == Detection(
        "utf-8", 1.0, 256, "ASCII only: no byte above 7F"
    )
    assert detect(data).encoding == "cp1252"


@pytest.mark.parametrize(
    "data",
    [
        gzip.compress(TEXTS["fr"].encode() * 20),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + random.Random(7).randbytes(3000),
        random.Random(8).randbytes(5000),
        bytes(range(256)) * 4,
    ],
    ids=["gzip", "png", "random", "every-byte"],
)
def test_binary_is_not_text(data: bytes) -> None:
    found = detect(data)
    assert found.encoding is None, found.reason
    assert not found.is_text


def test_memory_is_bounded_by_the_lookahead_over_100_mb() -> None:
    detector = EncodingDetector(max_lookahead=65536)
    chunk = (b"a log line with nothing but ASCII\n" * 2000)[:60000]
    found = None
    for _ in range(100_000_000 // len(chunk)):
        found = detector.feed(chunk) or found
        assert detector.looked_at <= 65536
        assert len(detector.buffered()) <= 65536
    assert found == Detection("utf-8", 1.0, 65536, "ASCII only: no byte above 7F")


def test_a_decision_is_final() -> None:
    detector = EncodingDetector(max_lookahead=64)
    first = detector.feed(b"x" * 100)
    assert first is not None
    assert detector.feed(b"\xff\xfe") is first
    assert detector.finish() is first


def test_a_lookahead_below_four_bytes_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 4"):
        EncodingDetector(3)


@settings(max_examples=examples(200))
@given(
    text=st.text(
        st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=200
    ),
    runs=st.lists(st.tuples(st.integers(0, 400), st.integers(4, 300)), min_size=1, max_size=4),
)
def test_text_padded_with_nul_runs_is_utf8(text: str, runs: list[tuple[int, int]]) -> None:
    # Runs of four NULs or more (a log after a crash, a preallocated file) are in no UTF-16
    # or UTF-32 text: the text around them decides.
    data = text.encode()
    for at, length in runs:
        at = min(at, len(data))
        while 0 < at < len(data) and (data[at] & 0xC0) == 0x80:
            at -= 1  # a run between characters, as a writer's padding is
        data = data[:at] + b"\x00" * length + data[at:]
    assert detect(data).encoding == "utf-8"


def test_a_crashed_log_padded_with_nul_bytes_is_utf8() -> None:
    log = "2026-11-29 10:00:01 démarré\n2026-11-29 10:00:02 working\n".encode()
    assert detect(log + b"\x00" * 4096).encoding == "utf-8"
    assert detect(b"started\nworking\n" + b"\x00" * 100).encoding == "utf-8"
