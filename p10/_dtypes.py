"""P10 dtypes: the Array API's set, as NumPy dtype objects (so ``p10.float32 == np.float32``).

Promotion follows the Array API table (NumPy 2's, which implements it) and NEP 50: a Python
scalar is *weak*, so a float32 tensor times 2.5 stays float32.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from p10._errors import DTypeError

bool_ = np.dtype("bool")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

DType = np.dtype
ALL_DTYPES: tuple[np.dtype, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64,
    complex64, complex128,
)  # fmt: skip
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# NOTE: by identity: a dtype also compares equal to its name ("float32"), which is no dtype
_BY_ID = {id(d): d for d in ALL_DTYPES}
FLOAT_DTYPES = (float32, float64)
COMPLEX_DTYPES = (complex64, complex128)
# NOTE: the complex dtype of each floating precision and back (complex64 <-> float32)
_COMPLEX_OF = {
    float32: complex64,
    float64: complex128,
    complex64: complex64,
    complex128: complex128,
}
REAL_OF = {complex64: float32, complex128: float64}
INT_DTYPES = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)


class _State(threading.local):
    default = float32  # NOTE: a class attribute: a thread that never set one reads it at once


_state = _State()


def to_dtype(dtype: Any) -> np.dtype:
    """Normalize a dtype given as a P10/NumPy dtype, a name or a Python type.

    >>> to_dtype("float32") is float32, to_dtype(float)
    (True, dtype('float64'))
    """
    if _BY_ID.get(id(dtype)) is dtype:  # P10's own dtype objects (the common case)
        return dtype
    if dtype is float:
        return float64
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    if dtype is complex:
        return complex128
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d is None or d.name not in _BY_NAME:
        names = ", ".join(_BY_NAME)
        raise DTypeError(f"dtype {dtype!r} is not supported by p10; use one of: {names}")
    return _BY_NAME[d.name]


def get_default_dtype() -> np.dtype:
    """The dtype of floating tensors made from Python floats (float32 unless changed).

    >>> get_default_dtype()
    dtype('float32')
    """
    return _state.default


def set_default_dtype(dtype: Any) -> None:
    """Set the default floating dtype (float32 or float64) for this thread.

    >>> set_default_dtype("float64"); get_default_dtype()
    dtype('float64')
    >>> set_default_dtype("float32")
    """
    d = to_dtype(dtype)
    if d not in FLOAT_DTYPES:
        raise DTypeError(f"set_default_dtype: {d.name} is not floating; use float32 or float64")
    _state.default = d


@contextmanager
def default_dtype(dtype: Any):
    """Context manager that sets the default floating dtype and restores it on exit.

    >>> with default_dtype("float64"):
    ...     get_default_dtype()
    dtype('float64')
    """
    previous = get_default_dtype()
    set_default_dtype(dtype)
    try:
        yield
    finally:
        _state.default = previous


_KINDS = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}


def isdtype(dtype: np.dtype, kind: Any) -> bool:
    """Array API ``isdtype``: is ``dtype`` of ``kind`` ('bool', 'signed integer', ...)?

    >>> isdtype(float32, "real floating"), isdtype(int8, ("bool", "integral"))
    (True, True)
    >>> isdtype(float64, "complex floating")
    False
    """
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise DTypeError(f"isdtype: unknown kind {kind!r}; use one of {sorted(_KINDS)}")
        return dtype.kind in _KINDS[kind]
    return dtype == to_dtype(kind)


def weak_dtype(value: Any, dtype: np.dtype) -> np.dtype:
    """The dtype a Python scalar takes next to a tensor of ``dtype`` (NEP 50, Array API).

    >>> weak_dtype(2.5, float32), weak_dtype(2.5, int8), weak_dtype(3, bool_)
    (dtype('float32'), dtype('float32'), dtype('int64'))
    >>> weak_dtype(1j, float64), weak_dtype(1.5, complex64)
    (dtype('complex128'), dtype('complex64'))
    """
    cls = value.__class__
    if cls is bool or isinstance(value, np.bool_):
        return dtype
    if cls is int or isinstance(value, np.integer):
        return dtype if dtype.kind in "iufc" else int64
    if cls is complex or isinstance(value, np.complexfloating):
        return _COMPLEX_OF[dtype] if dtype.kind in "fc" else default_complex_dtype()
    return dtype if dtype.kind in "fc" else get_default_dtype()


def default_complex_dtype() -> np.dtype:
    """The complex dtype of the default floating precision (complex64 next to float32).

    >>> default_complex_dtype()
    dtype('complex64')
    """
    return _COMPLEX_OF[get_default_dtype()]


def _scalar_dtype(value: bool | int | float | complex) -> np.dtype:
    """The dtype ``asarray(value)`` gives a Python scalar."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, complex):
        return default_complex_dtype()
    return int64 if isinstance(value, int) else get_default_dtype()


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype P10 gives an op on these tensors, dtypes and Python scalars.

    The Array API table within a kind; an integer or bool dtype next to a floating one takes the
    floating dtype (PyTorch's rule); Python scalars are weak (NEP 50). See :mod:`p10._elementwise`.

    >>> result_type(float32, 2.5), result_type(int8, int16), result_type(int64, float32)
    (dtype('float32'), dtype('int16'), dtype('float32'))
    """
    if not arrays_and_dtypes:
        raise DTypeError("result_type: needs at least one tensor, dtype or scalar")
    args = [getattr(a, "dtype", a) for a in arrays_and_dtypes]
    scalars = [a for a in args if isinstance(a, (bool, int, float, complex))]
    dtypes = [to_dtype(a) for a in args if not isinstance(a, (bool, int, float, complex))]
    if not dtypes:
        dtypes = [_scalar_dtype(scalars.pop(0))]
    floats = [d for d in dtypes if d.kind in "fc"]
    out = np.result_type(*(floats or dtypes))
    for value in scalars:
        out = weak_dtype(value, out)
    return to_dtype(out)


@dataclass(frozen=True)
class FInfo:
    """Machine limits of a floating dtype, as Python numbers (the Array API ``finfo`` object).

    >>> finfo(float64).bits, type(finfo(float64).max)
    (64, <class 'float'>)
    """

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype

    @property
    def tiny(self) -> float:
        """NumPy's name for ``smallest_normal``."""
        return self.smallest_normal


def finfo(type: Any, /) -> FInfo:
    """Machine limits of a floating dtype (``bits``, ``eps``, ``max``, ``min``,
    ``smallest_normal``) as Python ints and floats.

    >>> finfo(float32).eps
    1.1920928955078125e-07
    """
    dt = to_dtype(getattr(type, "dtype", type))
    if dt.kind not in "fc":
        raise DTypeError(f"finfo: {dt.name} is not a floating dtype; use iinfo for integers")
    dt = REAL_OF.get(dt, dt)  # NOTE: a complex dtype reports its real components' limits
    fi = np.finfo(dt)
    return FInfo(
        int(fi.bits), float(fi.eps), float(fi.max), float(fi.min), float(fi.smallest_normal), dt
    )


def iinfo(dtype: Any, /) -> np.iinfo:
    """Machine limits of an integer dtype (``min``, ``max``, ``bits``).

    >>> iinfo(int8).max
    127
    """
    return np.iinfo(to_dtype(getattr(dtype, "dtype", dtype)))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether ``from_`` casts to ``to`` under the promotion rules.

    >>> can_cast(int8, float32), can_cast(float64, float32)
    (True, False)
    """
    return bool(np.can_cast(to_dtype(getattr(from_, "dtype", from_)), to_dtype(to)))
