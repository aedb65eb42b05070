"""Products of tensors: ``matmul``, ``tensordot``, ``vecdot``, ``outer`` and ``einsum``.

>>> import p10
>>> p10.matmul(p10.ones((2, 3)), p10.ones(3)).tolist()
[3.0, 3.0]
"""

from __future__ import annotations

from typing import Any

from p10._elementwise import operands, promote_mixed
from p10._errors import ArgumentError, AxisError, ShapeError
from p10._functions import astype, multiply
from p10._ops import Op
from p10._reductions import normalize_axis
from p10._reductions import sum as _sum
from p10._shape import broadcast_shapes, reshape
from p10._tensor import apply


def matmul(x1: Any, x2: Any, /) -> Any:
    """Matrix product with NumPy's 1-D and batch broadcasting rules.

    >>> import p10
    >>> p10.matmul(p10.ones((5, 2, 3)), p10.ones((3, 4))).shape
    (5, 2, 4)
    """
    x1, x2 = operands(x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ShapeError(
            f"matmul: operands must be at least 1-D, got {x1.shape} @ {x2.shape}; "
            "use multiply for scalars"
        )
    k1, k2 = x1.shape[-1], x2.shape[-2 if x2.ndim > 1 else 0]
    if k1 != k2:
        raise ShapeError(
            f"matmul: inner dimensions differ: {x1.shape} @ {x2.shape} ({k1} != {k2}); "
            "transpose an operand (.mT) or fix its shape"
        )
    if x1.ndim > 1 and x2.ndim > 1:
        _batch_shapes(x1.shape, x2.shape)
    return apply(Op.MATMUL, *promote_mixed(x1, x2))


def _batch_shapes(s1: tuple[int, ...], s2: tuple[int, ...]) -> None:
    try:
        broadcast_shapes(s1[:-2], s2[:-2])
    except ShapeError:
        raise ShapeError(
            f"matmul: batch dimensions of {s1} @ {s2} do not broadcast ({s1[:-2]} vs {s2[:-2]}); "
            "sizes must be equal or 1 on each batch axis"
        ) from None


def tensordot(x1: Any, x2: Any, /, *, axes: int | tuple = 2) -> Any:
    """Sum products over ``axes`` (an int: the last/first ``axes`` axes; or two sequences).

    >>> import p10
    >>> p10.tensordot(p10.ones((2, 3)), p10.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    x1, x2 = operands(x1, x2)
    if isinstance(axes, int):
        a1, a2 = tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes))
    else:
        a1 = tuple(normalize_axis(a, x1.ndim, "tensordot") for a in axes[0])
        a2 = tuple(normalize_axis(a, x2.ndim, "tensordot") for a in axes[1])
    if [x1.shape[a] for a in a1] != [x2.shape[a] for a in a2]:
        raise ShapeError(
            f"tensordot: contracted sizes differ for {x1.shape} axes {a1} and {x2.shape} axes "
            f"{a2}; the paired axes must have equal sizes"
        )
    return apply(Op.TENSORDOT, *promote_mixed(x1, x2), axes=(a1, a2))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Dot product of vectors along ``axis``, with broadcasting of the other axes only.

    The contracted axis must have the same size in both inputs (it is never broadcast); the
    result keeps the inputs' promoted dtype (``int8 . int8`` is int8, as the standard says).

    >>> import p10
    >>> p10.vecdot(p10.ones((2, 3)), p10.ones(3)).tolist()
    [3.0, 3.0]
    """
    x1, x2 = operands(x1, x2)
    ndim = max(x1.ndim, x2.ndim)
    if not -ndim <= axis < ndim:
        raise AxisError(f"vecdot: axis {axis} is out of range for shapes {x1.shape} and {x2.shape}")
    neg = axis - ndim if axis >= 0 else axis
    n1 = x1.shape[neg] if x1.ndim >= -neg else None
    n2 = x2.shape[neg] if x2.ndim >= -neg else None
    if n1 != n2:
        raise ShapeError(
            f"vecdot: the contracted axis {axis} has size {n1} in {x1.shape} and {n2} in "
            f"{x2.shape}; it must be the same in both (it is not broadcast)"
        )
    prod = multiply(x1, x2)
    out = _sum(prod, axis=neg)
    return out if out.dtype == prod.dtype else astype(out, prod.dtype)


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two 1-D tensors.

    >>> import p10
    >>> p10.outer(p10.ones(2), p10.ones(3)).shape
    (2, 3)
    """
    x1, x2 = operands(x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(f"outer: needs two 1-D tensors, got {x1.shape} and {x2.shape}")
    return multiply(reshape(x1, (-1, 1)), reshape(x2, (1, -1)))


def einsum(subscripts: str, /, *operands_: Any) -> Any:
    """Einstein summation, as ``numpy.einsum``.

    >>> import p10
    >>> p10.einsum("ij,jk->ik", p10.ones((2, 3)), p10.ones((3, 4))).shape
    (2, 4)
    """
    ops = operands(*operands_)
    if "->" not in subscripts:
        raise ArgumentError(f"einsum: give the output explicitly ('...->...'), got {subscripts!r}")
    n_in = len(subscripts.split("->")[0].split(","))
    if n_in != len(ops):
        raise ArgumentError(f"einsum: {subscripts!r} names {n_in} operands, got {len(ops)}")
    return apply(Op.EINSUM, *ops, subscripts=subscripts.replace(" ", ""))
