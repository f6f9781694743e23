"""The encoding-detection benchmark's harness: its corpus and its scoring rule.

The corpus is made here from translation catalogues this test writes (so the figures do
not hang on what a machine has installed), plus the bytes every Python has; the scoring
rule is checked on cases worked out by hand, and on stand-in detectors whose score is
counted by hand.
"""

from __future__ import annotations

import codecs
import json
import random
import struct
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _detect_corpus as corpus
import bench_detect
from _detect_corpus import Sample

WORDS = {
    "ru": "привет мир файл каталог ошибка строка запись чтение открыть закрыть",
    # Every word has a letter KOI8-R lacks (і, ї, є, ґ).
    "uk": "їжак ґанок відкрити місто ліс їхати є ґудзик вітер хліб",
    "ja": "ファイル 開く 閉じる 読み込み 書き込み 設定 表示 検索 日本語 文字",
    "fr": "fichier ouvrir fermer écrire lire réglages affiché créé déjà où",
    "el": "αρχείο άνοιγμα κλείσιμο ανάγνωση εγγραφή ρυθμίσεις εμφάνιση",
}


def _messages(language: str, count: int) -> list[tuple[str, str]]:
    rnd = random.Random(language)
    return [
        (f"message {i}", " ".join(rnd.sample(WORDS[language].split(), 5))) for i in range(count)
    ]


def write_mo(path: Path, pairs: list[tuple[str, str]]) -> None:
    """A GNU catalogue (little-endian, no hash table), written to the format's spec."""
    entries = [(b"", b"Content-Type: text/plain; charset=UTF-8\n")]
    entries += [(e.encode(), t.encode()) for e, t in sorted(pairs)]
    count = len(entries)
    originals, translations = 28, 28 + 8 * count
    offset = 28 + 16 * count
    tables = [b"", b""]
    blob = b""
    for column in (0, 1):
        for entry in entries:
            text = entry[column]
            tables[column] += struct.pack("<II", len(text), offset + len(blob))
            blob += text + b"\0"
    header = struct.pack("<7I", 0x950412DE, 0, count, originals, translations, 0, offset)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + tables[0] + tables[1] + blob)


@pytest.fixture(scope="module")
def locale_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("locale")
    for language in WORDS:
        write_mo(root / language / "LC_MESSAGES" / "coreutils.mo", _messages(language, 60))
        write_mo(root / language / "LC_MESSAGES" / "grep.mo", _messages(language, 45)[20:])
    return root


@pytest.fixture(scope="module")
def samples(locale_dir: Path) -> list[Sample]:
    return corpus.build(locale_dir)


def test_catalogue_round_trip(tmp_path: Path) -> None:
    pairs = [("Open", "Открыть"), ("%d file\0%d files", "%d файл\0%d файла")]
    write_mo(tmp_path / "x.mo", pairs)
    assert sorted(corpus.read_mo((tmp_path / "x.mo").read_bytes())) == sorted(
        [("Open", "Открыть"), ("%d file", "%d файл"), ("%d file", "%d файла")]
    )
    assert corpus.read_mo(b"not a catalogue at all, just some bytes") == []


def test_corpus_is_deterministic(locale_dir: Path, samples: list[Sample]) -> None:
    again = corpus.build(locale_dir)
    assert [(s.name, s.label, s.data) for s in again] == [
        (s.name, s.label, s.data) for s in samples
    ]
    assert len({s.name for s in samples}) == len(samples)


def test_every_file_decodes_with_its_label(samples: list[Sample]) -> None:
    for s in samples:
        if s.label is None:
            continue
        assert s.label == codecs.lookup(s.label).name
        text = s.data.decode(s.label)
        if s.shape != "real":
            # What the encoding cannot hold is left out, never replaced (the words this
            # test wrote have no "?").
            assert "?" not in text and "\ufffd" not in text, s.name
        assert text.strip(), s.name
    assert all(s.label is None for s in samples if s.shape == "binary")


