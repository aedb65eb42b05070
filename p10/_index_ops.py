"""Indexing: basic (ints, slices, None, ...), integer arrays (gather), masks, scatter-add."""

from __future__ import annotations

from typing import Any

import numpy as np

from p10._creation import asarray
from p10._elementwise import is_tensor, operand, operands
from p10._errors import ArgumentError, DTypeError, IndexOutOfRangeError
from p10._indexing import IndexSlot
from p10._ops import Op
from p10._reductions import normalize_axis
from p10._shape import reshape
from p10._tensor import Tensor, apply, wrap


def nonzero(x: Any, /) -> tuple[Tensor, ...]:
    """Indices of the nonzero elements, one int64 tensor per axis (never differentiable).

    >>> import p10
    >>> [t.tolist() for t in p10.nonzero(p10.asarray([0, 3, 0, 4]))]
    [[1, 3]]
    """
    (x,) = operands(x)
    backend = x.backend
    arr = np.asarray(x)
    return tuple(wrap(backend.from_numpy(i.astype(np.int64)), backend) for i in np.nonzero(arr))


def _check_int(item: int, axis: int, shape: tuple[int, ...], op: str) -> int:
    if axis >= len(shape):
        raise IndexOutOfRangeError(f"{op}: too many indices for a tensor of shape {shape}")
    if not -shape[axis] <= item < shape[axis]:
        raise IndexOutOfRangeError(
            f"{op}: index {item} is out of range for axis {axis} of size {shape[axis]} "
            f"(shape {shape}); valid indices are {-shape[axis]}..{shape[axis] - 1}"
        )
    return item


def _slice(s: slice) -> slice:
    def num(v: Any) -> int | None:
        return None if v is None else int(v.item() if is_tensor(v) else v)

    if s.step == 0:
        raise ArgumentError("getitem: slice step cannot be zero")
    return slice(num(s.start), num(s.stop), num(s.step))


def normalize_key(x: Any, key: Any, op: str = "getitem") -> tuple[tuple, list[Any]]:
    """Split ``key`` into a hashable, JSON-friendly key and the index tensors it refers to.

    >>> import p10
    >>> k, t = normalize_key(p10.zeros((3, 3)), (0, p10.asarray([1, 2])))
    >>> k, len(t)
    ((0, IndexSlot(position=0)), 1)
    """
    items = key if isinstance(key, tuple) else (key,)
    out: list[Any] = []
    tensors: list[Any] = []
    n_ell = sum(1 for k in items if k is Ellipsis)
    consumed = sum(
        (k.ndim if is_tensor(k) and k.dtype.kind == "b" else 1)
        for k in items
        if k is not None and k is not Ellipsis
    )
    axis = 0
    for k in items:
        if k is None:
            out.append(None)
        elif k is Ellipsis:
            out.append(Ellipsis)
            axis += x.ndim - consumed if n_ell == 1 else 0
        elif isinstance(k, slice):
            out.append(_slice(k))
            axis += 1
        elif isinstance(k, bool | np.bool_):
            raise DTypeError("getitem: a Python bool index is not supported; use a bool tensor")
        elif isinstance(k, int | np.integer):
            out.append(_check_int(int(k), axis, x.shape, op))
            axis += 1
        else:
            t = operand(k, x) if is_tensor(k) else operand(np.asarray(k), x)
            if t.dtype.kind == "b":
                dims = x.shape[axis : axis + t.ndim]
                # NOTE: an empty mask axis selects nothing from an axis of any length (NumPy)
                fits = len(dims) == t.ndim and all(k in (d, 0) for d, k in zip(dims, t.shape))
                if t.ndim and not fits:
                    raise IndexOutOfRangeError(
                        f"{op}: a bool mask of shape {t.shape} does not match the shape {dims} "
                        f"of the axes it indexes in {x.shape}; masks must match exactly (or "
                        "have an empty axis)"
                    )
                for part in nonzero(t):
                    out.append(IndexSlot(len(tensors)))
                    tensors.append(part)
                axis += t.ndim
            elif t.dtype.kind in "iu":
                out.append(IndexSlot(len(tensors)))
                tensors.append(t)
                axis += 1
            else:
                raise DTypeError(
                    f"getitem: index tensors must be integer or bool, got {t.dtype.name}"
                )
    if axis > x.ndim:
        raise IndexOutOfRangeError(
            f"getitem: {axis} indices for a tensor of shape {x.shape} with {x.ndim} dimensions"
        )
    return tuple(out), tensors


