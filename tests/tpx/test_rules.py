"""The rule table swept against finite differences, first and second order, plus its coverage,
its float32 behaviour and the documented conventions at kinks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import p10
import tpx as tp
from p10 import Op
from tests.helpers.fd import check_vjp, gradient_function
from tests.helpers.rule_cases import CASES, Case
from tpx.rules import NON_DIFFERENTIABLE, RULES

BUILTIN_RULE_OPS = [op for op in RULES if isinstance(op, Op)]


def run_case(c: Case, **tolerances: Any) -> None:
    """Check the first-order rule of ``c.op`` on ``c``'s inputs (the function the sweep uses)."""
    check_vjp(c.fn, c.inputs(), mode=c.mode, name=c.id, **tolerances)


def run_gradgrad_case(c: Case) -> None:
    """Check second derivatives: the gradient of ``c.fn``, recorded with create_graph, is
    itself checked against finite differences (with the incoming gradient as an input too)."""
    xs = c.inputs()
    wrt = [i for i, a in enumerate(xs) if a.dtype.kind == "f"]
    with tp.no_grad():
        out_shape = c.fn(*[tp.asarray(a) for a in xs]).shape
    v = np.random.default_rng(1).uniform(-1.0, 1.0, out_shape)
    h = gradient_function(c.fn, len(xs), wrt)
    label = f"{c.op.value} (second order, through create_graph)"
    check_vjp(h, [*xs, v], mode=c.mode, name=c.id + " (second order)", label=label)


def _recorded_ops(c: Case) -> set[Any]:
    xs = [tp.asarray(a, requires_grad=True) for a in c.inputs()]
    out = c.fn(*xs)
    return {n.op for n in tp.reachable([out.grad_fn])}


# -- coverage --------------------------------------------------------------------------------
def test_every_differentiable_op_has_a_rule() -> None:
    missing = [op.value for op in Op if op not in NON_DIFFERENTIABLE and op not in RULES]
    assert missing == []
    assert [op.value for op in NON_DIFFERENTIABLE if op in RULES] == []


def test_rule_table_is_in_enum_order() -> None:
    in_table = [op for op in RULES if isinstance(op, Op)]
    assert in_table == [op for op in Op if op in RULES]


def test_every_rule_has_cases() -> None:
    covered = {c.op for c in CASES}
    assert [op.value for op in BUILTIN_RULE_OPS if op not in covered] == []


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_case_records_its_op(c: Case) -> None:
    assert c.op in _recorded_ops(c)


def _shapes(c: Case) -> list[tuple[int, ...]]:
    return [a.shape for a in c.inputs() if a.dtype.kind == "f"]


_BROADCASTING = [Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.MAXIMUM, Op.MINIMUM, Op.WHERE]
_REDUCING = [Op.SUM, Op.MEAN, Op.PROD, Op.MAX, Op.MIN, Op.VAR, Op.LOGSUMEXP]


@pytest.mark.parametrize("op", _BROADCASTING, ids=lambda op: op.value)
def test_table_checks_broadcasting_and_0d(op: Op) -> None:
    shapes = [_shapes(c) for c in CASES if c.op is op]
    assert any(len(set(s)) > 1 for s in shapes), "no broadcasting case"
    assert any(() in s for s in shapes), "no 0-d case"


@pytest.mark.parametrize("op", _REDUCING, ids=lambda op: op.value)
def test_table_checks_keepdims_and_negative_axes(op: Op) -> None:
    names = [c.name for c in CASES if c.op is op]
    assert any("keep" in n for n in names) and any("axis(-1,0)" in n for n in names)


# -- the sweep ---------------------------------------------------------------------------------
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rule_matches_finite_differences(c: Case) -> None:
    run_case(c)


GRADGRAD_CASES = [c for c in CASES if c.gradgrad]


@pytest.mark.parametrize("c", GRADGRAD_CASES, ids=lambda c: c.id)
def test_rule_second_order_matches_finite_differences(c: Case) -> None:
    run_gradgrad_case(c)


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_float32_inputs_give_float32_gradients(c: Case) -> None:
    xs = [tp.asarray(a.astype(np.float32), requires_grad=True) for a in c.inputs()]
    out = c.fn(*xs)
    go = tp.asarray(np.ones(out.shape, out.dtype))
    grads = [g for g in tp.grad(out, xs, go, allow_unused=True) if g is not None]
    assert grads
    assert [g.dtype.name for g in grads] == ["float32"] * len(grads)


MIXED_CASES = [c for c in CASES if sum(a.dtype.kind == "f" for a in c.inputs()) >= 2]


