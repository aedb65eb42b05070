"""The summary statistics of captured values equal the ones made before they were made cheaper
(tests/inspect/_reference_stats.py, the old per-value code) up to float rounding: one value at
a time (C- and F-ordered, NaN, Inf, overflow, zeros, ints, bools) and whole traces of the MLP
example and of a script with planted NaN/Inf/overflow steps, captured both ways."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np
import pytest

import p10
import tpx as tp
import tpx_inspect
from tests.helpers.scripts import train_mlp_steps
from tests.inspect._reference_stats import reference_stats_row
from tpx_inspect import _batch_stats, _lazy, _pending
from tpx_inspect._verdict import _grads_finite, _memory, finite_floats
from tpx_inspect.records import Trace
from tpx_inspect.summary import stats_row

RNG = np.random.default_rng(7)


def _arrays() -> dict[str, np.ndarray]:
    a32 = RNG.standard_normal((48, 40)).astype(np.float32)
    nan = a32.copy()
    nan[3, 5], nan[7, 1], nan[0, 0] = np.nan, np.inf, -np.inf
    zeros = a32.copy()
    zeros[::3] = 0.0
    zeros[1, 1] = -0.0
    return {
        "f32_c": a32,
        "f32_f": a32.T,  # a weight's gradient: F-ordered
        "f32_strided": a32[::2, ::3],
        "f64_f": RNG.standard_normal((30, 50)).T,
        "f32_nan_inf": nan,
        "f32_nan_inf_f": nan.T,
        "all_nan": np.full(100, np.nan, np.float32),
        "only_inf": np.full((10, 10), np.inf),
        "squares_overflow_f32": np.full(64, 3e38, np.float32),
        "sum_overflow_f64": np.full(64, 1e308),
        "zeros_and_negative_zero": zeros,
        "f16": RNG.standard_normal(200).astype(np.float16),
        "int64_f": RNG.integers(-5, 5, (20, 30)).T,
        "bool": RNG.random(100) < 0.3,
        "small": a32[0, :20].copy(),
        "empty": np.zeros((0, 4), np.float32),
        "complex": np.ones(40, np.complex64),
    }


@pytest.mark.parametrize("name", list(_arrays()))
def test_stats_row_equals_the_old_code_up_to_rounding(name: str) -> None:
    a = _arrays()[name]
    with np.errstate(over="ignore", invalid="ignore"):
        got, head = stats_row(a)
        want, want_head = reference_stats_row(a)
    np.testing.assert_array_equal(head, want_head)  # NaN equal to NaN
    np.testing.assert_allclose(got[:5], want[:5], rtol=1e-9, atol=1e-12, equal_nan=True)
    assert got[5:] == want[5:]  # NaN, Inf and zero counts: exact
    assert [math.isnan(v) for v in got] == [math.isnan(v) for v in want]


def _far_from_zero() -> dict[str, np.ndarray]:
    """Values whose std/|mean| is ~1e-11 (float64) or ~1e-7 (float32): sq/n - mean**2 cancels
    every digit of their variance."""
    f64 = 1e8 + RNG.standard_normal(6000) * 1e-3
    f32 = (1e6 + RNG.standard_normal(6000) * 0.3).astype(np.float32)
    nan = f64[:3000].copy()
    nan[[0, 17, 2999]] = [np.nan, np.inf, -np.inf]
    return {
        "f64_small": f64[:24].copy(),  # summary._small_row (Python loop)
        "f64_large_f": f64.reshape(60, 100).T,  # the BLAS path, memory order
        "f32_large": f32,
        "f32_small": f32[:30].copy(),
        "f64_nan_inf": nan,  # the finite elements only (summary._moments)
        "int64": np.full(200, 10**12, np.int64) + RNG.integers(0, 3, 200),
    }


def _numpy_std(a: np.ndarray) -> float:
    f64 = a.astype(np.float64).reshape(-1)
    return float(np.std(f64[np.isfinite(f64)]))


@pytest.mark.parametrize("name", list(_far_from_zero()))
def test_std_of_values_far_from_zero(name: str) -> None:
    a = _far_from_zero()[name]
    row, _ = stats_row(a)
    assert row[3] == pytest.approx(_numpy_std(a), rel=1e-6)
    assert row[3] > 0


def test_batched_std_of_values_far_from_zero() -> None:
    arrays = [1e8 + RNG.standard_normal((4, 4)) * 1e-3 for _ in range(5)]
    arrays += [(3e5 + RNG.standard_normal((4, 4)) * 0.01).astype(np.float32) for _ in range(3)]
    arrays[1][2, 3], arrays[6][0, 0] = np.nan, np.inf
    arrays[2][:] = np.nan  # no finite element: std None (NaN)
    table = np.zeros((len(arrays), 10))
    _batch_stats.fill_rows(arrays, table, None)
    for i, a in enumerate(arrays):
        if i == 2:
            assert math.isnan(table[i, 3])
            continue
        assert table[i, 3] == pytest.approx(_numpy_std(a), rel=1e-6), i
        # NOTE: the stacked reductions give stats_row's numbers bit for bit
        assert table[i, :8].tolist() == pytest.approx(stats_row(a)[0], rel=0, abs=0), i


def test_lazy_std_of_values_far_from_zero() -> None:
    pytest.importorskip("dask")
    a = 1e8 + RNG.standard_normal(_lazy.FETCH_WHOLE * 2) * 1e-3
    a[5] = np.nan
    with p10.use_backend("dask"):
        x = p10.asarray(a)
        rows = _lazy.summarize_lazy([x], lambda _: False, lambda row, head, value: row)
    row = rows[id(x)]
    assert row[3] == pytest.approx(_numpy_std(a), rel=1e-6)
    assert row[5:] == [1.0, 0.0, 0.0]


def test_finite_floats_on_transposed_and_strided_gradients() -> None:
    for name, a in _arrays().items():
        if a.dtype.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):
                assert finite_floats(a) == bool(np.isfinite(a).all()), name
    base = RNG.standard_normal((30, 20)).astype(np.float32)
    for a in (base.copy(), base.copy().T, base.copy()[::2]):
        for pos in [(0, 0), (-1, -1), (5, 3), (0, -1)]:
            for bad in (np.nan, np.inf, -np.inf):
                b = a.copy(order="K") if a.flags.forc else a.copy()
                b[pos] = bad
                assert not finite_floats(b), (b.flags.f_contiguous, pos, bad)


def test_gradients_sharing_memory_are_tested_once_and_nothing_else_is_skipped() -> None:
    base = RNG.standard_normal((6, 4)).astype(np.float32)
    same = {"base": base, "transposed": base.T, "reshaped": base.reshape(24)}
    other = {
        "rows": base[::2],
        "first_rows": base[:3],
        "reinterpreted": base.view(np.int32),
        "as_float64": base.view(np.float64),
        "copy": base.T.copy(),
    }
    assert {_memory(a) for a in same.values()} == {id(base)}
    assert all(_memory(a) == id(a) for a in other.values())
    # NOTE: a NaN only in memory seen through a skipped view is still found by the other
    for pos in [(0, 0), (5, 3), (2, 1)]:
        bad = base.copy()
        bad[pos] = np.nan
        for first in (bad, bad.T):
            second = bad.T if first is bad else bad
            assert not _grads_finite([first, second])
        # NOTE: a view of part of the memory is tested on its own, and never stands in for
        # the whole: the NaN outside it is still found when the whole comes after it
        for part in (bad[::2], bad[:3], bad[3:], bad.view(np.int32)):
            listed = [part, bad]
            assert not _grads_finite(listed)
            alone = part.dtype.kind != "f" or np.isfinite(part).all()
            assert _grads_finite(listed[:1]) == alone


def _old_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pending, "stats_row", reference_stats_row)
    monkeypatch.setattr(_batch_stats, "stats_row", reference_stats_row)


def _captured(script: Callable[[], None], policy: str | None) -> Trace:
    opts = {"values": "small", "timing": False}
    cap = tpx_inspect.capture(**opts) if policy is None else tpx_inspect.capture(policy, **opts)
    with cap:
        script()
    return cap.trace


def _assert_same_traces(new: Trace, old: Trace) -> int:
    assert len(new.graphs) == len(old.graphs)
    rows = 0
    for g, w in zip(new.graphs, old.graphs):
        assert (g.step, g.detail, g.structure) == (w.step, w.detail, w.structure)
        for name in type(g.tables).__dataclass_fields__:
            got, want = getattr(g.tables, name), getattr(w.tables, name)
            assert got.shape == want.shape and got.dtype == want.dtype, name
            if name != "summaries":
                assert np.array_equal(got, want, equal_nan=True), name
        s, r = g.tables.summaries, w.tables.summaries
        np.testing.assert_allclose(s[:, :5], r[:, :5], rtol=1e-9, atol=1e-12, equal_nan=True)
        assert np.array_equal(s[:, 5:], r[:, 5:], equal_nan=True)  # counts, value ids
        rows += len(s)
    for i in range(len(old.graphs[0].values) if old.graphs else 0):
        assert np.array_equal(new.graphs[0].values.get(i), old.graphs[0].values.get(i), True)
    return rows


def _planted() -> None:
    """Steps of a (48, 40) float32 layer (F-ordered weight gradients); step 2 overflows to
    Inf, step 3 has a NaN planted in its input, step 4 overflows the squares only."""
    w = tp.asarray(RNG.standard_normal((40, 40)).astype(np.float32), requires_grad=True)
    for step in range(6):
        x = RNG.standard_normal((48, 40)).astype(np.float32)
        if step == 3:
            x[5, 7] = np.nan
        scale = {2: 1e30, 4: 1e10}.get(step, 1.0)
        y = (tp.asarray(x) @ w).tanh() * scale
        (y * y).mean().backward()


@pytest.mark.parametrize("policy", [None, "all"])
def test_mlp_trace_equals_the_old_way(monkeypatch: pytest.MonkeyPatch, policy: str | None) -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        new = _captured(partial(train_mlp_steps, 12), policy)
        _old_way(monkeypatch)
        old = _captured(partial(train_mlp_steps, 12), policy)
    assert len(new.graphs) == (10 if policy is None else 12)
    assert _assert_same_traces(new, old) > 300


def test_planted_nonfinite_trace_equals_the_old_way(monkeypatch: pytest.MonkeyPatch) -> None:
    seed = RNG.bit_generator.state
    with np.errstate(over="ignore", invalid="ignore"):
        new = _captured(_planted, "first:1,nonfinite")
        RNG.bit_generator.state = seed
        _old_way(monkeypatch)
        old = _captured(_planted, "first:1,nonfinite")
    assert [g.step for g in new.graphs] == [0, 2, 3]  # the overflow and the NaN kept
    assert _assert_same_traces(new, old) > 0
    assert new.graphs[1].tables.summaries[:, 5:7].sum() != 0  # an Inf counted


@pytest.mark.parametrize("values", ["small", "all", "none"])
@pytest.mark.parametrize("size", [40, _pending.LAZY + 1])
def test_kept_summaries_are_of_the_value_at_forward(values: str, size: int) -> None:
    """A value summarized when first read (up to LAZY elements) or at forward (larger) has
    the statistics and preview of the value at forward, though written in place before the
    backward; the kept value too."""
    x = tp.asarray(RNG.standard_normal(size).astype(np.float32), requires_grad=True)
    with tpx_inspect.capture("all", values=values, value_limit=10**6) as cap:
        y = x * 2.0  # no rule saves y: writing into it leaves the backward intact
        at_forward = y.numpy().copy()
        z = y + 1.0
        with tp.no_grad():
            y.mul_(-3.0)
        z.sum().backward()
    g = cap.trace.graphs[0]
    [mul] = g.find(op="mul")
    out = g.output(mul.id)
    assert out.mean == pytest.approx(float(at_forward.astype(np.float64).mean()), rel=1e-5)
    assert (out.min, out.max) == (float(at_forward.min()), float(at_forward.max()))
    assert out.preview == tuple(at_forward[: len(out.preview)].tolist()) and out.preview
    kept = g.value(out)
    assert (kept is None) == (values == "none")
    if kept is not None:
        np.testing.assert_array_equal(kept, at_forward)


def test_a_nonfinite_value_planted_in_each_gradient_position_keeps_its_step() -> None:
    """The verdict of a step not kept reads every incoming gradient: a NaN/Inf planted (by a
    pre-hook) in the gradient that reaches any one node of an MLP step, at its first, last or
    a middle element, keeps that step; the same step without a plant is not kept."""
    import tpx.nn as nn

    p10.manual_seed(3)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
    x = tp.asarray(RNG.standard_normal((6, 8)).astype(np.float32))

    def step(plant: int | None, bad: float, where: int) -> int:
        with tpx_inspect.capture("first:0,nonfinite", timing=False) as cap:
            loss = (model(x) * model(x)).mean()  # the layers' nodes run twice: shared grads
            order = tp.reachable([loss.grad_fn])
            if plant is not None:
                order[plant].register_prehook(partial(_plant, bad=bad, where=where))
            loss.backward()
        return len(cap.trace.graphs), len(order)

    assert step(None, np.nan, 0)[0] == 0
    n = step(None, np.nan, 0)[1]
    assert n > 15
    with np.errstate(over="ignore", invalid="ignore"):  # the kept steps' statistics
        for k in range(n):
            bad = (np.nan, np.inf, -np.inf)[k % 3]
            where = (0, -1, 7)[k % 3]
            assert step(k, bad, where)[0] == 1, (k, bad, where)


def _plant(node: object, g: p10.Tensor, bad: float, where: int) -> p10.Tensor:
    a = np.array(g, copy=True)
    a.reshape(-1)[where % a.size] = bad
    return p10.asarray(a)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_nonfinite_root_value_with_finite_gradients_keeps_its_step(bad: float) -> None:
    x = tp.asarray(np.ones(3, np.float32), requires_grad=True)
    with tpx_inspect.capture("first:0,nonfinite", timing=False) as cap:
        with np.errstate(invalid="ignore"):
            ((x * 0.0).sum() + bad).backward()  # every gradient finite (ones, zeros)
        (x * 0.0).sum().backward()
    assert [g.step for g in cap.trace.graphs] == [0]
    assert np.isfinite(x.grad.numpy()).all()
