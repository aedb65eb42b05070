"""Compare two recorded graphs node by node: structure, forward values, gradients, memory.

Nodes are matched by id: ids are given in topological order, so two steps of the same model
(or two runs of the same script) give the same ids to the same nodes. A difference of values
is the largest absolute elementwise difference when both full values are stored, else the
difference of the L2 norms (``exact=False``).

>>> import tpx as tp, tpx_inspect
>>> def step(scale):
...     with tpx_inspect.capture(timing=False) as cap:
...         x = tp.ones(3, requires_grad=True)
...         (x * scale).sum().backward()
...     return cap.trace.graphs[0]
>>> d = diff_graphs(step(2.0), step(3.0))
>>> d.same_structure, [(c.id, c.status, c.output_diff) for c in d.nodes]  # x's grad differs
(True, [(0, 'values', 0.0), (1, 'values', 1.0), (2, 'values', 3.0)])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tpx_inspect.records import Graph, Node
from tpx_inspect.summary import TensorSummary

__all__ = ["GraphDiff", "NodeDiff", "diff_graphs"]


@dataclass(frozen=True)
class NodeDiff:
    """How node ``id`` differs: ``status`` is added, removed, structure, values or same.

    >>> NodeDiff(3, "same").changed
    False
    """

    id: int
    status: str
    changes: tuple[str, ...] = ()
    output_diff: float | None = None
    grad_diff: float | None = None
    saved_bytes_a: int = 0
    saved_bytes_b: int = 0
    exact: bool = True

    @property
    def changed(self) -> bool:
        """True unless the node is the same in both graphs."""
        return self.status != "same"


@dataclass(frozen=True)
class GraphDiff:
    """The node-by-node comparison of graph A with graph B.

    >>> GraphDiff((), 1, 1, 0, 0).same_structure
    True
    """

    nodes: tuple[NodeDiff, ...]
    nodes_a: int
    nodes_b: int
    peak_saved_bytes_a: int
    peak_saved_bytes_b: int

    @property
    def same_structure(self) -> bool:
        """True when no node was added, removed or changed in structure."""
        return all(n.status in ("same", "values") for n in self.nodes)

    def count(self, status: str) -> int:
        """How many nodes have ``status``."""
        return sum(n.status == status for n in self.nodes)

    def max_diff(self, what: str) -> float | None:
        """The largest ``output_diff`` or ``grad_diff`` (``what``: output or grad)."""
        vals = [getattr(n, f"{what}_diff") for n in self.nodes]
        vals = [v for v in vals if v is not None]
        return max(vals, key=_nan_first) if vals else None


def _nan_first(v: float) -> float:
    return math.inf if math.isnan(v) else v


def diff_graphs(a: Graph, b: Graph) -> GraphDiff:
    """Compare ``a`` with ``b`` node by node (matched by id)."""
    out = []
    for i in range(max(len(a.nodes), len(b.nodes))):
        if i >= len(b.nodes):
            out.append(NodeDiff(i, "removed", saved_bytes_a=a.nodes[i].saved_bytes))
        elif i >= len(a.nodes):
            out.append(NodeDiff(i, "added", saved_bytes_b=b.nodes[i].saved_bytes))
        else:
            out.append(_node_diff(a, b, i))
    return GraphDiff(tuple(out), len(a.nodes), len(b.nodes), a.peak_saved_bytes, b.peak_saved_bytes)


def _structure_changes(na: Node, nb: Node) -> list[str]:
    changes = []
    for attr in ("kind", "op", "scope", "dtype", "label"):
        va, vb = getattr(na, attr), getattr(nb, attr)
        if va != vb:
            changes.append(f"{attr}: {va!r} -> {vb!r}")
    if na.shape != nb.shape:
        changes.append(f"shape: {na.shape} -> {nb.shape}")
    if [e.src for e in na.inputs] != [e.src for e in nb.inputs]:
        changes.append(f"inputs: {[e.src for e in na.inputs]} -> {[e.src for e in nb.inputs]}")
    if na.saved_bytes != nb.saved_bytes:
        changes.append(f"saved bytes: {na.saved_bytes} -> {nb.saved_bytes}")
    return changes


def _node_diff(a: Graph, b: Graph, i: int) -> NodeDiff:
    na, nb = a.nodes[i], b.nodes[i]
    changes = _structure_changes(na, nb)
    out, exact_o = _value_diff(a, a.output(i), b, b.output(i))
    grad, exact_g = _value_diff(a, a.grad(i), b, b.grad(i))
    if changes:
        status = "structure"
    elif (out or 0.0) != 0.0 or (grad or 0.0) != 0.0:
        status = "values"
    else:
        status = "same"
    return NodeDiff(
        i, status, tuple(changes), out, grad, na.saved_bytes, nb.saved_bytes, exact_o and exact_g
    )


def _value_diff(
    ga: Graph, sa: TensorSummary | None, gb: Graph, sb: TensorSummary | None
) -> tuple[float | None, bool]:
    if sa is None or sb is None:
        return None, True
    va, vb = ga.value(sa), gb.value(sb)
    if va is not None and vb is not None and va.shape == vb.shape:
        if va.size == 0:
            return 0.0, True
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(va.astype(np.float64) - vb.astype(np.float64))
        same_nan = np.isnan(va) & np.isnan(vb) if va.dtype.kind == "f" else False
        d = np.where(same_nan | (va == vb), 0.0, d)
        return float(np.max(d)), True
    if sa.norm is None or sb.norm is None:
        return (0.0 if sa.norm == sb.norm else math.nan), False
    return abs(sa.norm - sb.norm), False
