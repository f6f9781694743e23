"""Shared test helpers: a chunked feeder, chunking strategies, a reference decoder, and
what the follower tests share (``append`` to a file, ``take_lines`` from a follower).

The reference decoder (``reference_decode``) is written here directly from Unicode
Table 3-7 and the kind table of DESIGN.md section 2, as a deliberately slow per-byte walk
that builds code points by hand.  It shares no code with ``utf8stream`` (not even
``_bytes``), so expected events never come from the code under test.  CPython's
``bytes.decode("utf-8", ...)`` is the second, independent oracle for text.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple

import anyio
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from utf8stream import Malformed, MalformedKind, Utf8DecodeError, Utf8Decoder
from utf8stream.core import _accel
from utf8stream.lines import ByteLine, LineEngine

if TYPE_CHECKING:  # the follower tests' helpers below import the apps layer when called
    from utf8stream.apps.follow import Follower, Line
    from utf8stream.follower import ManyFollower

K = MalformedKind


def examples(count: int) -> int:
    """``count`` scaled as the loaded profile scales Hypothesis' default ``max_examples``
    (a quarter under the ``ci`` and ``dev`` profiles, ten times under ``deep``)."""
    loaded = settings.default
    assert loaded is not None
    return count * loaded.max_examples // settings.get_profile("default").max_examples


# Settings objects inherit what they do not set (derandomize, database, deadline...) from
# the profile loaded in conftest.py.

#: Hypothesis settings for the core properties: enough examples to find boundary cases,
#: few enough that the whole suite stays well under a minute on two cores.
CORE = settings(
    max_examples=examples(400),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: For properties that run many decoders per example (checkpoints, policies).
HEAVY = settings(CORE, max_examples=examples(200))


# -- the reference: Unicode Table 3-7, one byte at a time ------------------------------


def _table_3_7(lead: int) -> tuple[int, int, int] | None:
    """``(sequence length, lowest second byte, highest second byte)`` for a lead byte."""
    if 0xC2 <= lead <= 0xDF:
        return 2, 0x80, 0xBF
    if lead == 0xE0:
        return 3, 0xA0, 0xBF
    if 0xE1 <= lead <= 0xEC or lead in (0xEE, 0xEF):
        return 3, 0x80, 0xBF
    if lead == 0xED:
        return 3, 0x80, 0x9F
    if lead == 0xF0:
        return 4, 0x90, 0xBF
    if 0xF1 <= lead <= 0xF3:
        return 4, 0x80, 0xBF
    if lead == 0xF4:
        return 4, 0x80, 0x8F
    return None


def _lone_kind(b: int) -> MalformedKind:
    """Kind of a byte that can never start a character (DESIGN.md section 2)."""
    if 0x80 <= b <= 0xBF:
        return K.UNEXPECTED_CONTINUATION
    if b in (0xC0, 0xC1):
        return K.OVERLONG
    if 0xF5 <= b <= 0xF7:
        return K.OUT_OF_RANGE
    assert b >= 0xF8, hex(b)
    return K.INVALID_BYTE


#: A lead byte followed by a continuation byte outside its allowed second-byte range.
_BAD_SECOND = {0xE0: K.OVERLONG, 0xED: K.SURROGATE, 0xF0: K.OVERLONG, 0xF4: K.OUT_OF_RANGE}


class Unit(NamedTuple):
    """A malformed unit as (absolute offset, bytes, kind): compares equal to event tuples."""

    offset: int
    data: bytes
    kind: MalformedKind


@dataclass
class Reference:
    """What a correct decoder makes of some bytes: characters and units, in order."""

    pieces: list[str | Unit]
    #: Trailing proper prefix of a well-formed sequence (only when ``final=False``).
    held: bytes

    @property
    def units(self) -> list[Unit]:
        return [p for p in self.pieces if isinstance(p, Unit)]

    def render(self, policy: str | Callable[[Unit], str] = "replace") -> str:
        """The text an error policy gives, built from the pieces (not from any codec)."""
        replace = policy if callable(policy) else _RENDERERS[policy]
        return "".join(p if isinstance(p, str) else replace(p) for p in self.pieces)


_RENDERERS: dict[str, Callable[[Unit], str]] = {
    "replace": lambda u: "\ufffd",
    "ignore": lambda u: "",
    "backslashreplace": lambda u: "".join(f"\\x{b:02x}" for b in u.data),
    "surrogateescape": lambda u: "".join(chr(0xDC00 + b) for b in u.data),
}


def reference_decode(data: bytes, *, final: bool = True, start_offset: int = 0) -> Reference:
    """Cut ``data`` into characters and maximal subparts, per Unicode Table 3-7."""
    pieces: list[str | Unit] = []
    held = b""
    n = len(data)
    i = 0
    while i < n:
        lead = data[i]
        if lead < 0x80:
            pieces.append(chr(lead))
            i += 1
            continue
        rule = _table_3_7(lead)
        if rule is None:
            pieces.append(Unit(start_offset + i, data[i : i + 1], _lone_kind(lead)))
            i += 1
            continue
        length, lo, hi = rule
        code_point = lead & (0x1F if length == 2 else 0x0F if length == 3 else 0x07)
        j = i + 1
        while j < i + length:
            if j == n:  # the input ends inside a sequence that could still complete
                if final:
                    pieces.append(Unit(start_offset + i, data[i:j], K.TRUNCATED_AT_END))
                else:
                    held = data[i:j]
                i = n
                break
            byte = data[j]
            if not lo <= byte <= hi:
                if j == i + 1 and 0x80 <= byte <= 0xBF:
                    kind = _BAD_SECOND[lead]
                else:
                    kind = K.INCOMPLETE_SEQUENCE
                pieces.append(Unit(start_offset + i, data[i:j], kind))
                i = j  # the breaking byte is examined again as a new start
                break
            code_point = (code_point << 6) | (byte & 0x3F)
            lo, hi = 0x80, 0xBF
            j += 1
        else:
            pieces.append(chr(code_point))
            i = j
    return Reference(pieces, held)


def trailing_proper_prefix(data: bytes) -> bytes:
    """The bytes a correct eager decoder still holds after being fed ``data``."""
    return reference_decode(data, final=False).held


def char_spans(encoded: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` byte spans of the characters of valid UTF-8, via the reference."""
    spans = []
    i = 0
    for piece in reference_decode(encoded).pieces:
        assert isinstance(piece, str), "char_spans needs valid UTF-8"
        width = len(piece.encode("utf-8", "surrogatepass"))
        spans.append((i, i + width))
        i += width
    assert i == len(encoded)
    return spans


