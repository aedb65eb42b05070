"""Finite differences of many nodes at once: the arithmetic of the local check.

Every array here carries the batch on its leading axis (one row per node); every sum is per
row, so a node's numbers do not depend on the other nodes of its batch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tpx_inspect.check_view import NodeRecord
from tpx_inspect.checks._seeds import normals
from tpx_inspect.checks.batched import BatchReplay
from tpx_inspect.checks.replay import Replay

_EPS64 = float(np.finfo(np.float64).eps)


class NotReplayable(Exception):
    """The node's forward cannot be rerun faithfully from its recorded inputs."""


def reproduced(nodes: list, y: np.ndarray) -> list:
    """Per node, why the replayed output ``y[b]`` does not match the recorded one (or None)."""
    first = nodes[0].output
    if first is None:
        return [None] * len(nodes)
    if np.shape(first) != y.shape[1:]:
        return [f"replay gives shape {y.shape[1:]}, recorded {np.shape(first)}"] * len(nodes)
    out = np.stack([np.asarray(n.output, dtype=np.float64) for n in nodes])
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


def cotangents(real: list | None, n: int, draws: Draws) -> list:
    """The incoming gradients (None: not every node has a usable one) and ``n`` random
    cotangents, each stacked over the batch."""
    us = []
    if real is not None:
        us.append(("incoming gradient", np.stack([np.asarray(g, dtype=np.float64) for g in real])))
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
    return tuple(
        None if all(g is None for g in gs) else np.stack([np.asarray(g) for g in gs])
        for gs in zip(*recorded)
    )


def moved(xs: list, i: int, step: np.ndarray) -> list:
    moved = list(xs)
    moved[i] = np.asarray(xs[i] + step)
    return moved


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
    h = opts.eps
    central = sub(plus, minus) / (2 * h)
    numerical = rows(u * central)
    gi = grads[i] if i < len(grads) else None
    analytical = np.zeros(len(u)) if gi is None else dot(gi, v)
    # NOTE: elementwise, so that kinks of opposite sign cannot cancel out.
    asym = rows(np.abs(u) * np.abs(sub(plus, y) - sub(y, minus))) / h
    scale = rows(np.abs(u * central)) + np.abs(analytical)
    size = np.where(np.isfinite(plus) & np.isfinite(minus), np.abs(plus) + np.abs(minus), 0.0)
    roundoff = 64 * _EPS64 * rows(np.abs(u) * size) / h
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
    return _complex(node) or _nonfinite(node)


def _complex(node: NodeRecord) -> str | None:
    """Why a node with complex values is skipped: the differences here are of real tensors
    (its rule is checked by finite differences in the rule-table test, complex cases included).
    """
    values = [x for x in node.inputs or () if isinstance(x, np.ndarray)] + [node.output]
    if any(isinstance(v, np.ndarray) and v.dtype.kind == "c" for v in values):
        return "complex values (the local check compares real tensors only)"
    return None


def _nonfinite(node: NodeRecord) -> str | None:
    values = [x for x in node.inputs or () if isinstance(x, np.ndarray) and x.dtype.kind == "f"]
    values.append(node.output)
    if any(_has_nan(v) for v in values if v is not None):
        return "NaN values (see the nonfinite check)"
    return None


def _has_nan(v: np.ndarray) -> bool:
    if isinstance(v, np.ndarray) and v.dtype.kind == "f":
        # NOTE: max propagates NaN (and only NaN): one reduction instead of isnan + any
        return v.size > 0 and bool(np.isnan(v.max()))
    return bool(np.isnan(v).any())
