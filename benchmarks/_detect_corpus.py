"""The labelled corpus of encoding detection (benchmarks/bench_detect.py), made here.

    .venv/bin/python benchmarks/_detect_corpus.py [--corpus DIR] [--force]

writes it into ``DIR`` (default ``~/.cache/utf8stream-detect-corpus``): one file per
sample under ``files/`` and ``manifest.json`` (name, label, language, shape, split,
source, size and SHA-256 of each), then prints a summary.  Nothing of it is committed: it
is made again, byte for byte the same, from what this machine has (the same Python and
the same Debian packages give the same corpus; ``manifest.json`` carries a fingerprint of
the whole).

**Label**: the codec the text was encoded to, as ``codecs.lookup(name).name``, or
``None`` for a file that is not text.  A text the encoding cannot represent
(``errors="strict"`` fails) is skipped, never degraded: a document in an encoding is made
of the messages that encoding holds whole.

**Sources**, none of them the detector's model data (which is built from the ``wordfreq``
package's word frequencies; nothing here comes from wordfreq):

* The translation catalogues (``.mo``) of installed Debian packages, under
  ``/usr/share/locale/LANG/LC_MESSAGES/DOMAIN.mo``: the translated messages (``msgstr``)
  of a fixed list of domains, each under its package's licence (``COPYRIGHT`` below;
  ``/usr/share/doc/PACKAGE/copyright`` on the machine).  Used on this machine to measure,
  never copied into the project.
* CPython's own test data (``Lib/test``; PSF License 2.0): the CJK test documents in
  their original encodings (``cjkencodings/``), two source files in latin-1 and KOI8-R
  (``encoded_modules/``), an XML document (``xmltestdata/test.xml``), and, labelled not
  text, its images (``imghdrdata/``) and sounds (``audiodata/``).
* Bytes this machine already holds or makes, labelled not text: the Python executable,
  ``libpython`` and extension modules (machine code), a ``.pyc``, a SQLite database,
  compressed data (zlib, gzip, bzip2, xz, zip) of the corpus's own text, random bytes.

**Shapes** made from the catalogues, per language and encoding: ``line`` (one to three
messages with a non-ASCII character, one line), ``doc`` (a long document: messages as
paragraphs, 1 to 96 KiB of UTF-8),
``log`` (timestamped lines of ASCII keys and English messages, a few translated words
among them), ``csv`` (an export: id, English, translation), ``html`` (a page, with no
charset declared), ``mixed`` (several scripts in one document: three languages in the
Unicode encodings; Japanese, Chinese or Korean with Russian or Greek in the CJK
encodings, which hold both); CPython's documents are ``real``, the bytes ``binary``.
Every shape is made in the legacy encodings (the hard cases, several times over for the
languages of few encodings: ``REPEATS``); two lines, a document and one of log, CSV and
HTML in UTF-8; a line and a document in the other Unicode forms (two per language, in
turn: ``UNICODE_FORMS``).

**Split**: the domains are in two fixed groups.  ``held-out`` is every sample of the
``HELD_OUT`` domains, all of CPython's documents and all binary files; ``dev`` the rest.
Whoever tunes a detector looks at the ``dev`` figures only; the ``held-out`` figures are
those it was never tuned on (``bench_detect.py --split held-out``).
"""

from __future__ import annotations

import argparse
import bz2
import codecs
import gzip
import hashlib
import io
import json
import lzma
import marshal
import random
import sqlite3
import struct
import sys
import sysconfig
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

VERSION = 1
DEFAULT_DIR = Path.home() / ".cache" / "utf8stream-detect-corpus"
LOCALE_DIR = Path("/usr/share/locale")
CPYTHON_TEST = Path(sysconfig.get_paths()["stdlib"]) / "test"

