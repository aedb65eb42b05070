"""Elementwise functions, and the type promotion every P10 op with several inputs follows.

Promotion rules:

* Tensors of one kind (bool, integer or floating) promote by the Array API table, which NumPy 2
  implements: ``int8 + int16 -> int16``, ``uint8 + int8 -> int16``, ``float32 + float64 ->
  float64``.
* Python scalars are weak (NEP 50): a scalar takes the tensor's dtype when its kind fits, so
  ``float32 * 2.5`` stays float32 and ``int8 + 1`` stays int8; a float scalar next to an integer
  or bool tensor gives the default float dtype (float32 unless changed), as in PyTorch. A scalar
  that does not fit the dtype (``int8 + 1000``) raises :class:`~p10.DTypeError`.
* Integer (or bool) tensor with floating tensor, which the Array API leaves to implementations:
  the non-floating operand is first cast to the floating operand's dtype by an explicit
  ``Op.CAST``, as PyTorch does, so ``int64 tensor * float32 tensor`` is float32 (NumPy would give
  float64). :func:`promote_mixed` does this for the binary functions here, ``divide``, ``where``,
  and for ``matmul``, ``tensordot`` and ``concat``/``stack``.
* Functions defined on floats only (``exp``, ``sqrt``, ``divide``, ``mean``, ...) cast integer and
  bool inputs to the default float dtype.

>>> import p10
>>> (p10.ones(2) * 2.5).dtype, (p10.arange(2) * p10.ones(2)).dtype
(dtype('float32'), dtype('float32'))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from p10._backend import get_backend
from p10._dtypes import get_default_dtype, weak_dtype
from p10._errors import ArgumentError, DTypeError
from p10._ops import Op
from p10._tensor import Tensor, apply, wrap

Scalar = bool | int | float | complex
_SCALAR_TYPES = (bool, int, float, complex, np.bool_, np.integer, np.floating, np.complexfloating)
_PY_SCALARS = frozenset({bool, int, float, complex})
_CAST = Op.CAST


def is_tensor(x: Any) -> bool:
    """True for a P10 tensor or a tensor of a layer above that takes part in dispatch.

    >>> import p10
    >>> is_tensor(p10.ones(1)), is_tensor(1.0)
    (True, False)
    """
    return x.__class__ is Tensor or hasattr(x.__class__, "__p10_apply__")


def scalar_tensor(value: Scalar, like: Any) -> Tensor:
    """A 0-d P10 tensor holding ``value`` with the weak dtype next to ``like``.

    >>> import p10
    >>> scalar_tensor(2, p10.ones(1, dtype="int8")).dtype
    dtype('int8')
    """
    dt = weak_dtype(value, like.dtype)
    backend = like.backend
    try:
        arr = np.asarray(value, dtype=dt)
    except OverflowError as e:
        raise DTypeError(
            f"scalar {value!r} does not fit in {dt.name}, the dtype of the tensor it meets: {e}; "
            "cast the tensor to a wider dtype with .astype() first"
        ) from None
    return wrap(backend.from_numpy(arr), backend)


def operand(value: Any, like: Any) -> Any:
    """``value`` as a tensor that can meet ``like`` in an op (scalars weak, arrays converted).

    >>> import p10
    >>> operand(0.5, p10.ones(1, dtype="float64")).dtype
    dtype('float64')
    """
    cls = value.__class__
    if cls is Tensor:
        return value
    if cls in _PY_SCALARS or (
        not hasattr(cls, "__p10_apply__") and isinstance(value, _SCALAR_TYPES)
    ):
        return scalar_tensor(value, like)
    if hasattr(cls, "__p10_apply__"):
        return value
    from p10._creation import asarray

    return asarray(value, backend=like.backend if like is not None else None)


def operands(*values: Any) -> tuple[Any, ...]:
    """Convert the non-tensor values among ``values`` next to the first tensor among them.

    >>> import p10
    >>> [t.dtype.name for t in operands(1, p10.ones(1), [2, 3])]
    ['float32', 'float32', 'int64']
    """
    like = None
    for v in values:
        if is_tensor(v):
            like = v
            break
    if like is None:
        from p10._creation import asarray

        like = asarray(values[0], backend=get_backend())
    return tuple([operand(v, like) for v in values])


def promote_mixed(*xs: Any) -> tuple[Any, ...]:
    """Cast the non-floating tensors among ``xs`` to the floating dtype of the others.

    Used where integer and floating tensors meet (PyTorch's rule; see the module docstring).

    >>> import p10
    >>> [t.dtype.name for t in promote_mixed(p10.arange(2), p10.ones(2, dtype="float64"))]
    ['float64', 'float64']
    """
    kinds = [x.dtype.kind in "fc" for x in xs]
    if all(kinds) or not any(kinds):
        return xs
    floats = [x.dtype for x, f in zip(xs, kinds) if f]
    target = np.result_type(*floats)
    return tuple(x if f else apply(_CAST, x, dtype=target) for x, f in zip(xs, kinds))


def binary(op: Op, x1: Any, x2: Any) -> Any:
    """Run a binary elementwise op after converting scalar/array operands and promoting.

    >>> import p10
    >>> binary(Op.ADD, p10.arange(2), 0.5).tolist()
    [0.5, 1.5]
    """
    if x1.__class__ is not Tensor or x2.__class__ is not Tensor:
        if x1.__class__ is Tensor and x2.__class__ in _PY_SCALARS:
            x2 = scalar_tensor(x2, x1)  # the commonest mix, x * 2.0, without the general loop
        else:
            x1, x2 = operands(x1, x2)
    d1, d2 = x1.dtype, x2.dtype
    if d1 is not d2 and (d1.kind in "fc") is not (d2.kind in "fc"):
        x1, x2 = promote_mixed(x1, x2)
    return apply(op, x1, x2)


def to_float(x: Any) -> Any:
    """``x`` itself when floating, else cast to the default float dtype (for exp, log, ...).

    >>> import p10
    >>> to_float(p10.arange(2)).dtype
    dtype('float32')
    """
    if x.dtype.kind in "fc":
        return x
    return apply(_CAST, x, dtype=get_default_dtype())


def _unary_float(op: Op, doc: str):
    def fn(x: Any, /) -> Any:
        return apply(op, to_float(operands(x)[0]))

    fn.__name__ = fn.__qualname__ = op.value
    fn.__doc__ = doc
    return fn


def _unary(op: Op, doc: str):
    def fn(x: Any, /) -> Any:
        return apply(op, operands(x)[0])

    fn.__name__ = fn.__qualname__ = op.value
    fn.__doc__ = doc
    return fn


def _binary_fn(op: Op, name: str, doc: str):
    def fn(x1: Any, x2: Any, /) -> Any:
        return binary(op, x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _ex(name: str, arg: str = "[0.0, 1.0]", binary: bool = False) -> str:
    args = f"p10.asarray({arg})" + (", 2.0" if binary else "")
    return f"\n\n    >>> import p10\n    >>> p10.{name}({args}).shape\n    (2,)\n"


def _show(call: str, result: str) -> str:
    return f"\n\n    >>> import p10\n    >>> p10.{call}.tolist()\n    {result}\n"


negative = _unary(Op.NEG, "Elementwise ``-x``." + _ex("negative"))
abs = _unary(Op.ABS, "Elementwise absolute value." + _ex("abs"))
exp = _unary_float(Op.EXP, "Elementwise ``e**x``." + _ex("exp"))
log = _unary_float(Op.LOG, "Elementwise natural logarithm." + _ex("log", "[1.0, 2.0]"))
log1p = _unary_float(Op.LOG1P, "Elementwise ``log(1 + x)``, accurate near 0." + _ex("log1p"))
expm1 = _unary_float(Op.EXPM1, "Elementwise ``exp(x) - 1``, accurate near 0." + _ex("expm1"))
sqrt = _unary_float(Op.SQRT, "Elementwise square root." + _ex("sqrt"))
square = _unary(Op.SQUARE, "Elementwise ``x * x``." + _ex("square"))
reciprocal = _unary_float(Op.RECIPROCAL, "Elementwise ``1 / x``." + _ex("reciprocal", "[1., 2.]"))
sin = _unary_float(Op.SIN, "Elementwise sine." + _ex("sin"))
cos = _unary_float(Op.COS, "Elementwise cosine." + _ex("cos"))
tan = _unary_float(Op.TAN, "Elementwise tangent." + _ex("tan"))
tanh = _unary_float(Op.TANH, "Elementwise hyperbolic tangent." + _ex("tanh"))
sigmoid = _unary_float(Op.SIGMOID, "Elementwise logistic ``1 / (1 + exp(-x))``." + _ex("sigmoid"))
erf = _unary_float(Op.ERF, "Elementwise Gauss error function." + _ex("erf"))
relu = _unary(Op.RELU, "Elementwise ``max(x, 0)``." + _ex("relu"))
sign = _unary(Op.SIGN, "Elementwise sign (-1, 0 or 1)." + _ex("sign"))
floor = _unary(Op.FLOOR, "Elementwise floor." + _ex("floor"))
ceil = _unary(Op.CEIL, "Elementwise ceiling." + _ex("ceil"))
round = _unary(Op.ROUND, "Elementwise rounding, halves to even." + _ex("round"))
isnan = _unary(Op.ISNAN, "Elementwise test for NaN (bool result)." + _ex("isnan"))
isinf = _unary(Op.ISINF, "Elementwise test for +-Inf (bool result)." + _ex("isinf"))
isfinite = _unary(Op.ISFINITE, "Elementwise test for finite values." + _ex("isfinite"))
logical_not = _unary(Op.LOGICAL_NOT, "Elementwise logical not." + _ex("logical_not"))
bitwise_invert = _unary(
    Op.BITWISE_INVERT, "Elementwise bitwise not." + _ex("bitwise_invert", "[1, 2]")
)

add = _binary_fn(
    Op.ADD, "add", "Elementwise ``x1 + x2`` with broadcasting." + _ex("add", binary=True)
)
subtract = _binary_fn(Op.SUB, "subtract", "Elementwise ``x1 - x2``." + _ex("subtract", binary=True))
multiply = _binary_fn(Op.MUL, "multiply", "Elementwise ``x1 * x2``." + _ex("multiply", binary=True))
floor_divide = _binary_fn(
    Op.FLOORDIV,
    "floor_divide",
    "Elementwise ``x1 // x2``, rounding toward -inf."
    + _show("floor_divide(p10.asarray([7, -7]), 2)", "[3, -4]"),
)
remainder = _binary_fn(
    Op.MOD,
    "remainder",
    "Elementwise ``x1 % x2`` (sign of x2)." + _show("remainder(p10.asarray([7, -7]), 3)", "[1, 2]"),
)
maximum = _binary_fn(
    Op.MAXIMUM,
    "maximum",
    "Elementwise maximum (NaN propagates)."
    + _show("maximum(p10.asarray([1.0, 5.0]), 3.0)", "[3.0, 5.0]"),
)
minimum = _binary_fn(
    Op.MINIMUM,
    "minimum",
    "Elementwise minimum (NaN propagates)."
    + _show("minimum(p10.asarray([1.0, 5.0]), 3.0)", "[1.0, 3.0]"),
)
equal = _binary_fn(
    Op.EQ,
    "equal",
    "Elementwise ``x1 == x2`` (bool result)."
    + _show("equal(p10.asarray([1, 2]), 2)", "[False, True]"),
)
not_equal = _binary_fn(
    Op.NE,
    "not_equal",
    "Elementwise ``x1 != x2`` (bool result)."
    + _show("not_equal(p10.asarray([1, 2]), 2)", "[True, False]"),
)
less = _binary_fn(
    Op.LT,
    "less",
    "Elementwise ``x1 < x2`` (bool result)."
    + _show("less(p10.asarray([1, 2]), 2)", "[True, False]"),
)
less_equal = _binary_fn(
    Op.LE,
    "less_equal",
    "Elementwise ``x1 <= x2`` (bool result)."
    + _show("less_equal(p10.asarray([1, 2]), 2)", "[True, True]"),
)
greater = _binary_fn(
    Op.GT,
    "greater",
    "Elementwise ``x1 > x2`` (bool result)."
    + _show("greater(p10.asarray([1, 2]), 1)", "[False, True]"),
)
greater_equal = _binary_fn(
    Op.GE,
    "greater_equal",
    "Elementwise ``x1 >= x2`` (bool result)."
    + _show("greater_equal(p10.asarray([1, 2]), 2)", "[False, True]"),
)
logical_and = _binary_fn(
    Op.LOGICAL_AND,
    "logical_and",
    "Elementwise logical and."
    + _show("logical_and(p10.asarray([True, False]), True)", "[True, False]"),
)
logical_or = _binary_fn(
    Op.LOGICAL_OR,
    "logical_or",
    "Elementwise logical or."
    + _show("logical_or(p10.asarray([True, False]), False)", "[True, False]"),
)
logical_xor = _binary_fn(
    Op.LOGICAL_XOR,
    "logical_xor",
    "Elementwise logical xor."
    + _show("logical_xor(p10.asarray([True, False]), True)", "[False, True]"),
)
bitwise_and = _binary_fn(
    Op.BITWISE_AND,
    "bitwise_and",
    "Elementwise bitwise and of integers or bools."
    + _show("bitwise_and(p10.asarray([12, 10]), 6)", "[4, 2]"),
)
bitwise_or = _binary_fn(
    Op.BITWISE_OR,
    "bitwise_or",
    "Elementwise bitwise or of integers or bools."
    + _show("bitwise_or(p10.asarray([12, 10]), 6)", "[14, 14]"),
)
bitwise_xor = _binary_fn(
    Op.BITWISE_XOR,
    "bitwise_xor",
    "Elementwise bitwise xor of integers or bools."
    + _show("bitwise_xor(p10.asarray([12, 10]), 6)", "[10, 12]"),
)


def divide(x1: Any, x2: Any, /) -> Any:
    """Elementwise true division; integer inputs give the default float dtype.

    >>> import p10
    >>> p10.divide(p10.asarray([1, 2]), 2).tolist()
    [0.5, 1.0]
    """
    x1, x2 = operands(x1, x2)
    if x1.dtype.kind not in "fc" and x2.dtype.kind not in "fc":
        x1, x2 = to_float(x1), to_float(x2)
    return apply(Op.DIV, *promote_mixed(x1, x2))


def pow(x1: Any, x2: Any, /) -> Any:
    """Elementwise ``x1 ** x2``.

    >>> import p10
    >>> p10.pow(p10.asarray([2.0, 3.0]), 2).tolist()
    [4.0, 9.0]
    """
    return binary(Op.POW, x1, x2)


def positive(x: Any, /) -> Any:
    """Elementwise ``+x`` (a copy).

    >>> import p10
    >>> p10.positive(p10.asarray([-1.0])).tolist()
    [-1.0]
    """
    return apply(Op.COPY, operands(x)[0])


def gelu(x: Any, /, approximate: str = "none") -> Any:
    """Gaussian error linear unit, exact (``"none"``) or with the tanh approximation.

    >>> import p10
    >>> f"{p10.gelu(p10.asarray([1.0])).item():.4f}"
    '0.8413'
    """
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return apply(Op.GELU, to_float(operands(x)[0]), approximate=approximate)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:
    """Clamp values into ``[min, max]``; bounds are scalars, tensors or None.

    >>> import p10
    >>> p10.clip(p10.asarray([-2.0, 0.5, 3.0]), -1, 1).tolist()
    [-1.0, 0.5, 1.0]
    """
    (x,) = operands(x)
    if is_tensor(min) or is_tensor(max):
        out = x if min is None else maximum(x, min)
        return out if max is None else minimum(out, max)
    for name, bound in (("min", min), ("max", max)):
        if bound is not None and not isinstance(bound, _SCALAR_TYPES):
            raise DTypeError(f"clip: {name} must be a scalar, a tensor or None, not {bound!r}")
    return apply(Op.CLIP, x, min=min, max=max)


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """Elementwise choice: ``x1`` where ``condition`` holds, else ``x2``.

    >>> import p10
    >>> x = p10.asarray([-1.0, 2.0])
    >>> p10.where(x > 0, x, 0.0).tolist()
    [0.0, 2.0]
    """
    like = next((v for v in (x1, x2, condition) if is_tensor(v)), None)
    if like is None:
        condition, x1, x2 = operands(condition, x1, x2)
    else:
        x1 = operand(x1, x2 if is_tensor(x2) else like)
        x2 = operand(x2, x1)
        condition = operand(condition, like)
    if condition.dtype.kind != "b":
        raise DTypeError(
            f"where: condition must be bool, got {condition.dtype.name} of shape "
            f"{condition.shape}; compare first, e.g. where(x > 0, ...)"
        )
    return apply(Op.WHERE, condition, *promote_mixed(x1, x2))


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """``x`` converted to ``dtype`` (and moved to ``device`` when one is given).

    >>> import p10
    >>> p10.astype(p10.asarray([1.7]), p10.int32).tolist()
    [1]
    >>> p10.astype(p10.asarray([1.7]), "float64", device="cpu").device
    'cpu'
    """
    from p10._dtypes import to_dtype

    dt = to_dtype(dtype)
    if device is not None and str(device) != x.device:
        x = x.to(device=device)
        copy = False  # the move made a fresh array already
    if not copy and x.dtype == dt:
        return x
    return apply(Op.CAST, x, dtype=dt)
