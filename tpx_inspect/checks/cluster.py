"""The local check on a Dask cluster: groups of nodes on the workers, results merged here.

The client plans the work as one process does (:func:`~tpx_inspect.checks.batched.plan`: the
nodes that cannot be replayed, and groups of nodes of one layout) and hands the groups out as
they are made. A task (a few groups) is packed column-wise by
:func:`~tpx_inspect.checks._packing.pack`: each distinct array of the task once, in one
stacked NumPy array per dtype and shape, and per group its columns as rows of those, the node
ids, names, sources and edges, and one value-free description of the first node; it is
scattered to the worker that holds the fewest tasks (each value travels once, to the one
worker that checks it, in a few large frames) and started there. Packing and sending run on a
thread of their own, so the client never waits for a send. While every worker holds
:data:`AHEAD` tasks, the client checks the next group itself instead (it would otherwise only
wait, and a group checked here is neither packed nor shipped). A worker takes each group's
columns from the pools, makes node records that are views of them and runs
:func:`~tpx_inspect.checks.local.check_group` on them (the function one process runs) with
the stacked columns themselves, not stacked again, and
:func:`~tpx_inspect.checks.local.local_check` merges the outcomes in backward order: a node's
outcome does not depend on where, or with which nodes, it was checked, so the findings are
those of a single-process run. No graph is pickled by this module.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tpx_inspect._util import paused_gc
from tpx_inspect.checks._packing import pack, unpack

CheckGroup = Callable[[list, Any, Any], dict[int, tuple]]
"""``check(items, opts, columns)``: the outcomes of one group of ``(node, execution)`` items,
their values also given stacked or None (``local.check_group``, passed in: this module does
not import the local check)."""

TASKS_PER_WORKER = 8
"""About how many tasks each worker gets: small enough that the workers end together and
progress moves, large enough that a task's fixed cost (a few messages) is small."""

AHEAD = 2
"""Tasks a worker holds (running, queued or on their way) before the client checks groups
itself: one to run and one to start as soon as it is done."""


def cluster_outcomes(
    client: Any,
    groups: Iterable[list],
    opts: Any,
    check: CheckGroup,
    progress: Callable[[int, int], None] | None = None,
    decided: int = 0,
    stats: dict[str, Any] | None = None,
    total: int | None = None,
    share: bool = True,
) -> dict[int, tuple]:
    """``check(group, opts, columns)`` of every group run on the workers of ``client`` (a
    ``dask.distributed.Client``) and, with ``share``, here while the workers are busy; merged
    into one dict.

    ``groups`` may be an iterator: with ``total`` (how many nodes it holds) each task is
    shipped as soon as its groups are made, so the workers check while the caller still
    groups. ``progress(done, total)`` is called as tasks and groups finish; it counts nodes,
    ``decided`` (those the caller settled without a check) included from the first call.
    ``stats`` (a dict) receives the sender's seconds spent packing and scattering, the bytes
    of the pooled arrays shipped, the nodes checked here and on the workers, the wait after
    the last group, each task's CPU seconds on its worker and the wall seconds in all.
    """
    start = time.perf_counter()
    if total is None:
        groups = list(groups)
        total = sum(map(len, groups))
    workers = sorted(client.scheduler_info().get("workers", {})) or [None]
    done = _Progress(progress, decided, decided + total)
    with _Sender(client, workers, opts, check, done) as sender:
        for task in _tasks(groups, total, len(workers), sender, share):
            sender.ship(task)
        waited = time.perf_counter()
        sender.finish()
    if stats is not None:
        stats.update(sender.cost, run_s=time.perf_counter() - waited, task_cpu_s=done.cpu,
                     wall_s=time.perf_counter() - start)  # fmt: skip
    return done.out


