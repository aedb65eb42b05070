"""P10's error hierarchy: every class is also the builtin a Python user would catch."""

from __future__ import annotations


class P10Error(Exception):
    """Base class of every error P10 raises on bad input.

    >>> import p10
    >>> try:
    ...     p10.ones(2).reshape(3)
    ... except P10Error as e:
    ...     print(type(e).__name__)
    ShapeError
    """


class ShapeError(P10Error, ValueError):
    """Shapes that do not fit the op (broadcasting, matmul, reshape, concat, ...).

    >>> import p10
    >>> try:
    ...     p10.ones((2, 3)) + p10.ones(4)
    ... except ValueError as e:
    ...     print(type(e).__name__)
    ShapeError
    """


class AxisError(P10Error, IndexError):
    """An axis outside ``[-ndim, ndim)`` or repeated.

    >>> import p10
    >>> try:
    ...     p10.ones((2, 3)).sum(axis=2)
    ... except IndexError as e:
    ...     print(type(e).__name__)
    AxisError
    """


class DTypeError(P10Error, TypeError):
    """A dtype the op does not accept, or an input that is not a tensor-like value.

    >>> import p10
    >>> try:
    ...     p10.ones(2, dtype="int8") + 1000
    ... except TypeError as e:
    ...     print(type(e).__name__)
    DTypeError
    """


class IndexOutOfRangeError(P10Error, IndexError):
    """An index outside the dimension it indexes.

    >>> import p10
    >>> try:
    ...     p10.ones(2)[5]
    ... except IndexError as e:
    ...     print(type(e).__name__)
    IndexOutOfRangeError
    """


class ArgumentError(P10Error, ValueError):
    """A parameter value the op cannot take (a zero step, bad einsum subscripts, ...).

    >>> import p10
    >>> try:
    ...     p10.arange(0, 4, 0)
    ... except ValueError as e:
    ...     print(type(e).__name__)
    ArgumentError
    """


class BackendError(P10Error, ValueError):
    """Unknown backend, or tensors of different backends mixed in one op.

    >>> import p10
    >>> try:
    ...     p10.ones(2, backend="nope")
    ... except ValueError as e:
    ...     print(type(e).__name__)
    BackendError
    """


class MissingKernelError(P10Error, NotImplementedError):
    """The tensor's backend has no kernel for this op.

    >>> import numpy as np, p10
    >>> bare = p10.Backend("bare", {}, np.ndarray, np.asarray, np.asarray)
    >>> try:
    ...     bare.kernel(p10.Op.ADD)
    ... except NotImplementedError as e:
    ...     print(str(e).split(";")[0])
    add: backend 'bare' has no kernel for this op
    """


def describe(values: object) -> str:
    """Shapes and dtypes of the tensors among ``values`` as ``(2, 3) float32, (3,) int64``."""
    parts = []
    for v in values:  # type: ignore[attr-defined]
        shape = getattr(v, "shape", None)
        dtype = getattr(v, "dtype", None)
        if shape is None:
            parts.append(f"{type(v).__name__} {v!r}")
        else:
            parts.append(f"{tuple(shape)} {getattr(dtype, 'name', dtype)}")
    return ", ".join(parts)
