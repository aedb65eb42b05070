"""Normalisation layers: LayerNorm, and BatchNorm1d/2d with running statistics."""

from __future__ import annotations

from typing import Any

import tpx as tp
from tpx.nn import functional as F
from tpx.nn.module import Module, Parameter


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then apply a learned scale
    (ones) and shift (zeros).

    >>> import tpx as tp, tpx.nn as nn
    >>> y = nn.LayerNorm(4)(tp.arange(8.0).reshape(2, 4))
    >>> [round(v, 3) for v in y.mean(axis=-1).tolist()]
    [0.0, 0.0]
    """

    def __init__(
        self,
        normalized_shape: Any,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        self.normalized_shape, self.eps = tuple(shape), eps
        if elementwise_affine:
            self.weight = Parameter(tp.ones(self.normalized_shape, dtype=dtype))
            self.bias = Parameter(tp.zeros(self.normalized_shape, dtype=dtype))
        else:
            self.weight = self.bias = None

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        n = len(self.normalized_shape)
        ok = tuple(x.shape[x.ndim - n :]) == self.normalized_shape and x.ndim >= n
        self.check_shape(x, f"(..., {', '.join(map(str, self.normalized_shape))})", ok)
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class _BatchNorm(Module):
    """Shared part of BatchNorm1d and BatchNorm2d."""

    _dims: tuple[int, ...] = ()
    _layout = ""
    _optional_state = ("num_batches_tracked",)  # state dicts saved before it existed load

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(tp.ones(num_features, dtype=dtype))
            self.bias = Parameter(tp.zeros(num_features, dtype=dtype))
        else:
            self.weight = self.bias = None
        if track_running_stats:
            self.register_buffer("running_mean", tp.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", tp.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tp.zeros((), dtype=tp.int64))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        ok = x.ndim in self._dims and x.shape[1] == self.num_features
        self.check_shape(x, self._layout.format(c=self.num_features), ok)
        use_batch = self.training or self.running_mean is None
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.num_batches_tracked is not None:
            factor = self._count_batch()
        return F.batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )

    def _count_batch(self) -> float:
        """Add one to ``num_batches_tracked``; the running-average factor for this batch."""
        with tp.no_grad():
            self.num_batches_tracked.copy_(self.num_batches_tracked + 1)
        # NOTE: momentum=None is PyTorch's cumulative moving average: batch k gets weight 1/k.
        if self.momentum is None:
            return 1.0 / int(self.num_batches_tracked)
        return self.momentum

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}"


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` input: batch statistics in training
    (updating the running ones), running statistics in eval.

    Each training call adds one to the ``num_batches_tracked`` buffer. ``momentum`` weighs the
    new batch in the running statistics; ``momentum=None`` gives batch ``k`` the weight
    ``1 / k``, so the running statistics are the plain average over all batches (as PyTorch).

    >>> import tpx as tp, tpx.nn as nn
    >>> bn = nn.BatchNorm1d(2)
    >>> _ = bn(tp.asarray([[0.0, 2.0], [2.0, 6.0]]))
    >>> bn.running_mean.tolist(), [round(v, 2) for v in bn.running_var.tolist()]
    ([0.1, 0.4], [1.1, 1.7])
    >>> cma = nn.BatchNorm1d(1, momentum=None)
    >>> for batch in ([[0.0], [2.0]], [[4.0], [6.0]]):
    ...     _ = cma(tp.asarray(batch))
    >>> cma.running_mean.tolist(), int(cma.num_batches_tracked)
    ([3.0], 2)
    """

    _dims = (2, 3)
    _layout = "(N, {c}) or (N, {c}, L)"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` input, per channel; ``momentum`` and
    ``num_batches_tracked`` as in :class:`BatchNorm1d` (``None``: cumulative average).

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.BatchNorm2d(3)(tp.randn((4, 3, 5, 5))).shape
    (4, 3, 5, 5)
    """

    _dims = (4,)
    _layout = "(N, {c}, H, W)"
