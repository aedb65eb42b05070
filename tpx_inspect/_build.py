"""Turn the TPX nodes and events of one backward into frozen records (iterative, no recursion).

Structures (the static node records) are cached by a key made from the raw nodes, so steps of
a training loop with identical structure share one tuple of :class:`Node` records.
"""

from __future__ import annotations

import math
import os
import weakref
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from tpx import AccumulateGrad
from tpx_inspect._batch_stats import BatchStore, fill_rows
from tpx_inspect._lazy import lazy_record, record_values, summarize_lazy
from tpx_inspect._params_json import params_to_json
from tpx_inspect._pending import _dtype_name, _Frozen
from tpx_inspect.records import (
    NODE_FIELDS,
    SUMMARY_COLUMNS,
    Graph,
    GraphTables,
    NodeTable,
)
from tpx_inspect.summary import PREVIEW, to_numpy

_seq = attrgetter("seq")


class _Tables:
    """Collects the summary rows of one graph; a value summarized twice gets one row. Rows
    are made at the end (:meth:`summaries`), the small float values all together."""

    def __init__(self, builder: GraphBuilder, full: bool) -> None:
        self.builder = builder
        self.full = full
        self.arrays: list[np.ndarray | None] = []  # None: the row is known (``done``)
        self.vids: list[int] = []
        self.done: dict[int, tuple[list, tuple]] = {}
        self.memo: dict[int, int] = {}
        self._made: tuple[np.ndarray, np.ndarray] | None = None
        # NOTE: read once: add() runs about three times per node
        self._prefetched = builder.prefetched
        self._limit = builder.limit
        self._store = builder.store

    def add(self, x: Any, own: bool = False) -> int:
        """The row of ``x``; ``own``: an ndarray ``x`` is the capture's private copy (see
        ``_pending.freeze_value``), kept without copying it again."""
        if x is None:
            return -1
        key = id(x)
        row = self.memo.get(key)
        if row is not None:
            return row
        row = self.memo[key] = len(self.vids)
        if self._prefetched:
            x = self._prefetched.get(key, x)
        limit = self._limit
        if own and x.__class__ is np.ndarray:
            self.arrays.append(x)
            kept = self.full and (limit < 0 or x.size <= limit)  # NOTE: GraphBuilder.keep
            self.vids.append(self._store.adopt(x) if kept else -1)
        elif x.__class__ is _Frozen:
            self.arrays.append(None)
            self.done[row] = (x._row, x.head)
            self.vids.append(self._store.adopt(x.value) if self.full and x.kept else -1)
        else:
            a = to_numpy(x)
            self.arrays.append(a)
            kept = self.full and (limit < 0 or a.size <= limit)
            self.vids.append(self._store.reserve(a) if kept else -1)
        return row

    def finite(self) -> bool:
        table = self.summaries()[0]
        return not table[:, 5:7].any()

    def summaries(self) -> tuple[np.ndarray, np.ndarray]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def _make(self) -> tuple[np.ndarray, np.ndarray]:
        table = np.zeros((len(self.vids), len(SUMMARY_COLUMNS)), np.float64)
        table[:, 8] = self.vids
        self.builder.store.flush()
        if not self.builder.stats:  # NOTE: the values only (see Capture's values="raw")
            table[:, :8] = math.nan
            return table, np.zeros((0, PREVIEW))
        previews = np.full((len(self.vids), PREVIEW), math.nan) if self.full else None
        fill_rows(self.arrays, table, previews)
        for i, (row, head) in self.done.items():
            table[i, :8] = row
            if previews is not None:
                previews[i, : len(head)] = head
                table[i, 9] = len(head)
        return table, previews if previews is not None else np.zeros((0, PREVIEW))


