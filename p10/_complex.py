"""Complex-number functions of the Array API (issue 18): ``real``, ``imag`` and ``conj``.

Real inputs are accepted too: ``real`` copies them, ``imag`` gives zeros and ``conj`` copies.
TPX differentiates them with PyTorch's convention (the gradient of a real loss ``L`` with
respect to ``z = x + iy`` is ``dL/dx + i dL/dy``; see :mod:`tpx._complex_rules`).

>>> import p10
>>> z = p10.asarray([1 + 2j, -3j])
>>> p10.real(z).tolist(), p10.imag(z).tolist(), p10.conj(z).tolist()
([1.0, 0.0], [2.0, -3.0], [(1-2j), 3j])
"""

from __future__ import annotations

from typing import Any

from p10._elementwise import operands
from p10._ops import Op
from p10._tensor import apply


def real(x: Any, /) -> Any:
    """The real part of each element (float32 for complex64, float64 for complex128).

    >>> import p10
    >>> p10.real(p10.asarray([1.5 - 2j])).tolist()
    [1.5]
    """
    return apply(Op.REAL, operands(x)[0])


def imag(x: Any, /) -> Any:
    """The imaginary part of each element (zeros for a real tensor).

    >>> import p10
    >>> p10.imag(p10.asarray([1.5 - 2j])).tolist()
    [-2.0]
    """
    return apply(Op.IMAG, operands(x)[0])


def conj(x: Any, /) -> Any:
    """The complex conjugate of each element (a copy for a real tensor).

    >>> import p10
    >>> p10.conj(p10.asarray([1.5 - 2j])).tolist()
    [(1.5+2j)]
    """
    return apply(Op.CONJ, operands(x)[0])
