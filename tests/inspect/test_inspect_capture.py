"""Capture: what a graph record holds, policies, value policy, errors, read-only capture."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tpx as tp
import tpx_inspect
from tests.helpers.load import load_example
from tests.inspect._inspect_graphs import chain_capture, small_capture
from tpx_inspect import Policy


def test_nodes_are_topological_with_kinds_edges_and_sources():
    g = small_capture().trace.graphs[0]
    assert [n.id for n in g.nodes] == list(range(len(g.nodes)))
    assert [(n.kind, n.title) for n in g.nodes] == [
        ("param", "w"), ("op", "matmul"), ("op", "tanh"), ("op", "add"), ("op", "getitem"),
        ("loss", "sum"),
    ]  # fmt: skip
    for n in g.nodes:
        assert all(e.src is None or e.src < n.id for e in n.inputs)
    mm = g.find(op="matmul")[0]
    assert [(e.src, e.shape, e.dtype) for e in mm.inputs] == [
        (None, (4, 3), "float32"), (0, (3, 2), "float32"),
    ]  # fmt: skip
    assert mm.scope == "enc.proj" and mm.shape == (4, 2) and mm.dtype == "float32"
    assert mm.source.file == "_inspect_graphs.py" and mm.source.function == "small_capture"
    add = g.find(op="add")[0]
    assert add.scope == "enc" and [e.src for e in add.inputs] == [2, 2]
    assert g.find(op="getitem")[0].params == {
        "key": [{"slice": [1, None, None]}, {"slice": [None, None, None]}]
    }


def test_lookup_by_scope_op_source_and_consumers():
    g = small_capture().trace.graphs[0]
    assert [n.op for n in g.find(scope="enc")] == ["matmul", "tanh", "add"]
    assert [n.op for n in g.find(scope="enc.proj")] == ["matmul", "tanh"]
    line = g.find(op="matmul")[0].source.line
    assert [n.op for n in g.find(source=f"_inspect_graphs.py:{line}")] == ["matmul", "tanh"]
    assert [n.op for n in g.find(source=line)] == ["matmul", "tanh"]
    assert [n.id for n in g.consumers(2)] == [3]
    assert [n and n.id for n in g.input_nodes(1)] == [None, 0]
    with pytest.raises(KeyError, match="no node 99"):
        g.node(99)


def test_backward_record_order_grads_accumulation_and_release():
    g = small_capture().trace.graphs[0]
    assert [n.op for n in g.backward_order] == ["sum", "getitem", "add", "tanh", "matmul", None]
    assert g.order == (5, 4, 3, 2, 1, 0)
    # the diamond: two contributions from add summed into tanh's gradient
    into_tanh = [a for a in g.accumulations if a.target == 2]
    assert [a.source for a in into_tanh] == [3, 3]
    assert into_tanh[1].total.norm == pytest.approx(2 * into_tanh[0].contribution.norm)
    grad_w = g.grad(0)
    assert grad_w.shape == (3, 2) and grad_w.value is not None
    tanh = g.stats[2]
    assert tanh.released == tanh.order  # tanh saved its output; freed when it ran
    assert g.node(2).saved and g.node(2).saved[0].slot == -1
    assert g.node(2).saved_bytes == 4 * 2 * 4
    assert g.peak_saved_bytes >= g.node(2).saved_bytes
    assert g.stats[3].released is None  # add saves nothing


def test_node_values_replay_the_matmul_offline():
    g = small_capture().trace.graphs[0]
    v = g.node_values(1)
    x, w = v.inputs
    np.testing.assert_allclose(v.output, x @ w, rtol=1e-6)
    np.testing.assert_allclose(v.grads_out[1], x.T @ v.grad, rtol=1e-5)
    assert v.grads_out[0] is None  # x needs no grad


def test_summaries_count_nan_inf_zero_and_preview():
    s = tpx_inspect.summarize(np.array([0.0, np.nan, np.inf, -2.0, 4.0], np.float32))
    assert (s.nan, s.inf, s.zeros, s.min, s.max) == (1, 1, 1, -2.0, 4.0)
    assert s.mean == pytest.approx(2 / 3) and s.norm == pytest.approx(np.sqrt(20))
    assert s.preview[:2] == (0.0, 0.0) or np.isnan(s.preview[1])
    assert not s.finite
    assert tpx_inspect.summarize(np.zeros((0, 3))).min is None


def test_value_policy_none_small_all():
    def values(**kw):
        g = small_capture(**kw).trace.graphs[0]
        return [g.value(g.stats[i].output) is not None for i in range(len(g.nodes))]

    assert not any(values(values="none"))
    assert all(values(values="all"))
    # x (4x3=12 elements) is over the limit, w (6) is not
    small = values(values="small", value_limit=6)
    assert small[0] and not small[1]
    with pytest.raises(ValueError, match="values must be one of"):
        tpx_inspect.capture(values="some")


def _loop(steps: int, policy, bad_step: int | None = None, **kw):
    w = tp.ones(3, requires_grad=True)
    with tpx_inspect.capture(policy, timing=False, **kw) as cap:
        for i in range(steps):
            scale = float("nan") if i == bad_step else 1.0
            ((w * scale).exp()).sum().backward()
    return cap.trace


def test_policies_first_every_nonfinite_all():
    assert [g.step for g in _loop(6, "all").graphs] == [0, 1, 2, 3, 4, 5]
    assert [g.step for g in _loop(6, "first:2").graphs] == [0, 1]
    assert [g.step for g in _loop(7, "every:3").graphs] == [0, 3, 6]
    t = _loop(6, "nonfinite", bad_step=4)
    assert [g.step for g in t.graphs] == [4] and not t.graphs[0].finite
    assert [g.step for g in _loop(6, "first:1,nonfinite", bad_step=4).graphs] == [0, 4]
    assert t.run().steps == 6
    with pytest.raises(ValueError, match="unknown capture policy"):
        Policy.parse("sometimes")
    with pytest.raises(ValueError, match="positive integer"):
        Policy(every=0)


def test_identical_structures_share_nodes_and_keep_per_step_stats():
    t = _loop(5, "all")
    gs = t.graphs
    assert [g.detail for g in gs] == ["full", "stats", "stats", "stats", "stats"]
    assert all(g.nodes is gs[0].nodes and g.structure == 0 for g in gs)
    assert gs[3].grad(0).norm == pytest.approx(gs[0].grad(0).norm)
    assert gs[3].stats[1].output.preview == ()  # stats detail: no preview, no values


def test_a_nonfinite_step_of_a_known_structure_is_kept_in_full():
    gs = _loop(4, "all", bad_step=2).graphs
    assert [g.detail for g in gs] == ["full", "stats", "full", "stats"]
    assert gs[2].grad(0).nan == 3


@pytest.mark.slow
def test_ten_thousand_steps_stay_small(tmp_path):
    t = _loop(10_000, "all")
    paths = tpx_inspect.save(t, str(tmp_path / "long.json"))
    total = sum(os.path.getsize(p) for p in paths)
    assert len(t.graphs) == 10_000 and total < 10_000 * 1_000  # under 1 kB per step


def test_add_roots_records_a_graph_without_backward():
    with tpx_inspect.capture() as cap:
        x = tp.ones(2, requires_grad=True)
        y = (x * 3).exp()
        g = cap.add(y)
    assert g.kind == "roots" and g.step == -1 and g.order == ()
    assert [n.op for n in g.nodes] == [None, "mul", "exp"]
    assert g.output(2).min == pytest.approx(np.exp(3))
    with pytest.raises(TypeError, match="require grad"):
        cap.add(tp.ones(2))


def test_decorator_and_trace_function():
    cap = tpx_inspect.capture()

    @cap
    def step(x):
        (x * x).sum().backward()

    step(tp.ones(2, requires_grad=True))
    step(tp.ones(2, requires_grad=True))
    assert len(cap.trace.graphs) == 2 and cap.trace.run().status == "ok"
    t = tpx_inspect.trace(lambda: tp.ones(2, requires_grad=True).exp().sum().backward())
    assert [n.op for n in t.graphs[0].nodes] == [None, "exp", "sum"]


def test_timing_is_recorded():
    with tpx_inspect.capture() as cap:
        x = tp.ones((8, 8), requires_grad=True)
        (x @ x).sum().backward()
    g = cap.trace.graphs[0]
    assert g.stats[1].forward_seconds > 0 and g.stats[1].backward_seconds > 0


def test_an_error_is_recorded_and_the_trace_is_saved(tmp_path):
    path = str(tmp_path / "crash.json")
    with pytest.raises(RuntimeError, match="boom"), tpx_inspect.capture(path=path):
        x = tp.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        y = (x + 1).exp()  # recorded, never backwarded
        assert y.requires_grad
        raise RuntimeError("boom")
    t = tpx_inspect.load(path)
    run = t.run()
    assert run.status == "error" and run.error.type == "RuntimeError"
    assert "boom" in run.error.message and "Traceback" in run.error.traceback
    assert [g.kind for g in t.graphs] == ["backward", "partial"]
    assert [n.op for n in t.graphs[1].nodes] == [None, "add", "exp"]


def test_run_script_keeps_the_trace_of_a_crashing_script(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(
        "import sys\n"
        "import tpx as tp\n"
        "x = tp.ones(3, requires_grad=True)\n"
        "(x * 2).sum().backward()\n"
        "assert sys.argv[1:] == ['--lr', '1']\n"
        "raise ValueError('diverged at step 1')\n"
    )
    out = str(tmp_path / "out.json")
    result = tpx_inspect.run_script(str(script), ["--lr", "1"], output=out)
    assert isinstance(result.error, ValueError) and result.exit_code == 1
    t = tpx_inspect.load(out)
    assert t.run().status == "error" and "diverged" in t.run().error.message
    assert [n.op for n in t.graphs[0].nodes] == [None, "mul", "sum"]
    assert sys.argv[0] != str(script)


def test_run_script_exit_zero_is_not_an_error(tmp_path):
    script = tmp_path / "ok.py"
    script.write_text("import sys\nsys.exit(0)\n")
    result = tpx_inspect.run_script(str(script), output=str(tmp_path / "ok.json"))
    assert result.error is None and result.exit_code == 0
    assert tpx_inspect.load(str(tmp_path / "ok.json")).run().status == "ok"


def _train(capture: bool) -> list[np.ndarray]:
    import tpx.nn.functional as F
    import tpx.optim as optim

    example = load_example("train_mlp")
    model = example.build_model(hidden=16, seed=3)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    data = example.batches(batch_size=16, seed=3)
    cap = tpx_inspect.capture("all", values="all", params=model.named_parameters())
    with cap if capture else _Null():
        for _ in range(4):
            x, y = next(data)
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    if capture:
        assert len(cap.trace.graphs) == 4
    return [np.array(p.numpy()) for p in model.parameters()]


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_capture_only_reads_results_are_bitwise_identical():
    plain, captured = _train(False), _train(True)
    assert len(plain) == len(captured)
    for a, b in zip(plain, captured):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_capture_labels_parameters_from_named_parameters():
    w = tp.ones((2, 2), requires_grad=True)
    b = tp.zeros(2, requires_grad=True)
    with tpx_inspect.capture(params=[("fc.weight", w), ("fc.bias", b)]) as cap:
        (tp.ones((1, 2)) @ w + b).sum().backward()
    nodes = cap.trace.graphs[0].nodes
    assert [(n.kind, n.label) for n in nodes if n.op is None] == [
        ("param", "fc.weight"), ("param", "fc.bias"),
    ]  # fmt: skip


def test_capture_labels_a_models_parameters_by_their_paths_without_params():
    import tpx.nn as nn

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = tp.ones((1, 3), requires_grad=True)  # an unnamed leaf stays "leaf"
    with tpx_inspect.capture() as cap:
        model(x).sum().backward()
    leaves = [(n.kind, n.label) for n in cap.trace.graphs[0].nodes if n.op is None]
    assert sorted(leaves) == [
        ("leaf", ""), ("param", "model.0.bias"), ("param", "model.0.weight"),
        ("param", "model.2.bias"), ("param", "model.2.weight"),
    ]  # fmt: skip


def test_explicit_params_win_over_tensor_names():
    w = tp.ones((2, 2), requires_grad=True)
    b = tp.zeros(2, requires_grad=True)
    w.name, b.name = "from.name", "bias.name"
    with tpx_inspect.capture(params={"explicit": w}) as cap:
        (tp.ones((1, 2)) @ w + b).sum().backward()
    leaves = [(n.kind, n.label) for n in cap.trace.graphs[0].nodes if n.op is None]
    assert leaves == [("param", "explicit"), ("param", "bias.name")]


def test_a_deep_chain_is_captured_with_ids_in_order():
    g = chain_capture(2_000).trace.graphs[0]
    assert len(g.nodes) == 2_002 and g.order[0] == 2_001


def test_double_backward_and_tpx_grad_are_captured():
    with tpx_inspect.capture("all") as cap:
        x = tp.asarray([1.0, 2.0], requires_grad=True)
        (g,) = tp.grad((x**3).sum(), x, create_graph=True)
        g.sum().backward()
    first, second = cap.trace.graphs
    assert [n.op for n in first.nodes] == [None, "pow", "sum"]
    assert second.grad(0).preview == (6.0, 12.0)  # d/dx sum(3x^2) = 6x
