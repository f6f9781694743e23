"""The pure-Python twins of the accelerator's helpers (``core/_native.py``) and the
compiled ones (``_speedups``), through the one switch: the same results and the same
errors for the same calls.  (The scanners have their own differential tests.)"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from test_mojibake import ONCE, TWICE

from utf8stream.core import _accel
from utf8stream.core.scanner import scanner_type

# Every test runs with the accelerator and in pure Python (conftest's fixture).
pytestmark = pytest.mark.usefixtures("implementation")


# -- BufferedAsyncIterator: the line streams' `async for` ------------------------------


def buffered(items: list[object], more: list[list[object]]) -> Any:
    """An iterator over ``items`` (popped from the end) that refills from ``more``."""

    async def refill(iterator: Any) -> object:
        while more and not more[0]:
            more.pop(0)  # an empty batch: try the next one
        if not more:
            raise StopAsyncIteration
        batch = more.pop(0)
        iterator.feed(batch)
        return batch.pop()

    iterator = _accel.implementation().BufferedAsyncIterator(refill)
    iterator.feed(items)
    return iterator


@pytest.mark.anyio
async def test_buffered_iterator_hands_out_items_then_refills() -> None:
    iterator = buffered([3, 2, 1], [[(5, 6), 4], [], [None]])
    # A tuple item is the item itself (not StopIteration's unpacked arguments).
    assert [x async for x in iterator] == [1, 2, 3, 4, (5, 6), None]


@pytest.mark.anyio
async def test_an_anext_result_never_awaited_takes_nothing() -> None:
    items: list[object] = ["b", "a"]
    iterator = buffered(items, [])
    pending = iterator.__anext__()  # not awaited: the item stays in the list
    assert items == ["b", "a"]
    del pending
    assert await iterator.__anext__() == "a"
    assert items == ["b"]


@pytest.mark.anyio
async def test_awaiting_after_the_list_was_emptied_is_an_error() -> None:
    items: list[object] = ["a"]
    iterator = buffered(items, [])
    awaitable = iterator.__anext__()
    items.clear()
    with pytest.raises(RuntimeError, match="emptied"):
        await awaitable


@pytest.mark.anyio
async def test_a_ready_item_is_awaited_on_the_iterator_itself(implementation: str) -> None:
    """As in C, ``__anext__`` of a ready item returns the iterator itself, which takes
    the item when awaited: no object is made per item, and in pure Python a ready item
    costs two Python frames (``__anext__``, ``__await__``), with no awaitable object
    per item."""

    items: list[object] = ["c", "b", "a"]
    iterator = buffered(items, [])
    awaitable = iterator.__anext__()
    assert awaitable is iterator
    assert await awaitable == "a"
    names: list[str] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call":
            names.append(frame.f_code.co_name)

    got = []
    sys.setprofile(profile)
    try:
        for _ in range(2):
            got.append(await iterator.__anext__())
    finally:
        sys.setprofile(None)
    assert got == ["b", "c"]
    if implementation == "pure-python":
        assert names == ["__anext__", "__await__"] * 2
    else:
        assert names == []


def test_the_iterator_protocol_gives_the_item_in_stop_iteration() -> None:
    """What a generator-based awaiter (``yield from``) sees instead of ``send``."""
    iterator = buffered([(1, 2)], [])
    with pytest.raises(StopIteration) as stop:
        next(iterator.__anext__().__await__())
    assert stop.value.value == (1, 2)


# -- PlainEncoder: the encoder's one-call path -----------------------------------------


def test_plain_encoder_hands_what_it_does_not_do_to_the_fallback(implementation: str) -> None:
    calls: list[tuple[str, bool]] = []

    def fallback(text: str, final: bool = False) -> bytes:
        calls.append((text, final))
        return text.encode("utf-8", "surrogatepass")

    encoder = _accel.implementation().PlainEncoder("strict", fallback)
    assert encoder.encode("\ud800", True) == b"\xed\xa0\x80"  # a lone surrogate: not plain
    assert calls == [("\ud800", True)]
    assert encoder.drain() == 0  # the fallback counts what it encoded itself
    assert encoder.encode("é") == "é".encode()
    if implementation == "accelerated":
        assert (calls[1:], encoder.drain()) == ([], 1)  # encoded and counted in C
    else:
        assert (calls[1:], encoder.drain()) == ([("é", False)], 0)  # the fallback did it


# -- split_lines: the line engine's cut of lines whose code units are characters --------

#: Each code-unit size in both byte orders (one byte: a single-byte codec).
UNIT_CODECS = {1: ["latin-1"], 2: ["utf-16-le", "utf-16-be"], 4: ["utf-32-le", "utf-32-be"]}
#: Characters whose units hold a newline's bytes at other offsets (0A 0D, 0D 0A, 0A 00...).
UNIT_ALPHABET = "ab\r\n\x85\u2028é\u0a0d\u0d0a\u0a00\u0d00\u0a0a"


def reference_split(
    text: str, newline: str | None, base: int, unit: int, limit: int
) -> tuple[list[str], list[int]] | None:
    """Character by character: each line's content and start, then the end."""
    contents: list[str] = []
    offsets: list[int] = []
    start = i = 0
    while i < len(text):
        ch = text[i]
        width = 0
        if newline is None and ch == "\r":
            width = 2 if text[i + 1 : i + 2] == "\n" else 1
        elif ch == (newline or "\n"):
            width = 1
        if not width:
            i += 1
            continue
        if (i - start) * unit > limit:
            return None
        contents.append(text[start:i])
        offsets.append(base + start * unit)
        start = i = i + width
    offsets.append(base + start * unit)
    return contents, offsets


