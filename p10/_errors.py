"""P10's error hierarchy: every class is also the builtin a Python user would catch."""

from __future__ import annotations


class P10Error(Exception):
    """Base class of every error P10 raises on bad input."""


class ShapeError(P10Error, ValueError):
    """Shapes that do not fit the op (broadcasting, matmul, reshape, concat, ...)."""


class AxisError(P10Error, IndexError):
    """An axis outside ``[-ndim, ndim)`` or repeated."""


class DTypeError(P10Error, TypeError):
    """A dtype the op does not accept, or an input that is not a tensor-like value."""


class IndexOutOfRangeError(P10Error, IndexError):
    """An index outside the dimension it indexes."""


class ArgumentError(P10Error, ValueError):
    """A parameter value the op cannot take (a zero step, bad einsum subscripts, ...)."""


class BackendError(P10Error, ValueError):
    """Unknown backend, or tensors of different backends mixed in one op."""


class MissingKernelError(P10Error, NotImplementedError):
    """The tensor's backend has no kernel for this op."""


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
