"""Large-file transcoding: sequential, parallel (identical output), async, open_text."""

from __future__ import annotations

import codecs
import multiprocessing
import os
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from _helpers import FRAGMENTS, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utf8stream import (
    Malformed,
    MalformedKind,
    SameFileError,
    Transcoder,
    UnmappableCharacterError,
    Utf8Decoder,
    WorkerError,
    atranscode_file,
    open_text,
    transcode_file,
)
from utf8stream.apps.files import codecrun, directrun, parallel, results, runs, streaming
from utf8stream.apps.files import transcode as transcode_module


@pytest.fixture(autouse=True)
def split_as_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parallel machinery is checked on any machine, direct runs included: a run is
    split into as many workers as asked, where ``parallel.plan`` would keep one (small
    files, few cores).  The rule itself: ``test_transcode_workers.py``."""
    monkeypatch.setattr(parallel, "plan", lambda workers, cores, size, *, direct: workers)


contents = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=300).map(b"".join)


def oracle_events(data: bytes) -> list[Malformed]:
    events: list[Malformed] = []
    Utf8Decoder(on_malformed=events.append).decode(data, final=True)
    return events


def test_sequential_matches_one_shot(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    data = ("Příliš žluťoučký kůň 🐴\n" * 5000).encode() + b"bad \xff end \xe2\x82"
    src.write_bytes(data)
    events: list[Malformed] = []
    progress: list[tuple[int, int]] = []
    summary = transcode_file(
        src,
        dst,
        target="utf-16-le",
        chunk_size=4099,
        on_malformed=events.append,
        progress=lambda done, total: progress.append((done, total)),
    )
    text = data.decode("utf-8", "replace")
    assert dst.read_bytes() == text.encode("utf-16-le")
    assert events == oracle_events(data)
    assert summary.bytes_in == len(data)
    assert summary.bytes_out == dst.stat().st_size
    assert summary.characters == len(text)
    assert summary.malformed == {
        MalformedKind.INVALID_BYTE: 1,
        MalformedKind.TRUNCATED_AT_END: 1,
    }
    assert progress[-1] == (len(data), len(data))
    assert [d for d, _ in progress] == sorted(d for d, _ in progress)


@pytest.mark.parametrize(
    ("source", "target"),
    [("utf-16-le", "utf-8"), ("cp1252", "utf-8"), ("utf-8", "latin-1"), ("utf-8", "cesu-8")],
)
def test_between_codecs(tmp_path: Path, source: str, target: str) -> None:
    text = "Grüße, ¿qué tal? " * 1000
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(text.encode(source))
    transcode_file(src, dst, source=source, target=target, chunk_size=777)
    assert dst.read_bytes() == text.encode(target)


def test_constant_memory_reads_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read is at most chunk_size: memory does not grow with the file (the direct
    path, which reads into a reused buffer, and the codec path)."""
    from contextlib import contextmanager

    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(("ž" * 100_000).encode())
    sizes: list[int] = []
    real = transcode_module.open_binary

    class Spy:
        def __init__(self, f: Any) -> None:
            self.f = f

        def read(self, size: int) -> bytes:
            data: bytes = self.f.read(size)
            sizes.append(len(data))
            return data

        def readinto(self, buffer: Any) -> int:
            n: int = self.f.readinto(buffer)
            sizes.append(n)
            return n

    @contextmanager
    def spy(path: str, mode: str) -> Any:
        with real(path, mode) as f:
            yield Spy(f)

    monkeypatch.setattr(transcode_module, "open_binary", spy)
    for options in ({}, {"target": "utf-16-le"}, {"errors": "surrogateescape"}):
        sizes.clear()
        transcode_file(src, dst, chunk_size=1000, **options)
        assert max(sizes) <= 1000 and sum(sizes) == 200_000
        assert dst.read_bytes() == ("ž" * 100_000).encode(options.get("target", "utf-8"))


