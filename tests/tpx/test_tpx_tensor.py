"""``tpx.Tensor``: requires_grad, detach, retain_grad, and the operator shortcuts, which must
record exactly what the general path (P10 function -> ``__p10_apply__``) records."""

from __future__ import annotations

import numpy as np
import pytest

import p10
import tpx as tp


def test_requires_grad_on_int_raises():
    with pytest.raises(RuntimeError, match=r"only floating tensors can require grad.*int64"):
        tp.arange(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="astype"):
        tp.arange(3).requires_grad_()
    assert not tp.arange(3).requires_grad


def test_name_is_optional_settable_and_does_not_change_gradients_or_hooks():
    w = tp.ones(2, requires_grad=True)
    assert w.name is None and w._rare_attrs is None, "an unnamed tensor stores nothing"
    w.name = "layer.weight"
    h = w.register_hook(lambda g: g * 10)
    (w * 3).sum().backward()
    assert w.name == "layer.weight" and w.grad.tolist() == [30.0, 30.0]
    assert w.detach().name is None and (w * 1).name is None
    h.remove()
    w.name = None
    assert w.name is None
    with pytest.raises(TypeError, match="str or None"):
        w.name = 3


def test_requires_grad_false_on_non_leaf_raises():
    y = tp.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="detach"):
        y.requires_grad_(False)


def test_detach_shares_value_and_cuts_graph():
    x = tp.ones(2, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert np.shares_memory(d.numpy(), y.numpy())
    (d * x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_is_leaf_and_grad_fn():
    x = tp.ones(2, requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf
    assert tp.ones(2).is_leaf
    assert "grad_fn=<MulBackward>" in repr(y)
    assert "requires_grad=True" in repr(x)


def test_retain_grad_on_non_leaf():
    x = tp.ones(2, requires_grad=True)
    y = x * 3
    y.retain_grad()
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 6.0]
    assert x.grad.tolist() == [18.0, 18.0]


def test_integer_and_comparison_results_do_not_require_grad():
    x = tp.asarray([1.0, -2.0], requires_grad=True)
    assert not (x > 0).requires_grad
    assert not tp.argmax(x).requires_grad
    assert not tp.isnan(x).requires_grad


def test_item_numpy_tolist():
    x = tp.asarray([[1.5]], requires_grad=True)
    assert x.item() == 1.5 and x.tolist() == [[1.5]]
    assert not x.numpy().flags.writeable


# -- the operator shortcuts ------------------------------------------------------------------------
def _general(op_name, *args):
    """The same op through P10's function and ``__p10_apply__`` (no shortcut)."""
    return getattr(p10, op_name)(*args)


BINARY = [
    ("add", lambda a, b: a + b),
    ("subtract", lambda a, b: a - b),
    ("multiply", lambda a, b: a * b),
    ("divide", lambda a, b: a / b),
    ("matmul", lambda a, b: a @ b),
]


@pytest.mark.parametrize(("name", "fn"), BINARY)
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_binary_shortcut_matches_general_path(name, fn, dtype):
    rng = np.random.default_rng(0)
    a = tp.asarray(rng.standard_normal((3, 3)), dtype=dtype, requires_grad=True)
    b = tp.asarray(rng.standard_normal((3, 3)) + 3, dtype=dtype, requires_grad=True)
    fast, slow = fn(a, b), _general(name, a, b)
    assert fast.grad_fn.name == slow.grad_fn.name and fast.grad_fn.op is slow.grad_fn.op
    assert fast.grad_fn.in_meta == slow.grad_fn.in_meta
    assert fast.grad_fn.out_meta == slow.grad_fn.out_meta
    assert fast.grad_fn.code.co_filename == slow.grad_fn.code.co_filename == __file__
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    assert fast.dtype == dtype
    ga = tp.grad(fast.sum(), [a, b])
    gb = tp.grad(slow.sum(), [a, b])
    for x, y in zip(ga, gb):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize("scalar", [2, 2.5])
def test_scalar_shortcuts_keep_dtype_and_order(scalar):
    x = tp.asarray([1.0, 4.0], requires_grad=True)
    for out, expected in [
        (x * scalar, [scalar, 4 * scalar]),
        (scalar * x, [scalar, 4 * scalar]),
        (x + scalar, [1 + scalar, 4 + scalar]),
        (scalar + x, [1 + scalar, 4 + scalar]),
        (x - scalar, [1 - scalar, 4 - scalar]),
        (scalar - x, [scalar - 1, scalar - 4]),
        (x / scalar, [1 / scalar, 4 / scalar]),
        (scalar / x, [scalar, scalar / 4]),
    ]:
        assert out.dtype == tp.float32 and out.requires_grad
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    ((scalar - x) * (x / scalar)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (scalar - 2 * np.array([1.0, 4.0])) / scalar)


def test_reflected_scalar_records_inputs_in_argument_order():
    x = tp.ones(2, requires_grad=True)
    node = (3.0 - x).grad_fn
    assert node.next_functions[0][0] is None
    assert node.next_functions[1][0].name == "AccumulateGrad"


def test_mixed_dtypes_take_the_general_path():
    a = tp.ones(2, dtype=tp.float32, requires_grad=True)
    b = tp.ones(2, dtype=tp.float64)
    assert (a * b).dtype == _general("multiply", a, b).dtype


def test_integer_tensor_with_float_scalar():
    out = tp.arange(3) * 0.5
    assert out.dtype.kind == "f" and out.tolist() == [0.0, 0.5, 1.0]
    assert (tp.arange(3) + 1).tolist() == [1, 2, 3]


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "relu", "sqrt", "sin", "cos"])
def test_unary_shortcut_matches_general_path(name):
    x = tp.asarray([0.5, 2.0], requires_grad=True)
    fast, slow = getattr(x, name)(), getattr(p10, name)(x)
    assert fast.grad_fn.name == slow.grad_fn.name
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    (gf,) = tp.grad(fast.sum(), x)
    (gs,) = tp.grad(slow.sum(), x)
    np.testing.assert_array_equal(gf.numpy(), gs.numpy())
    assert (-x).grad_fn.name == "NegBackward"


