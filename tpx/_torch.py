"""PyTorch-style reductions of the ``tpx`` namespace (``dim``/``keepdim``, ``max(dim)`` with
indices, unbiased ``var``), ``tpx.Size``, ``inference_mode``, and the argument translation the
PyTorch-style functions share (the others are in :mod:`tpx._torch_ops`).

P10 follows the Array API (``axis``/``keepdims``, ``split`` into sections); TPX follows
PyTorch where the two disagree, and still takes the Array API keywords: a call that names
``axis=`` or ``keepdims=`` gets the Array API meaning. docs/porting-from-pytorch.md lists every
name whose meaning differs from P10's.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

import numpy as np

import p10
from tpx._mode import _GradModeContext

__all__ = [
    "Size",
    "SizeOf",
    "all",
    "any",
    "argmax",
    "argmin",
    "cumsum",
    "inference_mode",
    "log_softmax",
    "logsumexp",
    "max",
    "mean",
    "min",
    "prod",
    "softmax",
    "std",
    "sum",
    "var",
]

values_indices = namedtuple("values_indices", ["values", "indices"])
"""What ``max(x, dim)``, ``min(x, dim)`` and ``topk`` return: ``(values, indices)``."""


class Size(tuple):
    """The shape returned by ``Tensor.size()``: a tuple of ints, as ``torch.Size``.

    >>> import tpx as tp
    >>> s = tp.zeros(2, 3).size()
    >>> s, s == (2, 3), s.numel(), s[1]
    (tpx.Size([2, 3]), True, 6, 3)
    """

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __repr__(self) -> str:
        return f"tpx.Size({list(self)})"

    def __getitem__(self, key: Any) -> Any:
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item


class SizeOf(int):
    """What ``Tensor.size`` gives: the number of elements (an int, as the Array API's ``size``
    attribute), that called is PyTorch's ``size()`` method.

    >>> s = SizeOf((2, 3))
    >>> s + 0, s(), s(0)
    (6, tpx.Size([2, 3]), 2)
    """

    # NOTE: an int subclass cannot have __slots__ with fields; the shape lives in __dict__
    def __new__(cls, shape: tuple[int, ...]) -> SizeOf:
        self = super().__new__(cls, math.prod(shape))
        self.shape = tuple(shape)
        return self

    def __call__(self, dim: int | None = None) -> Any:
        return Size(self.shape) if dim is None else self.shape[dim]


# -- argument translation ---------------------------------------------------------------------
def dims_of(dim: Any) -> Any:
    """A ``dim`` argument as P10 takes an axis: a list becomes a tuple."""
    return tuple(dim) if isinstance(dim, list) else dim


def axis_of(fn: str, dim: Any, axis: Any) -> Any:
    """The axis of a call that may name PyTorch's ``dim`` or the Array API's ``axis``."""
    if axis is None:
        return dims_of(dim)
    if dim is not None:
        raise p10.ArgumentError(f"{fn}: pass dim or axis, not both (they mean the same)")
    return dims_of(axis)


def _keep(keepdim: Any, keepdims: Any) -> bool:
    return builtins.bool(keepdim if keepdims is None else keepdims)


def dim_kwargs(fn: str, axis: Any, keepdims: Any, kwargs: dict) -> tuple[Any, Any, dict]:
    """``dim=``/``keepdim=`` of a reduction method moved to ``axis``/``keepdims``."""
    if "dim" in kwargs:
        axis = axis_of(fn, kwargs.pop("dim"), axis)
    if "keepdim" in kwargs:
        keepdims = kwargs.pop("keepdim")
    return axis, keepdims, kwargs


def shape_of(size: tuple, fn: str) -> Any:
    """``zeros(2, 3)``, ``zeros((2, 3))`` and ``zeros([2, 3])`` all name the shape (2, 3)."""
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        return tuple(size[0])
    return size


def is_tensor_like(x: Any) -> builtins.bool:
    """Whether ``x`` is a tensor or an array (not a Python scalar or a ``dim``)."""
    return isinstance(x, (p10.Tensor, np.ndarray)) or hasattr(x, "__p10_apply__")


# -- reductions -------------------------------------------------------------------------------
def sum(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
        keepdims: Any = None) -> Any:  # fmt: skip
    """Sum over ``dim`` (an int, a tuple or None for all).

    >>> import tpx as tp
    >>> tp.sum(tp.ones(2, 3), dim=1, keepdim=True).shape
    (2, 1)
    """
    return p10.sum(x, axis=axis_of("sum", dim, axis), keepdims=_keep(keepdim, keepdims),
                   dtype=dtype)  # fmt: skip


def mean(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
         keepdims: Any = None) -> Any:  # fmt: skip
    """Mean over ``dim``.

    >>> import tpx as tp
    >>> tp.mean(tp.ones(2, 3), 0).tolist()
    [1.0, 1.0, 1.0]
    """
    return p10.mean(x, axis=axis_of("mean", dim, axis), keepdims=_keep(keepdim, keepdims))


def prod(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
         keepdims: Any = None) -> Any:  # fmt: skip
    """Product over ``dim``.

    >>> import tpx as tp
    >>> tp.prod(tp.full((2, 2), 2.0), dim=0).tolist()
    [4.0, 4.0]
    """
    return p10.prod(x, axis=axis_of("prod", dim, axis), keepdims=_keep(keepdim, keepdims))


def logsumexp(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
              keepdims: Any = None) -> Any:  # fmt: skip
    """``log(sum(exp(x)))`` over ``dim``, computed stably.

    >>> import tpx as tp
    >>> round(tp.logsumexp(tp.zeros(4), 0).item(), 4)
    1.3863
    """
    return p10.logsumexp(x, axis=axis_of("logsumexp", dim, axis),
                         keepdims=_keep(keepdim, keepdims))  # fmt: skip


def all(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
        keepdims: Any = None) -> Any:  # fmt: skip
    """Whether every element along ``dim`` is true.

    >>> import tpx as tp
    >>> tp.all(tp.ones(2) > 0).item()
    True
    """
    return p10.all(x, axis=axis_of("all", dim, axis), keepdims=_keep(keepdim, keepdims))


def any(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
        keepdims: Any = None) -> Any:  # fmt: skip
    """Whether some element along ``dim`` is true.

    >>> import tpx as tp
    >>> tp.any(tp.zeros(2) > 0).item()
    False
    """
    return p10.any(x, axis=axis_of("any", dim, axis), keepdims=_keep(keepdim, keepdims))


def _extreme(name: str, x: Any, dim: Any, keepdim: Any, axis: Any, keepdims: Any) -> Any:
    values, arg = (p10.max, p10.argmax) if name == "max" else (p10.min, p10.argmin)
    if dim is not None and is_tensor_like(dim):  # torch.max(a, b): elementwise
        return (p10.maximum if name == "max" else p10.minimum)(x, dim)
    keep = _keep(keepdim, keepdims)
    if dim is None or axis is not None or keepdims is not None:
        return values(x, axis=axis_of(name, dim, axis), keepdims=keep)
    if not isinstance(dim, (int, np.integer)):
        raise p10.ArgumentError(f"{name}(x, dim): dim must be one int, got {dim!r}")
    return values_indices(values(x, axis=dim, keepdims=keep), arg(x, axis=dim, keepdims=keep))


def max(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
        keepdims: Any = None) -> Any:  # fmt: skip
    """The largest element; with ``dim``, ``(values, indices)`` along it (as PyTorch); with a
    tensor as second argument, the elementwise maximum; with ``axis=``, the values only.

    >>> import tpx as tp
    >>> x = tp.asarray([[1.0, 5.0], [7.0, 2.0]])
    >>> tp.max(x).item(), tp.max(x, 1).indices.tolist(), tp.max(x, axis=0).tolist()
    (7.0, [1, 0], [7.0, 5.0])
    """
    return _extreme("max", x, dim, keepdim, axis, keepdims)


def min(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
        keepdims: Any = None) -> Any:  # fmt: skip
    """The smallest element; see :func:`max` for ``dim``, tensors and ``axis=``.

    >>> import tpx as tp
    >>> tp.min(tp.asarray([[1.0, 5.0], [7.0, 2.0]]), dim=0).values.tolist()
    [1.0, 2.0]
    """
    return _extreme("min", x, dim, keepdim, axis, keepdims)


def argmax(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
           keepdims: Any = None) -> Any:  # fmt: skip
    """Index of the largest element (of the flattened tensor when ``dim`` is None).

    >>> import tpx as tp
    >>> tp.argmax(tp.asarray([[1.0, 5.0], [7.0, 2.0]]), dim=1).tolist()
    [1, 0]
    """
    return p10.argmax(x, axis=axis_of("argmax", dim, axis), keepdims=_keep(keepdim, keepdims))


def argmin(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
           keepdims: Any = None) -> Any:  # fmt: skip
    """Index of the smallest element.

    >>> import tpx as tp
    >>> tp.argmin(tp.asarray([3.0, 1.0, 2.0])).item()
    1
    """
    return p10.argmin(x, axis=axis_of("argmin", dim, axis), keepdims=_keep(keepdim, keepdims))


def _correction(unbiased: Any, correction: Any, array_api: builtins.bool) -> float:
    if correction is not None:
        return correction
    if unbiased is not None:
        return 1 if unbiased else 0
    # NOTE: PyTorch's default is the unbiased estimate; the Array API's (axis=) is correction 0
    return 0 if array_api else 1


def var(x: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None, axis: Any = None, keepdims: Any = None) -> Any:  # fmt: skip
    """Variance over ``dim``; unbiased (``correction=1``) by default, as PyTorch. A call with
    the Array API's ``axis=``/``keepdims=`` keywords gets the Array API default, 0.

    >>> import tpx as tp
    >>> x = tp.asarray([1.0, 2.0, 3.0, 4.0])
    >>> tp.var(x).item(), tp.var(x, unbiased=False).item(), tp.var(x, axis=0).item()
    (1.6666666269302368, 1.25, 1.25)
    """
    corr = _correction(unbiased, correction, axis is not None or keepdims is not None)
    return p10.var(x, axis=axis_of("var", dim, axis), correction=corr,
                   keepdims=_keep(keepdim, keepdims))  # fmt: skip


def std(x: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None, axis: Any = None, keepdims: Any = None) -> Any:  # fmt: skip
    """Standard deviation over ``dim``; unbiased by default, as :func:`var`.

    >>> import tpx as tp
    >>> tp.std(tp.asarray([1.0, 3.0])).item()
    1.4142135381698608
    """
    corr = _correction(unbiased, correction, axis is not None or keepdims is not None)
    return p10.std(x, axis=axis_of("std", dim, axis), correction=corr,
                   keepdims=_keep(keepdim, keepdims))  # fmt: skip


def cumsum(x: Any, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Any:
    """Cumulative sum along ``dim``.

    >>> import tpx as tp
    >>> tp.cumsum(tp.ones(3), dim=0).tolist()
    [1.0, 2.0, 3.0]
    """
    out = p10.cumsum(x, axis=axis_of("cumsum", dim, axis))
    return out if dtype is None else p10.astype(out, dtype)


def softmax(x: Any, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Any:
    """Softmax along ``dim`` (the last axis when not given).

    >>> import tpx as tp
    >>> tp.softmax(tp.zeros(2, 2), dim=1).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """
    a = axis_of("softmax", dim, axis)
    x = x if dtype is None else p10.astype(x, dtype)
    return p10.softmax(x, -1 if a is None else a)


def log_softmax(x: Any, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Any:
    """Log-softmax along ``dim`` (the last axis when not given).

    >>> import tpx as tp
    >>> round(tp.log_softmax(tp.zeros(2), dim=0)[0].item(), 4)
    -0.6931
    """
    a = axis_of("log_softmax", dim, axis)
    x = x if dtype is None else p10.astype(x, dtype)
    return p10.log_softmax(x, -1 if a is None else a)


class inference_mode(_GradModeContext):
    """PyTorch's ``inference_mode``: here the same as ``no_grad`` (nothing is recorded); a
    context manager and a decorator. ``inference_mode(False)`` records again.

    >>> import tpx as tp
    >>> x = tp.ones(2, requires_grad=True)
    >>> with tp.inference_mode():
    ...     (x * 2).requires_grad
    False
    """

    def __init__(self, mode: builtins.bool = True) -> None:
        super().__init__(not mode)