@settings(
    max_examples=examples(25),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(contents, st.integers(2, 4), st.integers(1, 64))
def test_parallel_is_identical_to_sequential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, workers: int, piece: int
) -> None:
    # Tiny pieces so that split points land everywhere, malformed bytes included.
    monkeypatch.setattr(parallel, "PIECE_BYTES", piece)
    src = tmp_path / "in"
    src.write_bytes(data)
    seq_events: list[Malformed] = []
    par_events: list[Malformed] = []
    seq = transcode_file(
        src, tmp_path / "seq", target="utf-16-be", chunk_size=1, on_malformed=seq_events.append
    )
    par = transcode_file(
        src,
        tmp_path / "par",
        target="utf-16-be",
        chunk_size=1,
        workers=workers,
        on_malformed=par_events.append,
    )
    assert (tmp_path / "par").read_bytes() == (tmp_path / "seq").read_bytes()
    assert par_events == seq_events == oracle_events(data)
    assert (par.bytes_in, par.bytes_out, par.characters, dict(par.malformed)) == (
        seq.bytes_in,
        seq.bytes_out,
        seq.characters,
        dict(seq.malformed),
    )
    # Without a callback the decoder counts the units itself (no event per unit): the
    # same counts, the last unit of each piece renamed as the sequential run names it.
    counts = Counter(event.kind for event in seq_events)
    quiet_seq = transcode_file(src, tmp_path / "qseq", target="utf-16-be", chunk_size=1)
    quiet_par = transcode_file(
        src, tmp_path / "qpar", target="utf-16-be", chunk_size=1, workers=workers
    )
    assert dict(quiet_seq.malformed) == dict(quiet_par.malformed) == counts
    assert (tmp_path / "qpar").read_bytes() == (tmp_path / "seq").read_bytes()


def test_parallel_cesu8_keeps_surrogate_pairs_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PIECE_BYTES", 5)
    text = "a😀b𝄞c" * 50
    src = tmp_path / "in"
    src.write_bytes(text.encode("cesu-8"))
    summary = transcode_file(src, tmp_path / "out", source="cesu-8", chunk_size=3, workers=2)
    assert (tmp_path / "out").read_text("utf-8") == text
    assert summary.pieces > 100  # cut everywhere, never inside a pair


def test_parallel_strict_raises_the_first_error(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"x" * 5000 + b"\xe0" + b"\x80" + b"y" * 5000 + b"\xff")
    from utf8stream import Utf8DecodeError

    for workers in (1, 3):
        for target in ("utf-8", "utf-16-le"):  # the str path and the bytes-to-bytes one
            with pytest.raises(Utf8DecodeError) as info:
                transcode_file(
                    src, tmp_path / "out", target=target, errors="strict", chunk_size=100,
                    workers=workers,
                )  # fmt: skip
            assert (info.value.offset, info.value.kind) == (5000, MalformedKind.OVERLONG)


