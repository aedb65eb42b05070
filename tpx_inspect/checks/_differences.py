"""Finite differences of many nodes at once: the arithmetic of the local check.

Every array here carries the batch on its leading axis (one row per node); every sum is per
row, so a node's numbers do not depend on the other nodes of its batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpx_inspect.check_view import NodeRecord
from tpx_inspect.checks._seeds import normals
from tpx_inspect.checks.batched import BatchReplay
from tpx_inspect.checks.replay import Replay

_EPS64 = float(np.finfo(np.float64).eps)


class NotReplayable(Exception):
    """The node's forward cannot be rerun faithfully from its recorded inputs."""


def reproduced(nodes: list, y: np.ndarray, recorded: np.ndarray | None = None) -> list:
    """Per node, why the replayed output ``y[b]`` does not match the recorded one (or None);
    ``recorded``: the recorded outputs already stacked in float64, if at hand."""
    first = nodes[0].output
    if first is None:
        return [None] * len(nodes)
    if np.shape(first) != y.shape[1:]:
        return [f"replay gives shape {y.shape[1:]}, recorded {np.shape(first)}"] * len(nodes)
    out = recorded if recorded is not None else stack64([n.output for n in nodes])
    rtol = 1e-3 if np.asarray(first).dtype.itemsize <= 4 else 1e-8
    rows = out.reshape(len(nodes), -1)
    scale = np.max(np.where(np.isfinite(rows), np.abs(rows), 0.0), axis=1, initial=0.0)
    atol = (rtol * scale + 1e-12).reshape((len(nodes),) + (1,) * (out.ndim - 1))
    ok = np.isclose(y, out, rtol=rtol, atol=atol).reshape(len(nodes), -1).all(axis=1)
    return [
        None
        if good
        else "rerunning its forward from the recorded inputs does not reproduce the recorded "
        "output (random, stateful or with inputs the record lacks)"
        for good in ok
    ]


@dataclass(frozen=True)
class Stacked:
    """The recorded values of a batch of nodes of one layout, stacked once: inputs as
    :meth:`BatchReplay.inputs` gives them, outputs and incoming gradients in float64, and per
    node whether a NaN is among its values (:func:`nan_reason`) and whether its incoming
    gradient is :func:`usable`."""

    xs: list
    outputs: np.ndarray
    incoming: np.ndarray | None
    nan: np.ndarray
    usable: np.ndarray
    recorded: tuple | None = None
    """The gradients the rule returned in the recorded backward, stacked per input (None
    where it gave None), when they came stacked (:func:`stack_columns`)."""

    def rows(self, rows: np.ndarray) -> Stacked:
        """The nodes at positions ``rows`` only."""
        xs = [x[rows] if isinstance(x, np.ndarray) else x for x in self.xs]
        incoming = None if self.incoming is None else self.incoming[rows]
        recorded = self.recorded
        if recorded is not None:
            recorded = tuple(None if g is None else g[rows] for g in recorded)
        return Stacked(xs, self.outputs[rows], incoming, self.nan[rows], self.usable[rows],
                       recorded)  # fmt: skip


def stack_batch(replay: BatchReplay, grad_outputs: list | None, columns: Any = None) -> Stacked:
    """The :class:`Stacked` values of ``replay``'s nodes (a stacked batch); ``grad_outputs``:
    each node's recorded incoming gradient (one layout), or None when no backward ran them.
    ``columns``: the same values already stacked (:func:`stack_columns`), read instead."""
    n, first = len(replay), replay.nodes[0]
    if columns is not None:
        xs, outputs, grad_outputs, recorded = columns
    else:
        xs, recorded = replay.inputs(), None
        outputs = stack64([node.output for node in replay.nodes])
    nan = np.zeros(n, dtype=bool)
    floats = [x for x, x0 in zip(xs, first.inputs) if isinstance(x0, np.ndarray)
              and x0.dtype.kind == "f"]  # fmt: skip
    if np.asarray(first.output).dtype.kind == "f":
        floats.append(outputs)
    for x in floats:
        nan |= np.isnan(x.reshape(n, -1)).any(axis=1)
    incoming, good = None, np.zeros(n, dtype=bool)
    if grad_outputs is not None and grad_outputs[0] is not None and np.size(grad_outputs[0]):
        incoming = _as64(grad_outputs)
        # NOTE: as usable(): max |g| is NaN or inf iff some element is, and 0 iff all are
        biggest = np.abs(incoming.reshape(n, -1)).max(axis=1)
        good = (biggest > 0) & (biggest < np.inf)
    return Stacked(xs, outputs, incoming, nan, good, recorded)


