"""``tp.autograd``: the names PyTorch code imports from ``torch.autograd``.

>>> import tpx as tp
>>> x = tp.asarray([1.0, 2.0], requires_grad=True)
>>> (g,) = tp.autograd.grad((x * x).sum(), x)
>>> g.tolist()
[2.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tpx._engine import backward as _backward
from tpx._engine import grad
from tpx._function import Function, FunctionCtx
from tpx._mode import detect_anomaly, enable_grad, no_grad, set_grad_enabled


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Any] | None = None,
) -> None:
    """PyTorch's ``torch.autograd.backward``: ``tensors`` (one or a sequence) into ``.grad``.

    >>> import tpx as tp
    >>> x = tp.ones(2, requires_grad=True)
    >>> tp.autograd.backward((x * 3).sum()); x.grad.tolist()
    [3.0, 3.0]
    """
    one = not isinstance(tensors, (list, tuple))
    outs = [tensors] if one else list(tensors)
    grads = None
    if grad_tensors is not None:
        grads = [grad_tensors] if one else list(grad_tensors)
    results = _backward(outs, grads, retain_graph, create_graph, inputs=inputs)
    if results is not None:  # backward(..., inputs=...) accumulates only into those leaves
        for x, g in zip(inputs or (), results):
            if g is not None:
                x.grad = g if x.grad is None else x.grad + g


__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "no_grad",
    "set_grad_enabled",
]
