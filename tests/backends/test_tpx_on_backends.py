"""TPX unchanged on every optional backend: the rule sweep against finite differences, and
training steps that must give the NumPy backend's numbers.

By default each backend runs a representative part of the sweep (one case per op, first
order, and second order for a few ops), which keeps CI short; ``P10_BACKEND_SWEEP=full`` runs
every case, first and second order. The whole TPX suite runs on a backend with the plugin
(see ``p10_backend_plugin``)::

    P10_TEST_BACKEND=dask .venv/bin/python -m pytest -p tests.backends.p10_backend_plugin tests/tpx
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import p10
import tpx as tp
from tests.helpers.backends import BACKENDS, FULL, load
from tests.tpx import test_rules as rules_sweep

CASES = rules_sweep.CASES


def _representative(cases: list[Any]) -> list[Any]:
    """The first case of each op, in table order."""
    seen: set[Any] = set()
    out = []
    for c in cases:
        if c.op not in seen:
            seen.add(c.op)
            out.append(c)
    return out


# Second order by default on a few ops whose double backward composes many rules (cheap on
# every backend); the full sweep takes all of them (conv/pool cases take minutes on Dask).
_GRADGRAD_DEFAULT = {p10.Op.TANH, p10.Op.MUL, p10.Op.MATMUL, p10.Op.SOFTMAX, p10.Op.LOGSUMEXP}
SWEEP = CASES if FULL else _representative(CASES)
GRADGRAD = [c for c in SWEEP if c.gradgrad and (FULL or c.op in _GRADGRAD_DEFAULT)]


@pytest.fixture
def on_backend(request: Any) -> Iterator[str]:
    """Make the parametrized backend the default for the test's body."""
    name = request.param
    with p10.use_backend(load(name)):
        yield name


@pytest.mark.parametrize("on_backend", list(BACKENDS), indirect=True)
@pytest.mark.parametrize("case", SWEEP, ids=lambda c: c.id)
def test_rule_matches_finite_differences_on_backend(on_backend: str, case: Any) -> None:
    xs = [tp.asarray(a) for a in case.inputs()]
    assert all(x.backend.name == on_backend for x in xs)
    rules_sweep.run_case(case)


@pytest.mark.parametrize("on_backend", list(BACKENDS), indirect=True)
@pytest.mark.parametrize("case", GRADGRAD, ids=lambda c: c.id)
def test_rule_second_order_on_backend(on_backend: str, case: Any) -> None:
    rules_sweep.run_gradgrad_case(case)


@pytest.mark.parametrize("on_backend", list(BACKENDS), indirect=True)
def test_sweep_fails_on_a_planted_wrong_kernel(on_backend: str) -> None:
    case = next(c for c in CASES if c.op is p10.Op.SIN)
    with (
        p10.register_kernel(p10.Op.SIN, on_backend, p10.get_backend().kernel(p10.Op.COS)),
        pytest.raises(AssertionError),
    ):
        rules_sweep.run_case(case)


def mlp_losses(backend: str, steps: int = 3) -> list[float]:
    """Losses of a few SGD steps of a 2-layer MLP (tanh, softmax cross-entropy) on ``backend``."""
    rng = np.random.default_rng(0)
    x = tp.asarray(rng.standard_normal((16, 8)), dtype="float64", backend=backend)
    labels = p10.asarray(rng.integers(0, 3, 16), backend=backend)
    params = [
        tp.asarray(rng.standard_normal(shape) * 0.3, dtype="float64", backend=backend)
        for shape in ((8, 12), (12,), (12, 3), (3,))
    ]
    for p in params:
        p.requires_grad_(True)
    losses = []
    for _ in range(steps):
        w1, b1, w2, b2 = params
        logits = (x @ w1 + b1).tanh() @ w2 + b2
        logp = tp.log_softmax(logits, axis=1)
        loss = -logp[p10.arange(16, backend=backend), labels].mean()
        loss.backward()
        losses.append(loss.item())
        with tp.no_grad():
            for p in params:
                p -= 0.5 * p.grad
                p.grad = None
    return losses


@pytest.mark.parametrize("name", list(BACKENDS))
def test_mlp_training_matches_numpy(name: str) -> None:
    load(name)
    got, want = mlp_losses(name), mlp_losses("numpy")
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert want[-1] < want[0]
