"""The capture's per-step NaN/Inf verdict (the default policy's ``nonfinite``), the ``raw``
value policy and the ``live`` option.

The verdict is made cheaply (each gradient object once, a finite ``a . a`` first); these tests
show it still keeps exactly the steps with a NaN/Inf, names the node it reached, and never
keeps a clean step (squares past the float range are not a NaN).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tpx as tp
import tpx_inspect
from tests.tpx.test_observer_batches import _EveryInput
from tpx_inspect._verdict import finite_floats
from tpx_inspect.checks import record


class _Poison(tp.Function):
    """Identity forward; its rule returns ``g * bad`` (NaN or Inf) once ``bad`` is set."""

    bad = 1.0

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g * _Poison.bad


class _Stop(tp.Function):
    """Identity forward; its rule returns zeros whatever it receives (masks a NaN/Inf)."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return tp.zeros(g.shape, dtype=g.dtype)


def _steps(bad_step: int, bad: float, steps: int = 4, dtype: str = "float32"):
    """Steps of ``x -> stop -> poison -> sum``; at ``bad_step`` the poison's rule returns a
    NaN/Inf gradient, which the stop node then masks: only the stop node's incoming gradient
    holds it, and the leaf's gradient is finite."""
    x = tp.asarray(np.array([-1.0, -2.0, -3.0], dtype), requires_grad=True)
    with tpx_inspect.capture("first:1,nonfinite", timing=False) as cap:
        for i in range(steps):
            _Poison.bad = bad if i == bad_step else 1.0
            x.grad = None
            _Poison.apply(_Stop.apply(x)).sum().backward()
    _Poison.bad = 1.0
    return cap.trace.graphs, x


@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_planted_nonfinite_gradient_keeps_its_step_and_names_the_node(bad, dtype):
    graphs, x = _steps(2, bad, dtype=dtype)
    assert [g.step for g in graphs] == [0, 2]
    assert np.isfinite(x.grad.numpy()).all()  # masked: the leaf never sees it
    g = graphs[1]
    assert not g.finite
    [stop] = g.find(op="_Stop")
    count = g.grad(stop.id).nan if math.isnan(bad) else g.grad(stop.id).inf
    assert count == 3
    bad_nodes = [i for i in range(len(g.nodes)) if g.grad(i) is not None and not g.grad(i).finite]
    assert bad_nodes == [stop.id]


def test_a_clean_step_is_not_kept_even_when_squares_overflow():
    # NOTE: 3e38 squared is past float32's range: the fast test is not finite, the exact one is
    x = tp.asarray(np.array([3e38, 1.0], np.float32), requires_grad=True)
    with tpx_inspect.capture("first:1,nonfinite", timing=False) as cap:
        for _ in range(3):
            (x * 1.0).sum().backward()
    assert [g.step for g in cap.trace.graphs] == [0]


def test_a_nonfinite_root_value_keeps_its_step():
    x = tp.asarray(np.array([1.0, 2.0]), requires_grad=True)
    with tpx_inspect.capture("first:1,nonfinite", timing=False) as cap, np.errstate(all="ignore"):
        for i in range(3):
            (x * (math.inf if i == 1 else 1.0)).sum().backward()
    assert [g.step for g in cap.trace.graphs] == [0, 1]


def test_finite_floats_agrees_with_the_exact_test():
    rng = np.random.default_rng(0)
    arrays = []
    for dtype in (np.float16, np.float32, np.float64):
        big = np.finfo(dtype).max / 2
        base = rng.standard_normal((6, 5)).astype(dtype)
        arrays += [base, base.T, base[::2], np.full((3,), big, dtype), np.zeros(0, dtype)]
        for bad in (np.nan, np.inf, -np.inf):
            planted = base.copy()
            planted[4, 3] = bad
            arrays += [planted, planted.T, planted[::2], planted[1:, ::2]]
    with np.errstate(over="ignore", invalid="ignore"):
        got = [finite_floats(a) for a in arrays]
    assert got == [bool(np.isfinite(a).all()) for a in arrays]
    assert got.count(False) > 10


def _record(values: str):
    w = tp.asarray(np.arange(6.0).reshape(2, 3) / 7, requires_grad=True)
    with tpx_inspect.capture("all", values=values, timing=False) as cap:
        for _ in range(2):
            ((tp.ones((4, 2)) @ w).tanh() * 3).sum().backward()
    return cap.trace.graphs


def test_raw_values_keep_every_value_and_no_statistics():
    full, raw = _record("all"), _record("raw")
    assert [g.detail for g in raw] == ["full", "full"]  # no step is kept as stats only
    assert [g.detail for g in full] == ["full", "stats"]
    g_all = full[0]  # NOTE: both steps compute the same values
    for g_raw in raw:
        assert np.isnan(g_raw.tables.summaries[:, :8]).all() and len(g_raw.tables.previews) == 0
        for i in range(len(g_raw.nodes)):
            a, b = g_all.node_values(i), g_raw.node_values(i)
            assert np.array_equal(a.output, b.output) and np.array_equal(a.grad, b.grad)
            for u, v in zip(a.inputs, b.inputs):
                assert (u is None and v is None) or np.array_equal(u, v)


def test_live_option_fills_live_info_and_the_graph_since_the_last_backward():
    with record() as rec:
        x = tp.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        y = x.sin()
    graphs = rec.graphs
    assert [g.kind for g in graphs] == ["backward", "roots"]
    assert graphs[0].live.runs is not None and graphs[0].live.backends[0] == "numpy"
    assert [n.name for n in graphs[1].replay_nodes] == ["AccumulateGrad", "SinBackward"]
    del y
    plain = tpx_inspect.Capture()
    assert plain.graphs == () and plain._live is None


@pytest.mark.parametrize("policy", ["all", "nonfinite"])
@pytest.mark.parametrize("build", ["lazy", "eager"])
def test_a_rules_gradient_for_an_input_that_needs_none_is_not_recorded(policy, build):
    # NOTE: the engine hands a batch over as the rules returned it (tpx.observe.grad_inputs)
    x = tp.ones(3, requires_grad=True)
    c = tp.asarray([1.0, 1.0, math.inf]) if policy == "nonfinite" else tp.ones(3)
    with tpx_inspect.capture(policy, build=build, timing=False) as cap:
        _EveryInput.apply(x, c).sum().backward()
    (graph,) = cap.trace.graphs  # NOTE: kept for its Inf output under "nonfinite"
    (node,) = graph.find(op="_EveryInput")
    first, second = graph.grads_out(node.id)
    assert second is None and first.preview == (2.0, 2.0, 2.0) and first.shape == (3,)