def _units(newline: str | None, codec: str) -> bytes | tuple[bytes, bytes]:
    return ("\r".encode(codec), "\n".encode(codec)) if newline is None else newline.encode(codec)


@given(
    text=st.text(alphabet=UNIT_ALPHABET, max_size=40),
    newline=st.sampled_from([None, "\n", "\r", "a", "\u0a0d"]),
    base=st.integers(0, 1 << 40),
    codec=st.sampled_from([c for codecs in UNIT_CODECS.values() for c in codecs]),
    limit=st.integers(0, 100),
    each_offset=st.booleans(),
)
@example("\u0a00\u0a00\r\n", "\n", 1, "utf-16-le", 100, True)  # 0A 00 at an odd offset
@example("\u0a00\u0a00\n", None, 1, "utf-16-be", 100, True)  # 00 0A at an odd offset
@example("\u0a00\u0a00\u0d00\r", None, 1, "utf-32-le", 100, True)
@example("\u0a0d\u0a0d\n", None, 1, "utf-16-le", 100, True)  # 0D 0A at an odd offset
def test_split_lines_cuts_as_the_reference(
    text: str, newline: str | None, base: int, codec: str, limit: int, each_offset: bool
) -> None:
    """The newline units searched in the bytes, at code-unit offsets only: the lines of
    the text cut character by character, in either byte order."""
    data = text.encode(codec, "replace")
    text = data.decode(codec)
    unit = len(data) // len(text) if text else 1
    if newline == "\u0a0d" and unit == 1:
        newline = "\x85"  # one byte
    expected = reference_split(text, newline, base, unit, limit)
    got = _accel.implementation().split_lines(
        data, text, _units(newline, codec), base, limit, each_offset
    )
    if expected is not None and not each_offset:
        expected = expected[0], expected[1][-1:]
    assert got == expected


@given(
    text=st.text(alphabet="ab\r\n", max_size=40),
    newline=st.sampled_from([None, "\n"]),
    base=st.integers(0, 1 << 40),
    codec=st.sampled_from(["latin-1", "utf-16-le", "utf-32-be"]),
)
def test_split_lines_packs_the_offsets_it_lists(
    text: str, newline: str | None, base: int, codec: str
) -> None:
    """each_offset=2: the same offsets as a list gives, as a Sequence[int] (packed
    int64 in C, a list in Python)."""
    split_lines = _accel.implementation().split_lines
    data = text.encode(codec)
    listed = split_lines(data, text, _units(newline, codec), base, 100, True)
    packed = split_lines(data, text, _units(newline, codec), base, 100, 2)
    assert listed is not None and packed is not None
    assert packed[0] == listed[0]
    assert list(packed[1]) == listed[1]
    assert len(packed[1]) == len(listed[1]) and packed[1][-1] == listed[1][-1]


@pytest.mark.parametrize("each_offset", [3, -1, "yes", None, 1.0])
def test_split_lines_and_lines_refuse_an_unknown_offset_mode(each_offset: Any) -> None:
    split_lines = _accel.implementation().split_lines
    with pytest.raises(ValueError, match="each_offset is 0 or False"):
        split_lines(b"a\n", "a\n", b"\n", 0, 10, each_offset)
    with pytest.raises(ValueError, match="each_offset is 0 or False"):
        scanner_type()("\ufffd", None).lines(b"", b"a\n", 0, -1, 10, each_offset)


