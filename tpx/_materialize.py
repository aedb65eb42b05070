"""``tpx.materialize``: compute the results of a training step together, once.

On a lazy backend (Dask) a step only builds a graph: the loss, the gradients and the updated
parameters all share the forward pass. Reading them one at a time recomputes that pass per
read; :func:`materialize` computes everything the step produced in one pass and keeps the
values on the backend (a cluster's workers). On an eager backend it does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import p10
from tpx._tensor import Tensor


def materialize(*items: Any) -> None:
    """Compute ``items`` now, in one pass over their shared graph, and keep the values on
    their backend, so that the next step starts from values, not from this step's history.

    Each item is a tensor (its ``.grad`` too, when it has one), a module (its parameters,
    their gradients, its buffers), an optimizer (its parameters and state, such as Adam's
    moments) or an iterable of these. On an eager backend (NumPy, PyTorch) it does nothing:
    the same training loop runs on every backend.

    >>> import tpx as tp, tpx.nn as nn, tpx.optim as optim
    >>> model = nn.Linear(2, 1); opt = optim.Adam(model.parameters(), lr=0.1)
    >>> loss = model(tp.ones((4, 2))).square().mean()
    >>> loss.backward(); opt.step()
    >>> tp.materialize(loss, model, opt)  # one compute on Dask; nothing to do on NumPy
    >>> loss.item() >= 0.0
    True
    """
    raws: dict[int, p10.Tensor] = {}
    for t in _tensors(items):
        raw = t._value if isinstance(t, Tensor) else t
        raws.setdefault(id(raw), raw)
    p10.materialize(*raws.values())


def _tensors(items: Iterable[Any]) -> list[Any]:
    """Every tensor named by ``items``, gradients included (an explicit stack: no recursion)."""
    out: list[Any] = []
    stack = list(reversed(list(items)))
    while stack:
        item = stack.pop()
        if item is None:
            continue
        if isinstance(item, Tensor):
            out.append(item)
            if item.grad is not None:
                out.append(item.grad)
        elif isinstance(item, p10.Tensor):
            out.append(item)
        else:
            stack.extend(reversed(_parts(item)))
    return out


def _parts(item: Any) -> list[Any]:
    if hasattr(item, "param_groups") and hasattr(item, "state"):  # an optimizer
        params = [p for g in item.param_groups for p in g["params"]]
        state = [v for s in item.state.values() for v in s.values()]
        return [*params, *[v for v in state if isinstance(v, (Tensor, p10.Tensor))]]
    if hasattr(item, "parameters") and hasattr(item, "buffers"):  # a module
        return [*item.parameters(), *item.buffers()]
    if isinstance(item, Iterable) and not isinstance(item, (str, bytes)):
        return list(item)
    raise TypeError(
        f"materialize: cannot compute a {type(item).__name__}; pass tensors, modules, "
        "optimizers or iterables of them"
    )
