"""Trace records and the reading API (``tpx_inspect.records``; ``tpx_inspect.trace`` is the
function that captures one call): runs, graphs, nodes, gradients, backward order, lookups.

A :class:`Trace` holds :class:`Run` s (one per ``capture``); a run holds the :class:`Graph` s it
kept. A graph's :class:`Node` s are the static structure (shared by every graph of identical
structure); its :class:`NodeStats` hold what one step measured (summaries, times, order).
Node ids are small integers in topological order: every input has a smaller id than its user.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from tpx_inspect import check_view
from tpx_inspect._util import paused_gc
from tpx_inspect.check_view import NO_LIVE, BackwardRecord, LiveInfo, NodeRecord
from tpx_inspect.nodes import (
    KINDS,
    Accumulation,
    Edge,
    ErrorInfo,
    Node,
    NodeStats,
    NodeValues,
    Saved,
    Source,
)
from tpx_inspect.summary import TensorSummary
from tpx_inspect.tables import (
    NODE_COLUMNS,
    NODE_FIELDS,
    SUMMARY_COLUMNS,
    TIME_COLUMNS,
    AccumulationsView,
    GraphTables,
    NodeTable,
    StatsView,
    ValueStore,
)

__all__ = [
    "KINDS", "NODE_COLUMNS", "NODE_FIELDS", "SUMMARY_COLUMNS", "TIME_COLUMNS", "Accumulation",
    "AccumulationsView", "BackwardRecord", "Edge", "ErrorInfo", "Graph", "GraphTables",
    "LiveInfo", "Node", "NodeRecord", "NodeStats", "NodeTable", "NodeValues", "Run", "Saved",
    "Source", "StatsView", "Trace", "ValueStore",
]  # fmt: skip


@dataclass(frozen=True, eq=False)
class Graph:
    """One recorded graph: its nodes (topological ids), roots and one step's measurements.

    ``kind`` is ``backward`` (a backward ran), ``roots`` (captured with ``cap.add``) or
    ``partial`` (recorded when an error ended the run before any backward used it).
    ``detail`` is ``full`` (previews, values, accumulations, gradients per input) or ``stats``
    (a later step of an already stored structure: per-node statistics only). ``stats``,
    ``order`` and ``accumulations`` are read from ``tables``. The checks read the same graph
    through :meth:`replay_node` and :attr:`backwards` (full values); ``live`` holds what a live
    recording adds to it (:class:`~tpx_inspect.check_view.LiveInfo`).
    """

    id: int
    run: int
    step: int
    kind: str
    structure: int
    detail: str
    nodes: Sequence[Node]
    roots: tuple[int, ...]
    tables: GraphTables = field(repr=False)
    peak_saved_bytes: int = 0
    backward_seconds: float = 0.0
    values: ValueStore = field(default_factory=ValueStore, repr=False)
    live: LiveInfo = field(default=NO_LIVE, repr=False)

    @cached_property
    def stats(self) -> Sequence[NodeStats]:
        """What this step measured at each node, by node id."""
        return StatsView(self.nodes, self.tables, self.detail)

    @cached_property
    def order(self) -> tuple[int, ...]:
        """Node ids in the order backward ran them."""
        pos = self.tables.nodes[:, 2]
        ran = np.flatnonzero(pos >= 0)
        return tuple(ran[np.argsort(pos[ran], kind="stable")].tolist())

    @cached_property
    def accumulations(self) -> Sequence[Accumulation]:
        """Which contributions were summed into which gradient, in engine order."""
        return AccumulationsView(self.nodes, self.tables)

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, i: int) -> Node:
        """The node with id ``i``."""
        self._check_id(i)
        return self.nodes[i]

    def _check_id(self, i: int) -> None:
        if not 0 <= i < len(self.nodes):
            raise KeyError(f"graph {self.id} has no node {i} (ids 0..{len(self.nodes) - 1})")

    @cached_property
    def input_ids(self) -> tuple[tuple[int | None, ...], ...]:
        """Each node's input node ids in argument order (None: an input needing no grad), read
        from the node table's columns without building the node records."""
        columns = getattr(self.nodes, "columns", None)
        if columns is None:
            return tuple(tuple(e.src for e in n.inputs) for n in self.nodes)
        return tuple(tuple(e[0] for e in edges) for edges in columns["inputs"])

    def input_nodes(self, i: int) -> tuple[Node | None, ...]:
        """The nodes feeding node ``i``, in argument order (None for no-grad inputs)."""
        return tuple(None if e.src is None else self.nodes[e.src] for e in self.node(i).inputs)

    @cached_property
    def _consumers(self) -> tuple[tuple[int, ...], ...]:
        users: list[list[int]] = [[] for _ in range(len(self.nodes))]
        for j, srcs in enumerate(self.input_ids):
            for s in srcs:
                if s is not None and (not users[s] or users[s][-1] != j):
                    users[s].append(j)
        return tuple(tuple(u) for u in users)

    def consumers(self, i: int) -> tuple[Node, ...]:
        """The nodes that use node ``i``'s output, by increasing id."""
        return tuple(self.nodes[j] for j in self.consumer_ids(i))

    def consumer_ids(self, i: int) -> tuple[int, ...]:
        """The ids of the nodes that use node ``i``'s output, increasing."""
        self._check_id(i)
        return self._consumers[i]

    def output(self, i: int) -> TensorSummary | None:
        """Summary of node ``i``'s output (a leaf's value)."""
        return self.stats[i].output

    def grad(self, i: int) -> TensorSummary | None:
        """Summary of the gradient that reached node ``i`` (None if none did)."""
        return self.stats[i].grad

    def grads_out(self, i: int) -> tuple[TensorSummary | None, ...]:
        """Summaries of the gradients node ``i``'s rule returned, one per input."""
        return self.stats[i].grads_out

    @property
    def backward_order(self) -> tuple[Node, ...]:
        """The nodes in the order backward ran them."""
        return tuple(self.nodes[i] for i in self.order)

    @property
    def finite(self) -> bool:
        """False when an output or gradient holds NaN/Inf."""
        return all(
            (s.output is None or s.output.finite) and (s.grad is None or s.grad.finite)
            for s in self.stats
        )

    def find(
        self,
        *,
        scope: str | None = None,
        op: str | None = None,
        source: str | int | None = None,
        kind: str | None = None,
    ) -> tuple[Node, ...]:
        """Nodes matching every given filter: ``scope`` (that scope or below it), ``op``
        (``'matmul'``), ``source`` (a line number, ``'file.py:12'`` or a file suffix), ``kind``.
        """
        return tuple(n for n in self.nodes if _match(n, scope, op, source, kind))

    def value(self, summary: TensorSummary | None) -> np.ndarray | None:
        """The full value behind a summary, or None when the value policy did not keep it."""
        if summary is None or summary.value is None:
            return None
        return self.values.get(summary.value)

    def node_values(self, i: int) -> NodeValues:
        """Inputs, output, incoming gradient and per-input gradients of node ``i``."""
        made = self._node_values.get(i)
        if made is None:
            self._check_id(i)
            made = self._node_values[i] = self._values_of(i)
        return made

    @cached_property
    def _node_values(self) -> dict[int, NodeValues]:
        return {}

    def _values_of(self, i: int) -> NodeValues:
        rows, srcs, edge_start, grads_out, consts = self._rows
        at = self.summary_value
        ins, outs = [], []
        k = edge_start[i] if edge_start else -1
        for j, src in enumerate(srcs[i]):
            if src is not None:
                ins.append(at(rows[src][0]))
            else:
                ins.append(at(consts[k + j]) if k >= 0 else None)
            if k >= 0:
                outs.append(at(grads_out[k + j]))
        return NodeValues(tuple(ins), at(rows[i][0]), at(rows[i][1]), tuple(outs))

    def summary_value(self, row: int) -> np.ndarray | None:
        """The full value of row ``row`` of ``tables.summaries`` (None: -1, or not kept)."""
        if row < 0:
            return None
        vid = self._value_ids[row]
        return None if vid < 0 else self.values.get(vid)

    @cached_property
    def _value_ids(self) -> list[int]:
        return self.tables.summaries[:, 8].astype(np.int64).tolist()

    @cached_property
    def _rows(self) -> tuple[list, tuple[tuple, ...], list[int], list[int], list[int]]:
        """The tables as lists: node rows, each node's input ids, each node's first edge
        (empty: no per-edge columns, ``stats`` detail), the summary rows of gradients out and
        of constants."""
        t = self.tables
        srcs = self.input_ids
        starts: list[int] = []
        if self.detail == "full" and len(t.grads_out):
            n = 0
            for s in srcs:
                starts.append(n)
                n += len(s)
        return t.nodes.tolist(), srcs, starts, t.grads_out.tolist(), t.consts.tolist()

    # -- what the checks read ----------------------------------------------------------------
    @cached_property
    def replay_nodes(self) -> tuple[NodeRecord, ...]:
        """Every node as the checks read it: op object, Python params, input/output values."""
        with paused_gc(promote=True):  # NOTE: ~100k long-lived records, no cycles: 2x faster
            return tuple(check_view.node_record(self, i) for i in range(len(self.nodes)))

    def replay_node(self, i: int) -> NodeRecord:
        """Node ``i`` as the checks read it (see :attr:`replay_nodes`)."""
        return self.replay_nodes[i]

    @cached_property
    def backwards(self) -> tuple[BackwardRecord, ...]:
        """The backward that ran over this graph, with its values (empty if none ran)."""
        if self.kind != "backward" or not self.order:
            return ()
        with paused_gc(promote=True):
            return (check_view.backward_record(self),)

    @cached_property
    def _first_runs(self) -> dict[int, Any]:
        runs: dict[int, Any] = {}
        for bw in self.backwards:
            for ex in bw.executions:
                runs.setdefault(ex.node, ex)
        return runs

    def execution(self, i: int) -> Any:
        """The first run of node ``i`` in :attr:`backwards` (an ``Execution``), or None."""
        return self._first_runs.get(i)

    def to_dot(self, **options: Any) -> str:
        """The DOT source of this graph (see :func:`tpx_inspect.export.dot.to_dot`)."""
        from tpx_inspect.export.dot import to_dot

        return to_dot(self, **options)

    def _repr_svg_(self) -> str | None:
        from tpx_inspect.export.jupyter import graph_svg

        return graph_svg(self)

    def _repr_html_(self) -> str:
        from tpx_inspect.export.jupyter import graph_html

        return graph_html(self)

    def __repr__(self) -> str:
        return (
            f"<Graph run={self.run} id={self.id} step={self.step} kind={self.kind} "
            f"nodes={len(self.nodes)} detail={self.detail}>"
        )