def test_split_lines_refuses_what_it_does_not_cut() -> None:
    split_lines = _accel.implementation().split_lines
    for newline in ("\n", b"", (b"\r", b"\n\x00"), (b"\r",), None):
        with pytest.raises(TypeError, match="one encoded code unit"):
            split_lines(b"a\n", "a\n", newline, 0, 10, True)
    with pytest.raises(ValueError, match="one character of text per code unit"):
        split_lines(b"a\n", "a\n", b"\n\x00", 0, 10, True)
    with pytest.raises(ValueError, match="2\\*\\*63"):
        split_lines(b"a\n", "a\n", b"\n", (1 << 63) - 1, 10, True)


def test_every_name_reached_through_implementation_exists_in_both() -> None:
    """The library calls the compiled module and its pure twin through ``implementation()``
    and never asks which it got: every name it reaches that way is in ``_native``
    (``__all__``) and, where the accelerator is built, in ``_speedups`` too; the same for
    the apps layer's pair (``apps_implementation()``: ``_apps_native`` and
    ``_apps_speedups``)."""
    import re
    from pathlib import Path

    import utf8stream
    from utf8stream.apps import _apps_accel, _apps_native
    from utf8stream.core import _native

    package = Path(utf8stream.__file__).parent

    def used(call: str) -> set[str]:
        return {
            name
            for source in package.rglob("*.py")
            for name in re.findall(call + r"\(\)\s*\.\s*(\w+)", source.read_text())
        }

    core, follower = used(r"(?<![\w.])implementation"), used("apps_implementation")
    assert {"split_lines", "BufferedAsyncIterator"} <= core
    assert {"records", "ReadBuffer", "ReadAhead"} == follower
    assert core <= set(_native.__all__)
    assert follower <= set(_apps_native.__all__)
    built = _accel.built_accelerator()
    if built is not None:
        assert all(hasattr(built, name) for name in core)
        assert all(hasattr(_apps_accel.implementation(), name) for name in follower)


# -- find_run: the normalizer's search for long runs of non-starters --------------------


def _first_run(text: str, members: set[int], shortest: int, start: int) -> int:
    """The reference: walk the text, count the run."""
    run = 0
    for i in range(start, len(text)):
        run = run + 1 if ord(text[i]) in members else 0
        if run == shortest:
            return i - shortest + 1
    return -1


@given(
    st.text(alphabet="ab\u0301\u0323\u0416\U0001d165\U0001d167\U0001d169\U0001f600", max_size=80),
    st.integers(1, 12),
    st.integers(0, 90),
)
@example("\u0301" * 9, 9, 0)
@example("a" + "\u0301" * 9, 9, 1)
@example("\u0301\u0301a\u0301", 1, 2)
def test_find_run(text: str, shortest: int, start: int) -> None:
    # U+1D167 lies between two members and is not one.
    members = {0x301, 0x323, 0x1D165, 0x1D169}
    bitmap = bytearray(0x110000 >> 3)
    for cp in members:
        bitmap[cp >> 3] |= 1 << (cp & 7)
    start = min(start, len(text))
    found = _accel.implementation().find_run(text, bytes(bitmap), shortest, start)
    assert found == _first_run(text, members, shortest, start)
    # A bitmap shorter than the code points: those past it are not members.
    short = _accel.implementation().find_run(text, bytes(bitmap[: 0x400 >> 3]), shortest, start)
    assert short == _first_run(text, {0x301, 0x323}, shortest, start)


@example("\U0001d165\U0001d167\U0001d169" * 4, 3)
@given(st.text(alphabet="\u0301\U0001d165\U0001d167\U0001d169", max_size=40), st.integers(1, 6))
def test_find_run_between_members(text: str, shortest: int) -> None:
    members = {0x301, 0x1D165, 0x1D169}
    bitmap = bytearray(0x110000 >> 3)
    for cp in members:
        bitmap[cp >> 3] |= 1 << (cp & 7)
    found = _accel.implementation().find_run(text, bytes(bitmap), shortest, 0)
    assert found == _first_run(text, members, shortest, 0)


def test_find_run_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        _accel.implementation().find_run("abc", b"\xff", 0, 0)


