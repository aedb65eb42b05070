"""The op-spec table: one declarative entry per elementwise op, from which P10 derives the rest.

An entry names the op (its ``Op`` value), how many tensors it takes, which dtypes it works on,
its NumPy kernel (the spec backend's), its docstring and example, and its method names. From the
table come: the ``Op`` enum member (:mod:`p10._ops`), the P10 function (:mod:`p10._functions`),
the ``p10.Tensor`` / ``tpx.Tensor`` methods, ``__all__`` of p10 and tpx, the NumPy and Array API
kernels, and the kernel and gradient test cases. The gradient rule stays in ``tpx/rules.py``
(P10 knows nothing of gradients). docs/adding-an-op.md walks through adding one.

``dtypes`` says what the generated function does with its inputs:

* ``"float"``: integer and bool tensors are cast to the default float dtype first (``exp``);
  with two inputs, only when neither is floating (``divide``, ``atan2``).
* ``"any"``: every dtype the kernel takes (``abs``, ``add``); mixed integer/floating operands
  are promoted as in :mod:`p10._elementwise`.
* ``"int"``: integer tensors only, anything else raises :class:`~p10.DTypeError` (shifts).

An entry with ``function=None`` is written by hand (its signature has params: ``gelu``,
``clip``, ``where``, ...); its kernels too when ``numpy`` is ``None``.

>>> SPECS[0].name, SPECS[0].function_name, SPECS[0].arity
('neg', 'negative', 1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special


@dataclass(frozen=True)
class OpSpec:
    """One elementwise op (see the module docstring for the fields' meaning)."""

    name: str  # the Op value ("expm1"); its member is the upper-case name (Op.EXPM1)
    arity: int  # number of tensor inputs
    dtypes: str  # "float" | "any" | "int"
    numpy: Callable[..., Any] | None  # the NumPy kernel; None: written in numpy_backend
    doc: str = ""  # one sentence, the docstring's first line
    # the doctest: (arguments, result of .tolist()); the first argument, a list, becomes a tensor
    example: tuple[str, str] = ("", "")
    function: str | None = ""  # the P10 function's name ("": the op name; None: by hand)
    methods: tuple[str, ...] = ()  # Tensor methods calling the function
    fast: bool = False  # Tensor methods get a direct-kernel shortcut (hot ops only)
    kinds: str = "f"  # dtype kinds of the test inputs: "f" float32/64, "i" int64, "b" bool
    xp: bool = True  # the Array API namespace has the function under the same name
    domain: tuple[float, float] = (-2.0, 2.0)  # where test inputs are drawn

    @property
    def function_name(self) -> str | None:
        """The P10 function's name, or None for a hand-written function."""
        return self.name if self.function == "" else self.function


def _relu(x: np.ndarray) -> np.ndarray:
    # NOTE: np.maximum keeps NaN, as torch.relu does.
    return np.maximum(x, x.dtype.type(0))


_POS = (0.5, 3.0)  # log, sqrt, reciprocal...: test inputs away from 0
_UNIT = (-0.8, 0.8)  # acos, asin, atanh: inside (-1, 1)
F, A, I = "float", "any", "int"

# fmt: off
SPECS: tuple[OpSpec, ...] = (
    # -- unary ------------------------------------------------------------------------------
    OpSpec("neg", 1, A, np.negative, "Elementwise ``-x``.", ("[1.0, -2.0]", "[-1.0, 2.0]"),
           function="negative", methods=("neg",), fast=True, kinds="fi"),
    OpSpec("abs", 1, A, np.abs, "Elementwise absolute value.", ("[-1.5, 2.0]", "[1.5, 2.0]"),
           methods=("abs",), fast=True, kinds="fi"),
    OpSpec("exp", 1, F, np.exp, "Elementwise ``e**x``.", ("[0.0]", "[1.0]"),
           methods=("exp",), fast=True),
    OpSpec("log", 1, F, np.log, "Elementwise natural logarithm.", ("[1.0]", "[0.0]"),
           methods=("log",), fast=True, domain=_POS),
    OpSpec("log1p", 1, F, np.log1p, "Elementwise ``log(1 + x)``, accurate near 0.",
           ("[0.0]", "[0.0]"), methods=("log1p",), domain=(-0.5, 2.0)),
    OpSpec("expm1", 1, F, np.expm1, "Elementwise ``exp(x) - 1``, accurate near 0.",
           ("[0.0]", "[0.0]"), methods=("expm1",)),
    OpSpec("sqrt", 1, F, np.sqrt, "Elementwise square root.", ("[4.0]", "[2.0]"),
           methods=("sqrt",), fast=True, domain=_POS),
    OpSpec("square", 1, A, np.square, "Elementwise ``x * x``.", ("[3, -2]", "[9, 4]"),
           methods=("square",), fast=True, kinds="fi"),
    OpSpec("reciprocal", 1, F, np.reciprocal, "Elementwise ``1 / x``.", ("[2.0]", "[0.5]"),
           methods=("reciprocal",), xp=False, domain=_POS),
    OpSpec("sin", 1, F, np.sin, "Elementwise sine.", ("[0.0]", "[0.0]"),
           methods=("sin",), fast=True),
    OpSpec("cos", 1, F, np.cos, "Elementwise cosine.", ("[0.0]", "[1.0]"),
           methods=("cos",), fast=True),
    OpSpec("tan", 1, F, np.tan, "Elementwise tangent.", ("[0.0]", "[0.0]"),
           methods=("tan",), domain=(-1.2, 1.2)),
    OpSpec("tanh", 1, F, np.tanh, "Elementwise hyperbolic tangent.", ("[0.0]", "[0.0]"),
           methods=("tanh",), fast=True),
    OpSpec("sigmoid", 1, F, special.expit, "Elementwise logistic ``1 / (1 + exp(-x))``.",
           ("[0.0]", "[0.5]"), methods=("sigmoid",), fast=True, xp=False),
    OpSpec("relu", 1, A, _relu, "Elementwise ``max(x, 0)``.", ("[-1.0, 2.0]", "[0.0, 2.0]"),
           methods=("relu",), fast=True, xp=False),
    OpSpec("gelu", 1, F, None, function=None, xp=False, kinds=""),
    OpSpec("erf", 1, F, special.erf, "Elementwise Gauss error function.", ("[0.0]", "[0.0]"),
           xp=False),
    OpSpec("sign", 1, A, np.sign, "Elementwise sign (-1, 0 or 1).",
           ("[-2.0, 0.0, 3.0]", "[-1.0, 0.0, 1.0]"), methods=("sign",), kinds="fi"),
    OpSpec("floor", 1, A, np.floor, "Elementwise floor.", ("[1.5, -1.5]", "[1.0, -2.0]"),
           methods=("floor",)),
    OpSpec("ceil", 1, A, np.ceil, "Elementwise ceiling.", ("[1.5, -1.5]", "[2.0, -1.0]"),
           methods=("ceil",)),
    OpSpec("round", 1, A, np.round, "Elementwise rounding, halves to even.",
           ("[0.5, 1.5, 2.7]", "[0.0, 2.0, 3.0]"), methods=("round",)),
    OpSpec("clip", 1, A, None, function=None, xp=False, kinds=""),
    OpSpec("cast", 1, A, None, function=None, xp=False, kinds=""),
    OpSpec("copy", 1, A, np.copy, function=None, xp=False),
    OpSpec("logical_not", 1, A, np.logical_not, "Elementwise logical not.",
           ("[True, False]", "[False, True]"), xp=False, kinds="b"),
    OpSpec("bitwise_invert", 1, A, np.invert, "Elementwise bitwise not.", ("[1, 2]", "[-2, -3]"),
           kinds="ib"),
    OpSpec("isnan", 1, A, np.isnan, "Elementwise test for NaN (bool result).",
           ("[1.0, float('nan')]", "[False, True]"), methods=("isnan",)),
    OpSpec("isinf", 1, A, np.isinf, "Elementwise test for +-Inf (bool result).",
           ("[1.0, float('inf')]", "[False, True]"), methods=("isinf",)),
    OpSpec("isfinite", 1, A, np.isfinite, "Elementwise test for finite values.",
           ("[1.0, float('inf')]", "[True, False]"), methods=("isfinite",)),
    # -- binary -----------------------------------------------------------------------------
    OpSpec("add", 2, A, np.add, "Elementwise ``x1 + x2`` with broadcasting.",
           ("[1.0, 2.0], 2.0", "[3.0, 4.0]"), kinds="fi"),
    OpSpec("sub", 2, A, np.subtract, "Elementwise ``x1 - x2``.", ("[1.0, 2.0], 2.0", "[-1.0, 0.0]"),
           function="subtract", kinds="fi"),
    OpSpec("mul", 2, A, np.multiply, "Elementwise ``x1 * x2``.", ("[1.0, 2.0], 2.0", "[2.0, 4.0]"),
           function="multiply", kinds="fi"),
    OpSpec("div", 2, F, np.true_divide,
           "Elementwise true division; integer inputs give the default float dtype.",
           ("[1, 2], 2", "[0.5, 1.0]"), function="divide"),
    OpSpec("floordiv", 2, A, np.floor_divide, "Elementwise ``x1 // x2``, rounding toward -inf.",
           ("[7, -7], 2", "[3, -4]"), function="floor_divide"),
    OpSpec("mod", 2, A, np.remainder, "Elementwise ``x1 % x2`` (sign of x2).",
           ("[7, -7], 3", "[1, 2]"), function="remainder"),
    OpSpec("pow", 2, A, np.power, "Elementwise ``x1 ** x2``.", ("[2.0, 3.0], 2", "[4.0, 9.0]"),
           methods=("pow",)),
    OpSpec("maximum", 2, A, np.maximum, "Elementwise maximum (NaN propagates).",
           ("[1.0, 5.0], 3.0", "[3.0, 5.0]"), methods=("maximum",), fast=True, kinds="fi"),
    OpSpec("minimum", 2, A, np.minimum, "Elementwise minimum (NaN propagates).",
           ("[1.0, 5.0], 3.0", "[1.0, 3.0]"), methods=("minimum",), fast=True),
    OpSpec("eq", 2, A, np.equal, "Elementwise ``x1 == x2`` (bool result).",
           ("[1, 2], 2", "[False, True]"), function="equal"),
    OpSpec("ne", 2, A, np.not_equal, "Elementwise ``x1 != x2`` (bool result).",
           ("[1, 2], 2", "[True, False]"), function="not_equal"),
    OpSpec("lt", 2, A, np.less, "Elementwise ``x1 < x2`` (bool result).",
           ("[1, 2], 2", "[True, False]"), function="less"),
    OpSpec("le", 2, A, np.less_equal, "Elementwise ``x1 <= x2`` (bool result).",
           ("[1, 2], 2", "[True, True]"), function="less_equal"),
    OpSpec("gt", 2, A, np.greater, "Elementwise ``x1 > x2`` (bool result).",
           ("[1, 2], 1", "[False, True]"), function="greater"),
    OpSpec("ge", 2, A, np.greater_equal, "Elementwise ``x1 >= x2`` (bool result).",
           ("[1, 2], 2", "[False, True]"), function="greater_equal"),
    OpSpec("logical_and", 2, A, np.logical_and, "Elementwise logical and.",
           ("[True, False], True", "[True, False]"), xp=False, kinds="b"),
    OpSpec("logical_or", 2, A, np.logical_or, "Elementwise logical or.",
           ("[True, False], False", "[True, False]"), xp=False, kinds="b"),
    OpSpec("logical_xor", 2, A, np.logical_xor, "Elementwise logical xor.",
           ("[True, False], True", "[False, True]"), xp=False, kinds="b"),
    OpSpec("bitwise_and", 2, A, np.bitwise_and, "Elementwise bitwise and of integers or bools.",
           ("[12, 10], 6", "[4, 2]"), kinds="ib"),
    OpSpec("bitwise_or", 2, A, np.bitwise_or, "Elementwise bitwise or of integers or bools.",
           ("[12, 10], 6", "[14, 14]"), kinds="i"),
    OpSpec("bitwise_xor", 2, A, np.bitwise_xor, "Elementwise bitwise xor of integers or bools.",
           ("[12, 10], 6", "[10, 12]"), kinds="i"),
    # -- ternary ----------------------------------------------------------------------------
    OpSpec("where", 3, A, np.where, function=None, xp=False, kinds=""),
)

# Array API functions added in issue 18: their members follow the structural ops in the enum.
LATER_SPECS: tuple[OpSpec, ...] = (
    OpSpec("acos", 1, F, np.arccos, "Elementwise arc cosine.", ("[1.0]", "[0.0]"), domain=_UNIT),
    OpSpec("acosh", 1, F, np.arccosh, "Elementwise inverse hyperbolic cosine.",
           ("[1.0]", "[0.0]"), domain=(1.3, 3.0)),
    OpSpec("asin", 1, F, np.arcsin, "Elementwise arc sine.", ("[0.0]", "[0.0]"), domain=_UNIT),
    OpSpec("asinh", 1, F, np.arcsinh, "Elementwise inverse hyperbolic sine.", ("[0.0]", "[0.0]")),
    OpSpec("atan", 1, F, np.arctan, "Elementwise arc tangent.", ("[0.0]", "[0.0]")),
    OpSpec("atanh", 1, F, np.arctanh, "Elementwise inverse hyperbolic tangent.",
           ("[0.0]", "[0.0]"), domain=_UNIT),
    OpSpec("cosh", 1, F, np.cosh, "Elementwise hyperbolic cosine.", ("[0.0]", "[1.0]")),
    OpSpec("sinh", 1, F, np.sinh, "Elementwise hyperbolic sine.", ("[0.0]", "[0.0]")),
    OpSpec("log2", 1, F, np.log2, "Elementwise base-2 logarithm.", ("[1.0, 8.0]", "[0.0, 3.0]"),
           domain=_POS),
    OpSpec("log10", 1, F, np.log10, "Elementwise base-10 logarithm.", ("[100.0]", "[2.0]"),
           domain=_POS),
    OpSpec("trunc", 1, A, np.trunc,
           "Elementwise rounding toward zero; integer tensors keep their dtype.",
           ("[-1.7, 2.5]", "[-1.0, 2.0]")),
    OpSpec("signbit", 1, F, np.signbit, "Elementwise test of the sign bit (True for -0.0 too).",
           ("[-0.0, 1.0]", "[True, False]")),
    OpSpec("atan2", 2, F, np.arctan2,
           "Elementwise angle of the point ``(x2, x1)``, quadrant-aware ``atan(x1 / x2)``.",
           ("[0.0], 1.0", "[0.0]")),
    OpSpec("logaddexp", 2, F, np.logaddexp, "Elementwise ``log(exp(x1) + exp(x2))`` without "
           "overflow.", ("[0.0], 0.0", "[0.6931471824645996]")),
    OpSpec("hypot", 2, F, np.hypot, "Elementwise ``sqrt(x1**2 + x2**2)`` without overflow.",
           ("[3.0], 4.0", "[5.0]")),
    OpSpec("copysign", 2, F, np.copysign, "Elementwise ``|x1|`` with the sign of ``x2``.",
           ("[2.0, 3.0], -1.0", "[-2.0, -3.0]")),
    OpSpec("nextafter", 2, F, np.nextafter,
           "Elementwise next representable float after ``x1`` toward ``x2``.",
           ("[0.0], 1.0", "[1.401298464324817e-45]")),
    OpSpec("bitwise_left_shift", 2, I, np.left_shift, "Elementwise ``x1 << x2`` of integers.",
           ("[1, 3], 2", "[4, 12]"), kinds="i"),
    OpSpec("bitwise_right_shift", 2, I, np.right_shift,
           "Elementwise ``x1 >> x2`` of integers (arithmetic for signed).",
           ("[-8, 12], 2", "[-2, 3]")),
)
# fmt: on

ALL_SPECS: tuple[OpSpec, ...] = SPECS + LATER_SPECS
"""Every entry, in ``Op`` enum order."""