# -- feeding a decoder ----------------------------------------------------------------


def event_tuples(events: Iterable[Malformed]) -> list[tuple[int, bytes, MalformedKind]]:
    return [(e.offset, e.data, e.kind) for e in events]


def feed(
    decoder: Utf8Decoder,
    chunks: Sequence[bytes | bytearray | memoryview],
    *,
    flush: bool = True,
    flush_with_last: bool = False,
) -> list[str]:
    """Feed ``chunks`` one ``decode`` call each; return what every call returned.

    With ``flush`` the stream is ended: by ``final=True`` on the last chunk when
    ``flush_with_last``, else by a separate ``decode(b"", final=True)``.
    """
    outputs = []
    last = len(chunks) - 1
    for k, chunk in enumerate(chunks):
        outputs.append(decoder.decode(chunk, final=flush and flush_with_last and k == last))
    if flush and not (flush_with_last and chunks):
        outputs.append(decoder.decode(b"", final=True))
    return outputs


def decode_chunks(
    chunks: Sequence[bytes | bytearray | memoryview],
    *,
    flush_with_last: bool = False,
    errors: str = "replace",
    **kwargs: object,
) -> tuple[str, list[tuple[int, bytes, MalformedKind]]]:
    """A fresh decoder over ``chunks`` to the end of the stream: ``(text, events)``.

    The text is also checked against a second decoder without ``on_malformed`` (the
    decoder has a separate path for that case): both must give the same text.
    """
    events: list[Malformed] = []
    decoder = Utf8Decoder(errors, on_malformed=events.append, **kwargs)  # type: ignore[arg-type]
    text = "".join(feed(decoder, chunks, flush_with_last=flush_with_last))
    unobserved = Utf8Decoder(errors, **kwargs)  # type: ignore[arg-type]
    assert "".join(feed(unobserved, chunks, flush_with_last=flush_with_last)) == text
    return text, event_tuples(events)


