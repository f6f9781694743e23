"""State, positions and checkpoints (DESIGN.md section 3).

"Decode A, checkpoint, restore (through JSON, in a fresh object or a new process),
decode B" must give the same text, events and statistics as one decoder over A+B.
"""

from __future__ import annotations

import codecs
import copy
import dataclasses
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from _helpers import (
    HEAVY,
    K,
    chunked,
    event_tuples,
    feed,
    reference_decode,
    strict_loop,
)
from hypothesis import given
from hypothesis import strategies as st

from utf8stream import DecoderCheckpoint, Malformed, Utf8DecodeError, Utf8Decoder

#: Every test here runs with the C accelerator and in pure Python (conftest).
pytestmark = pytest.mark.usefixtures("implementation")

#: An operation on a decoder: feed some bytes, or declare a gap (with ``lost`` or None).
Op = tuple[str, Any]
Events = list[tuple[int, bytes, K]]
#: Restore from the checkpoint object itself, and from its JSON text.
VIA_JSON = pytest.mark.parametrize("via_json", [False, True], ids=["object", "json"])


def run(decoder: Utf8Decoder, ops: list[Op]) -> str:
    out = []
    for op, arg in ops:
        if op == "feed":
            out.append(decoder.decode(arg))
        else:
            decoder.mark_gap(arg)
    return "".join(out)


def split_ops(ops: list[Op], at: int, gap_first: bool) -> tuple[list[Op], list[Op]]:
    """Cut a list of operations at byte offset ``at`` of the fed data.

    A gap exactly at the cut goes to the first half when ``gap_first``.
    """
    first: list[Op] = []
    second: list[Op] = []
    pos = 0
    for op, arg in ops:
        if op == "gap":
            goes_first = pos < at or (pos == at and gap_first)
            (first if goes_first else second).append((op, arg))
            continue
        cut = min(max(at - pos, 0), len(arg))
        if cut:
            first.append((op, arg[:cut]))
        if cut < len(arg):
            second.append((op, arg[cut:]))
        elif not arg:
            (first if pos < at else second).append((op, arg))
        pos += len(arg)
    return first, second


def normalise(ops: list[Op]) -> list[Op]:
    """Merge adjacent feeds and drop empty ones: what the decoder should not care about."""
    out: list[Op] = []
    for op, arg in ops:
        if op == "feed":
            if not arg:
                continue
            if out and out[-1][0] == "feed":
                out[-1] = ("feed", out[-1][1] + arg)
                continue
        out.append((op, arg))
    return out


def ops_for(data: bytes, gap_at: int | None = None, lost: int | None = None) -> list[Op]:
    if gap_at is None:
        return [("feed", data)]
    return [("feed", data[:gap_at]), ("gap", lost), ("feed", data[gap_at:])]


def whole_run(ops: list[Op], **kwargs: Any) -> tuple[str, Events, Utf8Decoder]:
    events: list[Malformed] = []
    decoder = Utf8Decoder(on_malformed=events.append, **kwargs)
    text = run(decoder, ops) + decoder.decode(b"", final=True)
    return text, event_tuples(events), decoder


def resumed_run(
    first: list[Op], second: list[Op], *, via_json: bool, **kwargs: Any
) -> tuple[str, Events, Utf8Decoder]:
    events: list[Malformed] = []
    original = Utf8Decoder(on_malformed=events.append, **kwargs)
    text = run(original, first)
    snapshot = original.checkpoint()
    kept = copy.deepcopy(snapshot)
    as_json = snapshot.to_json() if via_json else ""
    head_events = event_tuples(events)
    # The original goes on with other input: the snapshot must not change with it.
    original.decode(b"\xff\xe2\x82 trailing junk", final=True)
    assert snapshot == kept
    restored_cp = DecoderCheckpoint.from_json(as_json) if via_json else snapshot
    assert restored_cp == kept
    tail_events: list[Malformed] = []
    resumed = Utf8Decoder.from_checkpoint(restored_cp, on_malformed=tail_events.append)
    text += run(resumed, second) + resumed.decode(b"", final=True)
    return text, head_events + event_tuples(tail_events), resumed


