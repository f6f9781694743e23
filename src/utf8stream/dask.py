"""Block-parallel reading and transcoding on Dask, from any fsspec filesystem.

Needs the ``dask`` extra (``pip install 'utf8stream[dask]'``); importing ``utf8stream``
itself never imports Dask.  See the package ``utf8stream.apps.dask`` for how blocks are cut.
"""

from __future__ import annotations

from .apps.dask import (
    FileSummary,
    MalformedRecord,
    malformed,
    read_text,
    transcode_files,
    validate_files,
)

__all__ = [
    "FileSummary",
    "MalformedRecord",
    "malformed",
    "read_text",
    "transcode_files",
    "validate_files",
]
