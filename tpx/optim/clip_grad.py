"""Gradient clipping, as ``torch.nn.utils.clip_grad_norm_`` / ``clip_grad_value_``."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

import p10
import tpx as tp


def _with_grads(parameters: Iterable[tp.Tensor] | tp.Tensor) -> list[tp.Tensor]:
    params = [parameters] if isinstance(parameters, tp.Tensor) else list(parameters)
    return [p for p in params if p.grad is not None]


@tp.eager_island
def clip_grad_norm_(
    parameters: Iterable[tp.Tensor] | tp.Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> float:
    """Scale all gradients together so that their joint ``norm_type``-norm is at most
    ``max_norm`` (by ``max_norm / (norm + 1e-6)``, as PyTorch); returns the norm before.

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.zeros(2, requires_grad=True); w.grad = tp.asarray([3.0, 4.0])
    >>> optim.clip_grad_norm_([w], 1.0), [round(v, 3) for v in w.grad.tolist()]
    (5.0, [0.6, 0.8])
    """
    params = _with_grads(parameters)
    if not params:
        return 0.0
    # NOTE: fetched together: on a lazy backend (Dask) one compute, not one per gradient
    arrays = [np.asarray(a, dtype=np.float64) for a in p10.fetch(*[p.grad._value for p in params])]
    if math.isinf(norm_type):
        total = max(float(np.abs(a).max(initial=0.0)) for a in arrays)
    else:
        total = sum(float((np.abs(a) ** norm_type).sum()) for a in arrays) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total {norm_type}-norm of the gradients is {total}; "
            "pass error_if_nonfinite=False to clip anyway"
        )
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        with tp.no_grad():
            for p in params:
                p.grad = p.grad * coef
    return total


@tp.eager_island
def clip_grad_value_(parameters: Iterable[tp.Tensor] | tp.Tensor, clip_value: float) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]``.

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.zeros(2, requires_grad=True); w.grad = tp.asarray([3.0, -0.5])
    >>> optim.clip_grad_value_([w], 1.0); w.grad.tolist()
    [1.0, -0.5]
    """
    with tp.no_grad():
        for p in _with_grads(parameters):
            p.grad = tp.clip(p.grad, -clip_value, clip_value)
