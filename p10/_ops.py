"""The closed set of P10 operators: one enum keys kernels, gradient rules, JSON names and labels.

Every op has exactly one output tensor. An op is called as ``kernel(*arrays, **params)``; its
params are plain, JSON-friendly values (ints, floats, strings, tuples, dtypes, ``None``).

The elementwise members come from the op-spec table (:mod:`p10._opspec`); the others are listed
here with their params. Members keep the order in which ops were added.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from p10._opspec import ALL_SPECS, LATER_SPECS, SPECS, OpSpec

# The non-elementwise ops, in enum order, with their params.
STRUCTURAL = (
    # reductions; params: axis (tuple of non-negative ints, or None), keepdims
    "sum", "mean", "prod", "max", "min",
    "argmax", "argmin",  # axis: int or None
    "var",  # params: correction
    "logsumexp",
    "cumsum",  # params: axis (int)
    "all", "any",
    # linear algebra
    "matmul",
    "tensordot",  # params: axes (tuple of two tuples)
    "einsum",  # variadic; params: subscripts
    # shape
    "reshape",  # params: shape
    "permute",  # params: axes
    "broadcast_to",  # params: shape
    "concat",  # variadic; params: axis
    "flip",  # params: axis (tuple or None)
    "tile",  # params: reps
    "repeat",  # params: repeats (int), axis (int or None)
    "pad",  # params: pad_width (tuple of pairs), value
    "roll",  # params: shifts, axes (tuples of equal length)
    "tril",  # lower triangle of the last two axes; params: k (diagonal offset)
    "triu",  # upper triangle of the last two axes; params: k
    "topk",  # indices (int64) of the k largest/smallest; params: k, axis, largest
    # indexing; params: key (normalized index, tensors replaced by IndexSlot markers)
    "getitem",  # inputs: x, *index_tensors
    "index_add",  # inputs: base, values, *index_tensors; base[key] += values
    "index_put",  # inputs: base, values, *index_tensors; base[key] = values
    # neural-network kernels
    "softmax",  # params: axis
    "log_softmax",  # params: axis
    "conv2d",  # inputs: x, weight; params: stride, padding, dilation, groups
    "unfold",  # im2col; params: kernel_size, stride, padding, dilation
    "fold",  # col2im (adjoint of unfold); params: output_size and those of unfold
    "max_pool2d",  # params: kernel_size, stride, padding
    "avg_pool2d",  # params: kernel_size, stride, padding
)  # fmt: skip
# Params of the hand-written elementwise ops: gelu: approximate ("none" | "tanh"); clip: min,
# max (Python scalars or None); cast: dtype. where's inputs: condition, x1, x2.

_NAMES = [s.name for s in SPECS] + list(STRUCTURAL) + [s.name for s in LATER_SPECS]


class _OpBase(enum.Enum):
    # NOTE: members are singletons compared by identity, so the identity hash is exact; it makes
    # every kernel-table lookup several times cheaper than Enum's Python-level name hash.
    __hash__ = object.__hash__


Op = _OpBase("Op", [(name.upper(), name) for name in _NAMES], module=__name__, qualname="Op")
Op.__doc__ = """A P10 operator. ``op.value`` is its stable, lower-case name (traces, labels).

    >>> Op.ADD.value
    'add'
    >>> Op("matmul") is Op.MATMUL
    True
    """

SPEC_OF: dict[Op, OpSpec] = {Op(s.name): s for s in ALL_SPECS}
"""The op-spec entry of every elementwise op."""


@dataclass(frozen=True)
class OpInfo:
    """Static facts about an op: how many tensor inputs it takes (``None``: variadic)."""

    arity: int | None
    kind: str


_REDUCE = {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "var", "logsumexp", "cumsum",
           "all", "any"}  # fmt: skip
_VARIADIC = {"einsum", "concat", "getitem", "index_add", "index_put"}
_CONTRACTION = {"matmul", "tensordot", "conv2d"}


def _info(op: Op) -> OpInfo:
    spec = SPEC_OF.get(op)
    if spec is not None:
        return OpInfo(spec.arity, "elementwise")
    if op.value in _REDUCE:
        return OpInfo(1, "reduction")
    if op.value in _VARIADIC:
        return OpInfo(None, "variadic")
    if op.value in _CONTRACTION:
        return OpInfo(2, "contraction")
    return OpInfo(1, "structural")


OP_INFO: dict[Op, OpInfo] = {op: _info(op) for op in Op}
"""Arity and kind of every op, in enum order."""
