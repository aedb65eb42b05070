"""Accumulation and backward-order checks, with engine bugs planted by patching tpx._engine."""

from __future__ import annotations

import dataclasses

import pytest

import tpx as tp
from tpx import _engine, _observers
from tpx_inspect.checks import (
    accumulation_check,
    capture_call,
    local_check,
    order_check,
    run_graph_checks,
)


def _fan_out(x):
    with tp.scope("block"):
        h = x.tanh()
        a = h * 2  # h has three consumers
        b = h.sin()
        c = h.exp()
    return (a + b + c).sum()


def _overwrite_second(grads, node, g, source):
    """The planted engine bug: the second contribution replaces the first."""
    prev = grads.get(node)
    total = g  # should be g if prev is None else prev + g
    del prev
    grads[node] = total
    if source is not None:
        _observers.emit("on_grad_accumulated", node, g, total, source)


def test_correct_fan_out_passes():
    graph = capture_call(_fan_out, [tp.asarray([0.1, -0.5, 1.2], requires_grad=True)])
    result = accumulation_check(graph)
    targets = {c.target for bw in graph.backwards for c in bw.contributions}
    assert result.status.value == "pass" and result.checked == len(targets) > 1


def test_overwritten_contribution_is_named_at_the_fan_out_node(monkeypatch):
    monkeypatch.setattr(_engine, "_accumulate", _overwrite_second)
    graph = capture_call(_fan_out, [tp.asarray([0.1, -0.5, 1.2], requires_grad=True)])
    monkeypatch.undo()
    report = run_graph_checks(graph)
    failing = {r.check for r in report.results if not r.passed}
    assert failing == {"accumulation"}  # every rule is still right for what it received
    f = report.result("accumulation").findings[0]
    assert (f.category, f.name, f.scope) == ("accumulation", "TanhBackward", "block")
    assert f.details["contribution"] == 1 and "consumer 2 of 3" in f.message


def test_accumulation_into_a_reused_non_leaf(monkeypatch):
    # b = a + a; c = b + b: the anti-pattern that needs a topological order
    monkeypatch.setattr(_engine, "_accumulate", _overwrite_second)
    graph = capture_call(lambda a: ((a + a) + (a + a)).sum(), [tp.ones(2, requires_grad=True)])
    monkeypatch.undo()
    names = [f.name for f in accumulation_check(graph).findings]
    assert "AccumulateGrad" in names


def test_order_passes_on_diamonds_and_shared_subgraphs():
    def f(a):
        b = a + a
        c = b + b
        return (c.sin() * c.cos() + b).sum()

    graph = capture_call(f, [tp.asarray([0.3, 0.7], requires_grad=True)])
    result = order_check(graph)
    assert result.passed and result.checked == len(graph.nodes)


_reachable = _engine.reachable


def test_node_run_before_its_consumer_is_named(monkeypatch):
    def f(a):
        b = a + a
        return (b.sin() + b.cos()).sum()

    x = tp.asarray([0.3, 0.7], requires_grad=True)

    def bad_order(roots):
        order = _reachable(roots)
        cos = order.pop([n.name for n in order].index("CosBackward"))
        first_add = [n.name for n in order].index("AddBackward", 2)
        order.insert(first_add + 1, cos)  # b = a + a now runs before its consumer cos
        return order

    monkeypatch.setattr(_engine, "reachable", bad_order)
    graph = capture_call(f, [x])
    monkeypatch.undo()
    findings = order_check(graph).findings
    assert findings and findings[0].name == "AddBackward"
    assert "before its consumer CosBackward" in findings[0].message


def test_nodes_that_never_ran_are_named(monkeypatch):
    monkeypatch.setattr(_engine, "reachable", lambda roots: _reachable(roots)[::-1])
    graph = capture_call(lambda a: (a * 2).sin().sum(), [tp.ones(2, requires_grad=True)])
    monkeypatch.undo()
    names = sorted(f.name for f in order_check(graph).findings)
    assert names == ["AccumulateGrad", "MulBackward", "SinBackward"]


def test_a_node_run_twice_is_named():
    graph = capture_call(lambda a: -a, [tp.ones(1, requires_grad=True)])
    assert [n.name for n in graph.nodes] == ["AccumulateGrad", "NegBackward"]
    # the engine's execution log as an engine that runs NegBackward twice would report it
    graph = dataclasses.replace(graph, live=dataclasses.replace(graph.live, runs=(1, 1, 0)))
    (f,) = order_check(graph).findings
    assert f.node == 1 and "ran twice" in f.message


def test_tpx_grad_runs_only_what_it_needs_and_is_not_flagged():
    from tpx_inspect.checks import record

    with record() as rec:
        x = tp.asarray([0.3, 0.7], requires_grad=True)
        w = tp.asarray([1.0, 2.0], requires_grad=True)
        tp.grad((x * w).sum(), [x])
    assert order_check(rec.graph()).passed and local_check(rec.graph()).passed


@pytest.mark.parametrize("n", [3000])
def test_deep_chain_is_walked_iteratively(n):
    def chain(x):
        for _ in range(n):
            x = x * 1.0001
        return x.sum()

    graph = capture_call(chain, [tp.ones(2, requires_grad=True)])
    assert order_check(graph).passed and accumulation_check(graph).passed