# Debian domain -> (package, licence), from /usr/share/doc/PACKAGE/copyright.
COPYRIGHT = {
    "coreutils": ("coreutils", "GPL-3+"),
    "glib20": ("libglib2.0-data", "LGPL-2.1+"),
    "gtk20": ("libgtk2.0-common", "LGPL-2+"),
    "iso_3166-1": ("iso-codes", "LGPL-2.1+"),
    "libapt-pkg6.0": ("libapt-pkg6.0", "GPL-2+"),
    "PackageKit": ("packagekit", "GPL-2+"),
    "appstream": ("appstream", "LGPL-2.1+"),
    "grep": ("grep", "GPL-3+"),
    "gtk20-properties": ("libgtk2.0-common", "LGPL-2+"),
    "gdk-pixbuf": ("libgdk-pixbuf2.0-common", "LGPL-2+"),
    "gstreamer-1.0": ("libgstreamer1.0-0", "LGPL-2+"),
    "Linux-PAM": ("libpam-runtime", "BSD-3-clause or GPL"),
    "software-properties": ("software-properties-common", "GPL-2+"),
    "python-apt": ("python-apt-common", "GPL-2+"),
    "iso_639-2": ("iso-codes", "LGPL-2.1+"),
}
HELD_OUT = frozenset(
    {
        "grep",
        "gtk20-properties",
        "gdk-pixbuf",
        "gstreamer-1.0",
        "Linux-PAM",
        "software-properties",
        "python-apt",
        "iso_639-2",
    }
)
SPLITS = ("dev", "held-out")

_WESTERN = ("cp1252", "latin-1", "mac_roman")
_CENTRAL = ("cp1250", "iso8859-2")
_CYRILLIC = ("cp1251", "koi8-r", "iso8859-5")
# Catalogue language -> the legacy encodings its text is met in.
LEGACY: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("af", "ca", "da", "de", "es", "eu", "fi", "fr", "ga", "gl", "id", "is", "it"),
        _WESTERN,
    ),
    **dict.fromkeys(("ms", "nb", "nl", "nn", "pt", "pt_BR", "sv"), _WESTERN),
    **dict.fromkeys(("cs", "hr", "hu", "pl", "ro", "sk", "sl", "sr@latin"), _CENTRAL),
    **dict.fromkeys(("be", "bg", "mk", "ru", "sr", "uk"), _CYRILLIC),
    "el": ("iso8859-7", "cp1253"),
    "tr": ("cp1254",),
    "he": ("cp1255",),
    **dict.fromkeys(("ar", "fa", "ur"), ("cp1256",)),
    **dict.fromkeys(("et", "lt", "lv"), ("cp1257",)),
    "ja": ("shift_jis", "cp932", "euc_jp", "iso2022_jp"),
    "zh_CN": ("gb18030", "gbk"),
    "zh_TW": ("big5",),
    "ko": ("euc_kr", "cp949"),
}
# The Unicode encodings as written: (label, byte-order mark or b"", codec of the rest).
UNICODE_FORMS = (
    ("utf-16-le", b"", "utf-16-le"),
    ("utf-16-be", b"", "utf-16-be"),
    ("utf-16", codecs.BOM_UTF16_LE, "utf-16-le"),
    ("utf-16", codecs.BOM_UTF16_BE, "utf-16-be"),
    ("utf-32-le", b"", "utf-32-le"),
    ("utf-32-be", b"", "utf-32-be"),
    ("utf-32", codecs.BOM_UTF32_LE, "utf-32-le"),
    ("utf-32", codecs.BOM_UTF32_BE, "utf-32-be"),
    ("utf-8-sig", codecs.BOM_UTF8, "utf-8"),
)
# A CJK encoding's second script (JIS X 0208, GB 2312, KS X 1001 and Big5 hold both).
MIXED_PARTNERS = {"ja": ("ru", "el"), "zh_CN": ("ru", "el"), "zh_TW": ("ru",), "ko": ("ru",)}


@dataclass(frozen=True)
class Sample:
    name: str  # the path under files/, unique
    label: str | None  # codecs.lookup(...).name, or None: not text
    language: str  # catalogue language(s) joined by "+", "-" for binary
    shape: str
    split: str
    source: str
    data: bytes


def normalise(name: str | None) -> str | None:
    """A codec name as ``codecs.lookup`` names it; an unknown name is kept as given."""
    if name is None:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name


def family(label: str | None) -> str:
    """The group a label is reported in."""
    if label is None:
        return "not text"
    for name, members in FAMILIES:
        if label in members:
            return name
    return "other"


