"""Shared by the ``utf8stream.dask`` tests: file contents built to hit block edges, and
the sequential reference (``LineReceiveStream`` over the whole file, one chunk)."""

from __future__ import annotations

import codecs

import anyio
from anyio.abc import ByteReceiveStream
from hypothesis import strategies as st

from utf8stream import LineReceiveStream, LineTooLong, Malformed, Utf8Decoder
from utf8stream.apps._linecol import LineColumnTracker
from utf8stream.core.variants import get_variant

#: Encodings, with the fixed-order codec their text is written in and the byte-order
#: marks that may lead a file.
ENCODINGS: dict[str, tuple[str, list[bytes]]] = {
    "utf-8": ("utf-8", [b"", codecs.BOM_UTF8]),
    "utf-8-sig": ("utf-8", [b"", codecs.BOM_UTF8]),
    "utf-16": ("utf-16-le", [b"", codecs.BOM_UTF16_LE]),
    "utf-16-le": ("utf-16-le", [b"", codecs.BOM_UTF16_LE]),
    "utf-16-be": ("utf-16-be", [b"", codecs.BOM_UTF16_BE]),
    "utf-32": ("utf-32-be", [codecs.BOM_UTF32_BE]),
    "utf-32-le": ("utf-32-le", [b""]),
    "utf-32-be": ("utf-32-be", [b""]),
    "shift_jis": ("shift_jis", [b""]),
    # The UTF-8 variants, through their registered codecs.
    "cesu-8": ("cesu-8", [b""]),
    "wtf-8": ("wtf-8", [b""]),
    "mutf-8": ("mutf-8", [b""]),
}

#: Text pieces: newlines of every kind, characters of 1 to 4 bytes, a BOM mid-file.
_TEXT = ["a", "bc", "é", "€", "😀", "\r", "\n", "\r\n", "\ufeff", "x" * 20, "\u3042"]
#: Raw bytes: malformed in every encoding tested, or truncated units.
_RAW = [b"\xff", b"\xe2\x82", b"\x80", b"\x00", b"\xd8", b"\x00\xd8", b"\xed\xa0\x80", b"\x0a"]


@st.composite
def contents(draw: st.DrawFn, encoding: str) -> bytes:
    """A file in ``encoding``: text pieces and malformed bytes, maybe a leading BOM."""
    codec, boms = ENCODINGS[encoding]
    out = [draw(st.sampled_from(boms))]
    for _ in range(draw(st.integers(0, 24))):
        if draw(st.integers(0, 4)) == 0:
            out.append(draw(st.sampled_from(_RAW)))
        else:
            out.append(draw(st.sampled_from(_TEXT)).encode(codec, "replace"))
    return b"".join(out)


def line_options(encoding: str) -> st.SearchStrategy[dict[str, object]]:
    utf8 = encoding == "utf-8"
    return st.fixed_dictionaries(
        {
            "newline": st.sampled_from([None, "\n", "\r\n", "\r"]),
            "keepends": st.booleans() if utf8 else st.just(False),
            "max_line_bytes": st.sampled_from([None, 4, 9, 32, 1 << 20]),
            "on_overlong": st.sampled_from(["split", "truncate", "skip", "raise"]),
            # surrogateescape is refused for UTF-16/32 (their malformed units hold bytes
            # below 0x80, which it cannot escape): test_dask_read_text checks the refusal.
            "errors": st.sampled_from(
                ["replace", "ignore"]
                if "16" in encoding or "32" in encoding
                else ["replace", "surrogateescape", "ignore"]
            ),
        }
    )


class Raised:
    """The reference raised ``error`` (the lines before it are of no interest)."""

    def __init__(self, error: Exception) -> None:
        self.error = error


class _ByteSource(ByteReceiveStream):
    """``data`` as an anyio byte stream, in one chunk."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._data:
            raise anyio.EndOfStream
        chunk, self._data = self._data[:max_bytes], self._data[max_bytes:]
        return chunk

    async def aclose(self) -> None:
        self._data = b""


def sequential(data: bytes, encoding: str, **options: object) -> list[str] | Raised:
    """The lines ``LineReceiveStream`` reads from ``data`` (a byte stream), or what it
    raised."""

    async def run() -> list[str] | Raised:
        source = _ByteSource(data)
        stream = LineReceiveStream(source, encoding=encoding, **options)  # type: ignore[arg-type]
        lines: list[str] = []
        try:
            async for line in stream:
                lines.append(line)
        except (LineTooLong, UnicodeDecodeError) as exc:
            return Raised(exc)
        return lines

    return anyio.run(run)


# -- UTF-8 family files, for malformed units and transcoding --------------------------

_PIECES = [b"a", b"\n", b"\r\n", "é".encode(), "😀".encode(), "€".encode(), b"\xff", b"\xe2\x82"]
_PIECES += [b"\x80", b"\xed\xa0\x80", b"\xf0\x9f", b"\xc0\xaf", codecs.BOM_UTF8, b"\x00", b"z" * 9]

utf8_contents = st.lists(st.sampled_from(_PIECES), max_size=30).map(b"".join)


def whole_file_events(data: bytes, variant: str = "utf-8") -> tuple[list[Malformed], int]:
    """The malformed units and the length of the text of a decoder of all of ``data``."""
    events: list[Malformed] = []
    decoder = Utf8Decoder("replace", on_malformed=events.append, variant=variant)
    text = decoder.decode(data, final=True)
    return events, len(text)


def whole_file_positions(data: bytes, variant: str = "utf-8") -> list[tuple[int, int]]:
    """``utf8stream validate``'s line and column of each unit, read in one piece."""
    events, _ = whole_file_events(data, variant)
    tracker = LineColumnTracker(joins_pairs=get_variant(variant).join_pairs)
    out = []
    for event in events:
        tracker.advance(data, 0, event.offset)
        out.append(tracker.locate(event))
    return out


@st.composite
def transcodings(draw: st.DrawFn) -> dict[str, str]:
    return {
        "target": draw(st.sampled_from(["utf-8", "utf-16", "utf-16-be", "latin-1", "cesu-8"])),
        "errors": draw(st.sampled_from(["replace", "ignore", "surrogateescape", "strict"])),
        "bom": draw(st.sampled_from(["keep", "strip", "add"])),
        "unmappable": draw(st.sampled_from(["strict", "replace", "translit"])),
    }
