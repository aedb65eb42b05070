"""Shape manipulation and linear algebra. Derived functions compose a few primitive ops."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from p10._elementwise import operands, promote_mixed
from p10._errors import ArgumentError, ShapeError
from p10._ops import Op
from p10._reductions import normalize_axes, normalize_axis
from p10._tensor import apply


def _shape_arg(shape: Any, op: str = "reshape") -> tuple[int, ...]:
    try:
        return (operator.index(shape),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(s) for s in shape)
    except TypeError:
        raise ShapeError(f"{op}: a shape is an int or a sequence of ints, got {shape!r}") from None


def _infer_shape(size: int, shape: tuple[int, ...], old: tuple[int, ...]) -> tuple[int, ...]:
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise ShapeError(f"reshape: {shape} may hold at most one -1 and no other negative size")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or size % known:
            raise ShapeError(f"reshape: cannot infer -1 in {shape} for {size} elements of {old}")
        shape = shape[: unknown[0]] + (size // known,) + shape[unknown[0] + 1 :]
    if math.prod(shape) != size:
        raise ShapeError(
            f"reshape: cannot reshape {old} ({size} elements) into {shape} "
            f"({math.prod(shape)} elements); the element counts must match (use -1 for one axis)"
        )
    return shape


def reshape(x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Any:
    """The same elements in a new shape; one size may be -1.

    >>> import p10
    >>> p10.reshape(p10.arange(6), (2, -1)).shape
    (2, 3)
    """
    (x,) = operands(x)
    new = _infer_shape(math.prod(x.shape), _shape_arg(shape), x.shape)
    if new == x.shape and not copy:
        return x
    return apply(Op.RESHAPE, x, shape=new)


def flatten(x: Any, /, start_dim: int = 0, end_dim: int = -1) -> Any:
    """Merge dimensions ``start_dim..end_dim`` into one.

    >>> import p10
    >>> p10.flatten(p10.zeros((2, 3, 4)), 1).shape
    (2, 12)
    """
    (x,) = operands(x)
    if x.ndim == 0:
        return reshape(x, (1,))
    s = normalize_axis(start_dim, x.ndim, "flatten")
    e = normalize_axis(end_dim, x.ndim, "flatten")
    return reshape(x, x.shape[:s] + (math.prod(x.shape[s : e + 1]),) + x.shape[e + 1 :])


def squeeze(x: Any, /, axis: int | tuple[int, ...] | None = None) -> Any:
    """Remove axes of size 1 (all of them when ``axis`` is None).

    >>> import p10
    >>> p10.squeeze(p10.zeros((1, 3, 1)), axis=0).shape
    (3, 1)
    """
    (x,) = operands(x)
    axes = normalize_axes(axis, x.ndim, "squeeze")
    if axes is None:
        axes = tuple(i for i, s in enumerate(x.shape) if s == 1)
    for a in axes:
        if x.shape[a] != 1:
            raise ShapeError(f"squeeze: axis {a} of shape {x.shape} has size {x.shape[a]}, not 1")
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


def expand_dims(x: Any, /, axis: int = 0) -> Any:
    """Insert an axis of size 1 at ``axis`` (PyTorch: ``unsqueeze``).

    >>> import p10
    >>> p10.expand_dims(p10.zeros(3), axis=-1).shape
    (3, 1)
    """
    (x,) = operands(x)
    a = normalize_axis(axis, x.ndim + 1, "expand_dims")
    return reshape(x, x.shape[:a] + (1,) + x.shape[a:])


unsqueeze = expand_dims


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast shape of ``shapes``, or :class:`ShapeError` naming them.

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        sizes = {s[i] for s in shapes if len(s) >= -i and s[i] != 1}
        if len(sizes) > 1:
            raise ShapeError(
                f"shapes {', '.join(map(str, shapes))} do not broadcast: axis {i} has sizes "
                f"{sorted(sizes)}; sizes must be equal or 1 on each axis counted from the right"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to(x: Any, /, shape: Sequence[int]) -> Any:
    """``x`` repeated along new or size-1 axes to ``shape`` (a read-only view).

    >>> import p10
    >>> p10.broadcast_to(p10.ones(3), (2, 3)).shape
    (2, 3)
    """
    (x,) = operands(x)
    shape = _shape_arg(shape, "broadcast_to")
    try:
        fits = len(shape) >= x.ndim and broadcast_shapes(x.shape, shape) == shape
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(
            f"broadcast_to: cannot broadcast {x.shape} to {shape}; each size of {x.shape} must "
            "equal the target's or be 1, counted from the right"
        )
    if shape == x.shape:
        return x
    return apply(Op.BROADCAST_TO, x, shape=shape)


def expand(x: Any, /, *sizes: int) -> Any:
    """PyTorch's ``expand``: broadcast to ``sizes``, where -1 keeps a size.

    >>> import p10
    >>> p10.expand(p10.ones((3, 1)), -1, 4).shape
    (3, 4)
    """
    (x,) = operands(x)
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    lead = len(sizes) - x.ndim
    full = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    return broadcast_to(x, full)


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    """Reorder the axes of ``x`` (PyTorch: ``permute``).

    >>> import p10
    >>> p10.permute_dims(p10.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    (x,) = operands(x)
    axes = tuple(normalize_axis(a, x.ndim, "permute_dims") for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ShapeError(f"permute_dims: {axes} is not a permutation of the {x.ndim} axes")
    return apply(Op.PERMUTE, x, axes=axes)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (PyTorch: ``.mT``).

    >>> import p10
    >>> p10.matrix_transpose(p10.zeros((5, 2, 3))).shape
    (5, 3, 2)
    """
    (x,) = operands(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose: needs at least 2 dimensions, got shape {x.shape}")
    return permute_dims(x, (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2))


def swapaxes(x: Any, /, axis1: int, axis2: int) -> Any:
    """Swap two axes (PyTorch: ``transpose(dim0, dim1)``).

    >>> import p10
    >>> p10.swapaxes(p10.zeros((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    (x,) = operands(x)
    axes = list(range(x.ndim))
    a, b = normalize_axis(axis1, x.ndim, "swapaxes"), normalize_axis(axis2, x.ndim, "swapaxes")
    axes[a], axes[b] = axes[b], axes[a]
    return permute_dims(x, axes)


def _nonempty_list(arrays: Sequence[Any], op: str) -> Sequence[Any]:
    if isinstance(arrays, str) or not isinstance(arrays, Sequence) or not arrays:
        raise ArgumentError(f"{op}: expected a non-empty list or tuple of tensors, got {arrays!r}")
    return arrays


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """Join tensors along an existing axis (flattened first when ``axis`` is None).

    >>> import p10
    >>> p10.concat([p10.zeros((2, 1)), p10.ones((2, 2))], axis=1).shape
    (2, 3)
    """
    arrays = operands(*_nonempty_list(arrays, "concat"))
    if axis is None:
        arrays = tuple(reshape(a, (-1,)) for a in arrays)
        axis = 0
    if arrays[0].ndim == 0:
        raise ShapeError("concat: 0-d tensors have no axis to join along; use stack instead")
    ax = normalize_axis(axis, arrays[0].ndim, "concat")
    first = arrays[0].shape
    for a in arrays[1:]:
        if a.ndim != len(first) or any(
            s != t for i, (s, t) in enumerate(zip(a.shape, first)) if i != ax
        ):
            shapes = ", ".join(str(t.shape) for t in arrays)
            raise ShapeError(
                f"concat: shapes {shapes} differ outside axis {ax}; every size but the one "
                "along axis must match"
            )
    return apply(Op.CONCAT, *promote_mixed(*arrays), axis=ax)


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Any:
    """Join tensors of one shape along a new axis.

    >>> import p10
    >>> p10.stack([p10.zeros(3), p10.ones(3)], axis=1).shape
    (3, 2)
    """
    arrays = operands(*_nonempty_list(arrays, "stack"))
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ShapeError(f"stack: every tensor needs the same shape, got {sorted(shapes)}")
    ax = normalize_axis(axis, arrays[0].ndim + 1, "stack")
    return concat([expand_dims(a, axis=ax) for a in arrays], axis=ax)


def split(x: Any, /, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Any]:
    """Split into equal sections, or at the given indices, along ``axis``.

    >>> import p10
    >>> [t.shape for t in p10.split(p10.zeros(6), 3)]
    [(2,), (2,), (2,)]
    """
    (x,) = operands(x)
    ax = normalize_axis(axis, x.ndim, "split")
    n = x.shape[ax]
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0 or n % indices_or_sections:
            raise ShapeError(
                f"split: axis {ax} of size {n} does not split into "
                f"{indices_or_sections} equal sections"
            )
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0, *indices_or_sections, n]
    pre = (slice(None),) * ax
    return [x[(*pre, slice(a, b))] for a, b in zip(bounds[:-1], bounds[1:])]


def flip(x: Any, /, *, axis: int | tuple[int, ...] | None = None) -> Any:
    """Reverse the order of elements along ``axis`` (every axis when None).

    >>> import p10
    >>> p10.flip(p10.arange(3)).tolist()
    [2, 1, 0]
    """
    (x,) = operands(x)
    return apply(Op.FLIP, x, axis=normalize_axes(axis, x.ndim, "flip"))


def tile(x: Any, /, repetitions: Sequence[int]) -> Any:
    """Repeat the whole tensor ``repetitions[i]`` times along each axis.

    >>> import p10
    >>> p10.tile(p10.asarray([1, 2]), (2,)).tolist()
    [1, 2, 1, 2]
    """
    (x,) = operands(x)
    return apply(Op.TILE, x, reps=_shape_arg(repetitions, "tile"))


def pad(x: Any, /, pad_width: Any, *, value: float = 0) -> Any:
    """Constant padding; ``pad_width`` is ``((before, after), ...)`` per axis, or one int.

    >>> import p10
    >>> p10.pad(p10.ones((1, 1)), 1).shape
    (3, 3)
    """
    (x,) = operands(x)
    if isinstance(pad_width, int):
        pad_width = ((pad_width, pad_width),) * x.ndim
    pw = tuple((int(a), int(b)) for a, b in pad_width)
    if len(pw) != x.ndim or any(a < 0 or b < 0 for a, b in pw):
        raise ShapeError(f"pad: need one non-negative (before, after) pair per axis of {x.shape}")
    return apply(Op.PAD, x, pad_width=pw, value=value)
