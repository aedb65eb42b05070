"""Layers with parameters (Linear, Conv2d, Embedding), pooling, reshaping, activations and
dropout. Initialisation follows PyTorch's defaults, drawing from P10's default generator."""

from __future__ import annotations

import math
from typing import Any

import p10.random
import tpx as tp
from tpx.nn import functional as F
from tpx.nn import init
from tpx.nn.module import Module, Parameter


def _pair(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)  # type: ignore[return-value]


def _weight(shape: tuple[int, ...], dtype: Any) -> tp.Tensor:
    return Parameter(tp.empty(shape, dtype=dtype))


class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``(out_features, in_features)``, initialised with
    ``kaiming_uniform_(a=sqrt(5))`` and bias ``U(-1/sqrt(in), 1/sqrt(in))`` as in PyTorch.

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.Linear(3, 2)(tp.ones((5, 3))).shape
    (5, 2)
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, dtype: Any = None
    ) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = _weight((out_features, in_features), dtype)
        self.bias = _weight((out_features,), dtype) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values (PyTorch's default scheme)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        self.check_shape(
            x, f"(..., {self.in_features})", x.ndim >= 1 and x.shape[-1] == self.in_features
        )
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Conv2d(Module):
    """2-D convolution over NCHW input; weight ``(out, in/groups, kh, kw)`` initialised as in
    PyTorch (``kaiming_uniform_(a=sqrt(5))``, bias ``U(-1/sqrt(fan_in), ..)``).

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.Conv2d(1, 4, 3, padding=1)(tp.ones((2, 1, 8, 8))).shape
    (2, 4, 8, 8)
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv2d: in_channels={in_channels} and out_channels={out_channels} must be "
                f"divisible by groups={groups}"
            )
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation, self.groups = _pair(padding), _pair(dilation), groups
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = _weight(shape, dtype)
        self.bias = _weight((out_channels,), dtype) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values (PyTorch's default scheme)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight.shape)
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        ok = x.ndim == 4 and x.shape[1] == self.in_channels
        self.check_shape(x, f"(N, {self.in_channels}, H, W)", ok)
        return F.conv2d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}"
        )


class MaxPool2d(Module):
    """Maximum over windows (stride defaults to the kernel size).

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.MaxPool2d(2)(tp.ones((1, 3, 8, 8))).shape
    (1, 3, 4, 4)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(MaxPool2d):
    """Mean over windows (padded zeros count, as PyTorch's default).

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.AvgPool2d(2)(tp.ones((1, 3, 8, 8))).shape
    (1, 3, 4, 4)
    """

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding)


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` (the batch dim is kept by default).

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.Flatten()(tp.ones((2, 3, 4, 4))).shape
    (2, 48)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``, ``N(0, 1)`` init.

    With ``padding_idx`` (negative values count from the end and are stored normalised, as in
    PyTorch) that row starts as zeros and receives no gradient, so it stays a fixed vector.

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.Embedding(10, 4)(tp.asarray([[1, 2, 3]])).shape
    (1, 3, 4)
    >>> emb = nn.Embedding(3, 2, padding_idx=-1)
    >>> emb
    Embedding(3, 2, padding_idx=2)
    >>> emb(tp.asarray([2])).tolist()
    [[0.0, 0.0]]
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = (
            None
            if padding_idx is None
            else F._padding_row(padding_idx, num_embeddings, "Embedding")
        )
        self.weight = _weight((num_embeddings, embedding_dim), dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values from ``N(0, 1)``; the padding row (if any) becomes zeros."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with tp.no_grad():
                self.weight[self.padding_idx].fill_(0.0)

    def forward(self, indices: tp.Tensor) -> tp.Tensor:
        indices = indices if isinstance(indices, tp.Tensor) else tp.asarray(indices)
        if indices.dtype.kind not in "iu":
            raise TypeError(
                f"{tp.current_scope()} (Embedding): indices must be integers, got "
                f"{indices.dtype.name}; cast with .long()"
            )
        if indices.numel():
            low, high = int(indices.min()), int(indices.max())
            if low < 0 or high >= self.num_embeddings:
                raise IndexError(
                    f"{tp.current_scope()} (Embedding): index {low if low < 0 else high} is "
                    f"out of range for num_embeddings={self.num_embeddings}"
                )
        return F.embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class Dropout(Module):
    """Zero elements with probability ``p`` in training (scaling the rest by ``1/(1-p)``),
    the identity in eval. ``seed`` gives the layer its own generator, so runs repeat.

    >>> import tpx as tp, tpx.nn as nn
    >>> d = nn.Dropout(0.5, seed=0)
    >>> bool((d.eval()(tp.ones(4)) == 1).all())
    True
    """

    def __init__(self, p: float = 0.5, seed: int | None = None, *, inplace: bool = False) -> None:
        # NOTE: inplace=True (PyTorch's memory saving) computes out of place: same values
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p
        self.generator = None if seed is None else p10.random.Generator(seed)

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.dropout(x, self.p, self.training, self.generator)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Identity(Module):
    """Returns its input.

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.Identity()(tp.ones(2)).tolist()
    [1.0, 1.0]
    """

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return x


class ReLU(Module):
    """``max(x, 0)``; ``inplace=True`` (PyTorch's memory saving) gives the same values, out
    of place.

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.ReLU(inplace=True)(tp.asarray([-1.0, 1.0])).tolist()
    [0.0, 1.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.relu(x)


class GELU(Module):
    """Gaussian error linear unit (``approximate="tanh"`` for the tanh form).

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.GELU()(tp.zeros(1)).tolist()
    [0.0]
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """Hyperbolic tangent.

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.Tanh()(tp.zeros(1)).tolist()
    [0.0]
    """

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """Logistic sigmoid.

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.Sigmoid()(tp.zeros(1)).tolist()
    [0.5]
    """

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.sigmoid(x)


class Softmax(Module):
    """Softmax along ``dim``.

    >>> import tpx as tp, tpx.nn as nn
    >>> nn.Softmax(dim=-1)(tp.zeros((1, 2))).tolist()
    [[0.5, 0.5]]
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
