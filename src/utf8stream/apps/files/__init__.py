"""Large files: lazy transcoding in constant memory, in parallel at character boundaries.

A file is read in chunks and each chunk goes through a ``Transcoder``; memory is one chunk
(plus what the codecs hold, a few bytes).  UTF-8 to or from UTF-16/UTF-32, and UTF-8 to
UTF-8 (the repair), with ``errors`` replace, ignore or strict skip the text: a
``ByteTranscoder`` (``core/direct.py``) turns each chunk's bytes into the output bytes in
one call, with the same output, events and counts, into reused buffers (a writer thread
writes one while the next chunk is transcoded).  With ``workers > 1`` and a UTF-8-family
source, the file is cut at character boundaries (``boundaries.split_points``, from bytes
read around each cut: no ``mmap``) into pieces of at most ``PIECE_BYTES``; worker
processes transcode the pieces and write their output in order, so the output file is the
sequential one byte for byte.  ``workers`` is a most: a split that would not be faster
than one worker on the cores this process may use is not made (``parallel.plan``).

Only the start of the stream is special: the BOM policy applies to the first piece (and
a target codec that writes a BOM writes it there only), and the other pieces keep
whatever they contain.  A unit cut by a piece's end is reported by
that piece's decoder as ``TRUNCATED_AT_END``; the parent renames it from the next byte
(``boundaries.rejoined_event``), as the sequential decoder would have.

Data safety: an output file is written to a temporary file beside it, flushed to disk and
renamed over the destination only when the run succeeds (the destination's permission
bits are kept, as an editor's atomic save keeps them); on any failure or interruption the
destination is untouched and the temporary file removed.  The output is never the input.

Two policies, kept apart: ``errors`` for malformed *input* (the decoder's policy) and
``unmappable`` for characters the *target* cannot represent (iconv's rules).

The modules, one job each: ``results`` (the summary, the errors, event counts),
``codecrun`` (the codec path and both policies), ``directrun`` (the bytes-to-bytes path),
``runs`` (choosing and checking a run), ``streaming`` (one run over a stream, with a
reader and a writer thread), ``output`` (the output file, renamed into place),
``parallel`` (the split and the pool) and ``pieces`` (what a worker does),
``transcode`` (``transcode_file``, ``atranscode_file``), ``opentext`` (``open_text``).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .codecrun import UNMAPPABLE_POLICIES
    from .opentext import open_text
    from .output import check_distinct, open_binary, open_output
    from .results import (
        SameFileError,
        TranscodeSummary,
        UnmappableCharacterError,
        WorkerError,
    )
    from .transcode import atranscode_file, transcode_file

# Each name loads its module on first use: ``validate`` needs ``open_binary`` only, and
# start-up counts for every small file a shell loop runs it on.
_MODULES = {
    "UNMAPPABLE_POLICIES": "codecrun",
    "open_text": "opentext",
    "check_distinct": "output",
    "open_binary": "output",
    "open_output": "output",
    "SameFileError": "results",
    "TranscodeSummary": "results",
    "UnmappableCharacterError": "results",
    "WorkerError": "results",
    "atranscode_file": "transcode",
    "transcode_file": "transcode",
}


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "UNMAPPABLE_POLICIES",
    "SameFileError",
    "TranscodeSummary",
    "UnmappableCharacterError",
    "WorkerError",
    "atranscode_file",
    "check_distinct",
    "open_binary",
    "open_output",
    "open_text",
    "transcode_file",
]
