"""Array API functions composed from other P10 functions (so TPX differentiates them through
their parts): ``meshgrid``, ``broadcast_arrays``, ``moveaxis``, ``unstack``, ``diff``,
``cumulative_sum`` and ``count_nonzero``.

>>> import p10
>>> [t.shape for t in p10.meshgrid(p10.arange(3), p10.arange(2))]
[(2, 3), (2, 3)]
"""

from __future__ import annotations

from typing import Any

from p10._creation import zeros
from p10._elementwise import operands
from p10._errors import ArgumentError, AxisError, ShapeError
from p10._functions import astype, not_equal, subtract
from p10._ops import Op
from p10._reductions import cumsum, normalize_axis, sum
from p10._shape import broadcast_shapes, broadcast_to, concat, permute_dims, reshape
from p10._tensor import apply


def broadcast_arrays(*arrays: Any) -> list[Any]:
    """The inputs broadcast against each other to one shape.

    >>> import p10
    >>> [t.shape for t in p10.broadcast_arrays(p10.ones((2, 1)), p10.ones(3))]
    [(2, 3), (2, 3)]
    """
    arrays = operands(*arrays) if arrays else ()
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    """Coordinate grids from 1-D tensors; ``"xy"`` (Cartesian) swaps the first two axes.

    >>> import p10
    >>> x, y = p10.meshgrid(p10.asarray([1, 2, 3]), p10.asarray([4, 5]))
    >>> x.tolist(), y.tolist()
    ([[1, 2, 3], [1, 2, 3]], [[4, 4, 4], [5, 5, 5]])
    """
    if indexing not in ("xy", "ij"):
        raise ArgumentError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = operands(*arrays) if arrays else ()
    for a in arrays:
        if a.ndim != 1:
            raise ArgumentError(f"meshgrid: needs 1-D tensors, got shape {a.shape}")
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        at = 1 - i if indexing == "xy" and len(arrays) > 1 and i < 2 else i
        shape = [1] * len(arrays)
        shape[at] = a.shape[0]
        out.append(broadcast_to(reshape(a, tuple(shape)), tuple(sizes)))
    return out


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    """``x`` with the axes ``source`` moved to the places ``destination`` (ints or tuples).

    >>> import p10
    >>> p10.moveaxis(p10.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    (x,) = operands(x)
    src = _axes(source, x.ndim)
    dst = _axes(destination, x.ndim)
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise AxisError(
            f"moveaxis: source {source!r} and destination {destination!r} must be as many "
            f"distinct axes of a {x.ndim}-D tensor"
        )
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def _axes(axes: Any, ndim: int) -> list[int]:
    items = axes if isinstance(axes, tuple | list) else (axes,)
    return [normalize_axis(a, ndim, "moveaxis") for a in items]


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple (the inverse of ``stack``).

    >>> import p10
    >>> [t.tolist() for t in p10.unstack(p10.asarray([[1, 2], [3, 4]]), axis=1)]
    [[1, 3], [2, 4]]
    """
    (x,) = operands(x)
    ax = normalize_axis(axis, x.ndim, "unstack")
    lead = (slice(None),) * ax
    return tuple(x[lead + (i,)] for i in range(x.shape[ax]))


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th forward difference along ``axis``, after ``prepend``/``append``.

    >>> import p10
    >>> p10.diff(p10.asarray([1, 4, 9, 16])).tolist()
    [3, 5, 7]
    """
    (x,) = operands(x)
    ax = normalize_axis(axis, x.ndim, "diff")
    if not isinstance(n, int) or n < 0:
        raise ArgumentError(f"diff: n must be a non-negative int, got {n!r}")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(operands(*parts), axis=ax)
    lead = (slice(None),) * ax
    for _ in range(n):
        x = subtract(x[lead + (slice(1, None),)], x[lead + (slice(None, -1),)])
    return x


def cumulative_operand(
    x: Any, axis: int | None, dtype: Any, name: str, error: type[Exception] = AxisError
) -> tuple[Any, int]:
    """The tensor a cumulative function ``name`` runs on (cast to ``dtype`` when given) and its
    axis; ``axis`` may be left out for a 1-D tensor only (``error`` otherwise).

    >>> x, ax = cumulative_operand([1, 2], None, "float32", "cumulative_sum")
    >>> x.dtype, ax
    (dtype('float32'), 0)
    """
    (x,) = operands(x)
    if axis is None:
        if x.ndim != 1:
            raise error(f"{name}: axis is required for a {x.ndim}-D tensor {x.shape}")
        axis = 0
    ax = normalize_axis(axis, x.ndim, name)
    return (x if dtype is None else astype(x, dtype, copy=False)), ax


def cumulative_sum(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Any:
    """Cumulative sum along ``axis`` (optional for 1-D), optionally starting with a zero.

    >>> import p10
    >>> p10.cumulative_sum(p10.asarray([1, 2, 3]), include_initial=True).tolist()
    [0, 1, 3, 6]
    """
    x, ax = cumulative_operand(x, axis, dtype, "cumulative_sum")
    out = cumsum(x, axis=ax)
    if dtype is not None and out.dtype != x.dtype:
        # NOTE: CUMSUM accumulates small integers in 64 bits; an asked dtype wraps as it would
        # had the sums been taken in it (modular arithmetic), as NumPy's cumsum(dtype=) does
        out = astype(out, x.dtype)
    if include_initial:
        shape = x.shape[:ax] + (1,) + x.shape[ax + 1 :]
        out = concat((zeros(shape, dtype=out.dtype, backend=x.backend), out), axis=ax)
    return out


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """How many elements along ``axis`` are nonzero (int64).

    >>> import p10
    >>> p10.count_nonzero(p10.asarray([[0, 1], [2, 3]]), axis=1).tolist()
    [1, 2]
    """
    (x,) = operands(x)
    return sum(astype(not_equal(x, 0), "int64"), axis=axis, keepdims=keepdims)


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    """Elements shifted by ``shift`` along ``axis`` (ints or tuples), wrapping around; over the
    flattened tensor when ``axis`` is None.

    >>> import p10
    >>> p10.roll(p10.asarray([1, 2, 3]), 1).tolist()
    [3, 1, 2]
    """
    (x,) = operands(x)
    shifts = tuple(int(s) for s in shift) if isinstance(shift, tuple | list) else (int(shift),)
    if axis is None:
        if len(shifts) != 1:
            raise ArgumentError(f"roll: {len(shifts)} shifts need as many axes, got axis=None")
        flat = reshape(x, (-1,))
        return reshape(apply(Op.ROLL, flat, shifts=shifts, axes=(0,)), x.shape)
    axes = tuple(normalize_axis(a, x.ndim, "roll") for a in _items(axis))
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ArgumentError(f"roll: shift {shift!r} and axis {axis!r} differ in length")
    return apply(Op.ROLL, x, shifts=shifts, axes=axes)


def _items(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def _tri(op: Op, x: Any, k: int, name: str) -> Any:
    (x,) = operands(x)
    if x.ndim < 2:
        raise ShapeError(f"{name}: needs at least 2 dimensions, got shape {x.shape}")
    return apply(op, x, k=int(k))


def tril(x: Any, /, *, k: int = 0) -> Any:
    """The lower triangle of the last two axes (``k`` shifts the diagonal up), zeros above.

    >>> import p10
    >>> p10.tril(p10.ones((2, 2))).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    return _tri(Op.TRIL, x, k, "tril")


def triu(x: Any, /, *, k: int = 0) -> Any:
    """The upper triangle of the last two axes (``k`` shifts the diagonal up), zeros below.

    >>> import p10
    >>> p10.triu(p10.ones((2, 2))).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    return _tri(Op.TRIU, x, k, "triu")
