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

import p10
from p10 import IndexSlot
from tpx import AccumulateGrad, observe
from tpx_inspect._lazy import is_lazy, lazy_record, record_values, snapshot, summarize_lazy
from tpx_inspect.records import (
    NODE_FIELDS,
    SUMMARY_COLUMNS,
    Graph,
    GraphTables,
    NodeTable,
    ValueStore,
)
from tpx_inspect.summary import PREVIEW, dtype_name, stats_row, to_numpy

_seq = attrgetter("seq")


def saved_meta(saved: tuple | None) -> tuple:
    """``(slot, shape, dtype, bytes, key)`` of each value in a node's ``saved`` tuple; ``key``
    identifies the memory so values saved twice are counted once."""
    if not saved:
        return ()
    last = len(saved) - 1
    out = []
    for i, v in enumerate(saved):
        if v is None:
            continue
        raw = observe.p10_tensor(v)
        a = observe.native(raw) if isinstance(raw, p10.Tensor) else None
        if a.__class__ is not np.ndarray:
            if is_lazy(raw):  # its shape and dtype, without computing it
                size = math.prod(raw.shape) * raw.dtype.itemsize
                out.append((-1 if i == last else i, raw.shape, _dtype_name(raw.dtype), size, id(a)))
                continue
            a = to_numpy(v)
        out.append((-1 if i == last else i, a.shape, _dtype_name(a.dtype), a.nbytes, id(a)))
    return tuple(out)


class PendingNode:
    """What the forward of one node reported, until its backward ends."""

    __slots__ = ("_meta", "_saved", "consts", "out", "raw", "seconds", "step")

    def __init__(self, seconds: float, raw: Any, consts: tuple, saved: Any, step: int) -> None:
        self.seconds = seconds
        self.raw = raw
        self.consts: tuple = consts
        self._saved = saved  # the node's saved tuple as recorded (backward may free it later)
        self._meta: tuple | None = None
        self.step = step
        self.out: _Frozen | None = None

    @property
    def saved(self) -> tuple:
        """:func:`saved_meta` of what the node saved at forward time."""
        if self._meta is None:
            self._meta = saved_meta(self._saved)
            self._saved = None
        return self._meta

    def freeze(self, keep: Callable[[Any], bool]) -> None:
        """Summarize (and copy small values) now, before anything can write into them."""
        if observe.native(self.raw).__class__ is not np.ndarray and is_lazy(self.raw):
            # summarized with the whole backward, in one compute (see _lazy)
            self.raw = snapshot(self.raw)
            self.consts = tuple(snapshot(c) for c in self.consts)
            return
        self.out = _Frozen(self.raw, keep)
        self.consts = tuple(None if c is None else _Frozen(c, keep) for c in self.consts)
        self.raw = None


class _Frozen:
    """A summary row computed at forward time, with a copy of the value when it is small."""

    __slots__ = ("head", "row", "value")

    def __init__(self, x: Any, keep: Callable[[Any], bool]) -> None:
        a = to_numpy(x)
        self.row, self.head = stats_row(a)
        self.value = np.array(a, copy=True) if keep(a) else None

    @classmethod
    def of(cls, row: list, head: tuple, value: np.ndarray | None) -> _Frozen:
        """A summary computed elsewhere (a lazy tensor's, see ``_lazy``)."""
        f = object.__new__(cls)
        f.row, f.head, f.value = row, head, value
        return f


class _Tables:
    """Collects the summary rows of one graph; a value summarized twice gets one row."""

    def __init__(self, builder: GraphBuilder, full: bool) -> None:
        self.builder = builder
        self.full = full
        self.rows: list[list[float]] = []
        self.heads: list[tuple] = []
        self.memo: dict[int, int] = {}

    def add(self, x: Any) -> int:
        if x is None:
            return -1
        key = id(x)
        row = self.memo.get(key)
        if row is not None:
            return row
        if self.builder.prefetched:
            x = self.builder.prefetched.get(key, x)
        if x.__class__ is _Frozen:
            stats, head, value = x.row, x.head, x.value
        else:
            a = to_numpy(x)
            stats, head = stats_row(a, PREVIEW if self.full else 0)
            value = a if self.full and self.builder.keep(a) else None
        vid = self.builder.store.add(value) if self.full and value is not None else -1
        if not self.full:
            head = ()
        self.rows.append([*stats, float(vid), float(len(head))])
        self.heads.append(head)
        self.memo[key] = len(self.rows) - 1
        return len(self.rows) - 1

    def finite(self) -> bool:
        return not any(r[5] or r[6] for r in self.rows)

    def summaries(self) -> tuple[np.ndarray, np.ndarray]:
        table = np.array(self.rows, np.float64).reshape(-1, len(SUMMARY_COLUMNS))
        if not self.full:
            return table, np.zeros((0, PREVIEW))
        pad = [math.nan] * PREVIEW
        previews = [list(h) + pad[len(h) :] for h in self.heads]
        return table, np.array(previews, np.float64).reshape(-1, PREVIEW)


