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
- ``sign`` of a complex tensor is ``z / |z|``: its gradient is ``(g - s Re(conj(s) g)) / |z|``
  (0 at 0), as PyTorch's ``sgn``; of a real tensor, zero;
- ``slogdet``, ``cholesky``, ``qr``, ``eigh`` and ``svd`` are not holomorphic: their rules
  (:mod:`tpx._linalg_rules`) take complex values with the conjugate transpose.

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
_OWN = frozenset(
    {Op.ABS, Op.SIGN, Op.CAST, Op.REAL, Op.IMAG, Op.CONJ, Op.IRFFT}
    | {Op.SLOGDET, Op.CHOLESKY, Op.QR, Op.EIGH, Op.SVD}  # tpx._linalg_rules
)


def _as_input_dtype(g: Any, dt: Any) -> Any:
    """A complex gradient of a real input: its real part (``dL/dx``)."""
    if g is None or dt.kind == "c" or g.dtype.kind != "c":
        return g
    return p10.astype(p10.real(g), dt)


def _wirtinger(vjp: Any) -> Any:
    @functools.wraps(vjp)
    def rule(ctx: RuleContext, g: Any) -> Grads:
        if g.dtype.kind != "c":
            return vjp(ctx, g)
        grads = vjp(ctx, p10.conj(g))
        dts = ctx.input_dtypes
        return tuple(
            None if gi is None else _as_input_dtype(p10.conj(gi), dt) for gi, dt in zip(grads, dts)
        )

    rule.real_vjp = vjp  # type: ignore[attr-defined]  # what real nodes run (Rule.real_vjp)
    return rule


def _abs_of_complex(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: z / |z| spelled out (not sign(z), whose rule is zero) so that second
    # derivatives see it; 0 at z = 0, as PyTorch
    z = ctx.inputs[0]
    zero, _, unit = _polar(z)
    return (p10.astype(g, z.dtype) * p10.where(zero, 0.0, unit),)


def _sign_of_complex(ctx: RuleContext, g: Any) -> Grads:
    # NOTE: sign(z) = z / |z| moves along the circle: grad = (g - s Re(conj(s) g)) / |z|,
    # 0 at z = 0 (as PyTorch's sgn); written with P10 calls so second derivatives see it
    z = ctx.inputs[0]
    zero, safe, s = _polar(z)
    g = p10.astype(g, z.dtype)
    along = s * p10.astype(p10.real(p10.conj(s) * g), z.dtype)
    return (p10.where(zero, 0.0, (g - along) / safe),)


def _polar(z: Any) -> tuple[Any, Any, Any]:
    """Where ``z`` is 0, ``|z|`` with those zeros made 1 (a safe divisor, ``z``'s dtype), and
    ``z / |z|`` (0 where ``z`` is)."""
    a = p10.abs(z)
    zero = a == 0
    safe = p10.astype(p10.where(zero, 1.0, a), z.dtype)
    return zero, safe, z / safe


def _complex_input(vjp: Any, complex_vjp: Any) -> Any:
    """The rule ``vjp`` for a real input, ``complex_vjp`` (its own convention) for a complex one."""

    @functools.wraps(vjp)
    def rule(ctx: RuleContext, g: Any) -> Grads:
        if ctx.input_dtypes[0].kind != "c":
            return vjp(ctx, g)
        return complex_vjp(ctx, g)

    rule.real_vjp = vjp  # type: ignore[attr-defined]
    return rule


_NON_HOLOMORPHIC = {Op.ABS: _abs_of_complex, Op.SIGN: _sign_of_complex}


def conjugate_rules(rules: dict[Any, Rule]) -> None:
    """Wrap every holomorphic rule of ``rules`` (in place) with PyTorch's complex convention."""
    for op, r in rules.items():
        if op in _NON_HOLOMORPHIC:
            rules[op] = dataclasses.replace(r, vjp=_complex_input(r.vjp, _NON_HOLOMORPHIC[op]))
        elif isinstance(op, Op) and op not in _OWN:
            rules[op] = dataclasses.replace(r, vjp=_wirtinger(r.vjp))


def _real_only(op: Any, vjp: Any) -> Any:
    @functools.wraps(vjp)
    def rule(ctx: RuleContext, g: Any) -> Grads:
        if g.dtype.kind == "c" or any(dt.kind == "c" for dt in ctx.input_dtypes):
            dts = ", ".join(str(dt) for dt in ctx.input_dtypes)
            raise RuleError(
                f"{op.value}: the registered rule is for real tensors, and met complex ones "
                f"(inputs {dts}, gradient {g.dtype}); register it with "
                "complex_mode='holomorphic' (a real formula of a complex-analytic op) or "
                "complex_mode='own' (the rule follows PyTorch's conjugate convention itself)"
            )
        return vjp(ctx, g)

    rule.real_vjp = vjp  # type: ignore[attr-defined]  # real nodes: the rule as registered
    return rule


def complex_rule(op: Any, vjp: Any, mode: str) -> Any:
    """The rule ``tpx.register_rule`` enters for ``vjp`` under ``complex_mode=mode``."""
    if mode == "own":
        return vjp
    if mode == "holomorphic":
        return _wirtinger(vjp)
    return _real_only(op, vjp)