def test_corpus_covers_the_encodings_of_each_language(samples: list[Sample]) -> None:
    def labels(language: str) -> set[str | None]:
        return {s.label for s in samples if s.language == language}

    assert {"utf-8", "cp1251", "koi8-r", "iso8859-5"} <= labels("ru")
    assert {"shift_jis", "cp932", "euc_jp", "iso2022_jp"} <= labels("ja")
    assert {"iso8859-1", "cp1252", "mac-roman"} <= labels("fr")
    assert {"iso8859-7", "cp1253"} <= labels("el")
    # Ukrainian's letters are in cp1251, and not in KOI8-R: none of its texts is there.
    assert "cp1251" in labels("uk") and "koi8-r" not in labels("uk")
    assert {s.shape for s in samples} >= {"line", "doc", "log", "csv", "html", "mixed"}
    assert {s.split for s in samples} == {"dev", "held-out"}
    marked = [s for s in samples if s.label in ("utf-16", "utf-32", "utf-8-sig")]
    marks = {
        "utf-8-sig": (codecs.BOM_UTF8,),
        "utf-16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE),
        "utf-32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE),
    }
    assert marked and all(s.data.startswith(marks[str(s.label)]) for s in marked)


def test_written_corpus_loads_and_checks_itself(tmp_path: Path, samples: list[Sample]) -> None:
    part = samples[::25]
    corpus.write(part, tmp_path)
    assert corpus.load(tmp_path) == part
    (tmp_path / "files" / part[0].name).write_bytes(b"changed")
    assert corpus.load(tmp_path) is None
    assert corpus.load(tmp_path / "absent") is None


CAFE = "café crème, déjà".encode("cp1252")
WAVE = "〜テスト".encode("shift_jis")  # U+301C: cp932 reads these bytes as U+FF5E


@pytest.mark.parametrize(
    ("data", "label", "guess", "final", "right"),
    [
        (CAFE, "cp1252", "cp1252", True, True),
        (CAFE, "cp1252", "iso8859-1", True, True),  # no byte in 0x80-0x9F
        ("€ 5".encode("cp1252"), "cp1252", "iso8859-1", True, False),
        (CAFE, "cp1252", "utf-8", True, False),
        (CAFE, "cp1252", "mac-roman", True, False),
        (b"plain ASCII", "cp1252", "ascii", True, True),
        (b"plain ASCII", "koi8-r", "utf-8", True, True),
        ("中文编码".encode("gbk"), "gbk", "gb18030", True, True),
        ("한국어".encode("euc_kr"), "euc_kr", "cp949", True, True),
        ("日本語".encode("shift_jis"), "shift_jis", "cp932", True, True),
        (WAVE, "shift_jis", "cp932", True, False),
        (codecs.BOM_UTF16_LE + "été".encode("utf-16-le"), "utf-16", "utf-16-le", True, True),
        (codecs.BOM_UTF16_LE + "été".encode("utf-16-le"), "utf-16", "utf-16-be", True, False),
        ("été".encode("utf-16-be"), "utf-16-be", "utf-16-le", True, False),
        (b"\x89PNG\r\n\x1a\n", None, None, True, True),
        (b"\x89PNG\r\n\x1a\n", None, "cp1252", True, False),
        (CAFE, "cp1252", None, True, False),
        (CAFE, "cp1252", "no-such-codec", True, False),
        (b"caf", "cp1252", "base64", True, False),  # a codec, but not of text
        # A prefix cut inside a character: compared up to the last whole one.
        ("naïve".encode()[:3], "utf-8", "ascii", False, True),
        ("naïve".encode()[:4], "utf-8", "ascii", False, False),
        ("日本".encode("euc_jp")[:3], "euc_jp", "shift_jis", False, False),
        ("été".encode("utf-16-le")[:5], "utf-16-le", "utf-16-le", False, True),
    ],
)
def test_rule(data: bytes, label: str | None, guess: str | None, final: bool, right: bool) -> None:
    assert bench_detect.is_right(data, label, guess, final) is right


def _sample(name: str, label: str | None, data: bytes) -> Sample:
    return Sample(name, label, "-", "line", "dev", "test", data)


