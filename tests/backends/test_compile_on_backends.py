"""tpx.compile on every optional backend: the plan replays what eager TPX computes on that
backend, bit for bit (a rule case per op, and a training step with an optimizer)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import p10
import tpx as tp
import tpx.nn as nn
import tpx.optim as optim
from tests.helpers.backends import BACKENDS, load
from tests.tpx import test_compile as compile_tests


def _representative() -> list[Any]:
    seen, out = set(), []
    for c in compile_tests.CASES:
        if c.op not in seen:
            seen.add(c.op)
            out.append(c)
    return out


# NOTE: Dask takes over a minute for the sweep (a graph per kernel call): marked slow
SWEEP_BACKENDS = [pytest.param(n, marks=pytest.mark.slow) if n == "dask" else n for n in BACKENDS]


@pytest.mark.parametrize("name", SWEEP_BACKENDS)
def test_rule_cases_replay_bitwise_on_backend(name: str) -> None:
    backend = load(name)
    replayed = 0
    with p10.use_backend(backend), warnings.catch_warnings():
        warnings.simplefilter("ignore", tp.CompileWarning)  # graph breaks: checked eagerly
        for c in _representative():
            try:
                replayed += compile_tests._replay_case(c, np.float64)
            except p10.MissingKernelError:
                continue  # an op the backend lacks fails eagerly too
    assert replayed >= 40, replayed


@pytest.mark.parametrize("name", list(BACKENDS))
def test_training_step_replays_bitwise_on_backend(name: str) -> None:
    backend = load(name)

    def run(compiled: bool) -> list[np.ndarray]:
        with p10.use_backend(backend):
            tp.manual_seed(0)
            model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
            opt = optim.Adam(model.parameters(), lr=0.01)
            rng = np.random.default_rng(0)

            def step(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
                opt.zero_grad()
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                opt.step()
                return loss

            fn = tp.compile(step) if compiled else step
            losses = []
            for _ in range(4):
                x = tp.asarray(rng.normal(size=(5, 6)).astype(np.float32))
                y = tp.asarray(rng.normal(size=(5, 2)).astype(np.float32))
                losses.append(fn(x, y))
            if compiled:  # NOTE: the first call makes Adam's state: recorded again
                assert fn.stats.replays == 2
            return [np.array(t.numpy()) for t in [*losses, *model.parameters()]]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for a, b in zip(run(False), run(True)):
            assert a.tobytes() == b.tobytes()
    # NOTE: a backend without weak Python scalars makes each number a tensor from host data:
    # the optimizer step then stays an eager island (named once), the rest replays
    texts = [str(m.message) for m in caught if m.category is tp.CompileWarning]
    assert all("eager island" in t and "tensor from host data" in t for t in texts), texts
    assert len(texts) <= 1
