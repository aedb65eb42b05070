"""What a capture keeps per node is invisible to the cyclic GC: a kept step's pending records
are untracked once collected, and a captured backward leaves no tracked object per node run
(an unrecorded backward wakes no collection; a captured one must not either: at 100,000 nodes
each full collection scans the whole graph)."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np

import tpx as tp
import tpx_inspect

N = 2000


def _forward(n: int) -> Any:
    x = tp.asarray(np.random.default_rng(0).standard_normal((4, 4)), requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 0.999
    return y.sum()


class _Tracked:
    """Counts the objects the GC tracks when the backward starts and after its last node run
    (registered after the capture: it hears each event after the capture has recorded it)."""

    def __init__(self, runs: int) -> None:
        self.runs, self.seen, self.counts = runs, 0, []

    def on_backward_start(self, roots: Any, grads: dict, order: list, info: Any = None) -> None:
        self.counts.append(len(gc.get_objects()))

    def on_node_executed(self, node: Any, grad_output: Any, grad_inputs: tuple, s: float) -> None:
        self.seen += 1
        if self.seen == self.runs:
            self.counts.append(len(gc.get_objects()))


def test_kept_records_are_untracked_once_collected() -> None:
    with tpx_inspect.capture(values="small") as cap:
        loss = _forward(N)
        gc.collect()
        records = [p for _, p in cap._pending.items()]
        tracked = sum(gc.is_tracked(p) for p in records)
        loss.backward()
    assert len(records) == N + 1  # the muls and the sum
    assert tracked == 0


def test_captured_backward_leaves_no_tracked_object_per_node() -> None:
    with tpx_inspect.capture(values="small") as cap:
        loss = _forward(N)
        probe = _Tracked(N + 2)  # the sum, the muls, the leaf
        handle = tp.add_observer(probe)
        try:
            loss.backward()
        finally:
            handle.remove()
    start, end = probe.counts
    # NOTE: an unrecorded backward frees each node's gradient and saved value; holding a tuple
    # or a P10 tensor per node run would add thousands here
    assert end - start < N // 10
    assert len(cap.trace.graphs[0].nodes) == N + 2


class _Squatter:
    """Another observer that holds every node's ``observed`` slot first."""

    def on_node_forward(self, node: Any, inputs: tuple, output: Any, seconds: float) -> None:
        node.observed = ("squatter", node.seq)


def _small_graph() -> None:
    x = tp.asarray(np.arange(6.0).reshape(2, 3), requires_grad=True)
    ((x * 0.5).tanh() + 1.0).sum().backward()


def _tables(trace: Any) -> list:
    g = trace.graphs[0]
    return [g.nodes.columns, g.tables.summaries.tolist(), g.tables.nodes.tolist()]


def test_a_slot_held_by_another_observer_is_left_to_it() -> None:
    with tpx_inspect.capture(timing=False) as alone:
        _small_graph()
    squatter = _Squatter()
    with tp.add_observer(squatter), tpx_inspect.capture(timing=False) as shared:
        _small_graph()
    assert _tables(shared.trace) == _tables(alone.trace)
    # NOTE: two captures at once: the outer holds the slots, the inner keeps its own map
    with tpx_inspect.capture(timing=False) as outer, tpx_inspect.capture(timing=False) as inner:
        _small_graph()
    assert _tables(outer.trace) == _tables(inner.trace) == _tables(alone.trace)


def test_a_node_recorded_under_another_capture_is_not_read_as_recorded() -> None:
    with tpx_inspect.capture(timing=False):
        x = tp.ones(3, requires_grad=True)
        y = x * 2  # its slot holds the first capture's record
    with tpx_inspect.capture(timing=False) as cap:
        y.sum().backward()
    mul = cap.trace.graphs[0].stats[1]
    assert cap.trace.graphs[0].nodes[1].op == "mul" and mul.output is None
