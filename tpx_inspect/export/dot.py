"""DOT for a captured graph, built with the ``graphviz`` package (pure and deterministic).

Nodes show op (or parameter name) and output shape, edges the shape they carry; fill colours
mark the kind (leaf, parameter, op, loss), borders the status (ok, nonfinite, unused, or what a
check reports); scopes become nested clusters; large graphs are folded by scope and their long
edges stubbed (:mod:`tpx_inspect.collapse`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tpx_inspect._deps import require
from tpx_inspect.collapse import LARGE, View, ViewNode, collapse, shape_label
from tpx_inspect.export._style import (
    _RANK,
    KIND_COLOURS,
    STATUS_COLOURS,
    _quote,
    node_status,
    statuses_with,
)
from tpx_inspect.export.folded import folded_dot

__all__ = ["KIND_COLOURS", "STATUS_COLOURS", "node_status", "to_dot"]

if TYPE_CHECKING:
    import graphviz

    from tpx_inspect.records import Graph


def to_dot(
    graph: Graph,
    *,
    order: bool = False,
    status: Mapping[int, str] | None = None,
    fold: bool | None = None,
    stub: bool | None = None,
    max_nodes: int = 120,
    span: int = 6,
    rankdir: str = "TB",
    view: View | None = None,
) -> str:
    """DOT source of ``graph``. ``order`` prefixes backward-order numbers; ``status`` maps
    node ids to a status of :data:`STATUS_COLOURS` (overriding :func:`node_status`);
    ``fold``/``stub``/``max_nodes``/``span`` go to :func:`~tpx_inspect.collapse.collapse`.

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones((2, 3), requires_grad=True)
    >>> g = tpx_inspect.trace(lambda: (x * 2).sum().backward()).graphs[0]
    >>> print(to_dot(g).splitlines()[-2])
    n1 -> n2 [label="2x3"]

    A graph of more than :data:`~tpx_inspect.collapse.LARGE` nodes, with none of ``fold``,
    ``stub``, ``view`` given, is written from its view model instead (scopes and repeated
    blocks folded, parameters in their scope: :func:`~tpx_inspect.export.folded.folded_dot`).
    """
    if view is None and fold is None and stub is None and len(graph.nodes) > LARGE:
        return folded_dot(graph, status=status, rankdir=rankdir)
    v = (
        view
        if view is not None
        else collapse(graph, fold=fold, stub=stub, max_nodes=max_nodes, span=span)
    )
    statuses = statuses_with(graph, status)
    # NOTE: imported here so that `import tpx_inspect` needs only numpy and scipy
    dot = require("graphviz", "DOT export").Digraph(
        name=f"run{graph.run}_graph{graph.id}",
        graph_attr={"rankdir": rankdir, "fontname": "Helvetica", "fontsize": "10"},
        node_attr={
            "shape": "box",
            "style": "rounded,filled",
            "fontname": "Helvetica",
            "fontsize": "10",
        },
        edge_attr={"fontname": "Helvetica", "fontsize": "8", "color": "#7f8c8d"},
    )
    _emit_nodes(dot, graph, v, statuses, order)
    for e in v.edges:
        attrs = {"label": e.label if e.count == 1 else f"{e.label} (x{e.count})"}
        if e.stub:
            attrs["style"] = "dashed"
        dot.edge(e.src, e.dst, **attrs)
    return dot.source


def _emit_nodes(dot: graphviz.Digraph, graph: Graph, v: View, statuses: list, order: bool) -> None:
    positions = {i: k for k, i in enumerate(graph.order)} if order else {}
    keyed = sorted((_cluster_path(n), k, n) for k, n in enumerate(v.nodes) if n.kind != "stub")
    stack: list[str] = []
    clusters = 0
    for path, _, n in keyed:
        while stack and tuple(stack) != path[: len(stack)]:
            stack.pop()
            dot.body.append("\t}\n")
        while len(stack) < len(path):
            stack.append(path[len(stack)])
            dot.body.append(f"\tsubgraph cluster_{clusters} {{\n")
            dot.body.append(f'\t\tlabel={_quote(stack[-1])} style=dashed color="#a569bd"\n')
            clusters += 1
        dot.node(n.id, **_node_attrs(graph, n, statuses, positions))
    while stack:
        stack.pop()
        dot.body.append("\t}\n")
    for n in v.nodes:
        if n.kind == "stub":
            dot.node(
                n.id, label=n.label, shape="note", style="filled", fillcolor=KIND_COLOURS["stub"],
                fontsize="8", id=n.id, href=f"#{n.link}", tooltip=n.label,
            )  # fmt: skip


def _cluster_path(n: ViewNode) -> tuple[str, ...]:
    if not n.scope:
        return ()
    parts = tuple(n.scope.split("."))
    return parts[:-1] if n.kind == "scope" else parts


def _node_attrs(graph: Graph, n: ViewNode, statuses: list, positions: dict) -> dict[str, Any]:
    worst = max((statuses[m] for m in n.members), key=_RANK.__getitem__)
    attrs = {
        "fillcolor": KIND_COLOURS.get(n.kind, KIND_COLOURS["op"]),
        "color": STATUS_COLOURS[worst],
        "id": n.id,
    }
    if worst != "ok":
        attrs["penwidth"] = "2.5"
    if worst == "unused":
        attrs["style"] = "rounded,filled,dashed"
    if n.kind == "scope":
        attrs["label"] = n.label
        attrs["tooltip"] = f"scope {n.scope}: {len(n.members)} nodes"
        attrs["shape"] = "box3d"
        return attrs
    node = graph.nodes[n.members[0]]
    head = f"#{positions[node.id]} " if node.id in positions else ""
    attrs["label"] = f"{head}{node.title}\\n{shape_label(node.shape)}"
    attrs["tooltip"] = (
        f"{node.name} [{node.id}] {node.scope or '<root>'} {node.source or ''}".strip()
    )
    return attrs