def simple_key(shape: tuple[int, ...], key: Any) -> tuple | None:
    """``key`` normalized as :func:`normalize_key` does, when it holds only in-range Python
    ints and slices of Python ints (the common ``x[0]``, ``x[:, 1:3]``); None otherwise, and
    for anything that :func:`normalize_key` would reject, so that it reports the error.

    >>> simple_key((3, 4), (0, slice(1, None))), simple_key((3,), 5), simple_key((3,), None)
    ((0, slice(1, None, None)), None, None)
    """
    items = key if key.__class__ is tuple else (key,)
    if len(items) > len(shape):
        return None
    for k, size in zip(items, shape):
        cls = k.__class__
        if cls is int:
            if not -size <= k < size:
                return None
        elif cls is slice:
            for v in (k.start, k.stop, k.step):
                if v is not None and v.__class__ is not int:
                    return None
            if k.step == 0:
                return None
        else:
            return None
    return items


def getitem(x: Any, key: Any) -> Any:
    """``x[key]``: basic indexing gives a view, integer or bool tensors gather a copy.

    >>> import p10
    >>> x = p10.arange(6).reshape((2, 3))
    >>> getitem(x, (slice(None), 1)).tolist(), getitem(x, x > 3).tolist()
    ([1, 4], [4, 5])
    """
    (x,) = operands(x)
    x, key = _expand_0d_masks(x, key)
    k, tensors = normalize_key(x, key)
    return apply(Op.GETITEM, x, *tensors, key=k)


def _is_0d_mask(k: Any) -> bool:
    return is_tensor(k) and k.ndim == 0 and k.dtype.kind == "b"


def _width(k: Any) -> int:
    """How many axes of the indexed tensor the key item ``k`` consumes."""
    return k.ndim if is_tensor(k) and k.dtype.kind == "b" else 1


def drop_0d_masks(key: Any) -> Any:
    """``key`` without its 0-d bool masks when all are True (a write then reaches every
    position they select), or None when one is False (the write selects nothing)."""
    items = key if isinstance(key, tuple) else (key,)
    masks = [k for k in items if _is_0d_mask(k)]
    if not masks:
        return key
    if not all(bool(k.item()) for k in masks):
        return None
    rest = tuple(k for k in items if not _is_0d_mask(k))
    return rest if rest else Ellipsis