def _match(n: Node, scope: str | None, op: str | None, source: Any, kind: str | None) -> bool:
    if scope is not None and not (n.scope == scope or n.scope.startswith(scope + ".")):
        return False
    if op is not None and n.op != op:
        return False
    if kind is not None and n.kind != kind:
        return False
    if source is None:
        return True
    if n.source is None:
        return False
    if isinstance(source, int):
        return n.source.line == source
    file, _, line = source.rpartition(":")
    if file and line.isdigit():
        return n.source.line == int(line) and n.source.file.endswith(file)
    return n.source.file.endswith(source)


@dataclass(frozen=True)
class Run:
    """One capture: the graphs it kept, how many backward steps it saw, how it ended."""

    id: int
    name: str
    status: str
    steps: int
    policy: dict[str, Any]
    graphs: tuple[Graph, ...]
    error: ErrorInfo | None = None

    def graph(self, i: int) -> Graph:
        """The graph with id ``i``."""
        if not 0 <= i < len(self.graphs):
            raise KeyError(f"run {self.id} has no graph {i} ({len(self.graphs)} graphs)")
        return self.graphs[i]

    def step(self, step: int) -> Graph:
        """The graph recorded at backward step ``step``."""
        for g in self.graphs:
            if g.step == step:
                return g
        raise KeyError(f"run {self.id} kept no graph for step {step}")


