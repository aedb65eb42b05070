"""The kernel case table: every P10 op called on NumPy inputs with the params the dispatcher passes.

A case is backend-neutral (NumPy arrays in, JSON-like params), so any registered backend (a
torch, array-api-strict or dask one) is swept against the NumPy spec backend by
``test_p10_backends.py`` just by being registered. Also here: the test-only "subset" backend,
whose arrays are not NumPy arrays, so nothing in P10 can treat them as such by accident.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import p10
from p10 import Op
from p10._indexing import IndexSlot
from p10._ops import SPEC_OF
from p10._opspec import OpSpec

_rng = np.random.default_rng(1234)


def f32(*shape: int) -> np.ndarray:
    """Standard normal float32 values."""
    return np.asarray(_rng.standard_normal(shape), dtype=np.float32)


def f64(*shape: int) -> np.ndarray:
    """Standard normal float64 values."""
    return np.asarray(_rng.standard_normal(shape))


def pos32(*shape: int) -> np.ndarray:
    """Float32 values in [0.5, 2)."""
    return np.asarray(_rng.uniform(0.5, 2.0, shape), dtype=np.float32)


def ints(*shape: int, low: int = -5, high: int = 6, dtype: str = "int64") -> np.ndarray:
    """Integers in [low, high)."""
    return np.asarray(_rng.integers(low, high, shape), dtype=dtype)


def bools(*shape: int) -> np.ndarray:
    """Random booleans."""
    return np.asarray(_rng.random(shape) < 0.5)


@dataclass(frozen=True)
class KernelCase:
    """One kernel call: ``op`` on ``inputs`` with ``params``, named ``name`` in test ids."""

    op: Any
    inputs: tuple[np.ndarray, ...]
    params: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    @property
    def id(self) -> str:
        return f"{self.op.value}-{self.name}" if self.name else self.op.value


def _case(op: Any, *inputs: np.ndarray, name: str = "", **params: Any) -> KernelCase:
    return KernelCase(op, tuple(inputs), params, name)


# Elementwise ops whose inputs need more care than the spec's domain; their cases are below.
_OWN_CASES = {Op.FLOORDIV, Op.MOD, Op.POW, Op.BITWISE_LEFT_SHIFT, Op.BITWISE_RIGHT_SHIFT}


def _in(domain: tuple[float, float], *shape: int) -> np.ndarray:
    """Float32 values drawn uniformly from ``domain``."""
    return np.asarray(_rng.uniform(*domain, shape), dtype=np.float32)


def _spec_cases(op: Op, spec: OpSpec) -> list[KernelCase]:
    """One case per dtype kind of an op-spec entry (p10._opspec); unary float cases unnamed."""
    binary = spec.arity == 2
    cases = []
    for kind in spec.kinds:
        if kind == "f":
            shapes = [(3, 4), (4,)] if binary else [(3, 4)]
            inputs = [_in(spec.domain, *s) for s in shapes]
            cases.append(_case(op, *inputs, name="broadcast" if binary else ""))
        elif kind == "i":
            inputs = [ints(3, 1), ints(1, 4)] if binary else [ints(5)]
            cases.append(_case(op, *inputs, name="int64"))
        elif kind == "b":
            inputs = [bools(3, 4), bools(4)] if binary else [bools(3, 4)]
            cases.append(_case(op, *inputs, name="bool" if spec.kinds[0] != "b" else ""))
    return cases


def _elementwise_cases() -> list[KernelCase]:
    cases = []
    for op, spec in SPEC_OF.items():
        if op not in _OWN_CASES:
            cases += _spec_cases(op, spec)
    cases += [_case(Op.EXP, f64(2, 3), name="float64"), _case(Op.RELU, f32(), name="0d")]
    cases += [_case(Op.TANH, f32(0, 3), name="empty")]
    cases += [
        _case(Op.GELU, f32(3, 4), approximate="none"),
        _case(Op.GELU, f32(3, 4), name="tanh", approximate="tanh"),
        _case(Op.CLIP, f32(3, 4), min=-0.5, max=0.5),
        _case(Op.CLIP, ints(6), name="min-only", min=0, max=None),
        _case(Op.CAST, f32(3, 4) * 4, name="to-int32", dtype=p10.int32),
        _case(Op.CAST, ints(5), name="to-float64", dtype=p10.float64),
        _case(Op.CAST, f32(5), name="to-bool", dtype=p10.bool),
        _case(Op.BITWISE_INVERT, ints(5, low=0, high=255, dtype="uint8"), name="uint8"),
    ]
    special = np.array([0.0, np.nan, np.inf, -np.inf, -1.5], dtype=np.float32)
    cases += [_case(op, special, name="special") for op in (Op.ISNAN, Op.ISINF, Op.ISFINITE)]
    cases += [_case(Op.ADD, f32(0, 4), f32(4), name="empty"), _case(Op.MUL, f32(), f32(3))]
    cases += [_case(Op.ADD, ints(4, dtype="int8"), ints(4, dtype="uint8"), name="int8-uint8")]
    nonzero = ints(3, 4, low=1, high=4) * np.where(bools(3, 4), 1, -1)
    cases += [_case(op, ints(3, 4, low=-9, high=9), nonzero) for op in (Op.FLOORDIV, Op.MOD)]
    cases += [_case(op, f32(3, 4), pos32(3, 4), name="float") for op in (Op.FLOORDIV, Op.MOD)]
    cases += [
        _case(Op.POW, pos32(3, 4), f32(3, 4)),
        _case(Op.POW, ints(4), ints(4, low=0, high=4), name="int"),
        _case(Op.EQ, ints(6, low=0, high=2), ints(6, low=0, high=2), name="int"),
    ]
    bitwise = (Op.BITWISE_AND, Op.BITWISE_OR, Op.BITWISE_XOR)
    cases += [_case(op, ints(3, 4, dtype="int32"), ints(4, dtype="int32")) for op in bitwise]
    cases += [_case(Op.WHERE, bools(3, 4), f32(3, 4), f32(4))]
    cases += [_case(Op.WHERE, bools(3, 1), ints(1, 4), ints(3, 4), name="int")]
    cases += [_case(Op.SIGNBIT, np.array([-0.0, 0.0, -1.5, np.nan], np.float32), name="special")]
    shifts = (Op.BITWISE_LEFT_SHIFT, Op.BITWISE_RIGHT_SHIFT)
    cases += [_case(op, ints(3, 4), ints(4, low=0, high=5)) for op in shifts]
    return cases


def _reduction_cases() -> list[KernelCase]:
    x = f32(2, 3, 4)
    cases = []
    plain = [Op.SUM, Op.MEAN, Op.PROD, Op.MAX, Op.MIN, Op.LOGSUMEXP]
    for op in plain + [Op.VAR]:
        cases += [
            _case(op, x, name="all", axis=None, keepdims=False),
            _case(op, x, name="axis1", axis=(1,), keepdims=False),
            _case(op, x, name="axes02-keep", axis=(0, 2), keepdims=True),
        ]
    cases += [_case(Op.VAR, x, name="correction", axis=(2,), keepdims=False, correction=1.0)]
    cases += [_case(op, ints(3, 4), name="int64", axis=(0,), keepdims=False) for op in plain[:5]]
    cases += [_case(Op.SUM, bools(3, 4), name="bool", axis=None, keepdims=False)]
    cases += [_case(Op.SUM, ints(3, 4, dtype="int8"), name="int8", axis=(1,), keepdims=False)]
    cases += [_case(Op.SUM, f32(0, 3), name="empty", axis=(0,), keepdims=False)]
    cases += [_case(Op.MAX, f32(), name="0d", axis=None, keepdims=False)]
    for op in (Op.ALL, Op.ANY):
        cases += [
            _case(op, bools(3, 4), name="all", axis=None, keepdims=False),
            _case(op, ints(3, 4, low=0, high=3), name="int-axis1", axis=(1,), keepdims=True),
        ]
    for op in (Op.ARGMAX, Op.ARGMIN):
        cases += [
            _case(op, x, name="all", axis=None, keepdims=False),
            _case(op, x, name="axis2-keep", axis=2, keepdims=True),
        ]
    cases += [_case(Op.CUMSUM, x, name="axis1", axis=1), _case(Op.CUMSUM, ints(5), axis=0)]
    return cases


def _linalg_cases() -> list[KernelCase]:
    return [
        _case(Op.MATMUL, f32(3, 4), f32(4, 5)),
        _case(Op.MATMUL, f32(2, 3, 4), f32(4, 5), name="batched"),
        _case(Op.MATMUL, f32(4), f32(4, 5), name="vector-matrix"),
        _case(Op.MATMUL, f32(4), f32(4), name="vector-vector"),
        _case(Op.MATMUL, ints(2, 3), ints(3, 2), name="int64"),
        _case(Op.MATMUL, f64(2, 1, 3, 4), f64(5, 4, 2), name="float64-broadcast"),
        _case(Op.TENSORDOT, f32(2, 3, 4), f32(4, 3, 5), axes=((1, 2), (1, 0))),
        _case(Op.EINSUM, f32(3, 4), f32(4, 5), subscripts="ij,jk->ik"),
        _case(Op.EINSUM, f32(2, 3), f32(3, 4), f32(4), name="three", subscripts="ij,jk,k->i"),
        _case(Op.EINSUM, f32(3, 3), name="trace", subscripts="ii->"),
    ]


def _shape_cases() -> list[KernelCase]:
    x = f32(2, 3, 4)
    return [
        _case(Op.RESHAPE, x, shape=(4, 6)),
        _case(Op.RESHAPE, f32(), name="0d-to-1", shape=(1, 1)),
        _case(Op.PERMUTE, x, axes=(2, 0, 1)),
        _case(Op.BROADCAST_TO, f32(3, 1), shape=(2, 3, 4)),
        _case(Op.CONCAT, f32(2, 1), f32(2, 3), f32(2, 2), axis=1),
        _case(Op.CONCAT, ints(2), ints(3), name="int", axis=0),
        _case(Op.FLIP, x, axis=(0, 2)),
        _case(Op.FLIP, x, name="all", axis=None),
        _case(Op.TILE, f32(2, 3), reps=(2, 1, 2)),
        _case(Op.REPEAT, f32(2, 3), repeats=2, axis=1),
        _case(Op.REPEAT, ints(2, 3), name="flat", repeats=3, axis=None),
        _case(Op.PAD, f32(2, 3), pad_width=((1, 0), (0, 2)), value=1.5),
        _case(Op.ROLL, x, shifts=(2,), axes=(1,)),
        _case(Op.TRIL, f32(3, 4), k=1),
        _case(Op.TRIU, x, k=0),
        _case(Op.TOPK, x, k=3, axis=2, largest=True),
        _case(Op.TOPK, ints(3, 4), name="int-smallest", k=2, axis=0, largest=False),
    ]


def _index_cases() -> list[KernelCase]:
    x = f32(4, 5)
    idx = np.array([3, 0, 3], dtype=np.int64)
    rows = np.array([[0], [2]], dtype=np.int64)
    return [
        _case(Op.GETITEM, x, name="basic", key=(slice(1, None, 2), -1)),
        _case(Op.GETITEM, x, name="none-ellipsis", key=(None, Ellipsis, slice(None, None, -1))),
        _case(Op.GETITEM, x, idx, name="gather", key=(IndexSlot(0),)),
        _case(Op.GETITEM, x, rows, idx[:2], name="two-arrays", key=(IndexSlot(0), IndexSlot(1))),
        _case(Op.GETITEM, x, idx, name="gather-axis1", key=(slice(None), IndexSlot(0))),
        _case(Op.INDEX_ADD, x, f32(3, 5), idx, name="repeated", key=(IndexSlot(0),)),
        _case(Op.INDEX_ADD, x, f32(4), name="column", key=(slice(None), 2)),
        _case(Op.INDEX_PUT, x, f32(2, 5), idx[:2], key=(IndexSlot(0),)),
        _case(Op.INDEX_PUT, x, np.array(7.0, dtype=np.float32), name="scalar", key=(1, 2)),
    ]


def _nn_cases() -> list[KernelCase]:
    img = f32(2, 4, 7, 6)
    window = {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}
    cols_shape = (2, 4 * 3 * 2, 4 * 4)
    pool = {"kernel_size": (2, 3), "stride": (2, 2), "padding": (1, 1)}
    return [
        _case(Op.SOFTMAX, f32(3, 5) * 30, axis=1),
        _case(Op.LOG_SOFTMAX, f32(3, 5) * 30, axis=0),
        _case(Op.CONV2D, img, f32(6, 4, 3, 3), stride=(1, 1), padding=(0, 0), dilation=(1, 1)),
        _case(
            Op.CONV2D,
            img,
            f32(6, 2, 3, 2),
            name="strided-grouped",
            stride=(2, 1),
            padding=(1, 2),
            dilation=(2, 1),
            groups=2,
        ),
        _case(Op.UNFOLD, img, **window),
        _case(Op.FOLD, f32(*cols_shape), output_size=(7, 6), **window),
        _case(Op.MAX_POOL2D, img, **pool),
        _case(Op.AVG_POOL2D, img, **pool),
    ]


KERNEL_CASES: list[KernelCase] = (
    _elementwise_cases()
    + _reduction_cases()
    + _linalg_cases()
    + _shape_cases()
    + _index_cases()
    + _nn_cases()
)


def assert_same_array(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Equal shape and dtype, and values equal (exactly for ints/bools, closely for floats)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if expected.dtype.kind == "f":
        tol = 1e-5 if expected.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


# -- the test-only backend --------------------------------------------------------------------
SUBSET_NAME = "subset-test"
SUBSET_OPS = (
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.NEG, Op.EXP, Op.TANH, Op.CAST, Op.COPY, Op.EQ, Op.GT,
    Op.WHERE, Op.SUM, Op.MAX, Op.MATMUL, Op.RESHAPE, Op.PERMUTE, Op.BROADCAST_TO, Op.GETITEM,
)  # fmt: skip


# one object per dtype, as libraries have (torch.float32, ...), but not NumPy's
_BOX_DTYPES = {np.dtype(n): f"box-{n}" for n in ("bool", "int8", "int16", "int32", "int64")}
_BOX_DTYPES |= {np.dtype(n): f"box-{n}" for n in ("uint8", "float32", "float64")}


class Box:
    """The subset backend's array: a NumPy array in a box that is not itself array-like."""

    __slots__ = ("value",)

    def __init__(self, value: np.ndarray) -> None:
        self.value = value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> str:
        return _BOX_DTYPES[self.value.dtype]  # not a P10 dtype: dtype_of maps it


