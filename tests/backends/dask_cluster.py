"""A real 2-worker Dask cluster for tests, and a scheduler plugin that counts what runs on it.

The scheduler of a ``LocalCluster`` lives in this process (the workers are processes of their
own), so the plugin's counts are read directly, without a round trip.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from distributed import Client, LocalCluster, wait
from distributed.diagnostics.plugin import SchedulerPlugin


class TaskCounter(SchedulerPlugin):
    """Counts graphs sent to the scheduler (one per ``compute``/``persist``), the tasks each
    sent that were not in memory already, and how often each task ran."""

    name = "tpx-task-counter"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.graphs: list[int] = []
        self.runs: collections.Counter = collections.Counter()

    def update_graph(self, scheduler: Any, *, keys: Any, tasks: Any, **kwargs: Any) -> None:
        self.graphs.append(sum(1 for k in tasks if scheduler.tasks[k].state != "memory"))

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if start == "processing" and finish == "memory":
            self.runs[key] += 1

    @property
    def executed(self) -> int:
        return sum(self.runs.values())

    @property
    def most_runs(self) -> int:
        return max(self.runs.values(), default=0)


def start(memory_limit: str = "384MB") -> tuple[LocalCluster, Client, TaskCounter]:
    """Two single-threaded worker processes on 127.0.0.1, and a client that is Dask's default."""
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        memory_limit=memory_limit,
        dashboard_address=None,
    )
    client = Client(cluster)
    counter = TaskCounter()
    cluster.scheduler.add_plugin(counter)
    return cluster, client, counter


def settle(*tensors: Any) -> None:
    """Wait until the persisted values of ``tensors`` (tpx or p10) exist on the workers."""
    from distributed import futures_of

    futures = [f for t in tensors for f in futures_of(getattr(t, "_t", t)._data)]
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
