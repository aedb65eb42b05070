"""The case table of the kernel-equivalence suite: every P10 op, with inputs and params.

Each case is run through a backend's kernel and through the NumPy spec kernel; the results must
agree in shape, dtype and value. Inputs come from a generator seeded by the case id.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from p10 import IndexSlot, Op
from p10._ops import SPEC_OF
from p10._opspec import OpSpec

Maker = Callable[[np.random.Generator], np.ndarray]
S0, S1 = IndexSlot(0), IndexSlot(1)
ALL = slice(None)


@dataclass(frozen=True)
class KCase:
    """One kernel call: ``op(*inputs, **params)``."""

    op: Op
    name: str
    makers: tuple[Maker, ...]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.op.value}-{self.name}"

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(self.id.encode()))
        return [m(rng) for m in self.makers]


def f(shape: tuple[int, ...], lo: float = -2.0, hi: float = 2.0, dtype: Any = np.float32) -> Maker:
    return lambda rng: rng.uniform(lo, hi, shape).astype(dtype)


def i(shape: tuple[int, ...], lo: int = -5, hi: int = 6, dtype: Any = np.int64) -> Maker:
    return lambda rng: rng.integers(lo, hi, shape).astype(dtype)


def b(shape: tuple[int, ...]) -> Maker:
    return lambda rng: rng.random(shape) < 0.5


def const(value: Any, dtype: Any = None) -> Maker:
    return lambda rng: np.array(value, dtype=dtype)


SPECIAL = const([-np.inf, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, np.nan, np.inf], np.float32)
F34, F64 = f((3, 4)), f((3, 4), dtype=np.float64)

REDUCE = [Op.SUM, Op.MEAN, Op.PROD, Op.MAX, Op.MIN, Op.LOGSUMEXP]

CASES: list[KCase] = []


def add(op: Op, name: str, *makers: Maker, **params: Any) -> None:
    CASES.append(KCase(op, name, makers, params))


# -- elementwise: the op-spec table's entries, one case per dtype kind (p10._opspec) --------------
# Ops whose inputs need more care than the spec's domain (nonzero divisors, shift counts) have
# their cases written out below instead.
OWN_CASES = {Op.FLOORDIV, Op.MOD, Op.POW, Op.BITWISE_LEFT_SHIFT, Op.BITWISE_RIGHT_SHIFT}


def _spec_cases(op: Op, spec: OpSpec) -> None:
    lo, hi = spec.domain
    two = spec.arity == 2
    for kind in spec.kinds:
        if kind == "f":
            add(op, "f32", *[f((3, 4), lo, hi)] * spec.arity)
            shapes = [(3, 1), (4,)] if two else [(3, 4)]
            add(op, "bcast" if two else "f64", *[f(s, lo, hi, np.float64) for s in shapes])
        elif kind == "i":
            add(op, "int", *[i(s) for s in [(3, 4), (4,)][: spec.arity]])
        elif kind == "b":
            add(op, "bool", *[b(s) for s in [(3, 4), (4,)][: spec.arity]])


for _op, _spec in SPEC_OF.items():
    if _op not in OWN_CASES:
        _spec_cases(_op, _spec)

for op in (Op.ROUND, Op.ISNAN, Op.ISINF, Op.ISFINITE, Op.RELU, Op.SIGN, Op.FLOOR, Op.ABS):
    add(op, "special", SPECIAL)
add(Op.SIGMOID, "large", const([-100.0, -30.0, 0.0, 30.0, 100.0], np.float32))
add(Op.GELU, "exact", F34, approximate="none")
add(Op.GELU, "tanh", F64, approximate="tanh")
add(Op.LOGICAL_NOT, "int", i((5,)))
add(Op.CLIP, "both", F34, min=-1.0, max=0.5)
add(Op.CLIP, "min", F34, min=0.0, max=None)
add(Op.CLIP, "none", F34, min=None, max=None)
add(Op.CAST, "f2i", F34, dtype=np.dtype("int32"))
add(Op.CAST, "i2f", i((4,)), dtype=np.dtype("float64"))
add(Op.CAST, "b2f", b((4,)), dtype=np.dtype("float32"))

for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAXIMUM, Op.MINIMUM, Op.EQ, Op.NE, Op.LT, Op.LE,
           Op.GT, Op.GE):  # fmt: skip
    add(op, "mixed", i((3, 4)), f((3, 4)))
add(Op.ADD, "scalar0d", F34, f(()))
add(Op.MUL, "i32i64", i((4,), dtype=np.int32), i((4,)))
for op in (Op.FLOORDIV, Op.MOD):
    add(op, "f32", F34, f((3, 4), 0.5, 2.0))
    add(op, "int", i((6,)), const([1, -2, 3, -4, 5, 7]))
add(Op.POW, "f32", f((3, 4), 0.1, 2.0), f((3, 4)))
add(Op.POW, "int", i((4,), 0, 5), const([0, 1, 2, 3]))
add(Op.POW, "mixed", f((4,), 0.5, 2.0), const([0, 1, 2, 3]))
add(Op.WHERE, "f32", b((3, 4)), F34, f((4,)))
add(Op.WHERE, "mixed", b((3, 4)), i((3, 4)), f((4,), dtype=np.float64))
add(Op.MAXIMUM, "nan", SPECIAL, f((9,)))
for op in (Op.TRUNC, Op.SIGNBIT):
    add(op, "special", SPECIAL)
add(Op.TRUNC, "int", i((3, 4)))
for op in (Op.BITWISE_LEFT_SHIFT, Op.BITWISE_RIGHT_SHIFT):
    add(op, "int", i((3, 4), -50, 50), i((4,), 0, 5))
    add(op, "int32", i((5,), 0, 1000, np.int32), i((5,), 0, 8, np.int32))

X3 = f((2, 3, 4))
for op in REDUCE:
    add(op, "all", X3, axis=None, keepdims=False)
    add(op, "ax0", X3, axis=(0,), keepdims=False)
    add(op, "ax02keep", f((2, 3, 4), dtype=np.float64), axis=(0, 2), keepdims=True)
    add(op, "allkeep", X3, axis=None, keepdims=True)
add(Op.SUM, "int32", i((3, 4), dtype=np.int32), axis=(1,), keepdims=False)
add(Op.SUM, "bool", b((3, 4)), axis=None, keepdims=False)
add(Op.SUM, "empty_axes", F34, axis=(), keepdims=False)
add(Op.PROD, "int", i((3, 4), 1, 4), axis=(0,), keepdims=False)
add(Op.MAX, "int", i((3, 4)), axis=(1,), keepdims=False)
add(Op.MAX, "bool", b((3, 4)), axis=(1,), keepdims=False)
add(Op.LOGSUMEXP, "neginf", const([[-np.inf, -np.inf], [0.0, -np.inf]], np.float32), axis=(1,))
for op in (Op.ARGMAX, Op.ARGMIN):
    add(op, "none", X3, axis=None, keepdims=False)
    add(op, "ax1", X3, axis=1, keepdims=False)
    add(op, "ax2keep", X3, axis=2, keepdims=True)
    add(op, "ties", const([[1, 3, 3], [2, 2, 0]]), axis=1, keepdims=False)
add(Op.VAR, "c0", X3, axis=(1,), keepdims=False, correction=0.0)
add(Op.VAR, "c1", f((2, 3, 4), dtype=np.float64), axis=None, keepdims=True, correction=1.0)
add(Op.CUMSUM, "f32", X3, axis=1)
add(Op.CUMSUM, "int32", i((3, 4), dtype=np.int32), axis=0)
for op in (Op.ALL, Op.ANY):
    add(op, "bool", b((3, 4)), axis=(1,), keepdims=False)
    add(op, "float", const([[0.0, 1.0], [2.0, 3.0]]), axis=None, keepdims=True)

add(Op.MATMUL, "2d", f((3, 4)), f((4, 5)))
add(Op.MATMUL, "batched", f((2, 3, 4), dtype=np.float64), f((4, 2), dtype=np.float64))
add(Op.MATMUL, "vec", f((4,)), f((4, 3)))
add(Op.MATMUL, "int", i((2, 3)), i((3, 2)))
add(Op.TENSORDOT, "2axes", f((2, 3, 4)), f((4, 3, 5)), axes=((1, 2), (1, 0)))
add(Op.EINSUM, "mm", f((3, 4)), f((4, 2)), subscripts="ij,jk->ik")
add(Op.EINSUM, "bmm", f((2, 3, 4)), f((2, 4, 5)), subscripts="bij,bjk->bik")
add(Op.EINSUM, "trace3", f((3, 3)), f((3,)), f((3,)), subscripts="ij,i,j->")
add(Op.RESHAPE, "infer", X3, shape=(4, -1))
add(Op.PERMUTE, "cycle", X3, axes=(2, 0, 1))
add(Op.BROADCAST_TO, "lead", f((3, 1)), shape=(2, 3, 4))
add(Op.CONCAT, "ax1", f((2, 3)), f((2, 1)), axis=1)
add(Op.CONCAT, "mixed", i((2, 3)), f((1, 3)), axis=0)
add(Op.FLIP, "ax", X3, axis=(0, 2))
add(Op.FLIP, "none", X3, axis=None)
add(Op.TILE, "2d", f((2, 3)), reps=(2, 1))
add(Op.TILE, "grow", f((3,)), reps=(2, 2))
add(Op.REPEAT, "ax1", f((2, 3)), repeats=2, axis=1)
add(Op.REPEAT, "flat", f((2, 3)), repeats=3, axis=None)
add(Op.PAD, "2d", f((2, 3)), pad_width=((1, 0), (2, 1)), value=0.5)
add(Op.ROLL, "2ax", X3, shifts=(1, -2), axes=(0, 2))
add(Op.TRIL, "k0", f((2, 3, 4)), k=0)
add(Op.TRIU, "k-1", f((3, 4)), k=-1)
add(Op.TOPK, "largest", X3, k=2, axis=2, largest=True)
add(Op.TOPK, "smallest-ties", const([[1, 3, 3], [2, 2, 0]]), k=2, axis=1, largest=False)

IDX = const([2, 0, 2])
add(Op.GETITEM, "basic", X3, key=(1, slice(0, 3, 2), None, Ellipsis))
add(Op.GETITEM, "negstep", X3, key=(ALL, slice(None, None, -1)))
add(Op.GETITEM, "take", X3, IDX, key=(ALL, S0))
add(Op.GETITEM, "pairs", F34, const([0, 2, 1]), const([3, 3, 0]), key=(S0, S1))
add(Op.GETITEM, "split", X3, const([1, 0]), const([3, 1]), key=(S0, ALL, S1))
add(Op.GETITEM, "int+arr", X3, IDX, key=(0, ALL, S0))
add(Op.GETITEM, "2d", F34, const([[0, 1], [2, 2]]), key=(S0,))
add(Op.INDEX_ADD, "dup", F34, f((3, 4)), IDX, key=(S0,))
add(Op.INDEX_ADD, "cols", F34, f((3,)), const([3, 0, 3]), key=(ALL, S0))
add(Op.INDEX_ADD, "pairs", F34, f((3,)), const([0, 0, 1]), const([1, 1, 2]), key=(S0, S1))
add(Op.INDEX_ADD, "basic", F34, f((2,)), key=(1, slice(1, 3)))
add(Op.INDEX_ADD, "many", f((3,)), f((40,)), const([0] * 30 + [1] * 10), key=(S0,))
add(Op.INDEX_PUT, "basic", F34, f(()), key=(ALL, 2))
add(Op.INDEX_PUT, "pairs", F34, f((3,)), const([0, 2, 1]), const([3, 1, 0]), key=(S0, S1))
add(Op.INDEX_PUT, "rows", F34, f((4,)), const([2, 0]), key=(S0,))
add(Op.SOFTMAX, "last", X3, axis=2)
add(Op.SOFTMAX, "first", f((2, 3, 4), dtype=np.float64), axis=0)
add(Op.LOG_SOFTMAX, "mid", X3, axis=1)

IMG, W = f((2, 4, 7, 6)), f((6, 2, 3, 3))
add(Op.CONV2D, "plain", f((2, 3, 6, 5)), f((4, 3, 3, 3)))
add(Op.CONV2D, "all", IMG, W, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
add(Op.CONV2D, "f64", f((1, 2, 5, 5), dtype=np.float64), f((3, 2, 2, 2), dtype=np.float64))
UNF = {"kernel_size": (2, 3), "stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}
add(Op.UNFOLD, "plain", f((2, 3, 5, 4)), kernel_size=(2, 2))
add(Op.UNFOLD, "all", IMG, **UNF)
add(Op.FOLD, "plain", f((2, 12, 12)), output_size=(5, 4), kernel_size=(2, 2))
add(Op.FOLD, "all", f((2, 24, 8)), output_size=(7, 6), **UNF)
add(Op.MAX_POOL2D, "2x2", IMG, kernel_size=(2, 2), stride=(2, 2))
add(Op.MAX_POOL2D, "pad", IMG, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1))
add(Op.MAX_POOL2D, "bigpad", IMG, kernel_size=(2, 2), stride=(1, 1), padding=(2, 0))
add(Op.AVG_POOL2D, "2x2", IMG, kernel_size=(2, 2), stride=(2, 2))
add(Op.AVG_POOL2D, "pad", f((1, 2, 5, 5), dtype=np.float64), kernel_size=(3, 3), stride=(2, 2),
    padding=(1, 1))  # fmt: skip

COVERED = {c.op for c in CASES}
