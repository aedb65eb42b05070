"""The first non-finite value, forward and backward: the producer apart from the passers-on.

Forward: a node whose output holds NaN/Inf while all its floating inputs are finite produced
it; a node with a non-finite input only passed it on. Backward: a node whose rule returned a
non-finite gradient from a finite incoming gradient and finite forward values produced it; an
accumulation of finite parts into a non-finite total (overflow, ``inf + -inf``)
produced it too.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from tpx_inspect.checks.record import GraphRecord, NodeRecord
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at


def _finite(x: Any) -> bool:
    known = _known.get(id(x))
    if known is not None and known[0] is x:
        return known[1]
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f":
        return True
    return bool(np.isfinite(x).all())


_known: dict[int, tuple[Any, bool]] = {}  # id -> (array, finite) while a check runs


def _learn(values: list[Any], chunk: int = 4096) -> None:
    """Fill ``_known`` for the float arrays among ``values``: those of one shape and dtype
    tested together, ``chunk`` at a time (the same test as ``_finite``, fewer calls)."""
    groups: dict[tuple, list[np.ndarray]] = {}
    for x in values:
        if x.__class__ is np.ndarray and x.dtype.kind == "f" and id(x) not in _known:
            _known[id(x)] = (x, True)
            groups.setdefault((x.shape, x.dtype.str), []).append(x)
    for (shape, _), xs in groups.items():
        for lo in range(0, len(xs), chunk):
            part = xs[lo : lo + chunk]
            flat = np.array(part).reshape(len(part), math.prod(shape))
            for x, ok in zip(part, np.isfinite(flat).all(axis=1).tolist()):
                _known[id(x)] = (x, ok)


def _graph_values(graph: GraphRecord) -> list[Any]:
    out: list[Any] = []
    for n in graph.nodes:
        out += [n.output, *(n.inputs or ())]
    for bw in graph.backwards:
        for ex in bw.executions:
            out += [ex.grad_output, *ex.grad_inputs]
        for c in bw.contributions:
            out += [c.value, c.total]
    return out


def _kind(x: np.ndarray) -> str:
    return "NaN" if np.isnan(x).any() else "Inf"


def _forward_values_finite(node: NodeRecord) -> bool:
    return all(_finite(x) for x in node.inputs or ()) and _finite(node.output)


def forward_findings(graph: GraphRecord) -> list[Finding]:
    """One finding per forward producer of NaN/Inf, in recording order; passers-on listed."""
    producers: list[NodeRecord] = []
    passed_on: list[int] = []
    for node in graph.nodes:
        if node.output is None or _finite(node.output):
            continue
        if all(_finite(x) for x in node.inputs or ()):
            producers.append(node)
        else:
            passed_on.append(node.id)
    return [
        finding_at(
            n,
            "nonfinite-forward",
            f"{n.where()} produced {_kind(n.output)} in the forward from finite inputs"
            + (f"; {len(passed_on)} later nodes only passed it on" if i == 0 and passed_on else ""),
            role="producer",
            passed_on=passed_on if i == 0 else [],
        )
        for i, n in enumerate(producers)
    ]


def _backward_roles(graph: GraphRecord, bw: Any) -> tuple[list, list[int]]:
    """``(producers as (node, execution, bad inputs), ids of the nodes that passed it on)``."""
    producers: list = []
    passed_on: list[int] = []
    for ex in bw.executions:
        node = graph.node(ex.node)
        bad = [i for i, g in enumerate(ex.grad_inputs) if not _finite(g)]
        if not _finite(ex.grad_output) or (bad and not _forward_values_finite(node)):
            passed_on.append(node.id)
        elif bad:
            producers.append((node, ex, bad))
    return producers, passed_on


def backward_findings(graph: GraphRecord) -> list[Finding]:
    """One finding per backward producer of NaN/Inf (a rule or an accumulation); the first
    lists the nodes that only passed it on (received it, or got it from forward values)."""
    findings: list[Finding] = []
    for k, bw in enumerate(graph.backwards):
        producers, passed_on = _backward_roles(graph, bw)
        for j, (node, ex, bad) in enumerate(producers):
            findings.append(finding_at(
                node, "nonfinite-backward",
                f"backward {k}: the rule of {node.where()} returned "
                f"{_kind(ex.grad_inputs[bad[0]])} for input {bad[0]} from a finite incoming "
                "gradient and finite forward values"
                + (f"; {len(passed_on)} nodes only passed it on" if j == 0 and passed_on else ""),
                role="producer", inputs=bad, passed_on=passed_on if j == 0 else [],
            ))  # fmt: skip
        for c in bw.contributions:
            if _finite(c.value) and not _finite(c.total):
                target = graph.node(c.target)
                findings.append(finding_at(
                    target, "nonfinite-backward",
                    f"backward {k}: accumulating finite gradients into {target.where()} gave "
                    f"{_kind(c.total)} (overflow or opposite infinities)",
                    role="accumulation", source=c.source,
                ))  # fmt: skip
    return findings


def nonfinite_check(graph: GraphRecord) -> CheckResult:
    """Find the producers of the first NaN/Inf of the forward and of each backward.

    >>> import numpy as np, tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec, np.errstate(invalid="ignore", divide="ignore"):
    ...     x = tp.asarray([0.0, 1.0], requires_grad=True)
    ...     (x.sqrt() * 0).sum().backward()
    >>> r = nonfinite_check(rec.graph())
    >>> [(f.category, f.name) for f in r.findings]
    [('nonfinite-backward', 'SqrtBackward')]
    """
    start = time.perf_counter()
    try:
        _learn(_graph_values(graph))
        findings = forward_findings(graph) + backward_findings(graph)
    finally:
        _known.clear()
    skips = tuple(Skip(NO_VALUES, n.id) for n in graph.nodes if n.output is None)
    checked = len(graph.nodes) - len(skips) + sum(len(bw.executions) for bw in graph.backwards)
    return CheckResult("nonfinite", checked, tuple(findings), len(skips),
                       time.perf_counter() - start, skips=skips)  # fmt: skip


NO_VALUES = "its output value was not recorded (capture with values='all')"