def stack_columns(replay: BatchReplay, inputs: list, output: Any, grad_output: Any,
                  grad_inputs: list | None) -> tuple | None:  # fmt: skip
    """The ``columns`` of :func:`stack_batch` from values stacked per input/output/gradient
    (``np.array`` of the nodes' arrays, or a list where they were not arrays of one layout):
    the same arrays as :func:`stack_batch` stacks itself; None when they cannot be used."""
    if not replay.stacked or any(
        a and x.__class__ is not np.ndarray for x, a in zip(inputs, replay.is_array)
    ):
        return None
    xs = [replay.upcast64(x) if a else x for x, a in zip(inputs, replay.is_array)]
    recorded = None
    if grad_inputs is not None:
        recorded = tuple(
            g if g.__class__ is np.ndarray else None if all(x is None for x in g)
            else stack_arrays(g)
            for g in grad_inputs
        )  # fmt: skip
    return xs, _as64(output), grad_output, recorded


def _as64(a: Any) -> np.ndarray:
    if a.__class__ is np.ndarray:
        return a.astype(np.float64, copy=False)
    return stack64(list(a))


def locate_element(
    node: NodeRecord, input: int, u: np.ndarray, analytical: np.ndarray, opts: Any
) -> tuple[tuple[int, ...], float, float] | None:
    """The element of input ``input`` where ``u^T J`` (central differences) and the rule's
    gradient ``analytical`` differ most: ``(index, numerical, analytical)``; None for inputs
    larger than ``opts.locate_limit`` elements."""
    replay = Replay(node)
    xs = replay.inputs()
    x = np.asarray(xs[input])
    if x.size > opts.locate_limit:
        return None
    analytical = np.asarray(analytical, dtype=np.float64).reshape(x.shape)
    analytical = np.where(np.isfinite(x), np.nan_to_num(analytical), 0.0)
    u = np.where(np.isfinite(np.asarray(node.output)), u, 0.0)
    numerical = np.zeros(x.shape)
    for j in np.ndindex(*x.shape):
        if not np.isfinite(x[j]):
            continue
        step = np.zeros(x.shape)
        step[j] = opts.eps
        plus, minus = (replay.forward(moved(xs, input, s * step)) for s in (1.0, -1.0))
        numerical[j] = np.sum(u * sub(plus, minus)) / (2 * opts.eps)
    worst = np.unravel_index(int(np.argmax(np.abs(numerical - analytical))), x.shape)
    index = tuple(int(k) for k in worst)
    return index, float(numerical[worst]), float(analytical[worst])


def stack64(arrays: list) -> np.ndarray:
    """``np.stack`` of ``arrays`` as float64, in one copy when they are arrays of one shape."""
    if all(a.__class__ is np.ndarray for a in arrays) and len({a.shape for a in arrays}) == 1:
        return np.array(arrays).astype(np.float64, copy=False)
    return np.stack([np.asarray(a, dtype=np.float64) for a in arrays])


def cotangents(real: list | np.ndarray | None, n: int, draws: Draws) -> list:
    """The incoming gradients (None: not every node has a usable one; a list per node, or
    already stacked in float64) and ``n`` random cotangents, each stacked over the batch."""
    us = []
    if real is not None:
        us.append(("incoming gradient", real if isinstance(real, np.ndarray) else stack64(real)))
    us += [(f"random cotangent {k}", draws.next()) for k in range(n)]
    return us


def usable(real: np.ndarray | None) -> bool:
    """An incoming gradient that is finite and not all zero."""
    if real is None or np.size(real) == 0:
        return False
    # NOTE: max |g| is NaN or inf iff some element is, and 0 iff all are
    biggest = np.max(np.abs(real))
    return bool(0 < biggest < np.inf)


