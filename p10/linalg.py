"""The Array API linear-algebra extension (``p10.linalg``), batched over leading axes.

Decompositions and solvers are ops (``inv``, ``solve``, ``det``, ``slogdet``, ``cholesky``,
``qr``, ``eigh``, ``svd``; TPX has a rule for each); a decomposition with several factors runs
one op per factor (``part=``), so every factor is a tensor with its own node. The rest is
composed from them and from other P10 functions (``pinv``, ``matrix_norm``, ``vector_norm``,
``matrix_power``, ``cross``, ``diagonal``, ``trace``, ...), so gradients flow through the parts.

>>> import p10
>>> a = p10.asarray([[4.0, 1.0], [1.0, 3.0]], dtype="float64")
>>> round(p10.linalg.det(a).item(), 6), p10.linalg.solve(a, p10.asarray([1.0, 2.0])).shape
(11.0, (2,))
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from p10._creation import arange, eye
from p10._dtypes import finfo
from p10._elementwise import operands, to_float
from p10._errors import ArgumentError, ShapeError
from p10._functions import (
    abs,
    astype,
    divide,
    greater,
    multiply,
    not_equal,
    pow,
    sqrt,
    subtract,
    where,
)
from p10._linalg_core import (
    EighResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    _matrices,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from p10._products import matmul, outer, tensordot, vecdot
from p10._reductions import max, min, normalize_axes, normalize_axis, sum
from p10._shape import broadcast_shapes, broadcast_to, expand_dims, matrix_transpose, reshape, stack

__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]


def _default_rtol(a: Any) -> float:
    return builtins.max(a.shape[-2:]) * finfo(a.dtype).eps


def _cutoff(s: Any, rtol: Any, a: Any) -> Any:
    """``rtol * largest singular value``, shaped to compare with ``s`` (..., K)."""
    (s,) = operands(s)
    tol = _default_rtol(a) if rtol is None else rtol
    if hasattr(tol, "ndim"):
        tol = expand_dims(astype(tol, s.dtype), axis=-1)
    largest = max(s, axis=-1, keepdims=True) if s.shape[-1] else 0.0
    return multiply(largest, tol)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse; singular values below ``rtol * max(S)`` count as 0.

    >>> import p10
    >>> p10.linalg.pinv(p10.asarray([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    a = _matrices(x, "pinv")
    u, s, vh = svd(a, full_matrices=False)
    keep = greater(s, _cutoff(s, rtol, a))
    s_inv = where(keep, divide(1.0, where(keep, s, 1.0)), 0.0)
    return matmul(multiply(matrix_transpose(vh), expand_dims(s_inv, axis=-2)), matrix_transpose(u))


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    """How many singular values of each matrix exceed ``rtol * max(S)`` (int64).

    >>> import p10
    >>> p10.linalg.matrix_rank(p10.asarray([[1.0, 2.0], [2.0, 4.0]])).item()
    1
    """
    a = _matrices(x, "matrix_rank")
    s = svdvals(a)
    return sum(astype(greater(s, _cutoff(s, rtol, a)), "int64"), axis=-1)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The ``offset`` diagonal of each matrix (above the main one when positive).

    >>> import p10
    >>> p10.linalg.diagonal(p10.asarray([[1, 2], [3, 4]]), offset=1).tolist()
    [2]
    """
    (x,) = operands(x)
    if x.ndim < 2:
        raise ShapeError(f"linalg.diagonal: needs at least 2 dimensions, got shape {x.shape}")
    rows, cols = x.shape[-2:]
    r0, c0 = builtins.max(-offset, 0), builtins.max(offset, 0)
    k = builtins.max(builtins.min(rows - r0, cols - c0), 0)
    i = arange(r0, r0 + k, dtype="int64", backend=x.backend)
    j = arange(c0, c0 + k, dtype="int64", backend=x.backend)
    return x[..., i, j]


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of the ``offset`` diagonal of each matrix.

    >>> import p10
    >>> p10.linalg.trace(p10.asarray([[1, 2], [3, 4]])).item()
    5
    """
    return sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-element vectors along ``axis`` (other axes broadcast).

    >>> import p10
    >>> p10.linalg.cross(p10.asarray([1, 0, 0]), p10.asarray([0, 1, 0])).tolist()
    [0, 0, 1]
    """
    a, b = operands(x1, x2)
    if axis >= 0 or -axis > builtins.min(a.ndim, b.ndim):
        raise ShapeError(
            f"linalg.cross: axis {axis} must be negative and within both shapes {a.shape}, "
            f"{b.shape} (axes are counted from the end)"
        )
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ShapeError(f"linalg.cross: needs size 3 along axis {axis}, got {a.shape}, {b.shape}")
    shape = broadcast_shapes(a.shape, b.shape)
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    ax = normalize_axis(axis, len(shape), "linalg.cross")
    lead = (slice(None),) * ax
    ai = [a[lead + (i,)] for i in range(3)]
    bi = [b[lead + (i,)] for i in range(3)]
    parts = [
        subtract(ai[(i + 1) % 3] * bi[(i + 2) % 3], ai[(i + 2) % 3] * bi[(i + 1) % 3])
        for i in range(3)
    ]
    return stack(parts, axis=ax)


