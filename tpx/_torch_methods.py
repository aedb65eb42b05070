"""PyTorch-style methods of ``tpx.Tensor`` where they differ from P10's Array API methods.

Each method calls a function of :mod:`tpx._torch` (``dim``/``keepdim``, ``max(dim)`` giving
values and indices, ``repeat`` as PyTorch's tile...). A call that names the Array API's
``axis=``/``keepdims=`` keeps P10's meaning. docs/porting-from-pytorch.md lists them all.
"""

from __future__ import annotations

from typing import Any

import p10
from tpx import _torch as T
from tpx import _torch_ops as O


class TorchMethods:
    """The PyTorch-named methods of ``tpx.Tensor`` (a mixin placed before P10's methods)."""

    __slots__ = ()

    # -- shape and size -----------------------------------------------------------------------
    @property
    def size(self) -> Any:
        """PyTorch's ``size``: ``x.size()`` is the shape as a :class:`~tpx._torch.Size`,
        ``x.size(i)`` the size of axis ``i``. Not called, ``x.size`` is the number of elements
        (the Array API's attribute), so code written for P10 keeps working.

        >>> import tpx as tp
        >>> x = tp.zeros(2, 3)
        >>> x.size(), x.size(-1), x.size == 6
        (tpx.Size([2, 3]), 3, True)
        """
        return T.SizeOf(self.shape)

    def numel(self) -> int:
        """The number of elements.

        >>> import tpx as tp
        >>> tp.zeros(2, 3).numel()
        6
        """
        return self._value.size

    nelement = numel

    def dim(self) -> int:
        """The number of dimensions (``ndim``).

        >>> import tpx as tp
        >>> tp.zeros(2, 3).dim()
        2
        """
        return self.ndim

    ndimension = dim

    def view_as(self, other: Any) -> Any:
        """This tensor viewed with the shape of ``other``.

        >>> import tpx as tp
        >>> tp.arange(6).view_as(tp.zeros(2, 3)).shape
        (2, 3)
        """
        return self.reshape(other.shape)

    reshape_as = view_as

    def expand_as(self, other: Any) -> Any:
        """This tensor broadcast to the shape of ``other``.

        >>> import tpx as tp
        >>> tp.zeros(3).expand_as(tp.zeros(2, 3)).shape
        (2, 3)
        """
        return p10.broadcast_to(self, other.shape)

    def type_as(self, other: Any) -> Any:
        """This tensor converted to the dtype of ``other``."""
        return self.astype(other.dtype, copy=False)

    def squeeze(self, dim: Any = None, *, axis: Any = None) -> Any:
        """See :func:`tpx.squeeze` (a ``dim`` whose size is not 1 is kept, as PyTorch)."""
        return O.squeeze(self, dim, axis=axis)

    def unsqueeze(self, dim: Any = None, *, axis: Any = None) -> Any:
        """See :func:`tpx.unsqueeze`."""
        return O.unsqueeze(self, dim, axis=axis)

    def flip(self, *dims: Any, axis: Any = None) -> Any:
        """Reverse along ``dims``: ``flip(0)``, ``flip(0, 1)`` or ``flip((0, 1))``."""
        d = dims[0] if len(dims) == 1 else (dims or None)
        return O.flip(self, d, axis=axis)

    def t(self) -> Any:
        """See :func:`tpx.t`."""
        return O.t(self)

    def repeat(self, *sizes: Any) -> Any:
        """Tile the tensor ``sizes`` times along each axis (PyTorch's ``repeat``, NumPy's
        ``tile``); P10's ``repeat`` is :meth:`repeat_interleave` here.

        >>> import tpx as tp
        >>> tp.asarray([1, 2]).repeat(2).tolist(), tp.zeros(2, 3).repeat(2, 1).shape
        ([1, 2, 1, 2], (4, 3))
        """
        return p10.tile(self, T.shape_of(sizes, "repeat"))

    def repeat_interleave(self, repeats: int, dim: int | None = None) -> Any:
        """Each element repeated ``repeats`` times along ``dim`` (flattened when None).

        >>> import tpx as tp
        >>> tp.asarray([1, 2]).repeat_interleave(2).tolist()
        [1, 1, 2, 2]
        """
        return p10.repeat(self, repeats, axis=dim)

    def split(self, split_size: Any, dim: int = 0) -> tuple:
        """See :func:`tpx.split` (chunks of ``split_size``, as PyTorch)."""
        return O.split(self, split_size, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        """See :func:`tpx.chunk`."""
        return O.chunk(self, chunks, dim)

    # -- reductions ---------------------------------------------------------------------------
    def max(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
            keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.max` (``x.max(1)`` gives values and indices, as PyTorch)."""
        return T.max(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def min(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
            keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.min`."""
        return T.min(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def argmax(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
               keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.argmax`."""
        return T.argmax(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def argmin(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
               keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.argmin`."""
        return T.argmin(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def prod(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
             keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.prod`."""
        return T.prod(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def logsumexp(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
                  keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.logsumexp`."""
        return T.logsumexp(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def all(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
            keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.all`."""
        return T.all(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def any(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
            keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.any`."""
        return T.any(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def var(self, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
            correction: Any = None, axis: Any = None, keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.var` (unbiased by default, as PyTorch)."""
        return T.var(self, dim, unbiased, keepdim, correction=correction, axis=axis,
                     keepdims=keepdims)  # fmt: skip

    def std(self, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
            correction: Any = None, axis: Any = None, keepdims: Any = None) -> Any:  # fmt: skip
        """See :func:`tpx.std` (unbiased by default, as PyTorch)."""
        return T.std(self, dim, unbiased, keepdim, correction=correction, axis=axis,
                     keepdims=keepdims)  # fmt: skip

    def cumsum(self, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Any:
        """See :func:`tpx.cumsum`."""
        return T.cumsum(self, dim, axis=axis, dtype=dtype)

    def softmax(self, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Any:
        """See :func:`tpx.softmax`."""
        return T.softmax(self, dim, axis=axis, dtype=dtype)

    def log_softmax(self, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Any:
        """See :func:`tpx.log_softmax`."""
        return T.log_softmax(self, dim, axis=axis, dtype=dtype)

    # -- ops of PyTorch's -------------------------------------------------------------------
    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
        """See :func:`tpx.topk`."""
        return O.topk(self, k, dim, largest, sorted)

    def roll(self, shifts: Any, dims: Any = None) -> Any:
        """See :func:`tpx.roll`."""
        return O.roll(self, shifts, dims)

    def tril(self, diagonal: int = 0) -> Any:
        """See :func:`tpx.tril`."""
        return O.tril(self, diagonal)

    def triu(self, diagonal: int = 0) -> Any:
        """See :func:`tpx.triu`."""
        return O.triu(self, diagonal)

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        """See :func:`tpx.sort`."""
        return O.sort(self, dim, descending, stable)

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        """See :func:`tpx.argsort`."""
        return O.argsort(self, dim, descending, stable)

    def gather(self, dim: int, index: Any) -> Any:
        """See :func:`tpx.gather`."""
        return O.gather(self, dim, index)

    def index_select(self, dim: int, index: Any) -> Any:
        """See :func:`tpx.index_select`."""
        return O.index_select(self, dim, index)

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Any:
        """See :func:`tpx.norm`."""
        return O.norm(self, p, dim, keepdim)

    def masked_fill(self, mask: Any, value: Any) -> Any:
        """See :func:`tpx.masked_fill`."""
        return O.masked_fill(self, mask, value)

    def eq(self, other: Any) -> Any:
        """Elementwise ``==`` (a bool tensor)."""
        return p10.equal(self, other)

    def ne(self, other: Any) -> Any:
        """Elementwise ``!=``."""
        return p10.not_equal(self, other)

    def lt(self, other: Any) -> Any:
        """Elementwise ``<``."""
        return p10.less(self, other)

    def le(self, other: Any) -> Any:
        """Elementwise ``<=``."""
        return p10.less_equal(self, other)

    def gt(self, other: Any) -> Any:
        """Elementwise ``>``."""
        return p10.greater(self, other)

    def ge(self, other: Any) -> Any:
        """Elementwise ``>=``."""
        return p10.greater_equal(self, other)

    def contiguous(self, memory_format: Any = None) -> Any:
        """Itself: P10 tensors need no contiguous copy before ``view``."""
        return self

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """True (see :meth:`contiguous`)."""
        return True

    def type(self, dtype: Any = None) -> Any:
        """This tensor converted to ``dtype``; without one, the dtype's name.

        >>> import tpx as tp
        >>> tp.ones(1).type(tp.float64).dtype, tp.ones(1).type()
        (dtype('float64'), 'float32')
        """
        return self.dtype.name if dtype is None else self.astype(dtype, copy=False)

    # -- in-place ops (recorded, and checked, as the operators' in-place forms) -----------------
    def exp_(self) -> Any:
        """In-place ``exp``; returns self."""
        return self._assign(p10.exp(self))

    def log_(self) -> Any:
        """In-place ``log``; returns self."""
        return self._assign(p10.log(self))

    def sqrt_(self) -> Any:
        """In-place ``sqrt``; returns self."""
        return self._assign(p10.sqrt(self))

    def abs_(self) -> Any:
        """In-place ``abs``; returns self."""
        return self._assign(p10.abs(self))

    def neg_(self) -> Any:
        """In-place negation; returns self."""
        return self._assign(p10.negative(self))

    def tanh_(self) -> Any:
        """In-place ``tanh``; returns self."""
        return self._assign(p10.tanh(self))

    def sigmoid_(self) -> Any:
        """In-place ``sigmoid``; returns self."""
        return self._assign(p10.sigmoid(self))

    def relu_(self) -> Any:
        """In-place ``relu``; returns self."""
        return self._assign(p10.relu(self))

    def pow_(self, exponent: Any) -> Any:
        """In-place ``pow``; returns self."""
        return self._assign(p10.pow(self, exponent))

    def clamp_(self, min: Any = None, max: Any = None) -> Any:
        """In-place ``clamp``; returns self."""
        return self._assign(p10.clip(self, min, max))

    clip_ = clamp_

    def masked_fill_(self, mask: Any, value: Any) -> Any:
        """In-place :meth:`masked_fill`; returns self."""
        return self._assign(O.masked_fill(self, mask, value))

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Any:
        """Fill with values drawn uniformly from ``[a, b)`` (an initialisation: do it under
        ``no_grad`` for a leaf that requires grad); returns self.

        >>> import tpx as tp
        >>> x = tp.empty(3).uniform_(2.0, 3.0); bool(((x >= 2) & (x < 3)).all())
        True
        """
        gen = generator if generator is not None else p10.random.default_generator
        drawn = gen.uniform(a, b, self.shape, dtype=self.dtype, backend=self.backend)
        return self._assign(self._wrap(drawn))

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Any:
        """Fill with values drawn from a normal distribution; returns self."""
        gen = generator if generator is not None else p10.random.default_generator
        drawn = gen.normal(mean, std, self.shape, dtype=self.dtype, backend=self.backend)
        return self._assign(self._wrap(drawn))

    def int(self) -> Any:
        """Converted to int32."""
        return self.astype("int32", copy=False)

    def bool(self) -> Any:
        """Converted to bool."""
        return self.astype("bool", copy=False)

    def new_zeros(self, *size: Any, dtype: Any = None) -> Any:
        """Zeros of ``size`` with this tensor's dtype (or ``dtype``) and backend."""
        shape = T.shape_of(size, "new_zeros")
        return self._wrap(p10.zeros(shape, dtype=dtype or self.dtype, backend=self.backend))

    def new_ones(self, *size: Any, dtype: Any = None) -> Any:
        """Ones of ``size`` with this tensor's dtype (or ``dtype``) and backend."""
        shape = T.shape_of(size, "new_ones")
        return self._wrap(p10.ones(shape, dtype=dtype or self.dtype, backend=self.backend))

    def new_tensor(self, data: Any, dtype: Any = None) -> Any:
        """A new tensor of ``data`` with this tensor's dtype (or ``dtype``) and backend."""
        return self._wrap(p10.asarray(data, dtype=dtype or self.dtype, backend=self.backend))
