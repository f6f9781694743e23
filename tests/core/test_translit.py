"""``ENC//TRANSLIT`` as glibc's iconv: the expectations are glibc's own output.

They were produced once by the real ``iconv -f utf-8 -t ascii//TRANSLIT`` (and
``latin1//TRANSLIT``: a target keeps the characters it has) and are committed as
literals; where iconv is on the machine, it is run again and must still agree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from utf8stream import transcode_file

ICONV = shutil.which("iconv")

# (input, glibc's iconv -t ascii//TRANSLIT, glibc's iconv -t latin1//TRANSLIT), run once
# with LC_ALL=C.UTF-8 (glibc 2.36; the C locale has no table for accented letters).
GLIBC = [
    ("Grüße — “x” €5 ™", 'Grusse -- "x" EUR5 (TM)', 'Grüße -- "x" EUR5 (TM)'),
    (
        "Œuvre, æther, Straße, façade, naïve, Ærø, Łódź, Đorđe, Þórr",
        "OEuvre, aether, Strasse, facade, naive, AEro, Lodz, Dorde, THorr",
        "OEuvre, æther, Straße, façade, naïve, Ærø, Lódz, Dorde, Þórr",
    ),
    (
        "‘single’ «guillemets» ‹one› „low“ – en — em … ellipsis • bullet",
        "'single' <<guillemets>> <one> ,,low\" - en -- em ... ellipsis o bullet",
        "'single' «guillemets» <one> ,,low\" - en -- em ... ellipsis o bullet",
    ),
    (
        "£10, ¥500, ₹20, ₩300, ₽7, ₺9, ¢50, € and ₠",
        "GBP10, JPY500, INR20, KRW300, RUB7, TL9, c50, EUR and CE",
        "£10, ¥500, INR20, KRW300, RUB7, TL9, ¢50, EUR and CE",
    ),
    (
        "© 2026 ® ™ ± × ÷ ¬ ¦ · ¡hola! ¿qué?",
        "(C) 2026 (R) (TM) +- x / ! | . !hola! ?que?",
        "© 2026 ® (TM) ± × ÷ ¬ ¦ · ¡hola! ¿qué?",
    ),
    (
        "½ ¼ ¾ ⅓ ⅞ fractions, ① ⑳ Ⓐ ⓩ circled",
        " 1/2   1/4   3/4   1/3   7/8  fractions, (1) (20) (A) (z) circled",
        "½ ¼ ¾  1/3   7/8  fractions, (1) (20) (A) (z) circled",
    ),
    (
        "ﬁ ﬂ ﬀ ﬃ ligatures, ｆｕｌｌ ｗｉｄｔｈ, ℃ ℉ № ℡ ㎏ ㎞",
        "fi fl ff ffi ligatures, full width, ? ? No TEL kg km",
        "fi fl ff ffi ligatures, full width, °C °F No TEL kg km",
    ),
    (
        "← → ↔ ⇒ ⇔ ≠ ≤ ≥ ≪ ≫ − ∗ ∕ ∖ ∣ ∥ ∼",
        "<- -> <-> => <=> != <= >= << >> - * / \\ | || ~",
        "<- -> <-> => <=> != <= >= << >> - * / \\ | || ~",
    ),
    (
        "e\u0301 decomposed, Ǣ ǽ Ǿ ǿ ŉ, ʼapostrophe, ˆcaret ˜tilde",
        "e decomposed, AE ae O o 'n, 'apostrophe, ^caret ~tilde",
        "e decomposed, Æ æ Ø ø 'n, 'apostrophe, ^caret ~tilde",
    ),
    ("┌─┬─┐ │ ├─┼─┤ └─┴─┘ ╱╲", "+-+-+ | +-+-+ +-+-+ /\\", "+-+-+ | +-+-+ +-+-+ /\\"),
    ("α β Ω 日本 😀 unknown", "? ? ? ?? ? unknown", "? ? ? ?? ? unknown"),
]
TARGETS = {"ascii": 1, "latin1": 2}  # our name and glibc's are the same; column in GLIBC


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_translit_writes_what_glibc_writes(target: str) -> None:
    text = "\n".join(row[0] for row in GLIBC)
    expected = "\n".join(row[TARGETS[target]] for row in GLIBC).encode("latin-1")
    result = subprocess.run(
        [sys.executable, "-m", "utf8stream", "transcode", "-t", f"{target}//TRANSLIT"],
        input=text.encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.split(b"\n") == expected.split(b"\n")
    if ICONV is not None:  # glibc (libc-bin); the literals stand without it
        glibc = subprocess.run(
            [ICONV, "-f", "utf-8", "-t", f"{target}//TRANSLIT"],
            input=text.encode(),
            capture_output=True,
            env={**os.environ, "LC_ALL": "C.UTF-8"},
            check=False,
        )
        assert glibc.stdout == expected


def test_translit_in_the_library_and_what_has_no_approximation(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("Grüße — “x” €5 ™ α", "utf-8")
    for policy, output in [
        ("translit", b'Grusse -- "x" EUR5 (TM) ?'),
        ("translit-ignore", b'Grusse -- "x" EUR5 (TM) '),  # //TRANSLIT//IGNORE, -c
    ]:
        summary = transcode_file(src, dst, target="ascii", unmappable=policy)
        assert (dst.read_bytes(), summary.unmappable) == (output, 8)
