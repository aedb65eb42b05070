"""The local check on a Dask cluster: node batches on the workers, results merged here.

The recorded graph is scattered once to every worker (its values travel once per worker, not
once per task); each task checks a contiguous slice of the backward order with
:func:`~tpx_inspect.checks.local.check_nodes`, the same function a single process runs, and
:func:`~tpx_inspect.checks.local.local_check` merges the outcomes in backward order, so the
findings are those of a single-process run.
"""

from __future__ import annotations

import contextlib
import pickle
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tpx_inspect.records import Graph

CheckNodes = Callable[[Graph, Sequence[int], Any], dict[int, tuple]]
"""``check(graph, ids, opts)``: the per-node outcomes of ``ids`` (``local.check_nodes``)."""

TASKS_PER_WORKER = 4
"""Slices per worker: enough to balance uneven slices and to show progress."""


def cluster_outcomes(
    client: Any,
    graph: Graph,
    ids: Sequence[int],
    opts: Any,
    check: CheckNodes,
    progress: Callable[[int, int], None] | None = None,
) -> dict[int, tuple]:
    """``check(graph, part, opts)`` of slices of ``ids`` run on the workers of ``client`` (a
    ``dask.distributed.Client``), merged into one dict (``check`` is
    :func:`~tpx_inspect.checks.local.check_nodes`, passed in: this module does not import it).

    ``progress(done, total)`` counts nodes of finished slices (leaves included).
    """
    from dask.distributed import as_completed

    workers = max(len(client.scheduler_info().get("workers", {})), 1)
    slices = split(list(ids), workers * TASKS_PER_WORKER)
    token = uuid.uuid4().hex
    # NOTE: one pickled payload is one message frame: dask ships many small arrays one
    # frame each, which was measured 25x slower for a graph of small nodes
    [remote] = client.scatter([_payload(graph)], broadcast=True)
    futures = {client.submit(_check_part, remote, token, part, opts, check, pure=False): len(part)
               for part in slices}  # fmt: skip
    out: dict[int, tuple] = {}
    done = 0
    try:
        for future in as_completed(list(futures)):
            out.update(future.result())
            done += futures[future]
            if progress is not None:
                progress(done, len(ids))
    finally:
        client.cancel(list(futures) + [remote])
    return out


def _payload(graph: Graph) -> bytes:
    """The graph with what the checks read of it made (nodes and executions), pickled."""
    import cloudpickle

    graph.execution(0)  # NOTE: made once here, not on every worker
    return cloudpickle.dumps(graph, protocol=5)


_GRAPHS: dict[str, Graph] = {}
"""On a worker: the graph of the running check, unpickled once per worker."""


def _check_part(
    payload: bytes, token: str, ids: list, opts: Any, check: CheckNodes
) -> dict[int, tuple]:
    graph = _GRAPHS.get(token)
    if graph is None:
        _GRAPHS.clear()
        graph = _GRAPHS[token] = pickle.loads(payload)
    return check(graph, ids, opts)


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
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None)  # fmt: skip
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()
