"""Tensor hooks, GradFn pre/post hooks, observers and graph navigation."""

from __future__ import annotations

import pytest

import tpx as tp
from p10 import Op


def test_tensor_hook_replaces_grad_and_runs_in_order():
    x = tp.ones(2, requires_grad=True)
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append(("first", g.tolist())) or g * 10)
    y.register_hook(lambda g: calls.append(("second", g.tolist())))
    (y * 3).sum().backward()
    assert calls == [("first", [3.0, 3.0]), ("second", [30.0, 30.0])]
    assert x.grad.tolist() == [60.0, 60.0]


def test_tensor_hook_on_leaf_and_removal():
    x = tp.ones(2, requires_grad=True)
    handle = x.register_hook(lambda g: g * 0)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    handle.remove()
    handle.remove()  # a second remove does nothing
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        tp.ones(2).register_hook(lambda g: g)
    with pytest.raises(TypeError, match="not callable"):
        tp.ones(2, requires_grad=True).register_hook(3)


def test_hook_sees_the_summed_gradient_once():
    x = tp.ones(2, requires_grad=True)
    h = x * 1
    seen = []
    h.register_hook(lambda g: seen.append(g.tolist()))
    (h * 2 + h * 3).sum().backward()
    assert seen == [[5.0, 5.0]]


def test_gradfn_pre_and_post_hooks():
    x = tp.ones(2, requires_grad=True)
    y = x * 3
    events = []

    def pre(node, g):
        events.append(("pre", node.name, g.tolist()))
        return g * 2

    def post(node, grad_inputs, grad_output):
        events.append(("post", node.name, grad_inputs[0].tolist(), grad_output.tolist()))

    h1 = y.grad_fn.register_prehook(pre)
    h2 = y.grad_fn.register_hook(post)
    y.sum().backward(retain_graph=True)
    assert events == [
        ("pre", "MulBackward", [1.0, 1.0]),
        ("post", "MulBackward", [6.0] * 2, [2.0] * 2),
    ]
    assert x.grad.tolist() == [6.0, 6.0]
    h1.remove()
    h2.remove()
    y.sum().backward()
    assert x.grad.tolist() == [9.0, 9.0] and len(events) == 2


def test_gradfn_post_hook_may_replace_grad_inputs():
    x = tp.ones(2, requires_grad=True)
    y = x * 3
    y.grad_fn.register_hook(lambda node, gi, go: (gi[0] * 0 + 7, gi[1]))
    y.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]


def test_accumulate_grad_post_hook():
    x = tp.ones(2, requires_grad=True)
    y = x * 2
    seen = []
    acc = y.grad_fn.next_functions[0][0]
    acc.register_hook(lambda node, gi, go: seen.append((node.name, go.tolist())))
    y.sum().backward()
    assert seen == [("AccumulateGrad", [2.0, 2.0])]


class Recorder:
    def __init__(self):
        self.events = []

    def on_node_recorded(self, node, output):
        self.events.append(("recorded", node.name))

    def on_backward_start(self, roots, grad_roots, order):
        self.events.append(("start", [n.name for n in order]))

    def on_node_executed(self, node, grad_output, grad_inputs, seconds):
        assert seconds >= 0
        self.events.append(("executed", node.name, len(grad_inputs)))

    def on_grad_accumulated(self, target, contribution, total, source):
        self.events.append(("accumulated", target.name, source.name, total.tolist()))

    def on_backward_end(self, roots):
        self.events.append(("end", [r.name for r in roots]))


def test_observer_receives_all_events_in_order_and_removal():
    x = tp.ones(1, requires_grad=True)
    rec = Recorder()
    handle = tp.add_observer(rec)
    try:
        y = x * 2
        z = (y + y).sum()
        z.backward()
    finally:
        handle.remove()
    assert rec.events == [
        ("recorded", "MulBackward"),
        ("recorded", "AddBackward"),
        ("recorded", "SumBackward"),
        ("start", ["SumBackward", "AddBackward", "MulBackward", "AccumulateGrad"]),
        ("executed", "SumBackward", 1),
        ("accumulated", "AddBackward", "SumBackward", [1.0]),
        ("executed", "AddBackward", 2),
        ("accumulated", "MulBackward", "AddBackward", [1.0]),
        ("accumulated", "MulBackward", "AddBackward", [2.0]),
        ("executed", "MulBackward", 2),
        ("accumulated", "AccumulateGrad", "MulBackward", [4.0]),
        ("executed", "AccumulateGrad", 0),
        ("end", ["SumBackward"]),
    ]
    n = len(rec.events)
    (x * 2).sum().backward()
    assert len(rec.events) == n


def test_observer_end_event_after_error():
    rec = Recorder()
    x = tp.ones(1, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with tp.add_observer(rec), pytest.raises(RuntimeError):
        y.backward()
    assert rec.events[-1] == ("end", ["SumBackward"])


def test_observer_without_events_rejected():
    with pytest.raises(TypeError, match="defines none"):
        tp.add_observer(object())


def test_navigation_name_op_params_next_functions():
    x = tp.ones((2, 3), requires_grad=True)
    w = tp.ones(3)
    y = (x * w).sum(axis=1, keepdims=True)
    node = y.grad_fn
    assert node.name == "SumBackward" and node.op is Op.SUM
    assert node.params["keepdims"] is True
    assert node.out_meta == ((2, 1), tp.float32)
    ((mul, _),) = node.next_functions
    assert mul.name == "MulBackward"
    assert [e.name if e is not None else None for e, _ in mul.next_functions] == [
        "AccumulateGrad",
        None,
    ]
    assert mul.next_functions[0][0].variable is x
    assert [m[0] for m in mul.in_meta] == [(2, 3), (3,)]


def test_saved_values_visible_until_freed():
    x = tp.asarray([2.0], requires_grad=True)
    y = x.exp()
    node = y.grad_fn
    (saved,) = node.saved_tensors
    assert saved.tolist() == y.tolist()
    y.sum().backward()
    assert node.saved_tensors == () and node.is_freed


def test_seq_increases_in_recording_order():
    x = tp.ones(1, requires_grad=True)
    a = x * 2
    b = a * 3
    assert a.grad_fn.seq < b.grad_fn.seq
