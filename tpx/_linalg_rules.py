"""Gradient rules of the linalg ops (issue 18), entered into :data:`tpx.rules.RULES`.

The formulas are PyTorch's (``FunctionsManual.cpp``), written with P10 calls so that they also
record under ``create_graph``. A decomposition with several factors is one op per factor
(``part=``); the rule of each factor recomputes the other factors from the saved input and
returns that factor's share of the input gradient (the shares add up to PyTorch's).

Complex inputs (PyTorch's convention, see :mod:`tpx._complex_rules`): ``inv``, ``solve`` and
``det`` are holomorphic and get the generic wrapper; ``slogdet``, ``cholesky``, ``qr``, ``eigh``
and ``svd`` are not, and handle complex values here: their formulas are the real ones with the
transpose replaced by the conjugate transpose, plus the terms the phases add (the imaginary
diagonal of ``Q^H gQ`` for ``qr``, of ``U^H gU`` for ``svd``). Decompositions of complex
matrices are unique up to the phases of their columns: the gradients are right for losses that
do not depend on those phases (as in PyTorch).

Conventions and errors, as PyTorch documents them:

- ``det`` at a singular matrix: the gradient is the cofactor matrix, computed there from an SVD
  (``det(U) det(Vh)`` times the products of all singular values but one); elsewhere from the
  inverse. ``slogdet``'s ``logabsdet`` of a singular matrix is ``-inf`` and has no finite
  gradient: a :class:`~tpx.RuleError` (PyTorch returns infinities).
- ``eigh``: eigenvector gradients are finite only for distinct eigenvalues (inf/NaN otherwise,
  as in PyTorch).
- ``svd``: ``U``/``Vh`` gradients need ``full_matrices=False`` when the matrix is not square
  (a :class:`~tpx.RuleError`, as PyTorch raises), and are finite only for distinct nonzero
  singular values.
- ``qr``: ``mode="complete"`` is differentiable only for ``M <= N`` (PyTorch raises as well);
  ``M < N`` splits ``A = [X | Y]`` and differentiates ``X = Q R[:, :M]`` and ``Y = Q R[:, M:]``.
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


def _mH(x: Any) -> Any:
    """The conjugate transpose (the transpose of a real matrix)."""
    return _conj(_mT(x))


def _conj(x: Any) -> Any:
    return p10.conj(x) if x.dtype.kind == "c" else x


def _col(v: Any) -> Any:
    """``v`` (..., K) as (..., 1, K): multiplies the columns of a matrix."""
    return p10.expand_dims(v, axis=-2)


def _row(v: Any) -> Any:
    """``v`` (..., K) as (..., K, 1): multiplies the rows of a matrix."""
    return p10.expand_dims(v, axis=-1)


def _eye_like(x: Any, n: int) -> Any:
    return p10.eye(n, dtype=x.dtype, backend=x.backend)


def _diag_of(x: Any) -> Any:
    """The diagonal of each matrix, as a diagonal matrix."""
    return x * _eye_like(p10.real(x) if x.dtype.kind == "c" else x, x.shape[-1])


def _im_diag(x: Any) -> Any:
    """``i Im(diag(x))`` as a vector: what phases add to a complex factor's gradient."""
    return p10.astype(p10.imag(p10.linalg.diagonal(x)), x.dtype) * 1j


def _inv(ctx: RuleContext, g: Any) -> Grads:
    y = _mT(ctx.output)
    return (-p10.matmul(p10.matmul(y, g), y),)


def _solve(ctx: RuleContext, g: Any) -> Grads:
    a, x = ctx.inputs[0], ctx.output
    gb = p10.apply(Op.SOLVE, _mT(a), g)
    na, _ = ctx.needs_input_grad
    return (-p10.matmul(gb, _mT(x)) if na else None, gb)


