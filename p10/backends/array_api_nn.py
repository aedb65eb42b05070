"""Kernels outside the Array API standard, composed from standard functions only.

Windows of an NCHW image are ``kh * kw`` strided slices stacked on new axes; conv2d is then one
batched ``matmul``, pooling a reduction over the window axes, and fold (col2im, the adjoint of
unfold) places each slice back by *dilating* it (stack with zeros, reshape) and padding it with
``concat``. Nothing writes in place, so a lazy library (Dask) keeps its graph.

>>> import numpy as np, pytest
>>> xp = pytest.importorskip("array_api_compat.numpy")
>>> tile(xp, np.arange(2), (2,)).tolist(), repeat(xp, np.arange(2), 2, None).tolist()
([0, 1, 0, 1], [0, 0, 1, 1])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p10._ops import Op

Pair = tuple[int, int]


def tile(xp: Any, x: Any, reps: tuple[int, ...]) -> Any:
    """NumPy's ``tile``: interleave a new axis of size ``r`` before each axis and merge them."""
    n = max(len(reps), x.ndim)
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - x.ndim) + tuple(x.shape)
    x = xp.reshape(x, tuple(v for s in shape for v in (1, s)))
    x = xp.broadcast_to(x, tuple(v for r, s in zip(reps, shape) for v in (r, s)))
    return xp.reshape(x, tuple(r * s for r, s in zip(reps, shape)))


def repeat(xp: Any, x: Any, repeats: int, axis: int | None) -> Any:
    """NumPy's ``repeat`` with an int count: a new axis after ``axis``, broadcast and merged."""
    if axis is None:
        x, axis = xp.reshape(x, (-1,)), 0
    shape = tuple(x.shape)
    x = xp.expand_dims(x, axis=axis + 1)
    x = xp.broadcast_to(x, shape[: axis + 1] + (repeats,) + shape[axis + 1 :])
    return xp.reshape(x, shape[:axis] + (shape[axis] * repeats,) + shape[axis + 1 :])


def pad(lib: Any, x: Any, pad_width: Any, value: Any = 0) -> Any:
    """Constant padding, one ``concat`` per padded axis."""
    for axis, (before, after) in enumerate(pad_width):
        if before == 0 and after == 0:
            continue
        parts = []
        for size in (before, after):
            shape = list(x.shape)
            shape[axis] = size
            parts.append(lib.full(tuple(shape), value, x))
        x = lib.xp.concat([parts[0], x, parts[1]], axis=axis)
    return x


def _pad2d(lib: Any, x: Any, padding: Pair, value: float = 0.0) -> Any:
    ph, pw = padding
    return pad(lib, x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), value)


def _out_size(size: int, k: int, s: int, d: int) -> int:
    return (size - d * (k - 1) - 1) // s + 1


def windows(xp: Any, x: Any, kernel_size: Pair, stride: Pair, dilation: Pair) -> Any:
    """The (N, C, kh, kw, OH, OW) windows of an already padded NCHW array."""
    (kh, kw), (sh, sw), (dh, dw) = kernel_size, stride, dilation
    oh = _out_size(x.shape[2], kh, sh, dh)
    ow = _out_size(x.shape[3], kw, sw, dw)
    rows = []
    for i in range(kh):
        row = []
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            row.append(x[:, :, r0 : r0 + sh * (oh - 1) + 1 : sh, c0 : c0 + sw * (ow - 1) + 1 : sw])
        rows.append(xp.stack(row, axis=2))
    return xp.stack(rows, axis=2)


