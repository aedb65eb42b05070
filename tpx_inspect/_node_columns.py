"""The static columns of one graph's nodes, read from the TPX nodes at once.

A graph record's node table (:class:`~tpx_inspect.records.NodeTable`) and the key under which
its structure is cached are made from a few attributes of every node. They are read here
column by column with C-level maps (``attrgetter``, ``map``, ``zip``), and what nodes of one
op, metadata and code location share (a template, see ``GraphBuilder._template``) is made
once per distinct template, so a 100,000-node chain costs a few list operations per node.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from tpx import AccumulateGrad
from tpx_inspect._params_json import params_to_json

_edges, _params = attrgetter("edges"), attrgetter("params")
_overrides = attrgetter("overrides")
_tid, _in_json, _0, _1, _2, _3 = itemgetter(0), itemgetter(5), *map(itemgetter, range(4))
_SAVED = itemgetter(3)  # NOTE: _pending.SAVED
_TEMPLATE_FIELDS = (("op", 1), ("name", 2), ("scope", 3), ("source", 4), ("shape", 6), ("dtype", 7))


class NodeColumns:
    """The nodes of one graph (``raw``, in id order) read as columns: which are leaves, each
    other node's template (``templates(nodes)``: one per node), input edges and params.

    >>> import tpx as tp
    >>> x = tp.ones(2, requires_grad=True); y = (x * 2).sum()
    >>> raw = sorted(tp.reachable([y.grad_fn]), key=lambda n: n.seq)
    >>> c = NodeColumns(raw, {n: i for i, n in enumerate(raw)}, lambda g: [(7,)] * len(g))
    >>> c.leaves, c.nodes.tolist(), c.sources
    ([0], [1, 2], [0, None, 1])
    """

    def __init__(self, raw: list, index: dict, templates: Callable[[list], list]) -> None:
        n = len(raw)
        self.raw = raw
        leaf = np.fromiter(map(id, map(type, raw)), np.int64, n) == id(AccumulateGrad)
        self.leaves: list[int] = np.flatnonzero(leaf).tolist()
        self.nodes = np.flatnonzero(~leaf)
        grads = list(map(raw.__getitem__, self.nodes.tolist()))
        self.grads = grads
        self.temps: list = templates(grads)
        edges = list(map(_edges, grads))
        self.k = np.fromiter(map(len, edges), np.int64, len(grads))
        ends = np.cumsum(self.k)
        self.spans = list(map(slice, (ends - self.k).tolist(), ends.tolist()))
        flat = list(chain.from_iterable(edges))
        self.sources: list[int | None] = list(map(index.get, flat))  # None: no node
        self._src = np.fromiter(map(index.get, flat, repeat(-1)), np.int64, len(flat))
        self.params: list = list(map(_params, grads))
        self.overrides: list = list(map(_overrides, grads))

    def key(self, root_ids: tuple, leaf_key: Callable[[Any], tuple]) -> tuple:
        """What two graphs of one structure share: the roots, each node's template id, input
        edges, params and overrides, each leaf's ``leaf_key``."""
        tids = np.fromiter(map(_tid, self.temps), np.int64, len(self.temps))
        with_params = tuple(
            (j, repr(self.params[j]))
            for j in np.flatnonzero(np.fromiter(map(bool, self.params), bool)).tolist()
        )
        overrides = ()
        if any(self.overrides):
            overrides = tuple(
                (j, tuple(sorted(o.items()))) for j, o in enumerate(self.overrides) if o
            )
        leaves = tuple((i, leaf_key(self.raw[i])) for i in self.leaves)
        return (
            root_ids, self.nodes.tobytes(), tids.tobytes(), self.k.tobytes(), self._src.tobytes(),
            with_params, overrides, leaves,
        )  # fmt: skip

    def columns(self, roots: set, pend: list, leaf_row: Callable, shapes: dict) -> dict:
        """The node table's columns (see ``NODE_FIELDS``); ``leaf_row(node)`` a leaf's row
        (see ``GraphBuilder._leaf``), ``shapes`` the builder's shared JSON shapes."""
        n, at = len(self.raw), self.nodes
        # NOTE: one object for the nodes without params, as a loaded trace's runs share one
        # (saving finds runs of one object by identity: 100,000 distinct {} cost ~0.1 s)
        no_params: dict = {}
        params = [params_to_json(p) if p else no_params for p in self.params]
        cols = {
            "kind": _scatter(n, at, ["op"] * len(at)),
            "label": [""] * n,
            "params": _scatter(n, at, params),
            "inputs": _scatter(n, at, self._inputs()),
            "saved": _scatter(n, at, self._saved(pend, shapes)),
        }
        for f, j in _TEMPLATE_FIELDS:
            cols[f] = _scatter(n, at, list(map(itemgetter(j), self.temps)))
        for i in roots:
            if cols["kind"][i] == "op":
                cols["kind"][i] = "loss"
        for i in self.leaves:
            row = leaf_row(self.raw[i])
            for f, v in zip(_LEAF_FIELDS, row):
                if f is not None:
                    cols[f][i] = v
        return cols

    def _inputs(self) -> list:
        """Per node, ``[source node id or None, shape, dtype]`` per input edge."""
        metas = list(map(_in_json, self.temps))
        counts = np.fromiter(map(len, metas), np.int64, len(metas))
        if not np.array_equal(counts, self.k):  # NOTE: zip's shorter side, node by node
            src = iter(self.sources)
            return [
                [[next(src), s, d] for (s, d), _ in zip(m, range(k))] for m, k in
                zip(metas, self.k.tolist())
            ]  # fmt: skip
        sd = list(chain.from_iterable(metas))
        rows = list(map(list, zip(self.sources, map(_0, sd), map(_1, sd))))
        return list(map(rows.__getitem__, self.spans))

    def _saved(self, pend: list, shapes: dict) -> list:
        """Per node, ``[slot, shape, dtype, bytes]`` per saved value (see ``saved_meta``)."""
        recs = list(map(pend.__getitem__, self.nodes.tolist()))
        metas = [() if p is None else p[3] for p in recs]  # NOTE: _pending.SAVED
        counts = np.fromiter(map(len, metas), np.int64, len(metas))
        flat = list(chain.from_iterable(metas))
        get = shapes.get
        shape = [get(s) for s in map(_1, flat)]
        for j in [j for j, s in enumerate(shape) if s is None]:
            shape[j] = shaped(shapes, flat[j][1])
        rows = list(map(list, zip(map(_0, flat), shape, map(_2, flat), map(_3, flat))))
        ends = np.cumsum(counts)
        return list(map(rows.__getitem__, map(slice, (ends - counts).tolist(), ends.tolist())))


# NOTE: GraphBuilder._leaf's row: kind, op, name, label, params, scope, source, inputs, shape,
# dtype, saved
_LEAF_FIELDS = (
    "kind", "op", "name", "label", "params", "scope", "source", "inputs", "shape", "dtype",
    "saved",
)  # fmt: skip


def shaped(shapes: dict[tuple, list[int]], shape: tuple) -> list[int]:
    """The JSON list of ``shape``, shared by the nodes (read, never written)."""
    found = shapes.get(shape)
    if found is None:
        if len(shapes) > 4096:
            shapes.clear()
        found = shapes[shape] = list(shape)
    return found


def _scatter(n: int, at: np.ndarray, values: list) -> list:
    """A list of ``n`` items: ``values`` at positions ``at``, None elsewhere."""
    if len(at) == n:
        return values
    out = np.full(n, None, object)
    out[at] = np.fromiter(values, object, len(values))
    return out.tolist()
