"""Finite-difference checks of modules in float64: the gradient of ``sum(module(*xs) * R)``
(``R`` a fixed random array) with respect to every input and parameter element, by central
differences, against what backward puts into ``.grad``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import p10
import tpx as tp
import tpx.nn as nn


class ModuleGradError(AssertionError):
    """backward's gradient of a module disagrees with finite differences."""


def f64(a: Any, requires_grad: bool = True) -> tp.Tensor:
    """A float64 leaf from an array-like."""
    return tp.asarray(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _set(t: tp.Tensor, value: np.ndarray) -> None:
    with tp.no_grad():
        t.copy_(p10.asarray(value))


def _leaves(module: nn.Module, xs: Sequence[tp.Tensor]) -> list[tuple[str, tp.Tensor]]:
    named = [(f"input {i}", x) for i, x in enumerate(xs) if x.requires_grad]
    return named + [(f"parameter {n}", p) for n, p in module.named_parameters()]


def check_module_grads(
    module: nn.Module | Callable[..., Any],
    xs: Sequence[tp.Tensor],
    params: Sequence[tuple[str, tp.Tensor]] | None = None,
    eps: float = 1e-6,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    seed: int = 0,
) -> None:
    """Raise :class:`ModuleGradError` naming the input or parameter and the element whose
    gradient disagrees. ``module`` may be any callable when ``params`` lists its leaves."""
    leaves = _leaves(module, xs) if params is None else [*_leaves(nn.Module(), xs), *params]
    for _, t in leaves:
        t.grad = None
    out = module(*xs)
    weights = np.random.default_rng(seed).standard_normal(out.shape)
    (out * tp.asarray(weights)).sum().backward()

    def objective() -> float:
        with tp.no_grad():
            return float((np.asarray(module(*xs).numpy()) * weights).sum())

    for name, t in leaves:
        analytic = np.zeros(t.shape) if t.grad is None else np.asarray(t.grad.numpy())
        base = np.array(t.numpy(), dtype=np.float64, copy=True)
        numeric = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            values = []
            for step in (eps, -eps):
                moved = base.copy()
                moved[idx] += step
                _set(t, moved)
                values.append(objective())
            numeric[idx] = (values[0] - values[1]) / (2 * eps)
        _set(t, base)
        bad = ~np.isclose(analytic, numeric, rtol=rtol, atol=atol)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ModuleGradError(
                f"{type(module).__name__}: gradient of {name} at {idx} is {analytic[idx]!r}, "
                f"finite differences give {numeric[idx]!r} ({int(bad.sum())} of {bad.size} "
                "elements disagree)"
            )
