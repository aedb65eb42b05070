"""Array API elementwise functions beyond the core set: inverse and hyperbolic trigonometry,
``log2``/``log10``, ``logaddexp``, ``hypot``, ``copysign``, ``nextafter``, ``trunc``,
``signbit`` and the bitwise shifts. They follow the promotion rules of :mod:`p10._elementwise`.

>>> import p10
>>> p10.atan2(p10.asarray([1.0]), p10.asarray([1.0])).tolist() == [p10.atan(1.0).item()]
True
"""

from __future__ import annotations

from typing import Any

from p10._elementwise import binary, operands, promote_mixed, to_float
from p10._errors import DTypeError
from p10._ops import Op
from p10._tensor import apply


def _float_unary(op: Op, doc: str):
    def fn(x: Any, /) -> Any:
        return apply(op, to_float(operands(x)[0]))

    fn.__name__ = fn.__qualname__ = op.value
    fn.__doc__ = doc
    return fn


def _float_binary(op: Op, doc: str):
    def fn(x1: Any, x2: Any, /) -> Any:
        x1, x2 = operands(x1, x2)
        if x1.dtype.kind != "f" and x2.dtype.kind != "f":
            x1, x2 = to_float(x1), to_float(x2)
        return apply(op, *promote_mixed(x1, x2))

    fn.__name__ = fn.__qualname__ = op.value
    fn.__doc__ = doc
    return fn


def _int_binary(op: Op, doc: str):
    def fn(x1: Any, x2: Any, /) -> Any:
        x1, x2 = operands(x1, x2)
        if x1.dtype.kind not in "iu" or x2.dtype.kind not in "iu":
            raise DTypeError(
                f"{op.value}: needs integer tensors, got {x1.dtype.name} {x1.shape} and "
                f"{x2.dtype.name} {x2.shape}; cast with .astype(p10.int64) first"
            )
        return binary(op, x1, x2)

    fn.__name__ = fn.__qualname__ = op.value
    fn.__doc__ = doc
    return fn


def _show(call: str, result: str) -> str:
    return f"\n\n    >>> import p10\n    >>> p10.{call}.tolist()\n    {result}\n"


acos = _float_unary(Op.ACOS, "Elementwise arc cosine." + _show("acos(p10.asarray([1.0]))", "[0.0]"))
acosh = _float_unary(
    Op.ACOSH, "Elementwise inverse hyperbolic cosine." + _show("acosh(p10.asarray([1.0]))", "[0.0]")
)
asin = _float_unary(Op.ASIN, "Elementwise arc sine." + _show("asin(p10.asarray([0.0]))", "[0.0]"))
asinh = _float_unary(
    Op.ASINH, "Elementwise inverse hyperbolic sine." + _show("asinh(p10.asarray([0.0]))", "[0.0]")
)
atan = _float_unary(
    Op.ATAN, "Elementwise arc tangent." + _show("atan(p10.asarray([0.0]))", "[0.0]")
)
atanh = _float_unary(
    Op.ATANH,
    "Elementwise inverse hyperbolic tangent." + _show("atanh(p10.asarray([0.0]))", "[0.0]"),
)
cosh = _float_unary(
    Op.COSH, "Elementwise hyperbolic cosine." + _show("cosh(p10.asarray([0.0]))", "[1.0]")
)
sinh = _float_unary(
    Op.SINH, "Elementwise hyperbolic sine." + _show("sinh(p10.asarray([0.0]))", "[0.0]")
)
log2 = _float_unary(
    Op.LOG2, "Elementwise base-2 logarithm." + _show("log2(p10.asarray([1.0, 8.0]))", "[0.0, 3.0]")
)
log10 = _float_unary(
    Op.LOG10, "Elementwise base-10 logarithm." + _show("log10(p10.asarray([100.0]))", "[2.0]")
)
signbit = _float_unary(
    Op.SIGNBIT,
    "Elementwise test of the sign bit (True for -0.0 too)."
    + _show("signbit(p10.asarray([-0.0, 1.0]))", "[True, False]"),
)
atan2 = _float_binary(
    Op.ATAN2,
    "Elementwise angle of the point ``(x2, x1)``, quadrant-aware ``atan(x1 / x2)``."
    + _show("atan2(p10.asarray([0.0]), 1.0)", "[0.0]"),
)
logaddexp = _float_binary(
    Op.LOGADDEXP,
    "Elementwise ``log(exp(x1) + exp(x2))`` without overflow."
    + _show("logaddexp(p10.asarray([0.0]), 0.0)", "[0.6931471824645996]"),
)
hypot = _float_binary(
    Op.HYPOT,
    "Elementwise ``sqrt(x1**2 + x2**2)`` without overflow."
    + _show("hypot(p10.asarray([3.0]), 4.0)", "[5.0]"),
)
copysign = _float_binary(
    Op.COPYSIGN,
    "Elementwise ``|x1|`` with the sign of ``x2``."
    + _show("copysign(p10.asarray([2.0, 3.0]), -1.0)", "[-2.0, -3.0]"),
)
nextafter = _float_binary(
    Op.NEXTAFTER,
    "Elementwise next representable float after ``x1`` toward ``x2``."
    + _show("nextafter(p10.asarray([0.0]), 1.0)", "[1.401298464324817e-45]"),
)
bitwise_left_shift = _int_binary(
    Op.BITWISE_LEFT_SHIFT,
    "Elementwise ``x1 << x2`` of integers."
    + _show("bitwise_left_shift(p10.asarray([1, 3]), 2)", "[4, 12]"),
)
bitwise_right_shift = _int_binary(
    Op.BITWISE_RIGHT_SHIFT,
    "Elementwise ``x1 >> x2`` of integers (arithmetic for signed)."
    + _show("bitwise_right_shift(p10.asarray([-8, 12]), 2)", "[-2, 3]"),
)


def trunc(x: Any, /) -> Any:
    """Elementwise rounding toward zero; integer tensors come back unchanged in dtype.

    >>> import p10
    >>> p10.trunc(p10.asarray([-1.7, 2.5])).tolist()
    [-1.0, 2.0]
    """
    return apply(Op.TRUNC, operands(x)[0])