@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1), 2], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_shortcut_matches_general_path(name, axis, keepdims):
    x = tp.asarray(np.arange(6.0).reshape(2, 3), requires_grad=True)
    try:
        slow = getattr(p10, name)(x, axis=axis, keepdims=keepdims)
    except p10.AxisError as e:  # the shortcut defers to the general path's error
        with pytest.raises(p10.AxisError, match=str(e).split(":")[0]):
            getattr(x, name)(axis, keepdims)
        return
    fast = getattr(x, name)(axis, keepdims)
    assert fast.grad_fn.name == slow.grad_fn.name
    assert fast.grad_fn.params == slow.grad_fn.params
    assert (fast.grad_fn.in_meta, fast.grad_fn.out_meta) == (
        slow.grad_fn.in_meta,
        slow.grad_fn.out_meta,
    )
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    (gf,) = tp.grad(fast.sum(), x)
    (gs,) = tp.grad(slow.sum(), x)
    np.testing.assert_array_equal(gf.numpy(), gs.numpy())
    with tp.no_grad():
        plain = getattr(x, name)(axis, keepdims)
    assert plain.grad_fn is None and not plain.requires_grad
    np.testing.assert_array_equal(plain.numpy(), slow.numpy())


def test_unary_shortcut_on_integers_casts_like_p10():
    assert tp.arange(2).exp().dtype == p10.arange(2).exp().dtype


def test_shortcuts_without_grad_record_nothing():
    x = tp.ones(2)
    assert (x * x).grad_fn is None and x.exp().grad_fn is None
    with tp.no_grad():
        y = tp.ones(2, requires_grad=True)
        assert not (y * y).requires_grad and not y.tanh().requires_grad


def test_shortcuts_emit_observer_events_and_defer_to_anomaly_mode():
    events = []

    class Forward:
        def on_node_forward(self, node, inputs, output, seconds):
            events.append((node.name, len(inputs)))

    x = tp.ones(2, requires_grad=True)
    with tp.add_observer(Forward()):
        x * x
        x.exp()
    assert events == [("MulBackward", 2), ("ExpBackward", 1)]
    with tp.detect_anomaly(), pytest.raises(RuntimeError, match="forward of div"):
        x / 0.0


class _Recorder:
    """The recording events, comparable between the shortcut and the general path."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def on_node_recorded(self, node, tensor):
        self.events.append(("recorded", node.name, tensor.grad_fn is node))

    def on_node_forward(self, node, inputs, output, seconds):
        kinds = tuple(type(i).__module__.split(".")[0] for i in inputs)
        values = tuple(i.tolist() for i in inputs)
        self.events.append(("forward", node.name, kinds, values, output.grad_fn is node))
        assert seconds >= 0


@pytest.mark.parametrize(
    ("fast", "general"),
    [
        (lambda x, w: x * 2.0, lambda x, w: p10.multiply(x, 2.0)),
        (lambda x, w: 3.0 - x, lambda x, w: p10.subtract(3.0, x)),
        (lambda x, w: x * w, lambda x, w: p10.multiply(x, w)),
        (lambda x, w: x.exp(), lambda x, w: p10.exp(x)),
        (lambda x, w: x.sum(0), lambda x, w: p10.sum(x, axis=0)),
    ],
    ids=["scalar", "reflected", "tensor", "unary", "reduction"],
)
def test_shortcut_observer_events_match_the_general_paths(fast, general):
    x = tp.asarray([[1.0, 2.0]], requires_grad=True)
    w = tp.asarray([[3.0, 4.0]])
    recorders = []
    for fn in (fast, general):
        rec = _Recorder()
        with tp.add_observer(rec):
            fn(x, w)
        recorders.append(rec.events)
    assert recorders[0] == recorders[1] and len(recorders[0]) == 2


def test_shortcut_is_the_path_taken():
    assert tp.Tensor.__mul__ is not p10.Tensor.__mul__
    assert tp.Tensor.__mul__.__name__ == "__mul__"
