"""``tpx-inspect ab TRACE --rule ...``: re-run only the backward of a saved trace, node by
node, with the overridden rules.

Each node of an overridden op runs B's rule on the values the trace kept (its inputs, its
output) and on the incoming gradient recorded in A; what B's rule returns is compared with
what A's rule returned: a node's own difference, from A's incoming gradient. With
``propagate``, every node's rule runs instead (B's where overridden, the built-in one
elsewhere) in A's backward order from the recorded root gradients, so B's gradients reach
every node and each node's incoming gradient is compared too. The forward is not re-run.
B's saved bytes follow B's rule's declared saves; B's peak is A's peak changed by the
overridden nodes' differences (sharing of buffers between nodes is not re-derived).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import p10
import tpx
from tpx import RuleContext
from tpx_inspect._ab_compare import Diff, NodeAB, StepAB, Tolerance, first_divergence
from tpx_inspect._util import describe
from tpx_inspect.ab import ABError, ABReport, Override
from tpx_inspect.check_view import params_from_json
from tpx_inspect.records import Graph, Trace

__all__ = ["replay_ab"]


def _rules(overrides: Sequence[Override]) -> dict[Any, tpx.Rule]:
    out = {}
    for o in overrides:
        with tpx.override_rule(o.op, o.fn) as rule:  # the rule as B records it
            out[o.op] = rule
    return out


def replay_ab(
    trace: Trace, overrides: Sequence[Override], tolerance: Tolerance, propagate: bool = False
) -> ABReport:
    """Compare each overridden node's rule output in B with A's recorded one; with
    ``propagate``, run every node's rule (B's where overridden) in A's backward order from the
    recorded seeds, and compare the incoming gradient of every node too."""
    rules = _rules(overrides)
    steps = []
    replayed = 0
    for g in trace.graphs:
        if g.kind != "backward" or g.detail != "full" or not g.order:
            continue
        step, n = _replay_graph(g, rules, propagate)
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


def _replay_graph(g: Graph, rules: dict, propagate: bool) -> tuple[StepAB, int]:
    incoming = _propagate(g, rules) if propagate else None
    nodes, replayed, delta = [], 0, 0
    for i, node in enumerate(g.nodes):
        st, rule = g.stats[i], rules.get(_op(node.op))
        v = g.node_values(i)
        grad_b = v.grad if incoming is None else incoming.get(i)
        grad = None if incoming is None else _diff(v.grad, grad_b)
        saved_b, grads_out, seconds_b, mark = node.saved_bytes, None, None, None
        result = None
        if rule is not None or (incoming is not None and node.op is not None):
            result = _run_rule(g, i, rule or tpx.rules.RULES.get(_op(node.op)), grad_b)
        if result is not None:
            saved, outs, seconds = result
            grads_out = _largest(v.grads_out, outs, [e.src for e in node.inputs])
            if rule is not None:
                saved_b, seconds_b, mark = saved, seconds, {"rule": describe(rule.real_vjp)}
                replayed += 1
                delta += saved_b - node.saved_bytes
        source = None if node.source is None else str(node.source)
        ab = NodeAB(
            i, i, node.op, node.title, node.scope, source, None, grad, grads_out,
            node.saved_bytes, saved_b, st.backward_seconds, seconds_b, mark,
        )  # fmt: skip
        nodes.append(ab)
    step = StepAB(
        g.step, g.id, g.id, tuple(nodes), g.order, g.peak_saved_bytes,
        max(0, g.peak_saved_bytes + delta), g.backward_seconds, g.backward_seconds,
    )  # fmt: skip
    return step, replayed


def _propagate(g: Graph, rules: dict) -> dict[int, np.ndarray]:
    """B's incoming gradient of every node: each node's rule (B's where overridden) run in A's
    backward order on the kept values, from the recorded root gradients. A node that ran
    without its values or a rule here stops it with an :class:`ABError` naming the node."""
    grads: dict[int, np.ndarray] = {}
    for a in g.accumulations:
        if a.source is None:
            seed = g.value(a.contribution)
            if seed is None:
                raise ABError(f"--propagate: graph {g.id} kept no value of its root gradient")
            grads[a.target] = np.array(seed)
    out: dict[int, np.ndarray] = {}
    for i in g.order:
        gin = grads.pop(i, None)
        if gin is None:
            continue
        out[i] = gin
        node = g.nodes[i]
        if node.op is None:  # a leaf: its gradient is final
            continue
        op = _op(node.op)
        result = _run_rule(g, i, rules.get(op) or tpx.rules.RULES.get(op), gin)
        if result is None:
            raise ABError(
                f"--propagate: node {i} ({node.op}) of graph {g.id} cannot be re-run (values "
                "not kept or no rule here); capture with --values all"
            )
        for e, gi in zip(node.inputs, result[1]):
            if e.src is not None and gi is not None:
                grads[e.src] = gi if e.src not in grads else grads[e.src] + gi
    return out


def _op(name: str | None) -> Any:
    if name is None:
        return None
    try:
        return p10.op_from_name(name)
    except p10.P10Error:
        return None


def _run_rule(
    g: Graph, i: int, rule: tpx.Rule | None, grad: np.ndarray | None
) -> tuple[int, list[np.ndarray | None], float] | None:
    """Run ``rule`` on node ``i``'s kept values and the incoming ``grad``: the bytes the rule
    saves, its gradients (NumPy) and its time; None when values or the rule are missing."""
    node, v = g.nodes[i], g.node_values(i)
    if rule is None or grad is None or v.output is None or any(x is None for x in v.inputs):
        return None
    saved = [x for k, x in enumerate(v.inputs) if rule.saves(k)]
    saved_bytes = sum(a.nbytes for a in saved) + (v.output.nbytes if rule.save_output else 0)
    ts = tuple(
        p10.from_numpy(np.array(x)) if rule.saves(k) else None for k, x in enumerate(v.inputs)
    )
    out = p10.from_numpy(np.array(v.output)) if rule.save_output else None
    meta = tuple((e.shape, np.dtype(e.dtype)) for e in node.inputs)
    needs = tuple(e.src is not None for e in node.inputs)
    ctx = RuleContext(params_from_json(node.params), meta, needs, ts, out)
    start = time.perf_counter()
    grads = rule.vjp(ctx, p10.from_numpy(np.array(grad)))
    seconds = time.perf_counter() - start
    return saved_bytes, [None if x is None else np.array(x.numpy()) for x in grads], seconds


def _diff(a: np.ndarray | None, b: np.ndarray | None) -> Diff | None:
    if a is None and b is None:
        return None
    if a is None or b is None or a.shape != b.shape:
        return Diff(float("nan"), float("nan"), 0.0, False)
    va, vb = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d = float(np.max(np.abs(va - vb))) if va.size else 0.0
    scale = float(np.max(np.abs(va))) if va.size else 0.0
    return Diff(d, 0.0 if d == 0 else (d / scale if scale else float("inf")), scale)


def _largest(recorded: tuple, grads: list, edges: list) -> Diff | None:
    out = None
    for a, b, e in zip(recorded, grads, edges):
        if e is None or a is None:
            continue
        d = _diff(a, b)
        if d is not None and (out is None or not d.abs <= out.abs):
            out = d
    return out
