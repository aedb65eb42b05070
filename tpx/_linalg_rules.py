"""Gradient rules of the linalg ops (issue 18), entered into :data:`tpx.rules.RULES`.

The formulas are PyTorch's (``FunctionsManual.cpp``) for real inputs, written with P10 calls so
that they also record under ``create_graph``. A decomposition with several factors is one op
per factor (``part=``); the rule of each factor recomputes the other factors from the saved
input and returns that factor's share of the input gradient (the shares add up to PyTorch's).

Conventions and errors, as PyTorch documents them:

- ``det``/``slogdet``/``inv``/``solve`` use the inverse: at a singular matrix the kernel raises
  (PyTorch's ``det`` goes through an SVD there and returns the adjugate; not done here).
- ``eigh``: eigenvector gradients are finite only for distinct eigenvalues (inf/NaN otherwise,
  as in PyTorch); the gradient is not symmetrized (as PyTorch).
- ``svd``: ``U``/``Vh`` gradients need ``full_matrices=False`` when the matrix is not square
  (a :class:`~tpx.RuleError`, as PyTorch raises), and are finite only for distinct nonzero
  singular values.
- ``qr``: differentiable for ``M >= N`` (``mode="complete"`` only when square); ``M < N``
  raises a :class:`~tpx.RuleError` (PyTorch has a formula there; not done here).
"""

from __future__ import annotations

from typing import Any

import p10
from p10 import Op
from tpx._errors import RuleError
from tpx._graph import Rule, RuleContext

Grads = tuple[Any, ...]


def _mT(x: Any) -> Any:
    return p10.matrix_transpose(x)


def _col(v: Any) -> Any:
    """``v`` (..., K) as (..., 1, K): multiplies the columns of a matrix."""
    return p10.expand_dims(v, axis=-2)


def _row(v: Any) -> Any:
    """``v`` (..., K) as (..., K, 1): multiplies the rows of a matrix."""
    return p10.expand_dims(v, axis=-1)


def _eye_like(x: Any, n: int) -> Any:
    return p10.eye(n, dtype=x.dtype, backend=x.backend)


def _inv(ctx: RuleContext, g: Any) -> Grads:
    y = _mT(ctx.output)
    return (-p10.matmul(p10.matmul(y, g), y),)


def _solve(ctx: RuleContext, g: Any) -> Grads:
    a, x = ctx.inputs[0], ctx.output
    gb = p10.apply(Op.SOLVE, _mT(a), g)
    na, _ = ctx.needs_input_grad
    return (-p10.matmul(gb, _mT(x)) if na else None, gb)


def _det(ctx: RuleContext, g: Any) -> Grads:
    a, d = ctx.inputs[0], ctx.output
    return (_row(_row(g * d)) * _mT(p10.linalg.inv(a)),)


def _slogdet(ctx: RuleContext, g: Any) -> Grads:
    if ctx.params.get("part") == "sign":
        return (None,)  # NOTE: the sign is piecewise constant
    return (_row(_row(g)) * _mT(p10.linalg.inv(ctx.inputs[0])),)


def _cholesky(ctx: RuleContext, g: Any) -> Grads:
    upper = ctx.params.get("upper", False)
    lo, gl = (_mT(ctx.output), _mT(g)) if upper else (ctx.output, g)
    phi = p10.matmul(_mT(lo), gl)
    n = phi.shape[-1]
    phi = p10.tril(phi, k=-1) + 0.5 * phi * _eye_like(phi, n)
    lo_inv = p10.linalg.inv(lo)
    ga = p10.matmul(p10.matmul(_mT(lo_inv), phi), lo_inv)
    return (0.5 * (ga + _mT(ga)),)


def _qr(ctx: RuleContext, g: Any) -> Grads:
    a = ctx.inputs[0]
    m, n = a.shape[-2:]
    if m < n or (ctx.params.get("mode") == "complete" and m != n):
        raise RuleError(
            f"qr: the gradient needs M >= N (and mode='reduced' unless square), got a matrix of "
            f"shape {a.shape} with mode={ctx.params.get('mode')!r}; PyTorch raises for complete "
            "mode too; use mode='reduced' on a tall matrix, or qr of its transpose"
        )
    q, r = p10.linalg.qr(a)
    if ctx.params.get("part") == "q":
        gq, gr = g, p10.zeros(r.shape, dtype=g.dtype, backend=g.backend)
    else:
        gq, gr = p10.zeros(q.shape, dtype=g.dtype, backend=g.backend), g
    qdq = p10.matmul(_mT(q), gq)
    rdr = p10.matmul(r, _mT(gr))
    low = p10.tril(qdq - _mT(qdq) + rdr - _mT(rdr))
    r_inv_t = _mT(p10.linalg.inv(r))
    ga = p10.matmul(q, gr + p10.matmul(low, r_inv_t))
    return (ga + p10.matmul(gq - p10.matmul(q, qdq), r_inv_t),)


def _eigh(ctx: RuleContext, g: Any) -> Grads:
    w, v = p10.linalg.eigh(ctx.inputs[0])
    if ctx.params.get("part") == "values":
        return (p10.matmul(v * _col(g), _mT(v)),)
    gap = _col(w) - _row(w)  # gap[i, j] = w_j - w_i
    n = w.shape[-1]
    off = 1.0 - _eye_like(w, n)
    f = off / (gap + _eye_like(w, n))
    return (p10.matmul(p10.matmul(v, f * p10.matmul(_mT(v), g)), _mT(v)),)


def _svd(ctx: RuleContext, g: Any) -> Grads:
    a, part = ctx.inputs[0], ctx.params.get("part")
    m, n = a.shape[-2:]
    if part != "s" and ctx.params.get("full_matrices") and m != n:
        raise RuleError(
            f"svd: the gradient of U or Vh of a {m}x{n} matrix needs full_matrices=False "
            "(the extra columns are not unique), as in PyTorch; pass full_matrices=False"
        )
    u, s, vh = p10.linalg.svd(a, full_matrices=False)
    if part == "s":
        return (p10.matmul(u * _col(g), vh),)
    k = s.shape[-1]
    s2 = s * s
    e = _col(s2) - _row(s2) + _eye_like(s, k)  # e[j, k] = s_k^2 - s_j^2, 1 on the diagonal
    v = _mT(vh)
    if part == "u":
        skew = p10.matmul(_mT(u), g)
        core = ((skew - _mT(skew)) / e) * _col(s)
        rest = p10.matmul((g - p10.matmul(u, p10.matmul(_mT(u), g))) * _col(1.0 / s), vh)
        return (p10.matmul(p10.matmul(u, core), vh) + rest,)
    gv = _mT(g)
    skew = p10.matmul(_mT(v), gv)
    core = _row(s) * ((skew - _mT(skew)) / e)
    proj = _mT(gv) - p10.matmul(p10.matmul(_mT(gv), v), vh)  # gV^T (I - V V^T)
    rest = p10.matmul(u * _col(1.0 / s), proj)
    return (p10.matmul(p10.matmul(u, core), vh) + rest,)


RULES: dict[Op, Rule] = {
    Op.INV: Rule(_inv, save_output=True),
    Op.SOLVE: Rule(_solve, (0,), save_output=True),
    Op.DET: Rule(_det, (0,), save_output=True),
    Op.SLOGDET: Rule(_slogdet, (0,)),
    Op.CHOLESKY: Rule(_cholesky, save_output=True),
    Op.QR: Rule(_qr, (0,)),
    Op.EIGH: Rule(_eigh, (0,)),
    Op.SVD: Rule(_svd, (0,)),
}
"""The rules of the linalg ops, in enum order."""
