"""The shared conformance corpus (../shared/corpus, see its README.md).

Each test walks every vector of one file over several chunkings and collects all
mismatches, so one failure report names every failing vector.  Expected values come from
the corpus files; where a source disagrees with this project by design, the comment says
why and how the expectation is adjusted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers import (
    chunkings,
    decode_chunks,
    every_chunking,
    feed,
    reference_decode,
    split_at,
    strict_loop,
    trailing_proper_prefix,
)

from utf8stream import Utf8DecodeError, Utf8Decoder

#: Every test here runs with the C accelerator and in pure Python (conftest).
pytestmark = pytest.mark.usefixtures("implementation")


def _load(corpus_dir: Path, name: str) -> list[dict[str, Any]]:
    vectors = json.loads((corpus_dir / name).read_text(encoding="utf-8"))
    assert isinstance(vectors, list) and vectors, f"{name} holds no vectors"
    return vectors


def _some_chunkings(data: bytes) -> Iterator[list[bytes]]:
    """Whole, byte by byte (with empty chunks), every 2-way split, and odd sizes."""
    yield from chunkings(data)
    for cut in range(1, len(data)):
        yield split_at(data, [cut])
    for size in (2, 3, 5):
        yield [data[i : i + size] for i in range(0, len(data), size)]
    if len(data) <= 8:
        yield from every_chunking(data)


def _replace_everywhere(data: bytes, expected: str, label: str, failures: list[str]) -> None:
    for chunks in _some_chunkings(data):
        for with_last in (False, True):
            text, _ = decode_chunks(chunks, flush_with_last=with_last)
            if text != expected:
                failures.append(f"{label}: {data.hex()} in {chunks}: {text!r} != {expected!r}")
                return


def _strict_errors(data: bytes, chunks: list[bytes]) -> tuple[str, list[Utf8DecodeError]]:
    return strict_loop(Utf8Decoder("strict"), chunks, limit=len(data) + 1)


# -- Unicode chapter 3 maximal-subpart tables -------------------------------------------


def test_unicode_maximal_subpart_tables(corpus_dir: Path) -> None:
    failures: list[str] = []
    vectors = _load(corpus_dir, "unicode_maximal_subpart_tables.json")
    for v in vectors:
        data = bytes.fromhex(v["bytes_hex"])
        assert v["expected"].count("\ufffd") == v["n_fffd"], v["table"]
        _replace_everywhere(data, v["expected"], v["table"], failures)
        _, events = decode_chunks([data])
        if len(events) != v["n_fffd"]:
            failures.append(f"{v['table']}: {len(events)} events, expected {v['n_fffd']}")
    assert not failures, "\n".join(failures)


# -- CPython's own UTF-8 vectors --------------------------------------------------------


def test_cpython_vectors(corpus_dir: Path) -> None:
    failures: list[str] = []
    vectors = _load(corpus_dir, "cpython_utf8_replace_vectors.json")
    assert {v["errors"] for v in vectors} <= {"strict", "replace"}
    for v in vectors:
        data = bytes.fromhex(v["bytes_hex"])
        expected = v["expected"]
        label = f"{v['test']} ({v['source'].rsplit(':', 1)[-1]})"
        assert expected.count("\ufffd") == v["n_fffd"], label
        _replace_everywhere(data, expected, label, failures)
        # What CPython's test also checks: a following byte survives, and "ignore".
        text, _ = decode_chunks([data + b"b"])
        if text != expected + "b":
            failures.append(f"{label}: {data.hex()}+62 gave {text!r}")
        text, _ = decode_chunks([data], errors="ignore")
        if text != expected.replace("\ufffd", ""):
            failures.append(f"{label}: ignore gave {text!r}")
        for chunks in chunkings(data):
            text, errors = _strict_errors(data, chunks)
            if v["errors"] == "strict" and (errors or text != expected):
                failures.append(f"{label}: strict {data.hex()} gave {text!r}, {errors}")
                break
            if v["errors"] == "replace" and len(errors) != v["n_fffd"]:
                failures.append(f"{label}: strict raised {len(errors)}x, not {v['n_fffd']}x")
                break
    assert not failures, "\n".join(failures)


# -- web-platform-tests -----------------------------------------------------------------


def _wpt(corpus_dir: Path) -> list[dict[str, Any]]:
    return _load(corpus_dir, "wpt_utf8_vectors.json")


def _label(v: dict[str, Any]) -> str:
    return f"{v.get('name', '')} {v['source'].rsplit('/', 1)[-1]} {v.get('bytes_hex')}"


def test_wpt_fatal_vectors_raise_in_strict_mode(corpus_dir: Path) -> None:
    failures: list[str] = []
    fatal = [v for v in _wpt(corpus_dir) if v.get("fatal")]
    assert len(fatal) >= 30
    for v in fatal:
        data = bytes.fromhex(v["bytes_hex"])
        for chunks in _some_chunkings(data):
            # A TextDecoder with fatal: true throws; ours raises Utf8DecodeError, and a
            # caller that goes on loses only the bad units.
            text, errors = _strict_errors(data, chunks)
            if not errors or text != data.decode("utf-8", "ignore"):
                failures.append(f"{_label(v)} in {chunks}: {errors}, {text!r}")
                break
        if v["expected"] is not None:  # the same bytes in replacement mode
            _replace_everywhere(data, v["expected"], _label(v), failures)
    assert not failures, "\n".join(failures)


def test_wpt_incomplete_input_raises_only_at_the_end(corpus_dir: Path) -> None:
    # "throws (stream errors)": the truncated sequence is an error only once the stream
    # ends, so decoding it with final=False must not raise.
    (v,) = [v for v in _wpt(corpus_dir) if v.get("fatal") == "throws (stream errors)"]
    decoder = Utf8Decoder("strict")
    assert decoder.decode(bytes.fromhex(v["bytes_hex"])) == ""
    with pytest.raises(Utf8DecodeError):
        decoder.decode(b"", final=True)


def test_wpt_streaming_calls_return_exactly_the_expected_text(corpus_dir: Path) -> None:
    # Eager output: each call must return exactly what the web platform returns.
    failures: list[str] = []
    streaming = [v for v in _wpt(corpus_dir) if "calls" in v]
    assert len(streaming) >= 15
    for v in streaming:
        decoder = Utf8Decoder()
        got = []
        for call in v["calls"]:
            got.append(decoder.decode(bytes.fromhex(call["bytes_hex"]), final=not call["stream"]))
        wanted = [call["expected"] for call in v["calls"]]
        if got != wanted:
            failures.append(f"{_label(v)}: calls returned {got!r}, expected {wanted!r}")
        if "".join(wanted) != v["expected"]:
            failures.append(f"{_label(v)}: the vector's calls do not add up")
    assert not failures, "\n".join(failures)


def _eager_outputs(chunks: list[bytes]) -> list[str]:
    """What each call must return: the text made certain by the input so far, less what
    earlier calls returned (a trailing proper prefix is all that may wait)."""
    outputs = []
    fed = b""
    done = ""
    for chunk in chunks:
        fed += chunk
        certain = fed[: len(fed) - len(trailing_proper_prefix(fed))].decode("utf-8", "replace")
        outputs.append(certain[len(done) :])
        done = certain
    outputs.append(fed.decode("utf-8", "replace")[len(done) :])
    return outputs


def test_wpt_stream_chunks(corpus_dir: Path) -> None:
    # Streams API: every output chunk is non-empty, so empty results are not chunks.
    failures: list[str] = []
    chunked_vectors = [v for v in _wpt(corpus_dir) if "chunks_hex" in v]
    assert len(chunked_vectors) >= 10
    for v in chunked_vectors:
        chunks = [bytes.fromhex(c) for c in v["chunks_hex"]]
        got = [text for text in feed(Utf8Decoder(), chunks) if text]
        if "expected_chunks" in v:
            wanted = v["expected_chunks"]
        else:
            # The empty-chunk variants give no chunks, only "exactly 2 output chunks
            # expected": each chunk is then the text made certain by its input.
            assert "exactly 2 output chunks" in v["note"]
            wanted = [text for text in _eager_outputs(chunks) if text]
            assert len(wanted) == 2
        if got != wanted or "".join(got) != v["expected"]:
            failures.append(f"{_label(v)} {v['chunks_hex']}: {got!r} != {wanted!r}")
    assert not failures, "\n".join(failures)


def test_wpt_windowed_streaming(corpus_dir: Path) -> None:
    (v,) = [v for v in _wpt(corpus_dir) if "chunking" in v]
    assert "windows of 1,2,3,4,5 bytes" in v["chunking"]
    data = bytes.fromhex(v["bytes_hex"])
    for window in range(1, 6):
        chunks = [data[i : i + window] for i in range(0, len(data), window)]
        text, events = decode_chunks(chunks)
        assert (text, events) == (v["expected"], []), window


def test_wpt_replacement_vectors(corpus_dir: Path) -> None:
    failures: list[str] = []
    plain = [
        v
        for v in _wpt(corpus_dir)
        if v.get("mode") == "replacement" and not v.get("fatal") and v.get("bytes_hex")
    ]
    for v in plain:
        data = bytes.fromhex(v["bytes_hex"])
        if "expected_not" in v:
            text, _ = decode_chunks([data])
            if text == v["expected_not"] or text != data.decode("utf-8", "replace"):
                failures.append(f"{_label(v)}: {text!r}")
            continue
        expected = v["expected"]
        if data.startswith(b"\xef\xbb\xbf") and "BOM is stripped" in v.get("note", ""):
            # TextDecoder strips a leading UTF-8 BOM; this project's utf-8 decoder keeps
            # it as U+FEFF like CPython's codec (corpus README "BOM"; DESIGN.md leaves BOM
            # handling to an explicit option of the Transcoder, section 5).
            assert data.decode("utf-8") == "\ufeff" + expected
            expected = "\ufeff" + expected
        _replace_everywhere(data, expected, _label(v), failures)
    assert not failures, "\n".join(failures)


def test_wpt_encoder_vectors_decode_back(corpus_dir: Path) -> None:
    # The TextEncoder vectors give UTF-16 input; a WHATWG encoder turns lone surrogates
    # into U+FFFD.  Whatever bytes that makes must decode to the vector's expectation.
    failures: list[str] = []
    encoder_vectors = [v for v in _wpt(corpus_dir) if v.get("direction") == "encode"]
    assert encoder_vectors
    for v in encoder_vectors:
        units = b"".join(int(u, 16).to_bytes(2, "big") for u in v["input_utf16"])
        data = units.decode("utf-16-be", "replace").encode("utf-8")
        if v["bytes_hex"] is not None and data.hex() != v["bytes_hex"]:
            failures.append(f"{_label(v)}: our model of TextEncoder gave {data.hex()}")
        _replace_everywhere(data, v["expected"], _label(v), failures)
    assert not failures, "\n".join(failures)


def test_every_wpt_vector_is_used(corpus_dir: Path) -> None:
    # The tests above select vectors by their fields; none may fall through the cracks.
    for v in _wpt(corpus_dir):
        assert (
            v.get("fatal")
            or "calls" in v
            or "chunks_hex" in v
            or "chunking" in v
            or v.get("direction") == "encode"
            or (v.get("mode") == "replacement" and v.get("bytes_hex"))
        ), v


# -- Markus Kuhn's stress test ----------------------------------------------------------


def test_kuhn_boundary_vectors(corpus_dir: Path) -> None:
    failures: list[str] = []
    for v in _load(corpus_dir, "kuhn_section2_boundary_vectors.json"):
        data = bytes.fromhex(v["bytes_hex"])
        for chunks in _some_chunkings(data):
            if v["valid_rfc3629"]:
                text, errors = _strict_errors(data, chunks)
                if errors or text != chr(int(v["code_point"][2:], 16)):
                    failures.append(f"{v['id']} in {chunks}: {text!r} {errors}")
                    break
            else:
                text, events = decode_chunks(chunks)
                if "\ufffd" not in text or not events:
                    failures.append(f"{v['id']} in {chunks}: {text!r}")
                    break
    assert not failures, "\n".join(failures)


def _only_chars_that_were_there(raw: bytes, line: str) -> bool:
    """Each run of text between U+FFFDs occurs in the raw bytes, in order."""
    pos = 0
    for run in line.split("\ufffd"):
        found = raw.find(run.encode("utf-8"), pos)
        if found < 0:
            return False
        pos = found + len(run.encode("utf-8"))
    return True


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 7, 64, 4096])
def test_kuhn_stress_test(corpus_dir: Path, chunk_size: int | None) -> None:
    data = (corpus_dir / "UTF-8-test.txt").read_bytes()
    assert len(data) == 22835
    if chunk_size is None:
        chunks = [data]
    else:
        chunks = [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)]
    text, events = decode_chunks(chunks)
    raw_lines = data.split(b"\n")
    lines = text.split("\n")
    assert len(lines) == len(raw_lines)  # line count survives
    n_malformed = 0
    for number, (raw, line) in enumerate(zip(raw_lines, lines, strict=True), start=1):
        ref = reference_decode(raw)
        ascii_in = bytes(b for b in raw if b < 0x80).decode("ascii")
        assert "".join(c for c in line if c < "\x80") == ascii_in, number  # all ASCII
        if not ref.units:
            assert line == raw.decode("utf-8"), number  # valid lines decode exactly
        else:
            n_malformed += 1
            assert "\ufffd" in line, number
            assert _only_chars_that_were_there(raw, line), number
    assert n_malformed >= 60  # the file is deliberately full of malformed lines
    # Beyond Kuhn's requirements: the Unicode practice, exactly.
    assert text == data.decode("utf-8", "replace")
    assert events == reference_decode(data).units
