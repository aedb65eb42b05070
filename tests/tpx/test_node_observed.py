"""The observers' per-node slot ``Node.observed``: unset it reads None, TPX never touches it, an
observer's record goes with its node."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import tpx as tp
from tpx import AccumulateGrad, GradFn


class _Record:
    """What an observer keeps of a node (a class: it can be weakly referenced)."""

    def __init__(self, op: str) -> None:
        self.op = op


class _Marks:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def on_node_forward(self, node, inputs, output, seconds) -> None:
        node.observed = _Record(node.op.value)

    def on_node_executed(self, node, grad_output, grad_inputs, seconds) -> None:
        rec = node.observed  # None on a leaf's node: no forward event
        name = "leaf" if node.op is None else node.op.value
        self.seen.append((name, None if rec is None else rec.op))


def test_unset_it_reads_none_and_tpx_never_sets_it():
    x = tp.ones((2, 2), requires_grad=True)
    y = (x * 2).exp().sum()
    y.backward()
    nodes = tp.reachable([y.grad_fn])
    assert {type(n) for n in nodes} == {GradFn, AccumulateGrad}
    assert all(n.observed is None for n in nodes)
    assert "observed" not in vars(y.grad_fn)  # the class default, nothing written


def test_an_observer_reads_back_what_it_stored_on_each_node():
    marks = _Marks()
    x = tp.asarray(np.arange(4.0).reshape(2, 2), requires_grad=True)
    with tp.add_observer(marks):
        y = (x * 3).tanh().sum()
        y.backward()
    assert marks.seen == [("sum", "sum"), ("tanh", "tanh"), ("mul", "mul"), ("leaf", None)]
    # NOTE: the gradient is the one without an observer
    x2 = tp.asarray(np.arange(4.0).reshape(2, 2), requires_grad=True)
    (x2 * 3).tanh().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), x2.grad.numpy())


def test_the_record_goes_with_its_node():
    marks = _Marks()
    x = tp.ones(3, requires_grad=True)
    with tp.add_observer(marks):
        y = x * 2
    rec = weakref.ref(y.grad_fn.observed)
    assert rec() is not None and rec().op == "mul"
    del y
    gc.collect()
    assert rec() is None


# NOTE: run in a fresh interpreter: which attribute names a class's instances share depends on
# the order in which the process first set them (an earlier test may have set `observed`
# before any backward set `freed`)
_MEASURE = """
import tracemalloc, tpx as tp

def chain(n, observed=None):
    y, nodes = tp.ones((4, 4), requires_grad=True), []
    for _ in range(n):
        y = y * 1.5
        if observed is not None:
            y.grad_fn.observed = observed
        nodes.append(y.grad_fn)
    return y, nodes

def per_node(n, observed):
    tracemalloc.start()
    _y, _nodes = chain(n, observed)
    used = tracemalloc.get_traced_memory()[0] / n
    tracemalloc.stop()
    return used

y, _ = chain(200)
y.sum().backward()  # sets `freed` on its nodes, as any training loop's first step does
plain, marked = per_node(2000, None), per_node(2000, ("record",))
y, nodes = chain(3, ("record",))
y.sum().backward()
assert all(n.observed == ("record",) for n in nodes)
print(plain, marked)
"""


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's shared-key dicts")
def test_setting_the_slot_costs_a_node_no_dict_of_its_own():
    # NOTE: before the slot's name was reserved (tpx._graph._reserve_observed), the `freed`
    # that a first backward sets filled the class's table of shared attribute names, and each
    # node observed after it got a dict of its own: ~700 bytes more per node
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE], capture_output=True, text=True, env=env, check=True
    ).stdout
    plain, marked = map(float, out.split())
    assert marked - plain < 64, (plain, marked)