def test_bom_policies(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(codecs.BOM_UTF8 + b"hi")
    transcode_file(src, dst, bom="strip")
    assert dst.read_bytes() == b"hi"
    src.write_bytes(b"hi")
    transcode_file(src, dst, bom="add", target="utf-16-le")
    assert dst.read_bytes() == codecs.BOM_UTF16_LE + "hi".encode("utf-16-le")


def test_unknown_encoding(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(b"x")
    with pytest.raises(LookupError):
        transcode_file(tmp_path / "in", tmp_path / "out", source="no-such-codec")


@pytest.mark.anyio
async def test_async_transcode_matches_sync(tmp_path: Path) -> None:
    src = tmp_path / "in"
    data = ("日本語 text\n" * 3000).encode() + b"\xff"
    src.write_bytes(data)
    events: list[Malformed] = []
    summary = await atranscode_file(
        src, tmp_path / "out", target="utf-32", chunk_size=1000, on_malformed=events.append
    )
    expected = data.decode("utf-8", "replace").encode("utf-32")
    assert (tmp_path / "out").read_bytes() == expected
    assert events == oracle_events(data)
    assert summary.bytes_in == len(data)
    await atranscode_file(src, tmp_path / "par", workers=2, chunk_size=1000)
    assert (tmp_path / "par").read_bytes() == data.decode("utf-8", "replace").encode()


@pytest.mark.anyio
async def test_open_text_mid_character_starts_with_one_replacement(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes("ab€cd".encode())
    async with await open_text(path, start_offset=3) as stream:  # inside the €
        text = "".join([chunk async for chunk in stream])
    assert text == "\ufffdcd"
    async with await open_text(path) as stream:
        assert "".join([chunk async for chunk in stream]) == "ab€cd"


def test_open_text_missing_file(tmp_path: Path) -> None:
    async def go() -> None:
        await open_text(tmp_path / "missing")

    with pytest.raises(FileNotFoundError):
        anyio.run(go)


# -- data safety: the output file --------------------------------------------------------


def test_failed_run_leaves_the_destination(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_text("x" * 5000 + "①", "utf-8")
    dst.write_bytes(b"precious")
    for workers in (1, 2):
        with pytest.raises(UnmappableCharacterError):
            transcode_file(src, dst, target="latin-1", chunk_size=100, workers=workers)
        assert dst.read_bytes() == b"precious"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]


def test_destination_keeps_its_permission_bits(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_text("ž" * 3000, "utf-8")
    dst.write_bytes(b"old")
    dst.chmod(0o604)
    for workers in (1, 2):
        transcode_file(src, dst, target="utf-16-le", chunk_size=500, workers=workers)
        assert dst.read_bytes() == ("ž" * 3000).encode("utf-16-le")
        assert dst.stat().st_mode & 0o777 == 0o604


def test_output_is_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"data" * 1000)
    (tmp_path / "link").symlink_to(src)
    for dst in (src, tmp_path / "link"):
        with pytest.raises(SameFileError):
            transcode_file(src, dst, workers=2, chunk_size=100)
    assert src.read_bytes() == b"data" * 1000


@pytest.mark.anyio
async def test_async_failed_run_leaves_the_destination(tmp_path: Path) -> None:
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_text("abc ① def", "utf-8")
    dst.write_bytes(b"precious")
    with pytest.raises(UnmappableCharacterError) as info:
        await atranscode_file(src, dst, target="ascii", chunk_size=2)
    assert (info.value.index, info.value.offset) == (4, 4)
    with pytest.raises(SameFileError):
        await atranscode_file(src, src)
    assert dst.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]
    summary = await atranscode_file(src, dst, target="ascii", unmappable="translit")
    assert (dst.read_bytes(), summary.unmappable) == (b"abc (1) def", 1)


# -- the two policies ------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5, 1000])
@pytest.mark.parametrize(
    ("source", "bom", "prefix"),
    [
        ("utf-8", "", "Grüße ÿ 😀 "),  # characters of 1 to 4 bytes before the culprit
        ("cesu-8", "", "Grüße ÿ 😀 "),  # 😀 is 6 bytes here
        ("utf-16-le", "", "Grüße ÿ 😀 "),
        ("utf-16", "\ufeff", "Grüße ÿ 😀 "),  # the BOM is consumed, the offset counts it
        ("shift_jis", "", "abc ｱｲ "),  # half-width katakana: 1 byte, not in latin-1
    ],
)
def test_unmappable_position(
    tmp_path: Path, chunk_size: int, source: str, bom: str, prefix: str
) -> None:
    src = tmp_path / "in"
    culprit = "ｱ" if source == "shift_jis" else "😀"
    codec = "utf-16-le" if source == "utf-16" else source  # written with its BOM in front
    src.write_bytes((bom + prefix + "and more").encode(codec))
    with pytest.raises(UnmappableCharacterError) as info:
        transcode_file(src, tmp_path / "out", source=source, target="latin-1",
                       errors="strict", chunk_size=chunk_size)  # fmt: skip
    error = info.value
    index = prefix.index(culprit)
    assert (error.object, error.index) == (culprit, index)
    before = (bom + prefix[:index]).encode(codec)
    assert error.offset == len(before)


def test_unmappable_position_in_a_parallel_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PIECE_BYTES", 1000)
    src = tmp_path / "in"
    src.write_text("é" * 5000 + "€", "utf-8")
    with pytest.raises(UnmappableCharacterError) as info:
        transcode_file(src, tmp_path / "out", target="latin-1", chunk_size=300, workers=3)
    assert (info.value.index, info.value.offset) == (5000, 10000)


def test_unmappable_policies_in_the_library(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_text("café ① α ok", "utf-8")
    expected = {
        "ignore": b"caf   ok",
        "translit": b"cafe (1) ? ok",  # as glibc's iconv -t ascii//TRANSLIT
        "translit-ignore": b"cafe (1)  ok",
        "replace": b"caf? ? ? ok",
    }
    for policy, output in expected.items():
        summary = transcode_file(src, tmp_path / "out", target="ascii", unmappable=policy)
        assert (tmp_path / "out").read_bytes() == output
        assert summary.unmappable == 3
    with pytest.raises(ValueError, match="unmappable must be one of"):
        transcode_file(src, tmp_path / "out", unmappable="drop")


def test_round_trip_escapes_are_not_unmappable(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"caf\xe9 \xff")  # latin-1 bytes, malformed as UTF-8
    summary = transcode_file(src, tmp_path / "out", target="latin-1", errors="surrogateescape")
    assert (tmp_path / "out").read_bytes() == b"caf\xe9 \xff"
    assert summary.unmappable == 0
    assert summary.malformed_total == 2


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 1000])
def test_malformed_input_of_other_codecs_is_counted(tmp_path: Path, chunk_size: int) -> None:
    src = tmp_path / "in"
    # UTF-16-LE: "ab", a high surrogate cut by "c", "d", and an odd byte at the end.
    src.write_bytes(b"a\x00b\x00\x3d\xd8c\x00d\x00!")
    events: list[Malformed] = []
    summary = transcode_file(src, tmp_path / "out", source="utf-16-le",
                             chunk_size=chunk_size, on_malformed=events.append)  # fmt: skip
    assert (tmp_path / "out").read_text("utf-8") == "ab\ufffdcd\ufffd"
    assert events == [
        Malformed(4, b"\x3d\xd8", MalformedKind.SURROGATE),
        Malformed(10, b"!", MalformedKind.TRUNCATED_AT_END),
    ]
    assert summary.malformed == {MalformedKind.SURROGATE: 1, MalformedKind.TRUNCATED_AT_END: 1}
    events.clear()
    src.write_bytes(b"a\xff\x82\xa0b\x81")  # Shift_JIS: a bad byte, あ, b, a cut character
    transcode_file(src, tmp_path / "out", source="shift_jis", chunk_size=chunk_size,
                   on_malformed=events.append)  # fmt: skip
    assert events == [
        Malformed(1, b"\xff", MalformedKind.INVALID_BYTE),
        Malformed(5, b"\x81", MalformedKind.TRUNCATED_AT_END),
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"source": "base64"},
        {"target": "zlib"},
        {"source": "latin-1", "errors": "xmlcharrefreplace"},
        {"errors": "namereplace"},
        {"target": "idna", "unmappable": "ignore"},
    ],
)
def test_unusable_options_fail_before_any_file_is_touched(
    tmp_path: Path, options: dict[str, str]
) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"x\xff")
    with pytest.raises((LookupError, ValueError)):
        transcode_file(src, tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def test_a_failing_worker_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Forked workers inherit the patched method: the piece at 3000 and later ones fail.
    fork = multiprocessing.get_context("fork")
    monkeypatch.setattr(multiprocessing, "get_context", lambda: fork)
    monkeypatch.setattr(parallel, "PIECE_BYTES", 1000)
    # Both kinds of run (UTF-8 to UTF-16 is a direct one).
    for run_type in (codecrun.CodecRun, directrun.DirectRun):
        real = run_type.transcode

        def failing(self: Any, data: bytes, final: bool = False, real: Any = real) -> bytes:
            if self.start >= 3000:
                raise RuntimeError("boom")
            return real(self, data, final)  # type: ignore[no-any-return]

        monkeypatch.setattr(run_type, "transcode", failing)
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_text("é" * 5000, "utf-8")
    dst.write_bytes(b"precious")
    with pytest.raises(WorkerError, match="boom"):
        transcode_file(src, dst, target="utf-16", chunk_size=300, workers=2)
    assert dst.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]


