"""Compare run A with run B graph by graph and node by node, for ``tpx-inspect ab``.

Graphs are paired by backward step; nodes by :func:`tpx_inspect.diff.diff_graphs`'s matching
(kind, op, label, scope, shape, dtype, in recording order). A value difference is the largest
absolute elementwise difference when both full values were kept, else the difference of the
L2 norms (``exact`` False); its relative size divides by the largest magnitude of A's value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tpx_inspect.diff import diff_graphs
from tpx_inspect.records import Graph
from tpx_inspect.summary import TensorSummary

__all__ = ["Divergence", "NodeAB", "StepAB", "Tolerance", "compare_graphs", "first_divergence"]


@dataclass(frozen=True)
class Tolerance:
    """A and B match where ``|a - b| <= atol + rtol * max|a|``.

    >>> Tolerance(rtol=1e-3, atol=0.0).exceeded(0.5, 1000.0), Tolerance().exceeded(0.0, 1.0)
    (False, False)
    """

    rtol: float = 1e-5
    atol: float = 1e-8

    def exceeded(self, diff: float | None, scale: float) -> bool:
        """Whether a difference ``diff`` of values of magnitude ``scale`` is too large."""
        if diff is None:
            return False
        return math.isnan(diff) or diff > self.atol + self.rtol * scale


@dataclass(frozen=True)
class Diff:
    """One value compared: absolute and relative difference, A's magnitude, whether exact."""

    abs: float
    rel: float
    scale: float
    exact: bool = True


@dataclass(frozen=True)
class NodeAB:
    """Node ``id`` of A (``id_b`` in B) at one step: what differs, what each saved and took.

    ``output`` compares forward values, ``grad`` the incoming gradients, ``grads_out`` the
    gradients its rule returned (the largest over its inputs); None where not recorded.
    """

    id: int
    id_b: int | None
    op: str | None
    title: str
    scope: str
    source: str | None
    output: Diff | None
    grad: Diff | None
    grads_out: Diff | None
    saved_bytes_a: int
    saved_bytes_b: int
    backward_seconds_a: float | None
    backward_seconds_b: float | None
    overrides_b: dict[str, str] | None = None


@dataclass(frozen=True)
class StepAB:
    """One backward step compared: its nodes and the peak saved memory of A and B."""

    step: int
    graph_a: int
    graph_b: int
    nodes: tuple[NodeAB, ...]
    order: tuple[int, ...]
    peak_saved_bytes_a: int
    peak_saved_bytes_b: int
    backward_seconds_a: float
    backward_seconds_b: float
    unmatched: tuple[str, ...] = ()


@dataclass(frozen=True)
class Divergence:
    """The first place where A and B differ beyond the tolerance."""

    step: int
    phase: str  # forward | backward | structure | error
    what: str
    node: int | None = None
    op: str | None = None
    scope: str = ""
    source: str | None = None
    abs: float | None = None
    rel: float | None = None
    node_b: int | None = None

    def describe(self) -> str:
        """One line naming the place, e.g. ``step 0, backward: tanh (node 5) ...``."""
        if self.node is None:
            return f"step {self.step}, {self.phase}: {self.what}"
        where = f"{self.op or 'leaf'} (node {self.node}"
        where += f", scope {self.scope}" if self.scope else ""
        where += f", {self.source})" if self.source else ")"
        size = "" if self.abs is None else f": max abs {self.abs:.3g}, rel {self.rel:.3g}"
        return f"step {self.step}, {self.phase}: {where}, {self.what}{size}"


def compare_graphs(a: Graph, b: Graph) -> StepAB:
    """Node-by-node comparison of A's graph with B's graph of the same step."""
    d = diff_graphs(a, b)
    nodes = []
    unmatched = []
    for nd in d.nodes:
        if nd.id is None or nd.id_b is None:
            unmatched.append(f"{nd.status} node {nd.id if nd.id is not None else nd.id_b}")
            continue
        nodes.append(_node_ab(a, b, nd.id, nd.id_b))
    return StepAB(
        a.step, a.id, b.id, tuple(nodes), a.order, a.peak_saved_bytes, b.peak_saved_bytes,
        a.backward_seconds, b.backward_seconds, tuple(unmatched),
    )  # fmt: skip


