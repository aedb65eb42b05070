"""Compare two recorded graphs node by node: structure, forward values, gradients, memory.

Nodes are matched by signature (kind, op, label, scope, shape, dtype), the k-th node of a
signature in A with the k-th of the same signature in B (ids are topological, so this is the
order of recording): two steps of one model match node for node even when their ids differ.
Unmatched nodes are ``removed`` (only in A) or ``added`` (only in B); a matched node whose
inputs come from different nodes, or that saves other bytes, changed in ``structure``. A
difference of values is the largest absolute elementwise difference when both full values are
stored, else the difference of the L2 norms (``exact=False``).

>>> import tpx as tp, tpx_inspect
>>> def step(scale):
...     with tpx_inspect.capture(timing=False) as cap:
...         x = tp.ones(3, requires_grad=True)
...         (x * scale).sum().backward()
...     return cap.trace.graphs[0]
>>> d = diff_graphs(step(2.0), step(3.0))
>>> d.same_structure, [(c.id, c.status, c.output_diff) for c in d.nodes]  # x's grad differs
(True, [(0, 'values', 0.0), (1, 'values', 1.0), (2, 'values', 3.0)])
>>> [(c.id, c.id_b) for c in d.nodes]
[(0, 0), (1, 1), (2, 2)]
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
    """How node ``id`` of A (``id_b`` in B) differs: ``status`` is added, removed, structure,
    values or same. ``id`` is None for an added node, ``id_b`` None for a removed one.

    >>> NodeDiff(3, "same", id_b=3).changed
    False
    """

    id: int | None
    status: str
    changes: tuple[str, ...] = ()
    output_diff: float | None = None
    grad_diff: float | None = None
    saved_bytes_a: int = 0
    saved_bytes_b: int = 0
    exact: bool = True
    id_b: int | None = None

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
    """Compare ``a`` with ``b`` node by node (matched by signature, in id order)."""
    match = _match(a, b)
    out = []
    for i, j in match.items():
        if j is None:
            out.append(NodeDiff(i, "removed", saved_bytes_a=a.nodes[i].saved_bytes))
        else:
            out.append(_node_diff(a, b, i, j, match))
    taken = {j for j in match.values() if j is not None}
    out += [
        NodeDiff(None, "added", saved_bytes_b=n.saved_bytes, id_b=n.id)
        for n in b.nodes
        if n.id not in taken
    ]
    return GraphDiff(tuple(out), len(a.nodes), len(b.nodes), a.peak_saved_bytes, b.peak_saved_bytes)


def _signature(n: Node) -> tuple:
    return (n.kind, n.op, n.label, n.scope, n.shape, n.dtype)


def _match(a: Graph, b: Graph) -> dict[int, int | None]:
    pool: dict[tuple, list[int]] = {}
    for n in reversed(b.nodes):
        pool.setdefault(_signature(n), []).append(n.id)
    out: dict[int, int | None] = {}
    for n in a.nodes:
        ids = pool.get(_signature(n))
        out[n.id] = ids.pop() if ids else None
    return out


def _node_diff(a: Graph, b: Graph, i: int, j: int, match: dict[int, int | None]) -> NodeDiff:
    na, nb = a.nodes[i], b.nodes[j]
    changes = []
    srcs_a = [None if e.src is None else match.get(e.src) for e in na.inputs]
    srcs_b = [e.src for e in nb.inputs]
    if srcs_a != srcs_b:
        changes.append(f"inputs: {[e.src for e in na.inputs]} -> {srcs_b}")
    if na.saved_bytes != nb.saved_bytes:
        changes.append(f"saved bytes: {na.saved_bytes} -> {nb.saved_bytes}")
    out, exact_o = _value_diff(a, a.output(i), b, b.output(j))
    grad, exact_g = _value_diff(a, a.grad(i), b, b.grad(j))
    if changes:
        status = "structure"
    elif (out or 0.0) != 0.0 or (grad or 0.0) != 0.0:
        status = "values"
    else:
        status = "same"
    return NodeDiff(
        i, status, tuple(changes), out, grad, na.saved_bytes, nb.saved_bytes,
        exact_o and exact_g, j,
    )  # fmt: skip


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
