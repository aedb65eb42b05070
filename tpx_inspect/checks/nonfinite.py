"""The first non-finite value, forward and backward: the producer apart from the passers-on.

Forward: a node whose output holds NaN/Inf while all its floating inputs are finite produced
it; a node with a non-finite input only passed it on. Backward: a node whose rule returned a
non-finite gradient from a finite incoming gradient and finite forward values produced it; an
accumulation of finite parts into a non-finite total (overflow, ``inf + -inf``)
produced it too.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tpx_inspect.check_view import NodeRecord
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at
from tpx_inspect.records import Graph


def _finite(x: Any) -> bool:
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f":
        return True
    return bool(np.isfinite(x).all())


def _kind(x: np.ndarray) -> str:
    return "NaN" if np.isnan(x).any() else "Inf"


def _forward_values_finite(node: NodeRecord) -> bool:
    return all(_finite(x) for x in node.inputs or ()) and _finite(node.output)


def forward_findings(graph: Graph) -> list[Finding]:
    """One finding per forward producer of NaN/Inf, in recording order; passers-on listed."""
    producers: list[NodeRecord] = []
    passed_on: list[int] = []
    for node in graph.replay_nodes:
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


def _backward_roles(graph: Graph, bw: Any) -> tuple[list, list[int]]:
    """``(producers as (node, execution, bad inputs), ids of the nodes that passed it on)``."""
    producers: list = []
    passed_on: list[int] = []
    for ex in bw.executions:
        node = graph.replay_node(ex.node)
        bad = [i for i, g in enumerate(ex.grad_inputs) if not _finite(g)]
        if not _finite(ex.grad_output) or (bad and not _forward_values_finite(node)):
            passed_on.append(node.id)
        elif bad:
            producers.append((node, ex, bad))
    return producers, passed_on


def backward_findings(graph: Graph) -> list[Finding]:
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
                target = graph.replay_node(c.target)
                findings.append(finding_at(
                    target, "nonfinite-backward",
                    f"backward {k}: accumulating finite gradients into {target.where()} gave "
                    f"{_kind(c.total)} (overflow or opposite infinities)",
                    role="accumulation", source=c.source,
                ))  # fmt: skip
    return findings


@register_check(
    "nonfinite",
    categories=(
        "nonfinite-forward",
        "nonfinite-backward",
    ),
    rank=50,
    summary=(
        "the node that produced NaN/Inf from finite values (forward: its output; backward: its "
        "rule, or an accumulation that overflowed) apart from the nodes that only passed it on."
    ),
)
def nonfinite_check(graph: Graph) -> CheckResult:
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
    findings = forward_findings(graph) + backward_findings(graph)
    skips = tuple(Skip(NO_VALUES, n.id) for n in graph.replay_nodes if n.output is None)
    checked = (
        len(graph.replay_nodes) - len(skips) + sum(len(bw.executions) for bw in graph.backwards)
    )
    return CheckResult("nonfinite", checked, tuple(findings), len(skips),
                       time.perf_counter() - start, skips=skips)  # fmt: skip


NO_VALUES = "its output value was not recorded (capture with values='all')"
