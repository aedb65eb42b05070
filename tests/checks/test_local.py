"""The per-node local check: planted wrong rules are caught at the right node; correct code and
kinks report nothing."""

from __future__ import annotations

import os

import numpy as np
import pytest

import p10
import tpx as tp
from p10 import Op
from tpx.rules import RULES, Rule
from tpx_inspect.checks import LocalOptions, capture_call, local_check, record

HERE = os.path.basename(__file__)


def _model(x, b, w):
    with tp.scope("encoder"):
        h = (x.sin() * x + b).tanh()
    with tp.scope("head"):
        return (h @ w).sum()


def _inputs():
    rng = np.random.default_rng(0)
    return [
        tp.asarray(rng.standard_normal((3, 4)), requires_grad=True),
        tp.asarray(rng.standard_normal(4), requires_grad=True),
        tp.asarray(rng.standard_normal((4, 2)), requires_grad=True),
    ]


def test_correct_model_reports_nothing():
    result = local_check(capture_call(_model, _inputs()))
    assert result.passed and result.checked == 6 and result.skipped == 0


def test_wrong_sin_rule_is_named_with_op_scope_and_source_line():
    h = tp.register_rule(Op.SIN, lambda ctx, g: (g * p10.sin(ctx.inputs[0]),), save=(0,))
    try:
        result = local_check(capture_call(_model, _inputs()))
    finally:
        h.remove()
    assert not result.passed
    (f,) = result.findings
    assert (f.category, f.op, f.name, f.scope) == ("rule", "sin", "SinBackward", "encoder")
    assert HERE in f.source and "_model" in f.source
    assert "input 0" in f.message and "recorded gradient" in f.message


def _mean_unbroadcast(g, shape):
    """Wrong un-broadcast: averages instead of summing over broadcast axes."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1
    )
    return p10.reshape(p10.mean(g, axis=axes, keepdims=True), shape)


def _bad_mul(ctx, g):
    x, y = ctx.inputs
    s0, s1 = ctx.input_shapes
    return _mean_unbroadcast(g * y, s0), _mean_unbroadcast(g * x, s1)


@pytest.fixture
def broadcast_bug():
    saved = RULES[Op.MUL]
    RULES[Op.MUL] = Rule(_bad_mul, (0, 1))
    yield
    RULES[Op.MUL] = saved


def test_rule_right_except_under_broadcasting(broadcast_bug):
    a = tp.asarray([[0.5, -1.0, 2.0], [0.3, 0.2, -0.4]], requires_grad=True)
    same = tp.asarray([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]], requires_grad=True)
    assert local_check(capture_call(lambda u, v: (u * v).sum(), [a, same])).passed
    row = tp.asarray([1.0, 2.0, 3.0], requires_grad=True)
    result = local_check(capture_call(lambda u, v: (u * v).exp().sum(), [a, row]))
    (f,) = result.findings
    assert f.op == "mul" and f.details["input"] == 1
    assert len(f.details["element"]) == 1 and "worst element" in f.message


class WrongSoftplus(tp.Function):
    """softplus(x) = log(1 + exp(x)); the backward uses sigmoid(-x) instead of sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x.exp() + 1).log()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (-x).sigmoid()


