"""Optimizers with per-element step sizes, with ``torch.optim``'s update formulas: Adadelta,
RMSprop and Adagrad (single-tensor form, no ``maximize``/``foreach``/complex parameters).

``tests/nn/test_torch_parity.py`` runs each next to PyTorch's on the same weights and batches.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tpx as tp
from tpx.optim.optimizer import Optimizer


def _check(name: str, **values: float) -> None:
    bad = {k: v for k, v in values.items() if v < 0}
    if bad:
        raise ValueError(f"{name}: {', '.join(f'{k}={v}' for k, v in bad.items())} must be >= 0")


class Adadelta(Optimizer):
    """Adadelta (Zeiler), as ``torch.optim.Adadelta``:

    ``g += wd * p``; ``s = rho s + (1 - rho) g^2``;
    ``d = sqrt(u + eps) / sqrt(s + eps) * g``; ``u = rho u + (1 - rho) d^2``; ``p -= lr * d``.

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.asarray([1.0], requires_grad=True)
    >>> opt = optim.Adadelta([w], lr=1.0)
    >>> (w * 2).sum().backward(); opt.step()
    >>> round(w.item(), 5)  # 1 - sqrt(1e-6) / sqrt(0.1 * 4 + 1e-6) * 2
    0.99684
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0.0) -> None:  # fmt: skip
        _check("Adadelta", lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        if rho > 1:
            raise ValueError(f"Adadelta: rho={rho} must be in [0, 1]")
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay})

    def _update(self, p: tp.Tensor, g: tp.Tensor, group: dict, state: dict) -> None:
        rho, eps, wd = group["rho"], group["eps"], group["weight_decay"]
        if wd:
            g = g + p * wd
        if not state:
            state.update(step=0, square_avg=tp.zeros_like(p), acc_delta=tp.zeros_like(p))
        state["step"] += 1
        s, u = state["square_avg"], state["acc_delta"]
        s.copy_(s * rho + g * g * (1.0 - rho))
        delta = tp.sqrt(u + eps) / tp.sqrt(s + eps) * g
        u.copy_(u * rho + delta * delta * (1.0 - rho))
        p.sub_(delta * group["lr"])


class RMSprop(Optimizer):
    """RMSprop (Hinton), as ``torch.optim.RMSprop``:

    ``g += wd * p``; ``s = alpha s + (1 - alpha) g^2``; ``avg = sqrt(s) + eps``, or, when
    ``centered``, ``m = alpha m + (1 - alpha) g`` and ``avg = sqrt(s - m^2) + eps``; with
    ``momentum``: ``b = momentum b + g / avg``, ``p -= lr b``; else ``p -= lr g / avg``.

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.asarray([1.0], requires_grad=True)
    >>> opt = optim.RMSprop([w], lr=0.01)
    >>> (w * 2).sum().backward(); opt.step()
    >>> round(w.item(), 6)  # 1 - 0.01 * 2 / (sqrt(0.01 * 4) + 1e-8)
    0.9
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False) -> None:  # fmt: skip
        _check("RMSprop", lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
               momentum=momentum)  # fmt: skip
        defaults = {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
                    "momentum": momentum, "centered": centered}  # fmt: skip
        super().__init__(params, defaults)

    def _update(self, p: tp.Tensor, g: tp.Tensor, group: dict, state: dict) -> None:
        alpha, eps, wd, mu = group["alpha"], group["eps"], group["weight_decay"], group["momentum"]
        if wd:
            g = g + p * wd
        if not state:
            state.update(step=0, square_avg=tp.zeros_like(p))
            if mu > 0:
                state["momentum_buffer"] = tp.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = tp.zeros_like(p)
        state["step"] += 1
        s = state["square_avg"]
        s.copy_(s * alpha + g * g * (1.0 - alpha))
        if group["centered"]:
            m = state["grad_avg"]
            m.copy_(m * alpha + g * (1.0 - alpha))
            avg = tp.sqrt(s - m * m) + eps
        else:
            avg = tp.sqrt(s) + eps
        if mu > 0:
            buf = state["momentum_buffer"]
            buf.copy_(buf * mu + g / avg)
            p.sub_(buf * group["lr"])
        else:
            p.sub_(g / avg * group["lr"])


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.), as ``torch.optim.Adagrad``:

    ``g += wd * p``; ``clr = lr / (1 + (t - 1) lr_decay)``; ``s += g^2``;
    ``p -= clr * g / (sqrt(s) + eps)``, ``s`` starting at ``initial_accumulator_value``.

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.asarray([1.0], requires_grad=True)
    >>> opt = optim.Adagrad([w], lr=0.1)
    >>> (w * 2).sum().backward(); opt.step()
    >>> round(w.item(), 6)  # the first step moves each weight by lr
    0.9
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10) -> None:  # fmt: skip
        _check("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
               initial_accumulator_value=initial_accumulator_value)  # fmt: skip
        defaults = {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "eps": eps}  # fmt: skip
        super().__init__(params, defaults)

    def _update(self, p: tp.Tensor, g: tp.Tensor, group: dict, state: dict) -> None:
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        if not state:
            init = group["initial_accumulator_value"]
            state.update(step=0, sum=tp.full_like(p, init))
        state["step"] += 1
        clr = group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"])
        s = state["sum"]
        s.copy_(s + g * g)
        p.sub_(g / (tp.sqrt(s) + group["eps"]) * clr)
