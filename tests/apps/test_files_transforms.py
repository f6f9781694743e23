"""``transforms=`` on ``transcode_file``, ``atranscode_file`` and ``Transcoder``: the
output is the oracle's transform of the whole text, for every chunk size, with or
without workers asked for (asyncio and trio)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from _helpers import examples
from _transform_helpers import Pairs, paired
from hypothesis import given, settings
from hypothesis import strategies as st

from utf8stream import (
    Transcoder,
    UnmappableCharacterError,
    atranscode_file,
    open_text,
    transcode_file,
)
from utf8stream.apps.files import parallel
from utf8stream.transcoding import TranscoderCheckpoint

TEXT = "ab\nxaab é€ 😀 " * 200 + "a"


@pytest.fixture(autouse=True)
def split_as_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in ``test_files.py``: a run asked for workers would get them, were it split."""
    monkeypatch.setattr(parallel, "plan", lambda workers, cores, size, *, direct: workers)


@pytest.mark.parametrize("chunk_size", [1, 7, 1000, 1 << 20])
@pytest.mark.parametrize("target", ["utf-8", "utf-16-le"])
def test_transcode_file_transforms_the_whole_text(
    tmp_path: Path, chunk_size: int, target: str
) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode() + b"\xff")
    dst = tmp_path / "out.txt"
    summary = transcode_file(
        src, dst, target=target, chunk_size=chunk_size, workers=3, transforms=[Pairs(), Pairs()]
    )
    expected = paired(paired(TEXT + "\ufffd"))
    assert dst.read_bytes() == expected.encode(target)
    assert summary.characters == len(expected)
    assert summary.malformed_total == 1


def test_an_unmappable_character_after_a_transform_has_its_index_in_that_text(
    tmp_path: Path,
) -> None:
    src = tmp_path / "in.txt"
    src.write_text("abab€", encoding="utf-8")
    with pytest.raises(UnmappableCharacterError) as caught:
        transcode_file(src, tmp_path / "out", target="latin-1", transforms=Pairs())
    assert caught.value.index == 2 and caught.value.offset is None
    assert not (tmp_path / "out").exists()


@pytest.mark.anyio
async def test_atranscode_file_transforms_the_whole_text(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    for workers in (1, 2):
        dst = tmp_path / f"out{workers}.txt"
        await atranscode_file(src, dst, chunk_size=5, workers=workers, transforms=Pairs())
        assert dst.read_text(encoding="utf-8") == paired(TEXT)


@given(st.text(alphabet="abc\né", max_size=40), st.lists(st.integers(0, 60), max_size=6))
@settings(max_examples=examples(100), deadline=None)
def test_a_transcoder_transforms_over_any_chunking(text: str, cuts: list[int]) -> None:
    data = text.encode()
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    transcoder = Transcoder("utf-8", "utf-16-be", transforms=Pairs())
    out = b"".join(transcoder.transcode(data[a:b]) for a, b in itertools.pairwise(edges))
    out += transcoder.transcode(b"", final=True)
    assert out == paired(text).encode("utf-16-be")


@pytest.mark.anyio
async def test_open_text_transforms_the_text(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT.encode())
    async with await open_text(src, transforms=Pairs()) as stream:
        assert "".join([text async for text in stream]) == paired(TEXT)


@given(
    st.text(alphabet="abc\né€", max_size=40),
    st.integers(0, 60),
    st.sampled_from(["utf-8", "utf-16-le", "cp1252"]),
)
@settings(max_examples=examples(100), deadline=None)
def test_a_transcoder_resumed_from_its_checkpoint_carries_the_transforms_on(
    text: str, at: int, target: str
) -> None:
    data = text.encode("utf-16-le")
    at %= len(data) + 1
    first = Transcoder("utf-16-le", target, transforms=[Pairs(), Pairs()])
    head = first.transcode(data[:at])
    saved = TranscoderCheckpoint.from_json(first.checkpoint().to_json())
    assert saved == first.checkpoint() and saved.transform is not None
    resumed = Transcoder.from_checkpoint(saved)
    tail = resumed.transcode(data[at:]) + resumed.transcode(b"", final=True)
    assert head + tail == paired(paired(text)).encode(target)