@dataclass(frozen=True)
class Trace:
    """A captured trace: versioned, saved as JSON plus an ``.npz`` sidecar by
    ``tpx_inspect.save(trace, path)`` and read back by ``tpx_inspect.load(path)``
    (:mod:`tpx_inspect.format`, which builds on these records, not the other way round).

    >>> import tpx as tp, tpx_inspect
    >>> with tpx_inspect.capture(timing=False) as cap:
    ...     x = tp.ones(3, requires_grad=True)
    ...     (x * 2).sum().backward()
    >>> g = cap.trace.graphs[0]
    >>> [n.title for n in g.nodes], [n.title for n in g.backward_order]
    (['leaf', 'mul', 'sum'], ['sum', 'mul', 'leaf'])
    """

    version: int
    runs: tuple[Run, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    plans: tuple[dict[str, Any], ...] = ()  # optional: tpx.compile plans (capture_plan)

    @property
    def graphs(self) -> tuple[Graph, ...]:
        """Every graph of every run, in order."""
        return tuple(g for r in self.runs for g in r.graphs)

    def run(self, i: int = 0) -> Run:
        """The run with id ``i``."""
        if not 0 <= i < len(self.runs):
            raise KeyError(f"trace has no run {i} ({len(self.runs)} runs)")
        return self.runs[i]

    def graph(self, run: int = 0, graph: int = 0) -> Graph:
        """Graph ``graph`` of run ``run``."""
        return self.run(run).graph(graph)