def matrix_power(x: Any, n: int, /) -> Any:
    """``x`` multiplied by itself ``n`` times (``n < 0``: of its inverse; 0: identity).

    >>> import p10
    >>> p10.linalg.matrix_power(p10.asarray([[1, 1], [0, 1]]), 3).tolist()
    [[1, 3], [0, 1]]
    """
    (x,) = operands(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"linalg.matrix_power: needs square matrices, got shape {x.shape}")
    if not isinstance(n, int | np.integer):
        raise ArgumentError(f"linalg.matrix_power: n must be an int, got {n!r}")
    if n == 0:
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype, backend=x.backend), x.shape)
    if n < 0:
        x, n = inv(x), -n
    result = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The ``ord``-norm of the vectors along ``axis`` (all axes when None).

    >>> import p10
    >>> p10.linalg.vector_norm(p10.asarray([3.0, -4.0])).item()
    5.0
    """
    (x,) = operands(x)
    x = to_float(x)
    axes = normalize_axes(axis, x.ndim, "linalg.vector_norm")
    a = abs(x)
    if ord == math.inf:
        return max(a, axis=axes, keepdims=keepdims)
    if ord == -math.inf:
        return min(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return astype(sum(astype(not_equal(x, 0), "int64"), axis=axes, keepdims=keepdims), x.dtype)
    if ord == 1:
        return sum(a, axis=axes, keepdims=keepdims)
    if ord == 2:
        sq = multiply(a, a) if x.dtype.kind == "c" else multiply(x, x)
        return sqrt(sum(sq, axis=axes, keepdims=keepdims))
    p = float(ord)
    return pow(sum(pow(a, p), axis=axes, keepdims=keepdims), 1.0 / p)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """The ``ord``-norm of each matrix: ``"fro"``, ``"nuc"``, 1, -1, 2, -2, inf or -inf.

    >>> import p10
    >>> p10.linalg.matrix_norm(p10.asarray([[3.0, 0.0], [0.0, -4.0]]), ord=2).item()
    4.0
    """
    a = _matrices(x, "matrix_norm")
    if ord == "fro":
        m = abs(a) if a.dtype.kind == "c" else a
        out = sqrt(sum(multiply(m, m), axis=(-2, -1)))
    elif ord == "nuc":
        out = sum(svdvals(a), axis=-1)
    elif ord in (2, -2):
        s = svdvals(a)
        out = max(s, axis=-1) if ord == 2 else min(s, axis=-1)
    elif ord in (1, -1, math.inf, -math.inf):
        sums = sum(abs(a), axis=-2 if ord in (1, -1) else -1)
        out = max(sums, axis=-1) if ord > 0 else min(sums, axis=-1)
    else:
        raise ArgumentError(
            f"linalg.matrix_norm: ord {ord!r} is not one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf"
        )
    return reshape(out, out.shape + (1, 1)) if keepdims else out