# -- UTF-8 to and from UTF-16/UTF-32: bytes to bytes, no str ------------------------------

#: Targets a ByteTranscoder writes from UTF-8 (utf-16 and utf-32: a BOM, native order).
DIRECT_TARGETS = ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "utf-16", "utf-32"]
#: UTF-16/UTF-32 input: characters, lone and cut surrogates, a code point past U+10FFFF.
WIDE_PIECES = {
    16: [b"a\x00", b"\xe9\x00", b"\x3d\xd8\x00\xde", b"\x3d\xd8", b"\x00\xdc", b"\xff\xfe", b"!"],
    32: [b"a\x00\x00\x00", b"\x00\xf6\x01\x00", b"\x00\xd8\x00\x00", b"\x00\x00\x11\x00",
         b"\xff\xfe\x00\x00", b"!"],
}  # fmt: skip


def both_paths(
    monkeypatch: pytest.MonkeyPatch, src: Path, out: Path, **options: Any
) -> list[tuple[bytes, list[Malformed], tuple[Any, ...]]]:
    """The direct run's output, events and summary, then the str path's."""
    results = []
    for use_direct in (True, False):
        with monkeypatch.context() as patch:
            if not use_direct:
                patch.setattr(runs, "direct", lambda *args: False)
            events: list[Malformed] = []
            summary = transcode_file(src, out, on_malformed=events.append, **options)
            quiet = transcode_file(src, out.with_suffix(".quiet"), **options)
        assert quiet.malformed == summary.malformed  # counted without events too
        assert out.with_suffix(".quiet").read_bytes() == out.read_bytes()
        fields = (summary.bytes_in, summary.bytes_out, summary.characters, summary.malformed)
        results.append((out.read_bytes(), events, (*fields, summary.unmappable)))
    return results


