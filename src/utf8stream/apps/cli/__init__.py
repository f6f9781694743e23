"""The ``utf8stream`` command line (one module per subcommand)."""

from __future__ import annotations

from ._main import build_parser, main

__all__ = ["build_parser", "main"]
