"""``open_text``: an async text stream over a UTF-8 file."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .results import OnMalformed

if TYPE_CHECKING:
    from ...aio.streams import Utf8ReceiveStream
    from ...core.transformed import Transforms

__all__ = ["open_text"]


async def open_text(
    path: str | os.PathLike[str],
    *,
    start_offset: int = 0,
    errors: str = "replace",
    gap: str = "replace",
    on_malformed: OnMalformed | None = None,
    transforms: Transforms = None,
) -> Utf8ReceiveStream:
    """An async text stream over a UTF-8 file (a ``Utf8ReceiveStream`` on anyio's file).

    A non-zero ``start_offset`` starts with a gap, as after lost bytes (``mark_gap()``):
    opened in the middle of a character, the stream yields one U+FFFD, then clean text;
    opened at a character start it still yields one U+FFFD, which says the text did not
    start at the file's beginning.  ``transforms`` are ``Utf8ReceiveStream``'s.
    """
    import anyio

    from ...aio.sources import as_byte_stream
    from ...aio.streams import Utf8ReceiveStream

    f = await anyio.open_file(path, "rb")
    try:
        if start_offset:
            await f.seek(start_offset)
        stream = Utf8ReceiveStream(
            as_byte_stream(f),
            errors=errors,
            start_offset=start_offset,
            gap=gap,
            on_malformed=on_malformed,
            transforms=transforms,
        )
    except BaseException:
        await f.aclose()
        raise
    if start_offset:
        stream.mark_gap()
    return stream
