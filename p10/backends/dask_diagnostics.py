"""Counting what a Dask cluster runs: graphs sent (one per compute or persist) and task runs.

For a ``LocalCluster`` started in this process (its scheduler lives here), e.g. to check that
a training step runs each task once::

    counter = count_tasks(client)
    ...  # a step
    counter.graphs, counter.executed, counter.most_runs

Importing this module imports ``distributed``.
"""

from __future__ import annotations

import collections
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin


class TaskCounter(SchedulerPlugin):
    """Counts the graphs sent to the scheduler, the tasks each sent that were not in memory
    already, and how often each task ran (``reset()`` starts again).

    >>> c = TaskCounter(); c.executed, c.most_runs, c.graphs
    (0, 0, [])
    """

    name = "p10-task-counter"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything counted so far."""
        self.graphs: list[int] = []
        self.runs: collections.Counter = collections.Counter()

    def update_graph(self, scheduler: Any, *, keys: Any, tasks: Any, **kwargs: Any) -> None:
        self.graphs.append(sum(1 for k in tasks if scheduler.tasks[k].state != "memory"))

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if start == "processing" and finish == "memory":
            self.runs[key] += 1

    @property
    def executed(self) -> int:
        """Task runs counted."""
        return sum(self.runs.values())

    @property
    def most_runs(self) -> int:
        """Runs of the task that ran most often (1: no task ran twice)."""
        return max(self.runs.values(), default=0)


def count_tasks(client: Any) -> TaskCounter:
    """A :class:`TaskCounter` added to the scheduler of ``client``'s local cluster."""
    cluster = client.cluster
    if cluster is None or not hasattr(cluster, "scheduler"):
        raise ValueError("count_tasks needs a client of a LocalCluster started in this process")
    counter = TaskCounter()
    cluster.scheduler.add_plugin(counter)
    return counter
