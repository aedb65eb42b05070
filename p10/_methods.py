"""Operator and method surface shared by ``p10.Tensor`` and tensors of layers above (TPX).

Every method calls a P10 function, which dispatches on its inputs (see :func:`p10.apply`), so a
``tpx.Tensor`` that uses this mixin goes through TPX's recording path with the same semantics.
A class using the mixin provides ``shape``, ``ndim``, ``dtype``, ``_assign(value)`` (in-place
write of a same-shaped result) and ``_setitem(key, value)``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

# The function modules import the Tensor class, which uses this mixin, so they are bound here
# by bind_functions() once p10 has imported them all.
E: ModuleType
M: ModuleType
I: ModuleType
N: ModuleType
R: ModuleType
S: ModuleType
_elementwise: ModuleType


def bind_functions() -> None:
    """Bind the function modules the methods call (run once by ``p10/__init__``)."""
    global E, I, M, N, R, S, _elementwise
    from p10 import _elementwise, _functions, _index_ops, _nn, _reductions, _shape

    E, I, M, N, R, S = _functions, _index_ops, _functions, _nn, _reductions, _shape


def _shape_args(args: tuple) -> Any:
    return args[0] if len(args) == 1 and not isinstance(args[0], int) else args


class TensorMethods:
    """Python operators and PyTorch-style methods, all defined through P10 functions."""

    __slots__ = ()
    __hash__ = object.__hash__  # tensors stay usable as dict keys despite elementwise __eq__

    # -- arithmetic operators ---------------------------------------------------------------
    def __add__(self, other: Any) -> Any:
        return E.add(self, other)

    def __radd__(self, other: Any) -> Any:
        return E.add(other, self)

    def __sub__(self, other: Any) -> Any:
        return E.subtract(self, other)

    def __rsub__(self, other: Any) -> Any:
        return E.subtract(other, self)

    def __mul__(self, other: Any) -> Any:
        return E.multiply(self, other)

    def __rmul__(self, other: Any) -> Any:
        return E.multiply(other, self)

    def __truediv__(self, other: Any) -> Any:
        return E.divide(self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return E.divide(other, self)

    def __floordiv__(self, other: Any) -> Any:
        return E.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return E.floor_divide(other, self)

    def __mod__(self, other: Any) -> Any:
        return E.remainder(self, other)

    def __rmod__(self, other: Any) -> Any:
        return E.remainder(other, self)

    def __pow__(self, other: Any) -> Any:
        return E.pow(self, other)

    def __rpow__(self, other: Any) -> Any:
        return E.pow(other, self)

    def __matmul__(self, other: Any) -> Any:
        return S.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return S.matmul(other, self)

    def __neg__(self) -> Any:
        return E.negative(self)

    def __pos__(self) -> Any:
        return E.positive(self)

    def __abs__(self) -> Any:
        return E.abs(self)

    def __invert__(self) -> Any:
        if self.dtype.kind == "b":
            return E.logical_not(self)
        return E.bitwise_invert(self)

    def __and__(self, other: Any) -> Any:
        return E.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Any:
        return E.bitwise_and(other, self)

    def __or__(self, other: Any) -> Any:
        return E.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Any:
        return E.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Any:
        return E.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Any:
        return E.bitwise_xor(other, self)

    def __lshift__(self, other: Any) -> Any:
        return M.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> Any:
        return M.bitwise_left_shift(other, self)

    def __rshift__(self, other: Any) -> Any:
        return M.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> Any:
        return M.bitwise_right_shift(other, self)

    def __ilshift__(self, other: Any) -> Any:
        return self._assign(M.bitwise_left_shift(self, other))

    def __irshift__(self, other: Any) -> Any:
        return self._assign(M.bitwise_right_shift(self, other))

    # -- comparisons ------------------------------------------------------------------------
    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return E.equal(self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return E.not_equal(self, other)

    def __lt__(self, other: Any) -> Any:
        return E.less(self, other)

    def __le__(self, other: Any) -> Any:
        return E.less_equal(self, other)

    def __gt__(self, other: Any) -> Any:
        return E.greater(self, other)

    def __ge__(self, other: Any) -> Any:
        return E.greater_equal(self, other)

    # -- in-place operators: compute out of place, then write into this tensor ---------------
    def __iadd__(self, other: Any) -> Any:
        return self._assign(E.add(self, other))

    def __isub__(self, other: Any) -> Any:
        return self._assign(E.subtract(self, other))

    def __imul__(self, other: Any) -> Any:
        return self._assign(E.multiply(self, other))

    def __itruediv__(self, other: Any) -> Any:
        return self._assign(E.divide(self, other))

    def __ifloordiv__(self, other: Any) -> Any:
        return self._assign(E.floor_divide(self, other))

    def __imod__(self, other: Any) -> Any:
        return self._assign(E.remainder(self, other))

    def __ipow__(self, other: Any) -> Any:
        return self._assign(E.pow(self, other))

    def __imatmul__(self, other: Any) -> Any:
        return self._assign(S.matmul(self, other))

    def add_(self, other: Any) -> Any:
        """In-place ``self += other``; returns self."""
        return self._assign(E.add(self, other))

    def sub_(self, other: Any) -> Any:
        """In-place ``self -= other``; returns self."""
        return self._assign(E.subtract(self, other))

    def mul_(self, other: Any) -> Any:
        """In-place ``self *= other``; returns self."""
        return self._assign(E.multiply(self, other))

    def div_(self, other: Any) -> Any:
        """In-place ``self /= other``; returns self."""
        return self._assign(E.divide(self, other))

    def zero_(self) -> Any:
        """In-place fill with zeros; returns self."""
        return self._assign(E.multiply(self, 0))

    def fill_(self, value: Any) -> Any:
        """In-place fill with ``value``; returns self."""
        return self._assign(E.add(E.multiply(self, 0), value))

    def copy_(self, src: Any) -> Any:
        """In-place copy of ``src`` (broadcast to this shape); returns self."""
        return self._assign(S.broadcast_to(_elementwise.operand(src, self), self.shape))

    def __getitem__(self, key: Any) -> Any:
        # NOTE: ints and slices (most keys) go straight to the op, normalized as getitem does
        simple = I.simple_key(self.shape, key)
        if simple is not None:
            return S.apply(S.Op.GETITEM, self, key=simple)
        return I.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._setitem(key, value)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        """This tensor on ``device`` (itself when already there); Array API name of ``to``.

        >>> import p10
        >>> p10.ones(2).to_device("cpu").device
        'cpu'
        """
        if stream is not None:
            raise ValueError(f"to_device: stream must be None on host backends, got {stream!r}")
        return self.to(device=device)

    # -- Python scalars -----------------------------------------------------------------------
    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self.ndim:
            raise TypeError(f"only 0-d integer tensors can be used as an index, not {self.dtype}")
        return int(self.item())

    # -- methods ------------------------------------------------------------------------------
    def astype(self, dtype: Any, *, copy: bool = True) -> Any:
        """Converted to ``dtype`` (see :func:`p10.astype`)."""
        return E.astype(self, dtype, copy=copy)

    def float(self) -> Any:
        """Converted to float32."""
        return E.astype(self, "float32", copy=False)

    def double(self) -> Any:
        """Converted to float64."""
        return E.astype(self, "float64", copy=False)

    def long(self) -> Any:
        """Converted to int64."""
        return E.astype(self, "int64", copy=False)

    def copy(self) -> Any:
        """A copy with its own memory."""
        return E.positive(self)

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
            if S.math.prod(new) == S.math.prod(old):
                return S.apply(S.Op.RESHAPE, self, shape=new)
        return S.reshape(self, _shape_args(shape))

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """See :func:`p10.flatten`."""
        return S.flatten(self, start_dim, end_dim)

    def squeeze(self, axis: Any = None) -> Any:
        """See :func:`p10.squeeze`."""
        return S.squeeze(self, axis)

    def unsqueeze(self, axis: int) -> Any:
        """See :func:`p10.expand_dims`."""
        return S.expand_dims(self, axis=axis)

    def expand(self, *sizes: Any) -> Any:
        """See :func:`p10.expand`."""
        return S.expand(self, *sizes)

    def broadcast_to(self, shape: Any) -> Any:
        """See :func:`p10.broadcast_to`."""
        return S.broadcast_to(self, shape)

    def permute(self, *axes: Any) -> Any:
        """See :func:`p10.permute_dims`; accepts ``permute(1, 0)`` or ``permute((1, 0))``."""
        return S.permute_dims(self, _shape_args(axes))

    def transpose(self, axis0: int = 0, axis1: int = 1) -> Any:
        """Swap two axes (PyTorch's ``transpose``)."""
        return S.swapaxes(self, axis0, axis1)

    @property
    def T(self) -> Any:
        """The axes reversed (a 2-D transpose).

        >>> import p10
        >>> p10.zeros((2, 3)).T.shape
        (3, 2)
        """
        # NOTE: straight to the op: the axes are a permutation by construction, and `.T` is
        # as common in user code as an operator
        return S.apply(S.Op.PERMUTE, self, axes=tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Any:
        """The last two axes swapped.

        >>> import p10
        >>> p10.zeros((4, 2, 3)).mT.shape
        (4, 3, 2)
        """
        n = self.ndim
        if n < 2:
            return S.matrix_transpose(self)  # its error names the shape
        return S.apply(S.Op.PERMUTE, self, axes=(*range(n - 2), n - 1, n - 2))

    def flip(self, axis: Any = None) -> Any:
        """See :func:`p10.flip`."""
        return S.flip(self, axis=axis)

    def tile(self, repetitions: Any) -> Any:
        """See :func:`p10.tile`."""
        return S.tile(self, repetitions)

    def repeat(self, repeats: int, axis: int | None = None) -> Any:
        """See :func:`p10.repeat`."""
        return S.repeat(self, repeats, axis=axis)

    def matmul(self, other: Any) -> Any:
        """See :func:`p10.matmul`."""
        return S.matmul(self, other)

    def sum(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
        """See :func:`p10.sum`."""
        return R.sum(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.mean`."""
        return R.mean(self, axis=axis, keepdims=keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.prod`."""
        return R.prod(self, axis=axis, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.max`."""
        return R.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.min`."""
        return R.min(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Any:
        """See :func:`p10.argmax`."""
        return R.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Any:
        """See :func:`p10.argmin`."""
        return R.argmin(self, axis=axis, keepdims=keepdims)

    def var(self, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
        """See :func:`p10.var`."""
        return R.var(self, axis=axis, correction=correction, keepdims=keepdims)

    def std(self, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
        """See :func:`p10.std`."""
        return R.std(self, axis=axis, correction=correction, keepdims=keepdims)

    def logsumexp(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.logsumexp`."""
        return R.logsumexp(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis: int | None = None) -> Any:
        """See :func:`p10.cumsum`."""
        return R.cumsum(self, axis=axis)

    def all(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.all`."""
        return R.all(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Any:
        """See :func:`p10.any`."""
        return R.any(self, axis=axis, keepdims=keepdims)

    def gelu(self, approximate: str = "none") -> Any:
        """See :func:`p10.gelu`."""
        return E.gelu(self, approximate=approximate)

    def clip(self, min: Any = None, max: Any = None) -> Any:
        """See :func:`p10.clip`."""
        return E.clip(self, min, max)

    clamp = clip

    def softmax(self, axis: int = -1) -> Any:
        """See :func:`p10.softmax`."""
        return N.softmax(self, axis)

    def log_softmax(self, axis: int = -1) -> Any:
        """See :func:`p10.log_softmax`."""
        return N.log_softmax(self, axis)

    def take(self, indices: Any, axis: int | None = None) -> Any:
        """See :func:`p10.take`."""
        return I.take(self, indices, axis=axis)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The ``p10`` module, the Array API namespace of this tensor (standard 2024.12)."""
        import p10

        if api_version is not None and api_version not in ("2023.12", "2024.12"):
            raise p10.ArgumentError(
                f"__array_namespace__: api_version {api_version!r} is not supported; "
                "p10 implements 2024.12"
            )
        return p10
