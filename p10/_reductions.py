"""Reductions over ``axis`` (an int, a tuple of ints, or None for all) with ``keepdims``."""

from __future__ import annotations

import builtins
import operator
from typing import Any

from p10._dtypes import to_dtype
from p10._elementwise import operands, to_float
from p10._errors import AxisError, ShapeError
from p10._ops import Op
from p10._tensor import apply

Axis = int | tuple[int, ...] | None


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """One axis as a non-negative int, or :class:`AxisError` naming the op and the ndim.

    >>> normalize_axis(-1, 3, "sum")
    2
    """
    try:
        a = operator.index(axis)
    except TypeError:
        raise AxisError(f"{op}: axis must be an int, got {axis!r}") from None
    if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
        raise AxisError(
            f"{op}: axis {axis} is out of range for a tensor with {ndim} dimension(s); "
            f"use an axis in [{-ndim}, {ndim})"
        )
    return a % ndim if ndim else 0


def normalize_axes(axis: Axis, ndim: int, op: str) -> tuple[int, ...] | None:
    """``axis`` as a sorted tuple of distinct non-negative ints, or None for every axis.

    >>> normalize_axes((-1, 0), 3, "sum"), normalize_axes(None, 2, "sum")
    ((0, 2), None)
    """
    if axis is None:
        return None
    axes = (axis,) if not isinstance(axis, tuple | list) else tuple(axis)
    out = tuple(sorted(normalize_axis(a, ndim, op) for a in axes))
    if len(set(out)) != len(out):
        raise AxisError(f"{op}: repeated axis in {axis!r}; name each axis once")
    if ndim == 0:
        return None
    return out


def _reduce(op: Op, x: Any, axis: Axis, keepdims: bool, **params: Any) -> Any:
    (x,) = operands(x)
    return apply(op, x, axis=normalize_axes(axis, x.ndim, op.value), keepdims=keepdims, **params)


def _reduce_as(op: Op, x: Any, axis: Axis, keepdims: bool, dtype: Any) -> Any:
    """Sum or product; with ``dtype`` computed and returned in it (small ints otherwise widen)."""
    (x,) = operands(x)
    if dtype is None:
        return _reduce(op, x, axis, keepdims)
    dt = to_dtype(dtype)
    out = _reduce(op, apply(Op.CAST, x, dtype=dt), axis, keepdims)
    return out if out.dtype == dt else apply(Op.CAST, out, dtype=dt)


def _nonempty(x: Any, axis: Axis, op: str) -> None:
    axes = normalize_axes(axis, x.ndim, op)
    sizes = [x.shape[a] for a in (axes if axes is not None else range(x.ndim))]
    if builtins.any(s == 0 for s in sizes):
        raise ShapeError(
            f"{op}: cannot reduce an empty axis of shape {x.shape}; it has no identity"
        )


def sum(x: Any, /, *, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Sum of elements.

    >>> import p10
    >>> p10.sum(p10.asarray([[1, 2], [3, 4]]), axis=0).tolist()
    [4, 6]
    """
    return _reduce_as(Op.SUM, x, axis, keepdims, dtype)


def mean(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Any:
    """Arithmetic mean; integer inputs give the default float dtype.

    >>> import p10
    >>> p10.mean(p10.asarray([1, 2])).item()
    1.5
    """
    (x,) = operands(x)
    return _reduce(Op.MEAN, to_float(x), axis, keepdims)


def prod(x: Any, /, *, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Product of elements.

    >>> import p10
    >>> p10.prod(p10.asarray([2.0, 3.0])).item()
    6.0
    """
    return _reduce_as(Op.PROD, x, axis, keepdims, dtype)


def max(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Any:
    """Largest element (NaN propagates).

    >>> import p10
    >>> p10.max(p10.asarray([1.0, 5.0, 2.0])).item()
    5.0
    """
    (x,) = operands(x)
    _nonempty(x, axis, "max")
    return _reduce(Op.MAX, x, axis, keepdims)


def min(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Any:
    """Smallest element (NaN propagates).

    >>> import p10
    >>> p10.min(p10.asarray([1.0, 5.0, 2.0])).item()
    1.0
    """
    (x,) = operands(x)
    _nonempty(x, axis, "min")
    return _reduce(Op.MIN, x, axis, keepdims)


def _arg(op: Op, x: Any, axis: int | None, keepdims: bool) -> Any:
    (x,) = operands(x)
    _nonempty(x, axis, op.value)
    ax = None if axis is None else normalize_axis(axis, x.ndim, op.value)
    return apply(op, x, axis=ax, keepdims=keepdims)


def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
    """Index of the largest element (first on ties), as int64.

    >>> import p10
    >>> p10.argmax(p10.asarray([[1, 9], [8, 2]]), axis=1).tolist()
    [1, 0]
    """
    return _arg(Op.ARGMAX, x, axis, keepdims)


def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
    """Index of the smallest element (first on ties), as int64.

    >>> import p10
    >>> p10.argmin(p10.asarray([3, 1, 2])).item()
    1
    """
    return _arg(Op.ARGMIN, x, axis, keepdims)


def var(x: Any, /, *, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Variance; ``correction=1`` gives the unbiased estimate.

    >>> import p10
    >>> x = p10.asarray([1.0, 3.0])
    >>> p10.var(x).item(), p10.var(x, correction=1).item()
    (1.0, 2.0)
    """
    (x,) = operands(x)
    return _reduce(Op.VAR, to_float(x), axis, keepdims, correction=float(correction))


def std(x: Any, /, *, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Standard deviation, ``sqrt(var(...))``.

    >>> import p10
    >>> p10.std(p10.asarray([1.0, 3.0])).item()
    1.0
    """
    from p10._functions import sqrt

    return sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def logsumexp(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x)))`` computed without overflow.

    >>> import p10
    >>> round(p10.logsumexp(p10.asarray([1000.0, 1000.0])).item(), 3)
    1000.693
    """
    (x,) = operands(x)
    return _reduce(Op.LOGSUMEXP, to_float(x), axis, keepdims)


def cumsum(x: Any, /, *, axis: int | None = None) -> Any:
    """Cumulative sum along ``axis`` (a flattened 1-D tensor when ``axis`` is None).

    >>> import p10
    >>> p10.cumsum(p10.asarray([1, 2, 3])).tolist()
    [1, 3, 6]
    """
    (x,) = operands(x)
    if axis is None:
        if x.ndim > 1:
            x = apply(Op.RESHAPE, x, shape=(-1,))
        axis = 0
    return apply(Op.CUMSUM, x, axis=normalize_axis(axis, x.ndim, "cumsum"))


def all(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Any:
    """True where every element along ``axis`` is nonzero.

    >>> import p10
    >>> p10.all(p10.asarray([True, False])).item()
    False
    """
    return _reduce(Op.ALL, x, axis, keepdims)


def any(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Any:
    """True where some element along ``axis`` is nonzero.

    >>> import p10
    >>> p10.any(p10.asarray([True, False])).item()
    True
    """
    return _reduce(Op.ANY, x, axis, keepdims)
