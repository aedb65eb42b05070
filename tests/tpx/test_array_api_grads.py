"""Gradients through the Array API compositions of issue 18 (sort, cumulative_prod, unique_*,
searchsorted), checked against central finite differences in float64."""

from __future__ import annotations

import numpy as np
from _fd import check_vjp

import p10
import tpx as tp

RNG = np.random.default_rng(18)


def test_sort_gradient_goes_to_the_sorted_elements() -> None:
    x = RNG.permutation(12).reshape(3, 4) + RNG.uniform(0.1, 0.4, (3, 4))
    check_vjp(lambda t: p10.sort(t, axis=1) * p10.arange(4.0, dtype="float64"), [x])
    check_vjp(lambda t: p10.sort(t, axis=0, descending=True), [x])


def test_cumulative_prod_gradient_with_and_without_zeros() -> None:
    x = RNG.uniform(-2.0, 2.0, (2, 4))
    check_vjp(lambda t: p10.cumulative_prod(t, axis=1), [x])
    check_vjp(lambda t: p10.cumulative_prod(t, axis=0, include_initial=True), [x])
    x[0, 1] = 0.0
    check_vjp(lambda t: p10.cumulative_prod(t, axis=1), [x])


def test_unique_values_gradient_goes_to_the_first_occurrence() -> None:
    x = tp.asarray(np.array([2.0, 1.0, 2.0, 3.0]), requires_grad=True)
    (g,) = tp.grad((p10.unique_values(x) * tp.asarray([1.0, 10.0, 100.0])).sum(), [x])
    assert g.tolist() == [10.0, 1.0, 0.0, 100.0]


def test_searchsorted_and_argsort_are_not_differentiable() -> None:
    x = tp.asarray(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    assert not p10.searchsorted(x, x).requires_grad
    assert not p10.argsort(x).requires_grad