FAMILIES = (
    ("utf-8", {"utf-8", "utf-8-sig"}),
    ("utf-16/32", {normalise(f[0]) for f in UNICODE_FORMS if f[0] != "utf-8-sig"}),
    ("western", {normalise(e) for e in _WESTERN}),
    ("central european", {normalise(e) for e in _CENTRAL}),
    ("cyrillic", {normalise(e) for e in _CYRILLIC}),
    ("greek", {normalise("iso8859-7"), normalise("cp1253")}),
    (
        "turkish/hebrew/arabic/baltic",
        {normalise(e) for e in ("cp1254", "cp1255", "cp1256")} | {normalise("cp1257")},
    ),
    ("japanese", {normalise(e) for e in LEGACY["ja"]}),
    ("chinese", {normalise(e) for e in ("gb18030", "gbk", "gb2312", "big5")}),
    ("korean", {normalise(e) for e in LEGACY["ko"]}),
)


# --- the translation catalogues ------------------------------------------------------


def read_mo(data: bytes) -> list[tuple[str, str]]:
    """The (English, translation) pairs of a GNU ``.mo`` catalogue, plural forms as
    separate pairs; ``[]`` for what is not one."""
    if len(data) < 28:
        return []
    for order in ("<", ">"):
        if struct.unpack(order + "I", data[:4])[0] == 0x950412DE:
            break
    else:
        return []
    count, originals, translations = struct.unpack(order + "III", data[8:20])
    entries: list[tuple[bytes, bytes]] = []
    for i in range(count):
        olen, ooff = struct.unpack(order + "II", data[originals + 8 * i : originals + 8 * i + 8])
        tlen, toff = struct.unpack(
            order + "II", data[translations + 8 * i : translations + 8 * i + 8]
        )
        entries.append((data[ooff : ooff + olen], data[toff : toff + tlen]))
    charset = "utf-8"
    for original, translated in entries:
        if original == b"" and b"charset=" in translated:
            charset = translated.split(b"charset=")[1].split()[0].decode("ascii", "replace")
    pairs: list[tuple[str, str]] = []
    for original, translated in entries:
        if not original:
            continue
        try:
            english = original.split(b"\x04")[-1].split(b"\0")[0].decode(charset)
            forms = translated.decode(charset).split("\0")
        except (UnicodeDecodeError, LookupError):
            continue
        pairs.extend((english, form.strip()) for form in forms if form.strip())
    return pairs


