"""The case table of the rule sweep: for every op of ``tpx.rules.RULES``, functions and inputs.

Each :class:`Case` names the op it exercises, a function of tpx tensors that records that op,
and a maker of float64 inputs (from a generator seeded by the case id) chosen away from kinks:
relu and abs away from 0, floor and mod away from jumps, max/min without near-ties. Conventions
at kinks are tested separately, with exact expected values.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import p10
from p10 import Op
from p10._ops import SPEC_OF
from p10._opspec import OpSpec
from tpx.rules import RULES

Maker = Callable[[np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class Case:
    """One check of one rule: ``fn(*inputs)`` records ``op``; inputs come from ``make``."""

    op: Op
    name: str
    fn: Callable[..., Any]
    makers: tuple[Maker, ...]
    mode: str = "full"
    gradgrad: bool = True

    @property
    def id(self) -> str:
        """``'op-name'``, the pytest id."""
        return f"{self.op.value}-{self.name}"

    def inputs(self) -> list[np.ndarray]:
        """The inputs, from a generator seeded by the case id (stable across runs)."""
        rng = np.random.default_rng(zlib.crc32(self.id.encode()))
        return [m(rng) for m in self.makers]


# -- input makers ---------------------------------------------------------------------------------
def u(shape: tuple[int, ...], lo: float = -2.0, hi: float = 2.0) -> Maker:
    """Uniform values in ``[lo, hi)``."""
    return lambda rng: rng.uniform(lo, hi, shape)


def pos(shape: tuple[int, ...], lo: float = 0.5, hi: float = 2.0) -> Maker:
    """Positive values (for log, sqrt, the base of pow...)."""
    return u(shape, lo, hi)


def away(shape: tuple[int, ...], points: tuple[float, ...] = (0.0,), margin: float = 0.2,
         lo: float = -2.0, hi: float = 2.0) -> Maker:  # fmt: skip
    """Uniform values at least ``margin`` away from every kink in ``points``."""

    def make(rng: np.random.Generator) -> np.ndarray:
        x = rng.uniform(lo, hi, shape)
        for _ in range(1000):
            near = np.zeros(x.shape, bool)
            for p in points:
                near |= np.abs(x - p) < margin
            if not near.any():
                return x
            x = np.where(near, rng.uniform(lo, hi, x.shape), x)
        raise AssertionError("away(): no values away from the kinks")

    return make


def between_ints(shape: tuple[int, ...]) -> Maker:
    """Values whose fractional part is in [0.1, 0.4] or [0.6, 0.9] (floor, ceil, round)."""

    def make(rng: np.random.Generator) -> np.ndarray:
        frac = rng.uniform(0.1, 0.4, shape) + 0.5 * rng.integers(0, 2, shape)
        return rng.integers(-3, 3, shape) + frac

    return make


def spaced(shape: tuple[int, ...], gap: float = 0.3) -> Maker:
    """Distinct values, at least ``gap / 2`` apart (max, min, max pooling without ties)."""

    def make(rng: np.random.Generator) -> np.ndarray:
        n = int(np.prod(shape))
        vals = (np.arange(n) - n / 2) * gap + rng.uniform(0, gap / 2, n)
        return rng.permutation(vals).reshape(shape)

    return make


def grid(shape: tuple[int, ...], offset: float) -> Maker:
    """Values on a half-integer grid shifted by ``offset`` (plus jitter below 0.05): two grids
    with offsets 0 and 0.25 never come closer than 0.15, whatever the broadcasting."""
    return lambda rng: rng.integers(-4, 5, shape) * 0.5 + offset + rng.uniform(-0.05, 0.05, shape)


def const(value: Any) -> Maker:
    """A fixed array."""
    return lambda rng: np.array(value, dtype=np.float64)


def with_zeros(shape: tuple[int, ...], flat_positions: tuple[int, ...]) -> Maker:
    """Values away from 0 except exact zeros at ``flat_positions`` (prod with zeros)."""
    base = away(shape, (0.0,), 0.3, -1.8, 1.8)

    def make(rng: np.random.Generator) -> np.ndarray:
        x = base(rng).reshape(-1)
        x[list(flat_positions)] = 0.0
        return x.reshape(shape)

    return make


def _ints(values: list) -> Any:
    return p10.asarray(np.array(values, dtype=np.int64))


def _mask(values: list) -> Any:
    return p10.asarray(np.array(values, dtype=bool))


# -- the table ------------------------------------------------------------------------------------
CASES: list[Case] = []


def case(op: Op, name: str, fn: Callable[..., Any], *makers: Maker, **kw: Any) -> None:
    """Add one case to :data:`CASES`."""
    CASES.append(Case(op, name, fn, tuple(makers), **kw))


SHAPES = [(), (5,), (2, 3, 4)]

# -- elementwise: every differentiable op-spec entry (p10._opspec), inputs from its domain ---------
# Test overrides: inputs away from kinks and jumps, or (None) cases written out below.
UNARY_MAKERS: dict[Op, Callable[[tuple[int, ...]], Maker]] = {
    Op.ABS: away,
    Op.RECIPROCAL: lambda s: away(s, (0.0,), 0.5),
    Op.RELU: away,
    Op.SIGN: away,
    Op.FLOOR: between_ints,
    Op.CEIL: between_ints,
    Op.ROUND: between_ints,
    Op.TRUNC: between_ints,
}
BINARY_MAKERS: dict[Op, Callable[[tuple, tuple], tuple[Maker, Maker]] | None] = {
    Op.DIV: lambda s0, s1: (u(s0), away(s1, (0.0,), 0.5)),
    Op.POW: lambda s0, s1: (pos(s0), u(s1)),
    Op.MAXIMUM: lambda s0, s1: (grid(s0, 0.0), grid(s1, 0.25)),
    Op.MINIMUM: lambda s0, s1: (grid(s0, 0.0), grid(s1, 0.25)),
    Op.ATAN2: lambda s0, s1: (u(s0), away(s1, (0.0,), 0.5)),
    Op.HYPOT: lambda s0, s1: (away(s0, (0.0,), 0.3), u(s1)),
    Op.COPYSIGN: lambda s0, s1: (away(s0), away(s1)),
    Op.MOD: None,
    Op.FLOORDIV: None,
}
BIN_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((2, 1, 4), (3, 1)), ((), (2, 3)), ((2, 3), ())]


def _bshape(a: tuple, b: tuple) -> str:
    return "x".join(map(str, a)) + "_" + "x".join(map(str, b))


def _spec_cases(op: Op, spec: OpSpec) -> None:
    fn = getattr(p10, spec.function_name)
    lo, hi = spec.domain
    if spec.arity == 1:
        make = UNARY_MAKERS.get(op, lambda s: u(s, lo, hi))
        for shape in SHAPES:
            case(op, f"{len(shape)}d", fn, make(shape))
        return
    pair = BINARY_MAKERS.get(op, lambda s0, s1: (u(s0, lo, hi), u(s1, lo, hi)))
    if pair is not None:
        for s0, s1 in BIN_SHAPES:
            case(op, _bshape(s0, s1), fn, *pair(s0, s1))


for _op, _spec in SPEC_OF.items():
    if _op in RULES and _spec.function_name is not None:
        _spec_cases(_op, _spec)
for _shape in SHAPES:
    case(Op.COPY, f"{len(_shape)}d", p10.positive, u(_shape))
    case(Op.CAST, f"{len(_shape)}d", lambda x: p10.astype(x, p10.float64, copy=True), u(_shape))

for _approx in ("none", "tanh"):
    for _shape in SHAPES:
        case(Op.GELU, f"{_approx}-{len(_shape)}d", lambda x, a=_approx: p10.gelu(x, a), u(_shape))

_CLIP_PTS = (-0.5, 0.7)
case(Op.CLIP, "min", lambda x: p10.clip(x, min=-0.5), away((2, 3), _CLIP_PTS))
case(Op.CLIP, "max", lambda x: p10.clip(x, max=0.7), away((5,), _CLIP_PTS))
case(Op.CLIP, "both", lambda x: p10.clip(x, -0.5, 0.7), away((2, 3, 2), _CLIP_PTS))
case(Op.CLIP, "0d", lambda x: p10.clip(x, -0.5, 0.7), away((), _CLIP_PTS))

case(Op.ADD, "scalar", lambda x: x + 1.5, u((2, 3)))
case(Op.SUB, "rscalar", lambda x: 1.5 - x, u((2, 3)))
case(Op.MUL, "scalar", lambda x: x * 2.5, u((2, 3)))
case(Op.MUL, "same", lambda x: x * x, u((4,)))
case(Op.DIV, "rscalar", lambda x: 2.0 / x, away((4,), (0.0,), 0.5))
case(Op.POW, "int-exponent-neg-base", lambda x: x**3, away((2, 3)))
case(Op.POW, "square-neg-base", lambda x: x**2, away((4,)))
case(Op.POW, "scalar-base", lambda y: p10.pow(2.0, y), u((2, 3)))
case(Op.MAXIMUM, "clip-tensor-bounds", lambda x, lo: p10.clip(x, min=lo), grid((2, 3), 0.0),
     grid((3,), 0.25))  # fmt: skip


def _mod_pair(s0: tuple, s1: tuple) -> tuple[Maker, Maker]:
    """Makers of ``x`` and ``y`` for mod/floordiv: y away from 0, x / y away from integers."""

    def both() -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(zlib.crc32(repr((s0, s1)).encode()))
        y = away(s1, (0.0,), 0.6)(rng)
        ratio = rng.integers(-3, 3, s0) + rng.uniform(0.2, 0.8, s0)
        # NOTE: y is the same for every x element here (equal shapes or a 0-d y).
        return np.broadcast_to(y, s0) * ratio, y

    return (lambda rng: both()[0]), (lambda rng: both()[1])


for _s0, _s1 in [((3,), (3,)), ((2, 3), (2, 3)), ((4,), ())]:
    case(Op.MOD, _bshape(_s0, _s1), p10.remainder, *_mod_pair(_s0, _s1))
    case(Op.FLOORDIV, _bshape(_s0, _s1), p10.floor_divide, *_mod_pair(_s0, _s1))

_COND = [[True, False, True], [False, False, True]]
case(Op.WHERE, "broadcast", lambda x, y: p10.where(_mask(_COND), x, y), u((3,)), u(()))
case(Op.WHERE, "same", lambda x, y: p10.where(_mask([True, False, False]), x, y), u((3,)),
     u((3,)))  # fmt: skip
case(Op.WHERE, "outer", lambda x, y: p10.where(_mask([[True], [False]]), x, y), u((1, 3)),
     u((2, 3)))  # fmt: skip
case(Op.WHERE, "scalar-other", lambda x: p10.where(_mask(_COND), x, 0.0), u((2, 3)))

# -- reductions -----------------------------------------------------------------------------------
REDUCTIONS = [
    ((), None, False),
    ((5,), None, False),
    ((2, 3, 4), None, True),
    ((2, 3, 4), 1, False),
    ((2, 3, 4), -1, True),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), (-1, 0), True),
]


def _rid(shape: tuple, axis: Any, keepdims: bool) -> str:
    return f"{len(shape)}d-axis{axis}-{'keep' if keepdims else 'drop'}".replace(" ", "")


for _shape, _axis, _keep in REDUCTIONS:
    _id = _rid(_shape, _axis, _keep)
    _kw = {"axis": _axis, "keepdims": _keep}
    case(Op.SUM, _id, lambda x, kw=_kw: p10.sum(x, **kw), u(_shape))
    case(Op.MEAN, _id, lambda x, kw=_kw: p10.mean(x, **kw), u(_shape))
    case(Op.PROD, _id, lambda x, kw=_kw: p10.prod(x, **kw), away(_shape, (0.0,), 0.3))
    case(Op.MAX, _id, lambda x, kw=_kw: p10.max(x, **kw), spaced(_shape))
    case(Op.MIN, _id, lambda x, kw=_kw: p10.min(x, **kw), spaced(_shape))
    case(Op.LOGSUMEXP, _id, lambda x, kw=_kw: p10.logsumexp(x, **kw), u(_shape))
    case(Op.VAR, _id, lambda x, kw=_kw: p10.var(x, **kw), u(_shape))
    if _shape:
        case(Op.VAR, _id + "-corr1", lambda x, kw=_kw: p10.var(x, correction=1, **kw), u(_shape))
case(Op.PROD, "one-zero-row", lambda x: p10.prod(x, axis=1), with_zeros((3, 4), (1,)))
case(Op.PROD, "two-zeros-row", lambda x: p10.prod(x, axis=-1), with_zeros((3, 4), (0, 2, 5)))
case(Op.PROD, "zeros-all", lambda x: p10.prod(x), with_zeros((2, 3), (4,)))
case(Op.PROD, "zeros-keep", lambda x: p10.prod(x, axis=0, keepdims=True),
     with_zeros((3, 2), (0, 2)))  # fmt: skip
case(Op.CUMSUM, "1d", lambda x: p10.cumsum(x, axis=0), u((5,)))
case(Op.CUMSUM, "axis-1", lambda x: p10.cumsum(x, axis=-1), u((2, 3, 4)))
case(Op.CUMSUM, "axis0", lambda x: p10.cumsum(x, axis=0), u((3, 2)))
case(Op.CUMSUM, "flat", lambda x: p10.cumsum(x), u((2, 3)))

# -- linear algebra -------------------------------------------------------------------------------
for _s0, _s1 in [
    ((3, 4), (4, 2)),
    ((4,), (4, 2)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 2)),
    ((2, 1, 3, 4), (3, 4, 2)),
    ((3,), (2, 3, 4)),
    ((2, 3, 4), (4,)),
]:
    case(Op.MATMUL, _bshape(_s0, _s1), p10.matmul, u(_s0), u(_s1))
case(Op.MATMUL, "same-operand", lambda x: x @ p10.matrix_transpose(x), u((3, 2)))

for _name, _s0, _s1, _axes in [
    ("axes1", (2, 3), (3, 4), 1),
    ("axes2", (2, 3, 4), (3, 4, 2), 2),
    ("axes0", (2,), (3,), 0),
    ("pairs", (3, 2), (4, 3), ((0,), (1,))),
    ("two-pairs", (2, 3, 4), (3, 5, 2), ((1, 0), (0, 2))),
]:
    case(Op.TENSORDOT, _name, lambda a, b, ax=_axes: p10.tensordot(a, b, axes=ax), u(_s0), u(_s1))

for _spec, _shapes in [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(4,), (4,)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ijk,ik->j", [(2, 3, 2), (2, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("ii->", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij,j->i", [(2, 2, 3), (3,)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
    ("...i,i->...", [(2, 3), (3,)]),
    ("i...->...", [(3, 2, 2)]),
]:
    case(Op.EINSUM, _spec.replace(",", "_").replace("->", "_to_").replace("...", "E"),
         lambda *xs, s=_spec: p10.einsum(s, *xs), *[u(s) for s in _shapes])  # fmt: skip

# -- shape ----------------------------------------------------------------------------------------
case(Op.RESHAPE, "3d-2d", lambda x: p10.reshape(x, (4, 6)), u((2, 3, 4)))
case(Op.RESHAPE, "infer", lambda x: p10.reshape(x, (2, -1)), u((6,)))
case(Op.RESHAPE, "0d", lambda x: p10.reshape(x, (1, 1)), u(()))
case(Op.PERMUTE, "3d", lambda x: p10.permute_dims(x, (2, 0, 1)), u((2, 3, 4)))
case(Op.PERMUTE, "transpose", lambda x: p10.matrix_transpose(x), u((2, 3)))
case(Op.PERMUTE, "swapaxes", lambda x: p10.swapaxes(x, 0, -1), u((2, 3, 4)))
for _s0, _s1 in [((3,), (2, 3)), ((2, 1), (2, 4)), ((), (3,)), ((1, 3), (2, 2, 3))]:
    case(Op.BROADCAST_TO, _bshape(_s0, _s1), lambda x, s=_s1: p10.broadcast_to(x, s), u(_s0))
case(Op.CONCAT, "axis0", lambda a, b: p10.concat([a, b], axis=0), u((2, 3)), u((1, 3)))
case(Op.CONCAT, "axis-1-three", lambda a, b, c: p10.concat([a, b, c], axis=-1), u((2, 1)),
     u((2, 3)), u((2, 2)))  # fmt: skip
case(Op.CONCAT, "flat", lambda a, b: p10.concat([a, b], axis=None), u((2, 2)), u((3,)))
case(Op.CONCAT, "stack", lambda a, b: p10.stack([a, b], axis=1), u((2, 3)), u((2, 3)))
case(Op.FLIP, "all", lambda x: p10.flip(x), u((2, 3)))
case(Op.FLIP, "axis0", lambda x: p10.flip(x, axis=0), u((3, 2)))
case(Op.FLIP, "axes", lambda x: p10.flip(x, axis=(-1, 0)), u((2, 3, 4)))
case(Op.TILE, "1d", lambda x: p10.tile(x, (2,)), u((3,)))
case(Op.TILE, "more-reps", lambda x: p10.tile(x, (2, 1, 2)), u((2, 3)))
case(Op.TILE, "fewer-reps", lambda x: p10.tile(x, (3,)), u((2, 3)))
case(Op.REPEAT, "flat", lambda x: p10.repeat(x, 2), u((2, 3)))
case(Op.REPEAT, "axis1", lambda x: p10.repeat(x, 3, axis=1), u((2, 3)))
case(Op.REPEAT, "axis-2", lambda x: p10.repeat(x, 2, axis=-2), u((2, 3)))
case(Op.PAD, "1d", lambda x: p10.pad(x, 1), u((3,)))
case(Op.PAD, "2d-value", lambda x: p10.pad(x, ((1, 0), (2, 1)), value=1.5), u((2, 3)))
case(Op.PAD, "2d-one-side", lambda x: p10.pad(x, ((0, 0), (0, 2))), u((2, 3)))
case(Op.ROLL, "1d", lambda x: p10.apply(Op.ROLL, x, shifts=(2,), axes=(0,)), u((5,)))
case(Op.ROLL, "2ax", lambda x: p10.apply(Op.ROLL, x, shifts=(1, -1), axes=(0, 2)), u((2, 3, 4)))
case(Op.TRIL, "k0", lambda x: p10.apply(Op.TRIL, x, k=0), u((3, 3)))
case(Op.TRIL, "batched-k1", lambda x: p10.apply(Op.TRIL, x, k=1), u((2, 3, 4)))
case(Op.TRIU, "k0", lambda x: p10.apply(Op.TRIU, x, k=0), u((3, 4)))
case(Op.TRIU, "k-1", lambda x: p10.apply(Op.TRIU, x, k=-1), u((4, 3)))

# -- indexing -------------------------------------------------------------------------------------
_GETITEM: list[tuple[str, Callable[[Any], Any]]] = [
    ("int", lambda x: x[1]),
    ("neg-int", lambda x: x[-1, :]),
    ("slice", lambda x: x[1:3]),
    ("neg-step", lambda x: x[::-2]),
    ("int-slice", lambda x: x[1, ::2]),
    ("ellipsis-none", lambda x: x[..., None, 1:3]),
    ("int-array-repeats", lambda x: x[_ints([0, 2, 0])]),
    ("column-array", lambda x: x[:, _ints([4, 1, 1])]),
    ("two-arrays", lambda x: x[_ints([[0], [3]]), _ints([[1, 1, 4]])]),
    ("mask-2d", lambda x: x[_mask(np.arange(20).reshape(4, 5) % 3 == 0)]),
    ("mask-rows", lambda x: x[_mask([True, False, True, True])]),
]
for _name, _fn in _GETITEM:
    case(Op.GETITEM, _name, _fn, u((4, 5)))

case(Op.INDEX_ADD, "repeats", lambda x, v: p10.index_add(x, _ints([0, 2, 0]), v), u((4, 3)),
     u((3, 3)))  # fmt: skip
case(Op.INDEX_ADD, "broadcast-values", lambda x, v: p10.index_add(x, _ints([1, 1]), v),
     u((3, 2)), u((2,)))  # fmt: skip
case(Op.INDEX_ADD, "slice", lambda x, v: p10.index_add(x, slice(1, 3), v), u((4, 2)), u((2, 2)))
case(Op.INDEX_ADD, "mask", lambda x, v: p10.index_add(x, _mask([[True, False], [True, True]]), v),
     u((2, 2)), u((3,)))  # fmt: skip
case(Op.INDEX_PUT, "slice", lambda x, v: p10.index_put(x, slice(1, 3), v), u((4, 2)), u((2, 2)))
case(Op.INDEX_PUT, "int-array", lambda x, v: p10.index_put(x, _ints([3, 0]), v), u((4, 2)),
     u((2, 2)))  # fmt: skip
case(Op.INDEX_PUT, "broadcast-scalar", lambda x, v: p10.index_put(x, (slice(None), 1), v),
     u((3, 2)), u(()))  # fmt: skip
case(Op.INDEX_PUT, "repeats", lambda x, v: p10.index_put(x, _ints([1, 1, 2]), v), u((4, 2)),
     u((3, 2)))  # fmt: skip
case(Op.INDEX_PUT, "repeats-broadcast", lambda x, v: p10.index_put(x, _ints([1, 1]), v),
     u((3, 2)), u((2,)))  # fmt: skip
case(Op.INDEX_PUT, "mask", lambda x, v: p10.index_put(x, _mask([[True, False], [False, True]]), v),
     u((2, 2)), u((2,)))  # fmt: skip

# -- neural-network kernels -----------------------------------------------------------------------
for _shape, _axis in [((5,), -1), ((2, 3, 4), 1), ((3, 4), 0)]:
    _id = f"{len(_shape)}d-axis{_axis}"
    case(Op.SOFTMAX, _id, lambda x, a=_axis: p10.softmax(x, axis=a), u(_shape))
    case(Op.LOG_SOFTMAX, _id, lambda x, a=_axis: p10.log_softmax(x, axis=a), u(_shape))

for _name, _sx, _sw, _kw in [
    ("basic", (1, 2, 5, 5), (3, 2, 3, 3), {}),
    ("stride2-pad1", (2, 2, 5, 5), (2, 2, 3, 3), {"stride": 2, "padding": 1}),
    ("dilation2", (1, 1, 6, 6), (2, 1, 2, 2), {"dilation": 2}),
    ("groups2", (1, 4, 4, 4), (4, 2, 2, 2), {"groups": 2}),
    ("mixed", (1, 2, 5, 4), (2, 2, 2, 3), {"stride": (2, 1), "padding": (0, 1)}),
]:
    case(Op.CONV2D, _name, lambda x, w, kw=_kw: p10.conv2d(x, w, **kw), u(_sx), u(_sw))
case(Op.CONV2D, "bias", lambda x, w, b: p10.conv2d(x, w, b, padding=1), u((1, 2, 3, 3)),
     u((2, 2, 2, 2)), u((2,)))  # fmt: skip
case(Op.CONV2D, "large-random", lambda x, w: p10.conv2d(x, w, padding=1, groups=2),
     u((2, 4, 8, 8)), u((6, 2, 3, 3)), mode="random")  # fmt: skip

for _name, _sx, _kw in [
    ("k2", (1, 2, 4, 4), {"kernel_size": 2}),
    ("k3-s2-p1", (1, 1, 5, 5), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("k2-dil2", (1, 1, 5, 5), {"kernel_size": 2, "dilation": 2}),
]:
    case(Op.UNFOLD, _name, lambda x, kw=_kw: p10.unfold(x, **kw), u(_sx))
for _name, _sc, _kw in [
    ("k2", (1, 8, 4), {"output_size": 3, "kernel_size": 2}),
    ("k2-p1", (1, 4, 16), {"output_size": 3, "kernel_size": 2, "padding": 1}),
    ("k2-s2", (2, 4, 4), {"output_size": 4, "kernel_size": 2, "stride": 2}),
]:
    case(Op.FOLD, _name, lambda x, kw=_kw: p10.fold(x, **kw), u(_sc))

for _name, _sx, _kw in [
    ("k2", (1, 2, 4, 4), {"kernel_size": 2}),
    ("k3-s2-p1", (1, 1, 5, 5), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("k2x3-s1x2", (2, 1, 4, 5), {"kernel_size": (2, 3), "stride": (1, 2)}),
]:
    case(Op.MAX_POOL2D, _name, lambda x, kw=_kw: p10.max_pool2d(x, **kw), spaced(_sx, 0.2))
    case(Op.AVG_POOL2D, _name, lambda x, kw=_kw: p10.avg_pool2d(x, **kw), u(_sx))

# -- partial needs, leftovers and larger inputs ---------------------------------------------------
# One operand constant (the rule's needs_input_grad=False paths).
_W = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
case(Op.MATMUL, "const-right", lambda a: a @ p10.asarray(_W), u((2, 4)))
case(Op.MATMUL, "const-left", lambda b: p10.asarray(_W.T) @ b, u((4, 2)))
case(Op.MUL, "const-tensor", lambda a: a * p10.asarray(_W[0]), u((2, 3)))
case(Op.CONCAT, "with-const", lambda a: p10.concat([p10.asarray(_W), a], axis=0), u((1, 3)))
case(Op.CONV2D, "const-input", lambda w: p10.conv2d(p10.asarray(np.ones((1, 1, 4, 4))), w),
     u((2, 1, 2, 2)))  # fmt: skip
case(Op.CONV2D, "const-weight", lambda x: p10.conv2d(x, p10.asarray(np.ones((2, 1, 2, 2)))),
     u((1, 1, 3, 3)))  # fmt: skip
case(Op.INDEX_ADD, "const-base", lambda v: p10.index_add(p10.asarray(_W), _ints([0, 0]), v),
     u((2, 3)))  # fmt: skip
case(Op.INDEX_PUT, "const-values", lambda x: p10.index_put(x, _ints([2, 0]), p10.asarray(_W[:2])),
     u((4, 3)))  # fmt: skip
case(Op.WHERE, "const-x1", lambda y: p10.where(_mask([True, False, True]), p10.asarray(_W[0]), y),
     u((2, 3)))  # fmt: skip
# Windows that leave the last rows/columns unused.
case(Op.CONV2D, "leftover", lambda x, w: p10.conv2d(x, w, stride=2), u((1, 1, 6, 6)),
     u((1, 1, 3, 3)))  # fmt: skip
case(Op.MAX_POOL2D, "leftover", lambda x: p10.max_pool2d(x, 2), spaced((1, 1, 5, 5), 0.2))
case(Op.AVG_POOL2D, "leftover", lambda x: p10.avg_pool2d(x, 2), u((1, 1, 5, 5)))
case(Op.UNFOLD, "leftover", lambda x: p10.unfold(x, 2, stride=2), u((1, 1, 5, 5)))
# 0-d inputs of structural ops.
case(Op.GETITEM, "0d-none", lambda x: x[None], u(()))
case(Op.TILE, "0d", lambda x: p10.tile(x, (3,)), u(()))
case(Op.REPEAT, "0d", lambda x: p10.repeat(x, 2), u(()))
case(Op.BROADCAST_TO, "views", lambda x: p10.broadcast_to(p10.matrix_transpose(x), (2, 3, 2)),
     u((2, 3)))  # fmt: skip
# Larger inputs, checked along random directions (v^T J u) instead of the full Jacobian.
case(Op.MATMUL, "large-random", p10.matmul, u((3, 16, 32)), u((32, 8)), mode="random")
case(Op.SOFTMAX, "large-random", lambda x: p10.softmax(x, axis=-1), u((16, 64)), mode="random")
case(Op.MAX_POOL2D, "large-random", lambda x: p10.max_pool2d(x, 3, 2, 1),
     spaced((2, 3, 9, 9), 0.05), mode="random")  # fmt: skip
case(Op.GETITEM, "large-random", lambda x: x[_ints(np.arange(50) % 7), 3:],
     u((10, 20)), mode="random")  # fmt: skip
# Advanced indices separated by a slice (NumPy moves their axis to the front).
case(Op.GETITEM, "split-arrays", lambda x: x[_ints([0, 2]), :, _ints([1, 1])], u((3, 4, 5)))
case(Op.GETITEM, "array-none", lambda x: x[:, _ints([3, 3, 0]), None], u((2, 4, 3)))
case(Op.INDEX_ADD, "split-arrays",
     lambda x, v: p10.index_add(x, (_ints([0, 0]), slice(None), _ints([1, 1])), v),
     u((3, 2, 4)), u((2, 2)))  # fmt: skip

# -- linalg (issue 18) ----------------------------------------------------------------------------
# Decompositions defined up to signs are checked through sign-invariant functions of their
# factors (U diag(c) U^T); symmetric inputs come from (x + x^T) / 2, positive-definite ones from
# x x^T + 3 I, so that the finite differences perturb what the kernel reads.
_C3 = np.array([1.0, 2.0, 3.0])


def _sym(x: Any) -> Any:
    return (x + p10.matrix_transpose(x)) * 0.5


def _spd(x: Any) -> Any:
    return p10.matmul(x, p10.matrix_transpose(x)) + 3.0 * p10.eye(x.shape[-1], dtype=x.dtype)


def _gram(f: Any, cols: bool = True) -> Any:
    """``F diag(c) F^T`` (columns) or ``F^T diag(c) F`` (rows) of a factor ``F``."""
    c = p10.asarray(_C3)
    if cols:
        return p10.matmul(f * c, p10.matrix_transpose(f))
    return p10.matmul(p10.matrix_transpose(f) * c, f)


case(Op.INV, "batched", p10.linalg.inv, away((2, 3, 3), (0.0,), 0.3))
case(Op.SOLVE, "matrix-rhs", p10.linalg.solve, u((2, 3, 3)), u((2, 3, 2)))
case(Op.SOLVE, "vector-rhs", p10.linalg.solve, u((3, 3)), u((3,)))
case(Op.SOLVE, "batch-broadcast", p10.linalg.solve, u((3, 3)), u((2, 3, 1)))
case(Op.DET, "batched", p10.linalg.det, u((2, 3, 3)))
case(Op.SLOGDET, "logabsdet", lambda x: p10.linalg.slogdet(x).logabsdet, u((2, 3, 3)))
case(Op.CHOLESKY, "lower", lambda x: p10.linalg.cholesky(_spd(x)), u((2, 3, 3)))
case(Op.CHOLESKY, "upper", lambda x: p10.linalg.cholesky(_spd(x), upper=True), u((3, 3)))
case(Op.QR, "q-tall", lambda x: p10.linalg.qr(x).Q, u((4, 3)))
case(Op.QR, "r-tall", lambda x: p10.linalg.qr(x).R, u((2, 4, 3)))
case(Op.QR, "q-square-complete", lambda x: p10.linalg.qr(x, mode="complete").Q, u((3, 3)))
case(Op.EIGH, "values", lambda x: p10.linalg.eigvalsh(_sym(x)), u((2, 3, 3)))
case(Op.EIGH, "vectors", lambda x: _gram(p10.linalg.eigh(_sym(x)).eigenvectors), u((3, 3)))
case(Op.SVD, "s", p10.linalg.svdvals, u((2, 4, 3)))
case(Op.SVD, "u-tall", lambda x: _gram(p10.linalg.svd(x, full_matrices=False).U), u((4, 3)))
case(Op.SVD, "vh-tall", lambda x: _gram(p10.linalg.svd(x, full_matrices=False).Vh, False),
     u((4, 3)))  # fmt: skip
case(Op.SVD, "u-wide", lambda x: _gram(p10.linalg.svd(x, full_matrices=False).U), u((3, 4)))
case(Op.SVD, "vh-wide", lambda x: _gram(p10.linalg.svd(x, full_matrices=False).Vh, False),
     u((3, 4)))  # fmt: skip
case(Op.SVD, "pinv", p10.linalg.pinv, u((4, 3)))
case(Op.SVD, "nuclear-norm", lambda x: p10.linalg.matrix_norm(x, ord="nuc"), u((3, 4)))
case(Op.QR, "q-wide", lambda x: p10.linalg.qr(x).Q, u((3, 5)))
case(Op.QR, "r-wide", lambda x: p10.linalg.qr(x).R, u((2, 2, 4)))
case(Op.QR, "q-wide-complete", lambda x: p10.linalg.qr(x, mode="complete").Q, u((2, 3)))


def _rank2(x: Any) -> Any:
    """A singular 3x3 matrix (third row = first + second) that stays singular when x moves."""
    return p10.concat((x, p10.sum(x, axis=-2, keepdims=True)), axis=-2)


# NOTE: at a singular matrix the cofactors come from an SVD; "mixed" batches one of each
case(Op.DET, "singular", lambda x: p10.linalg.det(_rank2(x)), u((2, 2, 3)))
case(Op.DET, "singular-mixed",
     lambda x, y: p10.linalg.det(p10.stack((_rank2(x), y))), u((2, 3)), u((3, 3)))  # fmt: skip
case(Op.DET, "singular-rank1",
     lambda x: p10.linalg.det(p10.concat((x, x * 2.0, x * 3.0), axis=-2)), u((1, 3)))  # fmt: skip

# -- complex inputs (issue 18) --------------------------------------------------------------------
# The inputs are the real and imaginary parts of complex tensors, the outputs the real and
# imaginary parts of the result: the real Jacobian then checks PyTorch's convention (the
# gradient of z = x + iy is dL/dx + i dL/dy) through every complex rule on the way.


def _z(re: Any, im: Any) -> Any:
    return re + im * 1j


def _parts(w: Any) -> Any:
    return p10.stack([p10.real(w), p10.imag(w)])


def _cz1(fn: Callable[[Any], Any]) -> Callable[..., Any]:
    return lambda a, b: _parts(fn(_z(a, b)))


def _cz2(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    return lambda a, b, c, d: _parts(fn(_z(a, b), _z(c, d)))


_Z3 = (u((3,)), u((3,)))
_ZP = (away((3,), (0.0,), 0.4), u((3,), -1.0, 1.0))  # away from 0 (log, sqrt's branch cut)
case(Op.MUL, "complex", _cz2(p10.multiply), *_Z3, *_Z3)
case(Op.MUL, "complex-real", lambda a, b, r: _parts(_z(a, b) * r), *_Z3, u((3,)))
case(Op.DIV, "complex", _cz2(p10.divide), *_Z3, *_ZP)
case(Op.SUB, "complex", _cz2(p10.subtract), *_Z3, *_Z3)
case(Op.NEG, "complex", _cz1(p10.negative), *_Z3)
case(Op.EXP, "complex", _cz1(p10.exp), *_Z3)
case(Op.LOG, "complex", _cz1(p10.log), *_ZP)
case(Op.SQRT, "complex", _cz1(p10.sqrt), *_ZP)
case(Op.COS, "complex", _cz1(p10.cos), *_Z3)
case(Op.TANH, "complex", _cz1(p10.tanh), *_Z3)
case(Op.RECIPROCAL, "complex", _cz1(p10.reciprocal), *_ZP)
case(Op.SQUARE, "complex", _cz1(p10.square), *_Z3)
case(Op.ABS, "complex", lambda a, b: p10.abs(_z(a, b)), *_ZP)
case(Op.REAL, "complex", lambda a, b: p10.real(_z(a, b) * _z(b, a)), *_Z3)
case(Op.REAL, "real", lambda a: p10.real(a), u((3,)))
case(Op.IMAG, "complex", lambda a, b: p10.imag(_z(a, b) * _z(b, a)), *_Z3)
case(Op.IMAG, "real", lambda a: p10.imag(a) + a, u((3,)))
case(Op.CONJ, "complex", _cz1(lambda z: p10.conj(z) * z * z), *_Z3)
case(Op.CAST, "real-to-complex", lambda a: _parts(p10.astype(a, "complex128") * (1 + 2j)), u((3,)))
case(Op.SUM, "complex", _cz1(lambda z: p10.sum(z * z, axis=0)), u((2, 3)), u((2, 3)))
case(Op.MATMUL, "complex", _cz2(p10.matmul), u((2, 3)), u((2, 3)), u((3, 2)), u((3, 2)))
case(Op.INV, "complex", _cz1(p10.linalg.inv), u((3, 3)), u((3, 3)))
case(Op.DET, "complex", _cz1(p10.linalg.det), u((3, 3)), u((3, 3)))
case(Op.SOLVE, "complex", _cz2(p10.linalg.solve), u((3, 3)), u((3, 3)), u((3, 2)), u((3, 2)))
case(Op.SIGN, "complex", _cz1(lambda z: p10.sign(z) * z), *_ZP)
case(Op.DET, "complex-singular", _cz1(lambda z: p10.linalg.det(_rank2(z))), u((2, 3)), u((2, 3)))
case(Op.SLOGDET, "complex", lambda a, b: p10.linalg.slogdet(_z(a, b)).logabsdet,
     u((2, 3, 3)), u((2, 3, 3)))  # fmt: skip


def _mH(z: Any) -> Any:
    return p10.conj(p10.matrix_transpose(z))


def _hpd(z: Any) -> Any:
    """A Hermitian positive-definite matrix from any complex one: z z^H + 3 I."""
    return p10.matmul(z, _mH(z)) + 3.0 * p10.eye(z.shape[-1], dtype=z.dtype)


def _herm(z: Any) -> Any:
    return (z + _mH(z)) * 0.5


def _cgram(f: Any, cols: bool = True) -> Any:
    """``F diag(c) F^H`` (columns) or ``F^H diag(c) F`` (rows): free of the factors' phases."""
    c = p10.asarray(_C3)
    return p10.matmul(f * c, _mH(f)) if cols else p10.matmul(_mH(f) * c, f)