class GraphBuilder:
    """Builds :class:`Graph` records for one capture; owns its structures and value store."""

    def __init__(self, root: str, keep: Callable[[Any], bool], labels: dict) -> None:
        self.root = root
        self.keep = keep
        self.labels = labels
        self.store = ValueStore()
        self.structures: dict[tuple, tuple[int, NodeTable]] = {}
        self._sources: dict[Any, list] = {}
        self.prefetched: dict[int, _Frozen] = {}  # lazy values of the graph being built

    def prefetch(self, order: list, pending: Any, backward: Any) -> dict[int, _Frozen]:
        """Summarize the lazy values of one record together (one compute), once."""
        if not self.prefetched:
            values = record_values(order, pending, backward)
            self.prefetched = summarize_lazy(values, self.keep, _Frozen.of)
        return self.prefetched

    def build(
        self,
        *,
        run: int,
        gid: int,
        kind: str,
        step: int,
        roots: list,
        order: list,
        pending: Any,
        backward: Any,
        timing: bool,
    ) -> Graph:
        """The record of the graph reachable from ``roots`` (``order`` = tpx.reachable)."""
        if lazy_record(roots, pending, backward):
            self.prefetch(order, pending, backward)
        try:
            return self._build(run, gid, kind, step, roots, order, pending, backward, timing)
        finally:
            self.prefetched = {}

    def _build(self, run, gid, kind, step, roots, order, pending, backward, timing) -> Graph:
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
        full = is_new
        tables = self._tables(raw, pending, ex, backward, index, full)
        if tables is None:  # a known structure with a NaN/Inf: keep it in full
            full = True
            tables = self._tables(raw, pending, ex, backward, index, full)
        return Graph(
            id=gid, run=run, step=step, kind=kind, structure=sid,
            detail="full" if full else "stats", nodes=nodes, roots=root_ids, tables=tables,
            peak_saved_bytes=_peak(raw, pending),
            backward_seconds=sum(e[2] for e in ex.values()) if timing else 0.0,
            values=self.store,
        )  # fmt: skip

    def _tables(
        self, raw: list, pending: Any, ex: dict, b: Any, index: dict, full: bool
    ) -> GraphTables | None:
        t = _Tables(self, full)
        rows, times, gout, consts = [], [], [], []
        for i, n in enumerate(raw):
            p = pending.get(n)
            leaf = n.__class__ is AccumulateGrad
            out = t.add(n.variable if leaf else (None if p is None else p.out or p.raw))
            e = ex.get(i)
            fwd = p.seconds if p is not None else 0.0
            if e is None:
                rows.append((out, -1, -1, -1))
                times.append((fwd, math.nan))
            else:
                released = e[4] if e[3] and p is not None and p.saved else -1
                rows.append((out, t.add(e[0]), e[4], released))
                times.append((fwd, e[2]))
            if full and not leaf:
                gins = e[1] if e is not None else ()
                for j in range(len(n.edges)):
                    gout.append(t.add(gins[j]) if j < len(gins) else -1)
                    consts.append(t.add(p.consts[j]) if p is not None else -1)
        if not full and not t.finite():
            return None
        accs = self._accumulations(b, index, t) if full else []
        summaries, previews = t.summaries()
        return GraphTables(
            summaries, previews, np.array(rows, np.int64).reshape(-1, 4),
            np.array(times, np.float64).reshape(-1, 2), np.array(gout, np.int64),
            np.array(consts, np.int64), np.array(accs, np.int64).reshape(-1, 4),
        )  # fmt: skip

    def _accumulations(self, b: Any, index: dict, t: _Tables) -> list[tuple]:
        if b is None:
            return []
        out = []
        for node, g in b.root_grads.items():
            if node in index:
                row = t.add(g)
                out.append((index[node], -1, row, row))
        for target, contribution, total, source in b.accs:
            if target in index:
                src = index.get(source, -1)
                out.append((index[target], src, t.add(contribution), t.add(total)))
        return out

    # -- static records -------------------------------------------------------------------------
    def _nodes(self, raw: list, index: dict, roots: set, pending: Any) -> NodeTable:
        cols: dict[str, list[Any]] = {f: [] for f in NODE_FIELDS}
        for i, n in enumerate(raw):
            if n.__class__ is AccumulateGrad:
                row = self._leaf(n)
            else:
                row = self._op(n, index, i in roots, pending.get(n))
            for f, v in zip(NODE_FIELDS, row):
                cols[f].append(v)
        overrides = [getattr(n, "overrides", None) for n in raw]
        if any(overrides):  # an optional column: only traces of override experiments have it
            cols["overrides"] = [None if o is None else dict(o) for o in overrides]
        return NodeTable(cols)

    def _leaf(self, n: Any) -> tuple:
        var = n.variable
        label = _leaf_label(var, self.labels)
        kind = "param" if label or type(var).__name__ == "Parameter" else "leaf"
        return (kind, None, "AccumulateGrad", label, {}, "", None, [], list(var.shape),
                _dtype_name(var.dtype), [])  # fmt: skip

    def _op(self, n: Any, index: dict, is_root: bool, p: Any) -> tuple:
        inputs = [
            [None if e is None else index[e], list(shape), _dtype_name(dtype)]
            for e, (shape, dtype) in zip(n.edges, n.in_meta)
        ]
        shape, dtype = n.out_meta
        saved = [[s[0], list(s[1]), s[2], s[3]] for s in (p.saved if p else ())]
        src = self._source(n)
        return (
            "loss" if is_root else "op", n.op.value, n.name, "", params_to_json(n.params),
            n.scope, src, inputs, list(shape), _dtype_name(dtype), saved,
        )  # fmt: skip

    def _source(self, n: Any) -> list | None:
        code = n.code
        if code is None:
            return None
        src = self._sources.get((code, n.lineno))
        if src is None:
            path = os.path.abspath(code.co_filename)
            if path.startswith(self.root + os.sep):
                path = os.path.relpath(path, self.root)
            src = self._sources[(code, n.lineno)] = [path, n.lineno, code.co_name]
        return list(src)


