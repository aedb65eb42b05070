"""Shape manipulation and linear algebra. Derived functions compose a few primitive ops."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from p10._elementwise import operands, promote_mixed
from p10._errors import ArgumentError, AxisError, ShapeError
from p10._functions import astype, multiply
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
    import numpy as np

    from p10._index_ops import take

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
    from p10._creation import asarray

    return take(x, asarray(index, backend=x.backend), axis=ax)


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


def matmul(x1: Any, x2: Any, /) -> Any:
    """Matrix product with NumPy's 1-D and batch broadcasting rules.

    >>> import p10
    >>> p10.matmul(p10.ones((5, 2, 3)), p10.ones((3, 4))).shape
    (5, 2, 4)
    """
    x1, x2 = operands(x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ShapeError(
            f"matmul: operands must be at least 1-D, got {x1.shape} @ {x2.shape}; "
            "use multiply for scalars"
        )
    k1, k2 = x1.shape[-1], x2.shape[-2 if x2.ndim > 1 else 0]
    if k1 != k2:
        raise ShapeError(
            f"matmul: inner dimensions differ: {x1.shape} @ {x2.shape} ({k1} != {k2}); "
            "transpose an operand (.mT) or fix its shape"
        )
    if x1.ndim > 1 and x2.ndim > 1:
        _batch_shapes(x1.shape, x2.shape)
    return apply(Op.MATMUL, *promote_mixed(x1, x2))


def _batch_shapes(s1: tuple[int, ...], s2: tuple[int, ...]) -> None:
    try:
        broadcast_shapes(s1[:-2], s2[:-2])
    except ShapeError:
        raise ShapeError(
            f"matmul: batch dimensions of {s1} @ {s2} do not broadcast ({s1[:-2]} vs {s2[:-2]}); "
            "sizes must be equal or 1 on each batch axis"
        ) from None


def tensordot(x1: Any, x2: Any, /, *, axes: int | tuple = 2) -> Any:
    """Sum products over ``axes`` (an int: the last/first ``axes`` axes; or two sequences).

    >>> import p10
    >>> p10.tensordot(p10.ones((2, 3)), p10.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    x1, x2 = operands(x1, x2)
    if isinstance(axes, int):
        a1, a2 = tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes))
    else:
        a1 = tuple(normalize_axis(a, x1.ndim, "tensordot") for a in axes[0])
        a2 = tuple(normalize_axis(a, x2.ndim, "tensordot") for a in axes[1])
    if [x1.shape[a] for a in a1] != [x2.shape[a] for a in a2]:
        raise ShapeError(
            f"tensordot: contracted sizes differ for {x1.shape} axes {a1} and {x2.shape} axes "
            f"{a2}; the paired axes must have equal sizes"
        )
    return apply(Op.TENSORDOT, *promote_mixed(x1, x2), axes=(a1, a2))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Dot product of vectors along ``axis``, with broadcasting of the other axes only.

    The contracted axis must have the same size in both inputs (it is never broadcast); the
    result keeps the inputs' promoted dtype (``int8 . int8`` is int8, as the standard says).

    >>> import p10
    >>> p10.vecdot(p10.ones((2, 3)), p10.ones(3)).tolist()
    [3.0, 3.0]
    """
    from p10._reductions import sum as _sum

    x1, x2 = operands(x1, x2)
    ndim = max(x1.ndim, x2.ndim)
    if not -ndim <= axis < ndim:
        raise AxisError(f"vecdot: axis {axis} is out of range for shapes {x1.shape} and {x2.shape}")
    neg = axis - ndim if axis >= 0 else axis
    n1 = x1.shape[neg] if x1.ndim >= -neg else None
    n2 = x2.shape[neg] if x2.ndim >= -neg else None
    if n1 != n2:
        raise ShapeError(
            f"vecdot: the contracted axis {axis} has size {n1} in {x1.shape} and {n2} in "
            f"{x2.shape}; it must be the same in both (it is not broadcast)"
        )
    prod = multiply(x1, x2)
    out = _sum(prod, axis=neg)
    return out if out.dtype == prod.dtype else astype(out, prod.dtype)


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two 1-D tensors.

    >>> import p10
    >>> p10.outer(p10.ones(2), p10.ones(3)).shape
    (2, 3)
    """
    x1, x2 = operands(x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(f"outer: needs two 1-D tensors, got {x1.shape} and {x2.shape}")
    return multiply(reshape(x1, (-1, 1)), reshape(x2, (1, -1)))


def einsum(subscripts: str, /, *operands_: Any) -> Any:
    """Einstein summation, as ``numpy.einsum``.

    >>> import p10
    >>> p10.einsum("ij,jk->ik", p10.ones((2, 3)), p10.ones((3, 4))).shape
    (2, 4)
    """
    ops = operands(*operands_)
    if "->" not in subscripts:
        raise ArgumentError(f"einsum: give the output explicitly ('...->...'), got {subscripts!r}")
    n_in = len(subscripts.split("->")[0].split(","))
    if n_in != len(ops):
        raise ArgumentError(f"einsum: {subscripts!r} names {n_in} operands, got {len(ops)}")
    return apply(Op.EINSUM, *ops, subscripts=subscripts.replace(" ", ""))
