"""tp.override_rule and p10.override_kernel: per block, per thread, nestable, restored on error,
recorded on the nodes they touched; a rule's declared saves are what the node keeps."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import p10
import tpx as tp
from p10 import Op
from tpx.rules import RULES


def tanh_from_input(ctx, g):
    t = tp.tanh(ctx.inputs[0])
    return (g - g * t * t,)


def wrong_tanh(ctx, g):
    return (g * 2.0,)


def _tanh_grad(x0):
    x = tp.asarray(x0, requires_grad=True)
    y = x.tanh()
    (y * 3.0).sum().backward()
    return y, x.grad.numpy()


def _enter(cm):
    with cm:
        pass


X0 = np.array([-1.0, 0.25, 2.0], np.float32)


def test_no_override_leaves_nodes_unmarked():
    y, _ = _tanh_grad(X0)
    assert y.grad_fn.overrides is None


def test_identical_rule_gives_identical_gradients_and_marks_the_node():
    _, g_a = _tanh_grad(X0)
    with tp.override_rule(Op.TANH, RULES[Op.TANH].vjp):
        y_b, g_b = _tanh_grad(X0)
    np.testing.assert_array_equal(g_a, g_b)
    assert y_b.grad_fn.overrides == {"rule": "tpx.rules:_tanh"}
    with tp.override_rule(Op.TANH, RULES[Op.TANH].vjp):
        y = tp.asarray(X0, requires_grad=True).tanh()
    # the saves are inherited from the rule it replaces: the output
    assert [s.shape for s in y.grad_fn.saved_tensors] == [(3,)]
    assert y.grad_fn.saved[-1] is not None


def test_wrong_rule_changes_the_gradient_only_inside_the_block():
    _, g_a = _tanh_grad(X0)
    with tp.override_rule("tanh", wrong_tanh):
        _, g_b = _tanh_grad(X0)
    np.testing.assert_allclose(g_b, np.full(3, 6.0))
    _, g_c = _tanh_grad(X0)
    np.testing.assert_array_equal(g_a, g_c)


def test_rule_is_restored_after_an_exception():
    with pytest.raises(KeyError), tp.override_rule(Op.TANH, wrong_tanh):
        raise KeyError("boom")
    y, g = _tanh_grad(X0)
    assert y.grad_fn.overrides is None
    np.testing.assert_allclose(g, 3 * (1 - np.tanh(X0) ** 2), rtol=1e-6)


def test_nested_overrides_inner_wins_then_outer_comes_back():
    with tp.override_rule(Op.TANH, wrong_tanh):
        with tp.override_rule(Op.TANH, tanh_from_input, save=(0,), save_output=False):
            y_in, g_in = _tanh_grad(X0)
        y_out, g_out = _tanh_grad(X0)
    assert y_in.grad_fn.overrides["rule"].endswith(":tanh_from_input")
    assert y_out.grad_fn.overrides["rule"].endswith(":wrong_tanh")
    np.testing.assert_allclose(g_in, 3 * (1 - np.tanh(X0) ** 2), rtol=1e-6)
    np.testing.assert_allclose(g_out, np.full(3, 6.0))


def test_declared_saves_are_what_the_node_keeps():
    x = tp.asarray(np.ones((4, 5), np.float32), requires_grad=True)
    with tp.override_rule(Op.MUL, lambda ctx, g: (g * ctx.inputs[1], None), save=(1,)):
        y = x * tp.asarray(np.full((4, 5), 2.0, np.float32))  # the operator shortcut
    assert y.grad_fn.overrides is not None
    assert len(y.grad_fn.saved_tensors) == 1
    # the built-in rule (general path) keeps both inputs when both require grad (with a
    # constant operand it keeps only the constant: Rule.cross)
    w = tp.asarray(np.full((4, 5), 2.0, np.float32), requires_grad=True)
    assert len(p10.multiply(x, w).grad_fn.saved_tensors) == 2
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((4, 5), 2.0))


def test_rule_overrides_are_per_thread():
    inside, outside = threading.Barrier(2), threading.Barrier(2)
    results = {}

    def overriding():
        with tp.override_rule(Op.TANH, wrong_tanh):
            inside.wait()
            results["a"] = _tanh_grad(X0)[1]
            outside.wait()

    def plain():
        inside.wait()
        results["b"] = _tanh_grad(X0)[1]
        outside.wait()

    threads = [threading.Thread(target=overriding), threading.Thread(target=plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(results["a"], np.full(3, 6.0))
    np.testing.assert_allclose(results["b"], 3 * (1 - np.tanh(X0) ** 2), rtol=1e-6)


def test_bad_rule_overrides_are_clear_errors():
    with pytest.raises(tp.RuleOverrideError, match="unknown op name 'tanhh'"):
        _enter(tp.override_rule("tanhh", wrong_tanh))
    with pytest.raises(TypeError, match=r"override_rule\(tanh\): vjp must take \(ctx, grad"):
        _enter(tp.override_rule(Op.TANH, lambda g: (g,)))
    with pytest.raises(TypeError, match=r"save=.* must list input positions in 0..0"):
        _enter(tp.override_rule(Op.TANH, wrong_tanh, save=(1,)))
    with pytest.raises(TypeError, match="no gradient rule to replace"):
        _enter(tp.override_rule(Op.EQ, wrong_tanh))


# -- kernels ------------------------------------------------------------------------------------
def clipped(a):
    return np.clip(a, -0.5, 0.5)


def test_kernel_override_changes_forward_and_is_recorded():
    numpy_backend = p10.get_backend("numpy")
    original = numpy_backend.kernels[Op.TANH]
    x = tp.asarray(X0, requires_grad=True)
    with p10.override_kernel(Op.TANH, clipped, backend="numpy"):
        assert numpy_backend.kernels[Op.TANH] is not original  # the dispatcher
        y = x.tanh()
        z = p10.tanh(p10.asarray(X0))  # P10 alone (no node) too
    assert numpy_backend.kernels[Op.TANH] is original
    np.testing.assert_allclose(y.numpy(), np.clip(X0, -0.5, 0.5))
    np.testing.assert_allclose(z.numpy(), np.clip(X0, -0.5, 0.5))
    assert y.grad_fn.overrides == {"kernel": f"{clipped.__module__}:clipped"}
    np.testing.assert_allclose(x.tanh().numpy(), np.tanh(X0), rtol=1e-6)


def test_rule_and_kernel_overrides_together_are_both_recorded():
    with tp.override_rule(Op.TANH, wrong_tanh), p10.override_kernel("tanh", clipped):
        y = tp.asarray(X0, requires_grad=True).tanh()
    assert set(y.grad_fn.overrides) == {"rule", "kernel"}


def test_kernel_override_restored_after_exception_and_nested():
    with p10.override_kernel(Op.TANH, clipped):
        with pytest.raises(RuntimeError), p10.override_kernel(Op.TANH, np.sign):
            assert p10.tanh(p10.asarray(X0)).tolist() == [-1.0, 1.0, 1.0]
            raise RuntimeError
        np.testing.assert_allclose(p10.tanh(p10.asarray(X0)).numpy(), clipped(X0))
    np.testing.assert_allclose(p10.tanh(p10.asarray(X0)).numpy(), np.tanh(X0), rtol=1e-6)
    assert p10.kernel_overrides() is None


def test_kernel_overrides_are_per_thread():
    inside, outside = threading.Barrier(2), threading.Barrier(2)
    results = {}

    def overriding():
        with p10.override_kernel(Op.TANH, clipped):
            inside.wait()
            results["a"] = p10.tanh(p10.asarray(X0)).numpy()
            outside.wait()

    def plain():
        inside.wait()
        results["b"] = p10.tanh(p10.asarray(X0)).numpy()
        outside.wait()

    threads = [threading.Thread(target=overriding), threading.Thread(target=plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(results["a"], clipped(X0))
    np.testing.assert_allclose(results["b"], np.tanh(X0), rtol=1e-6)


def test_inplace_operators_use_the_overriding_kernel():
    x = p10.asarray([1.0, 2.0])
    with p10.override_kernel(Op.SUB, np.add):
        x -= 1.0
    assert x.tolist() == [2.0, 3.0]
    x -= 1.0
    assert x.tolist() == [1.0, 2.0]


def test_bad_kernel_overrides_are_clear_errors():
    with pytest.raises(p10.KernelOverrideError, match="unknown op name 'tanhh'"):
        _enter(p10.override_kernel("tanhh", clipped))
    with pytest.raises(ValueError, match=r"override_kernel\(add\): kernel must take 2 array"):
        _enter(p10.override_kernel(Op.ADD, clipped))
    with pytest.raises(ValueError, match="unknown backend"):
        _enter(p10.override_kernel(Op.ADD, np.add, backend="nope"))
