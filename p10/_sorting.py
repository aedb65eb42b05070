"""Array API sorting, searching, set and cumulative-product functions, composed from other P10
functions (issue 18): ``sort``, ``argsort``, ``searchsorted``, ``unique_all``,
``unique_counts``, ``unique_inverse``, ``unique_values`` and ``cumulative_prod``.

Orders come from the non-differentiable ``topk`` op; values are gathered with
``take_along_axis``/``take``, so TPX sends the gradient of a sorted (or unique) value to the
element it came from. ``unique_*`` have data-dependent shapes: they read the tensor on the host.

>>> import p10
>>> p10.sort(p10.asarray([3, 1, 2]), descending=True).tolist()
[3, 2, 1]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from p10._creation import full, zeros
from p10._elementwise import operands
from p10._errors import ArgumentError, ShapeError
from p10._functions import (
    astype,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    minimum,
    where,
)
from p10._index_ops import take, take_along_axis
from p10._manipulation import cumulative_operand
from p10._ops import Op
from p10._reductions import normalize_axis, prod, sum
from p10._shape import expand_dims, reshape
from p10._tensor import apply, wrap


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Indices (int64) that sort ``x`` along ``axis``; always stable (ties keep their order,
    also when ``descending``).

    >>> import p10
    >>> p10.argsort(p10.asarray([3.0, 1.0, 3.0]), descending=True).tolist()
    [0, 2, 1]
    """
    (x,) = operands(x)
    if x.ndim == 0:
        raise ShapeError("argsort: needs at least 1 dimension, got a 0-d tensor; reshape it")
    ax = normalize_axis(axis, x.ndim, "argsort")
    return apply(Op.TOPK, x, k=x.shape[ax], axis=ax, largest=bool(descending))


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """``x`` sorted along ``axis`` (NaNs last when ascending); differentiable.

    >>> import p10
    >>> p10.sort(p10.asarray([[3.0, 1.0], [0.0, 2.0]]), axis=1).tolist()
    [[1.0, 3.0], [0.0, 2.0]]
    """
    (x,) = operands(x)
    order = argsort(x, axis=axis, descending=descending, stable=stable)
    return take_along_axis(x, order, axis=axis)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    """Where the values ``x2`` go in the sorted 1-D ``x1`` (int64 indices, NumPy's order:
    NaNs sort last). ``side="right"`` places them after equal values.

    >>> import p10
    >>> p10.searchsorted(p10.asarray([1, 2, 2, 3]), p10.asarray([2, 5]), side="right").tolist()
    [3, 4]
    """
    if side not in ("left", "right"):
        raise ArgumentError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    x1, x2 = operands(x1, x2)
    if x1.ndim != 1:
        raise ShapeError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if sorter is not None:
        x1 = take(x1, sorter)
    if x1.shape[0] * max(x2.size, 1) <= _PAIRWISE_LIMIT:
        return sum(astype(_before(x1, expand_dims(x2, axis=-1), side), "int64"), axis=-1)
    return reshape(_bisect(x1, reshape(x2, (-1,)), side), x2.shape)


# NOTE: up to this many (x1, x2) pairs, one comparison of all pairs (a few kernel calls) beats
# log2(len(x1)) rounds of a vectorized binary search
_PAIRWISE_LIMIT = 1 << 16


def _before(a: Any, v: Any, side: str) -> Any:
    """Whether the sorted values ``a`` go before the values ``v``, NaN after every number (as
    NumPy sorts it); a prefix of ``a`` for each ``v``."""
    v_nan = isnan(v)
    if side == "left":
        return logical_or(less(a, v), logical_and(v_nan, logical_not(isnan(a))))
    return logical_or(less_equal(a, v), v_nan)


def _bisect(x1: Any, v: Any, side: str) -> Any:
    """Binary search of each value of the 1-D ``v`` in ``x1``: O(len(v) log len(x1)) time and
    O(len(v)) memory, in P10 calls (so on any backend)."""
    n = x1.shape[0]
    lo = zeros(v.shape, dtype="int64", backend=v.backend)
    hi = full(v.shape, n, dtype="int64", backend=v.backend)
    for _ in range(n.bit_length()):
        mid = (lo + hi) // 2
        active = less(lo, hi)
        right = logical_and(active, _before(take(x1, minimum(mid, n - 1)), v, side))
        lo = where(right, mid + 1, lo)
        hi = where(logical_and(active, logical_not(right)), mid, hi)
    return lo


