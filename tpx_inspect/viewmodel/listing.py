"""What a run's graph list says about each graph (nodes, edges, roots, non-finite nodes...),
computed from the records in one place: the server's ``GET /runs/{run}/graphs`` answers it
for a loaded trace, and :func:`~tpx_inspect.viewmodel.persist.keep` keeps it beside a trace
so that a fresh server lists the graphs without reading the trace.

>>> import tpx as tp, tpx_inspect
>>> x = tp.ones(3, requires_grad=True)
>>> g = tpx_inspect.trace(lambda: (x * 2).sum().backward()).graphs[0]
>>> facts = graph_facts(g)
>>> facts["nodes"], facts["edges"], facts["finite"]
(3, 2, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tpx_inspect.records import NODE_COLUMNS, SUMMARY_COLUMNS

if TYPE_CHECKING:
    from tpx_inspect.records import Graph, Trace
    from tpx_inspect.summary import TensorSummary

__all__ = ["graph_facts", "listing", "node_column", "nonfinite", "nonfinite_mask"]


def nonfinite(s: TensorSummary | None) -> bool:
    """Does a tensor summary record a NaN or an Inf?"""
    return s is not None and not s.finite


def nonfinite_mask(g: Graph) -> np.ndarray:
    """Per node: does its output or gradient hold NaN/Inf? Read from the graph's summary
    tables in one vectorised pass (no per-node records are built).

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.asarray([1.0, 0.0], requires_grad=True)
    >>> with np.errstate(divide="ignore"):
    ...     g = tpx_inspect.trace(lambda: (1.0 / x).sum().backward()).graphs[0]
    >>> nonfinite_mask(g).tolist()
    [True, True, True]
    """
    t = getattr(g, "tables", None)
    if t is None or not len(t.summaries):
        return np.array([nonfinite(s.output) or nonfinite(s.grad) for s in g.stats], bool)
    cols = [SUMMARY_COLUMNS.index("nan"), SUMMARY_COLUMNS.index("inf")]
    bad_row = (t.summaries[:, cols] > 0).any(axis=1)
    mask = np.zeros(len(g.nodes), bool)
    for k in (NODE_COLUMNS.index("output"), NODE_COLUMNS.index("grad")):
        rows = t.nodes[:, k].astype(np.int64)
        has = rows >= 0
        mask[has] |= bad_row[rows[has]]
    return mask


def node_column(g: Graph, name: str) -> list[Any]:
    """One field of every node (``scope``, ``inputs``...), from the node table's columns when
    the graph has one, else from the records."""
    columns = getattr(g.nodes, "columns", None)
    if columns is not None and name in columns:
        return columns[name]
    return [getattr(n, name) for n in g.nodes]


def _src(edge: Any) -> int | None:
    return edge[0] if isinstance(edge, list | tuple) else edge.src


def graph_facts(g: Graph) -> dict[str, Any]:
    """The fields of the server's ``GraphInfo`` of graph ``g`` but its id and run (plain JSON
    types; a 100,000-node graph takes ~45 ms)."""
    bad = int(nonfinite_mask(g).sum())
    edges = sum(_src(e) is not None for ins in node_column(g, "inputs") for e in ins)
    return {
        "capture": int(g.run), "step": int(g.step), "kind": str(g.kind), "detail": str(g.detail),
        "nodes": len(g.nodes), "edges": int(edges), "roots": [int(r) for r in g.roots],
        "finite": bad == 0, "nonfinite_nodes": bad, "peak_saved_bytes": int(g.peak_saved_bytes),
        "backward_seconds": float(g.backward_seconds),
    }  # fmt: skip


def listing(trace: Trace) -> list[dict[str, Any]]:
    """:func:`graph_facts` of every graph of ``trace``, in order."""
    return [graph_facts(g) for g in trace.graphs]
