"""The accumulation check: a gradient summed from several consumers equals the sum of the parts.

For every node that received gradient contributions in a backward, the running total the
engine reported after each contribution must equal the previous total plus that contribution,
and the gradient the node then ran with must equal the final total (unless a hook changed it).
A contribution that was overwritten or dropped is named with the consumer that sent it.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

import numpy as np

from tpx_inspect.check_view import Contribution
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at
from tpx_inspect.records import Graph


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    if np.shape(a) != np.shape(b):
        return False
    rtol = 1e-5 if np.result_type(a, b) == np.float32 else 1e-10
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        ok = (diff <= rtol * 1e-2 + rtol * np.abs(b)) | (np.isnan(a) & np.isnan(b)) | (a == b)
    return bool(ok.all())


def _comparisons(
    graph: Graph, seeds: dict, target: int, parts: list[Contribution], runs: dict
) -> list[tuple[Any, Any]]:
    """``(got, expected)`` of each contribution of ``target`` in order (each total against the
    previous total plus the contribution), then the gradient the node ran with against the
    final total (unless a hook may have changed it)."""
    running = seeds.get(target)
    out = []
    for c in parts:
        try:
            out.append((c.total, c.value if running is None else running + c.value))
        except ValueError as e:  # raised when the comparison is reached, as one at a time
            return [*out, (None, e)]
        running = c.total
    received = runs[target].grad_output if target in runs else None
    if received is not None and not graph.replay_node(target).hooked:
        out.append((received, running))
    return out


def _all_close(pairs: list[tuple[Any, Any]]) -> list[bool]:
    """``_close`` of each pair; the pairs of arrays of one shape and dtypes in one pass."""
    out: list[bool | None] = [None] * len(pairs)
    groups: dict[tuple, list[int]] = {}
    for k, (a, b) in enumerate(pairs):
        if isinstance(b, Exception):
            out[k] = False
        elif a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.shape == b.shape:
            groups.setdefault((a.shape, a.dtype.str, b.dtype.str), []).append(k)
        else:
            out[k] = _close(a, b)
    for (shape, _, _), ks in groups.items():
        if len(ks) == 1:
            out[ks[0]] = _close(*pairs[ks[0]])
            continue
        # NOTE: the same element-wise test as _close, over a stack of the pairs
        a = np.stack([pairs[k][0] for k in ks]).reshape(len(ks), math.prod(shape))
        b = np.stack([pairs[k][1] for k in ks]).reshape(a.shape)
        rtol = 1e-5 if np.result_type(a, b) == np.float32 else 1e-10
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(a - b)
            ok = (diff <= rtol * 1e-2 + rtol * np.abs(b)) | (np.isnan(a) & np.isnan(b)) | (a == b)
        for k, v in zip(ks, ok.all(axis=1).tolist()):
            out[k] = v
    return out  # type: ignore[return-value]


def _finding(graph, target, parts, k, expected, got) -> Finding:
    node = graph.replay_node(target)
    sources = [graph.replay_node(c.source).where() for c in parts]
    if k < len(parts):
        culprit = graph.replay_node(parts[k].source)
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
def accumulation_check(graph: Graph) -> CheckResult:
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
        targets = list(by_target.items())
        seeds = dict(zip(bw.roots, bw.seeds))
        pairs = [_comparisons(graph, seeds, t, parts, runs) for t, parts in targets]
        flat = _all_close([p for ps in pairs for p in ps])
        pos = 0
        for (target, parts), ps in zip(targets, pairs):
            checked += 1
            oks, pos = flat[pos : pos + len(ps)], pos + len(ps)
            if not all(oks):  # the first comparison that fails names the contribution
                k = oks.index(False)
                if isinstance(ps[k][1], Exception):
                    raise ps[k][1]
                findings.append(_finding(graph, target, parts, k, ps[k][1], ps[k][0]))
    skips = () if graph.backwards else (Skip(NO_BACKWARD),)
    return CheckResult(
        "accumulation", checked, tuple(findings), seconds=time.perf_counter() - start,
        skips=skips,
    )  # fmt: skip


NO_BACKWARD = "no backward pass was recorded in this graph"