def _node_ab(a: Graph, b: Graph, i: int, j: int) -> NodeAB:
    na, nb = a.nodes[i], b.nodes[j]
    sa, sb = a.stats[i], b.stats[j]
    outs = [_diff(a, x, b, y) for x, y in zip(sa.grads_out, sb.grads_out)]
    outs = [o for o in outs if o is not None]
    return NodeAB(
        i, j, na.op, na.title, na.scope, None if na.source is None else str(na.source),
        _diff(a, sa.output, b, sb.output), _diff(a, sa.grad, b, sb.grad),
        max(outs, key=lambda o: (math.isnan(o.abs), o.abs)) if outs else None,
        na.saved_bytes, nb.saved_bytes, sa.backward_seconds, sb.backward_seconds, nb.overrides,
    )  # fmt: skip


def _scale(s: TensorSummary) -> float:
    vals = [abs(v) for v in (s.min, s.max) if v is not None]
    return max(vals) if vals else 0.0


def _diff(ga: Graph, sa: TensorSummary | None, gb: Graph, sb: TensorSummary | None) -> Diff | None:
    if sa is None and sb is None:
        return None
    if sa is None or sb is None:
        return Diff(math.nan, math.nan, 0.0 if sa is None else _scale(sa), False)
    scale = _scale(sa)
    va, vb = ga.value(sa), gb.value(sb)
    if va is not None and vb is not None and va.shape == vb.shape:
        d = _max_abs(va, vb)
        return Diff(d, _rel(d, scale), scale)
    if sa.norm is None or sb.norm is None:
        d = 0.0 if sa.norm == sb.norm and sa.nan == sb.nan and sa.inf == sb.inf else math.nan
    else:
        d = abs(sa.norm - sb.norm)
    return Diff(d, _rel(d, scale), scale, False)


def _max_abs(va: np.ndarray, vb: np.ndarray) -> float:
    if va.size == 0:
        return 0.0
    if va.dtype.kind not in "fc" and vb.dtype.kind not in "fc":
        return float(np.max(np.abs(va.astype(np.float64) - vb.astype(np.float64))))
    a, b = va.astype(np.float64), vb.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    d = np.where(same, 0.0, d)
    return float(np.nanmax(d)) if not np.isnan(d).all() else math.nan


def _rel(d: float, scale: float) -> float:
    if d == 0.0:
        return 0.0
    return d / scale if scale > 0 else math.inf


def first_divergence(steps: tuple[StepAB, ...], tol: Tolerance) -> Divergence | None:
    """The first difference beyond ``tol``: step by step, the forward (nodes in recording
    order), then the backward (nodes in A's backward order: the incoming gradient, then what
    the node's rule returned)."""
    for s in steps:
        if s.unmatched:
            return Divergence(s.step, "structure", f"graphs differ: {', '.join(s.unmatched[:3])}")
        found = _forward(s, tol) or _backward(s, tol)
        if found is not None:
            return found
    return None


def _forward(s: StepAB, tol: Tolerance) -> Divergence | None:
    for n in s.nodes:
        if n.output is not None and tol.exceeded(n.output.abs, n.output.scale):
            return _at(s, n, "forward", "output differs", n.output)
    return None


def _backward(s: StepAB, tol: Tolerance) -> Divergence | None:
    by_id = {n.id: n for n in s.nodes}
    for i in s.order:
        n = by_id.get(i)
        if n is None:
            continue
        if n.grad is not None and tol.exceeded(n.grad.abs, n.grad.scale):
            return _at(s, n, "backward", "incoming gradient differs", n.grad)
        if n.grads_out is not None and tol.exceeded(n.grads_out.abs, n.grads_out.scale):
            return _at(s, n, "backward", "gradient its rule returned differs", n.grads_out)
    return None


def _at(s: StepAB, n: NodeAB, phase: str, what: str, d: Diff) -> Divergence:
    return Divergence(s.step, phase, what, n.id, n.op, n.scope, n.source, d.abs, d.rel, n.id_b)
