"""``--dask``: run ``validate`` or ``transcode`` on a Dask cluster (the dask extra)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, cast

from ._common import CommandError

_LOCAL = "local:"
#: ``--blocksize`` unless given (``utf8stream.dask``'s default).
DEFAULT_BLOCKSIZE = "128 MiB"
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*?)b?")


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


def block_size(text: str) -> str:
    """``--blocksize``: a positive number of bytes, with or without a unit."""
    units = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
    units |= {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None or match[2] not in units or float(match[1]) * units[match[2]] < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (64MiB, 1GB, 4096)")
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
    parser.add_argument(
        "--blocksize",
        type=block_size,
        metavar="SIZE",
        help="with --dask: the bytes of a block, one task each (default: 128 MiB; a number, "
        "or with a unit: 64MiB, 1GB)",
    )


@contextmanager
def dask_scheduler(address: str) -> Iterator[None]:
    """Make the cluster at ``address`` (or a new local one) Dask's scheduler."""
    import logging  # only here: the commands without --dask start without it

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
                        # The scheduler serves HTTP even without a dashboard: on a free
                        # port, not 8787 (which may be taken: a warning on stderr).
                        dashboard_address=":0",
                        # Its workers report a failed task, or the shutdown, with tracebacks
                        # of their own: the command reports errors itself, in one line.
                        silence_logs=logging.CRITICAL,
                    )
                )
            client = stack.enter_context(
                cast(Any, Client)(target, set_as_default=False, timeout="10s")
            )
        except (OSError, TimeoutError, ValueError) as exc:
            raise CommandError(f"cannot reach the Dask scheduler {address}: {exc}") from None
        stack.enter_context(dask.config.set(scheduler=client))
        yield
