"""Loss modules: thin wrappers that hold the options of the functional losses."""

from __future__ import annotations

from typing import Any

import tpx as tp
from tpx.nn import functional as F
from tpx.nn.module import Module


class MSELoss(Module):
    """Mean squared error (see :func:`tpx.nn.functional.mse_loss`).

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.MSELoss()(tp.zeros(2), tp.ones(2)).item()
    1.0
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: tp.Tensor, target: Any) -> tp.Tensor:
        return F.mse_loss(input, target, self.reduction)


class CrossEntropyLoss(Module):
    """Cross entropy from logits (see :func:`tpx.nn.functional.cross_entropy`).

    >>> import tpx as tp, tpx.nn as nn
    >>> round(nn.CrossEntropyLoss()(tp.zeros((1, 4)), tp.asarray([3])).item(), 4)
    1.3863
    """

    def __init__(
        self,
        weight: Any = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__()
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, input: tp.Tensor, target: Any) -> tp.Tensor:
        return F.cross_entropy(
            input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing
        )


class NLLLoss(Module):
    """Negative log-likelihood (see :func:`tpx.nn.functional.nll_loss`).

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.NLLLoss()(tp.asarray([[-1.0, -2.0]]), tp.asarray([1])).item()
    2.0
    """

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input: tp.Tensor, target: Any) -> tp.Tensor:
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(Module):
    """Binary cross entropy from logits (see
    :func:`tpx.nn.functional.binary_cross_entropy_with_logits`).

    >>> import tpx as tp, tpx.nn as nn
    >>> round(nn.BCEWithLogitsLoss()(tp.zeros(3), tp.ones(3)).item(), 4)
    0.6931
    """

    def __init__(self, weight: Any = None, reduction: str = "mean", pos_weight: Any = None):
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, input: tp.Tensor, target: Any) -> tp.Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, self.reduction, self.pos_weight
        )
