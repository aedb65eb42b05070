"""A graph at one expansion state: folded by scope and stubbed by ``tpx_inspect.collapse``,
laid out by :mod:`tpx_inspect.server.layout`, cached per expansion state.

The expansion state is a base ``depth`` (scopes are folded at that many dotted levels) plus
the set of scopes the viewer ``expanded`` (opened one level further, down to their own
nodes). :func:`tpx_inspect.collapse.collapse` folds at one depth for the whole graph, so this
adapter hands it the graph with every node's scope replaced by the group that the state gives
it (one flat key, or '' for a node shown on its own): the folding and the long-edge stubbing
are collapse's own. (It is handed a light copy of the graph made from the node table's
columns, which collapse reads the same way; see ``_Light``.)

>>> import tpx as tp, tpx_inspect
>>> x = tp.ones(2, requires_grad=True)
>>> def f():
...     with tp.scope("enc"):
...         with tp.scope("fc"):
...             y = (x * 2).exp()
...     y.sum().backward()
>>> g = tpx_inspect.trace(f).graphs[0]
>>> [n.label for n in build_view(g, State(depth=1), dot=None).nodes]
['leaf\\n2', 'enc (2)', 'sum\\nscalar']
>>> [n.label for n in build_view(g, State(1, ("enc",)), dot=None).nodes]
['leaf\\n2', 'enc.fc (2)', 'sum\\nscalar']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import NamedTuple

from tpx_inspect._util import paused_gc
from tpx_inspect.collapse import LARGE, collapse, shape_label
from tpx_inspect.records import Graph
from tpx_inspect.server import models as m
from tpx_inspect.server.layout import LayoutEdge, LayoutNode, compute_layout
from tpx_inspect.server.views import node_column, nonfinite_mask

__all__ = ["BuiltView", "LayoutCache", "State", "build_view", "group_key", "scopes_of"]

_SEP = "\x1f"  # joins the parts of a flat group key: never part of a scope name


@dataclass(frozen=True)
class State:
    """An expansion state: base ``depth`` (None: nothing folded) and the ``expanded`` scopes.

    >>> State(1, ("b", "a")).key()
    (1, ('a', 'b'), None, 6)
    """

    depth: int | None = 1
    expanded: tuple[str, ...] = ()
    stub: bool | None = None
    span: int = 6

    def key(self) -> tuple:
        """A hashable key: the same state in any order gives the same key."""
        return (self.depth, tuple(sorted(set(self.expanded))), self.stub, self.span)


def group_key(scope: str, depth: int | None, expanded: frozenset[str]) -> str:
    """The scope a node is folded into under a state, or '' when it is shown on its own.

    >>> group_key("enc.fc", 1, frozenset()), group_key("enc.fc", 1, frozenset({"enc"}))
    ('enc', 'enc.fc')
    >>> group_key("enc", 1, frozenset({"enc"})), group_key("enc.fc", None, frozenset())
    ('', '')
    """
    if depth is None or not scope:
        return ""
    parts = scope.split(".")
    d = min(depth, len(parts))
    while d <= len(parts) and ".".join(parts[:d]) in expanded:
        d += 1
    return "" if d > len(parts) else ".".join(parts[:d])


def scopes_of(graph: Graph) -> list[str]:
    """Every scope of the graph and every prefix of one, sorted."""
    out: set[str] = set()
    for scope in set(node_column(graph, "scope")):
        parts = scope.split(".") if scope else []
        out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return sorted(out)


class _Edge(NamedTuple):
    src: int | None
    shape: tuple[int, ...]
    dtype: str


class _Node(NamedTuple):
    id: int
    kind: str
    op: str | None
    label: str
    title: str
    scope: str
    inputs: tuple[_Edge, ...]
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class _Light:
    """What :func:`collapse` reads of a graph (ids, kinds, titles, scopes, input edges),
    built straight from the node table's columns: building 20,000 full node records costs
    seconds, these cost milliseconds."""

    nodes: list[_Node]


def _light_nodes(graph: Graph, keys: dict[str, str]) -> list[_Node]:
    columns = getattr(graph.nodes, "columns", None)
    if columns is None:
        return [
            _Node(n.id, n.kind, n.op, n.label, n.title, keys[n.scope],
                  tuple(_Edge(e.src, tuple(e.shape), e.dtype) for e in n.inputs),
                  tuple(n.shape), n.dtype)
            for n in graph.nodes
        ]  # fmt: skip
    c = columns
    return [
        _Node(i, kind, op, label, op or label or kind, keys[scope],
              tuple([_Edge(e[0], tuple(e[1]), e[2]) for e in ins]), tuple(shape), dtype)
        for i, (kind, op, label, scope, ins, shape, dtype) in enumerate(
            zip(c["kind"], c["op"], c["label"], c["scope"], c["inputs"], c["shape"], c["dtype"])
        )
    ]  # fmt: skip


def _regrouped(graph: Graph, state: State) -> tuple[_Light, dict[str, str]]:
    expanded = frozenset(state.expanded)
    keys: dict[str, str] = {}  # scope -> flat group key (one computation per distinct scope)
    flat: dict[str, str] = {}  # flat group key -> the scope it stands for
    for scope in set(node_column(graph, "scope")):
        key = group_key(scope, state.depth, expanded)
        keys[scope] = key.replace(".", _SEP)
        flat[keys[scope]] = key
    return _Light(_light_nodes(graph, keys)), flat


@dataclass(frozen=True)
class BuiltView:
    """A laid-out view: node and edge models plus the layout engine's name, note and size."""

    nodes: list[m.ViewNode]
    edges: list[m.ViewEdge]
    engine: str
    note: str
    width: float
    height: float