def _qr_both(z: Any) -> Any:
    q, r = p10.linalg.qr(z)
    return p10.concat((q, r), axis=-1)


_M33 = (u((3, 3)), u((3, 3)))
case(Op.DET, "slogdet-complex-sign", _cz1(lambda z: p10.linalg.slogdet(z).sign), *_M33)
case(Op.CHOLESKY, "complex", _cz1(lambda z: p10.linalg.cholesky(_hpd(z))), *_M33)
case(Op.CHOLESKY, "complex-upper", _cz1(lambda z: p10.linalg.cholesky(_hpd(z), upper=True)),
     u((2, 3, 3)), u((2, 3, 3)))  # fmt: skip
case(Op.QR, "complex-q", _cz1(lambda z: p10.linalg.qr(z).Q), u((4, 3)), u((4, 3)))
case(Op.QR, "complex-r", _cz1(lambda z: p10.linalg.qr(z).R), u((4, 3)), u((4, 3)))
case(Op.QR, "complex-wide", _cz1(_qr_both), u((2, 4)), u((2, 4)))
case(Op.EIGH, "complex-values", lambda a, b: p10.linalg.eigvalsh(_herm(_z(a, b))), *_M33)
case(Op.EIGH, "complex-vectors", _cz1(lambda z: _cgram(p10.linalg.eigh(_herm(z)).eigenvectors)),
     *_M33)  # fmt: skip
