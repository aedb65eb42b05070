"""Kernels of the linalg, fft and complex-number ops (issue 18): the NumPy spec kernels and the
Array API ones.

Every kernel works on the last two axes and keeps the batch axes. Decompositions whose factors
are defined only up to signs (``qr``, ``eigh``, ``svd``) run the NumPy spec kernel on the host
on CPU devices, so every CPU backend gives the spec's factors; elsewhere (a GPU) they call the
library's ``linalg`` extension.

>>> import numpy as np
>>> KERNELS[Op.DET](np.eye(2) * 3.0).item()
9.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from p10._ops import Op


def _slogdet(a, *, part):
    sign, logabsdet = np.linalg.slogdet(a)
    return sign if part == "sign" else logabsdet


def _qr(a, *, mode="reduced", part="q"):
    q, r = np.linalg.qr(a, mode=mode)
    return q if part == "q" else r


def _eigh(a, *, part="values"):
    if part == "values":
        return np.linalg.eigvalsh(a)
    return np.linalg.eigh(a).eigenvectors


def _svd(a, *, full_matrices=False, part="s"):
    if part == "s":
        return np.linalg.svd(a, compute_uv=False)
    u, _, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u if part == "u" else vh


def _solve(a, b):
    return np.linalg.solve(a, b)


def _fftn(x, *, s, axes, norm="backward", inverse=False):
    fn = np.fft.ifftn if inverse else np.fft.fftn
    return fn(x, s=tuple(s), axes=tuple(axes), norm=norm)


KERNELS = {
    Op.FFTN: _fftn,
    Op.RFFT: lambda x, *, n, axis, norm="backward": np.fft.rfft(x, n=n, axis=axis, norm=norm),
    Op.IRFFT: lambda x, *, n, axis, norm="backward": np.fft.irfft(x, n=n, axis=axis, norm=norm),
    Op.INV: np.linalg.inv,
    Op.SOLVE: _solve,
    Op.DET: np.linalg.det,
    Op.SLOGDET: _slogdet,
    Op.CHOLESKY: lambda a, *, upper=False: np.linalg.cholesky(a, upper=upper),
    Op.QR: _qr,
    Op.EIGH: _eigh,
    Op.SVD: _svd,
}
"""The NumPy spec kernel of every linalg op."""


def array_api_kernels(lib: Any, on_host: Any) -> dict[Op, Any]:
    """Kernels for an Array API library: the host spec kernels on a CPU device, else the
    library's ``linalg`` extension (a missing one raises when called)."""
    xp = lib.xp
    table = _complex_kernels(xp)
    if lib.cpu:
        table.update({op: on_host(lib, spec) for op, spec in KERNELS.items()})
        return table
    la = xp.linalg

    def slogdet(a, *, part):
        return la.slogdet(a)[0 if part == "sign" else 1]

    def qr(a, *, mode="reduced", part="q"):
        return la.qr(a, mode=mode)[0 if part == "q" else 1]

    def eigh(a, *, part="values"):
        return la.eigvalsh(a) if part == "values" else la.eigh(a)[1]

    def svd(a, *, full_matrices=False, part="s"):
        if part == "s":
            return la.svdvals(a)
        return la.svd(a, full_matrices=full_matrices)[0 if part == "u" else 2]

    table |= _fft_kernels(xp)
    return table | {
        Op.INV: la.inv,
        Op.SOLVE: la.solve,
        Op.DET: la.det,
        Op.SLOGDET: slogdet,
        Op.CHOLESKY: lambda a, *, upper=False: la.cholesky(a, upper=upper),
        Op.QR: qr,
        Op.EIGH: eigh,
        Op.SVD: svd,
    }


def _complex_kernels(xp: Any) -> dict[Op, Any]:
    """real/imag/conj that also take real arrays (the standard's imag needs a complex one)."""

    def real(x):
        return xp.real(x) if xp.isdtype(x.dtype, "complex floating") else xp.asarray(x, copy=True)

    def imag(x):
        return xp.imag(x) if xp.isdtype(x.dtype, "complex floating") else xp.zeros_like(x)

    def conj(x):
        return xp.conj(x) if xp.isdtype(x.dtype, "complex floating") else xp.asarray(x, copy=True)

    return {Op.REAL: real, Op.IMAG: imag, Op.CONJ: conj}


def _fft_kernels(xp: Any) -> dict[Op, Any]:
    f = xp.fft

    def fftn(x, *, s, axes, norm="backward", inverse=False):
        return (f.ifftn if inverse else f.fftn)(x, s=tuple(s), axes=tuple(axes), norm=norm)

    return {
        Op.FFTN: fftn,
        Op.RFFT: lambda x, *, n, axis, norm="backward": f.rfft(x, n=n, axis=axis, norm=norm),
        Op.IRFFT: lambda x, *, n, axis, norm="backward": f.irfft(x, n=n, axis=axis, norm=norm),
    }
