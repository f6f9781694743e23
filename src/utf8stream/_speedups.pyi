"""Type stub for the optional C accelerator (``_speedups.c``)."""

from array import array
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

from _typeshed import ReadableBuffer, WriteableBuffer

from .core.events import Malformed, MalformedKind

_T = TypeVar("_T")

def setup(
    kinds: tuple[MalformedKind, ...],
    event_type: type[Malformed],
    offset_slot: Any,
    data_slot: Any,
    kind_slot: Any,
    /,
) -> None: ...
def _classify_all(prefix: bytes, width: int, /) -> bytes: ...

class Units:
    fail_start: int
    resume_at: int
    reporting: int
    @property
    def partial(self) -> str: ...
    callback: Callable[[Malformed], object] | None
    def __init__(
        self, replacement: str | None, callback: Callable[[Malformed], object] | None
    ) -> None: ...
    def feed(
        self, pending: bytes, data: bytes, final: bool, position: int, /
    ) -> tuple[str, bytes]: ...
    def lines(
        self,
        head: bytes,
        data: bytes | memoryview,
        position: int,
        sep: int,
        limit: int,
        each_offset: int = True,
        /,
    ) -> tuple[list[str], Sequence[int]]: ...
    def drain(self) -> tuple[int, ...]: ...
    # The stream's state (``scanner.Scanner``), kept by ``decode``.
    position: int
    pending: bytes
    def decode(self, data: Any, final: bool = False, /) -> str: ...

def find_run(text: str, members: bytes | bytearray, shortest: int, start: int, /) -> int: ...
def find_moji(
    text: str, index: bytes, pages: bytes, width: int, start: int, longest: int, /
) -> int: ...
def moji_repair(
    buf: str,
    before: str,
    final: bool,
    max_carry: int,
    events: bool,
    rules: tuple[bytes, bytes, int, bytes, bytes, Callable[[int], int], tuple[str, ...]],
    classes: bytearray,
    /,
) -> tuple[str, int, list[tuple[int, int, str, tuple[str, ...]]] | None]: ...
def find_moji_bytes(
    data: bytes, index: bytes, pages: bytes, width: int, start: int, longest: int, /
) -> int: ...
def join_cut(head: str, text: str, cut: int, /) -> str: ...
def normalize_piece(
    head: str,
    text: str,
    cut: int,
    tables: tuple[
        WriteableBuffer,
        ReadableBuffer,
        Callable[[int], None],
        Callable[[str], str],
        bytes | bytearray,
    ],
    shortest: int,
    /,
) -> str | int: ...
def split_lines(
    data: bytes,
    text: str,
    newline: bytes | tuple[bytes, bytes],
    base: int,
    limit: int,
    each_offset: int,
    /,
) -> tuple[list[str], Sequence[int]] | None: ...

# The encoding detector's counting (``core/_detector_native.py`` is the twin).
def count_bytes(segment: bytes, evidence: array[int], /) -> int: ...
def count_runs(
    segment: bytes,
    evidence: array[int],
    pairs: dict[int, int],
    starts: dict[int, int],
    flags: bytes,
    /,
) -> None: ...
def count_east_asian(text: str, /) -> int: ...
def count_text(
    text: str, counts: dict[str, int], adjacent: dict[str, int], /
) -> tuple[int, int, int, int]: ...
def code_page_scores(
    evidence: array[int],
    pairs: dict[int, int],
    starts: dict[int, int],
    flags: bytes,
    costs: array[float],
    terms: array[float],
    rows: bytes,
    extras: array[float],
    ascii_cost: float,
    /,
) -> tuple[tuple[float, int, int], ...]: ...
def class_counts(
    counts: dict[str, int], cache: dict[str, int], class_of: Callable[[str], int], /
) -> tuple[int, int, int, int]: ...
def cheapest_language(
    counts: dict[str, int],
    models: tuple[
        tuple[dict[str, float], Callable[[str], float], float, float, float, float], ...
    ],
    letters: int,
    mixed: int,
    single: int,
    longer: int,
    /,
) -> tuple[float, int] | None: ...

class PlainEncoder:
    def __init__(self, errors: str, fallback: Callable[..., bytes]) -> None: ...
    def encode(self, text: str, final: bool = False, /) -> bytes: ...
    def drain(self) -> int: ...

class BufferedAsyncIterator(Generic[_T]):
    def __init__(self, refill: Callable[[BufferedAsyncIterator[_T]], Awaitable[_T]]) -> None: ...
    def __aiter__(self) -> BufferedAsyncIterator[_T]: ...
    def __anext__(self) -> Awaitable[_T]: ...
    def __await__(self) -> Any: ...
    def feed(self, items: list[_T], /) -> None: ...

class ByteTranscoder:
    failure: Malformed | None
    callback: Callable[[Malformed], object] | None
    reporting: int
    #: True when its AVX2 kernels run (the module's ``simd`` is "avx2").
    _avx2: int
    @property
    def buffered(self) -> int: ...
    @property
    def position(self) -> int: ...
    def __init__(
        self,
        source: str,
        target: str,
        errors: str,
        callback: Callable[[Malformed], object] | None,
        position: int,
        event_type: type[Malformed],
        kinds: tuple[MalformedKind, ...],
    ) -> None: ...
    def transcode(self, data: bytes, final: bool = False, /) -> bytes: ...
    def transcode_into(
        self, data: ReadableBuffer, out: WriteableBuffer, offset: int = 0, final: bool = False, /
    ) -> int: ...
    def bound(self, n: int, /) -> int: ...
    def drain(self) -> tuple[int, ...]: ...

#: The decoder's kernels, and the byte transcoder's: "avx2" (chosen at import when the CPU
#: has AVX2 and BMI2 and UTF8STREAM_NO_AVX2 is not set), "sse2" or "none".
simd: str
