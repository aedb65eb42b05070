"""The accumulation check: a gradient summed from several consumers equals the sum of the parts.

For every node that received gradient contributions in a backward, the running total the
engine reported after each contribution must equal the previous total plus that contribution,
and the gradient the node then ran with must equal the final total (unless a hook changed it).
A contribution that was overwritten or dropped is named with the consumer that sent it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import numpy as np

from tpx_inspect.checks.record import BackwardRecord, Contribution, GraphRecord
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    if np.shape(a) != np.shape(b):
        return False
    rtol = 1e-5 if np.result_type(a, b) == np.float32 else 1e-10
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        ok = (diff <= rtol * 1e-2 + rtol * np.abs(b)) | (np.isnan(a) & np.isnan(b)) | (a == b)
    return bool(ok.all())


def _check_target(
    graph: GraphRecord, bw: BackwardRecord, target: int, parts: list[Contribution], runs: dict
) -> Finding | None:
    running = dict(zip(bw.roots, bw.seeds)).get(target)
    for k, c in enumerate(parts):
        expected = c.value if running is None else running + c.value
        if not _close(c.total, expected):
            return _finding(graph, target, parts, k, expected, c.total)
        running = c.total
    received = runs[target].grad_output if target in runs else None
    node = graph.node(target)
    if received is not None and not node.hooked and not _close(received, running):
        return _finding(graph, target, parts, len(parts), running, received)
    return None


def _finding(graph, target, parts, k, expected, got) -> Finding:
    node = graph.node(target)
    sources = [graph.node(c.source).where() for c in parts]
    if k < len(parts):
        culprit = graph.node(parts[k].source)
        what = (
            f"after the contribution from {culprit.name} #{culprit.id} (consumer {k + 1} of "
            f"{len(parts)}) the accumulated gradient is not the previous total plus it"
        )
    else:
        what = "the node ran with a gradient that is not the accumulated total"
    err = float(np.max(np.abs(np.asarray(got, float) - np.asarray(expected, float))))
    return finding_at(
        node, "accumulation",
        f"gradient of {node.where()}: {what} (max |diff| {err:.3g}); consumers: "
        + ", ".join(sources),
        contribution=k, consumers=[c.source for c in parts], max_abs_diff=err,
    )  # fmt: skip


@register_check(
    "accumulation",
    rank=20,
    summary=(
        "for every gradient summed from several consumers: each running total equals the previous "
        "total plus the contribution, and the node ran with the final total; names the consumer "
        "whose contribution was lost."
    ),
)
def accumulation_check(graph: GraphRecord) -> CheckResult:
    """Check every accumulated gradient of every backward against the sum of its parts.

    ``checked`` counts every accumulated gradient (fan-out or not); a graph without a
    recorded backward is SKIPPED.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     x = tp.asarray([1.0, 2.0], requires_grad=True)
    ...     (x * x + x).sum().backward()
    >>> r = accumulation_check(rec.graph())
    >>> r.status.label, r.checked
    ('PASS', 3)
    """
    start = time.perf_counter()
    findings, checked = [], 0
    for bw in graph.backwards:
        by_target: dict[int, list[Contribution]] = defaultdict(list)
        for c in bw.contributions:
            by_target[c.target].append(c)
        runs: dict[int, Any] = {}
        for ex in bw.executions:
            runs.setdefault(ex.node, ex)
        for target, parts in by_target.items():
            checked += 1
            found = _check_target(graph, bw, target, parts, runs)
            if found is not None:
                findings.append(found)
    skips = () if graph.backwards else (Skip(NO_BACKWARD),)
    return CheckResult(
        "accumulation", checked, tuple(findings), seconds=time.perf_counter() - start,
        skips=skips,
    )  # fmt: skip


NO_BACKWARD = "no backward pass was recorded in this graph"
