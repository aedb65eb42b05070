"""NumPy spec kernels that correct NumPy where the Array API standard asks otherwise (issue 18):
special values of ``floor_divide``, of complex ``expm1`` and ``tanh``, and ``real``/``imag``/
``conj`` that also take real arrays (NumPy's return views or scalars).

>>> import numpy as np
>>> floor_divide(np.array([np.inf]), np.array([2.0])).tolist()
[inf]
"""

from __future__ import annotations

import numpy as np


def complex_of(re, im):
    """A complex array from its parts, keeping the signs of zeros (``re + 1j * im`` does not).

    >>> np.signbit(complex_of(1.0, -0.0).imag)
    np.True_
    """
    out = np.empty(np.broadcast(re, im).shape, np.result_type(re, im, np.complex64))
    out.real, out.imag = re, im
    return out


def floor_divide(a, b):
    """``a // b``; with one infinite operand ``floor(a / b)`` (``inf // 2`` is inf, ``-1 // inf``
    is -0), where NumPy gives NaN or -1."""
    out = np.floor_divide(a, b)
    if out.dtype.kind == "f":
        one_inf = np.isinf(a) ^ np.isinf(b)
        if one_inf.any():
            with np.errstate(invalid="ignore", divide="ignore"):
                out = np.where(one_inf, np.floor(np.true_divide(a, b)), out)
    return out


def expm1(x):
    """``exp(x) - 1``; complex infinities as C99 gives them (-1 + 0j at -inf + inf j, where
    NumPy gives NaN), and 0 + 0j at -0 + 0j (NumPy: -0 + 0j)."""
    out = np.expm1(x)
    if x.dtype.kind == "c":
        bad = ~np.isfinite(x)
        if bad.any():
            with np.errstate(invalid="ignore"):
                out = np.where(bad, np.exp(x) - 1, out)
        zero = x == 0
        if zero.any():
            out = np.where(zero, complex_of(0.0, x.imag).astype(x.dtype), out)
    return out


def tanh(x):
    """``tanh(x)``; at ``+-inf + iy`` (finite y) ``+-1`` with a zero imaginary part of y's sign
    (NumPy's takes the sign of ``sin(2y)``)."""
    out = np.tanh(x)
    if x.dtype.kind == "c":
        edge = np.isinf(x.real) & np.isfinite(x.imag)
        if edge.any():
            fix = complex_of(np.sign(x.real), np.copysign(0.0, x.imag)).astype(x.dtype)
            out = np.where(edge, fix, out)
    return out


# NOTE: the ufunc each complex-correcting kernel above runs first: for real dtypes it gives the
# same values, so a caller that knows its input is real (P10's floating shortcuts, p10._fast)
# calls it directly, without the Python call and the dtype test of the wrapper.
REAL_UFUNC = {expm1: np.expm1, tanh: np.tanh}


def real(x):
    """The real part, in new memory (NumPy's is a view)."""
    return np.real(x).copy()


def imag(x):
    """The imaginary part, in new memory; zeros for a real array."""
    return np.imag(x).copy()


def conj(x):
    """The complex conjugate (a copy for a real array)."""
    return np.conj(x)


def cast(x, *, dtype):
    """``x.astype(dtype)``; complex to real keeps the real part without NumPy's warning."""
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = x.real
    return x.astype(dtype)