def strict_loop(
    decoder: Utf8Decoder,
    chunks: Sequence[bytes],
    limit: int,
    *,
    flush_with_last: bool = False,
    retry_final: bool = True,
) -> tuple[str, list[Utf8DecodeError]]:
    """Decode as a careful caller would: on error keep ``partial`` and call again.

    After an error the caller calls ``decode(b"")`` until it stops raising; with
    ``retry_final`` a failed final call is retried with ``final=True``, otherwise with a
    plain ``decode(b"")`` (the rest of a final call is still the end of the stream).
    """
    out: list[str] = []
    errors: list[Utf8DecodeError] = []

    def call(chunk: bytes, final: bool) -> bool:
        try:
            out.append(decoder.decode(chunk, final))
        except Utf8DecodeError as exc:
            out.append(exc.partial)
            errors.append(exc)
            assert len(errors) <= limit, "more errors than bytes: the decoder is looping"
            return True
        return False

    calls = [(chunk, False) for chunk in chunks]
    if flush_with_last and calls:
        calls[-1] = (calls[-1][0], True)
    else:
        calls.append((b"", True))
    for chunk, final in calls:
        raised = call(chunk, final)
        while raised:
            raised = call(b"", final and retry_final)
    return "".join(out), errors


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """Cut ``data`` at the given offsets; repeated offsets give empty chunks."""
    points = sorted(cuts)
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def chunkings(data: bytes, random_chunks: Sequence[bytes] | None = None) -> Iterator[list[bytes]]:
    """Whole, byte by byte, byte by byte with empty chunks between, and a random one."""
    yield [data]
    yield [data[i : i + 1] for i in range(len(data))]
    yield [piece for i in range(len(data)) for piece in (b"", data[i : i + 1])] + [b""]
    if random_chunks is not None:
        assert b"".join(random_chunks) == data
        yield list(random_chunks)


def every_chunking(data: bytes) -> Iterator[list[bytes]]:
    """Every way of cutting a short input into non-empty chunks (2 ** (n - 1) of them)."""
    inner = range(1, len(data))
    for r in range(len(inner) + 1):
        for cuts in itertools.combinations(inner, r):
            yield split_at(data, cuts)


# -- strategies -----------------------------------------------------------------------

_VALID_CHARS = [
    "\x00", "a", "\x7f", "\x80", "é", "\u07ff", "\u0800", "€", "\ud7ff", "\ue000",
    "\ufeff", "\ufffd", "\uffff", "\U00010000", "😀", "\U0010ffff",
]  # fmt: skip

#: Interesting fragments: valid characters of every length and at every boundary of
#: Table 3-7, lone leads, bad second bytes, truncated sequences, never-valid bytes.
FRAGMENTS: list[bytes] = [
    *(c.encode("utf-8") for c in _VALID_CHARS),
    *(bytes([b]) for b in (0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF, 0xF0, 0xF1, 0xF4)),
    b"\xe0\x80", b"\xe0\x9f", b"\xed\xa0", b"\xed\xbf", b"\xf0\x80", b"\xf0\x8f",
    b"\xf4\x90", b"\xf4\xbf",
    b"\xc0", b"\xc1", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    *(bytes([b]) for b in range(0xF5, 0x100)),
    b"\xe1\x80", b"\xed\x9f", b"\xe0\xa0", b"\xf0\x90", b"\xf0\x90\x80", b"\xf4\x8f\xbf",
    b"\xf1\x80\x80",
    b"\x80", b"\x8f", b"\x9f", b"\xa0", b"\xbf", b"\n",
]  # fmt: skip

arbitrary_bytes = st.binary(max_size=80)
fragment_bytes = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.binary(min_size=1, max_size=2)), max_size=30
).map(b"".join)
#: Arbitrary bytes or concatenated interesting fragments.
any_bytes = st.one_of(arbitrary_bytes, fragment_bytes)


@st.composite
def chunked(
    draw: st.DrawFn, data_strategy: st.SearchStrategy[bytes] = any_bytes
) -> tuple[bytes, list[bytes]]:
    """Some bytes and a random chunking of them (empty chunks included)."""
    data = draw(data_strategy)
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=len(data) + 3))
    return data, split_at(data, cuts)