def _cofactors_svd(a: Any) -> Any:
    """The cofactor matrix of each matrix, singular or not: with ``a = U S Vh``,
    ``adj(a)^T = det(U) det(Vh) conj(U) diag(prod_{j != i} s_j) conj(Vh)``."""
    u, s, vh = p10.linalg.svd(a, full_matrices=False)
    n = s.shape[-1]
    others = p10.where(p10.astype(_eye_like(s, n), "bool"), 1.0, _row(s))  # [i, j]: s_j, 1 at i
    phase = p10.linalg.det(u) * p10.linalg.det(vh)
    d = p10.prod(others, axis=-2) * _row(phase)
    # NOTE: adj(a) = det(a) a^-1 = phase Vh^H diag(d) U^H, so its transpose has conj(U), conj(Vh)
    return p10.matmul(_conj(u) * _col(p10.astype(d, u.dtype)), _conj(vh))


def _near_singular(a: Any, d: Any) -> Any:
    """Where ``|det|`` is within rounding of 0 against Hadamard's bound (the product of the
    row norms): there the inverse is not to be trusted (or does not exist)."""
    n = a.shape[-1]
    bound = p10.prod(p10.linalg.vector_norm(a, axis=-1), axis=-1)
    tol = 100 * n * p10.finfo(a.dtype).eps
    return p10.abs(d) <= bound * tol


def _det(ctx: RuleContext, g: Any) -> Grads:
    a, d = ctx.inputs[0], ctx.output
    singular = _near_singular(a, d)
    if not p10.any(singular).item():
        return (_row(_row(g * d)) * _mT(p10.linalg.inv(a)),)
    # NOTE: the inverse does not exist: the cofactors come from an SVD there (as PyTorch)
    n = a.shape[-1]
    mask = _row(_row(singular))
    safe = p10.where(mask, _eye_like(a, n), a)
    regular = _row(_row(g * d)) * _mT(p10.linalg.inv(safe))
    return (p10.where(mask, _row(_row(g)) * _cofactors_svd(a), regular),)


def _slogdet(ctx: RuleContext, g: Any) -> Grads:
    if ctx.params.get("part") == "sign":
        return (None,)  # NOTE: the sign of a real matrix is piecewise constant
    a = ctx.inputs[0]
    if p10.any(_near_singular(a, p10.linalg.det(a))).item():
        raise RuleError(
            f"slogdet: the gradient of logabsdet at a singular matrix (shape {a.shape}) is "
            "infinite (logabsdet is -inf there); differentiate det instead, or regularize the "
            "matrix (a + eps * I)"
        )
    return (_row(_row(g)) * _mH(p10.linalg.inv(a)),)


def _cholesky(ctx: RuleContext, g: Any) -> Grads:
    upper = ctx.params.get("upper", False)
    lo, gl = (_mH(ctx.output), _mH(g)) if upper else (ctx.output, g)
    phi = p10.matmul(_mH(lo), gl)
    phi = p10.tril(phi, k=-1) + 0.5 * _diag_of(phi)
    lo_inv = p10.linalg.inv(lo)
    ga = p10.matmul(p10.matmul(_mH(lo_inv), phi), lo_inv)
    return (0.5 * (ga + _mH(ga)),)


