"""trio is an optional dependency (``pip install 'utf8stream[trio]'``), imported only here.

``import utf8stream`` and everything on asyncio work without it; what needs trio says so
by name when it is missing, instead of a bare ``No module named 'trio'``.
"""

from __future__ import annotations

from types import ModuleType


def missing_trio(feature: str) -> ModuleNotFoundError:
    """The error for ``feature`` used without trio installed."""
    return ModuleNotFoundError(
        f"{feature} needs trio, an optional dependency of utf8stream: "
        "pip install 'utf8stream[trio]'",
        name="trio",
    )


def import_trio(feature: str) -> ModuleType:
    """The trio module, or ``missing_trio(feature)`` if it cannot be imported."""
    try:
        import trio
    except ImportError as exc:
        raise missing_trio(feature) from exc
    return trio
