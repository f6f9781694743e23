"""New module objects of the C accelerator, for the tests of its module state and of its
kernel dispatch (tests/core/test_extension_module.py, test_simd.py, and the tests that
run a decoder on the SSE2 kernels where AVX2 is in use)."""

from __future__ import annotations

import importlib.util
import os
import platform
from pathlib import Path
from types import ModuleType

from utf8stream import Malformed
from utf8stream.core import _accel


def fresh_module() -> ModuleType:
    """A new module object from the same extension file, executed but not set up."""
    speedups = _accel.built_accelerator()  # whether or not it is in use at the moment
    assert speedups is not None
    spec = importlib.util.spec_from_file_location(speedups.__name__, speedups.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def set_up(module: ModuleType) -> None:
    module.setup(
        _accel.ACCEL_KINDS,
        Malformed,
        Malformed.__dict__["offset"],
        Malformed.__dict__["data"],
        Malformed.__dict__["kind"],
    )


def module_with(no_avx2: str | None) -> ModuleType:
    """A new module object from the extension in use, made (and set up) with
    ``UTF8STREAM_NO_AVX2`` set to ``no_avx2`` (None: unset)."""
    saved = os.environ.pop("UTF8STREAM_NO_AVX2", None)
    try:
        if no_avx2 is not None:
            os.environ["UTF8STREAM_NO_AVX2"] = no_avx2
        module = fresh_module()
    finally:
        os.environ.pop("UTF8STREAM_NO_AVX2", None)
        if saved is not None:
            os.environ["UTF8STREAM_NO_AVX2"] = saved
    set_up(module)
    return module


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


X86_64 = platform.machine().lower() in ("x86_64", "amd64")
HAS_AVX2 = X86_64 and {"avx2", "bmi2"} <= cpu_flags()