MIXED = "añ€😀 z\n".encode()
DAMAGED = b"a\xe2\x82\xff\xed\xa0\x80\xf0\x9f\x98\xc0b\xe1\x80\xf4\x90\x80\x80c\xf0\x90\x80"
SCENARIOS: list[tuple[str, list[Op], dict[str, Any]]] = [
    ("valid", ops_for(MIXED * 2), {}),
    ("damaged", ops_for(DAMAGED), {}),
    ("damaged, offset", ops_for(DAMAGED), {"start_offset": 12345}),
    ("surrogateescape", ops_for(DAMAGED), {"errors": "surrogateescape"}),
    ("gap in a character", ops_for(MIXED + MIXED, gap_at=4, lost=7), {}),
    ("gap before continuations", ops_for(b"ab\x80\x80\x80\x80cd\xff", gap_at=2), {}),
    ("gap, skip", ops_for(DAMAGED, gap_at=9, lost=3), {"gap": "skip"}),
    ("joined mid-way", [("gap", None), ("feed", MIXED[2:] + DAMAGED)], {"start_offset": 2}),
]


def every_split(ops: list[Op]) -> Iterator[tuple[int, bool, list[Op], list[Op]]]:
    total = sum(len(arg) for op, arg in ops if op == "feed")
    for at in range(total + 1):
        for gap_first in (True, False):
            yield at, gap_first, *split_ops(ops, at, gap_first)


def test_split_ops_keeps_order_and_bytes() -> None:
    ops = ops_for(b"abcdef", gap_at=3, lost=2)
    for at, gap_first, first, second in every_split(ops):
        assert normalise(first + second) == normalise(ops)
        assert sum(len(a) for o, a in first if o == "feed") == at
        assert [o for o, _ in first + second if o == "gap"] == ["gap"]
        gap_in_first = any(o == "gap" for o, _ in first)
        assert gap_in_first == (at > 3 or (at == 3 and gap_first))


