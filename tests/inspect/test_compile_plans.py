"""A tpx.compile plan captured into a trace: saved, loaded, validated; optional in old traces."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tpx as tp
import tpx.optim as optim
import tpx_inspect
from tpx_inspect.errors import TraceFormatError


def _step() -> tp.CompiledFunction:
    rng = np.random.default_rng(0)
    w = tp.asarray(rng.normal(size=(4, 3)).astype(np.float32), requires_grad=True)
    opt = optim.SGD([w], lr=0.1)

    def step(x: tp.Tensor) -> tp.Tensor:
        opt.zero_grad()
        loss = (x @ w).tanh().sum()
        loss.backward()
        return loss

    return tp.compile(step)


def test_plan_is_captured_saved_and_loaded(tmp_path) -> None:
    x = tp.ones((2, 4))
    trace = tpx_inspect.capture_plan(_step(), x, name="train")
    (plan,) = trace.plans
    assert plan["name"] == "train" and plan["peak_bytes"] <= plan["eager_peak_bytes"]
    ops = [k["op"] for k in plan["kernels"]]
    assert ops[:2] == ["matmul", "tanh"]
    assert {"MatmulBackward", "TanhBackward"} <= {k["node"] for k in plan["kernels"]}
    assert {k["phase"] for k in plan["kernels"]} >= {"forward", "backward"}
    assert all(b["first"] <= b["last"] for b in plan["buffers"] if b["first"] >= 0)
    # each kernel links to the captured node it came from (graph id and node id of the trace)
    linked = [k for k in plan["kernels"] if k["node_id"] is not None]
    assert len(linked) >= len(plan["kernels"]) - 2  # the optimizer's island steps: no node
    graphs = {g.id: g for g in trace.graphs}
    for k in linked:
        assert graphs[k["graph"]].nodes[k["node_id"]].name == k["node"], k
    path = str(tmp_path / "t.json")
    tpx_inspect.save(trace, path)
    loaded = tpx_inspect.load(path)
    assert loaded.plans[0]["kernels"] == json.loads(json.dumps(plan["kernels"]))
    assert len(loaded.graphs) == 1


def test_a_lowered_optimizer_step_is_captured_with_its_labels() -> None:
    rng = np.random.default_rng(0)
    w = tp.asarray(rng.normal(size=(4, 3)).astype(np.float32), requires_grad=True)
    opt = optim.Adam([w], lr=0.1)

    def step(x: tp.Tensor) -> None:
        opt.zero_grad()
        (x @ w).tanh().sum().backward()
        opt.step()

    trace = tpx_inspect.capture_plan(tp.compile(step), tp.ones((2, 4)))
    (plan,) = trace.plans
    steps = [k for k in plan["kernels"] if k["phase"] == "optimizer"]
    assert plan["optimizer_steps"] == 1 and len(steps) >= 8
    assert {k["node"] for k in steps} == {"Adam group 0 param 0"}
    assert all(k["node_id"] is None for k in steps)  # made by no GradFn node
    backward = [k for k in plan["kernels"] if k["phase"] == "backward"]
    assert backward and all(k["node_id"] is not None for k in backward)
    assert len(plan["kernel_seconds"]) == len(plan["kernels"])


def test_old_traces_without_plans_load_and_bad_plans_are_refused(tmp_path) -> None:
    x = tp.ones(2, requires_grad=True)
    doc, _ = tpx_inspect.to_json(tpx_inspect.trace(lambda: x.exp().sum().backward()), inline=True)
    assert "plans" not in doc
    assert tpx_inspect.format.from_json(doc).plans == ()
    doc["plans"] = [{"kernels": []}]
    with pytest.raises(TraceFormatError, match="plans"):
        tpx_inspect.format.from_json(doc)
