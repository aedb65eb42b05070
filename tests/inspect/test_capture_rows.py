"""The value tables of every captured graph equal those made the readable way, one value at a
time (tests/inspect/_reference_rows.py): same rows, summaries, previews, times, edges and kept
values, for each value policy, a planted NaN, a lazy backend and the MLP example."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import p10
import tpx as tp
import tpx_inspect
from tests.helpers.scripts import train_mlp_steps
from tests.inspect._reference_rows import reference_tables
from tpx_inspect import _build
from tpx_inspect._batch_stats import BatchStore
from tpx_inspect.checks import record


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Build every graph's tables both ways and compare them; yields the list of the
    numbers of values compared per graph."""
    built = _build.GraphBuilder._tables
    counts: list[int] = []

    def both(self: Any, raw: list, pend: list, ex: dict, b: Any, index: dict, full: bool) -> Any:
        n0 = len(self.store)
        ref_store = BatchStore([np.zeros(0)] * n0)
        proxy = types.SimpleNamespace(
            store=ref_store,
            limit=self.limit,
            prefetched=self.prefetched,
            stats=self.stats,
            leaves=self.leaves,
        )
        want = reference_tables(proxy, raw, pend, ex, b, index, full)
        got = built(self, raw, pend, ex, b, index, full)
        assert (got is None) == (want is None)
        if got is None:
            return got
        ref_store.flush()
        self.store.flush()
        for name in type(got).__dataclass_fields__:
            g, w = getattr(got, name), getattr(want, name)
            assert g.dtype == w.dtype and g.shape == w.shape, name
            assert np.array_equal(g, w, equal_nan=True), name
        assert len(self.store) == len(ref_store)
        for i in range(n0, len(ref_store)):
            g, w = self.store.get(i), ref_store.get(i)
            assert g.dtype == w.dtype and g.shape == w.shape
            assert np.array_equal(g, w, equal_nan=True) and not g.flags.writeable
        counts.append(len(got.summaries))
        return got

    monkeypatch.setattr(_build.GraphBuilder, "_tables", both)
    yield counts


def _chain(n: int, c: float = 0.999) -> None:
    x = tp.asarray(np.random.default_rng(0).standard_normal((4, 4)), requires_grad=True)
    y = x
    for _ in range(n):
        y = y * c
    y.sum().backward()


def _mixed(step: int) -> None:
    """Matmul, tanh, a float32 constant, an int tensor, an empty leaf, a 5,000-element value,
    retain_graph once and a planted NaN at step 3."""
    w = tp.asarray(np.random.default_rng(step).standard_normal((40, 3)), requires_grad=True)
    x = tp.asarray(np.arange(120.0).reshape(3, 40) / 100)
    h = (x @ w).tanh() + tp.asarray(np.float32(2.0))
    z = (h * h.sum()).exp() * tp.asarray(np.arange(3))
    if step == 3:
        z = z * float("nan")
    e = tp.asarray(np.zeros((0, 3)), requires_grad=True)
    big = tp.asarray(np.arange(5000.0).reshape(50, 100) / 5000, requires_grad=True)
    loss = z.sum() + (w * 2).sum() + (e * 2).sum() + (big.sin() * 2).mean()
    loss.backward(retain_graph=(step == 1))


def _script() -> None:
    _chain(200)
    _chain(50, 1.5)  # overflows to Inf
    for s in range(4):
        _mixed(s)


OPTIONS = {
    "small": {},
    "all": {"values": "all"},
    "none": {"values": "none"},
    "raw": {"values": "raw"},
    "every step, limit 8": {"policy": "all", "value_limit": 8},
}


@pytest.mark.parametrize("options", list(OPTIONS.values()), ids=list(OPTIONS))
def test_tables_equal_the_reference(compared: list[int], options: dict) -> None:
    with tpx_inspect.capture(timing=False, **options) as cap:
        _script()
    assert len(cap.trace.graphs) >= 3 and len(compared) >= 3 and sum(compared) > 200


def test_tables_equal_the_reference_on_the_mlp(compared: list[int]) -> None:
    with tpx_inspect.capture("all", values="small") as cap:
        train_mlp_steps(3)
    assert len(cap.trace.graphs) == 3 and len(compared) == 3


def test_tables_equal_the_reference_live(compared: list[int]) -> None:
    with record() as rec:
        _chain(40)
        _mixed(3)
    assert len(rec.graphs) == 2 and len(compared) == 2


def test_tables_equal_the_reference_on_a_lazy_backend(compared: list[int]) -> None:
    pytest.importorskip("dask")
    with p10.use_backend("dask"), tpx_inspect.capture(timing=False) as cap:
        _mixed(2)
    assert len(cap.trace.graphs) == 1 and compared


@pytest.mark.parametrize("values", ["small", "all", "raw"])
def test_kept_values_are_arrays_of_their_recorded_shape(values: str) -> None:
    # NOTE: values stacked into one block are kept as views of it: a 0-d one must stay a 0-d
    # array (iterating a 1-d block gives NumPy scalars, which the live checks misread)
    with tpx_inspect.capture("all", values=values) as cap:
        x = tp.asarray(np.arange(3.0), requires_grad=True)
        ((x * 0.5) * 2.0 + tp.asarray(np.float64(-np.inf))).sum().backward()
    g = cap.trace.graphs[0]
    kept = [g.values.get(i) for i in range(len(g.values))]
    assert kept and all(type(v) is np.ndarray for v in kept)
    assert sorted({v.shape for v in kept}) == [(), (3,)]


@pytest.mark.parametrize("values", ["small", "all"])
def test_kept_0d_leaves_and_int_bool_values_are_arrays(values: str) -> None:
    # NOTE: a leaf's value and the int/bool values are copied at the build (BatchStore.flush),
    # stacked per (shape, dtype): a 0-d one must come back a 0-d array, not a NumPy scalar
    with tpx_inspect.capture("all", values=values) as cap:
        x = tp.tensor(2.0, requires_grad=True)
        y = tp.where(tp.tensor(True), x * tp.tensor(3), x)
        (y * tp.tensor(1.5, requires_grad=True)).backward()
    g = cap.trace.graphs[0]
    kept = [g.values.get(i) for i in range(len(g.values))]
    assert len(kept) >= 4 and all(type(v) is np.ndarray and v.shape == () for v in kept)
    assert {v.dtype.kind for v in kept} >= {"f", "b"}
