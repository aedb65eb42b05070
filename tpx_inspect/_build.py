"""Turn the TPX nodes and events of one backward into frozen records (iterative, no recursion).

Structures (the static node records) are cached by a key made from the raw nodes, so steps of
a training loop with identical structure share one tuple of :class:`Node` records.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import numpy as np

from p10._indexing import IndexSlot
from tpx import AccumulateGrad
from tpx_inspect.records import (
    Accumulation,
    Edge,
    Graph,
    Node,
    NodeStats,
    Saved,
    Source,
    StatsTable,
    ValueStore,
    stats_table,
)
from tpx_inspect.summary import TensorSummary, summarize, to_numpy

_seq = attrgetter("seq")


def saved_meta(node: Any) -> tuple:
    """``(slot, shape, dtype, bytes, key)`` of each value ``node`` saved; ``key`` identifies
    the memory so values saved twice are counted once."""
    saved = node.saved
    if not saved:
        return ()
    last = len(saved) - 1
    out = []
    for i, v in enumerate(saved):
        if v is not None:
            a = to_numpy(v)
            out.append((-1 if i == last else i, a.shape, a.dtype.name, a.nbytes, id(a)))
    return tuple(out)


class PendingNode:
    """What the forward of one node reported, until its backward ends."""

    __slots__ = ("const_values", "consts", "out", "out_value", "raw", "saved", "seconds", "step")

    def __init__(self, seconds: float, raw: Any, consts: tuple, saved: tuple, step: int):
        self.seconds = seconds
        self.raw = raw
        self.consts: tuple = consts
        self.saved = saved
        self.step = step
        self.out: TensorSummary | None = None
        self.out_value: np.ndarray | None = None
        self.const_values: tuple = ()

    def freeze(self, keep: Callable[[Any], bool]) -> None:
        """Summarize (and copy small values) now, before anything can write into them."""
        self.out = summarize(self.raw)
        if keep(self.raw):
            self.out_value = np.array(to_numpy(self.raw), copy=True)
        vals = tuple(
            None if c is None or not keep(c) else np.array(to_numpy(c), copy=True)
            for c in self.consts
        )
        self.const_values = vals
        self.consts = tuple(None if c is None else summarize(c) for c in self.consts)
        self.raw = None


class GraphBuilder:
    """Builds :class:`Graph` records for one capture; owns its structures and value store."""

    def __init__(self, root: str, keep: Callable[[Any], bool], labels: dict) -> None:
        self.root = root
        self.keep = keep
        self.labels = labels
        self.store = ValueStore()
        self.structures: dict[tuple, tuple[int, tuple[Node, ...]]] = {}
        self._sources: dict[Any, Source] = {}

    def build(self, *, run, gid, kind, step, roots, order, pending, backward, timing) -> Graph:
        """The record of the graph reachable from ``roots`` (``order`` = tpx.reachable)."""
        raw = sorted(order, key=_seq)
        index = {n: i for i, n in enumerate(raw)}
        root_ids = tuple(sorted({index[r] for r in roots}))
        key = (root_ids, tuple(_node_key(n, index, self.labels) for n in raw))
        known = self.structures.get(key)
        is_new = known is None
        if known is None:
            nodes = self._nodes(raw, index, set(root_ids), pending)
            known = self.structures[key] = (len(self.structures), nodes)
        sid, nodes = known
        ex = _executed(backward, index)
        stats = [self._stats(n, pending.get(n), ex.get(i), False) for i, n in enumerate(raw)]
        full = is_new or not _finite(stats)
        if full:
            stats = [self._stats(n, pending.get(n), ex.get(i), True) for i, n in enumerate(raw)]
        order_ids = tuple(sorted(ex, key=lambda i: ex[i][4]))
        return Graph(
            id=gid, run=run, step=step, kind=kind, structure=sid,
            detail="full" if full else "stats", nodes=nodes, roots=root_ids,
            stats=tuple(stats) if full else StatsTable(nodes, stats_table(nodes, stats)),
            order=order_ids,
            accumulations=self._accumulations(backward, index) if full else (),
            peak_saved_bytes=_peak(raw, pending),
            backward_seconds=sum(e[3] for e in ex.values()) if timing else 0.0,
            values=self.store,
        )  # fmt: skip

    # -- static records -------------------------------------------------------------------------
    def _nodes(self, raw: list, index: dict, roots: set, pending: Any) -> tuple[Node, ...]:
        out = []
        for i, n in enumerate(raw):
            if n.__class__ is AccumulateGrad:
                out.append(self._leaf(i, n))
            else:
                out.append(self._op(i, n, index, i in roots, pending.get(n)))
        return tuple(out)

    def _leaf(self, i: int, n: Any) -> Node:
        var = n.variable
        label = self.labels.get(id(var), ("", None))[0]
        kind = "param" if label or type(var).__name__ == "Parameter" else "leaf"
        a = to_numpy(var)
        return Node(i, kind, None, "AccumulateGrad", label, {}, "", None, (), a.shape, a.dtype.name)

    def _op(self, i: int, n: Any, index: dict, is_root: bool, p: Any) -> Node:
        edges = tuple(
            Edge(None if e is None else index[e], tuple(shape), _dtype_name(dtype))
            for e, (shape, dtype) in zip(n.edges, n.in_meta)
        )
        shape, dtype = n.out_meta
        saved = tuple(Saved(s[0], tuple(s[1]), s[2], s[3]) for s in (p.saved if p else ()))
        return Node(
            i, "loss" if is_root else "op", n.op.value, n.name, "", params_to_json(n.params),
            n.scope, self._source(n), edges, tuple(shape), _dtype_name(dtype), saved,
        )  # fmt: skip

    def _source(self, n: Any) -> Source | None:
        code = n.code
        if code is None:
            return None
        src = self._sources.get((code, n.lineno))
        if src is None:
            path = os.path.abspath(code.co_filename)
            if path.startswith(self.root + os.sep):
                path = os.path.relpath(path, self.root)
            src = self._sources[(code, n.lineno)] = Source(path, n.lineno, code.co_name)
        return src

    # -- per-step records -----------------------------------------------------------------------
    def _summary(self, x: Any, full: bool) -> TensorSummary:
        if full and self.keep(x):
            return summarize(x, self.store.add(to_numpy(x)))
        return summarize(x)

    def _stats(self, n: Any, p: Any, ex: Any, full: bool) -> NodeStats:
        if n.__class__ is AccumulateGrad:
            output = self._summary(n.variable, full)
        elif p is None:
            output = None
        elif p.out is not None:
            output = p.out
            if full and p.out_value is not None:
                output = _with_value(p.out, self.store.add(p.out_value))
        else:
            output = self._summary(p.raw, full)
        consts = _consts(self, p) if full and p is not None else ()
        fwd = p.seconds if p is not None else 0.0
        if ex is None:
            return NodeStats(output, None, (), consts, fwd)
        g, gins, seconds, freed, pos = ex
        grad = self._summary(g, full)
        outs = tuple(None if x is None else self._summary(x, full) for x in gins) if full else ()
        released = pos if freed and p is not None and p.saved else None
        return NodeStats(output, grad, outs, consts, fwd, seconds, pos, released)

    def _accumulations(self, b: Any, index: dict) -> tuple[Accumulation, ...]:
        if b is None:
            return ()
        out = []
        for node, g in b.root_grads.items():
            if node in index:
                s = summarize(g)
                out.append(Accumulation(index[node], None, s, s))
        for target, contribution, total, source in b.accs:
            if target in index:
                src = index.get(source)
                out.append(
                    Accumulation(index[target], src, summarize(contribution), summarize(total))
                )
        return tuple(out)


def _executed(b: Any, index: dict) -> dict[int, tuple]:
    if b is None:
        return {}
    out = {}
    for pos, (node, g, gins, seconds, freed) in enumerate(b.executed):
        i = index.get(node)
        if i is not None:
            out[i] = (g, gins, seconds, freed, pos)
    return out


def _consts(builder: GraphBuilder, p: Any) -> tuple:
    if p.out is None:  # not frozen at forward: summarize the held values now
        return tuple(None if c is None else builder._summary(c, True) for c in p.consts)
    vals = p.const_values or (None,) * len(p.consts)
    return tuple(
        s if v is None else _with_value(s, builder.store.add(v)) for s, v in zip(p.consts, vals)
    )


def _with_value(s: TensorSummary, value: int) -> TensorSummary:
    return TensorSummary(
        s.shape, s.dtype, s.min, s.max, s.mean, s.std, s.norm, s.nan, s.inf, s.zeros,
        s.preview, value,
    )  # fmt: skip


def _finite(stats: list[NodeStats]) -> bool:
    return all(
        (s.output is None or s.output.finite) and (s.grad is None or s.grad.finite) for s in stats
    )


def _peak(raw: list, pending: Any) -> int:
    seen: dict[int, int] = {}
    for n in raw:
        p = pending.get(n)
        if p is not None:
            for s in p.saved:
                seen[s[4]] = s[3]
    return sum(seen.values())


def _node_key(n: Any, index: dict, labels: dict) -> tuple:
    if n.__class__ is AccumulateGrad:
        var = n.variable
        return (None, labels.get(id(var), ("",))[0], var.shape, var.dtype)
    edges = tuple(None if e is None else index[e] for e in n.edges)
    params = repr(n.params) if n.params else ""
    return (n.op, n.scope, n.code, n.lineno, params, edges, n.in_meta, n.out_meta)


def _dtype_name(dtype: Any) -> str:
    if dtype is None:
        return "none"
    return getattr(dtype, "name", str(dtype))


def params_to_json(params: dict[str, Any]) -> dict[str, Any]:
    """Op params as JSON values: tuples become lists, dtypes names, slices/Ellipsis/index
    slots the forms of :func:`p10._indexing.key_to_json`, non-finite floats strings.

    >>> import numpy as np
    >>> params_to_json({"axis": (0, 1), "dtype": np.dtype("float32"), "key": (slice(1, None), ...)})
    {'axis': [0, 1], 'dtype': 'float32', 'key': [{'slice': [1, None, None]}, '...']}
    """
    return {str(k): _jsonable(v) for k, v in params.items()}


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return np.dtype(v).name
    if isinstance(v, np.generic):
        return _jsonable(v.item())
    if isinstance(v, tuple | list):
        return [_jsonable(x) for x in v]
    if isinstance(v, slice):
        return {"slice": [_jsonable(v.start), _jsonable(v.stop), _jsonable(v.step)]}
    if v is Ellipsis:
        return "..."
    if isinstance(v, IndexSlot):
        return {"tensor": v.position}
    if isinstance(v, enum.Enum):
        return _jsonable(v.value)
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)