def test_stand_in_detectors_score_as_counted() -> None:
    samples = [
        _sample("ascii", "cp1252", b"x" * 300),
        _sample("late", "cp1252", b"x" * 300 + "é".encode("cp1252")),
        _sample("utf8", "utf-8", "é".encode() * 100),
        _sample("bin", None, bytes(range(256))),
    ]
    prefixes = (64, None)

    def always_utf8(data: bytes) -> str | None:
        return "utf-8"

    result = bench_detect.score(samples, always_utf8, prefixes)
    # At 64 B: "ascii", "late" (its é is past the prefix) and "utf8" right; "bin" wrong.
    assert result[("all", 64)] == (3, 4)
    # Whole: "late"'s é is no UTF-8, "bin" is not text.
    assert result[("all", None)] == (2, 4)
    assert result[("western", 64)] == (2, 2) and result[("western", None)] == (1, 2)
    assert result[("not text", None)] == (0, 1)
    assert result[("all dev", None)] == (2, 4) and ("all held-out", None) not in result

    labels = {s.data: s.label for s in samples}
    seen: list[int] = []

    def oracle(data: bytes) -> str | None:
        seen.append(len(data))
        return next(label for whole, label in labels.items() if whole.startswith(data))

    result = bench_detect.score(samples, oracle, prefixes)
    assert result[("all", 64)] == (4, 4) and result[("all", None)] == (4, 4)
    # Each detector is handed the prefix, or the whole file where it is shorter.
    assert sorted(seen) == sorted([64, 300, 64, 301, 64, 200, 64, 256])


class _Detection:
    def __init__(self, encoding: str | None) -> None:
        self.encoding = encoding


def _stand_in_module(calls: list[int]) -> types.ModuleType:
    """``utf8stream.detect`` as the benchmark calls it, answering UTF-8 for text that
    decodes as UTF-8 and "not text" for any NUL byte: a stand-in for the detector."""
    module = types.ModuleType("utf8stream.detect")

    def detect(data: bytes, max_lookahead: int = 65536) -> _Detection:
        calls.append(max_lookahead)
        if b"\0" in data[:max_lookahead]:
            return _Detection(None)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return _Detection("cp1252")
        return _Detection("utf-8")

    module.detect = detect  # type: ignore[attr-defined]
    return module


def test_benchmark_runs_on_a_stand_in_detector(
    tmp_path: Path,
    samples: list[Sample],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls: list[int] = []
    monkeypatch.setitem(sys.modules, "utf8stream.detect", _stand_in_module(calls))
    part = [s for s in samples if s.language in ("fr", "-")][::3]
    corpus.write(part, tmp_path)
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_detect.py"])
    arguments = ["--corpus", str(tmp_path), "--detectors", "utf8stream", "--repeat", "1"]
    bench_detect.main([*arguments, "--max-lookahead", "4096", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert set(calls) == {4096}
    rows = {(r["table"], r.get("family")): r for r in document["rows"]}
    assert rows[("detect-accuracy", "all")]["files"] == len(part)
    # The stand-in is right on every UTF-8 file and every binary one with a NUL in its
    # first 4 KiB, and wrong on mac_roman text (it answers cp1252).
    assert rows[("detect-accuracy", "utf-8")]["whole"] == 100.0
    assert rows[("detect-accuracy", "western")]["whole"] < 100.0
    assert {r["inputs"] for r in document["rows"] if r["table"] == "detect-throughput"} == {
        "whole",
        "4 KiB",
    }


def test_confusions_count_the_wrong_answers() -> None:
    samples = [
        _sample("a", "cp1252", "déjà".encode("cp1252")),
        _sample("b", "mac-roman", "déjà".encode("mac_roman")),
        _sample("c", "mac-roman", "été".encode("mac_roman")),
        _sample("d", None, b"\0\1\2"),
    ]

    def cp1252(data: bytes) -> str | None:
        return "windows-1252"

    assert bench_detect.confusions(samples, cp1252) == {
        ("mac-roman", "cp1252"): 2,
        (None, "cp1252"): 1,
    }


def test_score_by_shape() -> None:
    samples = [
        Sample("l", "cp1252", "-", "line", "dev", "test", "déjà".encode("cp1252")),
        Sample("d", "cp1252", "-", "doc", "held-out", "test", "été".encode("cp1252")),
        Sample("m", "mac-roman", "-", "doc", "held-out", "test", "été".encode("mac_roman")),
    ]

    def cp1252(data: bytes) -> str | None:
        return "cp1252"

    result = bench_detect.score(samples, cp1252, (None,), by="shape")
    assert result == {
        ("line", None): (1, 1),
        ("doc", None): (1, 2),
        ("all", None): (2, 3),
        ("all dev", None): (1, 1),
        ("all held-out", None): (1, 2),
    }
