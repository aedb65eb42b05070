"""Stateless layers and losses, as ``torch.nn.functional``, composed from P10 ops.

Every function records ordinary TPX nodes (no private kernels), so the graph of a model shows
the ops a layer is made of, under the layer's scope.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import p10
import p10.random
import tpx as tp
from p10 import ShapeError
from tpx.nn._losses import (  # re-exported: the losses live in their own file
    binary_cross_entropy_with_logits,
    cross_entropy,
    mse_loss,
    nll_loss,
)

Tensor = tp.Tensor


def _tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else tp.asarray(x)


# -- layers -----------------------------------------------------------------------------------
def linear(x: Any, weight: Any, bias: Any = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight`` of shape ``(out_features, in_features)``.

    >>> import tpx as tp
    >>> linear(tp.ones((2, 3)), tp.ones((4, 3)), tp.zeros(4)).tolist()[0]
    [3.0, 3.0, 3.0, 3.0]
    """
    x, weight = _tensor(x), _tensor(weight)
    if x.ndim < 1 or weight.ndim != 2 or x.shape[-1] != weight.shape[1]:
        raise ShapeError(
            f"linear: input {x.shape} does not match weight {weight.shape}; the input's last "
            f"dimension must be in_features={weight.shape[-1]}"
        )
    out = tp.matmul(x, weight.mT)
    return out if bias is None else out + bias


def conv2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution of NCHW ``x`` with OIHW ``weight`` (``tp.conv2d``).

    >>> import tpx as tp
    >>> conv2d(tp.ones((1, 1, 4, 4)), tp.ones((2, 1, 3, 3)), padding=1).shape
    (1, 2, 4, 4)
    """
    return tp.conv2d(x, weight, bias, stride, padding, dilation, groups)


def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Tensor:
    """Maximum over windows of NCHW ``x``.

    >>> import tpx as tp
    >>> max_pool2d(tp.ones((1, 1, 4, 4)), 2).shape
    (1, 1, 2, 2)
    """
    return tp.max_pool2d(x, kernel_size, stride, padding)


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Tensor:
    """Mean over windows of NCHW ``x``.

    >>> import tpx as tp
    >>> avg_pool2d(tp.ones((1, 1, 4, 4)), 2).shape
    (1, 1, 2, 2)
    """
    return tp.avg_pool2d(x, kernel_size, stride, padding)


def flatten(x: Any, start_dim: int = 1, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim..end_dim`` into one (batch kept by default).

    >>> import tpx as tp
    >>> flatten(tp.ones((2, 3, 4))).shape
    (2, 12)
    """
    return _tensor(x).flatten(start_dim, end_dim)


