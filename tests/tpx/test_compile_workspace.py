"""Workspace arrays (tpx._plan_workspace): a replay writes its large temporaries with ``out=``
into arrays the plan keeps, bit for bit as eager; a buffer handed out while its value is
still live is caught; what leaves the plan, what a view shares, what eager made in another
memory order and a second replay running at the same time never get one."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import tpx as tp
from tpx import _plan_workspace


@pytest.fixture(autouse=True)
def _workspace_on(monkeypatch: Any) -> None:
    """Workspace arrays are off by default; these tests turn them on (16 kB and more)."""
    monkeypatch.setattr(_plan_workspace, "MIN_BYTES", 1 << 14)


SIZES = (256, 128, 64, 10)  # 64x128 float32 temporaries: above the 16 kB workspace floor


def _net(seed: int = 0) -> tuple[list[tp.Tensor], tp.Tensor, tp.Tensor]:
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        params += [tp.asarray(w, requires_grad=True), tp.asarray(np.zeros(fan_out, np.float32))]
    for b in params[1::2]:
        b.requires_grad_(True)
    x = tp.asarray(rng.standard_normal((64, SIZES[0])).astype(np.float32))
    onehot = tp.asarray(np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], 64)])
    return params, x, onehot


def _sgd_step(params: list[tp.Tensor], x: tp.Tensor, onehot: tp.Tensor) -> Any:
    def step() -> tp.Tensor:
        w1, b1, w2, b2, w3, b3 = params
        h = (x @ w1 + b1).relu()
        h = (h @ w2 + b2).relu()
        logp = tp.log_softmax(h @ w3 + b3, axis=-1)
        loss = -(logp * onehot).sum() / 64
        loss.backward()
        with tp.no_grad():
            for p in params:
                p -= 0.05 * p.grad
                p.grad = None
        return loss.detach()

    return step


def _train(compiled: bool, calls: int = 5) -> list[bytes]:
    params, x, onehot = _net()
    step = _sgd_step(params, x, onehot)
    run = tp.compile(step) if compiled else step
    losses = [run().numpy().tobytes() for _ in range(calls)]
    return losses + [p.numpy().tobytes() for p in params]


def _plan(fn: tp.CompiledFunction) -> Any:
    return fn.plans()[-1]


def test_an_mlp_step_writes_its_temporaries_into_workspace_arrays_bitwise_as_eager() -> None:
    params, x, onehot = _net()
    fn = tp.compile(_sgd_step(params, x, onehot))
    fn()
    fn()
    plan = _plan(fn)
    assert plan.workspace_bytes > 0
    assert any(seg.workspace for seg in plan.segments)
    assert "out=w" in plan.segments[0].run.source
    assert plan.peak_bytes <= plan.eager_peak_bytes
    assert _train(True) == _train(False)


def test_a_buffer_handed_out_while_its_value_is_live_fails_the_comparison(
    monkeypatch: Any,
) -> None:
    """Planted bug: every workspace array goes back to the pool right after its kernel, so
    the next temporary of the same shape overwrites a value that is still to be read."""
    rng = np.random.default_rng(4)
    a = tp.asarray(rng.standard_normal((64, 128)).astype(np.float32))
    b = tp.asarray(rng.standard_normal((128, 128)).astype(np.float32))

    def fn(a: tp.Tensor, b: tp.Tensor) -> tp.Tensor:
        t1 = a @ b
        t2 = (a * 2.0) @ b  # the same shape as t1, made while t1 is live
        return (t1 - t2).sum(axis=0)

    def replays() -> bool:
        compiled = tp.compile(fn)
        outs = [compiled(a, b).numpy().tobytes() for _ in range(3)]
        assert _plan(compiled).workspace_bytes > 0
        return outs == [fn(a, b).numpy().tobytes()] * 3

    assert replays()
    monkeypatch.setattr(_plan_workspace, "free_after", lambda ends, root: -1)
    assert not replays()


def test_returned_values_and_views_never_live_in_a_workspace_array() -> None:
    rng = np.random.default_rng(1)
    a = tp.asarray(rng.standard_normal((64, 64)).astype(np.float32))
    b = tp.asarray(rng.standard_normal((64, 64)).astype(np.float32))

    def fn(a: tp.Tensor, b: tp.Tensor) -> tuple[tp.Tensor, tp.Tensor]:
        t = a @ b  # read through a view below: shares memory, so no workspace
        u = (t.T @ b) * 2.0
        return u, (a * b) @ b  # returned: leaves the plan

    compiled = tp.compile(fn)
    outs = [compiled(a, b) for _ in range(3)]
    kept = [o.numpy().copy() for o in outs[0]]
    outs.append(compiled(a * 2.0, b))
    assert [o.numpy().tobytes() for o in outs[0]] == [k.tobytes() for k in kept]
    plan = _plan(compiled)
    for seg in plan.segments:
        written = {seg.steps[k].out for k in seg.workspace}
        assert not written & set(plan.output_slots)
        assert not written & plan.aliased
    expected = fn(a * 2.0, b)
    assert [o.numpy().tobytes() for o in outs[-1]] == [e.numpy().tobytes() for e in expected]


def test_a_result_eager_made_in_fortran_order_keeps_a_fresh_array() -> None:
    rng = np.random.default_rng(2)
    a = tp.asarray(rng.standard_normal((64, 96)).astype(np.float32))
    b = tp.asarray(rng.standard_normal((64, 80)).astype(np.float32))

    def fn(a: tp.Tensor, b: tp.Tensor) -> tp.Tensor:
        f = a.T * 3.0  # elementwise on a transposed view: NumPy keeps the Fortran order
        return (f @ b).sum()

    compiled = tp.compile(fn)
    for _ in range(3):
        assert compiled(a, b).numpy().tobytes() == fn(a, b).numpy().tobytes()
    plan = _plan(compiled)
    mul = [k for k, s in enumerate(plan.segments[0].steps) if s.op == "mul"]
    assert mul and not set(mul) & set(plan.segments[0].workspace)
    assert any(plan.segments[0].workspace)  # the matmul's own result still gets one


def test_a_replay_that_finds_the_plan_busy_runs_without_the_workspace() -> None:
    params, x, onehot = _net()
    fn = tp.compile(_sgd_step(params, x, onehot))
    fn()
    fn()
    plan = _plan(fn)
    with plan.busy:  # as a replay re-entered from an island would find it
        fn()
    assert "out=" not in plan.segments[0].plain_run.source
    eager_params, ex, eo = _net()
    eager = _sgd_step(eager_params, ex, eo)
    for _ in range(3):
        eager()
    assert [p.numpy().tobytes() for p in params] == [p.numpy().tobytes() for p in eager_params]


def test_replays_in_threads_at_the_same_time_each_get_their_own_values() -> None:
    rng = np.random.default_rng(3)
    b = tp.asarray(rng.standard_normal((128, 128)).astype(np.float32))

    def fn(a: tp.Tensor) -> tp.Tensor:
        return (((a @ b) * 0.5 + 1.0) @ b).sum(axis=0)

    compiled = tp.compile(fn)
    inputs = [tp.asarray(rng.standard_normal((64, 128)).astype(np.float32)) for _ in range(8)]
    compiled(inputs[0])
    compiled(inputs[0])
    assert _plan(compiled).workspace_bytes > 0
    results: dict[int, list[bytes]] = {}

    def work(k: int) -> None:
        results[k] = [compiled(inputs[k]).numpy().tobytes() for _ in range(10)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, a in enumerate(inputs):
        assert set(results[k]) == {fn(a).numpy().tobytes()}
