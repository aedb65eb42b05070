"""Gradient rules of the fft ops (issue 18), entered into :data:`tpx.rules.RULES`.

The transforms are linear. ``fftn`` and ``rfft`` are written as their transposes (the DFT
matrix is symmetric, so the transpose of a transform is the same transform, after undoing the
crop/zero-pad to ``s``); :mod:`tpx._complex_rules` turns a transpose into the conjugate
transpose PyTorch's convention asks for, and keeps the real part for ``rfft``'s real input.
``irfft`` reads only the real part of its first (and, for even ``n``, its last) bin and counts
the other bins twice; its rule is written out: ``rfft(g)`` with the other norm, doubled bins
doubled, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import p10
from p10 import Op
from tpx._graph import Rule, RuleContext

Grads = tuple[Any, ...]
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _resize(x: Any, axis: int, size: int) -> Any:
    """``x`` cropped or zero-padded at the end of ``axis`` to ``size``."""
    have = x.shape[axis]
    if have > size:
        return x[(slice(None),) * axis + (slice(0, size),)]
    if have < size:
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, size - have)
        return p10.pad(x, tuple(widths))
    return x


def _fftn(ctx: RuleContext, g: Any) -> Grads:
    p = ctx.params
    axes = tuple(p["axes"])
    out = p10.apply(
        Op.FFTN, g, s=tuple(g.shape[a] for a in axes), axes=axes, norm=p["norm"],
        inverse=p["inverse"],
    )  # fmt: skip
    shape = ctx.input_shapes[0]
    for a in axes:
        out = _resize(out, a, shape[a])
    return (out,)


def _rfft(ctx: RuleContext, g: Any) -> Grads:
    p = ctx.params
    n, axis = p["n"], p["axis"]
    full = _resize(g, axis, n)
    out = p10.apply(Op.FFTN, full, s=(n,), axes=(axis,), norm=p["norm"], inverse=False)
    return (_resize(out, axis, ctx.input_shapes[0][axis]),)


def _irfft(ctx: RuleContext, g: Any) -> Grads:
    p = ctx.params
    n, axis = p["n"], p["axis"]
    half = p10.apply(Op.RFFT, g, n=n, axis=axis, norm=_SWAP[p["norm"]])
    twice = np.ones(n // 2 + 1)
    twice[1 : (n + 1) // 2] = 2.0  # NOTE: bins that stand for themselves and their mirror
    shape = [1] * g.ndim
    shape[axis] = n // 2 + 1
    weights = p10.asarray(twice.reshape(shape), dtype=g.dtype, backend=g.backend)
    grad = half * weights
    return (p10.astype(_resize(grad, axis, ctx.input_shapes[0][axis]), ctx.input_dtypes[0]),)


RULES: dict[Op, Rule] = {
    Op.FFTN: Rule(_fftn),
    Op.RFFT: Rule(_rfft),
    Op.IRFFT: Rule(_irfft),
}
"""The rules of the fft ops, in enum order."""
