"""The backward order check: nodes ran in a reverse topological order, each one exactly once.

Every node must run after all of the consumers (nodes that take it as an input) that ran in
the same backward, so that its gradient is complete when its rule reads it; and every node
reachable from the roots that lies on a path to a leaf requiring grad must have run once.
"""

from __future__ import annotations

import time

from tpx_inspect.check_view import BackwardRecord
from tpx_inspect.checks.accumulation import NO_BACKWARD
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at
from tpx_inspect.records import Graph


def _reachable(graph: Graph, roots: tuple[int, ...]) -> set[int]:
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        stack.extend(e for e in graph.replay_node(nid).edges if e is not None)
    return seen


def _reaches_leaf(graph: Graph, among: set[int]) -> set[int]:
    """Nodes of ``among`` with a path to a leaf (ids grow from inputs to consumers)."""
    out: set[int] = set()
    for nid in sorted(among):
        node = graph.replay_node(nid)
        if node.is_leaf or any(e in out for e in node.edges if e is not None):
            out.add(nid)
    return out


def _order_findings(graph: Graph, bw: BackwardRecord, k: int) -> list[Finding]:
    ran = [ex.node for ex in bw.executions]
    position: dict[int, int] = {}
    findings = []
    for i, nid in enumerate(ran):
        if nid in position:
            node = graph.replay_node(nid)
            findings.append(finding_at(node, "order", f"backward {k}: {node.where()} ran twice"))
        position.setdefault(nid, i)
    for nid, i in position.items():
        late = [c for c in graph.consumer_ids(nid) if position.get(c, -1) > i]
        if late:
            node, first = graph.replay_node(nid), graph.replay_node(late[0])
            findings.append(finding_at(
                node, "order",
                f"backward {k}: {node.where()} ran (step {i}) before its consumer "
                f"{first.where()} (step {position[late[0]]}), so its gradient was incomplete",
                consumer=late[0], step=i,
            ))  # fmt: skip
    return findings


def _missing_findings(graph: Graph, bw: BackwardRecord, k: int) -> list[Finding]:
    ran = {ex.node for ex in bw.executions}
    if bw.partial:
        return []  # NOTE: tpx.grad runs no AccumulateGrad and only the nodes it needs.
    needed = _reaches_leaf(graph, _reachable(graph, bw.roots))
    return [
        finding_at(
            graph.replay_node(n),
            "order",
            f"backward {k}: {graph.replay_node(n).where()} lies on a path to a leaf that requires "
            "grad but never ran (it received no gradient)",
        )
        for n in sorted(needed - ran, reverse=True)
    ]


@register_check(
    "order",
    rank=40,
    summary=(
        "execution order is reverse topological (every node ran after all of its consumers) and "
        "every node on a path to a leaf requiring grad ran exactly once (`tpx.grad` runs only "
        "what it needs and is exempt)."
    ),
)
def order_check(graph: Graph) -> CheckResult:
    """Check the execution order and completeness of every recorded backward.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     x = tp.asarray([1.0, 2.0], requires_grad=True)
    ...     b = x + x
    ...     (b + b).sum().backward()
    >>> r = order_check(rec.graph())
    >>> r.passed, r.checked
    (True, 4)
    """
    start = time.perf_counter()
    findings: list[Finding] = []
    checked = 0
    for k, bw in enumerate(graph.backwards):
        checked += len(bw.executions)
        findings += _order_findings(graph, bw, k)
        findings += _missing_findings(graph, bw, k)
    skips = () if graph.backwards else (Skip(NO_BACKWARD),)
    return CheckResult("order", checked, tuple(findings), seconds=time.perf_counter() - start,
                       skips=skips)  # fmt: skip
