"""The Array API fft extension (``p10.fft``).

Three ops do the transforms (``fftn``: complex to complex over several axes, forward or inverse;
``rfft`` and ``irfft``: one axis, real to half spectrum and back; TPX has a rule for each); the
rest is composed from them as NumPy does: ``rfftn`` is ``rfft`` on the last axis then ``fftn``
on the others, ``hfft``/``ihfft`` are ``irfft``/``rfft`` of the conjugate with the other norm.
``norm`` is ``"backward"`` (no scaling forward, ``1/n`` inverse), ``"ortho"`` or ``"forward"``.

>>> import p10
>>> p10.fft.fft(p10.asarray([1.0, 0.0, 0.0, 0.0])).tolist()
[(1+0j), (1+0j), (1+0j), (1+0j)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from p10._creation import asarray
from p10._dtypes import REAL_OF, default_complex_dtype, to_dtype
from p10._elementwise import operands
from p10._errors import ArgumentError, DTypeError
from p10._functions import astype
from p10._manipulation import roll
from p10._ops import Op
from p10._reductions import normalize_axis
from p10._tensor import apply

__all__ = [
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
]

_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _norm(norm: str, name: str) -> str:
    if norm not in _NORMS:
        raise ArgumentError(f"fft.{name}: norm must be one of {_NORMS}, got {norm!r}")
    return norm


def _complex(x: Any, name: str) -> Any:
    """``x`` as a complex tensor (a real one is cast to the complex dtype of its precision)."""
    (x,) = operands(x)
    if x.dtype.kind == "c":
        return x
    if x.dtype.kind == "f":
        return astype(x, {4: "complex64", 8: "complex128"}[x.dtype.itemsize])
    return astype(x, default_complex_dtype())


def _real(x: Any, name: str) -> Any:
    (x,) = operands(x)
    if x.dtype.kind == "c":
        raise DTypeError(f"fft.{name}: needs a real tensor, got {x.dtype.name}; use fft.fft")
    return x if x.dtype.kind == "f" else astype(x, REAL_OF[default_complex_dtype()])


def _size(n: int | None, default: int, name: str) -> int:
    n = default if n is None else int(n)
    if n < 1:
        raise ArgumentError(f"fft.{name}: the transform length must be >= 1, got {n}")
    return n


def _axes_and_sizes(x: Any, s: Sequence[int] | None, axes: Sequence[int] | None, name: str):
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    ax = tuple(normalize_axis(a, x.ndim, f"fft.{name}") for a in axes)
    if len(set(ax)) != len(ax):
        raise ArgumentError(f"fft.{name}: axes {tuple(axes)} repeat an axis")
    if s is None:
        s = [x.shape[a] for a in ax]
    if len(s) != len(ax):
        raise ArgumentError(f"fft.{name}: s {tuple(s)} and axes {tuple(axes)} differ in length")
    sizes = tuple(_size(n, 1, name) for n in s)
    return sizes, ax


def _fftn(x: Any, s: Any, axes: Any, norm: str, inverse: bool, name: str) -> Any:
    x = _complex(x, name)
    sizes, ax = _axes_and_sizes(x, s, axes, name)
    if not ax:
        return x
    return apply(Op.FFTN, x, s=sizes, axes=ax, norm=_norm(norm, name), inverse=inverse)


def fft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """One-dimensional discrete Fourier transform along ``axis`` (cropped/zero-padded to ``n``).

    >>> import p10
    >>> p10.fft.fft(p10.asarray([1.0, 1.0])).tolist()
    [(2+0j), 0j]
    """
    return _fftn(x, None if n is None else (n,), (axis,), norm, False, "fft")


def ifft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """Inverse of :func:`fft`.

    >>> import p10
    >>> p10.fft.ifft(p10.asarray([2.0, 0.0])).tolist()
    [(1+0j), (1+0j)]
    """
    return _fftn(x, None if n is None else (n,), (axis,), norm, True, "ifft")


def fftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """N-dimensional discrete Fourier transform over ``axes`` (all when None).

    >>> import p10
    >>> p10.fft.fftn(p10.ones((2, 2))).tolist()
    [[(4+0j), 0j], [0j, 0j]]
    """
    return _fftn(x, s, axes, norm, False, "fftn")


def ifftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """Inverse of :func:`fftn`.

    >>> import p10
    >>> p10.real(p10.fft.ifftn(p10.fft.fftn(p10.ones((2, 2))))).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    return _fftn(x, s, axes, norm, True, "ifftn")


def rfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """Fourier transform of a real signal: the ``n // 2 + 1`` non-negative frequencies.

    >>> import p10
    >>> p10.fft.rfft(p10.asarray([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j)]
    """
    x = _real(x, "rfft")
    ax = normalize_axis(axis, x.ndim, "fft.rfft")
    size = _size(n, x.shape[ax], "rfft")
    return apply(Op.RFFT, x, n=size, axis=ax, norm=_norm(norm, "rfft"))


def irfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """Inverse of :func:`rfft`: a real signal of length ``n`` (``2 * (m - 1)`` by default).

    >>> import p10
    >>> p10.fft.irfft(p10.fft.rfft(p10.asarray([1.0, 2.0, 3.0, 4.0]))).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    x = _complex(x, "irfft")
    ax = normalize_axis(axis, x.ndim, "fft.irfft")
    size = _size(n, 2 * (x.shape[ax] - 1), "irfft")
    return apply(Op.IRFFT, x, n=size, axis=ax, norm=_norm(norm, "irfft"))


def rfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """N-dimensional :func:`rfft`: the last of ``axes`` is halved, the others transformed fully.

    >>> import p10
    >>> p10.fft.rfftn(p10.ones((2, 4))).shape
    (2, 3)
    """
    x = _real(x, "rfftn")
    sizes, ax = _axes_and_sizes(x, s, axes, "rfftn")
    out = rfft(x, n=sizes[-1], axis=ax[-1], norm=norm)
    return _fftn(out, sizes[:-1], ax[:-1], norm, False, "rfftn")


def irfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """Inverse of :func:`rfftn` (the last axis becomes ``2 * (m - 1)`` long unless ``s``).

    >>> import p10
    >>> p10.fft.irfftn(p10.fft.rfftn(p10.ones((2, 4)))).tolist()
    [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    x = _complex(x, "irfftn")
    if s is None:
        axes_ = tuple(range(x.ndim)) if axes is None else tuple(axes)
        last = normalize_axis(axes_[-1], x.ndim, "fft.irfftn") if axes_ else None
        s = [x.shape[a] for a in axes_]
        if s:
            s[-1] = 2 * (x.shape[last] - 1)
        axes = axes_
    sizes, ax = _axes_and_sizes(x, s, axes, "irfftn")
    out = _fftn(x, sizes[:-1], ax[:-1], norm, True, "irfftn")
    return irfft(out, n=sizes[-1], axis=ax[-1], norm=norm)


def hfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """Fourier transform of a signal with Hermitian symmetry, given by its first half: real.

    >>> import p10
    >>> p10.fft.hfft(p10.asarray([1.0, 0.0])).tolist()
    [1.0, 1.0]
    """
    return irfft(_conj(_complex(x, "hfft")), n=n, axis=axis, norm=_SWAP[_norm(norm, "hfft")])


def ihfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """Inverse of :func:`hfft`: the first half of a Hermitian spectrum of a real signal.

    >>> import p10
    >>> p10.real(p10.fft.ihfft(p10.asarray([1.0, 1.0]))).tolist()
    [1.0, 0.0]
    """
    return _conj(rfft(x, n=n, axis=axis, norm=_SWAP[_norm(norm, "ihfft")]))


def _conj(x: Any) -> Any:
    return apply(Op.CONJ, x)


def _freq_dtype(dtype: Any) -> np.dtype:
    dt = to_dtype(dtype) if dtype is not None else REAL_OF[default_complex_dtype()]
    if dt.kind != "f":
        raise DTypeError(f"fft: frequencies need a real floating dtype, got {dt.name}")
    return dt


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point :func:`fft` with sample spacing ``d``.

    >>> import p10
    >>> p10.fft.fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    return asarray(np.fft.fftfreq(int(n), d=d), dtype=_freq_dtype(dtype), device=device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The non-negative sample frequencies of an ``n``-point :func:`rfft`.

    >>> import p10
    >>> p10.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return asarray(np.fft.rfftfreq(int(n), d=d), dtype=_freq_dtype(dtype), device=device)


def _shift(x: Any, axes: Any, sign: int) -> Any:
    (x,) = operands(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif not isinstance(axes, tuple | list):
        axes = (axes,)
    ax = tuple(normalize_axis(a, x.ndim, "fft.fftshift") for a in axes)
    if not ax:
        return x
    shifts = tuple(sign * (x.shape[a] // 2) for a in ax)
    return roll(x, shifts, axis=ax)


def fftshift(x: Any, /, *, axes: Any = None) -> Any:
    """``x`` with the zero frequency moved to the centre of ``axes`` (all when None).

    >>> import p10
    >>> p10.fft.fftshift(p10.fft.fftfreq(4)).tolist()
    [-0.5, -0.25, 0.0, 0.25]
    """
    return _shift(x, axes, 1)


def ifftshift(x: Any, /, *, axes: Any = None) -> Any:
    """Inverse of :func:`fftshift`.

    >>> import p10
    >>> p10.fft.ifftshift(p10.asarray([-0.5, -0.25, 0.0, 0.25])).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    return _shift(x, axes, -1)
