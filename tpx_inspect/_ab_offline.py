"""``tpx-inspect ab TRACE --rule ...``: re-run only the backward of a saved trace, node by
node, with the overridden rules.

Each node of an overridden op runs B's rule on the values the trace kept (its inputs, its
output) and on the incoming gradient recorded in A; what B's rule returns is compared with
what A's rule returned. Nothing is propagated: a node's own difference is measured, from A's
incoming gradient. The forward is not re-run. B's saved bytes follow B's rule's declared
saves; B's peak is A's peak changed by the overridden nodes' differences (sharing of buffers
between nodes is not re-derived).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import p10
import tpx
from p10._overrides import describe
from tpx import RuleContext
from tpx_inspect._ab_compare import Diff, NodeAB, StepAB, Tolerance, first_divergence
from tpx_inspect.ab import ABError, ABReport, Override
from tpx_inspect.checks.offline import params_from_json
from tpx_inspect.records import Graph, Trace

__all__ = ["replay_ab"]


class _Node:
    """The node attributes a rule reads through its ``ctx``."""

    __slots__ = ("ctx", "edges", "in_meta", "op", "params")

    def __init__(self, op: Any, params: dict, edges: tuple, in_meta: tuple) -> None:
        self.op, self.params, self.edges, self.in_meta = op, params, edges, in_meta
        self.ctx = None


def _rules(overrides: Sequence[Override]) -> dict[Any, tpx.Rule]:
    out = {}
    for o in overrides:
        with tpx.override_rule(o.op, o.fn) as rule:  # the rule as B records it
            out[o.op] = rule
    return out


def replay_ab(trace: Trace, overrides: Sequence[Override], tolerance: Tolerance) -> ABReport:
    """Compare each overridden node's rule output in B with A's recorded one."""
    rules = _rules(overrides)
    steps = []
    replayed = 0
    for g in trace.graphs:
        if g.kind != "backward" or g.detail != "full" or not g.order:
            continue
        step, n = _replay_graph(g, rules)
        steps.append(step)
        replayed += n
    if not replayed:
        ops = ", ".join(sorted(op.value for op in rules))
        raise ABError(
            f"no node of {ops} with its values in this trace to re-run; capture the script "
            "with --values all (or give the script to tpx-inspect ab)"
        )
    first = first_divergence(tuple(steps), tolerance)
    return ABReport(tuple(overrides), tuple(steps), (), (), first, tolerance, trace_a=trace)


def _replay_graph(g: Graph, rules: dict) -> tuple[StepAB, int]:
    nodes, replayed, delta = [], 0, 0
    for i, node in enumerate(g.nodes):
        st = g.stats[i]
        rule = rules.get(_op(node.op))
        result = _replay_node(g, i, rule) if rule is not None else None
        saved_b, grads_out, seconds_b, mark = node.saved_bytes, None, None, None
        if result is not None:
            saved_b, grads_out, seconds_b = result
            mark = {"rule": describe(rule.vjp)}
            replayed += 1
            delta += saved_b - node.saved_bytes
        source = None if node.source is None else str(node.source)
        ab = NodeAB(
            i, i, node.op, node.title, node.scope, source, None, None, grads_out,
            node.saved_bytes, saved_b, st.backward_seconds, seconds_b, mark,
        )  # fmt: skip
        nodes.append(ab)
    step = StepAB(
        g.step, g.id, g.id, tuple(nodes), g.order, g.peak_saved_bytes,
        max(0, g.peak_saved_bytes + delta), g.backward_seconds, g.backward_seconds,
    )  # fmt: skip
    return step, replayed


def _op(name: str | None) -> Any:
    if name is None:
        return None
    try:
        return p10.op_from_name(name)
    except p10.P10Error:
        return None


def _replay_node(g: Graph, i: int, rule: tpx.Rule) -> tuple[int, Diff | None, float] | None:
    """B's saved bytes, the largest difference of B's rule outputs from A's, and its time;
    None when the trace lacks the node's values."""
    node, v = g.nodes[i], g.node_values(i)
    if v.output is None or v.grad is None or any(x is None for x in v.inputs):
        return None
    saved = [v.inputs[k] for k in rule.save if k < len(v.inputs)]
    saved_bytes = sum(a.nbytes for a in saved) + (v.output.nbytes if rule.save_output else 0)
    ts = tuple(
        p10.from_numpy(np.array(x)) if k in rule.save else None for k, x in enumerate(v.inputs)
    )
    out = p10.from_numpy(np.array(v.output)) if rule.save_output else None
    meta = tuple((e.shape, np.dtype(e.dtype)) for e in node.inputs)
    edges = tuple(e.src for e in node.inputs)
    ctx = RuleContext(_Node(_op(node.op), params_from_json(node.params), edges, meta), ts, out)  # type: ignore[arg-type]
    start = time.perf_counter()
    grads = rule.vjp(ctx, p10.from_numpy(np.array(v.grad)))
    seconds = time.perf_counter() - start
    return saved_bytes, _largest(g, v.grads_out, grads, edges), seconds


def _largest(g: Graph, recorded: tuple, grads: tuple, edges: tuple) -> Diff | None:
    out = None
    for a, b, e in zip(recorded, grads, edges):
        if e is None or a is None:
            continue
        if b is None:
            return Diff(float("nan"), float("nan"), 0.0)
        vb = np.asarray(b.numpy() if hasattr(b, "numpy") else b, np.float64)
        va = np.asarray(a, np.float64)
        d = float(np.max(np.abs(va - vb))) if va.size and va.shape == vb.shape else float("nan")
        scale = float(np.max(np.abs(va))) if va.size else 0.0
        rel = 0.0 if d == 0 else (d / scale if scale else float("inf"))
        if out is None or not d <= out.abs:
            out = Diff(d, rel, scale)
    return out
