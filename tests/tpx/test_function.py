"""Custom ``tp.Function`` classes, as PyTorch users know them."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tpx as tp


class Mul(tp.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.seen_needs = ctx.needs_input_grad
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (
            g * b if ctx.needs_input_grad[0] else None,
            g * a if ctx.needs_input_grad[1] else None,
        )


def test_function_gradients_and_needs_input_grad():
    a = tp.asarray([2.0, 3.0], requires_grad=True)
    b = tp.asarray([5.0, 7.0])
    out = Mul.apply(a, b)
    assert out.grad_fn.name == "MulBackward" and out.requires_grad
    assert out.grad_fn.ctx.seen_needs == (True, False)
    (out * out).sum().backward()
    assert a.grad.tolist() == [2 * 10.0 * 5, 2 * 21.0 * 7]
    assert b.grad is None


def test_function_forward_runs_without_recording():
    class Probe(tp.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.inner = y.requires_grad
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = tp.ones(2, requires_grad=True)
    out = Probe.apply(x)
    assert out.grad_fn.ctx.inner is False
    assert out.grad_fn.next_functions[0][0].name == "AccumulateGrad"


def test_function_without_grad_inputs_records_nothing():
    out = Mul.apply(tp.ones(2), tp.ones(2))
    assert not out.requires_grad and out.grad_fn is None
    with tp.no_grad():
        assert Mul.apply(tp.ones(2, requires_grad=True), tp.ones(2)).grad_fn is None


def test_function_in_a_larger_graph_and_double_use():
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    y = Mul.apply(x * 3, x)  # 3 x^2
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_missing_backward_raises_at_definition():
    with pytest.raises(TypeError, match=r"NoBackward must define a static method backward"):

        class NoBackward(tp.Function):
            @staticmethod
            def forward(ctx, x):
                return x


def test_missing_forward_raises_at_definition():
    with pytest.raises(TypeError, match=r"must define a static method forward"):

        class NoForward(tp.Function):
            @staticmethod
            def backward(ctx, g):
                return g


def test_wrong_backward_arity_raises_at_definition():
    with pytest.raises(TypeError, match=r"backward must take \(ctx, grad_output\)") as info:

        class BadArity(tp.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx):
                return None

    assert isinstance(info.value, tp.DefinitionError)


def test_backward_returning_wrong_count_raises_naming_the_function():
    class OneGrad(tp.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    a, b = tp.ones(2, requires_grad=True), tp.ones(2)
    with pytest.raises(
        RuntimeError, match=r"OneGrad \(OneGradBackward\) returned 1 gradients for 2"
    ):
        OneGrad.apply(a, b).sum().backward()


def test_backward_returning_wrong_shape_raises():
    class BadShape(tp.Function):
        @staticmethod
        def forward(ctx, a):
            return a.sum()

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match=r"shape \(\).*input 0 of shape \(3,\)"):
        BadShape.apply(tp.ones(3, requires_grad=True)).backward()


def test_forward_must_return_a_tensor():
    class ReturnsFloat(tp.Function):
        @staticmethod
        def forward(ctx, a):
            return 1.0

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match=r"must return one tpx.Tensor"):
        ReturnsFloat.apply(tp.ones(1, requires_grad=True))


def test_saved_tensor_modified_in_place_raises():
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    h = x * 1
    out = Mul.apply(h, h)
    h += 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation"):
        out.sum().backward()


def test_function_graph_freed_by_refcount():
    x = tp.ones(2, requires_grad=True)
    gc.disable()
    try:
        out = Mul.apply(x * 2, x)
        ref = weakref.ref(out.grad_fn)
        del out
        assert ref() is None
    finally:
        gc.enable()


def test_function_backward_twice_raises_then_retain_graph_works():
    x = tp.ones(2, requires_grad=True)
    out = Mul.apply(x, x).sum()
    out.backward(retain_graph=True)
    out.backward()
    assert x.grad.tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match=r"second time"):
        out.backward()


def test_function_create_graph_double_backward():
    x = tp.asarray([3.0], requires_grad=True)
    (g,) = tp.grad(Mul.apply(x, x).sum(), x, create_graph=True)
    assert g.tolist() == [6.0]
    (h,) = tp.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), [2.0])
