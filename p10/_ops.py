"""The closed set of P10 operators: one enum keys kernels, gradient rules, JSON names and labels.

Every op has exactly one output tensor. An op is called as ``kernel(*arrays, **params)``; its
params are plain, JSON-friendly values (ints, floats, strings, tuples, dtypes, ``None``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Op(enum.Enum):
    """A P10 operator. ``op.value`` is its stable, lower-case name used in traces and labels.

    >>> Op.ADD.value
    'add'
    >>> Op("matmul") is Op.MATMUL
    True
    """

    # elementwise unary
    NEG = "neg"
    ABS = "abs"
    EXP = "exp"
    LOG = "log"
    LOG1P = "log1p"
    EXPM1 = "expm1"
    SQRT = "sqrt"
    SQUARE = "square"
    RECIPROCAL = "reciprocal"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    TANH = "tanh"
    SIGMOID = "sigmoid"
    RELU = "relu"
    GELU = "gelu"  # params: approximate ("none" | "tanh")
    ERF = "erf"
    SIGN = "sign"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"
    CLIP = "clip"  # params: min, max (Python scalars or None)
    CAST = "cast"  # params: dtype
    COPY = "copy"
    LOGICAL_NOT = "logical_not"
    BITWISE_INVERT = "bitwise_invert"
    ISNAN = "isnan"
    ISINF = "isinf"
    ISFINITE = "isfinite"
    # elementwise binary
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    FLOORDIV = "floordiv"
    MOD = "mod"
    POW = "pow"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    LOGICAL_AND = "logical_and"
    LOGICAL_OR = "logical_or"
    LOGICAL_XOR = "logical_xor"
    BITWISE_AND = "bitwise_and"
    BITWISE_OR = "bitwise_or"
    BITWISE_XOR = "bitwise_xor"
    # elementwise ternary
    WHERE = "where"  # inputs: condition, x1, x2
    # reductions; params: axis (tuple of non-negative ints, or None), keepdims
    SUM = "sum"
    MEAN = "mean"
    PROD = "prod"
    MAX = "max"
    MIN = "min"
    ARGMAX = "argmax"  # axis: int or None
    ARGMIN = "argmin"
    VAR = "var"  # params: correction
    LOGSUMEXP = "logsumexp"
    CUMSUM = "cumsum"  # params: axis (int)
    ALL = "all"
    ANY = "any"
    # linear algebra
    MATMUL = "matmul"
    TENSORDOT = "tensordot"  # params: axes (tuple of two tuples)
    EINSUM = "einsum"  # variadic; params: subscripts
    # shape
    RESHAPE = "reshape"  # params: shape
    PERMUTE = "permute"  # params: axes
    BROADCAST_TO = "broadcast_to"  # params: shape
    CONCAT = "concat"  # variadic; params: axis
    FLIP = "flip"  # params: axis (tuple or None)
    TILE = "tile"  # params: reps
    REPEAT = "repeat"  # params: repeats (int), axis (int or None)
    PAD = "pad"  # params: pad_width (tuple of pairs), value
    ROLL = "roll"  # params: shifts, axes (tuples of equal length)
    TRIL = "tril"  # lower triangle of the last two axes; params: k (diagonal offset)
    TRIU = "triu"  # upper triangle of the last two axes; params: k
    TOPK = "topk"  # indices (int64) of the k largest/smallest; params: k, axis, largest
    # indexing; params: key (normalized index, tensors replaced by IndexSlot markers)
    GETITEM = "getitem"  # inputs: x, *index_tensors
    INDEX_ADD = "index_add"  # inputs: base, values, *index_tensors; base[key] += values
    INDEX_PUT = "index_put"  # inputs: base, values, *index_tensors; base[key] = values
    # neural-network kernels
    SOFTMAX = "softmax"  # params: axis
    LOG_SOFTMAX = "log_softmax"  # params: axis
    CONV2D = "conv2d"  # inputs: x, weight; params: stride, padding, dilation, groups
    UNFOLD = "unfold"  # im2col; params: kernel_size, stride, padding, dilation
    FOLD = "fold"  # col2im (adjoint of unfold); params: output_size and those of unfold
    MAX_POOL2D = "max_pool2d"  # params: kernel_size, stride, padding
    AVG_POOL2D = "avg_pool2d"  # params: kernel_size, stride, padding
    # Array API elementwise functions (issue 18): unary
    ACOS = "acos"
    ACOSH = "acosh"
    ASIN = "asin"
    ASINH = "asinh"
    ATAN = "atan"
    ATANH = "atanh"
    COSH = "cosh"
    SINH = "sinh"
    LOG2 = "log2"
    LOG10 = "log10"
    TRUNC = "trunc"
    SIGNBIT = "signbit"
    # Array API elementwise functions (issue 18): binary
    ATAN2 = "atan2"  # inputs: y, x
    LOGADDEXP = "logaddexp"
    HYPOT = "hypot"
    COPYSIGN = "copysign"
    NEXTAFTER = "nextafter"
    BITWISE_LEFT_SHIFT = "bitwise_left_shift"
    BITWISE_RIGHT_SHIFT = "bitwise_right_shift"
    # Array API linalg extension (issue 18); over the last two axes, batched
    INV = "inv"
    SOLVE = "solve"  # inputs: a (..., M, M), b (..., M, K) of the same batch shape
    DET = "det"
    SLOGDET = "slogdet"  # params: part ("sign" | "logabsdet")
    CHOLESKY = "cholesky"  # params: upper
    QR = "qr"  # params: mode ("reduced" | "complete"), part ("q" | "r")
    EIGH = "eigh"  # params: part ("values" | "vectors")
    SVD = "svd"  # params: full_matrices, part ("u" | "s" | "vh")
    # complex numbers (issue 18)
    REAL = "real"
    IMAG = "imag"
    CONJ = "conj"
    # Array API fft extension (issue 18)
    FFTN = "fftn"  # complex -> complex; params: s, axes (tuples), norm, inverse
    RFFT = "rfft"  # real -> complex half spectrum; params: n, axis, norm
    IRFFT = "irfft"  # complex half spectrum -> real; params: n, axis, norm

    # NOTE: members are singletons compared by identity, so the identity hash is exact; it makes
    # every kernel-table lookup several times cheaper than Enum's Python-level name hash.
    __hash__ = object.__hash__


@dataclass(frozen=True)
class OpInfo:
    """Static facts about an op: how many tensor inputs it takes (``None``: variadic)."""

    arity: int | None
    kind: str


_UNARY = {
    Op.NEG, Op.ABS, Op.EXP, Op.LOG, Op.LOG1P, Op.EXPM1, Op.SQRT, Op.SQUARE, Op.RECIPROCAL,
    Op.SIN, Op.COS, Op.TAN, Op.TANH, Op.SIGMOID, Op.RELU, Op.GELU, Op.ERF, Op.SIGN, Op.FLOOR,
    Op.CEIL, Op.ROUND, Op.CLIP, Op.CAST, Op.COPY, Op.LOGICAL_NOT, Op.BITWISE_INVERT, Op.ISNAN,
    Op.ISINF, Op.ISFINITE, Op.ACOS, Op.ACOSH, Op.ASIN, Op.ASINH, Op.ATAN, Op.ATANH, Op.COSH,
    Op.SINH, Op.LOG2, Op.LOG10, Op.TRUNC, Op.SIGNBIT, Op.REAL, Op.IMAG, Op.CONJ,
}  # fmt: skip
_BINARY = {
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.MOD, Op.POW, Op.MAXIMUM, Op.MINIMUM, Op.EQ,
    Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_XOR,
    Op.BITWISE_AND, Op.BITWISE_OR, Op.BITWISE_XOR, Op.ATAN2, Op.LOGADDEXP, Op.HYPOT,
    Op.COPYSIGN, Op.NEXTAFTER, Op.BITWISE_LEFT_SHIFT, Op.BITWISE_RIGHT_SHIFT,
}  # fmt: skip
_REDUCE = {
    Op.SUM, Op.MEAN, Op.PROD, Op.MAX, Op.MIN, Op.ARGMAX, Op.ARGMIN, Op.VAR, Op.LOGSUMEXP,
    Op.CUMSUM, Op.ALL, Op.ANY,
}  # fmt: skip
_VARIADIC = {Op.EINSUM, Op.CONCAT, Op.GETITEM, Op.INDEX_ADD, Op.INDEX_PUT}


def _info(op: Op) -> OpInfo:
    if op in _UNARY:
        return OpInfo(1, "elementwise")
    if op in _BINARY:
        return OpInfo(2, "elementwise")
    if op is Op.WHERE:
        return OpInfo(3, "elementwise")
    if op in _REDUCE:
        return OpInfo(1, "reduction")
    if op in _VARIADIC:
        return OpInfo(None, "variadic")
    if op in (Op.MATMUL, Op.TENSORDOT, Op.CONV2D, Op.SOLVE):
        return OpInfo(2, "contraction")
    return OpInfo(1, "structural")


OP_INFO: dict[Op, OpInfo] = {op: _info(op) for op in Op}
"""Arity and kind of every op, in enum order."""