def cut_randomly(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """A random chunking of ``data`` drawn inside a composite strategy or ``st.data()``."""
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=min(len(data) + 3, 40)))
    return split_at(data, cuts)


def run_engine(engine: LineEngine, data: bytes, cuts: list[int]) -> list[ByteLine]:
    """The records a line engine gives for ``data`` fed in pieces cut at ``cuts``."""
    lines: list[ByteLine] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        lines += engine.records(engine.feed(data[start:cut]))
        start = max(start, cut)
    return [*lines, *engine.records(engine.finish())]


def line_within(pipe: IO[bytes], seconds: float) -> bytes:
    """The next line of ``pipe``, or ``AssertionError`` if none comes in time."""
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(pipe.readline()), daemon=True)
    reader.start()
    reader.join(seconds)
    assert result, f"no line from the command within {seconds} s"
    return result[0]


def bytes_within(pipe: IO[bytes], count: int, seconds: float) -> bytes:
    """The next ``count`` bytes of ``pipe`` (newline or not), or ``AssertionError`` if
    they do not all come within ``seconds``."""
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(pipe.read(count)), daemon=True)
    reader.start()
    reader.join(seconds)
    assert result, f"not {count} bytes from the command within {seconds} s"
    return result[0]


# -- following files ------------------------------------------------------------------


def append(path: Path, data: bytes) -> None:
    """Append ``data`` to the file at ``path`` as a writer would: open, write, close."""
    with open(path, "ab") as f:
        f.write(data)


async def take_lines(
    lines: Follower | ManyFollower, n: int, timeout: float | None = None
) -> list[Line]:
    """The next ``n`` records of a follower, or a failed test if they do not all come
    within ``timeout`` seconds: by default 5 for a ``Follower``, 10 for a
    ``ManyFollower`` (several files behind one watcher)."""
    from utf8stream.follower import ManyFollower

    if timeout is None:
        timeout = 10.0 if isinstance(lines, ManyFollower) else 5.0
    out: list[Line] = []
    with anyio.fail_after(timeout):
        while len(out) < n:
            out.append(await lines.__anext__())
    return out


async def take_texts(
    lines: Follower | ManyFollower, n: int, timeout: float | None = None
) -> list[str]:
    """The text of the next ``n`` records, as ``take_lines`` takes them."""
    return [line.text for line in await take_lines(lines, n, timeout)]


async def take_named(
    lines: Follower | ManyFollower, n: int, timeout: float | None = None
) -> list[tuple[str, str]]:
    """The next ``n`` records as (file name without its directory, text), as
    ``take_lines`` takes them."""
    return [
        (os.path.basename(line.path), line.text) for line in await take_lines(lines, n, timeout)
    ]


#: A test of the C accelerator's own entry points: skipped only where it was not built
#: (``.ci/run`` fails then, so in CI these always run).
needs_c = pytest.mark.skipif(_accel.built_accelerator() is None, reason="C accelerator not built")
#: Tests of what is read from Linux's ``/proc/PID/fdinfo`` (elsewhere it cannot be told,
#: and the follower keeps only its grace period: tests/test_holders.py's fake ``/proc``).
needs_proc_fdinfo = pytest.mark.skipif(
    not os.path.exists("/proc/self/fdinfo"), reason="open files are read from Linux's /proc"
)


def fake_watchfiles(monkeypatch: pytest.MonkeyPatch, watch: Callable[..., object] | None) -> None:
    """``import watchfiles`` finds no package (``watch=None``: the ``watch`` extra is not
    installed) or one whose ``watch`` is ``watch``: the notifier the watcher gets."""
    import types

    package = None if watch is None else types.SimpleNamespace(watch=watch)
    monkeypatch.setitem(sys.modules, "watchfiles", package)


def real_watch() -> Callable[..., Iterator[set[tuple[int, str]]]] | None:
    """The installed ``watchfiles.watch``, or None without the ``watch`` extra."""
    try:
        import watchfiles
    except ImportError:
        return None
    watch: Callable[..., Iterator[set[tuple[int, str]]]] = watchfiles.watch
    return watch


async def nothing_more(follower: AsyncIterator[object], wait: float = 0.05) -> bool:
    """True if a follower hands out no line within ``wait`` seconds."""
    with anyio.move_on_after(wait):
        await follower.__anext__()
        return False
    return True
