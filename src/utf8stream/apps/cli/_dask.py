"""``--dask``: run ``validate`` or ``transcode`` on a Dask cluster (the dask extra)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, cast

from ._common import CommandError

_LOCAL = "local:"


def dask_address(text: str) -> str:
    """``--dask``'s argument: a scheduler address, or ``local:N`` (N worker processes)."""
    if text.startswith(_LOCAL):
        count = text[len(_LOCAL) :]
        if not count.isdigit() or int(count) < 1:
            raise argparse.ArgumentTypeError(
                f"{text!r}: local:N needs a positive number of worker processes"
            )
    elif not text:
        raise argparse.ArgumentTypeError("a scheduler address, or local:N")
    return text


def add_dask_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dask",
        type=dask_address,
        metavar="SCHEDULER",
        help="run on a Dask cluster: a scheduler address (tcp://host:8786), or local:N "
        "for N worker processes on this machine (needs utf8stream[dask]); inputs may "
        "then be fsspec URLs and globs (s3://bucket/logs/*.log), read in blocks",
    )


@contextmanager
def dask_scheduler(address: str) -> Iterator[None]:
    """Make the cluster at ``address`` (or a new local one) Dask's scheduler."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise CommandError("--dask needs the dask extra: pip install 'utf8stream[dask]'") from None
    with ExitStack() as stack:
        try:
            target: Any = address
            if address.startswith(_LOCAL):
                target = stack.enter_context(
                    cast(Any, LocalCluster)(
                        n_workers=int(address[len(_LOCAL) :]),
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=None,
                        silence_logs=logging.ERROR,
                    )
                )
            client = stack.enter_context(
                cast(Any, Client)(target, set_as_default=False, timeout="10s")
            )
        except (OSError, TimeoutError, ValueError) as exc:
            raise CommandError(f"cannot reach the Dask scheduler {address}: {exc}") from None
        stack.enter_context(dask.config.set(scheduler=client))
        yield