def relu(x: Any, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` (``inplace=True`` gives the same values, out of place).

    >>> import tpx as tp
    >>> relu(tp.asarray([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    return tp.relu(x)


def gelu(x: Any, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (exact, with erf) or its tanh approximation.

    >>> import tpx as tp
    >>> round(gelu(tp.asarray([1.0])).item(), 4)
    0.8413
    """
    return tp.gelu(x, approximate=approximate)


def tanh(x: Any) -> Tensor:
    """Hyperbolic tangent.

    >>> import tpx as tp
    >>> tanh(tp.zeros(1)).tolist()
    [0.0]
    """
    return tp.tanh(x)


def sigmoid(x: Any) -> Tensor:
    """``1 / (1 + exp(-x))``.

    >>> import tpx as tp
    >>> sigmoid(tp.zeros(1)).tolist()
    [0.5]
    """
    return tp.sigmoid(x)


def silu(x: Any) -> Tensor:
    """``x * sigmoid(x)``.

    >>> import tpx as tp
    >>> silu(tp.zeros(1)).tolist()
    [0.0]
    """
    x = _tensor(x)
    return x * tp.sigmoid(x)


def softmax(x: Any, dim: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``.

    >>> import tpx as tp
    >>> softmax(tp.zeros(2)).tolist()
    [0.5, 0.5]
    """
    return tp.softmax(x, axis=dim)


def log_softmax(x: Any, dim: int = -1) -> Tensor:
    """``log(softmax(x))`` along ``dim``, without overflow.

    >>> import tpx as tp
    >>> round(log_softmax(tp.zeros(2)).tolist()[0], 4)
    -0.6931
    """
    return tp.log_softmax(x, axis=dim)


def dropout(
    x: Any,
    p: float = 0.5,
    training: bool = True,
    generator: p10.random.Generator | None = None,
    *,
    inplace: bool = False,
) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``; the
    identity when not ``training``. The mask comes from ``generator`` (seeded) or P10's default.

    >>> import p10, tpx as tp
    >>> y = dropout(tp.ones(1000), 0.5, generator=p10.random.Generator(0))
    >>> sorted(set(y.tolist())), 400 < int((y == 0).sum()) < 600
    ([0.0, 2.0], True)
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    x = _tensor(x)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    gen = p10.random.default_generator if generator is None else generator
    mask = gen.bernoulli(1.0 - p, x.shape, dtype=x.dtype) * (1.0 / (1.0 - p))
    return x * mask


def embedding(indices: Any, weight: Any, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` picked by integer ``indices`` (shape ``indices.shape + (dim,)``).

    With ``padding_idx`` (negative values count from the end, as in PyTorch) the row
    ``weight[padding_idx]`` is still looked up but receives no gradient.

    >>> import tpx as tp
    >>> embedding(tp.asarray([[0, 2]]), tp.eye(3)).tolist()
    [[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]
    >>> w = tp.ones((3, 2), requires_grad=True)
    >>> embedding(tp.asarray([0, 2, 2]), w, padding_idx=-1).sum().backward()
    >>> w.grad.tolist()
    [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    """
    indices, weight = _tensor(indices), _tensor(weight)
    if indices.dtype.kind not in "iu":
        raise TypeError(
            f"embedding: indices must be integers, got {indices.dtype.name}; cast with .long()"
        )
    if weight.ndim != 2:
        raise ShapeError(
            f"embedding: weight must be (num_embeddings, embedding_dim), got shape {weight.shape}"
        )
    if padding_idx is None:
        return weight[indices]
    row = _padding_row(padding_idx, weight.shape[0], "embedding")
    # NOTE: the padding row is read from a detached copy, so it gets no gradient (as PyTorch).
    is_pad = tp.asarray((np.arange(weight.shape[0]) == row).reshape(-1, 1))
    return tp.where(is_pad, weight.detach(), weight)[indices]


def _padding_row(padding_idx: int, num_embeddings: int, where: str) -> int:
    """``padding_idx`` as a row in ``[0, num_embeddings)``; negative values count from the end.

    >>> _padding_row(-1, 5, "Embedding")
    4
    """
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)):
        raise TypeError(
            f"{where}: padding_idx must be an int or None, got {type(padding_idx).__name__}"
        )
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(
            f"{where}: padding_idx={padding_idx} is out of range for num_embeddings="
            f"{num_embeddings}; use a value in [{-num_embeddings}, {num_embeddings - 1}] "
            "(negative values count from the end) or None"
        )
    return int(padding_idx) % num_embeddings


def one_hot(indices: Any, num_classes: int) -> Tensor:
    """Integer ``indices`` as one-hot rows (int64), shape ``indices.shape + (num_classes,)``.

    >>> import tpx as tp
    >>> one_hot(tp.asarray([1, 0]), 3).tolist()
    [[0, 1, 0], [1, 0, 0]]
    """
    idx = np.asarray(_tensor(indices).numpy())
    return tp.asarray((idx[..., None] == np.arange(num_classes)).astype(np.int64))


def layer_norm(
    x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5
) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dims to mean 0 and variance 1, then
    scale by ``weight`` and shift by ``bias``.

    >>> import tpx as tp
    >>> y = layer_norm(tp.asarray([[1.0, 2.0, 3.0]]), (3,))
    >>> [round(v, 3) for v in y.tolist()[0]]
    [-1.225, 0.0, 1.225]
    """
    x = _tensor(x)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape) :]) != shape:
        raise ShapeError(f"layer_norm: input {x.shape} does not end with normalized_shape {shape}")
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    centred = x - x.mean(axis=axes, keepdims=True)
    var = (centred * centred).mean(axis=axes, keepdims=True)
    out = centred / tp.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