class DroppedPath(tp.Function):
    """x * exp(x); the backward drops the contribution of the first factor."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.exp()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * x.exp()


@pytest.mark.parametrize("fn_class", [WrongSoftplus, DroppedPath])
def test_wrong_function_is_named(fn_class):
    x = tp.asarray([0.5, -1.5, 2.0], requires_grad=True)
    graph = capture_call(lambda t: (fn_class.apply(t * 2) * 3).sum(), [x])
    result = local_check(graph)
    (f,) = result.findings
    assert f.op == fn_class.__name__ and f.category == "rule"


def test_kinks_are_inconclusive_not_failures():
    x = tp.asarray([-1.0, 0.0, 0.0, 2.0], requires_grad=True)

    def f(t):
        r = t.relu()  # relu at exactly 0
        m = tp.maximum(r, tp.zeros(4))  # ties at 0
        return (m.abs() + t.abs()).max() + r.max()  # abs at 0, max ties

    result = local_check(capture_call(f, [x]))
    assert result.passed
    assert any("not differentiable" in n or "kink" in n for n in result.notes)


def test_live_nodes_without_values_are_skipped_with_a_reason():
    with record(keep_values=False) as rec:
        x = tp.asarray([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
    result = local_check(rec.graph())
    assert result.checked == 0 and result.skipped == 2
    assert all("not recorded" in n for n in result.notes)


def test_first_finding_is_the_first_bad_node_in_backward_order():
    h = tp.register_rule(Op.SIN, lambda ctx, g: (g * p10.sin(ctx.inputs[0]),), save=(0,))
    try:
        x = tp.asarray([0.3, 0.9], requires_grad=True)
        graph = capture_call(lambda t: t.sin().exp().sin().sum(), [x])
        result = local_check(graph, LocalOptions(directions=1))
    finally:
        h.remove()
    ids = [f.node for f in result.findings]
    assert len(ids) == 2 and ids[0] > ids[1]  # later-recorded sin runs first in backward


class Dropout(tp.Function):
    """Draws its mask inside forward: a replay cannot reproduce it, so it must be skipped."""

    @staticmethod
    def forward(ctx, x):
        mask = tp.asarray(np.random.default_rng().random(x.shape) > 0.5, dtype=x.dtype)
        ctx.save_for_backward(mask)
        return x * mask * 2.0

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask * 2.0


def test_a_node_whose_forward_cannot_be_replayed_is_skipped_not_failed():
    x = tp.asarray(np.linspace(-1, 1, 16), requires_grad=True)
    result = local_check(capture_call(lambda t: Dropout.apply(t.sin()).sum(), [x]))
    assert result.passed and result.skipped == 1
    assert any("does not reproduce" in n for n in result.notes)


def test_max_pool_over_relu_zeros_is_not_a_false_positive():
    # windows where relu left several exact zeros: ties of 3-4 elements, as in a CNN
    rng = np.random.default_rng(5)
    x = tp.asarray(rng.standard_normal((2, 3, 6, 6)) - 0.8, requires_grad=True)
    w = tp.asarray(rng.standard_normal((2, 3, 3, 3)))
    graph = capture_call(lambda t: (tp.max_pool2d(t.relu(), 2) * w).sum(), [x])
    assert local_check(graph, LocalOptions(cotangents=3)).passed


def test_a_wrong_rule_is_still_caught_next_to_kinks():
    saved = RULES[Op.RELU]
    RULES[Op.RELU] = Rule(lambda ctx, g: (p10.where(ctx.output > 0, g * 1.5, 0.0),), (), True)
    try:
        x = tp.asarray([-1.0, 0.0, 0.0, 0.5, 2.0, 0.0], requires_grad=True)
        result = local_check(capture_call(lambda t: (t.relu() * t).sum(), [x]))
    finally:
        RULES[Op.RELU] = saved
    assert [f.op for f in result.findings] == ["relu"]


def _attention(q, k):
    scores = (q @ k.T) * 0.5
    mask = tp.asarray(np.tril(np.ones((4, 4), dtype=bool)))
    masked = tp.where(mask, scores, tp.full((4, 4), -np.inf, dtype=scores.dtype))
    return (tp.softmax(masked, axis=-1) * tp.arange(4.0)).sum()


def _qk():
    rng = np.random.default_rng(3)
    return [tp.asarray(rng.standard_normal((4, 3)), requires_grad=True) for _ in range(2)]


def test_a_minus_inf_attention_mask_is_checked_not_skipped():
    result = local_check(capture_call(_attention, _qk()))
    assert result.passed and result.skipped == 0 and result.checked == 7


def test_a_wrong_softmax_rule_is_caught_behind_a_minus_inf_mask():
    saved = RULES[Op.SOFTMAX]
    RULES[Op.SOFTMAX] = Rule(lambda ctx, g: (g * ctx.output,), (), True)  # drops the sum term
    try:
        result = local_check(capture_call(_attention, _qk()))
    finally:
        RULES[Op.SOFTMAX] = saved
    assert [f.op for f in result.findings] == ["softmax"]
    assert len(result.findings[0].details["element"]) == 2
