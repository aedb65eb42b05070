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
from p10._errors import DTypeError
from p10._ops import Op
from p10._tensor import Tensor, apply, wrap

Scalar = bool | int | float
_SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)
_PY_SCALARS = frozenset({bool, int, float})
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
    kinds = [x.dtype.kind == "f" for x in xs]
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
    if d1 is not d2 and (d1.kind == "f") is not (d2.kind == "f"):
        x1, x2 = promote_mixed(x1, x2)
    return apply(op, x1, x2)


def to_float(x: Any) -> Any:
    """``x`` itself when floating, else cast to the default float dtype (for exp, log, ...).

    >>> import p10
    >>> to_float(p10.arange(2)).dtype
    dtype('float32')
    """
    if x.dtype.kind == "f":
        return x
    return apply(_CAST, x, dtype=get_default_dtype())