@pytest.mark.parametrize("c", MIXED_CASES, ids=lambda c: c.id)
def test_mixed_float32_float64_inputs_get_gradients_of_their_own_dtype(c: Case) -> None:
    arrays = c.inputs()
    dtypes = [np.float32 if k % 2 == 0 else np.float64 for k in range(len(arrays))]
    xs = [tp.asarray(a.astype(dt), requires_grad=True) for a, dt in zip(arrays, dtypes)]
    out = c.fn(*xs)
    grads = tp.grad(out, xs, tp.asarray(np.ones(out.shape, out.dtype)), allow_unused=True)
    assert [g.dtype for g in grads] == [np.dtype(dt) for dt in dtypes]
    xs64 = [_f(a) for a in arrays]
    out64 = c.fn(*xs64)
    reference = tp.grad(out64, xs64, tp.asarray(np.ones(out64.shape)), allow_unused=True)
    for g, r in zip(grads, reference):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-3, atol=1e-3)


# -- non-differentiable ops ------------------------------------------------------------------
def _f(values: Any) -> Any:
    return tp.asarray(np.asarray(values, np.float64), requires_grad=True)


def _i(values: Any) -> Any:
    return tp.asarray(np.asarray(values, np.int64))


_NON_DIFF_CALLS: dict[Op, Any] = {
    Op.LOGICAL_NOT: lambda: p10.logical_not(_f([0.0, 1.5])),
    Op.BITWISE_INVERT: lambda: p10.bitwise_invert(_i([1, 2])),
    Op.ISNAN: lambda: p10.isnan(_f([0.0, 1.5])),
    Op.ISINF: lambda: p10.isinf(_f([0.0, 1.5])),
    Op.ISFINITE: lambda: p10.isfinite(_f([0.0, 1.5])),
    Op.EQ: lambda: p10.equal(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.NE: lambda: p10.not_equal(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.LT: lambda: p10.less(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.LE: lambda: p10.less_equal(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.GT: lambda: p10.greater(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.GE: lambda: p10.greater_equal(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.LOGICAL_AND: lambda: p10.logical_and(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.LOGICAL_OR: lambda: p10.logical_or(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.LOGICAL_XOR: lambda: p10.logical_xor(_f([0.0, 1.5]), _f([0.0, 1.0])),
    Op.BITWISE_AND: lambda: p10.bitwise_and(_i([1, 2]), _i([3, 3])),
    Op.BITWISE_OR: lambda: p10.bitwise_or(_i([1, 2]), _i([3, 3])),
    Op.BITWISE_XOR: lambda: p10.bitwise_xor(_i([1, 2]), _i([3, 3])),
    Op.ARGMAX: lambda: p10.argmax(_f([[0.0, 1.5], [2.0, 1.0]]), axis=1),
    Op.ARGMIN: lambda: p10.argmin(_f([[0.0, 1.5], [2.0, 1.0]])),
    Op.ALL: lambda: p10.all(_f([0.0, 1.5])),
    Op.ANY: lambda: p10.any(_f([0.0, 1.5]), axis=0),
    Op.TOPK: lambda: p10.apply(Op.TOPK, _f([0.0, 1.5, 1.0]), k=2, axis=0, largest=True),
    Op.SIGNBIT: lambda: p10.signbit(_f([-0.0, 1.5])),
    Op.BITWISE_LEFT_SHIFT: lambda: p10.bitwise_left_shift(_i([1, 2]), _i([3, 1])),
    Op.BITWISE_RIGHT_SHIFT: lambda: p10.bitwise_right_shift(_i([8, -8]), _i([1, 2])),
}


def test_every_non_differentiable_op_is_exercised() -> None:
    assert sorted(op.value for op in NON_DIFFERENTIABLE) == sorted(
        op.value for op in _NON_DIFF_CALLS
    )


@pytest.mark.parametrize("op", list(_NON_DIFF_CALLS), ids=lambda op: op.value)
def test_non_differentiable_outputs_do_not_require_grad(op: Op) -> None:
    out = _NON_DIFF_CALLS[op]()
    assert (out.requires_grad, out.grad_fn) == (False, None)
    assert out.dtype.kind in "biu"


# -- conventions at kinks -------------------------------------------------------------------
def _grad(fn: Any, *values: Any) -> list[list[float]]:
    xs = [_f(v) for v in values]
    grads = tp.grad(fn(*xs).sum(), xs)
    return [g.tolist() for g in grads]


def test_relu_abs_sign_have_zero_gradient_at_zero() -> None:
    assert _grad(p10.relu, [-1.0, 0.0, 2.0]) == [[0.0, 0.0, 1.0]]
    assert _grad(p10.abs, [-1.0, 0.0, 2.0]) == [[-1.0, 0.0, 1.0]]
    assert _grad(p10.sign, [-1.0, 0.0, 2.0]) == [[0.0, 0.0, 0.0]]
    assert _grad(p10.floor, [-1.0, 0.0, 2.5]) == [[0.0, 0.0, 0.0]]


def test_max_min_split_ties_evenly() -> None:
    assert _grad(p10.max, [1.0, 3.0, 3.0]) == [[0.0, 0.5, 0.5]]
    assert _grad(p10.min, [2.0, 2.0, 2.0, 5.0]) == [[1 / 3, 1 / 3, 1 / 3, 0.0]]
    rows = _grad(lambda x: p10.max(x, axis=1), [[1.0, 1.0], [0.0, 2.0]])
    assert rows == [[[0.5, 0.5], [0.0, 1.0]]]


def test_maximum_minimum_split_ties_evenly() -> None:
    assert _grad(p10.maximum, [1.0, 2.0, 3.0], [1.0, 5.0, 0.0]) == [
        [0.5, 0.0, 1.0],
        [0.5, 1.0, 0.0],
    ]
    assert _grad(p10.minimum, [2.0], [2.0]) == [[0.5], [0.5]]


def test_max_pool_splits_ties_within_a_window() -> None:
    x = [[[[1.0, 1.0], [0.0, 1.0]]]]
    assert _grad(lambda t: p10.max_pool2d(t, 2), x) == [[[[[1 / 3, 1 / 3], [0.0, 1 / 3]]]]]


def test_clip_passes_gradient_at_its_bounds() -> None:
    got = _grad(lambda x: p10.clip(x, -1.0, 1.0), [-2.0, -1.0, 0.0, 1.0, 2.0])
    assert got == [[0.0, 1.0, 1.0, 1.0, 0.0]]


def test_pow_at_zero() -> None:
    # d/dx x**0 = 0 even at x = 0; d/dy 0**y = 0 for y > 0 (no NaN from log(0)), as PyTorch.
    assert _grad(lambda x, y: x**y, [0.0, 0.0], [0.0, 2.0]) == [[0.0, 0.0], [0.0, 0.0]]


def test_pow_second_derivative_is_finite_at_zero() -> None:
    x, y = _f([0.0, 0.0, 2.0]), _f([0.0, 2.0, 1.0])
    (gx,) = tp.grad((x**y).sum(), [x], create_graph=True)
    ggx, ggy = tp.grad(gx.sum(), [x, y])
    assert np.isfinite(np.asarray(ggx)).all() and np.isfinite(np.asarray(ggy)).all()
    assert ggx.tolist() == [0.0, 2.0, 0.0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_var_without_degrees_of_freedom_gives_nan_not_an_exception() -> None:
    x = _f([1.5])
    (g,) = tp.grad(p10.var(x, correction=1), [x])
    assert np.isnan(np.asarray(g)).all()


def test_prod_with_zeros() -> None:
    assert _grad(p10.prod, [2.0, 0.0, 3.0]) == [[0.0, 6.0, 0.0]]
    assert _grad(p10.prod, [2.0, 0.0, 0.0]) == [[0.0, 0.0, 0.0]]


def test_gradients_of_repeat_with_counts_and_of_an_empty_softmax() -> None:
    x = tp.asarray(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    (g,) = tp.grad(p10.repeat(x, [2, 0, 3]).sum(), [x])
    assert g.tolist() == [2.0, 0.0, 3.0]
    e = tp.asarray(np.ones((2, 0)), requires_grad=True)
    (ge,) = tp.grad(p10.softmax(e, axis=1).sum(), [e])
    assert ge.shape == (2, 0)


def test_gradient_through_a_zero_d_bool_mask() -> None:
    x = tp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    (g,) = tp.grad((x[p10.asarray(True)] * 3.0).sum(), [x])
    assert g.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_gradients_flow_through_the_array_api_compositions() -> None:
    x = tp.asarray(np.array([[1.0, 4.0, 9.0], [2.0, 3.0, 5.0]]), requires_grad=True)
    loss = (
        p10.diff(x, axis=1).sum() * 2.0
        + p10.cumulative_sum(x, axis=1, include_initial=True).sum()
        + p10.moveaxis(x, 0, 1)[0].sum()
        + p10.unstack(x)[1].sum()
        + p10.broadcast_arrays(x, tp.asarray(np.ones((4, 1, 1))))[0].sum()
    )
    (g,) = tp.grad(loss, [x])
    # diff*2: -2, 0, 2 per row; cumsum: 3, 2, 1; moveaxis[0] picks column 0; unstack[1] row 1;
    # broadcast over 4 copies: 4 each.
    expected = np.array([[-2.0, 0, 2], [-2, 0, 2]]) + [3, 2, 1] + [[1, 0, 0], [1, 0, 0]]
    expected = expected + [[0, 0, 0], [1, 1, 1]] + 4
    np.testing.assert_allclose(g.numpy(), expected)
