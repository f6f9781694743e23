"""Type stub for the apps layer's optional C accelerator (``_apps_speedups.c``)."""

from collections.abc import Sequence
from typing import Any, TypeVar

_T = TypeVar("_T")

class Line:
    text: Any
    offset: Any
    file: Any
    path: Any
    terminated: Any
    def __init__(
        self, text: Any, offset: Any, file: Any, path: Any = "", terminated: Any = True
    ) -> None: ...

def records(
    cls: type[_T],
    texts: list[str],
    offsets: Sequence[int],
    file: Any,
    path: str,
    terminated: bool,
    /,
) -> list[_T]: ...

class ReadBuffer:
    def __init__(self, size: int) -> None: ...
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def take(self, n: int, /) -> bytes: ...

class ReadAhead:
    def __init__(self, fd: int) -> None: ...
    def start(self, offset: int, size: int, nowait: bool, /) -> bool: ...
    def take(self, offset: int, size: int, /) -> bytes | None: ...
    def close(self) -> None: ...
    @staticmethod
    def threads() -> int: ...
