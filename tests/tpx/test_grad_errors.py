"""Clear errors for a bad ``gradient=`` of backward and a bad ``x.grad = ...`` assignment."""

from __future__ import annotations

import numpy as np
import pytest

import tpx as tp


@pytest.mark.parametrize("gradient", [["a", "b"], "ab", object(), {"a": 1}])
def test_backward_with_non_numeric_gradient_names_the_op_shape_and_dtype(gradient):
    x = tp.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(tp.BackwardError) as info:
        y.backward(gradient=gradient)
    text = str(info.value)
    assert "MulBackward" in text and "(2,)" in text and "float32" in text
    assert x.grad is None


def test_backward_with_gradient_of_wrong_shape_names_the_op():
    y = tp.ones(2, requires_grad=True) * 2
    with pytest.raises(tp.BackwardError, match=r"\(1, 2\).*\(2,\).*MulBackward"):
        y.backward(gradient=[[1.0, 2.0]])


def test_backward_with_numbers_as_gradient_still_works():
    x = tp.ones(2, requires_grad=True)
    (x * 2).backward(gradient=[1, 3])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])


@pytest.mark.parametrize(
    ("value", "builtin", "words"),
    [
        ("s", TypeError, "str, not a tpx.Tensor"),
        ([1.0, 2.0], TypeError, "list, not a tpx.Tensor"),
        (np.ones(2, dtype=np.float32), TypeError, "ndarray, not a tpx.Tensor"),
        (tp.zeros(3), RuntimeError, "shape (3,), but the tensor has shape (2,)"),
        (tp.zeros((2, 1)), RuntimeError, "shape (2, 1)"),
        (tp.zeros(2, dtype=tp.float64), RuntimeError, "dtype float64, but the tensor has"),
    ],
)
def test_grad_assignment_is_validated_as_pytorch_does(value, builtin, words):
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(tp.GradAssignmentError) as info:
        x.grad = value
    assert isinstance(info.value, builtin)
    assert words in str(info.value)
    assert x.grad is None  # refused: nothing assigned


def test_grad_assignment_of_itself_is_refused():
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(tp.GradAssignmentError, match="its own gradient"):
        x.grad = x


def test_valid_grad_assignment_then_backward_accumulates_into_it():
    x = tp.ones(2, requires_grad=True)
    x.grad = tp.asarray([10.0, 20.0])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [13.0, 23.0])
    x.grad = None
    assert x.grad is None
