"""Initialisers: PyTorch's bounds and gains, seeded generators, fan computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import p10
import tpx as tp
import tpx.nn as nn
from tpx.nn import init


def test_fans_and_gains():
    assert init.calculate_fan_in_and_fan_out((8, 3)) == (3, 8)
    assert init.calculate_fan_in_and_fan_out((8, 3, 2, 2)) == (12, 32)
    with pytest.raises(ValueError, match="2 or more dims"):
        init.calculate_fan_in_and_fan_out((3,))
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="unknown nonlinearity"):
        init.calculate_gain("swishy")


def test_generators_make_initialisation_reproducible():
    a = init.normal_(tp.zeros((3, 3)), generator=p10.random.Generator(5))
    b = init.normal_(tp.zeros((3, 3)), generator=p10.random.Generator(5))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    p10.manual_seed(3)
    first = nn.Conv2d(2, 3, 3).weight.numpy().copy()
    p10.manual_seed(3)
    np.testing.assert_array_equal(nn.Conv2d(2, 3, 3).weight.numpy(), first)


@pytest.mark.parametrize(
    ("fill", "bound"),
    [
        (lambda t: init.kaiming_uniform_(t, nonlinearity="relu"), math.sqrt(6 / 200)),
        (lambda t: init.xavier_uniform_(t), math.sqrt(6 / (200 + 300))),
        (lambda t: init.uniform_(t, -0.3, 0.3), 0.3),
    ],
)
def test_uniform_initialisers_respect_their_bound(fill, bound):
    w = fill(tp.zeros((300, 200), requires_grad=True))
    values = w.numpy()
    assert np.abs(values).max() <= bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_normal_initialisers_have_their_std():
    w = init.kaiming_normal_(tp.zeros((400, 100)), nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 100)) < 0.02 * math.sqrt(2 / 100)
    w = init.xavier_normal_(tp.zeros((400, 100)), gain=2.0)
    assert abs(w.numpy().std() - 2 * math.sqrt(2 / 500)) < 0.03 * 2 * math.sqrt(2 / 500)
    assert init.ones_(tp.zeros(2)).tolist() == [1.0, 1.0]
    assert init.zeros_(tp.ones(2)).tolist() == [0.0, 0.0]


def test_every_public_name_is_documented():
    import tpx.nn.functional as F
    import tpx.optim as optim

    for module in (nn, F, optim):
        for name in module.__all__:
            assert getattr(module, name).__doc__, f"{module.__name__}.{name} has no docstring"
