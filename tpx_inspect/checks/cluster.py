"""The local check on a Dask cluster: groups of nodes on the workers, results merged here.

The client plans the work as one process does (:func:`~tpx_inspect.checks.local.plan`: the
nodes that cannot be replayed, and groups of nodes of one layout), then packs each task's
groups column-wise: per group, one stacked NumPy array per input, output and gradient, the
node ids, names and sources, and one value-free description of the first node. The packs are
scattered (each value travels once, to the one worker that checks it, in a few large frames),
each worker unpacks its groups into node records that are views of those arrays and runs
:func:`~tpx_inspect.checks.local.check_group` on them, the function one process runs, and
:func:`~tpx_inspect.checks.local.local_check` merges the outcomes in backward order, so the
findings are those of a single-process run. No graph is pickled by this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from tpx_inspect.check_view import Execution, NodeRecord

CheckGroup = Callable[[list, Any], dict[int, tuple]]
"""``check(items, opts)``: the outcomes of one group of ``(node, execution)`` items
(``local.check_group``, passed in: this module does not import the local check)."""

TASKS_PER_WORKER = 4
"""Tasks per worker: enough to balance uneven tasks and to show progress."""


def cluster_outcomes(
    client: Any,
    groups: Sequence[list],
    opts: Any,
    check: CheckGroup,
    progress: Callable[[int, int], None] | None = None,
    decided: int = 0,
    stats: dict[str, Any] | None = None,
) -> dict[int, tuple]:
    """``check(group, opts)`` of every group run on the workers of ``client`` (a
    ``dask.distributed.Client``), merged into one dict.

    ``progress(done, total)`` is called as each task finishes; it counts nodes, ``decided``
    (those the caller settled without a check) included from the first call. ``stats`` (a
    dict) receives the seconds spent packing, scattering and waiting, and each task's CPU
    seconds on its worker.
    """
    from dask.distributed import as_completed

    start = time.perf_counter()
    workers = max(len(client.scheduler_info().get("workers", {})), 1)
    tasks = split(_pieces(list(groups), workers * TASKS_PER_WORKER), workers * TASKS_PER_WORKER)
    packs = [[pack(group) for group in task] for task in tasks]
    packed = time.perf_counter()
    remote = client.scatter(packs, hash=False)  # NOTE: each pack to one worker, once
    scattered = time.perf_counter()
    futures = {client.submit(_check_packed, r, opts, check, pure=False): sum(map(len, task))
               for r, task in zip(remote, tasks)}  # fmt: skip
    out: dict[int, tuple] = {}
    done = decided
    total = decided + sum(futures.values())
    cpu = []
    try:
        for future in as_completed(list(futures)):
            outcomes, seconds = future.result()
            out.update(outcomes)
            cpu.append(seconds)
            done += futures[future]
            if progress is not None:
                progress(done, total)
    finally:
        client.cancel(list(futures) + list(remote))
    if stats is not None:
        stats.update(pack_s=packed - start, scatter_s=scattered - packed,
                     run_s=time.perf_counter() - scattered, task_cpu_s=cpu)  # fmt: skip
    return out


def _pieces(groups: list[list], parts: int) -> list[list]:
    """``groups`` with the largest halved until there are ``parts`` of them (or all are single
    nodes): a node's outcome does not depend on the nodes checked with it."""
    groups = list(groups)
    while len(groups) < parts:
        k = max(range(len(groups)), key=lambda i: len(groups[i]), default=None)
        if k is None or len(groups[k]) < 2:
            break
        half = len(groups[k]) // 2
        groups[k : k + 1] = [groups[k][:half], groups[k][half:]]
    return groups


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
        "text": [(n.name, n.scope, n.source) for n in nodes],
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
    first: NodeRecord = p["first"]
    items = []
    for b, nid in enumerate(p["ids"].tolist()):
        name, scope, source = p["text"][b]
        inputs = tuple(x[b] if a else x for x, a in zip(p["inputs"], p["arrays"]))
        node = dataclasses.replace(first, id=nid, name=name, scope=scope, source=source,
                                   inputs=inputs, output=p["output"][b])  # fmt: skip
        ex = None
        if p["grad_output"] is not None:
            grads = tuple(None if g is None else g[b] for g in p["grad_inputs"])
            ex = Execution(nid, p["grad_output"][b], grads)
        items.append((node, ex))
    return items


def _check_packed(packs: list, opts: Any, check: CheckGroup) -> tuple[dict[int, tuple], float]:
    """On a worker: the outcomes of a task's packed groups, and the CPU seconds they took (of
    this thread: the worker's other threads, its event loop, are not the check's)."""
    start = time.thread_time()
    out: dict[int, tuple] = {}
    for p in packs:
        out.update(check(unpack(p), opts))
    return out, time.thread_time() - start


def split(items: list, parts: int) -> list[list]:
    """``items`` in at most ``parts`` contiguous slices of nearly equal length.

    >>> split(list(range(5)), 2)
    [[0, 1, 2], [3, 4]]
    """
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for k in range(parts):
        end = start + size + (1 if k < extra else 0)
        out.append(items[start:end])
        start = end
    return [p for p in out if p]


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