def _qr_square(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """The gradient of ``a = q r`` for ``M >= N`` (reduced factors; ``gq``, ``gr`` as them)."""
    qdq = p10.matmul(_mH(q), gq)
    rdr = p10.matmul(r, _mH(gr))
    skew = qdq - _mH(qdq) + rdr - _mH(rdr)
    # NOTE: the diagonal of a skew-Hermitian matrix is imaginary (0 when real): half of it
    # goes to the lower triangle, for R's real diagonal
    low = p10.tril(skew, k=-1) + 0.5 * _diag_of(skew)
    r_inv_h = _mH(p10.linalg.inv(r))
    ga = p10.matmul(q, gr + p10.matmul(low, r_inv_h))
    return ga + p10.matmul(gq - p10.matmul(q, qdq), r_inv_h)


def _qr(ctx: RuleContext, g: Any) -> Grads:
    a = ctx.inputs[0]
    m, n = a.shape[-2:]
    if ctx.params.get("mode") == "complete" and m > n:
        raise RuleError(
            f"qr: the gradient of mode='complete' needs M <= N, got a matrix of shape {a.shape} "
            "(the extra columns of Q are not unique), as in PyTorch; use mode='reduced'"
        )
    q, r = p10.linalg.qr(a)
    shape = r.shape if ctx.params.get("part") == "q" else q.shape
    zeros = p10.zeros(shape, dtype=g.dtype, backend=g.backend)
    gq, gr = (g, zeros) if ctx.params.get("part") == "q" else (zeros, g)
    if m >= n:
        return (_qr_square(q, r, gq, gr),)
    # NOTE: a = [x | y] with x = q r[:, :m] square and y = q r[:, m:]: y's share is q gr2,
    # and y = q r2 moves q's gradient by y gr2^H
    y, gr1, gr2 = a[..., m:], gr[..., :m], gr[..., m:]
    gx = _qr_square(q, r[..., :m], gq + p10.matmul(y, _mH(gr2)), gr1)
    return (p10.concat((gx, p10.matmul(q, gr2)), axis=-1),)


def _eigh(ctx: RuleContext, g: Any) -> Grads:
    w, v = p10.linalg.eigh(ctx.inputs[0])
    if ctx.params.get("part") == "values":
        return (p10.matmul(v * _col(p10.astype(g, v.dtype)), _mH(v)),)
    gap = _col(w) - _row(w)  # gap[i, j] = w_j - w_i
    n = w.shape[-1]
    off = 1.0 - _eye_like(w, n)
    f = p10.astype(off / (gap + _eye_like(w, n)), v.dtype)
    return (p10.matmul(p10.matmul(v, f * p10.matmul(_mH(v), g)), _mH(v)),)


def _svd_u(u: Any, s: Any, vh: Any, g: Any, e: Any) -> Any:
    skew = p10.matmul(_mH(u), g)
    core = ((skew - _mH(skew)) / e) * _col(s)
    if g.dtype.kind == "c":
        # NOTE: the phase of each (u_i, v_i) pair: fixed with v's, so u's carries it all
        core = core + _diag_vec(_im_diag(skew) / p10.astype(s, g.dtype))
    out = p10.matmul(p10.matmul(u, core), vh)
    if u.shape[-2] == u.shape[-1]:
        return out  # NOTE: (I - U U^H) is 0: no 1/s (finite at a singular square matrix)
    return out + p10.matmul((g - p10.matmul(u, skew)) * _col(1.0 / s), vh)


def _svd_vh(u: Any, s: Any, vh: Any, g: Any, e: Any) -> Any:
    gv = _mH(g)
    v = _mH(vh)
    skew = p10.matmul(_mH(v), gv)
    core = _row(s) * ((skew - _mH(skew)) / e)
    out = p10.matmul(p10.matmul(u, core), vh)
    if vh.shape[-2] == vh.shape[-1]:
        return out  # NOTE: (I - V V^H) is 0, as for U
    proj = _mH(gv) - p10.matmul(p10.matmul(_mH(gv), v), vh)  # gV^H (I - V V^H)
    return out + p10.matmul(u * _col(1.0 / s), proj)


def _diag_vec(d: Any) -> Any:
    """A vector (..., K) as diagonal matrices (..., K, K)."""
    k = d.shape[-1]
    return _row(d) * _eye_like(p10.real(d) if d.dtype.kind == "c" else d, k)


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
        return (p10.matmul(u * _col(p10.astype(g, u.dtype)), vh),)
    k = s.shape[-1]
    s2 = s * s
    e = _col(s2) - _row(s2) + _eye_like(s, k)  # e[j, k] = s_k^2 - s_j^2, 1 on the diagonal
    e = p10.astype(e, u.dtype)
    return ((_svd_u if part == "u" else _svd_vh)(u, s, vh, g, e),)


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
