"""Turn the TPX nodes and events of one backward into frozen records (iterative, no recursion).

Structures (the static node records) are cached by a key made from the raw nodes, so steps of
a training loop with identical structure share one tuple of :class:`Node` records.
"""

from __future__ import annotations

import math
import os
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any

from tpx import AccumulateGrad
from tpx_inspect._batch_stats import BatchStore
from tpx_inspect._deferred import LeafSnapshot, leaf_label
from tpx_inspect._lazy import lazy_record, record_values, summarize_lazy
from tpx_inspect._params_json import params_to_json
from tpx_inspect._pending import CONSTS, OWNER, SAVED, NodeMap, _dtype_name, _Frozen, completed
from tpx_inspect._value_rows import value_tables
from tpx_inspect.records import (
    NODE_FIELDS,
    Graph,
    GraphTables,
    NodeTable,
)

_seq = attrgetter("seq")
_observed = attrgetter("observed")
_TEMPLATE_FIELDS = (("op", 1), ("name", 2), ("scope", 3), ("source", 4), ("shape", 6), ("dtype", 7))


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
        self._shapes: dict[tuple, list[int]] = {}  # NOTE: shared JSON shapes (read, never written)
        self._names: dict[Any, tuple[str, str]] = {}
        self._templates: dict[tuple, tuple] = {}
        self._template_ids: dict[tuple, int] = {}
        self.prefetched: dict[int, _Frozen] = {}  # lazy values of the graph being built
        # NOTE: the leaves of the graph being built as its backward left them (a deferred
        # build, see _deferred); a leaf not in it is read from its tensor
        self.leaves: dict[Any, LeafSnapshot] = {}

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
        leaves: dict | None = None,
    ) -> Graph:
        """The record of the graph reachable from ``roots`` (``order`` = tpx.reachable);
        ``leaves``: snapshots of its leaves (see ``_deferred``), else they are read now."""
        if lazy_record(roots, pending, backward):
            self.prefetch(order, pending, backward)
        self.leaves = leaves or {}
        try:
            return self._build(run, gid, kind, step, roots, order, pending, backward, timing)
        finally:
            self.prefetched = {}
            self.leaves = {}

    def _build(self, run, gid, kind, step, roots, order, pending, backward, timing) -> Graph:
        raw = sorted(order, key=_seq)
        index = {n: i for i, n in enumerate(raw)}
        pend = _pending_of(raw, pending)
        root_ids = tuple(sorted({index[r] for r in roots}))
        temps = list(map(self._template, raw))
        labels = self.labels
        keys = map(_node_key, raw, temps, repeat(index), repeat(labels), repeat(self.leaves))
        key = (root_ids, tuple(keys))
        known = self.structures.get(key)
        is_new = known is None
        if known is None:
            nodes = self._nodes(raw, temps, index, set(root_ids), pend)
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
        return value_tables(self, raw, pend, ex, b, index, full)

    # -- static records -------------------------------------------------------------------------
    def _template(self, n: Any) -> tuple | None:
        """What nodes of one op, metadata and code location share (None for a leaf):
        ``(id, op name, node name, scope, source, inputs' JSON metadata, shape, dtype)``,
        made once and shared; ``id`` numbers the distinct ones (by value) for structure keys."""
        if n.__class__ is AccumulateGrad:
            return None
        code = n.code
        k = (id(n.op), id(n.in_meta), id(n.out_meta), id(code), n.lineno, n.scope)
        hit = self._templates.get(k)
        # NOTE: keyed by identity (TPX shares the metadata tuples); the entry keeps them alive
        if hit is not None and hit[0] is n.in_meta and hit[1] is n.out_meta and hit[2] is code:
            return hit[3]
        return self._new_template(n, k)

    def _new_template(self, n: Any, k: tuple) -> tuple:
        if len(self._templates) > 65536:
            self._templates.clear()
        code = n.code
        if code is not None:
            _code_id(code, self._codes)
        value = (n.op, n.in_meta, n.out_meta, None if code is None else id(code), n.lineno, n.scope)
        tid = self._template_ids.get(value)
        if tid is None:  # NOTE: a counter, never reset: an id names one value for good
            tid = self._template_ids[value] = len(self._template_ids)
        op = n.op
        names = self._names.get(op)  # NOTE: an Enum's .value is a descriptor call: cached
        if names is None:
            names = self._names[op] = (op.value, n.name)
        shape, dtype = self._meta_json(n.out_meta, pair=True)
        made = (tid, names[0], names[1], n.scope, self._source(n), self._meta_json(n.in_meta),
                shape, dtype)  # fmt: skip
        self._templates[k] = (n.in_meta, n.out_meta, code, made)
        return made

    def _nodes(self, raw: list, temps: list, index: dict, roots: set, pend: list) -> NodeTable:
        n_nodes = len(raw)
        kinds: list = [None] * n_nodes
        labels: list = [""] * n_nodes
        params: list = [None] * n_nodes
        inputs: list = [None] * n_nodes
        saved: list = [None] * n_nodes
        static: list = [None] * n_nodes  # a template (see _template), or a leaf's likeness
        shapes = self._shapes
        # NOTE: one object for the nodes without params, as a loaded trace's runs share one
        # (saving finds runs of one object by identity: 100,000 distinct {} cost ~0.1 s)
        no_params: dict = {}
        for i, n in enumerate(raw):
            t = temps[i]
            if t is None:
                row = self._leaf(n)
                kinds[i], labels[i], params[i], inputs[i], saved[i] = (
                    row[0], row[3], row[4], row[7], row[10]
                )  # fmt: skip
                static[i] = (None, row[1], row[2], row[5], row[6], None, row[8], row[9])
                continue
            kinds[i] = "loss" if i in roots else "op"
            params[i] = params_to_json(n.params) if n.params else no_params
            inputs[i] = [
                [None if e is None else index[e], s, d] for e, (s, d) in zip(n.edges, t[5])
            ]
            p = pend[i]
            saved[i] = (
                [
                    # NOTE: not `shapes.get(...) or`: the JSON of shape () is [] (falsy)
                    [
                        s[0],
                        shapes[s[1]] if s[1] in shapes else _shape_json(shapes, s[1]),
                        s[2],
                        s[3],
                    ]
                    for s in p[SAVED]
                ]
                if p is not None
                else []
            )
            static[i] = t
        # NOTE: itemgetter per field, not zip(*rows): a call with 100,000 arguments is slow
        cols = {"kind": kinds, "label": labels, "params": params, "inputs": inputs, "saved": saved}
        for f, j in _TEMPLATE_FIELDS:
            cols[f] = list(map(itemgetter(j), static))
        cols = {f: cols[f] for f in NODE_FIELDS}
        overrides = [getattr(n, "overrides", None) for n in raw]
        if any(overrides):  # an optional column: only traces of override experiments have it
            cols["overrides"] = [None if o is None else dict(o) for o in overrides]
        return NodeTable(cols)

    def _leaf(self, n: Any) -> tuple:
        s = self.leaves.get(n)
        if s is None:
            var = n.variable
            s = LeafSnapshot(leaf_label(var, self.labels), type(var).__name__ == "Parameter",
                             None, var.shape, var.dtype)  # type: ignore[arg-type]  # fmt: skip
        kind = "param" if s.label or s.param else "leaf"
        return (kind, None, "AccumulateGrad", s.label, {}, "", None, [], list(s.shape),
                _dtype_name(s.dtype), [])  # fmt: skip

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
        cid = id(code)
        if self._codes.get(cid) is not code:
            _code_id(code, self._codes)
        key = (cid, n.lineno)
        src = self._sources.get(key)
        if src is None:
            path = os.path.abspath(code.co_filename)
            if path.startswith(self.root + os.sep):
                path = os.path.relpath(path, self.root)
            src = self._sources[key] = [path, n.lineno, code.co_name]
        return src


