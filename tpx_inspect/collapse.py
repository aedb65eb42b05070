"""Scope collapsing and long-edge stubbing: what makes large graphs drawable.

Graphviz ``dot`` needs tens of seconds on a raw 1,000-node training graph and minutes at
5,000 nodes, mostly because of edges that span many levels (a parameter used at the top and
its gradient consumer far below). :func:`collapse` produces a :class:`View`: scopes folded into
one node each (as deep as ``max_nodes`` allows) and edges spanning more than ``span`` levels
replaced by a pair of linked stubs ("to X" at the source, "from Y" at the target). DOT export
and the server's layout share it. Everything here is iterative and deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpx_inspect.records import Graph


LARGE = 300
"""Graphs with more nodes than this are collapsed and stubbed by default."""


@dataclass(frozen=True)
class ViewNode:
    """A node of a view: a graph node (``n12``), a folded scope (``s3``) or a stub.

    ``members`` are the graph node ids it stands for. A stubbed edge leaves its source through
    a "to" stub (``t2``: members are the targets; one per source) and reaches its target from
    a "from" stub (``f7``: members is the source); ``link`` is the view id of the other end.
    """

    id: str
    kind: str
    label: str
    scope: str
    members: tuple[int, ...]
    link: str = ""


@dataclass(frozen=True)
class ViewEdge:
    """An edge of a view; ``count`` graph edges merged into it, ``label`` the first shape."""

    src: str
    dst: str
    label: str
    count: int = 1
    stub: bool = False


@dataclass(frozen=True)
class View:
    """A drawable form of a graph. ``depth`` is the scope depth kept (None: not collapsed);
    ``stubbed`` counts the edges replaced by stubs."""

    nodes: tuple[ViewNode, ...]
    edges: tuple[ViewEdge, ...]
    depth: int | None
    stubbed: int

    def owner(self) -> dict[int, str]:
        """Graph node id -> the view node that shows it."""
        return {m: v.id for v in self.nodes if v.kind != "stub" for m in v.members}


def levels(graph: Graph) -> list[int]:
    """Longest-path level of every node from the inputs (ids are topological).

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> g = tpx_inspect.trace(lambda: ((x * 2) + x).sum().backward()).graphs[0]
    >>> levels(g)
    [0, 1, 2, 3]
    """
    lv = [0] * len(graph.nodes)
    for n in graph.nodes:
        for e in n.inputs:
            if e.src is not None and lv[e.src] + 1 > lv[n.id]:
                lv[n.id] = lv[e.src] + 1
    return lv


def shape_label(shape: tuple[int, ...]) -> str:
    """A compact shape: ``4x3``, or ``scalar``.

    >>> shape_label((4, 3)), shape_label(())
    ('4x3', 'scalar')
    """
    return "x".join(map(str, shape)) if shape else "scalar"


def collapse(
    graph: Graph,
    *,
    fold: bool | None = None,
    stub: bool | None = None,
    max_nodes: int = 120,
    span: int = 6,
) -> View:
    """The drawable view of ``graph``. ``fold``/``stub`` default to True for graphs of more
    than :data:`LARGE` nodes; folding keeps the deepest scope level that gives at most
    ``max_nodes`` view nodes (level 1 if none does); stubbing replaces edges spanning more
    than ``span`` levels.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> def f():
    ...     with tp.scope("enc"):
    ...         y = (x * 2).exp()
    ...     y.sum().backward()
    >>> v = collapse(tpx_inspect.trace(f).graphs[0], fold=True, max_nodes=3)
    >>> [(n.id, n.label) for n in v.nodes]
    [('n0', 'leaf'), ('s0', 'enc (2)'), ('n3', 'sum')]
    """
    large = len(graph.nodes) > LARGE
    fold = large if fold is None else fold
    stub = large if stub is None else stub
    depth = _choose_depth(graph, max_nodes) if fold else None
    nodes, owner = _view_nodes(graph, depth)
    edges, stubs = _view_edges(graph, owner, levels(graph) if stub else None, span)
    stubbed = sum(1 for s in stubs if s.id.startswith("f"))
    return View(tuple(nodes) + tuple(stubs), tuple(edges), depth, stubbed)


def _scope_at(scope: str, depth: int | None) -> str:
    if depth is None or not scope:
        return ""
    return ".".join(scope.split(".")[:depth])


def _choose_depth(graph: Graph, max_nodes: int) -> int:
    deepest = max((n.scope.count(".") + 1 for n in graph.nodes if n.scope), default=1)
    for depth in range(deepest, 0, -1):
        groups = {_scope_at(n.scope, depth) for n in graph.nodes if n.scope}
        loose = sum(1 for n in graph.nodes if not n.scope)
        if len(groups) + loose <= max_nodes:
            return depth
    return 1


def _view_nodes(graph: Graph, depth: int | None) -> tuple[list[ViewNode], list[str]]:
    members: dict[str, list[int]] = {}
    first: dict[str, int] = {}
    for n in graph.nodes:
        key = _scope_at(n.scope, depth)
        if key:
            members.setdefault(key, []).append(n.id)
            first.setdefault(key, n.id)
    sid = {key: f"s{i}" for i, key in enumerate(sorted(first, key=first.__getitem__))}
    owner = []
    out = []
    for n in graph.nodes:
        key = _scope_at(n.scope, depth)
        if not key:
            owner.append(f"n{n.id}")
            out.append(ViewNode(f"n{n.id}", n.kind, n.title, n.scope, (n.id,)))
            continue
        owner.append(sid[key])
        if first[key] == n.id:
            m = tuple(members[key])
            out.append(ViewNode(sid[key], "scope", f"{key} ({len(m)})", key, m))
    return out, owner


def _view_edges(
    graph: Graph, owner: list[str], lv: list[int] | None, span: int
) -> tuple[list[ViewEdge], list[ViewNode]]:
    merged: dict[tuple[str, str], list] = {}
    outgoing: dict[int, list[int]] = {}  # source node -> targets of its stubbed edges
    long_edges: list[tuple[int, int, str]] = []
    for n in graph.nodes:
        for e in n.inputs:
            if e.src is None or owner[e.src] == owner[n.id]:
                continue
            if lv is not None and lv[n.id] - lv[e.src] > span:
                outgoing.setdefault(e.src, []).append(n.id)
                long_edges.append((e.src, n.id, shape_label(e.shape)))
                continue
            entry = merged.get((owner[e.src], owner[n.id]))
            if entry is None:
                merged[(owner[e.src], owner[n.id])] = [shape_label(e.shape), 1]
            else:
                entry[1] += 1
    edges = [ViewEdge(a, b, lab, c) for (a, b), (lab, c) in merged.items()]
    stubs, stub_edges = _stubs(graph, owner, outgoing, long_edges)
    return edges + stub_edges, stubs


def _stubs(
    graph: Graph, owner: list[str], outgoing: dict, long_edges: list
) -> tuple[list[ViewNode], list[ViewEdge]]:
    """One "to" stub per source (beside it) and one "from" stub per stubbed edge (beside its
    target), linked to each other."""
    to_id = {src: f"t{k}" for k, src in enumerate(outgoing)}
    first_from: dict[int, str] = {}
    stubs: list[ViewNode] = []
    edges: list[ViewEdge] = []
    for k, (src, dst, label) in enumerate(long_edges):
        from_id = f"f{k}"
        first_from.setdefault(src, from_id)
        title = graph.nodes[src].title
        stubs.append(ViewNode(from_id, "stub", f"from {title} #{src}", "", (src,), to_id[src]))
        edges.append(ViewEdge(from_id, owner[dst], label, 1, True))
    for src, targets in outgoing.items():
        if len(targets) == 1:
            text = f"to {graph.nodes[targets[0]].title} #{targets[0]}"
        else:
            text = f"to {len(targets)} uses"
        stubs.append(ViewNode(to_id[src], "stub", text, "", tuple(targets), first_from[src]))
        edges.append(ViewEdge(owner[src], to_id[src], shape_label(graph.nodes[src].shape), 1, True))
    return stubs, edges
