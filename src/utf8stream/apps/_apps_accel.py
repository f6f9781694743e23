"""Which implementation of the apps layer's accelerator runs (the follower's records
and read buffer, the read-ahead of the follower and the transcoder): the compiled
``_apps_speedups``, or its twin ``_apps_native``.

The same switch as the core's: the compiled module where it was built and the core's
accelerator is in use (``utf8stream.accel.use_accelerator``, ``UTF8STREAM_PURE_PYTHON``).
"""

from __future__ import annotations

from typing import Any

from ..core._accel import accelerated, built_accelerator
from . import _apps_native

__all__ = ["LINE_TYPE", "implementation"]


def _load() -> Any:
    if built_accelerator() is None:  # not built, or UTF8STREAM_PURE_PYTHON
        return None
    try:
        from . import _apps_speedups
    except ImportError:
        return None
    return _apps_speedups


_built: Any = _load()

#: The C type of the follower's ``Line`` records, when the accelerator is built (else
#: None: ``Line`` is the frozen dataclass that declares it).  A public class cannot
#: change, so this is decided once: under ``use_accelerator(False)`` too, ``Line`` is
#: this type, and the pure-Python ``records`` builds it through its constructor.
LINE_TYPE: type | None = None if _built is None else _built.Line


def implementation() -> Any:
    """The compiled module or ``_apps_native``: the same names, the same behaviour."""
    return _built if _built is not None and accelerated() else _apps_native
