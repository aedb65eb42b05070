"""A real 2-worker Dask cluster for tests, with a counter of what runs on it.

The scheduler of a ``LocalCluster`` lives in this process (the workers are processes of their
own), so the counter's numbers are read directly, without a round trip.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from distributed import Client, LocalCluster, wait

from p10.backends.dask_diagnostics import TaskCounter, count_tasks


def start(memory_limit: str = "384MB") -> tuple[LocalCluster, Client, TaskCounter]:
    """Two single-threaded worker processes on 127.0.0.1, and a client that is Dask's default."""
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        memory_limit=memory_limit,
        dashboard_address=":0",
    )
    client = Client(cluster)
    return cluster, client, count_tasks(client)


def settle(*tensors: Any) -> None:
    """Wait until the persisted values of ``tensors`` (tpx or p10) exist on the workers."""
    from distributed import futures_of

    futures = [f for t in tensors for f in futures_of(getattr(t, "p10", t)._data)]
    wait(futures)


@contextmanager
def scheduler_warnings() -> Iterator[list[str]]:
    """The scheduler's warnings logged inside the block."""
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger("distributed.scheduler")
    handler, level = Keep(logging.WARNING), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
