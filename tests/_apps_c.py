"""The apps layer's two implementations, for tests that run on both: whether its C
extension is built (the ``kind`` fixture of ``tests/apps/conftest.py`` runs a test on
the accelerator and on its pure-Python twin)."""

from __future__ import annotations

import pytest

from utf8stream.apps import _apps_accel, _apps_native
from utf8stream.core._accel import built_accelerator, use_accelerator


def compiled() -> bool:
    """Whether the apps layer's extension is built (and the accelerator not disabled)."""
    if built_accelerator() is None:
        return False
    with use_accelerator(True):
        return _apps_accel.implementation() is not _apps_native


needs_compiled = pytest.mark.skipif(not compiled(), reason="C accelerator not built")