def conv2d(lib: Any, x: Any, weight: Any, stride: Pair, padding: Pair, dilation: Pair, groups: int):
    """Grouped 2-D cross-correlation as im2col plus one batched matmul."""
    xp = lib.xp
    x, weight = lib.promote(x, weight)
    n = x.shape[0]
    o, cg, kh, kw = weight.shape
    win = windows(xp, _pad2d(lib, x, padding), (kh, kw), stride, dilation)
    oh, ow = win.shape[4], win.shape[5]
    # NOTE: split the channels into groups first, then merge: Dask reshapes do one at a time.
    cols = xp.reshape(win, (n, groups, cg, kh, kw, oh, ow))
    cols = xp.reshape(cols, (n, groups, cg * kh * kw, oh * ow))
    w = xp.reshape(weight, (1, groups, o // groups, cg, kh, kw))
    w = xp.reshape(w, (1, groups, o // groups, cg * kh * kw))
    out = xp.matmul(w, cols)  # (n, groups, o // groups, oh * ow)
    return xp.reshape(out, (n, o, oh, ow))


def unfold(lib: Any, x: Any, kernel_size: Pair, stride: Pair, padding: Pair, dilation: Pair):
    """im2col: (N, C * kh * kw, OH * OW)."""
    win = windows(lib.xp, _pad2d(lib, x, padding), kernel_size, stride, dilation)
    n, c, kh, kw, oh, ow = win.shape
    return lib.xp.reshape(win, (n, c * kh * kw, oh * ow))


def _dilate(lib: Any, x: Any, axis: int, step: int) -> Any:
    """Insert ``step - 1`` zeros between the elements along ``axis`` (no trailing zeros)."""
    if step == 1 or x.shape[axis] == 0:
        return x
    xp = lib.xp
    zeros = lib.full(tuple(x.shape), 0, x)
    stacked = xp.stack([x] + [zeros] * (step - 1), axis=axis + 1)
    shape = list(x.shape)
    shape[axis] *= step
    merged = xp.reshape(stacked, tuple(shape))
    keep = [slice(None)] * x.ndim
    keep[axis] = slice(0, shape[axis] - step + 1)
    return merged[tuple(keep)]


def fold(
    lib: Any,
    cols: Any,
    output_size: Pair,
    kernel_size: Pair,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
) -> Any:
    """col2im: sum the window columns back into an (N, C, H, W) image."""
    xp = lib.xp
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = kernel_size, stride, dilation, padding
    h, w = output_size[0] + 2 * ph, output_size[1] + 2 * pw
    oh, ow = _out_size(h, kh, sh, dh), _out_size(w, kw, sw, dw)
    n = cols.shape[0]
    c = cols.shape[1] // (kh * kw)
    cols = xp.reshape(cols, (n, c, kh, kw, oh, ow))
    out = None
    for i in range(kh):
        for j in range(kw):
            piece = _dilate(lib, _dilate(lib, cols[:, :, i, j, :, :], 2, sh), 3, sw)
            r0, c0 = i * dh, j * dw
            widths = ((0, 0), (0, 0), (r0, h - r0 - piece.shape[2]), (c0, w - c0 - piece.shape[3]))
            placed = pad(lib, piece, widths, 0)
            out = placed if out is None else out + placed
    if out is None:
        out = lib.full((n, c, h, w), 0, cols)
    return out[:, :, ph : ph + output_size[0], pw : pw + output_size[1]]


def max_pool2d(lib: Any, x: Any, kernel_size: Pair, stride: Pair, padding: Pair) -> Any:
    """Max over each window; padding is -inf so it never wins."""
    win = windows(lib.xp, _pad2d(lib, x, padding, float("-inf")), kernel_size, stride, (1, 1))
    return lib.xp.max(win, axis=(2, 3))


def avg_pool2d(lib: Any, x: Any, kernel_size: Pair, stride: Pair, padding: Pair) -> Any:
    """Mean over each window, the zero padding counted (as the spec does)."""
    win = windows(lib.xp, _pad2d(lib, x, padding), kernel_size, stride, (1, 1))
    return lib.xp.mean(win, axis=(2, 3))


def kernels(lib: Any) -> dict[Op, Callable[..., Any]]:
    """The neural-network kernels of the generic backend, bound to ``lib``."""
    one, zero = (1, 1), (0, 0)

    def k_conv2d(x, weight, *, stride=one, padding=zero, dilation=one, groups=1):
        return conv2d(lib, x, weight, stride, padding, dilation, groups)

    def k_unfold(x, *, kernel_size, stride=one, padding=zero, dilation=one):
        return unfold(lib, x, kernel_size, stride, padding, dilation)

    def k_fold(cols, *, output_size, kernel_size, stride=one, padding=zero, dilation=one):
        return fold(lib, cols, output_size, kernel_size, stride, padding, dilation)

    def k_max_pool2d(x, *, kernel_size, stride, padding=zero):
        return max_pool2d(lib, x, kernel_size, stride, padding)

    def k_avg_pool2d(x, *, kernel_size, stride, padding=zero):
        return avg_pool2d(lib, x, kernel_size, stride, padding)

    return {
        Op.CONV2D: k_conv2d,
        Op.UNFOLD: k_unfold,
        Op.FOLD: k_fold,
        Op.MAX_POOL2D: k_max_pool2d,
        Op.AVG_POOL2D: k_avg_pool2d,
    }
