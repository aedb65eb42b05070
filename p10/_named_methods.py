"""The PyTorch-style methods of tensors, each defined through a P10 function.

:mod:`p10._tensor_api` installs them on :class:`~p10._methods.TensorMethods`, the mixin of
``p10.Tensor`` and ``tpx.Tensor`` (the functions need the Tensor class, so the methods cannot be
in the mixin's class body).

>>> import p10
>>> p10.arange(6).reshape(2, 3).sum(axis=0).tolist()
[3, 5, 7]
"""

from __future__ import annotations

import math
from typing import Any

from p10._elementwise import operand
from p10._functions import (
    add,
    astype,
    clip,
    divide,
    gelu,
    multiply,
    positive,
    subtract,
)
from p10._index_ops import getitem, repeat, simple_key, take
from p10._nn import log_softmax, softmax
from p10._ops import Op
from p10._products import matmul
from p10._reductions import (
    all,
    any,
    argmax,
    argmin,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from p10._shape import (
    broadcast_to,
    expand,
    expand_dims,
    flatten,
    flip,
    matrix_transpose,
    permute_dims,
    reshape,
    squeeze,
    swapaxes,
    tile,
)
from p10._tensor import apply


def _shape_args(args: tuple) -> Any:
    return args[0] if len(args) == 1 and not isinstance(args[0], int) else args


class NamedMethods:
    """PyTorch-style methods, each defined through a P10 function (installed on the mixin)."""

    def add_(self, other: Any) -> Any:
        """In-place ``self += other``; returns self."""
        return self._assign(add(self, other))

    def sub_(self, other: Any) -> Any:
        """In-place ``self -= other``; returns self."""
        return self._assign(subtract(self, other))

    def mul_(self, other: Any) -> Any:
        """In-place ``self *= other``; returns self."""
        return self._assign(multiply(self, other))

    def div_(self, other: Any) -> Any:
        """In-place ``self /= other``; returns self."""
        return self._assign(divide(self, other))

    def zero_(self) -> Any:
        """In-place fill with zeros; returns self."""
        return self._assign(multiply(self, 0))

    def fill_(self, value: Any) -> Any:
        """In-place fill with ``value``; returns self."""
        return self._assign(add(multiply(self, 0), value))

    def copy_(self, src: Any) -> Any:
        """In-place copy of ``src`` (broadcast to this shape); returns self."""
        return self._assign(broadcast_to(operand(src, self), self.shape))

    def __getitem__(self, key: Any) -> Any:
        # NOTE: ints and slices (most keys) go straight to the op, normalized as getitem does
        simple = simple_key(self.shape, key)
        if simple is not None:
            return apply(Op.GETITEM, self, key=simple)
        return getitem(self, key)

    # -- methods ------------------------------------------------------------------------------
    def astype(self, dtype: Any, *, copy: bool = True) -> Any:
        """Converted to ``dtype`` (see :func:`p10.astype`)."""
        return astype(self, dtype, copy=copy)

    def float(self) -> Any:
        """Converted to float32."""
        return astype(self, "float32", copy=False)

    def double(self) -> Any:
        """Converted to float64."""
        return astype(self, "float64", copy=False)

    def long(self) -> Any:
        """Converted to int64."""
        return astype(self, "int64", copy=False)

    def copy(self) -> Any:
        """A copy with its own memory."""
        return positive(self)

    clone = copy

    def reshape(self, *shape: Any) -> Any:
        """See :func:`p10.reshape`; accepts ``reshape(2, 3)`` or ``reshape((2, 3))``.

        >>> import p10
        >>> p10.arange(6).reshape(2, 3).shape, p10.arange(6).reshape((3, -1)).shape
        ((2, 3), (3, 2))
        """
        new = shape[0] if len(shape) == 1 and shape[0].__class__ is tuple else shape
        # NOTE: a shape of plain non-negative ints with the right size (most calls) goes
        # straight to the op; -1, other types and wrong sizes take p10.reshape and its errors
        for n in new:
            if n.__class__ is not int or n < 0:
                break
        else:
            old = self.shape
            if new == old:
                return self
            if math.prod(new) == math.prod(old):
                return apply(Op.RESHAPE, self, shape=new)
        return reshape(self, _shape_args(shape))

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """See :func:`p10.flatten`."""
        return flatten(self, start_dim, end_dim)

    def squeeze(self, axis: Any = None) -> Any:
        """See :func:`p10.squeeze`."""
        return squeeze(self, axis)

    def unsqueeze(self, axis: int) -> Any:
        """See :func:`p10.expand_dims`."""
        return expand_dims(self, axis=axis)

    def expand(self, *sizes: Any) -> Any:
        """See :func:`p10.expand`."""
        return expand(self, *sizes)

    def broadcast_to(self, shape: Any) -> Any:
        """See :func:`p10.broadcast_to`."""
        return broadcast_to(self, shape)

    def permute(self, *axes: Any) -> Any:
        """See :func:`p10.permute_dims`; accepts ``permute(1, 0)`` or ``permute((1, 0))``."""
        return permute_dims(self, _shape_args(axes))

    def transpose(self, axis0: int = 0, axis1: int = 1) -> Any:
        """Swap two axes (PyTorch's ``transpose``)."""
        return swapaxes(self, axis0, axis1)

    @property
    def T(self) -> Any:
        """The axes reversed (a 2-D transpose).

        >>> import p10
        >>> p10.zeros((2, 3)).T.shape
        (3, 2)
        """
        # NOTE: straight to the op: the axes are a permutation by construction, and `.T` is
        # as common in user code as an operator
        return apply(Op.PERMUTE, self, axes=tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Any:
        """The last two axes swapped.

        >>> import p10
        >>> p10.zeros((4, 2, 3)).mT.shape
        (4, 3, 2)
        """
        n = self.ndim
        if n < 2:
            return matrix_transpose(self)  # its error names the shape
        return apply(Op.PERMUTE, self, axes=(*range(n - 2), n - 1, n - 2))

    def flip(self, axis: Any = None) -> Any:
        """See :func:`p10.flip`."""
        return flip(self, axis=axis)

    def tile(self, repetitions: Any) -> Any:
        """See :func:`p10.tile`."""
        return tile(self, repetitions)

    def repeat(self, repeats: int, axis: int | None = None) -> Any:
        """See :func:`p10.repeat`."""
        return repeat(self, repeats, axis=axis)

    def matmul(self, other: Any) -> Any:
        """See :func:`p10.matmul`."""
        return matmul(self, other)

    def sum(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
        """See :func:`p10.sum`."""
        return sum(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.mean`."""
        return mean(self, axis=axis, keepdims=keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.prod`."""
        return prod(self, axis=axis, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.max`."""
        return max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.min`."""
        return min(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Any:
        """See :func:`p10.argmax`."""
        return argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Any:
        """See :func:`p10.argmin`."""
        return argmin(self, axis=axis, keepdims=keepdims)

    def var(self, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
        """See :func:`p10.var`."""
        return var(self, axis=axis, correction=correction, keepdims=keepdims)

    def std(self, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
        """See :func:`p10.std`."""
        return std(self, axis=axis, correction=correction, keepdims=keepdims)

    def logsumexp(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.logsumexp`."""
        return logsumexp(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis: int | None = None) -> Any:
        """See :func:`p10.cumsum`."""
        return cumsum(self, axis=axis)

    def all(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.all`."""
        return all(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.any`."""
        return any(self, axis=axis, keepdims=keepdims)

    def gelu(self, approximate: str = "none") -> Any:
        """See :func:`p10.gelu`."""
        return gelu(self, approximate=approximate)

    def clip(self, min: Any = None, max: Any = None) -> Any:
        """See :func:`p10.clip`."""
        return clip(self, min, max)

    clamp = clip

    def softmax(self, axis: int = -1) -> Any:
        """See :func:`p10.softmax`."""
        return softmax(self, axis)

    def log_softmax(self, axis: int = -1) -> Any:
        """See :func:`p10.log_softmax`."""
        return log_softmax(self, axis)

    def take(self, indices: Any, axis: int | None = None) -> Any:
        """See :func:`p10.take`."""
        return take(self, indices, axis=axis)
