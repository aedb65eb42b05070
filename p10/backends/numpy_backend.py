"""The NumPy backend: the default, and the executable specification of every P10 op.

Each kernel takes NumPy arrays and keyword params and returns a new array (reductions may return
NumPy scalars; the dispatcher wraps them). Kernels never write into their inputs.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided
from scipy import special

from p10._backend import Backend
from p10._indexing import fill_key
from p10._ops import SPEC_OF, Op


def _clip(x, *, min=None, max=None):
    if min is None and max is None:
        return x.copy()
    return np.clip(x, min, max)


def _gelu(x, *, approximate="none"):
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + np.tanh(inner))
    return 0.5 * x * (1.0 + special.erf(x * (1.0 / math.sqrt(2.0))))


def _reduce(ufunc):
    # NOTE: ufunc.reduce is exactly what np.sum, np.max, np.all, ... run; calling it directly
    # skips their Python wrappers, and out=... returns a 0-d array rather than a NumPy scalar.
    def kernel(x, *, axis=None, keepdims=False):
        return ufunc.reduce(x, axis, keepdims=keepdims, out=...)

    return kernel


def _mean(x, *, axis=None, keepdims=False):
    total = np.add.reduce(x, axis, keepdims=keepdims, out=...)
    count = x.size // max(total.size, 1) if x.size else 0
    # NOTE: divide by a NumPy integer as np.mean does, so the rounding is the same.
    return np.true_divide(total, np.intp(count), out=total, casting="unsafe")


def _var(x, *, axis=None, keepdims=False, correction=0.0):
    return np.var(x, axis=axis, keepdims=keepdims, ddof=correction)


def _logsumexp(x, *, axis=None, keepdims=False):
    out = special.logsumexp(x, axis=axis, keepdims=keepdims).astype(x.dtype, copy=False)
    return out.reshape(()) if x.ndim == 0 else out  # NOTE: scipy gives 0-d input keepdims (1,)


def _cumsum(x, *, axis=0):
    return np.cumsum(x, axis=axis)


def _arg(fn):
    def kernel(x, *, axis=None, keepdims=False):
        return fn(x, axis=axis, keepdims=keepdims).astype(np.int64, copy=False)

    return kernel


def _topk(x, *, k, axis, largest=True):
    # NOTE: a stable sort: equal values keep their order (the first one first)
    key = x.astype(np.float64) if x.dtype.kind in "bu" else x
    order = np.argsort(-key if largest else key, axis=axis, kind="stable")
    return np.take(order, np.arange(k), axis=axis).astype(np.int64)


def _einsum(*operands, subscripts):
    return np.einsum(subscripts, *operands, optimize=len(operands) > 2)


def _broadcast_to(x, *, shape):
    """``np.broadcast_to``: a read-only view with zero strides on the stretched axes. A
    contiguous input (a reduction's gradient, most often 0-d) gets the view built directly,
    at a third of the cost of NumPy's general function."""
    lead = len(shape) - x.ndim
    if lead < 0 or not x.flags.c_contiguous:
        return np.broadcast_to(x, shape)
    strides = [0] * lead
    for size, target, stride in zip(x.shape, shape[lead:], x.strides):
        if size == target:
            strides.append(stride)
        elif size == 1:
            strides.append(0)
        else:
            return np.broadcast_to(x, shape)  # raises the shape error
    out = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
    out.flags.writeable = False
    return out


def _concat(*arrays, axis=0):
    return np.concatenate(arrays, axis=axis)


def _getitem(x, *index, key):
    return x[fill_key(key, index)]


def _index_add(base, values, *index, key):
    out = base.copy()
    np.add.at(out, fill_key(key, index), values)
    return out


def _index_put(base, values, *index, key):
    out = base.copy()
    out[fill_key(key, index)] = values
    return out


def _softmax(x, *, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, *, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _windows(x, kernel_size, stride, dilation):
    """A strided (N, C, kh, kw, OH, OW) view of the windows of an already padded NCHW array."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel_size, stride, dilation
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    s = x.strides
    shape = (n, c, kh, kw, oh, ow)
    strides = (s[0], s[1], dh * s[2], dw * s[3], sh * s[2], sw * s[3])
    return as_strided(x, shape=shape, strides=strides, writeable=False)


def _pad2d(x, padding, value=0.0):
    (ph, pw) = padding
    if ph == 0 and pw == 0:
        return x
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def _unfold(x, *, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
    win = _windows(_pad2d(x, padding), kernel_size, stride, dilation)
    n, c, kh, kw, oh, ow = win.shape
    return win.reshape(n, c * kh * kw, oh * ow)


def _fold(cols, *, output_size, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = kernel_size, stride, dilation, padding
    h, w = output_size[0] + 2 * ph, output_size[1] + 2 * pw
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    n = cols.shape[0]
    c = cols.shape[1] // (kh * kw)
    cols = cols.reshape(n, c, kh, kw, oh, ow)
    out = np.zeros((n, c, h, w), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
            columns = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
            out[:, :, rows, columns] += cols[:, :, i, j]
    return out[:, :, ph : ph + output_size[0], pw : pw + output_size[1]].copy()


def _conv2d(x, weight, *, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    n = x.shape[0]
    o, cg, kh, kw = weight.shape
    win = _windows(_pad2d(x, padding), (kh, kw), stride, dilation)
    oh, ow = win.shape[4], win.shape[5]
    win = win.reshape(n, groups, cg, kh, kw, oh, ow)
    wg = weight.reshape(groups, o // groups, cg, kh, kw)
    out = np.einsum("ngckhij,gockh->ngoij", win, wg, optimize=True)
    return out.reshape(n, o, oh, ow).astype(np.result_type(x, weight), copy=False)


def _max_pool2d(x, *, kernel_size, stride, padding=(0, 0)):
    win = _windows(_pad2d(x, padding, -np.inf), kernel_size, stride, (1, 1))
    return win.max(axis=(2, 3))


def _avg_pool2d(x, *, kernel_size, stride, padding=(0, 0)):
    win = _windows(_pad2d(x, padding), kernel_size, stride, (1, 1))
    return win.mean(axis=(2, 3), dtype=x.dtype)


KERNELS = {
    **{op: spec.numpy for op, spec in SPEC_OF.items() if spec.numpy is not None},
    Op.GELU: _gelu,
    Op.CLIP: _clip,
    Op.CAST: lambda x, *, dtype: x.astype(dtype),
    Op.SUM: _reduce(np.add),
    Op.MEAN: _mean,
    Op.PROD: _reduce(np.multiply),
    Op.MAX: _reduce(np.maximum),
    Op.MIN: _reduce(np.minimum),
    Op.ARGMAX: _arg(np.argmax),
    Op.ARGMIN: _arg(np.argmin),
    Op.VAR: _var,
    Op.LOGSUMEXP: _logsumexp,
    Op.CUMSUM: _cumsum,
    Op.ALL: _reduce(np.logical_and),
    Op.ANY: _reduce(np.logical_or),
    Op.MATMUL: np.matmul,
    Op.TENSORDOT: lambda a, b, *, axes: np.tensordot(a, b, axes=axes),
    Op.EINSUM: _einsum,
    Op.RESHAPE: lambda x, *, shape: x.reshape(shape),
    Op.PERMUTE: lambda x, *, axes: x.transpose(axes),
    Op.BROADCAST_TO: _broadcast_to,
    Op.CONCAT: _concat,
    Op.FLIP: lambda x, *, axis=None: np.flip(x, axis),
    Op.TILE: lambda x, *, reps: np.tile(x, reps),
    Op.REPEAT: lambda x, *, repeats, axis=None: np.repeat(x, repeats, axis),
    Op.PAD: lambda x, *, pad_width, value=0: np.pad(x, pad_width, constant_values=value),
    Op.ROLL: lambda x, *, shifts, axes: np.roll(x, shifts, axes),
    Op.TRIL: lambda x, *, k=0: np.tril(x, k),
    Op.TRIU: lambda x, *, k=0: np.triu(x, k),
    Op.TOPK: _topk,
    Op.GETITEM: _getitem,
    Op.INDEX_ADD: _index_add,
    Op.INDEX_PUT: _index_put,
    Op.SOFTMAX: _softmax,
    Op.LOG_SOFTMAX: _log_softmax,
    Op.CONV2D: _conv2d,
    Op.UNFOLD: _unfold,
    Op.FOLD: _fold,
    Op.MAX_POOL2D: _max_pool2d,
    Op.AVG_POOL2D: _avg_pool2d,
}


def _setitem(dst, key, value):
    dst[key] = value


# NOTE: ufuncs with out= write into the destination; NumPy copies an operand that overlaps it
# first (x -= x[::-1]), and raises before writing anything when the shapes or dtypes do not fit.
INPLACE = {
    Op.ADD: lambda dst, b: np.add(dst, b, out=dst),
    Op.SUB: lambda dst, b: np.subtract(dst, b, out=dst),
    Op.MUL: lambda dst, b: np.multiply(dst, b, out=dst),
    Op.DIV: lambda dst, b: np.true_divide(dst, b, out=dst),
}


def make_backend() -> Backend:
    """A fresh NumPy backend with a copy of the kernel table."""
    return Backend(
        name="numpy",
        kernels=dict(KERNELS),
        array_type=np.ndarray,
        from_numpy=lambda a: a,
        to_numpy=lambda a: a,
        setitem=_setitem,
        may_share_memory=np.may_share_memory,
        weak_scalars=True,
        inplace=dict(INPLACE),
    )