case(Op.SVD, "complex-s", lambda a, b: p10.linalg.svdvals(_z(a, b)), u((2, 4, 3)), u((2, 4, 3)))
case(Op.SVD, "complex-u", _cz1(lambda z: _cgram(p10.linalg.svd(z, full_matrices=False).U)),
     u((4, 3)), u((4, 3)))  # fmt: skip
case(Op.SVD, "complex-vh",
     _cz1(lambda z: _cgram(p10.linalg.svd(z, full_matrices=False).Vh, False)),
     u((3, 4)), u((3, 4)))  # fmt: skip
case(Op.SVD, "complex-pinv", _cz1(p10.linalg.pinv), u((4, 3)), u((4, 3)))

# -- fft (issue 18): complex inputs as real and imaginary parts, as above -------------------------
case(Op.FFTN, "fft", _cz1(p10.fft.fft), *_Z3)
case(Op.FFTN, "ifft-ortho", _cz1(lambda z: p10.fft.ifft(z, norm="ortho")), *_Z3)
case(Op.FFTN, "fft-pad", _cz1(lambda z: p10.fft.fft(z, n=5)), *_Z3)
case(Op.FFTN, "fft-crop", _cz1(lambda z: p10.fft.fft(z, n=2, norm="forward")), *_Z3)
case(Op.FFTN, "fftn-2d", _cz1(lambda z: p10.fft.fftn(z, s=(3, 2))), u((2, 3)), u((2, 3)))
case(Op.RFFT, "even", lambda x: _parts(p10.fft.rfft(x)), u((4,)))
case(Op.RFFT, "odd-pad", lambda x: _parts(p10.fft.rfft(x, n=5, norm="ortho")), u((3,)))
case(Op.RFFT, "2d-axis0", lambda x: _parts(p10.fft.rfft(x, axis=0)), u((3, 2)))
case(Op.IRFFT, "even", lambda a, b: p10.fft.irfft(_z(a, b)), u((3,)), u((3,)))
case(Op.IRFFT, "odd", lambda a, b: p10.fft.irfft(_z(a, b), n=5, norm="ortho"), *_Z3)
case(Op.IRFFT, "crop", lambda a, b: p10.fft.irfft(_z(a, b), n=2, norm="forward"), *_Z3)
case(Op.IRFFT, "hfft-2d", lambda a, b: p10.fft.hfft(_z(a, b), axis=0), u((3, 2)), u((3, 2)))
