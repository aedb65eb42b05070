"""The batched backward event ``on_nodes_executed``: the same node runs and sums as the
per-node events, in flat lists, in batches of at most ``BATCH`` node runs, all before
``on_backward_end`` (also after an error)."""

import pytest

import tpx as tp
from tpx import _engine, observe


class PerNode:
    def __init__(self):
        self.runs, self.sums = [], []

    def on_node_executed(self, node, grad_output, grad_inputs, seconds):
        self.runs += (node, grad_output, grad_inputs, seconds)

    def on_grad_accumulated(self, target, contribution, total, source):
        self.sums += (target, contribution, total, source)


class Batched:
    def __init__(self):
        self.batches, self.events = [], []

    def on_nodes_executed(self, runs, sums):
        self.batches.append((runs, sums))
        self.events.append("batch")

    def on_backward_end(self, roots):
        self.events.append("end")

    def runs(self):
        return [x for runs, _ in self.batches for x in runs]

    def sums(self):
        return [x for _, sums in self.batches for x in sums]


def _same(a, b):
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _fan_in(x):
    h = x.tanh()
    return ((h * 2) + h.sin() + (h * h)).sum()


def test_batches_hold_what_the_per_node_events_tell():
    x = tp.asarray([0.1, -0.5, 1.2], requires_grad=True)
    per, batched = PerNode(), Batched()
    with tp.add_observer(per), tp.add_observer(batched):
        _fan_in(x).backward()
    assert batched.events == ["batch", "end"]
    runs, sums = batched.runs(), batched.sums()
    # the node runs: node, grad_output, seconds the same objects; grad_inputs the same tuple
    assert len(runs) == len(per.runs) == 4 * 8
    for k in range(0, len(runs), 4):
        assert runs[k] is per.runs[k] and runs[k + 1] is per.runs[k + 1]
        assert _same(runs[k + 2], per.runs[k + 2]) and runs[k + 3] == per.runs[k + 3]
    assert _same(sums, per.sums) and len(sums) == 4 * 10  # h: three consumers, one twice
    names = [n.name for n in runs[0::4]]
    assert names[0] == "SumBackward" and names[-1] == "AccumulateGrad"


def test_long_pass_comes_in_bounded_batches_with_each_runs_sums(monkeypatch):
    monkeypatch.setattr(_engine, "_BATCH_ITEMS", 4 * 16)  # BATCH = 16
    x = tp.ones(2, requires_grad=True)
    y = x
    for _ in range(50):
        y = y * 1.0
    batched = Batched()
    with tp.add_observer(batched):
        y.sum().backward()
    assert batched.events == ["batch"] * 4 + ["end"]
    assert [len(runs) // 4 for runs, _ in batched.batches] == [16, 16, 16, 4]  # 52 runs
    for runs, sums in batched.batches:
        # every sum's source ran in the same batch, before it
        sources = set(runs[0::4])
        assert all(s in sources for s in sums[3::4])
    assert x.grad.tolist() == [1.0, 1.0]


def test_batch_sent_before_the_end_after_an_error():
    x = tp.ones(2, requires_grad=True)
    h = x * 3
    h.register_hook(lambda g: 1 / 0)
    batched = Batched()
    with tp.add_observer(batched), pytest.raises(ZeroDivisionError):
        (h * 2).sum().backward()
    assert batched.events == ["batch", "end"]
    assert [n.name for n in batched.runs()[0::4]] == ["SumBackward", "MulBackward"]


def test_totals_are_what_the_engine_stored(monkeypatch):
    def overwrite(grads, node, g, source):  # a planted engine bug: no sum, no event
        grads[node] = g

    monkeypatch.setattr(_engine, "_accumulate", overwrite)
    x = tp.asarray([0.5, 1.0], requires_grad=True)
    batched = Batched()
    with tp.add_observer(batched):
        _fan_in(x).backward()
    sums = batched.sums()
    assert all(total is contribution for contribution, total in zip(sums[1::4], sums[2::4]))


def test_no_batches_without_a_batched_observer(monkeypatch):
    handed = []
    monkeypatch.setattr(_engine, "_hand_over", lambda run: handed.append(run) or [])
    per = PerNode()
    x = tp.ones(2, requires_grad=True)
    with tp.add_observer(per):
        (x * x).sum().backward()
    assert len(per.runs) == len(per.sums) == 4 * 3  # x * x: two sums into x
    assert handed == []  # NOTE: the engine gathered no batch for nobody


class _EveryInput(tp.Function):
    """A rule that returns a gradient for each input, also for one that needs none, and
    returns TPX tensors."""

    @staticmethod
    def forward(ctx, x, c):
        return x * c

    @staticmethod
    def backward(ctx, g):
        return g * 2.0, g * 3.0


def test_a_batch_read_through_grad_inputs_tells_what_the_per_node_event_tells():
    x = tp.ones(3, requires_grad=True)
    c = tp.ones(3)  # needs no gradient: its edge is None
    per, batched = PerNode(), Batched()
    with tp.add_observer(batched):
        _EveryInput.apply(x, c).sum().backward()
    with tp.add_observer(per):
        _EveryInput.apply(x, c).sum().backward()
    runs = batched.runs()
    assert [n.name for n in runs[0::4]] == [n.name for n in per.runs[0::4]]
    for node, returned, seen in zip(runs[0::4], runs[2::4], per.runs[2::4]):
        normal = observe.grad_inputs(node, returned)
        assert [type(v) for v in normal] == [type(v) for v in seen], node.name
        assert all(v is None or v.tolist() == s.tolist() for v, s in zip(normal, seen))
        assert observe.grad_inputs(node, normal) == normal  # NOTE: kept as they are
    # NOTE: the batch holds the rule's own values (normalizing them is left to its reader)
    node, returned = runs[4], runs[6]
    assert node.name == "EveryInputBackward" and len(returned) == 2
    assert returned[1] is not None and per.runs[6][1] is None
    assert isinstance(returned[0], tp.Tensor) and not isinstance(per.runs[6][0], tp.Tensor)


def test_under_create_graph_a_batch_holds_the_tensors_that_were_summed():
    x = tp.asarray([0.5, 1.0], requires_grad=True)
    batched = Batched()
    with tp.add_observer(batched):
        tp.grad((x * x).sum(), x, create_graph=True)
    runs, sums = batched.runs(), batched.sums()
    sent = {id(v) for gi in runs[2::4] for v in gi if v is not None}
    assert sums[1::4] and all(id(c) in sent for c in sums[1::4])  # NOTE: no second wrapper
    assert all(isinstance(v, tp.Tensor) for gi in runs[2::4] for v in gi if v is not None)