class GraphBuilder:
    """Builds :class:`Graph` records for one capture; owns its structures and value store."""

    def __init__(self, root: str, limit: int, labels: dict, stats: bool = True) -> None:
        self.root = root
        self.limit = limit  # values of up to this many elements are kept (-1: all)
        self.stats = stats  # False: no statistics or previews, every graph in full
        self.labels = labels
        self.store = BatchStore()
        self.structures: dict[tuple, tuple[int, NodeTable]] = {}
        self._sources: dict[tuple[int, int], list] = {}
        # NOTE: code objects by id, kept alive here so that an id is never reused: keys and
        # caches use the id (hashing a code object hashes its contents, ~1.5 us)
        self._codes: dict[int, Any] = {}
        self._metas: dict[int, tuple] = {}
        self._names: dict[Any, tuple[str, str]] = {}
        self.prefetched: dict[int, _Frozen] = {}  # lazy values of the graph being built

    def keep(self, a: Any) -> bool:
        """Whether the full value ``a`` is kept (the size from the shape: a lazy tensor is
        not computed to be measured)."""
        return self.limit < 0 or math.prod(a.shape) <= self.limit

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
        pend = _pending_of(raw, pending)
        root_ids = tuple(sorted({index[r] for r in roots}))
        key = (root_ids, tuple(_node_key(n, index, self.labels, self._codes) for n in raw))
        known = self.structures.get(key)
        is_new = known is None
        if known is None:
            nodes = self._nodes(raw, index, set(root_ids), pend)
            known = self.structures[key] = (len(self.structures), nodes)
        sid, nodes = known
        ex = _executed(backward, index)
        full = is_new or not self.stats
        tables = self._tables(raw, pend, ex, backward, index, full)
        if tables is None:  # a known structure with a NaN/Inf: keep it in full
            full = True
            tables = self._tables(raw, pend, ex, backward, index, full)
        return Graph(
            id=gid, run=run, step=step, kind=kind, structure=sid,
            detail="full" if full else "stats", nodes=nodes, roots=root_ids, tables=tables,
            peak_saved_bytes=_peak(pend),
            backward_seconds=sum(e[2] for e in ex.values()) if timing else 0.0,
            values=self.store,
        )  # fmt: skip

    def _tables(
        self, raw: list, pend: list, ex: dict, b: Any, index: dict, full: bool
    ) -> GraphTables | None:
        t = _Tables(self, full)
        add, hit = t.add, t.memo.get
        # NOTE: rows and times as flat lists (4 and 2 items per node): one NumPy conversion of
        # a flat list costs half that of a list of tuples
        rows: list[int] = []
        times: list[float] = []
        gout: list[int] = []
        consts: list[int] = []
        # NOTE: `-1 if x is None else hit(id(x))`, then add() only for a value not seen yet:
        # most values of a backward are seen twice or more (a gradient is a rule's output, a
        # contribution, a total and the next node's input gradient)
        for i, n in enumerate(raw):
            p = pend[i]
            leaf = n.__class__ is AccumulateGrad
            if leaf or p is None:
                x, own = (n.variable if leaf else None), False
            else:  # NOTE: PendingNode.value written out (a property call per node)
                x = p.out
                own = x is not None
                if not own:
                    x = p.raw
            out = -1 if x is None else hit(id(x))
            if out is None:
                out = add(x, own)
            e = ex.get(i)
            fwd = p.seconds if p is not None else 0.0
            if e is None:
                rows += (out, -1, -1, -1)
                times += (fwd, math.nan)
            else:
                released = e[4] if e[3] and p is not None and p.saved else -1
                x = e[0]
                g = -1 if x is None else hit(id(x))
                rows += (out, add(x) if g is None else g, e[4], released)
                times += (fwd, e[2])
            if full and not leaf:
                gins = e[1] if e is not None else ()
                k = len(gins)
                pc = p.consts if p is not None else None
                for j in range(len(n.edges)):
                    x = gins[j] if j < k else None
                    r = -1 if x is None else hit(id(x))
                    gout.append(add(x) if r is None else r)
                    x = pc[j] if pc is not None else None
                    r = -1 if x is None else hit(id(x))
                    consts.append(add(x, own) if r is None else r)
        if not full and not t.finite():
            return None
        accs = self._accumulations(b, index, t) if full else []
        summaries, previews = t.summaries()
        return GraphTables(
            summaries, previews, np.array(rows, np.int64).reshape(-1, 4),
            np.array(times, np.float64).reshape(-1, 2), np.array(gout, np.int64),
            np.array(consts, np.int64), np.array(accs, np.int64).reshape(-1, 4),
        )  # fmt: skip

    def _accumulations(self, b: Any, index: dict, t: _Tables) -> list[int]:
        """The accumulation rows, flat (4 items per row)."""
        if b is None:
            return []
        out: list[int] = []
        for node, g in b.root_grads.items():
            if node in index:
                row = t.add(g)
                out += (index[node], -1, row, row)
        add, get, hit = t.add, index.get, t.memo.get
        for target, contribution, total, source in b.accs:
            i = get(target)
            if i is not None:
                c = hit(id(contribution)) if contribution is not None else -1
                c = add(contribution) if c is None else c
                s = hit(id(total)) if total is not None else -1
                out += (i, get(source, -1), c, add(total) if s is None else s)
        return out

    # -- static records -------------------------------------------------------------------------
    def _nodes(self, raw: list, index: dict, roots: set, pend: list) -> NodeTable:
        rows = [
            self._leaf(n) if n.__class__ is AccumulateGrad else self._op(n, index, i in roots, p)
            for i, (n, p) in enumerate(zip(raw, pend))
        ]
        # NOTE: itemgetter per field, not zip(*rows): a call with 100,000 arguments is slow
        cols = {f: list(map(itemgetter(j), rows)) for j, f in enumerate(NODE_FIELDS)}
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
        # NOTE: the JSON forms of the shared shape/dtype metadata and of the op's name are
        # made once and shared by the rows (the columns are read, never written)
        ins = self._meta_json(n.in_meta)
        shape, dtype = self._meta_json(n.out_meta, pair=True)
        inputs = [[None if e is None else index[e], s, d] for e, (s, d) in zip(n.edges, ins)]
        saved = [[s[0], list(s[1]), s[2], s[3]] for s in p.saved] if p is not None else []
        op = n.op
        names = self._names.get(op)  # NOTE: an Enum's .value is a descriptor call: cached
        if names is None:
            names = self._names[op] = (op.value, n.name)
        return (
            "loss" if is_root else "op", names[0], names[1], "",
            params_to_json(n.params) if n.params else {}, n.scope, self._source(n), inputs,
            shape, dtype, saved,
        )  # fmt: skip

    def _meta_json(self, meta: tuple, pair: bool = False) -> Any:
        """``[(list(shape), dtype name), ...]`` of a node's ``(shape, dtype)`` pairs, cached
        by identity (TPX shares the metadata tuples between nodes; the entry keeps one alive,
        so its id is not reused)."""
        hit = self._metas.get(id(meta))
        if hit is None or hit[0] is not meta:
            if len(self._metas) > 4096:
                self._metas.clear()
            pairs = (meta,) if pair else meta
            made = [(list(s), _dtype_name(d)) for s, d in pairs]
            hit = self._metas[id(meta)] = (meta, made[0] if pair else made)
        return hit[1]

    def _source(self, n: Any) -> list | None:
        code = n.code
        if code is None:
            return None
        key = (_code_id(code, self._codes), n.lineno)
        src = self._sources.get(key)
        if src is None:
            path = os.path.abspath(code.co_filename)
            if path.startswith(self.root + os.sep):
                path = os.path.relpath(path, self.root)
            src = self._sources[key] = [path, n.lineno, code.co_name]
        return src


