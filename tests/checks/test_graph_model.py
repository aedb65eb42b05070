"""The checks read one graph model, the captured ``records.Graph``: recorded live or loaded from
a saved trace, the same graph gives the same verdicts, and what only a live run knows (the rule
objects, hooks, ``tpx.grad``) is carried by ``graph.live``."""

from __future__ import annotations

import numpy as np

import p10
import tpx as tp
import tpx_inspect
from p10 import Op
from tpx_inspect import checks
from tpx_inspect.checks import record, run_graph_checks, with_functions
from tpx_inspect.records import Graph


def _model(x, w):
    with tp.scope("enc"):
        h = (x @ w).sin()
    return (h * h + h.exp()).sum()


def _inputs():
    rng = np.random.default_rng(3)
    x = tp.asarray(rng.standard_normal((2, 3)), requires_grad=True)
    w = tp.asarray(rng.standard_normal((3, 2)), requires_grad=True)
    return x, w


def _verdicts(report):
    return [
        (r.check, r.checked, r.skipped, [(f.category, f.node, f.op, f.name) for f in r.findings])
        for r in report.results
    ]


def test_there_is_no_second_graph_model():
    assert not hasattr(checks, "GraphRecord")
    with record() as rec:
        _model(*_inputs()).backward()
    assert type(rec.graph()) is Graph


def test_live_and_saved_graphs_give_the_same_verdicts(tmp_path):
    handle = tp.register_rule(Op.SIN, lambda ctx, g: (g * p10.sin(ctx.inputs[0]),), save=(0,))
    try:
        with record() as rec:
            _model(*_inputs()).backward()
        with tpx_inspect.capture(values="all", timing=False) as cap:
            _model(*_inputs()).backward()
    finally:
        handle.remove()
    path, _ = tpx_inspect.save(cap.trace, str(tmp_path / "t.json"))
    saved = tpx_inspect.load(path).graphs[0]
    live = run_graph_checks(rec.graph())
    offline = run_graph_checks(with_functions(saved))
    assert live.result("local").findings[0].op == "sin"
    assert _verdicts(offline) == _verdicts(live)


def test_live_info_carries_hooks_and_tpx_grad():
    with record() as rec:
        x = tp.asarray([0.5, 1.5], requires_grad=True)
        h = x.sin()
        h.register_hook(lambda g: g * 2.0)
        (h * h).sum().backward()
        tp.grad((x * 3.0).sum(), [x])
    first, second = rec.graphs
    assert first.live.hooked == {1} and not first.live.partial
    assert second.live.partial and second.backwards[0].partial
    assert first.replay_node(1).hooked and first.replay_node(1).name == "SinBackward"
