"""PyTorch-style selection and comparison functions of the ``tpx`` namespace: ``topk``,
``roll``, ``tril``, ``sort``, ``masked_fill``, ``equal``... (the reductions with
``dim``/``keepdim`` are in :mod:`tpx._torch`, joining and reshaping in :mod:`tpx._torch_shape`;
this module's ``__all__`` lists both).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import p10
from p10 import Op
from tpx._torch import dims_of, is_tensor_like, values_indices
from tpx._torch_shape import (
    axis_index,
    cat,
    chunk,
    concat,
    concatenate,
    flip,
    permute,
    split,
    squeeze,
    stack,
    t,
    transpose,
    unsqueeze,
)

__all__ = [
    "allclose",
    "argsort",
    "bmm",
    "cat",
    "chunk",
    "clamp",
    "concat",
    "concatenate",
    "eq",
    "equal",
    "flip",
    "gather",
    "ge",
    "gt",
    "index_select",
    "isclose",
    "le",
    "lt",
    "masked_fill",
    "mm",
    "ne",
    "norm",
    "numel",
    "permute",
    "roll",
    "sort",
    "split",
    "squeeze",
    "stack",
    "t",
    "topk",
    "transpose",
    "tril",
    "triu",
    "unsqueeze",
]


# -- elementwise and products -----------------------------------------------------------------
def clamp(x: Any, min: Any = None, max: Any = None) -> Any:
    """Values clipped to ``[min, max]`` (PyTorch's name of ``clip``).

    >>> import tpx as tp
    >>> tp.clamp(tp.asarray([-2.0, 0.5, 3.0]), min=0.0, max=1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    return p10.clip(x, min, max)


def mm(a: Any, b: Any) -> Any:
    """Matrix product of two 2-D tensors.

    >>> import tpx as tp
    >>> tp.mm(tp.ones(2, 3), tp.ones(3, 4)).shape
    (2, 4)
    """
    if a.ndim != 2 or b.ndim != 2:
        raise p10.ShapeError(f"mm: expects two 2-D tensors, got shapes {a.shape} and {b.shape}")
    return p10.matmul(a, b)


def bmm(a: Any, b: Any) -> Any:
    """Batched matrix product of two 3-D tensors.

    >>> import tpx as tp
    >>> tp.bmm(tp.ones(5, 2, 3), tp.ones(5, 3, 4)).shape
    (5, 2, 4)
    """
    if a.ndim != 3 or b.ndim != 3:
        raise p10.ShapeError(f"bmm: expects two 3-D tensors, got shapes {a.shape} and {b.shape}")
    return p10.matmul(a, b)


eq = p10.equal
ne = p10.not_equal
lt = p10.less
le = p10.less_equal
gt = p10.greater
ge = p10.greater_equal


def masked_fill(x: Any, mask: Any, value: Any) -> Any:
    """``value`` where ``mask`` is true, ``x`` elsewhere (``mask`` broadcasts against ``x``).

    A composite of ``where`` (whose rule it uses): ``x`` gets the gradient where the mask is
    false, a tensor ``value`` the sum of the rest.

    >>> import tpx as tp
    >>> x = tp.zeros(3)
    >>> tp.masked_fill(x, x.eq(tp.asarray([0.0, 1.0, 0.0])), -1.0).tolist()
    [-1.0, 0.0, -1.0]
    """
    if getattr(mask, "dtype", None) != p10.bool:
        raise p10.DTypeError(
            f"masked_fill: the mask must be a bool tensor, got {getattr(mask, 'dtype', mask)!r};"
            " build it with a comparison such as x == 0"
        )
    if is_tensor_like(value) and value.ndim != 0:
        raise p10.ShapeError(f"masked_fill: value must be a scalar or 0-d, got {value.shape}")
    if is_tensor_like(value) and value.dtype != x.dtype:
        value = p10.astype(value, x.dtype)
    out = p10.where(mask, value, x)
    return out if out.shape == x.shape else p10.broadcast_to(out, x.shape)


def numel(x: Any) -> int:
    """The number of elements.

    >>> import tpx as tp
    >>> tp.numel(tp.zeros(2, 3))
    6
    """
    return math.prod(x.shape)


def topk(x: Any, k: int, dim: int = -1, largest: builtins.bool = True,
         sorted: builtins.bool = True) -> Any:  # fmt: skip
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices.

    The indices come from the non-differentiable ``topk`` op; the values are gathered with
    ``take_along_axis``, so the gradient goes to the chosen elements.

    >>> import tpx as tp
    >>> v, i = tp.topk(tp.asarray([1.0, 4.0, 2.0, 3.0]), 2)
    >>> v.tolist(), i.tolist()
    ([4.0, 3.0], [1, 3])
    """
    d = axis_index(x, dim, "topk")
    n = x.shape[d]
    if not 0 <= k <= n:
        raise p10.ArgumentError(f"topk: k={k} is out of range for dim {dim} of size {n}")
    idx = p10.apply(Op.TOPK, x, k=int(k), axis=d, largest=builtins.bool(largest))
    return values_indices(p10.take_along_axis(x, idx, axis=d), idx)


def roll(x: Any, shifts: Any, dims: Any = None) -> Any:
    """Elements shifted by ``shifts`` along ``dims``, wrapping around (flattened when
    ``dims`` is None).

    >>> import tpx as tp
    >>> tp.roll(tp.arange(4), 1).tolist(), tp.roll(tp.arange(4).reshape(2, 2), 1, 0).tolist()
    ([3, 0, 1, 2], [[2, 3], [0, 1]])
    """
    many = isinstance(shifts, (tuple, list))
    sh = tuple(int(s) for s in shifts) if many else (int(shifts),)
    if dims is None:
        if len(sh) != 1:
            raise p10.ArgumentError(f"roll: {len(sh)} shifts need as many dims, got none")
        flat = p10.reshape(x, (-1,))
        return p10.reshape(p10.apply(Op.ROLL, flat, shifts=sh, axes=(0,)), x.shape)
    ax = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(ax) != len(sh):
        raise p10.ArgumentError(f"roll: shifts {sh} and dims {ax} differ in length")
    ax = tuple(axis_index(x, a, "roll") for a in ax)
    return p10.apply(Op.ROLL, x, shifts=sh, axes=ax)


def _tri(op: Op, x: Any, diagonal: int, fn: str) -> Any:
    if x.ndim < 2:
        raise p10.ShapeError(f"{fn}: expects at least 2 dimensions, got shape {x.shape}")
    return p10.apply(op, x, k=int(diagonal))


def tril(x: Any, diagonal: int = 0) -> Any:
    """The lower triangle of the last two axes (``diagonal`` shifts it up), zeros above.

    >>> import tpx as tp
    >>> tp.tril(tp.ones(2, 2)).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    return _tri(Op.TRIL, x, diagonal, "tril")


def triu(x: Any, diagonal: int = 0) -> Any:
    """The upper triangle of the last two axes (``diagonal`` shifts it up), zeros below.

    >>> import tpx as tp
    >>> tp.triu(tp.ones(2, 2)).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    return _tri(Op.TRIU, x, diagonal, "triu")


def sort(x: Any, dim: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = False) -> Any:  # fmt: skip
    """The values along ``dim`` in order, and their indices (a stable sort: equal values keep
    their order); the gradient goes back through the indices.

    >>> import tpx as tp
    >>> v, i = tp.sort(tp.asarray([3.0, 1.0, 2.0]), descending=True)
    >>> v.tolist(), i.tolist()
    ([3.0, 2.0, 1.0], [0, 2, 1])
    """
    d = axis_index(x, dim, "sort")
    return topk(x, x.shape[d], d, largest=descending)


def argsort(x: Any, dim: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = False) -> Any:  # fmt: skip
    """The indices that sort ``x`` along ``dim`` (stable).

    >>> import tpx as tp
    >>> tp.argsort(tp.asarray([3.0, 1.0, 2.0])).tolist()
    [1, 2, 0]
    """
    d = axis_index(x, dim, "argsort")
    return p10.apply(Op.TOPK, x, k=x.shape[d], axis=d, largest=builtins.bool(descending))


def gather(x: Any, dim: int, index: Any) -> Any:
    """``out[i][j] = x[i][index[i][j]]`` along ``dim`` (``take_along_axis``).

    >>> import tpx as tp
    >>> tp.gather(tp.asarray([[1.0, 2.0], [3.0, 4.0]]), 1, tp.asarray([[1], [0]])).tolist()
    [[2.0], [3.0]]
    """
    return p10.take_along_axis(x, index, axis=dim)


def index_select(x: Any, dim: int, index: Any) -> Any:
    """The slices of ``x`` at ``index`` (a 1-D int tensor) along ``dim``.

    >>> import tpx as tp
    >>> tp.index_select(tp.arange(6).reshape(2, 3), 1, tp.asarray([2, 0])).tolist()
    [[2, 0], [5, 3]]
    """
    return p10.take(x, index, axis=dim)


def norm(x: Any, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False) -> Any:
    """The vector norm of ``x`` over ``dim`` (all elements when None): ``p`` 2 or ``"fro"``
    (the default), 1, or ``inf``.

    >>> import tpx as tp
    >>> tp.norm(tp.asarray([3.0, 4.0])).item(), tp.norm(tp.asarray([3.0, -4.0]), p=1).item()
    (5.0, 7.0)
    """
    axis = dims_of(dim)
    if p in ("fro", 2, 2.0):
        return p10.sqrt(p10.sum(x * x, axis=axis, keepdims=keepdim))
    if p in (1, 1.0):
        return p10.sum(p10.abs(x), axis=axis, keepdims=keepdim)
    if p == math.inf:
        return p10.max(p10.abs(x), axis=axis, keepdims=keepdim)
    raise p10.ArgumentError(f"norm: p={p!r} is not supported; use 'fro', 2, 1 or inf")


def equal(a: Any, b: Any) -> builtins.bool:
    """Whether two tensors have the same shape and the same values (a Python bool, as
    PyTorch's ``equal``; the elementwise comparison is ``eq`` or ``==``).

    >>> import tpx as tp
    >>> tp.equal(tp.ones(2), tp.ones(2)), tp.equal(tp.ones(2), tp.ones(3))
    (True, False)
    """
    return tuple(a.shape) == tuple(b.shape) and builtins.bool(p10.all(p10.equal(a, b)))


def isclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: builtins.bool = False) -> Any:  # fmt: skip
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (a bool tensor).

    >>> import tpx as tp
    >>> tp.isclose(tp.asarray([1.0, 2.0]), tp.asarray([1.0, 2.1])).tolist()
    [True, False]
    """
    close = p10.abs(a - b) <= atol + rtol * p10.abs(b)
    if equal_nan:
        close = p10.logical_or(close, p10.logical_and(p10.isnan(a), p10.isnan(b)))
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: builtins.bool = False) -> builtins.bool:  # fmt: skip
    """Whether every element of ``a`` is close to ``b`` (see :func:`isclose`).

    >>> import tpx as tp
    >>> tp.allclose(tp.ones(2), tp.ones(2) + 1e-9)
    True
    """
    return builtins.bool(p10.all(isclose(a, b, rtol, atol, equal_nan)))