def _pending_of(raw: list, pending: Any) -> list:
    """``pending.get(n)`` for each node, read once (a WeakKeyDictionary lookup is slow)."""
    if not isinstance(pending, weakref.WeakKeyDictionary):
        return [pending.get(n) for n in raw]
    data, ref = pending.data, weakref.ref
    return [data.get(ref(n)) for n in raw]


def _executed(b: Any, index: dict) -> dict[int, tuple]:
    if b is None:
        return {}
    out = {}
    for pos, (node, g, gins, seconds, freed) in enumerate(b.executed):
        i = index.get(node)
        if i is not None:
            out[i] = (g, gins, seconds, freed, pos)
    return out


def _peak(pend: list) -> int:
    seen: dict[int, int] = {}
    for p in pend:
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


def _code_id(code: Any, codes: dict[int, Any]) -> int:
    """``id(code)``, with ``code`` kept alive in ``codes`` (its id then names it alone)."""
    if codes.get(id(code)) is not code:
        codes[id(code)] = code
    return id(code)


def _node_key(n: Any, index: dict, labels: dict, codes: dict[int, Any]) -> tuple:
    if n.__class__ is AccumulateGrad:
        var = n.variable
        return (None, _leaf_label(var, labels), var.shape, var.dtype)
    edges = tuple([None if e is None else index[e] for e in n.edges])
    params = repr(n.params) if n.params else ""
    code = n.code
    code = None if code is None else _code_id(code, codes)
    key = (n.op, n.scope, code, n.lineno, params, edges, n.in_meta, n.out_meta)
    overrides = n.overrides
    return key if overrides is None else (*key, tuple(sorted(overrides.items())))