class Draws:
    """Standard normal draws of the given shapes, in order, from each node's own generator.

    A generator gives the same numbers in one call as in one call per shape, so each node
    draws everything at once (node ``i``: ``default_rng([seed, i])``, as one node alone).
    """

    def __init__(self, ids: list, seed: int, shapes: list) -> None:
        self.shapes = list(shapes)
        total = sum(math.prod(s) for s in shapes)
        self.values = normals(seed, list(ids), total)  # NOTE: default_rng's numbers, faster
        self.pos = 0

    def next(self) -> np.ndarray:
        """The next shape's draws, stacked over the batch."""
        shape = self.shapes.pop(0)
        n = math.prod(shape)
        out = self.values[:, self.pos : self.pos + n].reshape((len(self.values), *shape))
        self.pos += n
        return out


def stack_recorded(recorded: list) -> tuple:
    """The recorded gradients of a batch, stacked per input (None where the rule gave None)."""
    if len({len(r) for r in recorded}) != 1:
        raise ValueError("the nodes of a batch recorded different numbers of gradients")
    return tuple(None if all(g is None for g in gs) else stack_arrays(gs) for gs in zip(*recorded))


def stack_arrays(arrays: Sequence[Any]) -> np.ndarray:
    """``np.stack`` of ``arrays``; in one copy when they are arrays of one shape and dtype."""
    first = arrays[0]
    if first.__class__ is np.ndarray and all(
        a.__class__ is np.ndarray and a.shape == first.shape and a.dtype == first.dtype
        for a in arrays
    ):
        return np.array(arrays)
    return np.stack([np.asarray(g) for g in arrays])


def moved(xs: list, i: int, step: np.ndarray) -> list:
    moved = list(xs)
    moved[i] = np.asarray(xs[i] + step)
    return moved


class Shift:
    """The outputs ``plus`` and ``minus`` of a batch moved by ``+step`` and ``-step`` along one
    direction of one input, with what every cotangent's comparison reads of them (computed
    once per direction, not once per cotangent)."""

    def __init__(self, plus: np.ndarray, minus: np.ndarray, y: np.ndarray, h: float) -> None:
        self.plus, self.minus = plus, minus
        self.central = sub(plus, minus) / (2 * h)
        # NOTE: elementwise, so that kinks of opposite sign cannot cancel out.
        self.kink = np.abs(sub(plus, y) - sub(y, minus))
        self.size = np.where(
            np.isfinite(plus) & np.isfinite(minus), np.abs(plus) + np.abs(minus), 0.0
        )

    @classmethod
    def along(cls, replay: BatchReplay, xs: list, i: int, step: np.ndarray, y: np.ndarray,
              h: float) -> Shift:  # fmt: skip
        """Input ``i`` of the batch ``replay`` at ``xs`` moved by ``step``."""
        return cls(*shifted(replay, xs, i, step), y, h)


def shifted(replay: BatchReplay, xs: list, i: int, step: np.ndarray) -> tuple:
    return replay.forward(moved(xs, i, step)), replay.forward(moved(xs, i, -step))


def sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` where both are finite, 0 elsewhere (infinite outputs are constants)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(a) & np.isfinite(b), a - b, 0.0)


def rows(a: np.ndarray) -> np.ndarray:
    """Per node of a batch (the leading axis), the sum of its elements."""
    return np.asarray(a).reshape(len(a), -1).sum(axis=1)


def dot(g: Any, v: np.ndarray) -> np.ndarray:
    """Per node, ``<g, v>`` over the elements that ``v`` moves (NaN where shapes differ)."""
    if np.shape(g) != np.shape(v):
        return np.full(len(v), np.nan)
    with np.errstate(invalid="ignore"):
        return rows(np.where(v != 0, np.asarray(g, dtype=np.float64) * v, 0.0))


def compare(i, name, u, v, y, plus, minus, grads, opts) -> tuple:
    """``(numerical, analytical, tolerance, asymmetry)``, each an array over the batch."""
    return compare_shift(i, name, u, v, Shift(plus, minus, y, opts.eps), grads, opts)


def compare_shift(i, name, u, v, shift: Shift, grads, opts) -> tuple:
    """:func:`compare` from a :class:`Shift` (its cotangent-free parts computed once)."""
    h = opts.eps
    numerical = rows(u * shift.central)
    gi = grads[i] if i < len(grads) else None
    analytical = np.zeros(len(u)) if gi is None else dot(gi, v)
    abs_u = np.abs(u)
    asym = rows(abs_u * shift.kink) / h
    scale = rows(np.abs(u * shift.central)) + np.abs(analytical)
    roundoff = 64 * _EPS64 * rows(abs_u * shift.size) / h
    rtol = opts.rtol
    if name == "recorded gradient" and gi is not None and np.asarray(gi).dtype.itemsize <= 4:
        rtol = max(rtol, opts.rtol32)  # the rule ran in float32
    tol = opts.atol + rtol * scale + roundoff
    return numerical, analytical, tol, asym


SYMMETRIC_INPUT = frozenset({"cholesky", "eigh"})
"""Ops that read one triangle of a symmetric matrix (as NumPy and PyTorch do): their rules
give the gradient within symmetric matrices, so the directions of input 0 are symmetric."""


def in_domain(node: NodeRecord, i: int, v: np.ndarray) -> np.ndarray:
    """The direction ``v`` of input ``i`` moved into the op's domain (symmetric for
    :data:`SYMMETRIC_INPUT`), rows of a batch on the leading axis."""
    if i == 0 and getattr(node.op, "value", node.op) in SYMMETRIC_INPUT:
        return (v + np.swapaxes(v, -1, -2)) / 2
    return v


def values_skip_reason(node: NodeRecord) -> str | None:
    """Why the local check skips ``node`` for its values (complex, NaN), or None."""
    return complex_reason(node) or nan_reason(node)


def complex_reason(node: NodeRecord) -> str | None:
    """Why a node with complex values is skipped: the differences here are of real tensors
    (its rule is checked by finite differences in the rule-table test, complex cases included).
    """
    values = [x for x in node.inputs or () if isinstance(x, np.ndarray)] + [node.output]
    if any(isinstance(v, np.ndarray) and v.dtype.kind == "c" for v in values):
        return "complex values (the local check compares real tensors only)"
    return None


NAN_VALUES = "NaN values (see the nonfinite check)"


def nan_reason(node: NodeRecord) -> str | None:
    """Why the local check skips a node with NaN among its float inputs or its output."""
    values = [x for x in node.inputs or () if isinstance(x, np.ndarray) and x.dtype.kind == "f"]
    values.append(node.output)
    if any(_has_nan(v) for v in values if v is not None):
        return NAN_VALUES
    return None


def _has_nan(v: np.ndarray) -> bool:
    if isinstance(v, np.ndarray) and v.dtype.kind == "f":
        # NOTE: max propagates NaN (and only NaN): one reduction instead of isnan + any
        return v.size > 0 and bool(np.isnan(v.max()))
    return bool(np.isnan(v).any())


@dataclass(frozen=True)
class Comparison:
    """One scalar comparison ``<u, J v>`` (numerical) against ``<vjp(u), v>`` (analytical)."""

    input: int
    cotangent: str
    numerical: float
    analytical: float
    tolerance: float
    asymmetry: float

    @property
    def mismatch(self) -> float:
        """``|numerical - analytical|``."""
        return abs(self.numerical - self.analytical)

    @property
    def failed(self) -> bool:
        """Out of tolerance, and not explained by a kink (left/right differences)."""
        return self.mismatch > self.tolerance + self.asymmetry

    @property
    def inconclusive(self) -> bool:
        """Out of tolerance, but the point is not differentiable along the direction."""
        return self.mismatch > self.tolerance and not self.failed


def without_kinks(replay, xs, c, u, v, y, plus, minus, opts) -> Comparison:
    """Compare again with the cotangent zeroed on the output elements at a kink.

    A wrong rule stays visible on the smooth elements; a comparison that only the kinks
    made inconclusive becomes a pass or a failure.
    """
    h = opts.eps
    onesided = np.abs(sub(plus, y) - sub(y, minus)) / h
    central = sub(plus, minus) / (2 * h)
    smooth = onesided <= 1e-2 * np.abs(central) + 1e-6
    if smooth.all() or not smooth.any():
        return c
    masked = np.where(smooth, u, 0.0)
    grads = replay.vjp(xs, y, masked)
    num, an, tol, asym = compare(c.input, c.cotangent, masked, v, y, plus, minus, grads, opts)
    name = f"{c.cotangent} (kink elements masked)"
    return Comparison(c.input, name, float(num[0]), float(an[0]), float(tol[0]), float(asym[0]))
