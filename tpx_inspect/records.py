"""Trace records and the reading API (``tpx_inspect.records``; ``tpx_inspect.trace`` is the
function that captures one call): runs, graphs, nodes, gradients, backward order, lookups.

A :class:`Trace` holds :class:`Run` s (one per ``capture``); a run holds the :class:`Graph` s it
kept. A graph's :class:`Node` s are the static structure (shared by every graph of identical
structure); its :class:`NodeStats` hold what one step measured (summaries, times, order).
Node ids are small integers in topological order: every input has a smaller id than its user.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from tpx_inspect.summary import STAT_FIELDS, TensorSummary, summary_from_row

KINDS = ("leaf", "param", "op", "loss")
"""Node kinds: a leaf tensor, a named parameter, a recorded op, a backward root (the loss)."""


@dataclass(frozen=True)
class Source:
    """The user's source line that recorded a node.

    >>> str(Source("train.py", 12, "step"))
    'train.py:12 in step'
    """

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


@dataclass(frozen=True)
class Edge:
    """One input of a node, in argument order; ``src`` is None for inputs that need no grad."""

    src: int | None
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Saved:
    """A value a node saved for backward: ``slot`` is the input index, or -1 for its output."""

    slot: int
    shape: tuple[int, ...]
    dtype: str
    bytes: int


@dataclass(frozen=True)
class Node:
    """The static record of one node: what was computed, from what, where.

    ``name`` is the PyTorch-style node name (``MulBackward``, ``AccumulateGrad``); ``label``
    is a parameter's name (``fc1.weight``) or ''.
    """

    id: int
    kind: str
    op: str | None
    name: str
    label: str
    params: dict[str, Any]
    scope: str
    source: Source | None
    inputs: tuple[Edge, ...]
    shape: tuple[int, ...]
    dtype: str
    saved: tuple[Saved, ...] = ()

    @property
    def saved_bytes(self) -> int:
        """Bytes of the values this node saved for backward."""
        return sum(s.bytes for s in self.saved)

    @property
    def title(self) -> str:
        """A short display name: the op, or the parameter's name, or ``leaf``."""
        return self.op or self.label or self.kind


NODE_FIELDS = (
    "kind", "op", "name", "label", "params", "scope", "source", "inputs", "shape", "dtype", "saved",
)  # fmt: skip
"""The columns of a structure's node table, as the trace JSON stores them."""


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
        cols: dict[str, list[Any]] = {f: [] for f in NODE_FIELDS}
        for n in nodes:
            src = n.source
            cols["kind"].append(n.kind)
            cols["op"].append(n.op)
            cols["name"].append(n.name)
            cols["label"].append(n.label)
            cols["params"].append(n.params)
            cols["scope"].append(n.scope)
            cols["source"].append(None if src is None else [src.file, src.line, src.function])
            cols["inputs"].append([[e.src, list(e.shape), e.dtype] for e in n.inputs])
            cols["shape"].append(list(n.shape))
            cols["dtype"].append(n.dtype)
            cols["saved"].append([[v.slot, list(v.shape), v.dtype, v.bytes] for v in n.saved])
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
        src = c["source"][i]
        return Node(
            i, c["kind"][i], c["op"][i], c["name"][i], c["label"][i], c["params"][i],
            c["scope"][i], None if src is None else Source(src[0], src[1], src[2]),
            tuple([Edge(e[0], tuple(e[1]), e[2]) for e in c["inputs"][i]]), tuple(c["shape"][i]),
            c["dtype"][i], tuple([Saved(v[0], tuple(v[1]), v[2], v[3]) for v in c["saved"][i]]),
        )  # fmt: skip

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


@dataclass(frozen=True)
class NodeStats:
    """What one step measured at a node.

    ``grad`` is the incoming gradient (w.r.t. the node's output, all contributions summed);
    ``grads_out`` the gradient the rule returned per input; ``consts`` summaries of inputs that
    need no grad; ``order`` the node's position in the backward execution (None: not run);
    ``released`` the backward position at which its saved values were freed.
    """

    output: TensorSummary | None = None
    grad: TensorSummary | None = None
    grads_out: tuple[TensorSummary | None, ...] = ()
    consts: tuple[TensorSummary | None, ...] = ()
    forward_seconds: float = 0.0
    backward_seconds: float | None = None
    order: int | None = None
    released: int | None = None


@dataclass(frozen=True)
class Accumulation:
    """``contribution`` from ``source`` (None for the root gradient) summed into ``target``'s
    gradient, giving ``total``."""

    target: int
    source: int | None
    contribution: TensorSummary
    total: TensorSummary


@dataclass(frozen=True)
class ErrorInfo:
    """An exception that ended a run."""

    type: str
    message: str
    traceback: str


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


@dataclass(frozen=True)
class NodeValues:
    """Full values around one node, for offline replay (None where not kept)."""

    inputs: tuple[np.ndarray | None, ...]
    output: np.ndarray | None
    grad: np.ndarray | None
    grads_out: tuple[np.ndarray | None, ...]


@dataclass(frozen=True, eq=False)
class Graph:
    """One recorded graph: its nodes (topological ids), roots and one step's measurements.

    ``kind`` is ``backward`` (a backward ran), ``roots`` (captured with ``cap.add``) or
    ``partial`` (recorded when an error ended the run before any backward used it).
    ``detail`` is ``full`` (previews, values, accumulations, gradients per input) or ``stats``
    (a later step of an already stored structure: per-node statistics only). ``stats``,
    ``order`` and ``accumulations`` are read from ``tables``.
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
        if not 0 <= i < len(self.nodes):
            raise KeyError(f"graph {self.id} has no node {i} (ids 0..{len(self.nodes) - 1})")
        return self.nodes[i]

    def input_nodes(self, i: int) -> tuple[Node | None, ...]:
        """The nodes feeding node ``i``, in argument order (None for no-grad inputs)."""
        return tuple(None if e.src is None else self.nodes[e.src] for e in self.node(i).inputs)

    @cached_property
    def _consumers(self) -> tuple[tuple[int, ...], ...]:
        users: list[list[int]] = [[] for _ in self.nodes]
        for n in self.nodes:
            for e in n.inputs:
                if e.src is not None and (not users[e.src] or users[e.src][-1] != n.id):
                    users[e.src].append(n.id)
        return tuple(tuple(u) for u in users)

    def consumers(self, i: int) -> tuple[Node, ...]:
        """The nodes that use node ``i``'s output, by increasing id."""
        self.node(i)
        return tuple(self.nodes[j] for j in self._consumers[i])

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
        node, st = self.node(i), self.stats[i]
        ins = []
        for k, e in enumerate(node.inputs):
            if e.src is not None:
                ins.append(self.value(self.stats[e.src].output))
            else:
                ins.append(self.value(st.consts[k]) if k < len(st.consts) else None)
        outs = tuple(self.value(g) for g in st.grads_out)
        return NodeValues(tuple(ins), self.value(st.output), self.value(st.grad), outs)

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
    """A captured trace: versioned, saved as JSON plus an ``.npz`` sidecar.

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

    def save(self, path: str) -> tuple[str, str]:
        """Write ``path`` (JSON) and its sidecar; returns both paths."""
        from tpx_inspect.format import save

        return save(self, path)

    @staticmethod
    def load(path: str) -> Trace:
        """Read and validate a trace written by :meth:`save`."""
        from tpx_inspect.format import load

        return load(path)
