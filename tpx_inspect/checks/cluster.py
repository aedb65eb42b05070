"""The local check on a Dask cluster: groups of nodes on the workers, results merged here.

The client plans the work as one process does (:func:`~tpx_inspect.checks.batched.plan`: the
nodes that cannot be replayed, and groups of nodes of one layout), then packs each task's
groups column-wise: per group, one stacked NumPy array per input, output and gradient, the
node ids, names, sources and edges, and one value-free description of the first node. Each
task is packed, scattered to its worker (each value travels once, to the one worker that checks
it, in a few large frames) and started before the next is packed, so the workers check while the
client packs. A worker unpacks its groups into node records that are views of those arrays and
runs :func:`~tpx_inspect.checks.local.check_group` on them (the function one process runs) with
the stacked arrays themselves, not stacked again, and
:func:`~tpx_inspect.checks.local.local_check` merges the outcomes in backward order, so the
findings are those of a single-process run. No graph is pickled by this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from tpx_inspect._util import paused_gc
from tpx_inspect.check_view import Execution, NodeRecord

CheckGroup = Callable[[list, Any, Any], dict[int, tuple]]
"""``check(items, opts, columns)``: the outcomes of one group of ``(node, execution)`` items,
their values also given stacked (``local.check_group``, passed in: this module does not
import the local check)."""

TASKS_PER_WORKER = 4
"""Tasks per worker: enough to balance uneven tasks and to show progress."""


def cluster_outcomes(
    client: Any,
    groups: Iterable[list],
    opts: Any,
    check: CheckGroup,
    progress: Callable[[int, int], None] | None = None,
    decided: int = 0,
    stats: dict[str, Any] | None = None,
    total: int | None = None,
) -> dict[int, tuple]:
    """``check(group, opts, columns)`` of every group run on the workers of ``client`` (a
    ``dask.distributed.Client``), merged into one dict.

    ``groups`` may be an iterator: with ``total`` (how many nodes it holds) each task is
    shipped as soon as its groups are made, so the workers check while the caller still
    groups. ``progress(done, total)`` is called as tasks finish; it counts nodes, ``decided``
    (those the caller settled without a check) included from the first call. ``stats`` (a
    dict) receives the client's seconds spent packing and scattering, the wait after the last
    task was sent, each task's CPU seconds on its worker and the wall seconds in all.
    """
    from dask.distributed import as_completed

    start = time.perf_counter()
    if total is None:
        groups = list(groups)
        total = sum(map(len, groups))
    workers = sorted(client.scheduler_info().get("workers", {})) or [None]
    tasks = streamed_tasks(groups, total, len(workers) * TASKS_PER_WORKER)
    futures: dict[Any, int] = {}
    remote: list = []
    cost = {"pack_s": 0.0, "scatter_s": 0.0}
    progress_of = _Progress(progress, decided, decided + total)
    try:
        # NOTE: each task is packed, sent to its worker and started before the next is made:
        # the workers check while the client groups and packs (each value travels once)
        for k, task in enumerate(tasks):
            where = None if workers[k % len(workers)] is None else [workers[k % len(workers)]]
            began = time.perf_counter()
            packs = [pack(group) for group in task]
            packed = time.perf_counter()
            [data] = client.scatter([packs], workers=where, hash=False, direct=True)
            cost["pack_s"] += packed - began
            cost["scatter_s"] += time.perf_counter() - packed
            remote.append(data)
            future = client.submit(_check_packed, data, opts, check, workers=where, pure=False)
            futures[future] = sum(map(len, task))
            progress_of.harvest([f for f in futures if f.done() and f not in progress_of.seen])
        submitted = time.perf_counter()
        progress_of.harvest(as_completed([f for f in futures if f not in progress_of.seen]))
    finally:
        client.cancel(list(futures) + remote)
    if stats is not None:
        stats.update(cost, run_s=time.perf_counter() - submitted, task_cpu_s=progress_of.cpu,
                     wall_s=time.perf_counter() - start)  # fmt: skip
    return progress_of.out


class _Progress:
    """The merged outcomes of finished tasks, their CPU seconds, and progress by nodes."""

    def __init__(self, progress: Any, done: int, total: int) -> None:
        self.progress, self.done, self.total = progress, done, total
        self.out: dict[int, tuple] = {}
        self.cpu: list[float] = []
        self.seen: set = set()

    def harvest(self, finished: Iterable[Any]) -> None:
        for future in finished:
            outcomes, seconds = future.result()
            self.seen.add(future)
            self.out.update(outcomes)
            self.cpu.append(seconds)
            self.done += len(outcomes)
            if self.progress is not None:
                self.progress(self.done, self.total)


def streamed_tasks(groups: Iterable[list], total: int, parts: int) -> Iterator[list[list]]:
    """``groups`` gathered into ``parts`` tasks of ``total / parts`` nodes (rounded up), each
    task given as soon as its groups have come; a group is cut where a task is full (a node's
    outcome does not depend on the nodes checked with it).

    >>> [[len(g) for g in t] for t in streamed_tasks([[1] * 5, [2] * 2, [3]], 8, 3)]
    [[3], [2, 1], [1, 1]]
    """
    size = max(1, -(-total // max(parts, 1)))
    task: list[list] = []
    count = 0
    for group in groups:
        while group:
            room = size - count
            task.append(group[:room])
            count += len(task[-1])
            group = group[room:]
            if count >= size:
                yield task
                task, count = [], 0
    if task:
        yield task


def pack(items: list) -> dict[str, Any]:
    """A group of ``(node, execution)`` items of one layout, column-wise: one stacked array
    per input (non-array inputs, the same for the whole group, as they are), output and
    gradient, and the first node's description without its values.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     x = tp.asarray([0.5, 1.5], requires_grad=True)
    ...     (x.sin() + x.sin()).sum().backward()
    >>> g = rec.graph()
    >>> items = [(g.replay_node(i), g.execution(i)) for i in (1, 2)]
    >>> p = pack(items)
    >>> p["ids"].tolist(), p["inputs"][0].shape
    ([1, 2], (2, 2))
    >>> [n.id for n, _ in unpack(p)] == [1, 2]
    True
    """
    nodes = [node for node, _ in items]
    first, ex = nodes[0], items[0][1]
    arrays = [isinstance(x, np.ndarray) for x in first.inputs]
    inputs = [
        _column([n.inputs[i] for n in nodes]) if a else first.inputs[i]
        for i, a in enumerate(arrays)
    ]
    grads = None
    if ex is not None:
        grads = [_column([e.grad_inputs[i] for _, e in items]) for i in range(len(ex.grad_inputs))]
    return {
        "first": dataclasses.replace(first, inputs=None, output=None, rule=_rule(first)),
        "ids": np.array([n.id for n in nodes], dtype=np.int64),
        "text": [(n.name, n.scope, n.source, n.edges) for n in nodes],
        "inputs": inputs,
        "arrays": arrays,
        "output": _column([n.output for n in nodes]),
        "grad_output": None if ex is None else _column([e.grad_output for _, e in items]),
        "grad_inputs": grads,
    }


def _rule(node: NodeRecord) -> Any:
    """The rule to ship with ``node``: None (the worker's table) for TPX's own rule of the op,
    as registered here; any other rule (a user's) as it is.

    NOTE: TPX's rule functions do not pickle by reference (the table holds other objects
    than the module's names): shipped by value, a rule is no longer the table's, and a
    worker would check its nodes one at a time.
    """
    import tpx

    rule = node.rule
    builtin = getattr(getattr(rule, "vjp", None), "__module__", "") or ""
    if rule is tpx.rules.RULES.get(node.op) and builtin.startswith("tpx."):
        return None
    return rule


def _column(values: list) -> Any:
    """The values stacked (a list when they are not arrays of one shape and dtype)."""
    first = values[0]
    if first.__class__ is np.ndarray and all(
        v.__class__ is np.ndarray and v.shape == first.shape and v.dtype == first.dtype
        for v in values
    ):
        return np.array(values)
    return list(values)


def unpack(p: dict[str, Any]) -> list[tuple[NodeRecord, Execution | None]]:
    """The ``(node, execution)`` items of a :func:`pack`, their values views of its arrays."""
    base = vars(p["first"])
    inputs = [(x, a) for x, a in zip(p["inputs"], p["arrays"])]
    output, grad_output, grad_inputs = p["output"], p["grad_output"], p["grad_inputs"]
    items = []
    # NOTE: row b as x[b, ...], a 0-d array for a scalar value as recorded (x[b]: a NumPy scalar)
    for b, nid in enumerate(p["ids"].tolist()):
        name, scope, source, edges = p["text"][b]
        inputs_b = tuple([x[b, ...] if a else x for x, a in inputs])
        node = _record(base, id=nid, name=name, scope=scope, source=source, edges=edges,
                       inputs=inputs_b,
                       output=_row(output, b))  # fmt: skip
        ex = None
        if grad_output is not None:
            grads = tuple([_row(g, b) for g in grad_inputs])
            ex = Execution(nid, _row(grad_output, b), grads)
        items.append((node, ex))
    return items


def _record(base: dict, **changes: Any) -> NodeRecord:
    """``dataclasses.replace`` of the record whose fields are ``base``, without its cost
    (it calls ``__init__`` with every field). Measured, 10k nodes: unpacking took 0.25 s CPU
    with ``replace`` and the cyclic GC on (it scanned the new records again and again), 0.06 s
    this way under ``paused_gc`` (the records hold no cycles)."""
    node = object.__new__(NodeRecord)
    fields = node.__dict__
    fields.update(base)
    fields.update(changes)
    return node


def _row(column: Any, b: int) -> Any:
    if column.__class__ is np.ndarray:
        return column[b, ...]
    return None if column is None else column[b]


def columns(p: dict[str, Any]) -> tuple:
    """The values of a :func:`pack` as ``local.check_group`` reads them already stacked."""
    return p["inputs"], p["output"], p["grad_output"], p["grad_inputs"]


def _check_packed(packs: list, opts: Any, check: CheckGroup) -> tuple[dict[int, tuple], float]:
    """On a worker: the outcomes of a task's packed groups, and the CPU seconds they took (of
    this thread: the worker's other threads, its event loop, are not the check's)."""
    start = time.thread_time()
    out: dict[int, tuple] = {}
    with paused_gc():  # NOTE: the records and temporaries hold no cycles (see _record)
        for p in packs:
            out.update(check(unpack(p), opts, columns(p)))
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
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    import dask

    # NOTE: Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
    # dynamic mmap threshold: every NumPy temporary of a batch (~0.5 MB) was then a fresh
    # mmap with its page faults, and the check ran 2-5x slower on a worker than here.
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)  # fmt: skip
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()
