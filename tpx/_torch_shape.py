"""PyTorch-style joining, splitting and reshaping functions of the ``tpx`` namespace: ``cat``,
``stack``, ``split`` into chunks, ``squeeze``, ``transpose``, ``permute``, ``flip``...
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

import p10
from tpx._torch import axis_of


# -- joining and splitting --------------------------------------------------------------------
def cat(tensors: Sequence[Any], dim: int = 0, *, axis: Any = None) -> Any:
    """Join tensors along an existing ``dim`` (PyTorch's ``cat``; ``concat`` is the same).

    >>> import tpx as tp
    >>> tp.cat([tp.zeros(2, 1), tp.ones(2, 2)], dim=1).shape
    (2, 3)
    """
    a = dim if axis is None else axis
    return p10.concat(list(tensors), axis=a)


concat = cat
concatenate = cat


def stack(tensors: Sequence[Any], dim: int = 0, *, axis: Any = None) -> Any:
    """Join tensors of one shape along a new ``dim``.

    >>> import tpx as tp
    >>> tp.stack([tp.zeros(3), tp.ones(3)], dim=1).shape
    (3, 2)
    """
    return p10.stack(list(tensors), axis=dim if axis is None else axis)


def _slice_along(x: Any, dim: int, start: int, stop: int) -> Any:
    return x[(slice(None),) * dim + (slice(start, stop),)]


def axis_index(x: Any, dim: int, fn: str) -> int:
    n = x.ndim
    if not -n <= dim < n:
        raise p10.AxisError(f"{fn}: dim {dim} is out of range for a tensor of shape {x.shape}")
    return dim % n


def split(x: Any, split_size_or_sections: Any, dim: int = 0) -> tuple[Any, ...]:
    """Split into chunks of ``split_size`` along ``dim`` (the last one smaller), or into the
    sizes of a list, as PyTorch (P10's ``split`` takes a number of sections instead).

    >>> import tpx as tp
    >>> [t.shape for t in tp.split(tp.zeros(5, 2), 2)]
    [(2, 2), (2, 2), (1, 2)]
    >>> [t.shape for t in tp.split(tp.zeros(5), [1, 4])]
    [(1,), (4,)]
    """
    d = axis_index(x, dim, "split")
    n = x.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0:
            raise p10.ArgumentError(f"split: split_size must be positive, got {size}")
        sizes = [builtins.min(size, n - s) for s in range(0, n, size)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            raise p10.ShapeError(
                f"split: sizes {sizes} sum to {builtins.sum(sizes)}, but dim {dim} of shape "
                f"{x.shape} has {n} elements"
            )
    out, start = [], 0
    for s in sizes:
        out.append(_slice_along(x, d, start, start + s))
        start += s
    return tuple(out)


def chunk(x: Any, chunks: int, dim: int = 0) -> tuple[Any, ...]:
    """Split into ``chunks`` pieces of equal size along ``dim`` (the last one smaller; fewer
    pieces when the size does not allow ``chunks``), as PyTorch.

    >>> import tpx as tp
    >>> [t.shape for t in tp.chunk(tp.zeros(5), 3)]
    [(2,), (2,), (1,)]
    """
    if chunks <= 0:
        raise p10.ArgumentError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[axis_index(x, dim, "chunk")]
    return split(x, builtins.max(1, -(-n // chunks)), dim)


def squeeze(x: Any, dim: Any = None, *, axis: Any = None) -> Any:
    """Remove axes of size 1 (only ``dim`` when given; a ``dim`` of another size is kept).

    >>> import tpx as tp
    >>> tp.squeeze(tp.zeros(1, 3, 1)).shape, tp.squeeze(tp.zeros(2, 3), 0).shape
    ((3,), (2, 3))
    """
    a = axis_of("squeeze", dim, axis)
    if a is None:
        return p10.squeeze(x)
    axes = (a,) if isinstance(a, (int, np.integer)) else tuple(a)
    keep = tuple(i for i in axes if x.shape[axis_index(x, i, "squeeze")] == 1)
    return p10.squeeze(x, axis=keep) if keep else x


def unsqueeze(x: Any, dim: Any = None, *, axis: Any = None) -> Any:
    """A new axis of size 1 at ``dim``.

    >>> import tpx as tp
    >>> tp.unsqueeze(tp.zeros(3), 0).shape
    (1, 3)
    """
    return p10.expand_dims(x, axis=axis_of("unsqueeze", dim, axis))


def transpose(x: Any, dim0: int, dim1: int) -> Any:
    """Swap two axes.

    >>> import tpx as tp
    >>> tp.transpose(tp.zeros(2, 3, 4), 0, 2).shape
    (4, 3, 2)
    """
    return p10.swapaxes(x, dim0, dim1)


def t(x: Any) -> Any:
    """The transpose of a tensor of at most 2 dimensions.

    >>> import tpx as tp
    >>> tp.t(tp.zeros(2, 3)).shape
    (3, 2)
    """
    if x.ndim > 2:
        raise p10.ShapeError(f"t: expects at most 2 dimensions, got shape {x.shape}")
    return x if x.ndim < 2 else p10.swapaxes(x, 0, 1)


def permute(x: Any, dims: Any) -> Any:
    """Reorder the axes.

    >>> import tpx as tp
    >>> tp.permute(tp.zeros(2, 3, 4), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return p10.permute_dims(x, tuple(dims))


def flip(x: Any, dims: Any = None, *, axis: Any = None) -> Any:
    """Reverse the order of elements along ``dims`` (an int or a tuple).

    >>> import tpx as tp
    >>> tp.flip(tp.arange(3), [0]).tolist()
    [2, 1, 0]
    """
    return p10.flip(x, axis=axis_of("flip", dims, axis))