def _unbox(x: Any) -> Any:
    return x.value if isinstance(x, Box) else x


def _boxed(kernel: Callable[..., Any]) -> Callable[..., Any]:
    def run(*boxes: Box, **params: Any) -> Box:
        return Box(np.asarray(kernel(*[b.value for b in boxes], **params)))

    return run


def _setitem(dst: Box, key: Any, value: Box) -> None:
    key = tuple(_unbox(k) for k in key) if isinstance(key, tuple) else _unbox(key)
    dst.value[key] = value.value


def make_subset_backend(name: str = SUBSET_NAME, ops: tuple = SUBSET_OPS) -> p10.Backend:
    """A backend holding only the kernels of ``ops`` (the NumPy spec's, run on boxed arrays)."""
    spec = p10.get_backend("numpy").kernels
    return p10.Backend(
        name=name,
        kernels={op: _boxed(spec[op]) for op in ops},
        array_type=Box,
        from_numpy=lambda a: Box(np.array(a)),
        to_numpy=lambda b: b.value,
        dtype_of=lambda b: b.value.dtype,
        setitem=_setitem,
        may_share_memory=lambda a, b: np.may_share_memory(a.value, b.value),
    )


def run_case(case: KernelCase, backend: Any) -> np.ndarray:
    """Run ``case`` on ``backend`` through the dispatcher; the result as a NumPy array."""
    tensors = tuple(p10.asarray(a, backend=backend) for a in case.inputs)
    return p10.execute(case.op, tensors, dict(case.params)).numpy()