@VIA_JSON
@pytest.mark.parametrize(("name", "ops", "kwargs"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_resume_at_every_split_point(
    name: str, ops: list[Op], kwargs: dict[str, Any], via_json: bool
) -> None:
    expected_text, expected_events, whole = whole_run(ops, **kwargs)
    for at, gap_first, first, second in every_split(ops):
        text, events, resumed = resumed_run(first, second, via_json=via_json, **kwargs)
        where = (name, at, gap_first)
        assert text == expected_text, where
        assert events == expected_events, where
        assert resumed.statistics() == whole.statistics(), where
        assert resumed.position == whole.position, where


def test_expected_values_of_the_damaged_scenario_come_from_the_reference() -> None:
    # Guard against a scenario that silently tests nothing: the one-decoder run these
    # tests compare with is itself right.
    text, events, _ = whole_run(ops_for(DAMAGED))
    assert text == DAMAGED.decode("utf-8", "replace")
    assert events == reference_decode(DAMAGED).units


@VIA_JSON
@HEAVY
@given(
    case=chunked(),
    draw=st.data(),
    errors=st.sampled_from(["replace", "ignore", "backslashreplace", "surrogateescape"]),
)
def test_resume_property(
    case: tuple[bytes, list[bytes]], draw: st.DataObject, errors: str, via_json: bool
) -> None:
    data, chunks = case
    ops: list[Op] = [("feed", c) for c in chunks]
    if draw.draw(st.booleans(), label="with gap"):
        where = draw.draw(st.integers(0, len(ops)), label="gap index")
        lost = draw.draw(st.one_of(st.none(), st.integers(0, 9)), label="lost")
        ops.insert(where, ("gap", lost))
    at = draw.draw(st.integers(0, len(data)), label="split")
    gap_first = draw.draw(st.booleans(), label="gap first")
    expected_text, expected_events, whole = whole_run(ops, errors=errors)
    first, second = split_ops(ops, at, gap_first)
    text, events, resumed = resumed_run(first, second, via_json=via_json, errors=errors)
    assert (text, events) == (expected_text, expected_events)
    assert resumed.statistics() == whole.statistics()


_CHILD = r"""
import json, sys
from utf8stream import DecoderCheckpoint, Utf8Decoder

for line in sys.stdin:
    job = json.loads(line)
    events = []
    decoder = Utf8Decoder.from_checkpoint(
        DecoderCheckpoint.from_json(job["checkpoint"]), on_malformed=events.append
    )
    text = ""
    for op, arg in job["ops"]:
        if op == "feed":
            text += decoder.decode(bytes.fromhex(arg))
        else:
            decoder.mark_gap(arg)
    text += decoder.decode(b"", final=True)
    print(json.dumps({"text": text,
                      "events": [[e.offset, e.data.hex(), e.kind.name] for e in events]}))
"""


def test_resume_in_a_new_process() -> None:
    (ops, kwargs) = next((o, k) for name, o, k in SCENARIOS if name == "gap, skip")
    expected_text, expected_events, _ = whole_run(ops, **kwargs)
    jobs = []
    heads = []
    for _, _, first, second in every_split(ops):
        events: list[Malformed] = []
        decoder = Utf8Decoder(on_malformed=events.append, **kwargs)
        heads.append((run(decoder, first), event_tuples(events)))
        wire_ops = [(op, arg.hex() if op == "feed" else arg) for op, arg in second]
        jobs.append(json.dumps({"checkpoint": decoder.checkpoint().to_json(), "ops": wire_ops}))
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input="\n".join(jobs) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    results = [json.loads(line) for line in child.stdout.splitlines()]
    assert len(results) == len(jobs)
    for (head_text, head_events), result in zip(heads, results, strict=True):
        tail_events = [(o, bytes.fromhex(h), K[name]) for o, h, name in result["events"]]
        assert head_text + result["text"] == expected_text
        assert head_events + tail_events == expected_events


def test_json_round_trip_of_a_fresh_checkpoint() -> None:
    snapshot = Utf8Decoder().checkpoint()
    assert DecoderCheckpoint.from_json(snapshot.to_json()) == snapshot


def test_checkpoint_is_immutable_and_json_is_plain() -> None:
    decoder = Utf8Decoder(start_offset=3)
    decoder.decode(b"\xff\xf0\x9f")
    snapshot = decoder.checkpoint()
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.position = 0  # type: ignore[misc]
    raw = json.loads(snapshot.to_json())
    assert isinstance(raw, dict)
    assert snapshot.position == 6
    with pytest.raises(ValueError):
        DecoderCheckpoint.from_json('{"hello": 1}')
    with pytest.raises(ValueError):
        DecoderCheckpoint.from_json("[]")


@VIA_JSON
def test_strict_checkpoint_after_an_error_keeps_the_unread_rest(via_json: bool) -> None:
    data = b"ab\xffcd\xe0\x80ef\xe1"
    reference_text, reference_errors = strict_loop(Utf8Decoder("strict"), [data], 20)
    original = Utf8Decoder("strict")
    with pytest.raises(Utf8DecodeError) as info:
        original.decode(data)
    assert info.value.partial == "ab"
    snapshot = original.checkpoint()
    if via_json:
        snapshot = DecoderCheckpoint.from_json(snapshot.to_json())
    resumed = Utf8Decoder.from_checkpoint(snapshot)
    text, errors = strict_loop(resumed, [], 20)
    assert "ab" + text == reference_text == "abcdef"
    assert [info.value.offset] + [e.offset for e in errors] == [e.offset for e in reference_errors]
    assert [e.offset for e in reference_errors] == [2, 5, 6, 9]


# -- getstate / setstate / reset --------------------------------------------------------


@HEAVY
@given(chunked(), st.data())
def test_setstate_with_empty_buffer_then_refeeding_continues_identically(
    case: tuple[bytes, list[bytes]], draw: st.DataObject
) -> None:
    data, _ = case
    at = draw.draw(st.integers(0, len(data)), label="split")
    gap = draw.draw(st.booleans(), label="gap before split")
    rest = data[at:]
    original = Utf8Decoder()
    original.decode(data[:at])
    if gap:
        original.mark_gap()
    buffered, flags = original.getstate()
    assert isinstance(buffered, bytes)
    assert isinstance(flags, int)
    # What io.TextIOWrapper does in tell()/seek(): a decoder set to (b"", flags), then
    # given the buffered bytes again, must be in the same state as the original.
    twin = Utf8Decoder()
    twin.setstate((b"", flags))
    assert twin.decode(buffered) == ""
    assert twin.getstate() == (buffered, flags)
    tail = original.decode(rest) + original.decode(b"", final=True)
    assert twin.decode(rest) + twin.decode(b"", final=True) == tail
    # And setstate(getstate()) on a fresh decoder is the codecs round trip.
    again = Utf8Decoder()
    again.setstate((buffered, flags))
    assert again.decode(rest, final=True) == tail


def test_getstate_of_a_fresh_decoder() -> None:
    assert Utf8Decoder().getstate() == (b"", 0)


def test_reset_returns_to_start_offset() -> None:
    events: list[Malformed] = []
    decoder = Utf8Decoder(start_offset=40, on_malformed=events.append)
    decoder.decode(b"abc\xff\xe2\x82")
    decoder.mark_gap(lost=3)
    decoder.reset()
    assert decoder.position == 40
    assert decoder.getstate() == (b"", 0)
    assert decoder.buffered == 0
    events.clear()
    assert "".join(feed(decoder, [b"\x80x\xff"])) == "\ufffdx\ufffd"  # no gap left open
    assert event_tuples(events) == [
        (40, b"\x80", K.UNEXPECTED_CONTINUATION),
        (42, b"\xff", K.INVALID_BYTE),
    ]


_TEST_CODEC = "utf8streamtestcodec"


def _search(name: str) -> codecs.CodecInfo | None:
    if name != _TEST_CODEC:
        return None
    utf8 = codecs.lookup("utf-8")
    return codecs.CodecInfo(
        utf8.encode,
        utf8.decode,
        incrementalencoder=utf8.incrementalencoder,
        incrementaldecoder=Utf8Decoder,
        name=_TEST_CODEC,
    )


@pytest.fixture
def test_codec() -> Iterator[str]:
    codecs.register(_search)
    try:
        yield _TEST_CODEC
    finally:
        codecs.unregister(_search)


@pytest.mark.parametrize(
    "data",
    [
        "plain ascii\nand ñandú, 水, 😀 across lines\n".encode() * 3,
        b"bad \xff bytes \xe2\x82 and \xed\xa0\x80 here \xf0\x9f\x98",
    ],
)
def test_text_io_wrapper_tell_and_seek(test_codec: str, data: bytes) -> None:
    expected = data.decode("utf-8", "replace")
    stream = io.TextIOWrapper(io.BytesIO(data), encoding=test_codec, errors="replace")
    stream._CHUNK_SIZE = 5  # small reads: decoder state crosses every kind of boundary
    marks = []
    read = ""
    while True:
        marks.append((stream.tell(), len(read)))
        char = stream.read(1)
        if not char:
            break
        read += char
    assert read == expected
    for cookie, chars_before in reversed(marks):
        stream.seek(cookie)
        assert stream.read() == expected[chars_before:], cookie


@VIA_JSON
@HEAVY
@given(case=chunked(), draw=st.data())
def test_strict_resume_property(
    case: tuple[bytes, list[bytes]], draw: st.DataObject, via_json: bool
) -> None:
    # A strict-mode caller that goes on after each error, with the decoder swapped for a
    # restored copy before its k-th call (possibly just after an error, with input unread).
    data, chunks = case
    expected_text, expected_errors = strict_loop(Utf8Decoder("strict"), chunks, len(data))
    calls = [(chunk, False) for chunk in chunks] + [(b"", True)]
    swap_before = draw.draw(st.integers(0, len(calls) + len(expected_errors)), label="k")
    decoder = Utf8Decoder("strict")
    text = ""
    offsets = []
    n = 0
    for chunk, final in calls:
        pending_call: bytes | None = chunk
        while pending_call is not None:
            if n == swap_before:
                snapshot = decoder.checkpoint()
                if via_json:
                    snapshot = DecoderCheckpoint.from_json(snapshot.to_json())
                decoder = Utf8Decoder.from_checkpoint(snapshot)
            n += 1
            try:
                text += decoder.decode(pending_call, final)
                pending_call = None
            except Utf8DecodeError as exc:
                text += exc.partial
                offsets.append(exc.offset)
                pending_call = b""
    assert text == expected_text
    assert offsets == [e.offset for e in expected_errors]


def test_carried_surrogates_survive_json() -> None:
    """A lone high half then a surrogateescape byte (WTF-8): JSON joins the escapes of a
    high and a low surrogate into one character, so such text is written as code points."""

    def stop(event: Malformed) -> None:
        raise RuntimeError(event)

    data = b"\xed\xa0\xbd\xed\xed\xa0\x80"
    decoder = Utf8Decoder("surrogateescape", variant="wtf-8", on_malformed=stop)
    with pytest.raises(RuntimeError):
        decoder.decode(data, False)
    cp = decoder.checkpoint()
    assert cp.carry == "\ud83d\udced"
    restored = DecoderCheckpoint.from_json(cp.to_json())
    assert restored == cp
    assert Utf8Decoder.from_checkpoint(restored).decode(b"", True) == "\ud83d\udced\ud800"
    plain = Utf8Decoder()
    plain.decode(b"ab\xe2", False)
    assert "carry_code_points" not in plain.checkpoint().to_json()  # the usual form
