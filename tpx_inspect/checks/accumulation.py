"""The accumulation check: a gradient summed from several consumers equals the sum of the parts.

For every node that received gradient contributions in a backward, the running total the
engine reported after each contribution must equal the previous total plus that contribution,
and the gradient the node then ran with must equal the final total (unless a hook changed it).
A contribution that was overwritten or dropped is named with the consumer that sent it.
"""

from __future__ import annotations

import bisect
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


_ROWS = 4096
"""Comparisons stacked at most at once: the temporaries of one chunk stay in the CPU caches."""


class _Pairs:
    """The ``(got, expected)`` comparisons of a backward, in order, tested together.

    A comparison of a running total with the previous total plus a contribution of the same
    shape is kept as ``(total, previous, contribution)`` and summed when tested, stacked with
    the others of its shapes and dtypes (the same element-wise sums as one at a time); any
    other comparison is kept as ``(got, expected)``, its expected value computed at once.
    """

    def __init__(self) -> None:
        self.items: list[tuple] = []
        self.groups: dict[tuple, list[int]] = {}
        self.alone: list[int] = []

    def add_sum(self, total: Any, previous: Any, value: Any) -> bool:
        """Add ``total`` against ``previous + value``; False when the addition raised (then
        ``(None, error)`` is added)."""
        arrays = total.__class__ is previous.__class__ is value.__class__ is np.ndarray
        if arrays and total.shape == previous.shape == value.shape:
            key = (total.shape, total.dtype.str, previous.dtype.str, value.dtype.str)
            self.groups.setdefault(key, []).append(len(self.items))
            self.items.append((total, previous, value))
            return True
        try:
            self.add(total, previous + value)
        except ValueError as e:  # raised when the comparison is reached, as one at a time
            self.items.append((None, e))
            return False
        return True

    def add(self, got: Any, expected: Any) -> None:
        """Add ``got`` against ``expected``."""
        if got.__class__ is expected.__class__ is np.ndarray and got.shape == expected.shape:
            key = (got.shape, got.dtype.str, expected.dtype.str)
            self.groups.setdefault(key, []).append(len(self.items))
        else:
            self.alone.append(len(self.items))
        self.items.append((got, expected))

    def pair(self, k: int) -> tuple[Any, Any]:
        """Comparison ``k`` as ``(got, expected)``."""
        item = self.items[k]
        return item if len(item) == 2 else (item[0], item[1] + item[2])

    def ok(self) -> np.ndarray:
        """``_close`` of each comparison (False for an addition that raised)."""
        out = np.zeros(len(self.items), dtype=bool)
        for k in self.alone:
            out[k] = _close(*self.items[k])
        for key, ks in self.groups.items():
            for start in range(0, len(ks), _ROWS):
                chunk = ks[start : start + _ROWS]
                out[chunk] = self._rows_ok(chunk, len(key) == 4)
        return out

    def _rows_ok(self, ks: list[int], summed: bool) -> np.ndarray:
        items = self.items
        a = np.array([items[k][0] for k in ks])
        b = np.array([items[k][1] for k in ks])
        if summed:
            b = b + np.array([items[k][2] for k in ks])
        a, b = a.reshape(len(ks), -1), b.reshape(len(ks), -1)
        # NOTE: the same element-wise test as _close, over a stack of the pairs
        rtol = 1e-5 if np.result_type(a, b) == np.float32 else 1e-10
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(a - b)
            ok = (diff <= rtol * 1e-2 + rtol * np.abs(b)) | (np.isnan(a) & np.isnan(b)) | (a == b)
        return ok.all(axis=1)


def _comparisons(
    pairs: _Pairs, graph: Graph, seeds: dict, target: int, parts: list, runs: dict
) -> None:
    """Add the comparisons of ``target``: each contribution's total against the previous
    total plus the contribution, in order, then the gradient the node ran with against the
    final total (unless a hook may have changed it)."""
    running = seeds.get(target)
    for c in parts:
        if running is None:
            pairs.add(c.total, c.value)
        elif not pairs.add_sum(c.total, running, c.value):
            return
        running = c.total
    received = runs[target].grad_output if target in runs else None
    if received is not None and not graph.replay_node(target).hooked:
        pairs.add(received, running)


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
        seeds = dict(zip(bw.roots, bw.seeds))
        pairs, begins = _Pairs(), []
        for target, parts in by_target.items():
            begins.append(len(pairs.items))
            _comparisons(pairs, graph, seeds, target, parts, runs)
        checked += len(begins)
        targets = list(by_target.items())
        reported = -1
        for pos in np.flatnonzero(~pairs.ok()).tolist():
            t = bisect.bisect_right(begins, pos) - 1
            if t == reported:
                continue
            reported = t  # the first comparison that fails names the contribution
            got, expected = pairs.pair(pos)
            if isinstance(expected, Exception):
                raise expected
            target, parts = targets[t]
            findings.append(_finding(graph, target, parts, pos - begins[t], expected, got))
    skips = () if graph.backwards else (Skip(NO_BACKWARD),)
    return CheckResult(
        "accumulation", checked, tuple(findings), seconds=time.perf_counter() - start,
        skips=skips,
    )  # fmt: skip


NO_BACKWARD = "no backward pass was recorded in this graph"
