"""The backward engine on graph shapes, and PyTorch's behaviours with its exception types."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import p10
import tpx as tp
from p10 import Op


def leaf(values, **kw):
    return tp.asarray(np.asarray(values, dtype=np.float64), requires_grad=True, **kw)


# -- graph shapes -----------------------------------------------------------------------------
def test_diamond_counts_every_path():
    a = leaf([1.0, 2.0])
    b = a + a
    c = b + b
    c.sum().backward()
    assert a.grad.tolist() == [4.0, 4.0]


def test_diamond_with_products_matches_calculus():
    a = leaf([3.0])
    b = a * a  # a^2
    c = b * b  # a^4
    c.backward(tp.ones(1, dtype=tp.float64))
    assert a.grad.tolist() == [4 * 27.0]


def test_shared_subgraph_used_by_two_branches():
    x = leaf([1.0, 2.0, 3.0])
    h = (x * 2).exp()  # shared
    y = (h * 3).sum() + (h.sin()).sum()
    y.backward()
    e = np.exp(2 * np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(x.grad.numpy(), 2 * e * (3 + np.cos(e)))


def test_reachable_is_reverse_topological_and_deterministic():
    x = leaf([1.0])
    y = (x * 2 + x) * x
    order = tp.reachable([y.grad_fn])
    seqs = [n.seq for n in order]
    assert seqs == sorted(seqs, reverse=True)
    assert [n.name for n in order] == [n.name for n in tp.reachable([y.grad_fn])]
    assert order[-1].name == "AccumulateGrad"


@pytest.mark.slow
def test_million_node_chain_no_recursion_and_freed():
    depth = 1_000_000
    gc.disable()  # reference counting alone must free the graph (and the cyclic GC is slow here)
    try:
        x = tp.ones(1, requires_grad=True)
        y = x
        for _ in range(depth):
            y = y * 1.0
        first = weakref.ref(y.grad_fn)
        y.sum().backward()
        assert x.grad.tolist() == [1.0]
        del y
        assert first() is None  # and no RecursionError while freeing
    finally:
        gc.enable()


def test_deep_chain_beyond_recursion_limit():
    depth = 3 * sys.getrecursionlimit()
    x = leaf([1.0])
    y = x
    for _ in range(depth):
        y = y + 1.0
    y.backward()
    assert x.grad.tolist() == [1.0]
    assert y.item() == 1.0 + depth
    assert len(tp.reachable([y.grad_fn])) == depth + 1


def test_one_tensor_used_by_a_thousand_consumers():
    x = tp.ones((4, 4), requires_grad=True)
    outs = [x * float(i) for i in range(1000)]
    total = outs[0]
    for o in outs[1:]:
        total = total + o
    total.sum().backward()
    assert np.all(x.grad.numpy() == sum(range(1000)))


# -- backward twice, retain_graph, accumulation -----------------------------------------------
def test_backward_twice_raises_naming_the_op():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"MulBackward.*second time.*retain_graph=True"):
        y.backward()


def test_backward_twice_with_retain_graph_accumulates():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_saved_values_freed_after_backward():
    x = leaf([1.0, 2.0])
    y = x * x
    node = y.grad_fn
    assert len(node.saved_tensors) == 2 and not node.is_freed
    y.sum().backward()
    assert node.is_freed and node.saved_tensors == ()


def test_grad_accumulates_across_calls():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * 4).sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_non_leaf_grad_not_kept_without_retain_grad():
    x = leaf([1.0])
    y = x * 2
    z = x * 2
    z.retain_grad()
    (y * 3 + z * 5).sum().backward()
    assert y.grad is None and not y.retains_grad
    assert z.grad.tolist() == [5.0] and z.retains_grad


def test_non_scalar_backward_without_gradient_raises():
    x = leaf(np.ones((2, 2)))
    with pytest.raises(RuntimeError, match=r"non-scalar.*\(2, 2\).*gradient="):
        (x * 2).backward()


def test_wrong_shape_gradient_raises():
    x = leaf(np.ones((2, 2)))
    with pytest.raises(RuntimeError, match=r"\(3,\).*\(2, 2\)"):
        (x * 2).backward(tp.ones(3, dtype=tp.float64))


def test_gradient_argument_weights_outputs():
    x = leaf([1.0, 2.0])
    (x * x).backward(tp.asarray([1.0, 10.0], dtype=tp.float64))
    assert x.grad.tolist() == [2.0, 40.0]


def test_backward_of_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match=r"does not require grad"):
        tp.ones(1).backward()


def test_grads_keep_dtype_float32():
    x = tp.ones(3, requires_grad=True)
    ((x * 2.5) ** 2).sum().backward()
    assert x.grad.dtype == tp.float32


# -- tp.grad -----------------------------------------------------------------------------------
def test_grad_does_not_touch_dot_grad():
    x = leaf([1.0, 2.0])
    (g,) = tp.grad((x**2).sum(), x)
    assert g.tolist() == [2.0, 4.0]
    assert x.grad is None


def test_grad_of_intermediate_and_several_inputs():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    h = x * w
    gh, gw = tp.grad((h * h).sum(), [h, w])
    assert gh.tolist() == [6.0, 16.0]
    assert gw.tolist() == [2 * 3.0 * 1.0, 2 * 4.0 * 4.0]


def test_grad_allow_unused():
    x, unused = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match=r"allow_unused=True"):
        tp.grad((x * 2).sum(), [x, unused])
    gx, gu = tp.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gx.tolist() == [2.0] and gu is None


def test_grad_create_graph_gives_second_derivative():
    x = leaf([2.0, 3.0])
    (g,) = tp.grad((x**3).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (h,) = tp.grad(g.sum(), x)
    assert h.tolist() == [12.0, 18.0]


def test_grad_without_create_graph_gives_constants():
    x = leaf([2.0])
    (g,) = tp.grad((x**3).sum(), x)
    assert not g.requires_grad


def _mlp_loss(params, x):
    w1, b1, w2, b2 = params
    h = (x.matmul(w1) + b1).tanh()
    return ((h.matmul(w2) + b2) ** 2).sum()


def test_hessian_vector_product_of_mlp_matches_finite_differences():
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (4,), (4, 2), (2,)]
    values = [rng.standard_normal(s) for s in shapes]
    vs = [rng.standard_normal(s) for s in shapes]
    x = tp.asarray(rng.standard_normal((5, 3)))

    def gradient(vals, create_graph=False):
        params = [leaf(v) for v in vals]
        gs = tp.grad(_mlp_loss(params, x), params, create_graph=create_graph)
        return params, gs

    params, gs = gradient(values, create_graph=True)
    dot = sum((g * tp.asarray(v)).sum() for g, v in zip(gs, vs))
    hvp = tp.grad(dot, params)
    eps = 1e-5
    _, gp = gradient([p + eps * v for p, v in zip(values, vs)])
    _, gm = gradient([p - eps * v for p, v in zip(values, vs)])
    for h, a, b in zip(hvp, gp, gm):
        np.testing.assert_allclose(h.numpy(), (a.numpy() - b.numpy()) / (2 * eps), rtol=1e-5)


# -- engine checks of what a rule returns --------------------------------------------------------
@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (lambda ctx, g: (g, g), r"exp \(ExpBackward\) returned 2 gradients for 1 inputs"),
        (lambda ctx, g: g, r"exp \(ExpBackward\) returned Tensor gradients"),
        (lambda ctx, g: (g.sum(),), r"shape \(\) float32 for input 0 of shape \(2, 3\)"),
        (lambda ctx, g: (g.astype("float64"),), r"float64 for input 0 of shape \(2, 3\) float32"),
    ],
)
def test_engine_checks_rule_output(bad, match):
    x = tp.ones((2, 3), requires_grad=True)
    with tp.register_rule(Op.EXP, bad, save_output=True):
        y = x.exp().sum()
        with pytest.raises(RuntimeError, match=match) as info:
            y.backward()
    assert isinstance(info.value, tp.RuleError)
    x.grad = None
    x.exp().sum().backward()  # the handle restored the real rule
    np.testing.assert_allclose(x.grad.numpy(), np.e * np.ones((2, 3)), rtol=1e-6)


def test_missing_rule_raises_not_implemented_naming_op():
    op = p10.define_op("engine_test_norule", lambda x: x * 2)
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"engine_test_norule.*register_rule"):
        p10.apply(op, x)
    with tp.no_grad():
        assert p10.apply(op, x).tolist() == [2.0, 2.0]


def test_user_defined_op_and_rule():
    softplus = p10.define_op("engine_test_softplus", lambda x: np.logaddexp(x, 0.0))

    def vjp(ctx, g):
        return (g * p10.sigmoid(ctx.inputs[0]),)

    with tp.register_rule(softplus, vjp, save=(0,)):
        x = leaf([-1.0, 0.0, 2.0])
        y = p10.apply(softplus, x)
        assert y.grad_fn.name == "EngineTestSoftplusBackward"
        y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + np.exp(-x.numpy())))


def test_register_rule_validates_at_definition_time():
    op = p10.define_op("engine_test_arity", lambda x: x)
    with pytest.raises(TypeError, match=r"ctx, grad_output"):
        tp.register_rule(op, lambda g: (g,))
    with pytest.raises(TypeError, match=r"must be callable"):
        tp.register_rule(op, 3)
    with pytest.raises(TypeError, match=r"save=\(1,\)"):
        tp.register_rule(op, lambda ctx, g: (g,), save=(1,))


# -- anomaly detection ------------------------------------------------------------------------
def test_detect_anomaly_forward_names_op_node_and_line():
    x = tp.zeros(2, requires_grad=True)
    with (
        tp.detect_anomaly(),
        np.errstate(divide="ignore"),
        pytest.raises(RuntimeError, match=r"forward of log \(LogBackward\).*Inf") as info,
    ):
        x.log()
    assert f"{__file__}:" in str(info.value)


def test_detect_anomaly_backward_names_op_and_forward_line():
    x = tp.zeros(2, requires_grad=True)
    with tp.detect_anomaly(), np.errstate(divide="ignore"):
        y = x.sqrt()
        line = sys._getframe().f_lineno - 1
        with pytest.raises(RuntimeError, match=r"backward of sqrt \(SqrtBackward\)") as info:
            y.sum().backward()
    assert f"{__file__}:{line}" in str(info.value)
    assert isinstance(info.value, tp.AnomalyError)


def test_without_detect_anomaly_nan_passes():
    x = tp.zeros(2, requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        x.sqrt().sum().backward()
    assert np.isinf(x.grad.numpy()).all()


# -- freeing by reference counting ------------------------------------------------------------
def test_graph_freed_by_refcount_with_gc_disabled():
    x = tp.ones(3, requires_grad=True)
    gc.disable()
    try:
        loss = ((x * 2).exp() * x).sum()
        refs = [weakref.ref(n) for n in tp.reachable([loss.grad_fn]) if n.op is not None]
        assert len(refs) == 4
        del loss
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def test_graph_freed_after_backward_with_gc_disabled():
    x = tp.ones(3, requires_grad=True)
    gc.disable()
    try:
        loss = (x * x).sum()
        node = weakref.ref(loss.grad_fn)
        loss.backward()
        del loss
        assert node() is None
        assert x.grad is not None
    finally:
        gc.enable()


def test_accumulate_grad_node_shared_and_not_keeping_leaf_alive():
    x = tp.ones(2, requires_grad=True)
    a, b = x * 2, x * 3
    assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]
    gc.disable()
    try:
        acc = weakref.ref(a.grad_fn.next_functions[0][0])
        leaf_ref = weakref.ref(x)
        del a, b, x
        assert acc() is None and leaf_ref() is None
    finally:
        gc.enable()


def test_leaf_grads_own_their_memory():
    x = tp.ones(2, requires_grad=True)
    y = tp.ones(2, requires_grad=True)
    gradient = tp.ones(2)
    (x + y).backward(gradient)  # the rule of add hands one value to both inputs
    with tp.no_grad():
        x.grad *= 5
        y.grad += 1
    assert x.grad.tolist() == [5.0, 5.0]
    assert y.grad.tolist() == [2.0, 2.0]
    assert gradient.tolist() == [1.0, 1.0]


def test_leaf_grad_from_a_broadcast_is_writable():
    x = tp.ones((2, 3), requires_grad=True)
    x.sum().backward()
    with tp.no_grad():
        x.grad.mul_(0.5)
    assert x.grad.tolist() == [[0.5] * 3] * 2


def test_leaf_grad_kept_by_a_hook_is_not_shared():
    x = tp.ones(2, requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2).sum().backward()
    with tp.no_grad():
        x.grad += 1
    assert kept[0].tolist() == [2.0, 2.0]
    assert x.grad.tolist() == [3.0, 3.0]


def test_leaf_grad_returned_by_a_function_is_not_shared():
    held = tp.full(2, 7.0)

    class Constant(tp.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return (held,)  # a tensor the caller still holds

    x = tp.ones(2, requires_grad=True)
    Constant.apply(x).sum().backward()
    with tp.no_grad():
        x.grad *= 0
    assert held.tolist() == [7.0, 7.0]


def test_leaf_takes_a_gradient_nothing_else_holds_without_a_copy(monkeypatch):
    # NOTE: a white-box check of a cost, not of a value: the fresh gradient of `x * 2` is moved
    # into x.grad (PyTorch steals it the same way); the shared one of `y + z` is copied once.
    from tpx import _leaf

    copies = []
    original = _leaf._owned
    monkeypatch.setattr(_leaf, "_owned", lambda g: copies.append(g) or original(g))
    x = tp.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert copies == [] and x.grad.tolist() == [2.0, 2.0, 2.0]
    y, z = tp.ones(3, requires_grad=True), tp.ones(3, requires_grad=True)
    (y + z).sum().backward()  # the rule of add gives one value to both
    assert len(copies) == 2
    assert y.grad.tolist() == z.grad.tolist() == [1.0, 1.0, 1.0]


def test_retained_grad_owns_its_memory():
    x = tp.ones(2, requires_grad=True)
    h = x * 1
    h.retain_grad()
    (h + x).sum().backward()
    with tp.no_grad():
        h.grad *= 3
    assert x.grad.tolist() == [2.0, 2.0]
    assert h.grad.tolist() == [3.0, 3.0]


def test_backward_releases_saved_memory_and_dropping_the_loss_releases_the_rest():
    import tracemalloc

    x = tp.ones(10_000, requires_grad=True)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        y = x
        for _ in range(50):
            y = (y * 1.5).tanh()  # tanh saves its output: 50 x 40 kB
        loss = y.sum()
        del y
        recorded = tracemalloc.get_traced_memory()[0] - base
        loss.backward()
        x.grad = None
        after_backward = tracemalloc.get_traced_memory()[0] - base
        del loss
        after_drop = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert recorded > 50 * 40_000
    assert after_backward < recorded / 10
    assert after_drop < 40_000  # less than one saved array (caches may hold a few kB)


def test_detect_anomaly_forward_nan():
    x = tp.asarray([-1.0], requires_grad=True)
    with (
        tp.detect_anomaly(),
        np.errstate(invalid="ignore"),
        pytest.raises(RuntimeError, match=r"forward of sqrt \(SqrtBackward\).*NaN") as info,
    ):
        x.sqrt()
    assert f"{__file__}:" in str(info.value)


def test_detect_anomaly_backward_nan_names_the_node_that_made_it():
    x = tp.zeros(1, requires_grad=True)
    with tp.detect_anomaly(), np.errstate(divide="ignore", invalid="ignore"):
        y = x.sqrt() * 0.0  # finite forward; SqrtBackward computes 0 * inf = NaN
        line = sys._getframe().f_lineno - 1
        with pytest.raises(RuntimeError, match=r"backward of sqrt \(SqrtBackward\).*NaN") as info:
            y.sum().backward()
    assert f"{__file__}:{line}" in str(info.value)
