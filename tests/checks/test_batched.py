"""The batched local and kernel checks against the same checks one node at a time
(``batch_size=1``).

Each graph below has many nodes of the same op and shapes, so the batched run really stacks
them; every finding, skip and note must be the same as node by node, in the same order.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import p10
import tpx as tp
from p10 import Op
from tests.helpers.rule_cases import CASES
from tpx.rules import RULES, Rule
from tpx_inspect.checks import LocalOptions, capture_call, kernel_check, local_check
from tpx_inspect.checks.batched import BatchReplay, batches


def _same(graph, **opts) -> object:
    """Run both ways, assert identical results, return the batched one."""
    one = local_check(graph, LocalOptions(batch_size=1, **opts))
    many = local_check(graph, LocalOptions(batch_size=64, **opts))
    assert [f.message for f in many.findings] == [f.message for f in one.findings]
    assert [f.node for f in many.findings] == [f.node for f in one.findings]
    assert many.skips == one.skips and many.notes == one.notes
    assert (many.checked, many.skipped) == (one.checked, one.skipped)
    return many


def _edit(graph, changes: dict):
    """``graph`` with the fields of some nodes, as the checks read them, replaced (a planted
    bug: the view the checks read is set on a copy of the graph)."""
    nodes = tuple(dataclasses.replace(n, **changes.get(n.id, {})) for n in graph.replay_nodes)
    edited = dataclasses.replace(graph)
    edited.__dict__["replay_nodes"] = nodes
    return edited


def _layers(x, w, b, n=12):
    h = x
    for _ in range(n):
        z = (h @ w + b).tanh()
        h = z * 0.5 + z.sin() * 0.5
    return (h * h).mean()


def _mlp_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [
        tp.asarray(rng.standard_normal((4, 6)) * 0.5, requires_grad=True),
        tp.asarray(rng.standard_normal((6, 6)) * 0.3, requires_grad=True),
        tp.asarray(rng.standard_normal(6) * 0.1, requires_grad=True),
    ]


def test_batches_really_stack_the_nodes_of_one_op_and_layout():
    graph = capture_call(_layers, _mlp_inputs())
    tanh = [n for n in graph.replay_nodes if n.op is Op.TANH]
    replay = BatchReplay(tanh)
    assert replay.stacked and len(replay) == 12
    xs = replay.inputs()
    alone = np.stack([BatchReplay([n]).forward(BatchReplay([n]).inputs())[0] for n in tanh])
    np.testing.assert_allclose(replay.forward(xs), alone, rtol=1e-14, atol=0)
    assert list(batches(list(range(7)), 3, lambda i: i % 2)) == [[0, 2, 4], [1, 3, 5], [6]]


def test_a_passing_graph_passes_the_same_way():
    result = _same(graph=capture_call(_layers, _mlp_inputs()))
    assert result.passed and result.checked > 80


@pytest.fixture
def wrong_tanh_in_the_table():
    """A planted bug in the built-in rule table itself (batched like any built-in rule)."""
    saved = RULES[Op.TANH]
    RULES[Op.TANH] = Rule(lambda ctx, g: (g * p10.tanh(ctx.inputs[0]),), (0,), False)
    yield
    RULES[Op.TANH] = saved


def test_a_planted_wrong_rule_gives_the_same_findings(wrong_tanh_in_the_table):
    graph = capture_call(_layers, _mlp_inputs())
    assert BatchReplay([n for n in graph.replay_nodes if n.op is Op.TANH]).stacked
    result = _same(graph)
    assert [f.name for f in result.findings] == ["TanhBackward"] * 12
    assert "worst element" in result.findings[0].message


def test_a_wrong_registered_rule_gives_the_same_findings():
    h = tp.register_rule(Op.TANH, lambda ctx, g: (g * p10.tanh(ctx.inputs[0]),), save=(0,))
    try:
        graph = capture_call(_layers, _mlp_inputs())
    finally:
        h.remove()
    assert [f.name for f in _same(graph).findings] == ["TanhBackward"] * 12


def test_a_rule_of_the_wrong_shape_is_judged_node_by_node():
    graph = capture_call(_layers, _mlp_inputs())
    sins = [n for n in graph.replay_nodes if n.op is Op.SIN]
    # replayed with the table's rule, as a node loaded from a trace is
    graph = _edit(graph, {n.id: {"rule": None} for n in sins})
    saved = RULES[Op.SIN]
    RULES[Op.SIN] = Rule(lambda ctx, g: (p10.sum(g),), (), False)  # planted after the capture
    try:
        assert BatchReplay([graph.replay_node(n.id) for n in sins]).stacked
        with np.errstate(all="ignore"):
            result = _same(graph)
    finally:
        RULES[Op.SIN] = saved
    assert result.checked > 80


def test_relu_kinks_give_the_same_notes_and_skips():
    def f(x):
        h = x
        for _ in range(6):
            h = (h.relu() - 0.25) * 2.0
        return h.sum()

    x = tp.asarray(np.array([[0.0, 0.5, -1.0, 0.125], [0.25, 0.0, 2.0, -0.5]]), requires_grad=True)
    result = _same(capture_call(f, [x]), cotangents=2)
    assert result.notes or result.skips


def test_unreproducible_and_nan_nodes_inside_a_batch_are_skipped_alone():
    graph = capture_call(_layers, _mlp_inputs())
    tanh = [n for n in graph.replay_nodes if n.op is Op.TANH]
    nan_input = tanh[5].inputs[0].copy()
    nan_input[0, 0] = np.nan
    graph = _edit(graph, {tanh[3].id: {"output": tanh[3].output + 1.0},
                          tanh[5].id: {"inputs": (nan_input,)}})  # fmt: skip
    result = _same(graph)
    reasons = {s.node: s.reason for s in result.skips}
    assert reasons[tanh[3].id] == "replay failed: NotReplayable"
    assert reasons[tanh[5].id].startswith("NaN values")
    assert len(reasons) == 2


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64"])
def test_rule_table_cases_give_the_same_results(dtype):
    for case in CASES:
        inputs = [
            tp.asarray(x.astype(dtype), requires_grad=True)
            if x.dtype.kind == "f"
            else tp.asarray(x)
            for x in case.inputs()
        ]
        with np.errstate(all="ignore"):
            graph = capture_call(lambda *a, c=case: c.fn(*a) + c.fn(*a), inputs)
            _same(graph)


def _same_kernel(graph):
    one = kernel_check(graph, include_spec=True, batch_size=1)
    many = kernel_check(graph, include_spec=True, batch_size=64)
    assert [f.message for f in many.findings] == [f.message for f in one.findings]
    assert many.skips == one.skips and many.notes == one.notes
    assert (many.checked, many.skipped) == (one.checked, one.skipped)
    return many


def test_kernel_check_batched_passes_the_same_way():
    result = _same_kernel(capture_call(_layers, _mlp_inputs()))
    assert result.passed and result.checked > 80


def test_kernel_check_batched_finds_a_planted_kernel_bug_at_every_node(backend_factory):
    name = backend_factory("planted_tanh_b", TANH=lambda a: np.tanh(a) * np.float32(1.01))
    inputs = [x.detach().to(backend=name).requires_grad_() for x in _mlp_inputs()]
    result = _same_kernel(capture_call(_layers, inputs))
    assert [f.name for f in result.findings] == ["TanhBackward"] * 12
