"""The P10 functions and Tensor methods of the op-spec table (:mod:`p10._opspec`), generated.

Each entry with a generated function gets one here, named ``spec.function_name``, with the
input handling its ``dtypes`` asks for (see :mod:`p10._opspec`) and a doctest built from its
example; each of its ``methods`` becomes a method of the shared
:class:`~p10._methods.TensorMethods` (``fast`` ones also get ``p10.Tensor``'s direct-kernel
shortcut). The functions are attributes of this module, so ``from p10._functions import add``
works as for a hand-written module.

>>> import p10
>>> p10.expm1(p10.asarray([0.0])).tolist(), p10.ones(2).expm1().shape
([0.0], (2,))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p10._elementwise import (
    _SCALAR_TYPES,
    binary,
    is_tensor,
    operand,
    operands,
    promote_mixed,
    to_float,
)
from p10._errors import ArgumentError, DTypeError
from p10._methods import TensorMethods
from p10._ops import SPEC_OF, Op
from p10._opspec import OpSpec
from p10._tensor import Tensor, _fast_binary, _fast_unary, apply


def _unary(op: Op, floating: bool) -> Callable[..., Any]:
    if floating:

        def fn(x: Any, /) -> Any:
            return apply(op, to_float(operands(x)[0]))

    else:

        def fn(x: Any, /) -> Any:
            return apply(op, operands(x)[0])

    return fn


def _binary(op: Op, dtypes: str) -> Callable[..., Any]:
    if dtypes == "float":

        def fn(x1: Any, x2: Any, /) -> Any:
            x1, x2 = operands(x1, x2)
            if x1.dtype.kind != "f" and x2.dtype.kind != "f":
                x1, x2 = to_float(x1), to_float(x2)
            return apply(op, *promote_mixed(x1, x2))

    elif dtypes == "int":

        def fn(x1: Any, x2: Any, /) -> Any:
            x1, x2 = operands(x1, x2)
            if x1.dtype.kind not in "iu" or x2.dtype.kind not in "iu":
                raise DTypeError(
                    f"{op.value}: needs integer tensors, got {x1.dtype.name} {x1.shape} and "
                    f"{x2.dtype.name} {x2.shape}; cast with .astype(p10.int64) first"
                )
            return binary(op, x1, x2)

    else:

        def fn(x1: Any, x2: Any, /) -> Any:
            return binary(op, x1, x2)

    return fn


def _docstring(spec: OpSpec, name: str) -> str:
    args, result = spec.example
    first, _, rest = args.partition("]")
    call = f"p10.{name}(p10.asarray({first}]){rest})"
    return f"{spec.doc}\n\n    >>> import p10\n    >>> {call}.tolist()\n    {result}\n"


def make_function(spec: OpSpec) -> Callable[..., Any]:
    """The P10 function of ``spec`` (which must not be a hand-written one)."""
    op, name = Op(spec.name), spec.function_name
    if spec.arity == 1:
        fn = _unary(op, spec.dtypes == "float")
    elif spec.arity == 2:
        fn = _binary(op, spec.dtypes)
    else:
        raise ValueError(f"op spec {spec.name!r}: arity {spec.arity} needs a hand-written function")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _docstring(spec, name)
    return fn


def _method(fn: Callable[..., Any], name: str, arity: int) -> Callable[..., Any]:
    if arity == 1:

        def method(self: Any) -> Any:
            return fn(self)

    else:

        def method(self: Any, other: Any) -> Any:
            return fn(self, other)

    method.__name__ = name
    method.__qualname__ = f"TensorMethods.{name}"
    method.__doc__ = f"See :func:`p10.{fn.__name__}`."
    return method


def _install(spec: OpSpec, fn: Callable[..., Any]) -> None:
    """``spec``'s methods on the shared mixin, and their shortcuts on ``p10.Tensor``."""
    op = Op(spec.name)
    for name in spec.methods:
        slow = _method(fn, name, spec.arity)
        setattr(TensorMethods, name, slow)
        if not spec.fast:
            continue
        if spec.arity == 1:
            fast = _fast_unary(op, slow, floating=spec.dtypes == "float")
        else:
            fast = _fast_binary(op, slow, floating=spec.dtypes == "float")
        setattr(Tensor, name, fast)


FUNCTIONS: dict[str, Callable[..., Any]] = {}
"""The generated functions by name, in enum order."""
for _spec in SPEC_OF.values():
    if _spec.function_name is not None:
        FUNCTIONS[_spec.function_name] = make_function(_spec)
        _install(_spec, FUNCTIONS[_spec.function_name])
globals().update(FUNCTIONS)


# -- the hand-written elementwise functions (their signatures have params) ----------------
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
        out = x if min is None else FUNCTIONS["maximum"](x, min)
        return out if max is None else FUNCTIONS["minimum"](out, max)
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