def _expand_0d_masks(x: Any, key: Any) -> tuple[Any, Any]:
    """Rewrite each 0-d bool mask as NumPy reads it: a new length-1 axis of ``x`` at that place,
    picked by the index ``[0]`` (True) or ``[]`` (False)."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(_is_0d_mask(k) for k in items):
        return x, key
    consumed = sum(0 if k is None or k is Ellipsis or _is_0d_mask(k) else _width(k) for k in items)
    shape, axis, new_items = list(x.shape), 0, []
    for k in items:
        if k is Ellipsis:
            axis += x.ndim - consumed
        elif _is_0d_mask(k):
            shape.insert(axis + (len(shape) - x.ndim), 1)
            k = asarray([0] if k.item() else [], dtype="int64", backend=x.backend)
        elif k is not None:
            axis += _width(k)
        new_items.append(k)
    return reshape(x, tuple(shape)), tuple(new_items)


def index_add(x: Any, key: Any, values: Any) -> Any:
    """A copy of ``x`` where ``values`` are added at ``x[key]``, repeated indices summing.

    This is the scatter-add that the gradient of a gather needs.

    >>> import p10
    >>> index_add(p10.zeros(3), p10.asarray([0, 0, 2]), 1.0).tolist()
    [2.0, 0.0, 1.0]
    """
    (x,) = operands(x)
    k, tensors = normalize_key(x, key)
    return apply(Op.INDEX_ADD, x, operand(values, x), *tensors, key=k)


def index_put(x: Any, key: Any, values: Any) -> Any:
    """A copy of ``x`` with ``x[key] = values`` (the out-of-place form of setitem).

    >>> import p10
    >>> index_put(p10.zeros(3), 1, 5.0).tolist()
    [0.0, 5.0, 0.0]
    """
    (x,) = operands(x)
    k, tensors = normalize_key(x, key)
    return apply(Op.INDEX_PUT, x, operand(values, x), *tensors, key=k)


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    """Elements of ``x`` at integer ``indices`` along ``axis`` (flattened when None).

    >>> import p10
    >>> take(p10.asarray([[1, 2], [3, 4]]), p10.asarray([1, 0]), axis=1).tolist()
    [[2, 1], [4, 3]]
    """
    (x,) = operands(x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = normalize_axis(axis, x.ndim, "take")
    return getitem(x, (slice(None),) * ax + (operand(indices, x),))


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """Gather ``x`` along ``axis`` at ``indices`` of the same rank (NumPy semantics).

    >>> import p10
    >>> x = p10.asarray([[10, 20], [30, 40]])
    >>> take_along_axis(x, p10.asarray([[1], [0]]), axis=1).tolist()
    [[20], [30]]
    """
    (x,) = operands(x)
    idx = operand(indices, x)
    ax = normalize_axis(axis, x.ndim, "take_along_axis")
    if idx.ndim != x.ndim:
        raise IndexOutOfRangeError(
            f"take_along_axis: indices of shape {idx.shape} need the rank of x {x.shape}"
        )
    backend = x.backend
    key: list[Any] = []
    for d in range(x.ndim):
        if d == ax:
            key.append(idx)
        else:
            shape = [1] * x.ndim
            shape[d] = x.shape[d]
            ar = np.arange(x.shape[d], dtype=np.int64).reshape(shape)
            key.append(wrap(backend.from_numpy(ar), backend))
    return getitem(x, tuple(key))


def repeat(x: Any, /, repeats: Any, *, axis: int | None = None) -> Any:
    """Repeat each element ``repeats`` times along ``axis`` (flattened when None).

    ``repeats`` is one int, or one count per element along the axis (a tensor or sequence of
    non-negative ints, or a single one broadcast); per-element counts gather with ``take``.

    >>> import p10
    >>> p10.repeat(p10.asarray([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    >>> p10.repeat(p10.asarray([1, 2]), p10.asarray([0, 3])).tolist()
    [2, 2, 2]
    """
    (x,) = operands(x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = normalize_axis(axis, x.ndim, "repeat")
    if isinstance(repeats, int) and not isinstance(repeats, bool):
        if repeats < 0:
            raise ArgumentError(f"repeat: repeats must be non-negative, got {repeats}")
        return apply(Op.REPEAT, x, repeats=repeats, axis=ax)
    return _repeat_each(x, repeats, ax)


def _repeat_each(x: Any, repeats: Any, ax: int) -> Any:
    counts = np.asarray(repeats.numpy() if hasattr(repeats, "numpy") else repeats)
    n = x.shape[ax]
    if counts.dtype.kind not in "iu" or counts.ndim > 1 or counts.size not in (1, n):
        raise ArgumentError(
            f"repeat: repeats must be an int or 1-D integers of length 1 or {n} (axis {ax} of "
            f"{x.shape}), got {counts.dtype.name} of shape {counts.shape}"
        )
    if (counts < 0).any():
        raise ArgumentError("repeat: repeats must be non-negative")
    index = np.repeat(np.arange(n), np.broadcast_to(counts.reshape(-1), (n,)))
    return take(x, asarray(index, backend=x.backend), axis=ax)