def batch_norm(
    x: Any,
    running_mean: Any,
    running_var: Any,
    weight: Any = None,
    bias: Any = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) of ``(N, C)``, ``(N, C, L)`` or ``(N, C, H, W)`` input.

    In training it uses the batch statistics and updates ``running_mean``/``running_var`` in
    place (``(1 - momentum) * running + momentum * batch``, the variance unbiased); otherwise
    it uses the running statistics.

    >>> import tpx as tp
    >>> rm, rv = tp.zeros(2), tp.ones(2)
    >>> y = batch_norm(tp.asarray([[0.0, 1.0], [2.0, 3.0]]), rm, rv, training=True)
    >>> [round(v, 3) for v in y.tolist()[0]], rm.tolist()
    ([-1.0, -1.0], [0.1, 0.2])
    """
    x = _tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: input must be (N, C, ...), got shape {x.shape}")
    axes = (0, *range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        mean = x.mean(axis=axes, keepdims=True)
        centred = x - mean
        var = (centred * centred).mean(axis=axes, keepdims=True)
        if running_mean is not None:
            _update_running(running_mean, running_var, mean, var, x.numel() // x.shape[1], momentum)
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
        centred = x - mean
    out = centred / tp.sqrt(var + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def _update_running(rm: Tensor, rv: Tensor, mean: Tensor, var: Tensor, n: int, m: float) -> None:
    if n < 2:
        raise ValueError(f"batch_norm: training needs more than 1 value per channel, got {n}")
    with tp.no_grad():
        rm.copy_(rm * (1 - m) + mean.reshape(rm.shape) * m)
        rv.copy_(rv * (1 - m) + var.reshape(rv.shape) * (m * n / (n - 1)))


def scaled_dot_product_attention(
    q: Any,
    k: Any,
    v: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    generator: p10.random.Generator | None = None,
) -> Tensor:
    """``softmax(q @ k.T * scale + mask) @ v`` over the last two dims (``(..., L, E)``).

    ``attn_mask`` is boolean (True = may attend) or added to the scores; ``is_causal`` lets
    position i attend to positions <= i only.

    >>> import tpx as tp
    >>> q = tp.ones((1, 3, 2)); v = tp.asarray([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    >>> scaled_dot_product_attention(q, q, v, is_causal=True).tolist()[0][1]
    [0.5, 0.5]
    """
    q, k, v = _tensor(q), _tensor(k), _tensor(v)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = tp.matmul(q, k.mT) * scale
    if is_causal:
        length, source = scores.shape[-2:]
        mask = tp.asarray(np.tril(np.ones((length, source), dtype=bool)))
        scores = tp.where(mask, scores, float("-inf"))
    if attn_mask is not None:
        attn_mask = _tensor(attn_mask)
        if attn_mask.dtype.kind == "b":
            scores = tp.where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = tp.softmax(scores, axis=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True, generator)
    return tp.matmul(weights, v)


__all__ = [
    "avg_pool2d", "batch_norm", "binary_cross_entropy_with_logits", "conv2d", "cross_entropy",
    "dropout", "embedding", "flatten", "gelu", "layer_norm", "linear", "log_softmax",
    "max_pool2d", "mse_loss", "nll_loss", "one_hot", "relu", "scaled_dot_product_attention",
    "sigmoid", "silu", "softmax", "tanh",
]  # fmt: skip
