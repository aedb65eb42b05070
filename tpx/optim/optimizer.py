"""Optimizers shaped like ``torch.optim``: the base class, SGD, Adam and AdamW (Adadelta,
RMSprop and Adagrad are in :mod:`tpx.optim.adaptive`).

Updates run under ``tp.no_grad()`` and write into the parameters in place, so tensors that
hold them (a module, a state dict taken later) see the new values and no graph is recorded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import p10
import tpx as tp
from tpx.nn._errors import StateDictError


class Optimizer:
    """Base class: parameter groups (dicts of ``params`` and hyper-parameters), per-parameter
    ``state``, ``zero_grad``, ``step`` and ``state_dict``/``load_state_dict``.

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.ones(2, requires_grad=True)
    >>> opt = optim.SGD([w], lr=0.5)
    >>> (w * w).sum().backward(); opt.step(); w.tolist()
    [0.0, 0.0]
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[int, dict[str, Any]] = {}
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (defaults fill the rest)."""
        params = group["params"]
        params = [params] if isinstance(params, tp.Tensor) else list(params)
        for p in params:
            if not isinstance(p, tp.Tensor) or not p.is_leaf or not p.requires_grad:
                raise TypeError(
                    f"{type(self).__name__}: can only optimize leaf tensors that require grad, "
                    f"got {type(p).__name__}"
                )
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError(f"{type(self).__name__}: a parameter appears in two groups")
        self.param_groups.append({**self.defaults, **group, "params": params})

    def _params(self) -> list[tp.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    @tp.eager_island
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the ``.grad`` of every parameter (to None, or to zeros)."""
        for p in self._params():
            p.grad = None if set_to_none or p.grad is None else tp.zeros_like(p.grad)

    @tp.eager_island
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; ``closure`` re-evaluates the loss."""
        loss = None
        if closure is not None:
            with tp.enable_grad():
                loss = closure()
        with tp.no_grad():
            index = 0
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, p.grad.detach(), group, self.state.setdefault(index, {}))
                    index += 1
        return loss

    def _update(self, p: tp.Tensor, g: tp.Tensor, group: dict, state: dict) -> None:
        """One parameter's update: the Python part (:meth:`_advance`), then the tensor part
        (:meth:`_apply`). ``tpx.compile`` lowers the tensor part into plan kernels and calls
        ``_advance`` itself at every replay (subclasses that override ``_update`` instead run
        as an eager island)."""
        self._apply(p, g, group, state, self._advance(group, state))

    def _advance(self, group: dict, state: dict) -> dict[str, Any]:
        """Advance one parameter's counters and return the Python numbers its tensor update
        uses (every number :meth:`_apply` gives a kernel comes from here)."""
        raise NotImplementedError

    def _apply(self, p: tp.Tensor, g: tp.Tensor, group: dict, state: dict, s: dict) -> None:
        raise NotImplementedError

    def _path(self, group: dict) -> tuple:
        """The options of ``group`` that choose which kernels :meth:`_apply` runs."""
        return ()

    def _ready(self, group: dict, state: dict) -> bool:
        """Whether a parameter's state exists already (a step that creates it, as the first,
        is not lowered: it runs as an eager island, and the next call records again)."""
        return True

    def _plan_token(self) -> tuple:
        """What a lowered step was recorded for: the groups' parameters and kernel-choosing
        options, the state's keys, shapes and dtypes (numbers in the state, such as
        ``step``, are read live instead; which ``.grad`` are None is checked apart)."""
        groups = tuple(
            (tuple([id(p) for p in g["params"]]), self._path(g)) for g in self.param_groups
        )
        state = tuple(
            (i, tuple([_entry_token(k, v) for k, v in s.items()]))
            for i, s in self.state.items()
            if s
        )
        return groups, state

    # -- state ------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Hyper-parameters of each group (params as integer positions) and the state of
        each parameter, with tensors as NumPy copies.

        >>> import tpx as tp, tpx.optim as optim
        >>> opt = optim.Adam([tp.ones(2, requires_grad=True)], lr=0.1)
        >>> sorted(opt.state_dict()), opt.state_dict()["param_groups"][0]["params"]
        (['param_groups', 'state'], [0])
        """
        groups, start = [], 0
        for g in self.param_groups:
            n = len(g["params"])
            groups.append(
                {
                    **{k: v for k, v in g.items() if k != "params"},
                    "params": [start + i for i in range(n)],
                }
            )
            start += n
        state = {i: {k: _to_numpy(v) for k, v in s.items()} for i, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and state saved by :meth:`state_dict` from an optimizer
        over parameters of the same shapes, in the same order."""
        groups = state_dict["param_groups"]
        sizes = [len(g["params"]) for g in self.param_groups]
        if [len(g["params"]) for g in groups] != sizes:
            raise StateDictError(
                f"{type(self).__name__}.load_state_dict: the saved groups hold "
                f"{[len(g['params']) for g in groups]} parameters, this optimizer {sizes}"
            )
        params = self._params()
        new_state: dict[int, dict[str, Any]] = {}
        for key, entry in state_dict["state"].items():
            p = params[int(key)]
            new_state[int(key)] = {k: _from_numpy(v, p, k) for k, v in entry.items()}
        for mine, saved in zip(self.param_groups, groups):
            mine.update({k: v for k, v in saved.items() if k != "params"})
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            opts = ", ".join(f"{k}={v}" for k, v in g.items() if k != "params")
            lines.append(f"  group {i}: {len(g['params'])} params, {opts}")
        return "\n".join(lines) + "\n)"


def _entry_token(key: str, v: Any) -> tuple:
    if isinstance(v, tp.Tensor):
        return (key, v._value.shape, v._value.dtype.str, v._value._backend.name)
    return (key,)


def _to_numpy(v: Any) -> Any:
    return np.array(v.numpy(), copy=True) if isinstance(v, tp.Tensor) else v


def _from_numpy(v: Any, p: tp.Tensor, key: str) -> Any:
    if not isinstance(v, np.ndarray):
        return v
    if v.shape != p.shape:
        raise StateDictError(
            f"optimizer state {key!r} has shape {v.shape} but its parameter has {p.shape}"
        )
    return tp.asarray(p10.asarray(v.astype(p.dtype)))


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and
    L2 weight decay, exactly as ``torch.optim.SGD`` (``maximize`` ascends: ``g = -g`` first):

    ``g += wd * p``; ``b = mu * b + (1 - dampening) * g`` (``b = g`` at the first step);
    ``g = g + mu * b`` if nesterov else ``b``; ``p -= lr * g``.

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.asarray([1.0], requires_grad=True)
    >>> opt = optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w * 2).sum().backward(); opt.step()
    >>> round(w.item(), 4)  # 1 - 0.1*2 - 0.1*(0.9*2 + 2)
    0.42
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
    ) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(
                f"SGD: lr={lr}, momentum={momentum}, weight_decay={weight_decay} must be >= 0"
            )
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening = 0")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _advance(self, group: dict, state: dict) -> dict[str, Any]:
        s = {"lr": group["lr"]}
        if group["weight_decay"]:
            s["wd"] = group["weight_decay"]
        if group["momentum"]:
            s["mu"] = group["momentum"]
            s["1-dampening"] = 1.0 - group["dampening"]
        return s

    def _ready(self, group: dict, state: dict) -> bool:
        return not group["momentum"] or "momentum_buffer" in state

    def _path(self, group: dict) -> tuple:
        return (
            bool(group["weight_decay"]),
            bool(group["momentum"]),
            group["nesterov"],
            group.get("maximize", False),
        )

    def _apply(self, p: tp.Tensor, g: tp.Tensor, group: dict, state: dict, s: dict) -> None:
        if group.get("maximize", False):
            g = -g
        if "wd" in s:
            g = g + p * s["wd"]
        if "mu" in s:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = tp.asarray(g, copy=True)
            else:
                buf.copy_(buf * s["mu"] + g * s["1-dampening"])
            g = g + buf * s["mu"] if group["nesterov"] else buf
        p.sub_(g * s["lr"])


class Adam(Optimizer):
    """Adam (Kingma & Ba) with L2 ``weight_decay`` added to the gradient, as ``torch.optim.Adam``:

    ``m = b1 m + (1 - b1) g``; ``v = b2 v + (1 - b2) g^2``;
    ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``; ``amsgrad`` uses the
    running maximum of ``v``, ``maximize`` ascends (``g = -g`` first).

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.asarray([1.0, -1.0], requires_grad=True)
    >>> opt = optim.Adam([w], lr=0.1)
    >>> (w * 3).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]  # the first step moves each weight by lr
    [0.9, -1.1]
    """

    _decoupled = False

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(
                f"{type(self).__name__}: invalid lr={lr}, betas={betas}, eps={eps} or "
                f"weight_decay={weight_decay}"
            )
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _advance(self, group: dict, state: dict) -> dict[str, Any]:
        lr, wd, (b1, b2) = group["lr"], group["weight_decay"], group["betas"]
        state["step"] = state.get("step", 0) + 1  # NOTE: the moments are made in _apply
        t = state["step"]
        s = {"b1": b1, "1-b1": 1.0 - b1, "b2": b2, "1-b2": 1.0 - b2}
        if wd and self._decoupled:
            s["decay"] = 1.0 - lr * wd
        elif wd:
            s["wd"] = wd
        s["sqrt(1-b2^t)"] = math.sqrt(1.0 - b2**t)
        s["eps"] = group["eps"]
        s["lr/(1-b1^t)"] = lr / (1.0 - b1**t)
        return s

    def _ready(self, group: dict, state: dict) -> bool:
        return "exp_avg" in state and (not group["amsgrad"] or "max_exp_avg_sq" in state)

    def _path(self, group: dict) -> tuple:
        return (bool(group["weight_decay"]), group["amsgrad"], group.get("maximize", False))

    def _apply(self, p: tp.Tensor, g: tp.Tensor, group: dict, state: dict, s: dict) -> None:
        if group.get("maximize", False):
            g = -g
        if "decay" in s:  # NOTE: p.mul_(x) with x made a 0-d tensor of p's dtype: same bits
            p.copy_(p * s["decay"])
        elif "wd" in s:
            g = g + p * s["wd"]
        if "exp_avg" not in state:
            state.update(exp_avg=tp.zeros_like(p), exp_avg_sq=tp.zeros_like(p))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = tp.zeros_like(p)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.copy_(m * s["b1"] + g * s["1-b1"])
        v.copy_(v * s["b2"] + g * g * s["1-b2"])
        if group["amsgrad"]:
            state["max_exp_avg_sq"].copy_(tp.maximum(state["max_exp_avg_sq"], v))
            v = state["max_exp_avg_sq"]
        denom = tp.sqrt(v) / s["sqrt(1-b2^t)"] + s["eps"]
        p.sub_(m / denom * s["lr/(1-b1^t)"])


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * wd`` before the Adam step), as
    ``torch.optim.AdamW``; ``weight_decay`` defaults to 0.01.

    >>> import tpx as tp, tpx.optim as optim
    >>> w = tp.asarray([1.0], requires_grad=True)
    >>> opt = optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> (w * 0).sum().backward(); opt.step(); round(w.item(), 4)
    0.95
    """

    _decoupled = True

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