@given(
    st.text(alphabet="a\xe9\u0416\U0001f600", max_size=3),
    st.text(alphabet="b\xe8\u0436\U0001f601", max_size=40),
    st.integers(0, 40),
)
@example("", "ab\U0001f600", 2)
@example("\xe9", "\u0416" * 5, 5)
@example("", "abc", 3)
def test_join_cut(head: str, text: str, cut: int) -> None:
    cut = min(cut, len(text))
    joined = _accel.implementation().join_cut(head, text, cut)
    assert joined == head + text[:cut]
    # The narrowest kind its characters allow, as str itself makes it: equal sizes.
    assert sys.getsizeof(joined) == sys.getsizeof(head + text[:cut])
    with pytest.raises(ValueError):
        _accel.implementation().join_cut(head, text, len(text) + 1)


# -- find_moji: the mojibake repairer's search for runs that could be undone -------------

MOJI_PAGES = ("latin-1", "cp1252", "cp1251", "cp1250", "cp1253", "cp1254", "cp1257", "mac_roman")


def _moji_tables() -> tuple[bytes, bytes]:
    """Tables as ``find_moji`` reads them, made here from the codecs: each byte 0x80-0xFF
    of each page is the character it decodes to (an undefined one: the C1 control)."""
    held: dict[str, bytearray] = {}
    for k, page in enumerate(MOJI_PAGES):
        for byte in range(0x80, 0x100):
            try:
                char = bytes([byte]).decode(page)
            except UnicodeDecodeError:
                char = chr(byte)
            held.setdefault(char, bytearray(len(MOJI_PAGES)))[k] = byte
    index = bytearray(2 * 0x10000)
    pages = bytearray(len(MOJI_PAGES))
    for row, char in enumerate(sorted(held), 1):
        index[2 * ord(char) : 2 * ord(char) + 2] = row.to_bytes(2, sys.byteorder)
        pages += held[char]
    return bytes(index), bytes(pages)


MOJI_INDEX, MOJI_TABLE = _moji_tables()
_baked = [word for _, _, baked in (ONCE[::3] + TWICE[::17]) for word in baked.split(" ") if word]
moji_texts = st.lists(
    st.one_of(
        st.sampled_from(_baked),
        st.text(alphabet="aZ \n\u00a0éÃ©Â¤™ЂЯяΣ€‚ƒ„\x81\x9d˘ŁŚ√ß中😀", max_size=12),
    ),
    max_size=12,
).map("".join)


@given(moji_texts, st.integers(0, 200), st.sampled_from([1, 2, 3, 4, 9, 256]))
@example("ÃÃ©", 1, 256)
@example("Ã©", 0, 256)
@example("Ã", 0, 256)
@example("Ð¸ Ð", 0, 256)
@example("ÃƒÂ©Ã", 0, 4)
def test_find_moji_compiled_and_pure_agree(text: str, start: int, longest: int) -> None:
    """Differential: the compiled scan and its twin, at every start, on the same tables."""
    built = _accel.built_accelerator()
    if built is None:
        pytest.skip("the C accelerator is not built here (pure-Python install)")
    from utf8stream.core import _native

    start = min(start, len(text) + 1)
    for tables in ((MOJI_INDEX, MOJI_TABLE, len(MOJI_PAGES)), (MOJI_INDEX, MOJI_TABLE[:40], 3)):
        args = (text, *tables, start, longest)
        assert built.find_moji(*args) == _native.find_moji(*args)


def test_find_moji_finds_mojibake_and_passes_text() -> None:
    find = _accel.implementation().find_moji
    width = len(MOJI_PAGES)
    # "é" read as cp1252 is a run valid through latin-1 and cp1252; Cyrillic words are
    # runs valid through no page; a lone character is no run; past the bound, any run.
    assert find("café: cafÃ©", MOJI_INDEX, MOJI_TABLE, width, 0, 256) == 9
    assert find("Привет мир и всё", MOJI_INDEX, MOJI_TABLE, width, 0, 256) == -1
    assert find("Привет", MOJI_INDEX, MOJI_TABLE, width, 0, 6) == 0
    assert find("é Ã Ѓ", MOJI_INDEX, MOJI_TABLE, width, 0, 256) == -1
    # A run that began before the start is a piece of a run cut there.
    assert find("Привет", MOJI_INDEX, MOJI_TABLE, width, 2, 256) == 2
    assert find("cafÃ©", MOJI_INDEX, MOJI_TABLE, width, 4, 256) == 4
    assert find("cafÃ©", MOJI_INDEX, MOJI_TABLE, width, 5, 256) == -1