def build_view(
    graph: Graph, state: State, *, dot: str | None = "dot", timeout: float = 1.5
) -> BuiltView:
    """The laid-out view of ``graph`` at ``state``."""
    stub = len(graph.nodes) > LARGE if state.stub is None else state.stub
    with paused_gc():  # tens of thousands of small tuples: no cycles
        regrouped, flat = _regrouped(graph, state)
        view = collapse(
            regrouped,  # type: ignore[arg-type]  # duck-typed: see _Light
            fold=True, stub=stub, max_nodes=len(graph.nodes) + 1, span=state.span,
        )  # fmt: skip
    bad = nonfinite_mask(graph)
    boxes = []
    for v in view.nodes:
        if v.kind == "scope":
            scope = flat[v.scope]
            label = f"{scope} ({len(v.members)})"
        else:
            n = graph.nodes[v.members[0]]
            scope = n.scope
            label = v.label if v.kind == "stub" else f"{v.label}\n{shape_label(n.shape)}"
        boxes.append((v, scope, label, bool(bad[list(v.members)].any())))
    lay = compute_layout(
        [LayoutNode(v.id, label) for v, _, label, _ in boxes],
        [LayoutEdge(e.src, e.dst) for e in view.edges],
        dot=dot, timeout=timeout,
    )  # fmt: skip
    nodes = [_view_node(v, scope, label, nf, lay.nodes[v.id]) for v, scope, label, nf in boxes]
    edges = [
        m.ViewEdge(src=e.src, dst=e.dst, label=e.label, points=pts)
        for e, pts in zip(view.edges, lay.edges)
    ]
    return BuiltView(nodes, edges, lay.engine, lay.note, lay.width, lay.height)


def _view_node(v, scope: str, label: str, nonfinite: bool, box) -> m.ViewNode:
    node = v.members[0] if v.kind != "scope" else None
    return m.ViewNode(
        id=v.id, kind=v.kind, label=label, node=node, link=v.link or None, scope=scope or None,
        size=len(v.members), nonfinite=nonfinite, x=box.x, y=box.y, w=box.w, h=box.h,
    )  # fmt: skip


class LayoutCache:
    """A small thread-safe LRU of computed views, keyed by run, graph, trace stamp and state.

    >>> c = LayoutCache(2)
    >>> c.put("a", 1); c.put("b", 2); c.put("c", 3)
    >>> c.get("a"), c.get("c")
    (None, 3)
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> object | None:
        """The cached value of ``key`` (refreshing its place) or None."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Hashable, value: object) -> None:
        """Store ``value``; the least recently used entry goes when the cache is full."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
