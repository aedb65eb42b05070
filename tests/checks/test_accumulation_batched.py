"""The accumulation check compares many gradients at once: its findings equal those of the
one-comparison-at-a-time check it replaced (written out here as the reference)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import tpx as tp
from tpx import _engine, _observers
from tpx_inspect.checks import accumulation_check, capture_call
from tpx_inspect.checks.accumulation import _close, _finding


def reference(graph):
    """The check as it was: each contribution's total against the previous total plus it."""
    findings, checked = [], 0
    for bw in graph.backwards:
        by_target = defaultdict(list)
        for c in bw.contributions:
            by_target[c.target].append(c)
        runs = {}
        for ex in bw.executions:
            runs.setdefault(ex.node, ex)
        for target, parts in by_target.items():
            checked += 1
            running = dict(zip(bw.roots, bw.seeds)).get(target)
            found = None
            for k, c in enumerate(parts):
                expected = c.value if running is None else running + c.value
                if not _close(c.total, expected):
                    found = _finding(graph, target, parts, k, expected, c.total)
                    break
                running = c.total
            else:
                received = runs[target].grad_output if target in runs else None
                node = graph.replay_node(target)
                if received is not None and not node.hooked and not _close(received, running):
                    found = _finding(graph, target, parts, len(parts), running, received)
            if found is not None:
                findings.append(found)
    return checked, findings


def _fan_out(x):
    h = x.tanh()
    return ((h * 2) + h.sin() + h.exp() + (h * h)).sum()


def _wide(x):  # many targets of one shape: compared in one stacked pass
    hs = [(x * (k + 1)).tanh() for k in range(40)]
    return sum((h + h.sin() for h in hs), tp.zeros_like(x)).sum()


def _overwrite_second(grads, node, g, source):
    prev = grads.get(node)
    total = g
    del prev
    grads[node] = total
    if source is not None:
        _observers.emit("on_grad_accumulated", node, g, total, source)


def _off_by_a_little(grads, node, g, source):
    prev = grads.get(node)
    total = g if prev is None else prev + g * 1.001
    grads[node] = total
    if source is not None:
        _observers.emit("on_grad_accumulated", node, g, total, source)


@pytest.mark.parametrize("fn", [_fan_out, _wide])
@pytest.mark.parametrize("bug", [None, _overwrite_second, _off_by_a_little])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_findings_equal_the_one_at_a_time_check(monkeypatch, fn, bug, dtype):
    if bug is not None:
        monkeypatch.setattr(_engine, "_accumulate", bug)
    x = tp.asarray(np.linspace(-1, 1, 6, dtype=dtype).reshape(2, 3), requires_grad=True)
    graph = capture_call(fn, [x])
    monkeypatch.undo()
    result = accumulation_check(graph)
    checked, findings = reference(graph)
    assert result.checked == checked > 1
    assert [f.message for f in result.findings] == [f.message for f in findings]
    assert [f.details for f in result.findings] == [f.details for f in findings]
    assert bool(findings) == (bug is not None)
