"""Summaries of lazy tensors (Dask), all of one backward computed together.

Summarizing a lazy tensor computes it, and each compute re-runs the graph it comes from: one
summary per node made a captured step cost one compute per node. Here the values a graph
record needs are gathered first, and one :func:`p10.fetch` computes all of them: the whole
value of a small tensor (summarized by the NumPy code, as on the NumPy backend), and for a
large one only its statistics, reduced where the data lives (a cluster's workers), so no large
value travels to this process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import p10
from tpx import AccumulateGrad, observe
from tpx_inspect.summary import PREVIEW, moments_row, stats_row

FETCH_WHOLE = 4096
"""Lazy values up to this many elements are fetched whole; larger ones as statistics."""


def raw_of(x: Any) -> Any:
    """The P10 tensor behind ``x`` (a ``tpx.Tensor`` holds one), or ``x``."""
    return observe.p10_tensor(x)


def is_lazy(x: Any) -> bool:
    """True for a tensor of a lazy backend.

    >>> is_lazy(p10.ones(2)), is_lazy(3.0)
    (False, False)
    """
    raw = raw_of(x)
    return isinstance(raw, p10.Tensor) and raw.backend.lazy


def snapshot(x: Any) -> Any:
    """A lazy tensor's value as it is now: a new tensor on the same graph (no task runs), so a
    later in-place write into ``x`` does not change what is summarized."""
    return p10.asarray(raw_of(x), copy=True) if is_lazy(x) else x


def lazy_record(roots: list, pending: Any, b: Any) -> bool:
    """Whether a record holds lazy values, judged by one value (a graph lives on one backend)."""
    if b is not None and b.executed:
        return is_lazy(b.grad_outputs()[0])
    for n in roots:
        if n.__class__ is AccumulateGrad:
            return is_lazy(n.variable)
        p = pending.get(n)
        if p is not None:
            return is_lazy(p[2] if p[1] is None else p[1])  # _pending.value_of (a cycle)
    return False


def record_values(order: list, pending: Any, b: Any) -> list[Any]:
    """Every object that building the record of one backward summarizes (see ``_Tables``)."""
    out: list[Any] = []
    for n in order:
        p = pending.get(n)
        if n.__class__ is AccumulateGrad:
            out.append(n.variable)
        elif p is not None:
            out.extend([p[2] if p[1] is None else p[1], *p[7 : 7 + p[6]]])  # value_of, consts_of
    if b is not None:
        for _node, g, gins, _, _ in b.runs():
            out.extend([g, *gins])
        out.extend(b.root_grads.values())
        for _target, contribution, total, _source in b.sums():
            out.extend([contribution, total])
    return out


def summarize_lazy(values: Iterable[Any], keep: Callable[[Any], bool], make: Callable) -> dict:
    """``{id(x): make(row, head, value)}`` for the lazy ``values``, with one compute."""
    todo: dict[int, Any] = {}
    for x in values:
        if x is not None and id(x) not in todo and is_lazy(x):
            todo[id(x)] = x
    if not todo:
        return {}
    plans = [_plan(raw_of(x), keep(raw_of(x))) for x in todo.values()]
    flat = [t for plan in plans for t in plan[1]]
    results = iter(p10.fetch(*flat))
    out = {}
    for key, (kind, parts, kept) in zip(todo, plans):
        got = [next(results) for _ in parts]
        out[key] = _finish(kind, got, kept, make)
    return out


def _plan(t: p10.Tensor, kept: bool) -> tuple[str, list[p10.Tensor], bool]:
    """What to fetch for ``t``: its whole value, or the tensors of its statistics."""
    size = math.prod(t.shape)
    if kept or size <= FETCH_WHOLE or t.dtype.kind not in "fiub":
        return "whole", [t], kept
    flat = p10.reshape(t, (-1,))
    a = p10.astype(flat, "float64")
    zeros = p10.sum(p10.equal(flat, 0))
    if t.dtype.kind != "f":
        lo, hi, n, nan, inf = p10.min(a), p10.max(a), p10.asarray(size), zeros * 0, zeros * 0
    else:
        finite = p10.isfinite(flat)
        lo = p10.min(p10.where(finite, a, math.inf))
        hi = p10.max(p10.where(finite, a, -math.inf))
        a = p10.where(finite, a, 0.0)
        n, nan, inf = p10.sum(finite), p10.sum(p10.isnan(flat)), p10.sum(p10.isinf(flat))
    total = p10.sum(a)
    d = a - total / n  # NOTE: the std's second pass (see summary.moments_row)
    if t.dtype.kind == "f":
        d = p10.where(finite, d, 0.0)
    parts = [flat[:PREVIEW], lo, hi, total, p10.sum(a * a), p10.sum(d * d), n, nan, inf, zeros]
    return "stats", parts, kept


def _finish(kind: str, got: list[np.ndarray], kept: bool, make: Callable) -> Any:
    if kind == "whole":
        row, head = stats_row(got[0])
        return make(row, head, np.array(got[0], copy=True) if kept else None)
    head_arr, lo, hi, total, sq, dev, n, nan, inf, zeros = got
    head = tuple(float(v) for v in head_arr.tolist())
    counts = [float(nan), float(inf), float(zeros)]
    n = float(n)
    if not n:
        return make([math.nan] * 5 + counts, head, None)
    row = moments_row(n, float(lo), float(hi), float(total), float(sq), float(dev), *counts)
    return make(row, head, None)
