"""The apps tests' fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _apps_c import needs_compiled

from utf8stream.core._accel import use_accelerator


@pytest.fixture(params=[pytest.param("accelerator", marks=needs_compiled), "twin"])
def kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a test on the apps layer's accelerator and on its pure-Python twin."""
    with use_accelerator(request.param == "accelerator"):
        yield request.param