def _tasks(groups: Iterable[list], total: int, workers: int, sender: _Sender,
           share: bool) -> Iterator[list]:  # fmt: skip
    """Tasks of whole groups, given as they fill; a group that comes while every worker is
    busy is checked here instead (with ``share``).

    A task holds about ``total / (workers * TASKS_PER_WORKER)`` nodes, fewer as the nodes
    left to hand out run low (guided scheduling: the workers end together)."""
    largest = max(1, -(-total // (workers * TASKS_PER_WORKER)))
    left = total
    task: list[list] = []
    count = 0
    for group in groups:
        sender.harvest()
        left -= len(group)
        if share and sender.busy():
            sender.here(group)
            continue
        task.append(group)
        count += len(group)
        if count >= min(largest, (count + left) // (workers * AHEAD)):
            yield task
            task, count = [], 0
    if task:
        yield task


class _Progress:
    """The merged outcomes of finished tasks, their CPU seconds, and progress by nodes."""

    def __init__(self, progress: Any, done: int, total: int) -> None:
        self.progress, self.done, self.total = progress, done, total
        self.out: dict[int, tuple] = {}
        self.cpu: list[float] = []

    def add(self, outcomes: dict[int, tuple]) -> None:
        self.out.update(outcomes)
        self.done += len(outcomes)
        if self.progress is not None:
            self.progress(self.done, self.total)


class _Sender:
    """Packs and sends tasks on a thread of its own, to the worker holding the fewest; checks
    groups here; collects what the workers return."""

    def __init__(self, client: Any, workers: list, opts: Any, check: CheckGroup,
                 done: _Progress) -> None:  # fmt: skip
        self.client, self.opts, self.check, self.done = client, opts, check, done
        self.held = dict.fromkeys(workers, 0)
        self.sending: list[tuple[Any, Any]] = []  # (send future, worker), in send order
        self.remote: list = []  # the Dask futures of tasks not merged, released at the end
        self.cost = {"pack_s": 0.0, "scatter_s": 0.0, "here_nodes": 0, "shipped_nodes": 0,
                     "pooled_bytes": 0}  # fmt: skip
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="tpx-inspect-send")

    def __enter__(self) -> _Sender:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        for sent, _ in self.sending:
            if sent.done() and sent.exception() is None:
                self.remote += sent.result()
        self.client.cancel(self.remote)

    def busy(self) -> bool:
        return min(self.held.values()) >= AHEAD

    def here(self, group: list) -> None:
        # NOTE: sends first: the sender thread and a check here share the GIL, and a worker
        # waiting for its next task costs more than the client waiting for a send
        futures.wait([sent for sent, _ in self.sending])
        self.cost["here_nodes"] += len(group)
        self.done.add(self.check(group, self.opts, None))

    def ship(self, task: list) -> None:
        worker = min(self.held, key=self.held.__getitem__)  # NOTE: ties: the first, sorted
        self.held[worker] += 1
        self.cost["shipped_nodes"] += sum(map(len, task))
        self.sending.append((self.pool.submit(self._send, task, worker), worker))

    def _send(self, task: list, worker: Any) -> list:
        """On the sender thread: the task packed, scattered to ``worker`` and started there."""
        began = time.perf_counter()
        packs = pack(task)
        packed = time.perf_counter()
        where = None if worker is None else [worker]
        [data] = self.client.scatter([packs], workers=where, hash=False, direct=True)
        future = self.client.submit(_check_packed, data, self.opts, self.check, workers=where,
                                    pure=False)  # fmt: skip
        self.cost["pack_s"] += packed - began
        self.cost["pooled_bytes"] += sum(pool.nbytes for pool in packs["pools"])
        self.cost["scatter_s"] += time.perf_counter() - packed
        return [data, future]

    def harvest(self) -> None:
        """Merge every task that has finished (a send that failed raises here)."""
        keep = []
        for sent, worker in self.sending:
            if sent.done() and sent.result()[1].done():
                self._merge(sent, worker)
            else:
                keep.append((sent, worker))
        self.sending = keep

    def finish(self) -> None:
        """Wait for every task, merging each as it finishes."""
        from dask.distributed import as_completed

        where = {}
        for sent, worker in self.sending:
            where[sent.result()[1]] = (sent, worker)
        for future in as_completed(list(where)):
            self._merge(*where[future])
        self.sending = []

    def _merge(self, sent: Any, worker: Any) -> None:
        data, future = sent.result()
        outcomes, seconds = future.result()
        self.client.cancel([data, future])  # NOTE: the task's values leave the worker now
        self.held[worker] -= 1
        self.done.cpu.append(seconds)
        self.done.add(outcomes)


def _check_packed(packed: dict, opts: Any, check: CheckGroup) -> tuple[dict[int, tuple], float]:
    """On a worker: the outcomes of a task's packed groups, and the CPU seconds they took (of
    this thread: the worker's other threads, its event loop, are not the check's)."""
    start = time.thread_time()
    out: dict[int, tuple] = {}
    with paused_gc():  # NOTE: the records and temporaries hold no cycles (see _record)
        for items, columns in unpack(packed):
            out.update(check(items, opts, columns))
    return out, time.thread_time() - start


@contextlib.contextmanager
def connect(workers: int | None = None, scheduler: str | None = None) -> Iterator[Any]:
    """A ``dask.distributed.Client``: on the cluster at ``scheduler`` (``tcp://host:port``),
    or on a new ``LocalCluster`` of ``workers`` single-threaded processes on 127.0.0.1,
    closed on exit; None when neither is given.

    >>> with connect() as client:
    ...     client is None
    True
    """
    if not workers and not scheduler:
        yield None
        return
    from tpx_inspect._deps import require

    distributed = require("distributed", "checks on a Dask cluster (--workers, --scheduler)")
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    import dask

    if scheduler:
        with dask.config.set(QUIET):  # NOTE: read when the client starts: set only then
            client = Client(scheduler)
        with client:
            yield client
        return
    # NOTE: Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
    # dynamic mmap threshold: every NumPy temporary of a batch (~0.5 MB) was then a fresh
    # mmap with its page faults, and the check ran 2-5x slower on a worker than here.
    malloc = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
    with dask.config.set({**QUIET, **malloc}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)  # fmt: skip
    try:
        with dask.config.set(QUIET):
            client = Client(cluster)
        with client:
            yield client
    finally:
        cluster.close()


QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}
"""Dask settings for the clusters the checks start and the clients they make: no
statistical profiler in the workers, event-loop ticks, system and memory monitors once a
second or less. Measured idle (2-worker LocalCluster): the client process (scheduler,
nannies) 0.061 -> 0.013 CPU-s/s and each worker 0.045 -> 0.005 CPU-s/s, which a check's
wall time multiplies on a machine whose cores the workers share."""
