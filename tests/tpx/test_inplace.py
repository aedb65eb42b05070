"""In-place operations: correct gradients, or an error naming the op; never a silent wrong one."""

from __future__ import annotations

import numpy as np
import pytest

import tpx as tp


def leaf(values):
    return tp.asarray(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_iadd_on_non_leaf_gives_correct_gradient():
    x = leaf([1.0, 2.0])
    z = x * 2
    z += 1
    assert z.grad_fn.name == "AddBackward"
    (z * z).sum().backward()
    assert x.grad.tolist() == [2 * 3.0 * 2, 2 * 5.0 * 2]


def test_add_method_in_place_gives_correct_gradient():
    x = leaf([1.0, 2.0])
    y = leaf([3.0, 4.0])
    z = x * 1
    out = z.add_(y * y)
    assert out is z
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert y.grad.tolist() == [6.0, 8.0]


def test_setitem_with_grad_value_gives_correct_gradients():
    x = leaf([1.0, 2.0, 3.0])
    y = leaf(5.0)
    z = x * 1
    z[0] = y * 3
    (z * tp.asarray([10.0, 20.0, 30.0], dtype=tp.float64)).sum().backward()
    assert z.tolist() == [15.0, 2.0, 3.0]
    assert x.grad.tolist() == [0.0, 20.0, 30.0]
    assert y.grad.tolist() == 30.0


def test_setitem_constant_into_non_leaf():
    x = leaf([1.0, 2.0])
    z = x * 2
    z[1] = 0.0
    z.sum().backward()
    assert x.grad.tolist() == [2.0, 0.0]


def test_imul_by_itself_is_correct():
    x = leaf([3.0])
    z = x * 1
    z *= z
    z.sum().backward()
    assert z.tolist() == [9.0]
    assert x.grad.tolist() == [6.0]


def test_modifying_a_saved_value_raises_at_backward_naming_the_op():
    x = leaf([1.0, 2.0])
    z = x * 2
    w = z.exp() * z  # MulBackward saves z
    z += 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*MulBackward"):
        w.sum().backward()


def test_modifying_a_saved_output_raises():
    x = leaf([1.0, 2.0])
    e = x.exp()  # ExpBackward saves its output
    e[0] = 0.0
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*ExpBackward"):
        e.sum().backward()


def test_modifying_a_saved_constant_raises():
    x = leaf([1.0, 2.0])
    w = tp.asarray([3.0, 4.0], dtype=tp.float64)
    y = x * w
    w += 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation"):
        y.sum().backward()


def test_modifying_through_a_view_then_using_the_base_raises():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    z = x * 1
    v = z.reshape((2, 2))
    v += 1
    with pytest.raises(RuntimeError, match=r"modified in place through another view"):
        (z * 2).sum().backward()


def test_in_place_on_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"leaf.*requires grad.*no_grad"):
        x += 1
    with pytest.raises(RuntimeError, match=r"leaf.*requires grad"):
        x.add_(1.0)
    with pytest.raises(RuntimeError, match=r"leaf.*requires grad"):
        x[0] = 3.0
    assert x.tolist() == [1.0, 2.0]


def test_in_place_on_view_of_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    v = x.reshape((2, 1))
    with pytest.raises(RuntimeError, match=r"view of a leaf"):
        v += 1
    assert x.tolist() == [1.0, 2.0]


def test_in_place_on_leaf_under_no_grad_works_like_an_optimizer_step():
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    with tp.no_grad():
        x -= 0.5 * x.grad
    assert x.tolist() == [0.0, 0.0]
    assert x.requires_grad and x.is_leaf
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_leaf_modified_under_no_grad_after_being_saved_raises():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    with tp.no_grad():
        x += 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation"):
        y.backward()


def test_in_place_with_grad_value_into_constant_tensor():
    y = leaf([2.0, 3.0])
    z = tp.zeros(2, dtype=tp.float64)
    z += y * y
    assert z.requires_grad and z.grad_fn.name == "AddBackward"
    z.sum().backward()
    assert y.grad.tolist() == [4.0, 6.0]


def test_unrecorded_in_place_update_stays_in_place_under_an_observer(monkeypatch):
    # an observer gets no event for a write that is not recorded (an optimizer's update under
    # an inspector's capture), so the write keeps P10's in-place kernel, as without one
    import p10

    class Seen:
        def __init__(self):
            self.events = []

        def on_node_forward(self, *args):
            self.events.append(args)

    calls = []
    inplace = p10.Tensor._inplace
    monkeypatch.setattr(
        p10.Tensor, "_inplace", lambda t, op, b: calls.append(op) or inplace(t, op, b)
    )
    w = leaf([1.0, 2.0])
    g = tp.asarray(np.array([0.5, 0.25]))
    seen = Seen()
    with tp.add_observer(seen), tp.no_grad():
        w -= 0.1 * g
        w.sub_(g)
    assert len(calls) == 2 and seen.events == []
    assert w.tolist() == [1.0 - 0.05 - 0.5, 2.0 - 0.025 - 0.25]