def _executed(b: Any, index: dict) -> dict[int, tuple]:
    if b is None:
        return {}
    out = {}
    for pos, (node, g, gins, seconds, freed) in enumerate(b.executed):
        i = index.get(node)
        if i is not None:
            out[i] = (g, gins, seconds, freed, pos)
    return out


def _peak(raw: list, pending: Any) -> int:
    seen: dict[int, int] = {}
    for n in raw:
        p = pending.get(n)
        if p is not None:
            for s in p.saved:
                seen[s[4]] = s[3]
    return sum(seen.values())


def _leaf_label(var: Any, labels: dict) -> str:
    """The label of a leaf: its name in ``params=`` (explicit wins), else its ``Tensor.name``
    (``nn.Module`` names its parameters ``model.0.weight`` when called), else ''."""
    found = labels.get(id(var))
    if found is not None:
        return found[0]
    return getattr(var, "name", None) or ""


def _node_key(n: Any, index: dict, labels: dict) -> tuple:
    if n.__class__ is AccumulateGrad:
        var = n.variable
        return (None, _leaf_label(var, labels), var.shape, var.dtype)
    edges = tuple(None if e is None else index[e] for e in n.edges)
    params = repr(n.params) if n.params else ""
    key = (n.op, n.scope, n.code, n.lineno, params, edges, n.in_meta, n.out_meta)
    overrides = n.overrides
    return key if overrides is None else (*key, tuple(sorted(overrides.items())))


_DTYPES: dict[int, tuple[Any, str]] = {}


def _dtype_name(dtype: Any) -> str:
    # NOTE: keyed by identity (hashing a NumPy dtype is slow); the entry keeps the dtype alive
    hit = _DTYPES.get(id(dtype))
    if hit is None:
        hit = _DTYPES[id(dtype)] = (dtype, "none" if dtype is None else dtype_name(dtype))
    return hit[1]


def params_to_json(params: dict[str, Any]) -> dict[str, Any]:
    """Op params as JSON values: tuples become lists, dtypes names, slices/Ellipsis/index
    slots the forms of P10's index-key JSON, non-finite floats strings.

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
