"""Dask specifics of the generic Array API backend: lazy chunked tensors, on a cluster if asked.

A tensor of the ``"dask"`` backend holds a ``dask.array.Array``: every op only extends the task
graph, and nothing runs until a value is read (``.item()``, ``.numpy()``, ``print``). Then Dask
computes chunk by chunk, so a reduction over an array larger than memory streams through it.
Non-standard kernels stay lazy too: ``erf`` maps SciPy over the blocks, scatter-add is a
weighted ``bincount``.

Running on a cluster: Dask computes with the scheduler of the active ``distributed.Client``.
:func:`connect` starts a ``LocalCluster`` (or joins ``address``, e.g.
``"tcp://scheduler:8786"``); every later ``compute`` of any P10 Dask tensor runs there::

    client = p10.backends.dask_extras.connect()                # LocalCluster (see below)
    client = p10.backends.dask_extras.connect("tcp://host:8786")  # an existing cluster
    x = p10.backends.dask_extras.from_dask(dask.array.ones((10**6, 10**3), chunks=10**4))
    x.sum().item()  # runs chunk by chunk on the cluster's workers

In a training loop, end each step with ``tpx.materialize(loss, model, optimizer)``: it
computes the step's results in one pass over its graph and keeps them on the workers (without
it, every step would recompute the history of all earlier ones, and every value read would
recompute the forward pass). Gradients stay Dask arrays, chunked like their inputs. Call
:func:`connect` under ``if __name__ == "__main__":``: the workers of a local cluster import
the main script when they start. ``examples/train_on_dask.py`` trains on data larger than the
cluster's memory.

>>> import pytest; da = pytest.importorskip("dask.array")
>>> x = from_dask(da.ones((4, 3), chunks=2))
>>> (x * 2).sum().item()
24.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from p10._backend import get_backend
from p10._errors import BackendError
from p10._lazy import materialize
from p10._ops import Op
from p10._tensor import wrap
from p10.backends.array_api_index import Indexer

Kernel = Callable[..., Any]

CHUNKS: Any = "auto"
"""How ``from_numpy`` chunks a NumPy array that becomes a Dask tensor (``dask.array`` syntax)."""


def configure(lib: Any) -> None:
    """Set the conversions of a Dask :class:`~p10.backends.array_api_backend.Lib`."""
    import dask.array as da

    lib.from_numpy = lambda arr: da.from_array(np.asarray(arr), chunks=CHUNKS)
    lib.to_numpy = lambda a: _compute([a])[0]
    lib.cpu = True
    lib.persist = _persist
    lib.compute = _compute
    # NOTE: a Dask "view" is a new graph, and setitem rebinds the graph of one array object:
    # writes never reach other tensors, so no two tensors share memory.
    lib.may_share = lambda a, b: False


# NOTE: optimize_graph=False: low-level fusion names a fused task after one of its parts, so a
# graph that reads the same data (a dataset chunk) as the previous step's but fuses it into a
# different chain sends the scheduler one key with two definitions ("Detected different run_spec
# for key"). Unfused keys are the tokens of their own inputs: the same data, the same key and
# task. Dask's expression-level optimizations still run; the task counts stay within a few %.
def _persist(arrays: list[Any]) -> list[Any]:
    import dask

    return list(dask.persist(*arrays, optimize_graph=False))


def _compute(arrays: list[Any]) -> list[np.ndarray]:
    import dask

    return [np.asarray(a) for a in dask.compute(*arrays, optimize_graph=False)]


def _index_add(lib: Any) -> Kernel:
    import dask.array as da

    ix = Indexer(lib)

    def index_add(base, values, *index, key):
        positions = ix._resolve(base, index, key)
        if positions.size == 0:
            return base.copy()
        lin = positions.reshape(-1)
        vals = da.broadcast_to(values.astype(base.dtype), positions.shape).reshape(-1)
        idx = da.from_array(lin, chunks=vals.chunks)
        size = int(np.prod(base.shape))
        sums = da.bincount(idx, weights=vals, minlength=size).astype(base.dtype)
        return base + sums.reshape(base.shape)

    return index_add


def kernels(lib: Any) -> dict[Op, Kernel]:
    """The lazy Dask kernels that replace generic or host-fallback ones."""
    from scipy import special

    def erf(x):
        return x.map_blocks(special.erf, dtype=x.dtype)

    return {Op.ERF: erf, Op.INDEX_ADD: _index_add(lib)}


def from_dask(array: Any, /, *, backend: str = "dask") -> Any:
    """A P10 tensor around an existing (lazy) ``dask.array.Array``, without computing it."""
    b = get_backend(backend)
    b.dtype_of(array)  # a KeyError here: a dtype P10 does not have
    return wrap(array, b)


def persist(*tensors: Any) -> None:
    """Compute the Dask tensors' values now, in one pass, and keep them (in memory or on the
    cluster), so later graphs start from them instead of from their whole history. The same as
    :func:`p10.materialize`, also for ``tpx`` tensors (``tpx.materialize`` also takes modules,
    optimizers and gradients)."""
    materialize(*[getattr(t, "p10", t) for t in tensors])  # a tpx.Tensor's public .p10


def connect(address: str | None = None, **cluster_options: Any) -> Any:
    """A ``distributed.Client``: on ``address``, or on a new ``LocalCluster(**cluster_options)``
    (on 127.0.0.1 unless ``host=`` says otherwise, with the dashboard when bokeh is installed).

    The client becomes Dask's default scheduler, so every P10 Dask computation runs there.
    Close it with :func:`close` (which also closes a local cluster) when done.

    A local cluster's workers are new processes that import the main script before they
    start: call ``connect()`` under ``if __name__ == "__main__":``, never at a script's top
    level, or each worker would start a cluster of its own (this raises
    :class:`p10.BackendError` in them, saying so).
    """
    from distributed import Client, LocalCluster

    if address is not None:
        return Client(address)
    _refuse_in_spawned_child()
    if cluster_options.get("processes", True):  # threads in this process talk in-process
        cluster_options.setdefault("host", "127.0.0.1")
    if not has_dashboard():
        cluster_options.setdefault("dashboard_address", ":0")  # a free port, no clash
    return Client(LocalCluster(**cluster_options))


def _refuse_in_spawned_child() -> None:
    import multiprocessing
    import sys

    # NOTE: the flag that multiprocessing itself checks: set while a new process imports the
    # parent's main script, before it runs its target
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        script = getattr(sys.modules.get("__mp_main__"), "__file__", "the main script")
        raise BackendError(
            f"dask_extras.connect() ran while a new process imported {script} (a Dask worker "
            "starting up imports the main script); start the cluster under "
            'if __name__ == "__main__": in that script, not at its top level'
        )


def has_dashboard() -> bool:
    """Whether Dask's dashboard can run here (it needs the optional ``bokeh`` package).

    >>> isinstance(has_dashboard(), bool)
    True
    """
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def close(client: Any) -> None:
    """Close ``client`` and, when :func:`connect` started it, its local cluster."""
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()
