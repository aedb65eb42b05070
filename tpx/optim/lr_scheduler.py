"""Learning-rate schedules, as ``torch.optim.lr_scheduler``: call ``step()`` once per epoch
(or per iteration) after ``optimizer.step()``."""

from __future__ import annotations

import math
from typing import Any

import tpx as tp
from tpx.optim.optimizer import Optimizer


class LRScheduler:
    """Base class: sets each group's ``lr`` from its ``initial_lr`` and the epoch counter.

    Subclasses define ``lr_at(base_lr, epoch)`` in closed form, so a schedule can be resumed
    from its ``state_dict``.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: {type(optimizer).__name__} is no Optimizer")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, base_lr: float, epoch: int) -> float:
        """The learning rate of a group starting at ``base_lr`` after ``epoch`` steps."""
        raise NotImplementedError

    @tp.eager_island
    def step(self) -> None:
        """Advance the schedule by one and set the new learning rates."""
        self.last_epoch += 1
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self.lr_at(base, self.last_epoch)

    def get_last_lr(self) -> list[float]:
        """The learning rate of each group, as last set."""
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state)


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs.

    >>> import tpx as tp, tpx.optim as optim
    >>> opt = optim.SGD([tp.ones(1, requires_grad=True)], lr=1.0)
    >>> sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        if step_size < 1:
            raise ValueError(f"StepLR: step_size must be >= 1, got {step_size}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class CosineAnnealingLR(LRScheduler):
    """Anneal from the initial rate to ``eta_min`` along half a cosine over ``T_max`` epochs:
    ``eta_min + (lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``.

    >>> import tpx as tp, tpx.optim as optim
    >>> opt = optim.SGD([tp.ones(1, requires_grad=True)], lr=1.0)
    >>> sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
    >>> lrs = []
    >>> for _ in range(3):
    ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 3))
    >>> lrs
    [0.5, 0.0, 0.5]
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        if T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be >= 1, got {T_max}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        cos = math.cos(math.pi * epoch / self.T_max)
        return self.eta_min + (base_lr - self.eta_min) * (1 + cos) / 2
