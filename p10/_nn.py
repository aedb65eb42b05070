"""Neural-network kernels: softmax, convolution and pooling on NCHW tensors."""

from __future__ import annotations

from typing import Any

from p10._elementwise import operands, to_float
from p10._errors import ArgumentError, DTypeError, ShapeError
from p10._functions import add
from p10._ops import Op
from p10._reductions import normalize_axis
from p10._tensor import apply

IntPair = int | tuple[int, int]


def _pair(v: IntPair, name: str, op: str, minimum: int = 1) -> tuple[int, int]:
    pair = (v, v) if isinstance(v, int) else tuple(v)
    if len(pair) != 2 or any(not isinstance(p, int) or p < minimum for p in pair):
        raise ArgumentError(
            f"{op}: {name} must be an int or a pair of ints >= {minimum}, got {v!r}"
        )
    return pair  # type: ignore[return-value]


def softmax(x: Any, /, axis: int = -1) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis``, computed without overflow.

    >>> import p10
    >>> p10.softmax(p10.asarray([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    (x,) = operands(x)
    ax = normalize_axis(axis, x.ndim, "softmax")
    if x.shape[ax] == 0:
        return apply(Op.COPY, to_float(x))  # an empty axis: an empty result (and gradient)
    return apply(Op.SOFTMAX, to_float(x), axis=ax)


def log_softmax(x: Any, /, axis: int = -1) -> Any:
    """``log(softmax(x))`` along ``axis``, computed without overflow.

    >>> import p10
    >>> round(p10.log_softmax(p10.asarray([0.0, 0.0])).tolist()[0], 4)
    -0.6931
    """
    (x,) = operands(x)
    ax = normalize_axis(axis, x.ndim, "log_softmax")
    if x.shape[ax] == 0:
        return apply(Op.COPY, to_float(x))  # an empty axis: an empty result (and gradient)
    return apply(Op.LOG_SOFTMAX, to_float(x), axis=ax)


def _check_nchw(x: Any, op: str) -> None:
    if x.ndim != 4:
        raise ShapeError(f"{op}: input must be 4-D (N, C, H, W), got shape {x.shape}")
    if x.dtype.kind != "f":
        raise DTypeError(f"{op}: input must be floating, got {x.dtype.name}; cast with .astype")


def conv2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: IntPair = 1,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> Any:
    """2-D cross-correlation of NCHW ``x`` with OIHW ``weight`` (PyTorch's ``conv2d``).

    >>> import p10
    >>> p10.conv2d(p10.ones((1, 2, 5, 5)), p10.ones((4, 2, 3, 3)), padding=1).shape
    (1, 4, 5, 5)
    """
    x, weight = operands(x, weight)
    _check_nchw(x, "conv2d")
    if weight.ndim != 4:
        raise ShapeError(f"conv2d: weight must be 4-D (O, C/groups, kH, kW), got {weight.shape}")
    if x.shape[1] != weight.shape[1] * groups or weight.shape[0] % groups:
        raise ShapeError(
            f"conv2d: input {x.shape} has {x.shape[1]} channels but weight {weight.shape} with "
            f"groups={groups} expects {weight.shape[1] * groups}; fix in_channels or groups"
        )
    params = {
        "stride": _pair(stride, "stride", "conv2d"),
        "padding": _pair(padding, "padding", "conv2d", 0),
        "dilation": _pair(dilation, "dilation", "conv2d"),
        "groups": groups,
    }
    _out_size(x.shape[2:], weight.shape[2:], params, "conv2d")
    out = apply(Op.CONV2D, x, weight, **params)
    if bias is not None:
        (bias,) = operands(bias)
        out = add(out, bias.reshape((1, -1, 1, 1)))
    return out


def _out_size(hw: tuple, k: tuple, p: dict, op: str) -> tuple[int, int]:
    out = []
    for i in range(2):
        span = p["dilation"][i] * (k[i] - 1) + 1
        n = (hw[i] + 2 * p["padding"][i] - span) // p["stride"][i] + 1
        if n <= 0:
            raise ShapeError(
                f"{op}: kernel {tuple(k)} does not fit input {tuple(hw)} "
                f"with padding {p['padding']}; pad more or use a smaller kernel"
            )
        out.append(n)
    return out[0], out[1]


def unfold(
    x: Any, kernel_size: IntPair, dilation: IntPair = 1, padding: IntPair = 0, stride: IntPair = 1
) -> Any:
    """im2col: sliding blocks of NCHW ``x`` as columns ``(N, C*kh*kw, L)`` (PyTorch's unfold).

    >>> import p10
    >>> p10.unfold(p10.ones((1, 2, 4, 4)), 2).shape
    (1, 8, 9)
    """
    (x,) = operands(x)
    _check_nchw(x, "unfold")
    p = {
        "kernel_size": _pair(kernel_size, "kernel_size", "unfold"),
        "stride": _pair(stride, "stride", "unfold"),
        "padding": _pair(padding, "padding", "unfold", 0),
        "dilation": _pair(dilation, "dilation", "unfold"),
    }
    _out_size(x.shape[2:], p["kernel_size"], p, "unfold")
    return apply(Op.UNFOLD, x, **p)


def fold(
    x: Any,
    output_size: IntPair,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Any:
    """col2im, the adjoint of :func:`unfold`: overlapping blocks are summed.

    >>> import p10
    >>> p10.fold(p10.ones((1, 8, 9)), (4, 4), 2).shape
    (1, 2, 4, 4)
    """
    (x,) = operands(x)
    p = {
        "output_size": _pair(output_size, "output_size", "fold"),
        "kernel_size": _pair(kernel_size, "kernel_size", "fold"),
        "stride": _pair(stride, "stride", "fold"),
        "padding": _pair(padding, "padding", "fold", 0),
        "dilation": _pair(dilation, "dilation", "fold"),
    }
    kh, kw = p["kernel_size"]
    oh, ow = _out_size(p["output_size"], p["kernel_size"], p, "fold")
    if x.ndim != 3 or x.shape[1] % (kh * kw) or x.shape[2] != oh * ow:
        raise ShapeError(
            f"fold: input {x.shape} does not match (N, C*{kh}*{kw}, {oh * ow}) for "
            f"output_size {p['output_size']}"
        )
    return apply(Op.FOLD, x, **p)


def _pool(op: Op, x: Any, kernel_size: IntPair, stride: IntPair | None, padding: IntPair) -> Any:
    (x,) = operands(x)
    _check_nchw(x, op.value)
    k = _pair(kernel_size, "kernel_size", op.value)
    s = k if stride is None else _pair(stride, "stride", op.value)
    p = _pair(padding, "padding", op.value, 0)
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise ArgumentError(f"{op.value}: padding {p} must be at most half the kernel size {k}")
    _out_size(x.shape[2:], k, {"dilation": (1, 1), "padding": p, "stride": s}, op.value)
    return apply(op, x, kernel_size=k, stride=s, padding=p)


def max_pool2d(
    x: Any, kernel_size: IntPair, stride: IntPair | None = None, padding: IntPair = 0
) -> Any:
    """Maximum over sliding windows of NCHW ``x`` (stride defaults to the kernel size).

    >>> import p10
    >>> p10.max_pool2d(p10.ones((1, 1, 4, 4)), 2).shape
    (1, 1, 2, 2)
    """
    return _pool(Op.MAX_POOL2D, x, kernel_size, stride, padding)


def avg_pool2d(
    x: Any, kernel_size: IntPair, stride: IntPair | None = None, padding: IntPair = 0
) -> Any:
    """Mean over sliding windows of NCHW ``x``; padded zeros count (PyTorch's default).

    >>> import p10
    >>> p10.avg_pool2d(p10.ones((1, 1, 4, 4)), 2).tolist()[0][0]
    [[1.0, 1.0], [1.0, 1.0]]
    """
    return _pool(Op.AVG_POOL2D, x, kernel_size, stride, padding)