@settings(
    max_examples=examples(60),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.data(),
    target=st.sampled_from(DIRECT_TARGETS),
    errors=st.sampled_from(["replace", "ignore"]),
    bom=st.sampled_from(["keep", "strip", "add"]),
    chunk_size=st.integers(1, 40),
)
def test_direct_runs_are_the_str_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: Any,
    target: str,
    errors: str,
    bom: str,
    chunk_size: int,
) -> None:
    # There (UTF-8, a BOM perhaps, into UTF-16/32) and back (UTF-16/32 into UTF-8).
    raw = b"\xef\xbb\xbf" * data.draw(st.integers(0, 2)) + data.draw(contents)
    src = tmp_path / "in"
    src.write_bytes(raw)
    there, via_str = both_paths(
        monkeypatch, src, tmp_path / "out", target=target, errors=errors, bom=bom,
        chunk_size=chunk_size,
    )  # fmt: skip
    assert there == via_str
    source = target if target[-1] in "le" else f"{target}-le"
    width = 16 if "16" in source else 32
    wide = b"".join(data.draw(st.lists(st.sampled_from(WIDE_PIECES[width]), max_size=40)))
    src.write_bytes(wide.decode("utf-16-le" if width == 16 else "utf-32-le", "ignore").encode(
        source) + wide)  # fmt: skip
    back, via_str = both_paths(
        monkeypatch, src, tmp_path / "out", source=source, errors=errors, bom=bom,
        chunk_size=chunk_size,
    )  # fmt: skip
    assert back == via_str


def test_direct_runs_build_no_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """UTF-8 to UTF-16/32 and back never goes through the str path (``Transcoder``), in
    one process or in worker processes, with or without events."""

    def refused(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("the str path was used")

    fork = multiprocessing.get_context("fork")  # the workers inherit the patch
    monkeypatch.setattr(multiprocessing, "get_context", lambda: fork)
    monkeypatch.setattr(Transcoder, "transcode", refused)
    monkeypatch.setattr(parallel, "PIECE_BYTES", 1000)
    text = "Grüße, 世界 😀 " * 300
    src = tmp_path / "in"
    src.write_bytes(text.encode() + b"\xff")
    for target in DIRECT_TARGETS:
        for workers in (1, 2):
            events: list[Malformed] = []
            summary = transcode_file(
                src, tmp_path / "out", target=target, chunk_size=500, workers=workers,
                on_malformed=events.append,
            )  # fmt: skip
            assert (tmp_path / "out").read_bytes() == (text + "\ufffd").encode(target)
            assert events == [Malformed(len(text.encode()), b"\xff", MalformedKind.INVALID_BYTE)]
            assert summary.characters == len(text) + 1
    for source in DIRECT_TARGETS[:4]:
        src.write_bytes(text.encode(source) + b"!")
        summary = transcode_file(src, tmp_path / "back", source=source, chunk_size=500)
        assert (tmp_path / "back").read_text("utf-8") == text + "\ufffd"
        assert summary.malformed == {MalformedKind.TRUNCATED_AT_END: 1}


@pytest.mark.parametrize(
    ("target", "errors"),
    [("utf-16", "replace"), ("utf-32", "ignore"), ("utf-16", "surrogateescape"),
     ("utf-8-sig", "replace")],
)  # fmt: skip
def test_a_bom_writing_target_writes_one_bom_in_parallel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, errors: str
) -> None:
    monkeypatch.setattr(parallel, "PIECE_BYTES", 1000)
    text = "Grüße, 世界 😀 " * 300
    src = tmp_path / "in"
    src.write_text(text, "utf-8")
    summary = transcode_file(
        src, tmp_path / "out", target=target, errors=errors, chunk_size=500, workers=2
    )
    assert summary.pieces > 2
    assert (tmp_path / "out").read_bytes() == text.encode(target)


