"""The ops of the linalg extension (issue 18): inverse, solve, determinants and the
decompositions, one op per factor; :mod:`p10.linalg` re-exports them next to the functions
composed from them.

>>> import p10
>>> p10.linalg.inv(p10.asarray([[2.0, 0.0], [0.0, 4.0]])).tolist()
[[0.5, 0.0], [0.0, 0.25]]
"""

from __future__ import annotations

from typing import Any, NamedTuple

from p10._elementwise import operands, to_float
from p10._errors import ArgumentError, ShapeError
from p10._functions import (
    abs,
    astype,
    divide,
    where,
)
from p10._ops import Op
from p10._shape import (
    broadcast_shapes,
    broadcast_to,
    expand_dims,
)
from p10._tensor import apply


class EighResult(NamedTuple):
    """What :func:`eigh` returns."""

    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    """What :func:`qr` returns."""

    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    """What :func:`slogdet` returns."""

    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    """What :func:`svd` returns."""

    U: Any
    S: Any
    Vh: Any


def _matrices(x: Any, name: str, square: bool = False) -> Any:
    """``x`` as a floating tensor of at least 2 dims (square ones when asked)."""
    (x,) = operands(x)
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices" if square else "matrices"
        raise ShapeError(
            f"linalg.{name}: needs a stack of {kind} (..., M, {'M' if square else 'N'}), "
            f"got shape {x.shape}"
        )
    return to_float(x)


def inv(x: Any, /) -> Any:
    """The inverse of each square matrix.

    >>> import p10
    >>> p10.linalg.inv(p10.asarray([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    return apply(Op.INV, _matrices(x, "inv", square=True))


def solve(x1: Any, x2: Any, /) -> Any:
    """The solution ``X`` of ``x1 @ X = x2``; a 1-D ``x2`` is one right-hand side vector.

    >>> import p10
    >>> p10.linalg.solve(p10.asarray([[2.0, 0.0], [0.0, 4.0]]), p10.asarray([1.0, 1.0])).tolist()
    [0.5, 0.25]
    """
    a = _matrices(x1, "solve", square=True)
    (b,) = operands(x2)
    b = to_float(b)
    if b.dtype != a.dtype:
        a, b = (
            (astype(a, b.dtype), b)
            if b.dtype.itemsize > a.dtype.itemsize
            else (a, astype(b, a.dtype))
        )
    vector = b.ndim == 1
    if vector:
        b = expand_dims(b, axis=-1)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ShapeError(
            f"linalg.solve: x1 {a.shape} and x2 {b.shape} do not fit: x2 needs shape (M,) or "
            f"(..., M, K) with M = {a.shape[-1]}"
        )
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    out = apply(Op.SOLVE, a, b)
    return out[..., 0] if vector else out


def det(x: Any, /) -> Any:
    """The determinant of each square matrix.

    >>> import p10
    >>> p10.linalg.det(p10.asarray([[1.0, 2.0], [3.0, 4.0]])).item()
    -2.0
    """
    return apply(Op.DET, _matrices(x, "det", square=True))


def slogdet(x: Any, /) -> SlogdetResult:
    """Sign and natural log of the absolute determinant of each square matrix.

    >>> import p10
    >>> s = p10.linalg.slogdet(p10.asarray([[-2.0, 0.0], [0.0, 1.0]]))
    >>> s.sign.item(), round(s.logabsdet.item(), 4)
    (-1.0, 0.6931)
    """
    a = _matrices(x, "slogdet", square=True)
    if a.dtype.kind == "c":
        # NOTE: a complex sign varies with the matrix: det / |det| carries its gradient
        d = det(a)
        mag = abs(d)
        sign = where(mag == 0, 0.0, divide(d, astype(where(mag == 0, 1.0, mag), d.dtype)))
    else:
        sign = apply(Op.SLOGDET, a, part="sign")
    return SlogdetResult(sign, apply(Op.SLOGDET, a, part="logabsdet"))


def cholesky(x: Any, /, *, upper: bool = False) -> Any:
    """The Cholesky factor of each symmetric positive-definite matrix (lower unless ``upper``).

    >>> import p10
    >>> p10.linalg.cholesky(p10.asarray([[4.0, 2.0], [2.0, 2.0]])).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    return apply(Op.CHOLESKY, _matrices(x, "cholesky", square=True), upper=bool(upper))


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition: ``Q`` with orthonormal columns and upper-triangular ``R``.

    >>> import p10
    >>> q, r = p10.linalg.qr(p10.ones((3, 2)))
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    """
    if mode not in ("reduced", "complete"):
        raise ArgumentError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    a = _matrices(x, "qr")
    return QRResult(apply(Op.QR, a, mode=mode, part="q"), apply(Op.QR, a, mode=mode, part="r"))


def eigh(x: Any, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix.

    >>> import p10
    >>> p10.linalg.eigh(p10.asarray([[2.0, 0.0], [0.0, 1.0]])).eigenvalues.tolist()
    [1.0, 2.0]
    """
    a = _matrices(x, "eigh", square=True)
    return EighResult(apply(Op.EIGH, a, part="values"), apply(Op.EIGH, a, part="vectors"))


def eigvalsh(x: Any, /) -> Any:
    """Eigenvalues (ascending) of each symmetric matrix.

    >>> import p10
    >>> p10.linalg.eigvalsh(p10.asarray([[2.0, 1.0], [1.0, 2.0]])).tolist()
    [1.0, 3.0]
    """
    return apply(Op.EIGH, _matrices(x, "eigvalsh", square=True), part="values")


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition ``x = U @ diag(S) @ Vh`` (``S`` descending).

    >>> import p10
    >>> u, s, vh = p10.linalg.svd(p10.ones((3, 2)), full_matrices=False)
    >>> u.shape, s.shape, vh.shape
    ((3, 2), (2,), (2, 2))
    """
    a = _matrices(x, "svd")
    fm = bool(full_matrices)
    parts = (apply(Op.SVD, a, full_matrices=fm, part=p) for p in ("u", "s", "vh"))
    return SVDResult(*parts)


def svdvals(x: Any, /) -> Any:
    """Singular values of each matrix, descending.

    >>> import p10
    >>> p10.linalg.svdvals(p10.asarray([[3.0, 0.0], [0.0, -4.0]])).tolist()
    [4.0, 3.0]
    """
    return apply(Op.SVD, _matrices(x, "svdvals"), full_matrices=False, part="s")
