"""Whole-function gradcheck and gradgradcheck: pass on correct code, fail with located messages."""

from __future__ import annotations

import numpy as np
import pytest

import p10
import tpx as tp
from p10 import Op
from tpx_inspect.checks import GradcheckError, gradcheck, gradgradcheck


def _x(values, **kw):
    return tp.asarray(values, dtype=tp.float64, requires_grad=True, **kw)


@pytest.fixture
def wrong_sin():
    """sin' = sin (should be cos), restored after the test."""
    h = tp.register_rule(Op.SIN, lambda ctx, g: (g * p10.sin(ctx.inputs[0]),), save=(0,))
    yield
    h.remove()


@pytest.mark.parametrize("fast", [False, True])
def test_passes_on_correct_functions(fast):
    x = _x([[0.5, -1.0, 0.2], [2.0, 0.1, -0.7]])
    w = _x([[1.0], [2.0], [-0.5]])
    result = gradcheck(lambda a, b: ((a @ b).tanh() * a.sum()).exp(), [x, w], fast_mode=fast)
    assert result.passed and result.mode == ("fast" if fast else "full")
    assert result.checked > 0


def test_full_mode_names_output_input_element_and_values(wrong_sin):
    x = _x([0.3, 1.2])
    y = _x([0.5, 0.5])
    with pytest.raises(GradcheckError) as err:
        gradcheck(lambda a, b: (a * b, (b * 2).sin()), [x, y])
    msg = str(err.value)
    assert "output 1 with respect to input 1" in msg
    assert "d output[1][0] / d input[1][0]" in msg
    expected_num, expected_an = 2 * np.cos(1.0), 2 * np.sin(1.0)
    assert f"numerical {expected_num:.8g}" in msg and f"analytical {expected_an:.8g}" in msg
    assert "output 0" not in msg  # a * b is right


def test_fast_mode_fails_and_locates_the_element(wrong_sin):
    x = _x([[0.3, 1.2], [0.4, -0.2]])
    result = gradcheck(lambda a: a.sin(), [x], fast_mode=True, raise_exception=False)
    assert not result.passed
    modes = [m.mode for m in result.mismatches]
    assert modes == ["fast", "full"]
    located = result.mismatches[1]
    assert located.input_element is not None and located.output_element is not None


def test_fast_mode_is_deterministic_for_a_seed():
    x = _x([0.3, 1.2, -0.4])
    a = gradcheck(lambda t: t.sin(), [x], fast_mode=True, seed=3)
    b = gradcheck(lambda t: t.sin(), [x], fast_mode=True, seed=3)
    assert a == b


def test_warns_on_float32_inputs():
    x = tp.asarray([0.3, 1.2], requires_grad=True)
    with pytest.warns(UserWarning, match="input 0 is float32, not float64"):
        gradcheck(lambda t: t * 2, [x], raise_exception=False)


def test_non_tensor_and_no_grad_inputs_pass_through():
    x = _x([0.3, 1.2])
    c = tp.asarray([2.0, 3.0], dtype=tp.float64)
    assert gradcheck(lambda t, k, s: (t * k) ** s, [x, c, 2]).passed


def test_no_input_requiring_grad_is_a_clear_error():
    with pytest.raises(ValueError, match="no input requires grad"):
        gradcheck(lambda t: t * 2, [tp.asarray([1.0], dtype=tp.float64)])


def test_gradgradcheck_passes_on_correct_second_derivatives():
    x = _x([0.3, 1.2, -0.8])
    w = _x([0.5, -0.1, 0.2])
    assert gradgradcheck(lambda a, b: (a * b).tanh().sum() * a.exp(), [x, w]).passed


def test_gradgradcheck_catches_a_rule_whose_gradient_is_not_differentiable():
    # NOTE: right first derivative, but computed from a detached value: the second derivative
    # misses the -sin(x) term. gradcheck passes, gradgradcheck must fail.
    def vjp(ctx, g):
        x = ctx.inputs[0]
        detached = p10.cos(x.p10 if isinstance(x, tp.Tensor) else x)
        return (g * detached,)

    h = tp.register_rule(Op.SIN, vjp, save=(0,))
    try:
        x = _x([0.3, 1.2])
        assert gradcheck(lambda t: t.sin(), [x]).passed
        with pytest.raises(GradcheckError, match="with respect to input 0"):
            gradgradcheck(lambda t: t.sin(), [x])
    finally:
        h.remove()


def test_a_function_without_floating_outputs_is_a_clear_error():
    with pytest.raises(ValueError, match="no floating"):
        gradcheck(lambda t: t > 0, [_x([1.0])])