def test_direct_strict_stops_at_the_first_unit(tmp_path: Path) -> None:
    from utf8stream import Utf8DecodeError

    src = tmp_path / "in"
    src.write_bytes("ab€".encode() + b"\xe2\x82" + b"cd")
    with pytest.raises(Utf8DecodeError) as info:
        transcode_file(src, tmp_path / "out", target="utf-32-be", errors="strict")
    assert info.value.malformed == Malformed(5, b"\xe2\x82", MalformedKind.INCOMPLETE_SEQUENCE)
    assert info.value.partial == "ab€"  # the output of the failing call
    assert not (tmp_path / "out").exists()
    # UTF-16: the codec's own reason, and where the unit is in the file.
    src.write_bytes("abc".encode("utf-16-le") + b"\x00\xdc" + "d".encode("utf-16-le"))
    with pytest.raises(UnicodeDecodeError) as codec_info:
        transcode_file(src, tmp_path / "out", source="utf-16-le", errors="strict", chunk_size=3)
    assert codec_info.value.reason == "illegal encoding (the unit at byte offset 6)"
    assert codec_info.value.object == b"\x00\xdc"


# -- the one-worker direct path, the parallel cuts, start-up --------------------------


@settings(
    max_examples=examples(200),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    data=st.lists(
        st.sampled_from([*FRAGMENTS, b"\xed\xa0\xbd\xed\xb8\x80", b"\xc0\x80", b"\xed\xb0\x80"]),
        max_size=120,
    ).map(b"".join),
    pieces=st.integers(1, 9),
    variant=st.sampled_from(["utf-8", "wtf-8", "cesu-8", "mutf-8"]),
)
def test_piece_points_are_split_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, pieces: int, variant: str
) -> None:
    """The cuts found from a few bytes read around each are those ``split_points`` finds
    in the whole file."""
    from utf8stream.boundaries import split_points

    src = tmp_path / "in"
    src.write_bytes(data)
    monkeypatch.setattr(parallel, "PIECE_BYTES", max(1, -(-len(data) // pieces)))
    points = parallel.piece_points(str(src), len(data), 1, variant)
    expected_pieces = max(1, -(-len(data) // parallel.PIECE_BYTES))
    assert points == sorted(set(split_points(data, expected_pieces, variant=variant)))


def test_piece_points_of_a_file_cut_short_under_us(tmp_path: Path) -> None:
    """A log truncated after its size was taken: cuts past its end are its end (no
    memory map, so no SIGBUS), and the pieces still cover what is there."""
    src = tmp_path / "in"
    src.write_bytes("žluťoučký kůň ".encode() * 100)  # 2,100 bytes
    points = parallel.piece_points(str(src), 4_000, 4, "utf-8")
    assert points == [0, 1_000, 2_000, 3_000, 4_000]  # the last two pieces are empty
    src.write_bytes(b"")
    assert parallel.piece_points(str(src), 4_000, 4, "utf-8") == [
        0,
        1_000,
        2_000,
        3_000,
        4_000,
    ]


def test_a_parallel_run_over_a_file_cut_short_under_us(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size was taken before the file (a log) was truncated: the run transcodes what
    is there, as the sequential run does, without a crash."""
    text = "žluťoučký kůň 🐴 " * 500
    src = tmp_path / "in"
    src.write_bytes(text.encode())
    real = len(text.encode())
    getsize = os.path.getsize
    monkeypatch.setattr(
        os.path, "getsize", lambda p: 4 * real if str(p) == str(src) else getsize(p)
    )
    monkeypatch.setattr(parallel, "PIECE_BYTES", 2_000)
    summary = transcode_file(src, tmp_path / "out", target="utf-16-le", chunk_size=500, workers=2)
    assert (tmp_path / "out").read_bytes() == text.encode("utf-16-le")
    assert summary.bytes_out == len(text.encode("utf-16-le"))
    assert summary.malformed == {}


def test_direct_strict_failure_in_a_later_chunk_writes_what_precedes_it(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Past the first chunk (the reused buffers), a strict unit still stops the run with
    the output before it written to a stream, as iconv does, and a file left alone."""
    from utf8stream import Utf8DecodeError

    good = "žluťoučký kůň 🐴 ".encode() * 200  # 4,400 bytes
    src = tmp_path / "in"
    src.write_bytes(good + b"\xf0\x9f" + b"more")
    with pytest.raises(Utf8DecodeError) as info:
        transcode_file(src, "-", target="utf-16-be", errors="strict", chunk_size=1000)
    assert info.value.malformed == Malformed(
        len(good), b"\xf0\x9f", MalformedKind.INCOMPLETE_SEQUENCE
    )
    assert capfdbinary.readouterr().out == good.decode().encode("utf-16-be")
    (tmp_path / "out").write_bytes(b"before")
    with pytest.raises(Utf8DecodeError):
        transcode_file(src, tmp_path / "out", target="utf-16-be", errors="strict", chunk_size=1000)
    assert (tmp_path / "out").read_bytes() == b"before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]  # no temporary left


def test_a_failed_write_stops_a_direct_run(tmp_path: Path) -> None:
    """The writer thread's error reaches the caller; the destination is untouched."""

    class Full:
        def __init__(self) -> None:
            self.writes = 0

        def write(self, data: Any) -> int:
            self.writes += 1
            if self.writes == 3:
                raise OSError(28, "No space left on device")
            return len(data)

    src = tmp_path / "in"
    src.write_bytes("kůň ".encode() * 10_000)
    run = runs.new_run(
        "utf-8", "utf-16-le", "replace", "keep", "strict", results.EventCounter(None)
    )
    assert isinstance(run, directrun.DirectRun)
    sink = Full()
    with open(src, "rb") as f, pytest.raises(OSError, match="No space"):
        streaming.transcode_stream(f, sink, run, 1000, None, None)  # type: ignore[arg-type]
    assert sink.writes == 3  # nothing written after the failure


def test_a_one_worker_run_starts_without_the_parallel_machinery(tmp_path: Path) -> None:
    """The CLI's default run imports neither multiprocessing, concurrent.futures nor
    secrets (start-up time counts against iconv on every file)."""
    import subprocess
    import sys

    src = tmp_path / "in"
    src.write_bytes("kůň".encode())
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['utf8stream', 'transcode', '-t', 'utf-16-le', {str(src)!r},"
        f" '-o', {str(tmp_path / 'out')!r}]\n"
        "try:\n"
        "    runpy.run_module('utf8stream', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print(sorted(m for m in ('multiprocessing', 'concurrent.futures', 'secrets', 'mmap')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert done.stdout.decode().strip() == "[]"
    assert (tmp_path / "out").read_bytes() == "kůň".encode("utf-16-le")


def test_a_pool_broken_between_two_pieces_is_a_worker_error() -> None:
    """A worker that dies just after another piece's result came back makes the next
    submission raise BrokenProcessPool: a WorkerError (one line, exit status 2), not a
    traceback."""
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    class Broken:
        def submit(self, *args: object) -> None:
            raise BrokenProcessPool("A child process terminated abruptly")

    window: deque[Any] = deque()
    with pytest.raises(WorkerError, match="worker process died"):
        parallel.submit(Broken(), iter([(3, ("job",))]), window)  # type: ignore[arg-type]
    assert not window


def test_a_run_stopped_before_its_executor_thread_started_stops_cleanly() -> None:
    """Ctrl-C can come between the executor making its manager thread and starting it;
    stopping the run then must not raise (join() of a thread never started does:
    ``RuntimeError: cannot join thread before it is started``, a traceback on the
    command line, seen once in CI on ``transcode -j 2``)."""
    import threading
    from types import SimpleNamespace

    calls: list[str] = []
    pool = SimpleNamespace(
        _processes={},
        _executor_manager_thread=threading.Thread(target=lambda: None),
        shutdown=lambda wait, cancel_futures: calls.append(f"shutdown {wait} {cancel_futures}"),
    )
    turns = SimpleNamespace(stopped=SimpleNamespace(value=0))
    parallel.stop(pool, turns)  # type: ignore[arg-type]
    assert (turns.stopped.value, calls) == (1, ["shutdown False True"])