def _shape_json(shapes: dict[tuple, list[int]], shape: tuple) -> list[int]:
    if len(shapes) > 4096:
        shapes.clear()
    made = shapes[shape] = list(shape)
    return made


def _pending_of(raw: list, pending: Any) -> list:
    """``pending.get(n)`` for each node, read once, each record
    :func:`~tpx_inspect._pending.completed` and stored back (its saved metadata read once, the
    node's saved values then let go)."""
    if not isinstance(pending, NodeMap):
        return [completed(p) if p is not None else None for p in map(pending.get, raw)]
    token = pending.token
    out = list(map(_observed, raw))  # NOTE: the records in the nodes' slots, read in C
    for i, p in enumerate(out):
        # NOTE: NodeMap.get written out for a record in the slot
        if p is None or p.__class__ is not tuple or len(p) < CONSTS or p[OWNER] is not token:
            p = out[i] = pending.get(raw[i])
            if p is None:
                continue
            if p[SAVED] is None:
                p = out[i] = completed(p)
                pending[raw[i]] = p
        elif p[SAVED] is None:
            p = out[i] = raw[i].observed = completed(p)
    return out


def _executed(b: Any, index: dict) -> dict[int, tuple]:
    """``{node id: (grad_output, grad_inputs, seconds, freed, position among the runs)}``."""
    if b is None:
        return {}
    out = {}
    gins = b.gins
    # NOTE: BackwardRecords.runs written out: six items per node run, read by one zip
    ex = iter(b.executed)
    for pos, (node, g, lo, hi, seconds, freed) in enumerate(zip(ex, ex, ex, ex, ex, ex)):
        i = index.get(node)
        if i is not None:
            out[i] = (g, gins[lo:hi], seconds, freed, pos)
    return out


def _peak(pend: list) -> int:
    seen: dict[int, int] = {}
    for p in pend:
        if p is not None:
            for s in p[SAVED]:
                seen[s[4]] = s[3]
    return sum(seen.values())


def _code_id(code: Any, codes: dict[int, Any]) -> int:
    """``id(code)``, with ``code`` kept alive in ``codes`` (its id then names it alone)."""
    if codes.get(id(code)) is not code:
        codes[id(code)] = code
    return id(code)


def _node_key(n: Any, t: tuple | None, index: dict, labels: dict, leaves: dict) -> tuple:
    if t is None:
        s = leaves.get(n) if leaves else None
        if s is not None:
            return (None, s.label, s.shape, s.dtype)
        var = n.variable
        return (None, leaf_label(var, labels), var.shape, var.dtype)
    edges = tuple([None if e is None else index[e] for e in n.edges])
    # NOTE: the template id stands for the op, metadata, scope and code location
    key = (t[0], repr(n.params) if n.params else "", edges)
    overrides = n.overrides
    return key if overrides is None else (*key, tuple(sorted(overrides.items())))
