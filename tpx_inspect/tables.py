"""Array-backed storage of a trace: node tables as columns, per-step numbers as arrays.

A graph's records are read from these on access (:class:`NodeTable`, :class:`StatsView`,
:class:`AccumulationsView`), so loading a 100,000-node trace builds no per-node objects.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpx_inspect.nodes import NODE_COLUMNS_DECLARED, Accumulation, Node, NodeStats
from tpx_inspect.summary import STAT_FIELDS, TensorSummary, summary_from_row

NODE_FIELDS = tuple(f.name for f in NODE_COLUMNS_DECLARED if not f.metadata["column"][2])
"""The columns of a structure's node table, as the trace JSON stores them (the fields of
:class:`~tpx_inspect.nodes.Node` declared with ``column()``)."""

OPTIONAL_NODE_FIELDS = tuple(f.name for f in NODE_COLUMNS_DECLARED if f.metadata["column"][2])
"""Columns a structure's node table may add (older traces lack them), written only when a
node has a value: ``overrides`` holds, per node, None or ``{"rule": "module:function",
"kernel": ...}`` naming the overridden rule and kernel that computed it."""

_ENCODE = tuple((f.name, f.metadata["column"][0]) for f in NODE_COLUMNS_DECLARED)
_DECODE = tuple(
    (f.name, f.metadata["column"][1], f.metadata["column"][2], f.default)
    for f in NODE_COLUMNS_DECLARED
)


class NodeTable(Sequence[Node]):
    """The nodes of one structure, kept as JSON-ready columns and built into :class:`Node`
    records on access (so loading a 100,000-node graph does not build 100,000 records).

    >>> t = NodeTable.from_nodes([Node(0, "leaf", None, "AccumulateGrad", "", {}, "", None, (),
    ...                                (2,), "float32")])
    >>> t[0].shape, t.columns["shape"]
    ((2,), [[2]])
    """

    def __init__(self, columns: dict[str, list[Any]]) -> None:
        self.columns = columns
        self._cache: list[Node | None] = [None] * len(columns["kind"])

    @classmethod
    def from_nodes(cls, nodes: Sequence[Node]) -> NodeTable:
        """The table of ``nodes`` (ids must be 0..n-1 in order)."""
        cols: dict[str, list[Any]] = {}
        for name, encode in _ENCODE:
            values = [getattr(n, name) for n in nodes]
            if name in OPTIONAL_NODE_FIELDS and not any(values):
                continue
            cols[name] = values if encode is None else [encode(v) for v in values]
        table = cls(cols)
        table._cache = list(nodes)
        return table

    def __len__(self) -> int:
        return len(self._cache)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        node = self._cache[i]
        if node is None:
            node = self._cache[i] = self._build(i if i >= 0 else i + len(self))
        return node

    def _build(self, i: int) -> Node:
        c = self.columns
        values = []
        for name, decode, optional, default in _DECODE:
            if optional and name not in c:
                values.append(default)
                continue
            v = c[name][i]
            values.append(v if decode is None else decode(v))
        return Node(i, *values)

    def input_counts(self) -> list[int]:
        """The number of inputs of each node, without building records."""
        return [len(x) for x in self.columns["inputs"]]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeTable):
            return self.columns == other.columns
        if isinstance(other, tuple | list):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<NodeTable of {len(self)} nodes>"


SUMMARY_COLUMNS = (*STAT_FIELDS, "value", "preview_len")
"""Columns of a summary row; ``value`` is -1 when no full value was kept."""

NODE_COLUMNS = ("output", "grad", "order", "released")
"""Columns of the per-node int table: summary rows of output and gradient, backward position,
position at which saved values were released; -1 stands for None."""

TIME_COLUMNS = ("forward_seconds", "backward_seconds")
"""Columns of the per-node float table; NaN stands for None."""


@dataclass(frozen=True, eq=False)
class GraphTables:
    """One graph's measurements as arrays (what the sidecar stores; read through NodeStats).

    ``summaries`` (rows x SUMMARY_COLUMNS) and ``previews`` (rows x PREVIEW, or no rows) hold
    every tensor summary; ``nodes`` and ``times`` have one row per node; ``grads_out`` and
    ``consts`` one summary row (or -1) per input edge, in node then argument order (empty for
    ``stats`` detail); ``accumulations`` rows are (target, source or -1, contribution row,
    total row). A summary's shape and dtype come from the structure.
    """

    summaries: np.ndarray
    previews: np.ndarray
    nodes: np.ndarray
    times: np.ndarray
    grads_out: np.ndarray
    consts: np.ndarray
    accumulations: np.ndarray

    def summary(self, row: int, shape: tuple[int, ...], dtype: str) -> TensorSummary | None:
        """The summary in ``row`` (None for -1)."""
        if row < 0:
            return None
        r = self.summaries[row].tolist()
        n = int(r[9])
        head = tuple(self.previews[row, :n].tolist()) if n else ()
        value = None if r[8] < 0 else int(r[8])
        return summary_from_row(shape, dtype, r[:8], head, value)


class StatsView(Sequence[NodeStats]):
    """The :class:`NodeStats` of a graph, built from its tables on access."""

    def __init__(self, nodes: Sequence[Node], tables: GraphTables, detail: str) -> None:
        self._nodes = nodes
        self._t = tables
        self._edge_start: list[int] | None = None
        self._full = detail == "full"

    def __len__(self) -> int:
        return len(self._nodes)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        n, t = self._nodes[i], self._t
        out_row, grad_row, order, released = t.nodes[i].tolist()
        fwd, bwd = t.times[i].tolist()
        outs: tuple = ()
        consts: tuple = ()
        if self._full and len(t.grads_out):
            k = self._edges()[i]
            outs = self._edge_summaries(t.grads_out, k, n)
            consts = self._edge_summaries(t.consts, k, n)
        return NodeStats(
            t.summary(out_row, n.shape, n.dtype), t.summary(grad_row, n.shape, n.dtype), outs,
            consts, fwd, None if math.isnan(bwd) else bwd, None if order < 0 else order,
            None if released < 0 else released,
        )  # fmt: skip

    def _edge_summaries(self, rows: np.ndarray, k: int, n: Node) -> tuple:
        return tuple(
            self._t.summary(int(rows[k + j]), e.shape, e.dtype) for j, e in enumerate(n.inputs)
        )

    def _edges(self) -> list[int]:
        if self._edge_start is None:
            nodes = self._nodes
            counts = (
                nodes.input_counts()
                if isinstance(nodes, NodeTable)
                else [len(n.inputs) for n in nodes]
            )
            starts, k = [], 0
            for c in counts:
                starts.append(k)
                k += c
            self._edge_start = starts
        return self._edge_start


class AccumulationsView(Sequence[Accumulation]):
    """The :class:`Accumulation` events of a graph, built from its table on access."""

    def __init__(self, nodes: Sequence[Node], tables: GraphTables) -> None:
        self._nodes = nodes
        self._t = tables

    def __len__(self) -> int:
        return len(self._t.accumulations)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        target, source, c, tot = self._t.accumulations[i].tolist()
        n = self._nodes[target]
        contribution = self._t.summary(c, n.shape, n.dtype)
        total = self._t.summary(tot, n.shape, n.dtype)
        return Accumulation(target, None if source < 0 else source, contribution, total)


class ValueStore:
    """Full tensor values kept by the value policy, addressed by small integer ids.

    >>> store = ValueStore()
    >>> i = store.add(np.arange(3.0))
    >>> store.get(i).tolist(), len(store)
    ([0.0, 1.0, 2.0], 1)
    """

    def __init__(self, arrays: list[np.ndarray] | None = None) -> None:
        self._arrays: list[np.ndarray] = arrays if arrays is not None else []

    def add(self, a: np.ndarray) -> int:
        """Keep a read-only copy of ``a``; returns its id."""
        c = np.array(a, copy=True)
        c.flags.writeable = False
        self._arrays.append(c)
        return len(self._arrays) - 1

    def get(self, i: int) -> np.ndarray:
        """The value with id ``i`` (read-only)."""
        return self._arrays[i]

    def __len__(self) -> int:
        return len(self._arrays)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self._arrays)


class PackedValues(ValueStore):
    """The values of a loaded trace: views of a few flat buffers (one per dtype), each made
    on first access. A 100,000-node trace keeps ~300,000 small values with ``values="small"``:
    making every view while loading took longer than the rest of the load.

    ``index`` has a row (dtype code, offset, size, ndim) per value, ``shapes`` holds the
    values' dimensions one after another, ``starts[i]`` where value ``i``'s begin; the loader
    checked all of them against the buffers before (``_value_index``).

    >>> s = PackedValues([np.arange(5.0)], np.array([[0, 0, 2, 1], [0, 2, 3, 2]]),
    ...                  np.array([2, 3, 1]), np.array([0, 1]))
    >>> s.get(1).shape, s.get(0).tolist(), len(s), s.get(1).flags.writeable
    ((3, 1), [0.0, 1.0], 2, False)
    """

    def __init__(
        self, bufs: list[np.ndarray], index: np.ndarray, shapes: np.ndarray, starts: np.ndarray
    ) -> None:
        super().__init__([None] * len(index))  # type: ignore[list-item]
        self._bufs, self._index, self._shapes, self._starts = bufs, index, shapes, starts

    def get(self, i: int) -> np.ndarray:
        """The value with id ``i`` (read-only), made on first access."""
        a = self._arrays[i]
        if a is None:
            code, off, size, ndim = self._index[i].tolist()
            start = int(self._starts[i])
            a = self._bufs[code][off : off + size].reshape(self._shapes[start : start + ndim])
            a.flags.writeable = False
            self._arrays[i] = a
        return a

    def __iter__(self) -> Iterator[np.ndarray]:
        return map(self.get, range(len(self)))

    def packed(self) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """The buffers, index and shapes the values are views of (a save may write them as
        they are)."""
        return self._bufs, self._index, self._shapes
