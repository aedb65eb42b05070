"""Complex autograd (issue 18): PyTorch's convention and the rules of ``real``/``imag``/``conj``.

For a real loss ``L`` of ``z = x + iy`` the gradient is ``dL/dx + i dL/dy`` (the conjugate
Wirtinger derivative, times two), as in PyTorch: gradient descent ``z -= lr * grad`` then lowers
``L``. For a holomorphic op ``w = f(z)`` this is ``grad_z = conj(f'(z)) * grad_w``, which is the
real-valued rule run on ``conj(grad_w)`` and conjugated back: :func:`conjugate_rules` wraps every
rule that way, except the non-holomorphic ops, whose rules handle complex values themselves:

- ``abs``: ``g * z / |z|`` (0 at 0); ``real``: ``g``; ``imag``:
  ``g * 1j``; ``conj``: ``conj(g)``; ``cast`` complex -> real keeps the real part, so its
  gradient is ``g`` as a complex tensor, and real -> complex gives ``real(g)``;
- a real input next to complex ones (``x * z``) gets the real part of its complex gradient;
- ``sign`` of a complex tensor has a zero gradient here (PyTorch differentiates ``z / |z|``);
- ``cholesky``, ``qr``, ``eigh`` and ``svd`` have real formulas only: a complex input raises
  :class:`~tpx.RuleError` naming the op.

A node none of whose inputs and output is complex runs the rule without the wrapper
(``Rule.real_vjp``, chosen when the node is recorded), so real graphs pay nothing for this.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import p10
from p10 import Op
from tpx._errors import RuleError
from tpx._graph import Rule, RuleContext

Grads = tuple[Any, ...]


def _real(ctx: RuleContext, g: Any) -> Grads:
    dt = ctx.input_dtypes[0]
    return (p10.astype(g, dt) if dt.kind == "c" else g,)


def _imag(ctx: RuleContext, g: Any) -> Grads:
    dt = ctx.input_dtypes[0]
    if dt.kind != "c":
        return (g * 0.0,)
    return (p10.astype(g, dt) * 1j,)


def _conj(ctx: RuleContext, g: Any) -> Grads:
    return (p10.conj(g),)


RULES: dict[Op, Rule] = {
    Op.REAL: Rule(_real),
    Op.IMAG: Rule(_imag),
    Op.CONJ: Rule(_conj),
}
"""The rules of the complex-number ops, in enum order."""

# Rules that already handle complex values, or that are not complex-analytic.
_OWN = frozenset({Op.ABS, Op.CAST, Op.REAL, Op.IMAG, Op.CONJ, Op.IRFFT})
_REAL_ONLY = frozenset({Op.CHOLESKY, Op.QR, Op.EIGH, Op.SVD})
_REAL_OUTPUT = _REAL_ONLY | {Op.SLOGDET}


def _as_input_dtype(g: Any, dt: Any) -> Any:
    """A complex gradient of a real input: its real part (``dL/dx``)."""
    if g is None or dt.kind == "c" or g.dtype.kind != "c":
        return g
    return p10.astype(p10.real(g), dt)


def _wirtinger(op: Op, vjp: Any) -> Any:
    # NOTE: an op's input is complex when its output is, except for ops with a real output
    # (slogdet's logabsdet, svd's singular values, eigh's eigenvalues): those check the input
    real_out = op in _REAL_OUTPUT

    @functools.wraps(vjp)
    def rule(ctx: RuleContext, g: Any) -> Grads:
        if g.dtype.kind != "c" and not (real_out and ctx.input_dtypes[0].kind == "c"):
            return vjp(ctx, g)
        if op in _REAL_ONLY:
            raise RuleError(
                f"{op.value}: the gradient of a complex input is not implemented (real formulas "
                "only); differentiate a real matrix, or split into real and imaginary parts"
            )
        grads = vjp(ctx, p10.conj(g))
        dts = ctx.input_dtypes
        return tuple(
            None if gi is None else _as_input_dtype(p10.conj(gi), dt) for gi, dt in zip(grads, dts)
        )

    rule.real_vjp = vjp  # type: ignore[attr-defined]  # what real nodes run (Rule.real_vjp)
    return rule


def _abs_of_complex(vjp: Any) -> Any:
    @functools.wraps(vjp)
    def rule(ctx: RuleContext, g: Any) -> Grads:
        if ctx.input_dtypes[0].kind != "c":
            return vjp(ctx, g)
        # NOTE: z / |z| spelled out (not sign(z), whose rule is zero) so that second
        # derivatives see it; 0 at z = 0, as PyTorch
        z = ctx.inputs[0]
        a = p10.abs(z)
        zero = a == 0
        unit = z / p10.astype(p10.where(zero, 1.0, a), z.dtype)
        return (p10.astype(g, z.dtype) * p10.where(zero, 0.0, unit),)

    rule.real_vjp = vjp  # type: ignore[attr-defined]
    return rule


def conjugate_rules(rules: dict[Any, Rule]) -> None:
    """Wrap every holomorphic rule of ``rules`` (in place) with PyTorch's complex convention."""
    for op, r in rules.items():
        if op is Op.ABS:
            rules[op] = dataclasses.replace(r, vjp=_abs_of_complex(r.vjp))
        elif isinstance(op, Op) and op not in _OWN:
            rules[op] = dataclasses.replace(r, vjp=_wirtinger(op, r.vjp))