def cumulative_prod(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Any:
    """Cumulative product along ``axis`` (optional for 1-D), optionally starting with a one.

    Formed as the product of a lower-triangular masked copy (O(n^2) per row), so zeros get
    exact gradients through ``prod``'s rule.

    >>> import p10
    >>> p10.cumulative_prod(p10.asarray([1, 2, 3]), include_initial=True).tolist()
    [1, 1, 2, 6]
    """
    # NOTE: a ShapeError where cumulative_sum raises an AxisError, as each did in issue 18
    x, ax = cumulative_operand(x, axis, dtype, "cumulative_prod", ShapeError)
    n = x.shape[ax]
    size = n + 1 if include_initial else n
    backend = x.backend
    tri = np.tri(size, n, -1 if include_initial else 0, dtype=bool)
    shape = [1] * (x.ndim + 1)
    shape[ax], shape[ax + 1] = size, n
    mask = wrap(backend.from_numpy(tri.reshape(shape)), backend)
    rows = where(mask, expand_dims(x, axis=ax), 1)
    return prod(rows, axis=ax + 1, dtype=dtype)


class UniqueAll(NamedTuple):
    """What ``unique_all`` returns."""

    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCounts(NamedTuple):
    """What ``unique_counts`` returns."""

    values: Any
    counts: Any


class UniqueInverse(NamedTuple):
    """What ``unique_inverse`` returns."""

    values: Any
    inverse_indices: Any


def _unique(x: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """Sorted distinct values of ``x`` (each NaN distinct, as the standard asks) and, on the
    host, the first index, inverse indices and count of each."""
    (x,) = operands(x)
    flat = reshape(x, (-1,))
    arr = np.asarray(flat)
    _, first, inverse, counts = np.unique(
        arr, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    backend = x.backend

    def host(a: np.ndarray) -> Any:
        return wrap(backend.from_numpy(np.array(a, dtype=np.int64, order="C")), backend)

    values = take(flat, host(first))
    return values, host(first), host(inverse.reshape(x.shape)), host(counts)


def unique_all(x: Any, /) -> UniqueAll:
    """Distinct values (sorted), the flat index of each one's first occurrence, the inverse
    indices (``values[inverse] == x``) and the counts.

    >>> import p10
    >>> r = p10.unique_all(p10.asarray([3, 1, 3]))
    >>> r.values.tolist(), r.indices.tolist(), r.inverse_indices.tolist(), r.counts.tolist()
    ([1, 3], [1, 0], [1, 0, 1], [1, 2])
    """
    return UniqueAll(*_unique(x))


def unique_counts(x: Any, /) -> UniqueCounts:
    """Distinct values (sorted) and how often each occurs.

    >>> import p10
    >>> [t.tolist() for t in p10.unique_counts(p10.asarray([2, 2, 1]))]
    [[1, 2], [1, 2]]
    """
    values, _, _, counts = _unique(x)
    return UniqueCounts(values, counts)


def unique_inverse(x: Any, /) -> UniqueInverse:
    """Distinct values (sorted) and, for every element of ``x``, the index of its value.

    >>> import p10
    >>> [t.tolist() for t in p10.unique_inverse(p10.asarray([2, 2, 1]))]
    [[1, 2], [1, 1, 0]]
    """
    values, _, inverse, _ = _unique(x)
    return UniqueInverse(values, inverse)


def unique_values(x: Any, /) -> Any:
    """Distinct values of ``x``, sorted (every NaN kept: NaN differs from NaN).

    >>> import p10
    >>> p10.unique_values(p10.asarray([2.0, 1.0, 2.0])).tolist()
    [1.0, 2.0]
    """
    return _unique(x)[0]


__all__ = [
    "UniqueAll",
    "UniqueCounts",
    "UniqueInverse",
    "argsort",
    "cumulative_prod",
    "searchsorted",
    "sort",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]