def test_find_moji_refuses_nonsense() -> None:
    find = _accel.implementation().find_moji
    with pytest.raises(ValueError):
        find("abc", MOJI_INDEX[:10], MOJI_TABLE, 8, 0, 256)
    with pytest.raises(ValueError):
        find("abc", MOJI_INDEX, MOJI_TABLE, 0, 0, 256)
    with pytest.raises(ValueError):
        find("abc", MOJI_INDEX, MOJI_TABLE, 8, -1, 256)
    with pytest.raises(TypeError):
        find(b"abc", MOJI_INDEX, MOJI_TABLE, 8, 0, 256)
    with pytest.raises(ValueError):
        find("abc", MOJI_INDEX, MOJI_TABLE, 33, 0, 256)


# -- find_moji_bytes: the same search over UTF-8 bytes -----------------------------------

moji_bytes = st.tuples(
    moji_texts, st.lists(st.tuples(st.integers(0, 400), st.integers(0x80, 0xFF)), max_size=3)
).map(lambda made: _with_bytes(made[0].encode("utf-8", "surrogatepass"), made[1]))


def _with_bytes(data: bytes, inserted: list[tuple[int, int]]) -> bytes:
    """``data`` with single bytes above 0x7F put in (invalid UTF-8, or cut sequences)."""
    for at, byte in inserted:
        at %= len(data) + 1
        data = data[:at] + bytes([byte]) + data[at:]
    return data


def _line_starts(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, byte in enumerate(data) if byte in b"\n\r"]


@given(moji_bytes, st.sampled_from([1, 2, 3, 4, 9, 256]))
@example(b"caf\xc3\x83\xc2\xa9", 256)
@example(b"\xc3\x83\xc3\xa9\xc3", 256)
@example("Ã©".encode()[:3] + b"\n" + "Ã©".encode(), 256)
@example("中".encode()[:2] + "Ã©".encode(), 256)
@example(b"\xe4\xc3\x83\xc2\xa9 \xd7\x90\xc3\x83\xc2\xa9", 256)
@example("שלום Ã©Ã 中文 😀Ã©".encode(), 256)
@example("é ü 中 ш".encode(), 1)
def test_find_moji_bytes_compiled_pure_and_text_agree(data: bytes, longest: int) -> None:
    """Differential: the compiled scan, its twin, and ``find_moji`` on each line decoded
    with surrogateescape, from every line start."""
    built = _accel.built_accelerator()
    if built is None:
        pytest.skip("the C accelerator is not built here (pure-Python install)")
    from utf8stream.core import _native

    tables = (MOJI_INDEX, MOJI_TABLE, len(MOJI_PAGES))
    for start in _line_starts(data):
        found = built.find_moji_bytes(data, *tables, start, longest)
        assert found == _native.find_moji_bytes(data, *tables, start, longest)
        expected = -1
        for line in _line_starts(data):
            if line < start:
                continue
            rest = data[line:]
            stop = min([i for i, byte in enumerate(rest) if byte in b"\n\r"] + [len(rest)])
            text = rest[:stop].decode("utf-8", "surrogateescape")
            at = _native.find_moji(text, *tables, 0, longest)
            if at >= 0:
                expected = line + len(text[:at].encode("utf-8", "surrogateescape"))
                break
        assert found == expected


def test_find_moji_bytes_finds_mojibake_and_refuses_nonsense() -> None:
    find = _accel.implementation().find_moji_bytes
    tables = (MOJI_INDEX, MOJI_TABLE, len(MOJI_PAGES))
    assert find("café\ncafÃ©".encode(), *tables, 0, 256) == 9
    assert find("cafÃ©\nok".encode(), *tables, 7, 256) == -1
    assert find("Привет мир".encode(), *tables, 0, 256) == -1
    assert find("Привет".encode(), *tables, 0, 6) == 0
    # A byte that is not UTF-8 ends a run: two halves of one character each.
    assert find("Ã\udcffé".encode("utf-8", "surrogateescape"), *tables, 0, 256) == -1
    with pytest.raises(ValueError):
        find(b"abc", MOJI_INDEX, MOJI_TABLE, 8, -1, 256)
    with pytest.raises(ValueError):
        find(b"abc", MOJI_INDEX[:10], MOJI_TABLE, 8, 0, 256)
    with pytest.raises(TypeError):
        find("abc", *tables, 0, 256)