def catalogues(locale_dir: Path) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(language, split) -> the (English, translation) pairs of that split's domains,
    in a fixed order, without repeats; English catalogues left out."""
    pools: dict[tuple[str, str], list[tuple[str, str]]] = {}
    seen: dict[tuple[str, str], set[str]] = {}
    for domain in sorted(COPYRIGHT):
        split = "held-out" if domain in HELD_OUT else "dev"
        for path in sorted(locale_dir.glob(f"*/LC_MESSAGES/{domain}.mo")):
            language = path.parent.parent.name
            if language == "en" or language.startswith(("en_", "en@")):
                continue
            key = (language, split)
            known = seen.setdefault(key, set())
            pool = pools.setdefault(key, [])
            for english, translated in read_mo(path.read_bytes()):
                if translated not in known and translated != english:
                    known.add(translated)
                    pool.append((english, translated))
    return pools


# --- the shapes ----------------------------------------------------------------------


def _fits(text: str, codec: str) -> bool:
    try:
        text.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def _non_ascii(text: str) -> bool:
    return not text.isascii()


def _take(pairs: list[tuple[str, str]], codec: str, rnd: random.Random) -> Iterator[str]:
    """The translations the codec holds, in a random order."""
    order = list(range(len(pairs)))
    rnd.shuffle(order)
    return (pairs[i][1] for i in order if _fits(pairs[i][1], codec))


def _fill(texts: Iterable[str], size: int, sep: str) -> str:
    out: list[str] = []
    total = 0
    for text in texts:
        out.append(text)
        total += len(text.encode("utf-8")) + len(sep)
        if total >= size:
            break
    return sep.join(out) + "\n" if out else ""


def shape_line(pairs: list[tuple[str, str]], codec: str, rnd: random.Random) -> str:
    texts = [t for t in _take(pairs, codec, rnd) if _non_ascii(t) and "\n" not in t]
    return " ".join(texts[: rnd.randint(1, 3)]) + "\n" if texts else ""


def shape_doc(pairs: list[tuple[str, str]], codec: str, rnd: random.Random) -> str:
    size = rnd.choice((1024, 4096, 16384, 49152, 98304))
    return _fill(_take(pairs, codec, rnd), size, "\n\n")


def shape_log(pairs: list[tuple[str, str]], codec: str, rnd: random.Random) -> str:
    words = [w for t in _take(pairs, codec, rnd) for w in t.split() if _non_ascii(w)][:200]
    if not words:
        return ""
    lines = []
    seconds = rnd.randrange(86400 * 365)
    for i in range(rnd.choice((40, 120, 300))):
        seconds += rnd.randrange(1, 90)
        day, rest = divmod(seconds, 86400)
        english = pairs[rnd.randrange(len(pairs))][0].replace("\n", " ")[:100]
        message = english.encode("ascii", "ignore").decode()
        if rnd.random() < 0.15:
            message += " " + rnd.choice(words)
        level = rnd.choice(("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"))
        lines.append(
            f"2026-{1 + day // 31 % 12:02d}-{1 + day % 28:02d}T{rest // 3600:02d}:"
            f"{rest // 60 % 60:02d}:{rest % 60:02d}.{i % 1000:03d}Z {level:5} "
            f'host=node{rnd.randrange(12)} pid={rnd.randrange(100, 32768)} msg="{message}"\n'
        )
    return "".join(lines)


def shape_csv(pairs: list[tuple[str, str]], codec: str, rnd: random.Random) -> str:
    order = list(range(len(pairs)))
    rnd.shuffle(order)
    rows = ["id;english;translation"]
    total = 0
    for i in order:
        english, translated = pairs[i]
        if not _fits(english + translated, codec):
            continue
        row = ";".join(
            [str(i), *('"' + s.replace('"', '""').replace("\n", " ") + '"' for s in pairs[i])]
        )
        rows.append(row)
        total += len(row)
        if total > rnd.choice((2048, 8192, 24576)):
            break
    return "\r\n".join(rows) + "\r\n" if len(rows) > 1 else ""


def shape_html(pairs: list[tuple[str, str]], codec: str, rnd: random.Random, language: str) -> str:
    body = _fill(_take(pairs, codec, rnd), rnd.choice((2048, 8192, 24576)), "\0")
    if not body:
        return ""
    paragraphs = "".join(f'  <p class="msg">{p}</p>\n' for p in body.strip().split("\0"))
    lang = language.split("@")[0].replace("_", "-")
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<title>Messages</title>\n'
        '<link rel="stylesheet" href="/static/site.css">\n</head>\n<body>\n'
        f'<div id="content">\n{paragraphs}</div>\n</body>\n</html>\n'
    )


def shape_mixed(pools: list[list[tuple[str, str]]], codec: str, rnd: random.Random) -> str:
    takers = [_take(pool, codec, rnd) for pool in pools]
    out: list[str] = []
    total = 0
    size = rnd.choice((1024, 4096, 16384))
    while total < size and takers:
        taker = takers[len(out) % len(takers)]
        text = next(taker, None)
        if text is None:
            takers.remove(taker)
            continue
        out.append(text)
        total += len(text.encode("utf-8"))
    return "\n".join(out) + "\n" if len(pools) == len(takers) or total >= size else ""


# --- the samples ---------------------------------------------------------------------


ROTATING = ("log", "csv", "html")
# The languages of a few encodings only get more samples in them, so that each encoding
# counts dozens of files.
REPEATS = {"ja": 3, "zh_CN": 3, "zh_TW": 4, "ko": 4, "el": 3, "tr": 4, "he": 4}


def _shapes(label: str, index: int) -> tuple[str, ...]:
    """The shapes made in an encoding: every one in the legacy encodings, which are the
    hard cases; two lines, a document and one of the others (in turn) in UTF-8; a line
    and a document in the other Unicode forms."""
    if label.startswith(("utf-16", "utf-32", "utf-8-sig")):
        return ("line", "doc")
    if label == "utf-8":
        return ("line", "line", "doc", ROTATING[index % len(ROTATING)])
    return ("line", "line", "doc", *ROTATING)


def _make(
    shape: str, pairs: list[tuple[str, str]], codec: str, rnd: random.Random, language: str
) -> str:
    if shape == "html":
        return shape_html(pairs, codec, rnd, language)
    return SHAPE_MAKERS[shape](pairs, codec, rnd)


def _encode(text: str, form: tuple[str, bytes, str]) -> bytes:
    return form[1] + text.encode(form[2])


def made_samples(locale_dir: Path) -> list[Sample]:
    """The samples made from the catalogues: every language in UTF-8, one of the other
    Unicode forms in turn, the legacy encodings of ``LEGACY``; every shape in each."""
    pools = catalogues(locale_dir)
    languages = sorted({language for language, _ in pools})
    samples: list[Sample] = []
    for index, language in enumerate(languages):
        forms = [(e, b"", e) for e in ("utf-8", *LEGACY.get(language, ()))]
        forms.append(UNICODE_FORMS[index % len(UNICODE_FORMS)])
        forms.append(UNICODE_FORMS[(index + 4) % len(UNICODE_FORMS)])
        for split in SPLITS:
            pairs = pools.get((language, split), [])
            if sum(len(t) for _, t in pairs) < 1024:
                continue
            source = f"debian catalogues ({split})"
            for form in forms:
                repeats = REPEATS.get(language, 1) if form[0] in LEGACY.get(language, ()) else 1
                for n, shape in enumerate(_shapes(form[0], index) * repeats):
                    seed = f"{VERSION}/{language}/{form[0]}/{form[1]!r}/{split}/{n}"
                    text = _make(shape, pairs, form[2], random.Random(seed), language)
                    if text:
                        mark = "-bom" if form[1] else ""
                        samples.append(
                            Sample(
                                f"{split}/{language}/{shape}{n}-{form[2]}{mark}.txt",
                                normalise(form[0]),
                                language,
                                shape,
                                split,
                                source,
                                _encode(text, form),
                            )
                        )
    samples.extend(mixed_samples(pools, languages))
    return samples


SHAPE_MAKERS = {"line": shape_line, "doc": shape_doc, "log": shape_log, "csv": shape_csv}


def mixed_samples(
    pools: dict[tuple[str, str], list[tuple[str, str]]], languages: list[str]
) -> list[Sample]:
    """Several scripts in one document: CJK with Cyrillic or Greek in the CJK encodings,
    and three languages of different scripts in the Unicode encodings."""
    samples = []
    triples = [("ru", "ja", "el"), ("ar", "hi", "fr"), ("zh_CN", "ko", "de"), ("he", "th", "uk")]
    jobs: list[tuple[tuple[str, ...], tuple[str, bytes, str]]] = []
    for cjk, partners in MIXED_PARTNERS.items():
        for partner in partners:
            jobs.extend(((cjk, partner), (e, b"", e)) for e in LEGACY[cjk])
    for i, triple in enumerate(triples):
        jobs.append((triple, ("utf-8", b"", "utf-8")))
        jobs.append((triple, UNICODE_FORMS[(2 * i) % len(UNICODE_FORMS)]))
    for split in SPLITS:
        for mix, form in jobs:
            chosen = [pools.get((language, split), []) for language in mix]
            if not all(chosen) or not set(mix) <= set(languages):
                continue
            rnd = random.Random(f"{VERSION}/mixed/{'+'.join(mix)}/{form[0]}/{form[1]!r}/{split}")
            text = shape_mixed(chosen, form[2], rnd)
            if text:
                mark = "-bom" if form[1] else ""
                samples.append(
                    Sample(
                        f"{split}/{'+'.join(mix)}/mixed-{form[2]}{mark}.txt",
                        normalise(form[0]),
                        "+".join(mix),
                        "mixed",
                        split,
                        "debian",
                        _encode(text, form),
                    )
                )
    return samples


# CPython's test documents whose encoding is one of the candidates (or a subset of one).
CPYTHON_DOCUMENTS = {
    **{
        f"cjkencodings/{name}.txt": name
        for name in ("big5", "cp949", "euc_jp", "euc_kr", "gb18030", "gb2312", "gbk")
    },
    "cjkencodings/iso2022_jp.txt": "iso2022_jp",
    "cjkencodings/shift_jis.txt": "shift_jis",
    **{
        f"cjkencodings/{name}-utf8.txt": "utf-8"
        for name in ("big5", "cp949", "euc_jp", "gb18030", "iso2022_jp", "shift_jis")
    },
    "encoded_modules/module_iso_8859_1.py": "latin-1",
    "encoded_modules/module_koi8_r.py": "koi8-r",
    "xmltestdata/test.xml": "latin-1",
}
CPYTHON_BINARIES = (
    *(f"imghdrdata/python.{ext}" for ext in ("png", "gif", "jpg", "bmp", "tiff", "webp")),
    *(f"audiodata/pluck-{kind}" for kind in ("pcm8.wav", "pcm24.wav", "alaw.aifc", "ulaw.au")),
)


def cpython_samples(test_dir: Path) -> list[Sample]:
    """CPython's test documents as they are shipped (``real``) and its images and sounds
    (``binary``); what this Python does not ship is left out."""
    samples = []
    for relative, label in CPYTHON_DOCUMENTS.items():
        path = test_dir / relative
        if path.is_file():
            data = path.read_bytes()
            data.decode(label)
            samples.append(
                Sample(
                    f"held-out/cpython/{relative}",
                    normalise(label),
                    "-",
                    "real",
                    "held-out",
                    "cpython:Lib/test",
                    data,
                )
            )
    for relative in CPYTHON_BINARIES:
        path = test_dir / relative
        if path.is_file():
            samples.append(_binary(f"cpython/{relative}", "cpython:Lib/test", path.read_bytes()))
    return samples


def _binary(name: str, source: str, data: bytes) -> Sample:
    return Sample(f"held-out/binary/{name}", None, "-", "binary", "held-out", source, data)


def machine_binaries() -> list[Sample]:
    """Machine code (the interpreter, extension modules), a ``.pyc``, a SQLite file."""
    samples = []
    executable = Path(sys.executable).resolve()
    samples.append(_binary("python-executable", "machine code", executable.read_bytes()[:262144]))
    library = Path(str(sysconfig.get_config_var("LIBDIR"))) / str(
        sysconfig.get_config_var("LDLIBRARY")
    )
    if library.is_file():
        data = library.read_bytes()
        samples.append(_binary("libpython", "machine code", data[:262144]))
        samples.append(
            _binary("libpython-middle", "machine code", data[len(data) // 2 :][:262144])
        )
    modules = sorted(Path(str(sysconfig.get_config_var("DESTSHARED"))).glob("*.so"))
    for path in modules[:: max(1, len(modules) // 8)]:
        data = path.read_bytes()
        samples.append(_binary(path.name, "machine code", data[:131072]))
        if len(data) > 65536:
            middle = data[len(data) // 2 :][:65536]
            samples.append(_binary(path.name + "-middle", "machine code", middle))
    code = compile(Path(codecs.__file__).read_text("utf-8"), "codecs.py", "exec")
    pyc = b"\xa7\x0d\x0d\x0a" + bytes(12) + marshal.dumps(code)
    samples.append(_binary("codecs.pyc", "marshal", pyc))
    with tempfile.TemporaryDirectory() as scratch:
        database = sqlite3.connect(Path(scratch) / "table.sqlite")
        database.execute("create table t (id integer primary key, name text, value real)")
        database.executemany(
            "insert into t (name, value) values (?, ?)",
            ((f"row {i}", i / 7) for i in range(2000)),
        )
        database.commit()
        database.close()
        samples.append(
            _binary("table.sqlite", "sqlite", (Path(scratch) / "table.sqlite").read_bytes())
        )
    return samples


def made_binaries(texts: dict[str, bytes]) -> list[Sample]:
    """Compressed forms of ``texts`` (the corpus's own) and random bytes."""
    forms: dict[str, bytes] = {}
    for name, text in texts.items():
        zipped = io.BytesIO()
        with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
            member = zipfile.ZipInfo(name + ".txt", (2026, 1, 1, 0, 0, 0))
            archive.writestr(member, text, zipfile.ZIP_DEFLATED)
        forms[name + ".zlib"] = zlib.compress(text, 9)
        forms[name + ".gz"] = gzip.compress(text, 9, mtime=0)
        forms[name + ".bz2"] = bz2.compress(text, 9)
        forms[name + ".xz"] = lzma.compress(text)
        forms[name + ".zip"] = zipped.getvalue()
    rnd = random.Random(f"{VERSION}/random")
    for size in (64, 256, 1024, 4096, 65536, 200000):
        forms[f"random-{size}"] = rnd.randbytes(size)
    return [_binary(name, "made", data) for name, data in forms.items()]


def build(locale_dir: Path = LOCALE_DIR, cpython_test: Path = CPYTHON_TEST) -> list[Sample]:
    """The whole corpus, in a fixed order."""
    samples = made_samples(locale_dir)
    samples.extend(cpython_samples(cpython_test))
    texts = {
        kind: b"".join(s.data for s in samples if s.shape == shape and s.label == label)
        for kind, shape, label in (
            ("utf-8-docs", "doc", "utf-8"),
            ("cp1251-docs", "doc", "cp1251"),
            ("utf-8-logs", "log", "utf-8"),
        )
    }
    samples.extend(made_binaries({k: v[: 1 << 20] for k, v in texts.items() if v}))
    samples.extend(machine_binaries())
    return samples


# --- on disk ---------------------------------------------------------------------------


def fingerprint(samples: Iterable[Sample]) -> str:
    digest = hashlib.sha256()
    for s in samples:
        digest.update(f"{s.name}\0{s.label}\0".encode())
        digest.update(hashlib.sha256(s.data).digest())
    return digest.hexdigest()


def write(samples: list[Sample], directory: Path) -> None:
    """The files and ``manifest.json``, the manifest last (a half-written corpus has
    none, and is made again)."""
    files = directory / "files"
    manifest = []
    for s in samples:
        path = files / s.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(s.data)
        manifest.append(
            {
                "name": s.name,
                "label": s.label,
                "language": s.language,
                "shape": s.shape,
                "split": s.split,
                "source": s.source,
                "size": len(s.data),
                "sha256": hashlib.sha256(s.data).hexdigest(),
            }
        )
    document = {"version": VERSION, "fingerprint": fingerprint(samples), "samples": manifest}
    temporary = directory / "manifest.json.part"
    temporary.write_text(json.dumps(document, indent=1, ensure_ascii=False), "utf-8")
    temporary.replace(directory / "manifest.json")


def load(directory: Path) -> list[Sample] | None:
    """The corpus written in ``directory``, or ``None`` where there is none of this
    version (or a file differs from its manifest)."""
    try:
        document = json.loads((directory / "manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if document.get("version") != VERSION:
        return None
    samples = []
    for entry in document["samples"]:
        try:
            data = (directory / "files" / entry["name"]).read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            return None
        samples.append(
            Sample(
                entry["name"],
                entry["label"],
                entry["language"],
                entry["shape"],
                entry["split"],
                entry["source"],
                data,
            )
        )
    return samples


def ensure(directory: Path, force: bool = False) -> list[Sample]:
    """The corpus in ``directory``, made there first if it is not."""
    samples = None if force else load(directory)
    if samples is None:
        samples = build()
        directory.mkdir(parents=True, exist_ok=True)
        write(samples, directory)
    return samples


def summary(samples: list[Sample]) -> str:
    languages = {lang for s in samples for lang in s.language.split("+") if lang != "-"}
    labels = {s.label for s in samples if s.label is not None}
    pairs = {(s.language, s.label) for s in samples if s.label is not None}
    lines = [
        f"{len(samples)} files, {sum(len(s.data) for s in samples):,} bytes;"
        f" {len(languages)} languages, {len(labels)} encodings,"
        f" {len(pairs)} language x encoding pairs;"
        f" {sum(s.label is None for s in samples)} not text",
        "fingerprint " + fingerprint(samples)[:16],
    ]
    for split in SPLITS:
        part = [s for s in samples if s.split == split]
        lines.append(f"  {split}: {len(part)} files, {sum(len(s.data) for s in part):,} bytes")
    for shape in sorted({s.shape for s in samples}):
        part = [s for s in samples if s.shape == shape]
        lines.append(f"  {shape}: {len(part)} files, {sum(len(s.data) for s in part):,} bytes")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_DIR, help="where to write it")
    parser.add_argument("--force", action="store_true", help="make it again even if present")
    args = parser.parse_args()
    print(summary(ensure(args.corpus, args.force)))


if __name__ == "__main__":
    main()
