"""Server-side graph layout: Graphviz ``dot -Tjson0`` with a timeout, else a layered fallback.

The viewer never lays out a graph itself: it asks the server, which runs ``dot`` as a
subprocess (bounded by a timeout and a node-count limit) and falls back to a pure-Python
layered layout (longest-path ranks, barycentre ordering) when ``dot`` is missing, fails, times
out or the graph is too large for it. Both produce the same :class:`Layout` record: top-down,
points, origin at the top-left, inputs at the top and the loss at the bottom.

>>> nodes = [LayoutNode("a", "x"), LayoutNode("b", "MulBackward"), LayoutNode("c", "loss")]
>>> edges = [LayoutEdge("a", "b"), LayoutEdge("b", "c")]
>>> lay = compute_layout(nodes, edges, dot=None)
>>> lay.engine, [round(lay.nodes[k].y) for k in "abc"]
('fallback', [14, 78, 142])
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

from tpx_inspect.viewmodel.layered import layered

__all__ = [
    "Layout",
    "LayoutEdge",
    "LayoutNode",
    "NodeBox",
    "compute_layout",
    "fallback_layout",
    "layout_dot_source",
]

CHAR_W = 7.0  # points per label character (monospace 11px)
LINE_H = 16.0
DEFAULT_TIMEOUT = 5.0
DEFAULT_DOT_MAX_NODES = 600  # past this, dot takes seconds: the fallback answers instead


@dataclass(frozen=True)
class LayoutNode:
    """A box to place: ``id`` (unique), a label (lines split on ``\\n``), an optional cluster.

    >>> LayoutNode("3", "AddBackward\\n(2, 3)").size
    (95.0, 44.0)
    """

    id: str
    label: str = ""
    cluster: str | None = None

    @property
    def size(self) -> tuple[float, float]:
        """``(width, height)`` in points, estimated from the label so both engines agree."""
        lines = self.label.split("\n") if self.label else [""]
        width = max(54.0, CHAR_W * max(len(s) for s in lines) + 18.0)
        return width, LINE_H * len(lines) + 12.0


@dataclass(frozen=True)
class LayoutEdge:
    """A directed edge ``src -> dst`` (producer to consumer), drawn top-down.

    >>> LayoutEdge("a", "b", "(2, 3)").label
    '(2, 3)'
    """

    src: str
    dst: str
    label: str = ""


@dataclass(frozen=True)
class NodeBox:
    """A placed node: centre ``(x, y)`` and size ``(w, h)`` in points.

    >>> NodeBox(10.0, 20.0, 54.0, 28.0).x
    10.0
    """

    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True)
class Layout:
    """A computed layout: which engine made it, the bounding size, boxes and edge polylines.

    >>> Layout("fallback", 0.0, 0.0).engine
    'fallback'
    """

    engine: str
    width: float
    height: float
    nodes: dict[str, NodeBox] = field(default_factory=dict)
    edges: list[list[tuple[float, float]]] = field(default_factory=list)
    note: str = ""


def compute_layout(
    nodes: Sequence[LayoutNode],
    edges: Sequence[LayoutEdge],
    *,
    dot: str | None = "dot",
    timeout: float = DEFAULT_TIMEOUT,
    dot_max_nodes: int = DEFAULT_DOT_MAX_NODES,
) -> Layout:
    """Lay out with Graphviz ``dot`` when it is usable, else with :func:`fallback_layout`.

    ``dot=None`` forces the fallback; a missing binary, a failure, a timeout or a graph of more
    than ``dot_max_nodes`` nodes falls back too, and ``Layout.note`` says why.

    >>> lay = compute_layout([LayoutNode("a")], [], dot="/nonexistent/dot")
    >>> lay.engine, lay.note
    ('fallback', 'graphviz dot not found: /nonexistent/dot')
    """
    if dot is None:
        return fallback_layout(nodes, edges, note="dot disabled")
    if len(nodes) > dot_max_nodes:
        return fallback_layout(nodes, edges, note=f"{len(nodes)} nodes > {dot_max_nodes} for dot")
    exe = shutil.which(dot)
    if exe is None:
        return fallback_layout(nodes, edges, note=f"graphviz dot not found: {dot}")
    try:
        return _dot_layout(exe, nodes, edges, timeout)
    except subprocess.TimeoutExpired:
        return fallback_layout(nodes, edges, note=f"dot timed out after {timeout:g} s")
    except (OSError, ValueError, KeyError) as exc:
        return fallback_layout(nodes, edges, note=f"dot failed: {exc}")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def layout_dot_source(nodes: Sequence[LayoutNode], edges: Sequence[LayoutEdge]) -> str:
    """The DOT text handed to ``dot`` for layout only: fixed box sizes, clusters, edge order.

    >>> print(layout_dot_source([LayoutNode("a", "x")], [LayoutEdge("a", "a")]))
    digraph G {
    rankdir=TB; nodesep=0.25; ranksep=0.5;
    node [shape=box fixedsize=true];
    "a" [label="x" width=0.750 height=0.389];
    "a" -> "a";
    }
    """
    lines = [
        "digraph G {",
        "rankdir=TB; nodesep=0.25; ranksep=0.5;",
        "node [shape=box fixedsize=true];",
    ]
    clusters: dict[str, list[str]] = {}
    for n in nodes:
        w, h = n.size
        lines.append(
            f"{_quote(n.id)} [label={_quote(n.label)} width={w / 72:.3f} height={h / 72:.3f}];"
        )
        if n.cluster:
            clusters.setdefault(n.cluster, []).append(n.id)
    for i, (name, members) in enumerate(clusters.items()):
        body = " ".join(_quote(m) + ";" for m in members)
        lines.append(f"subgraph cluster_{i} {{ label={_quote(name)}; {body} }}")
    for e in edges:
        lines.append(f"{_quote(e.src)} -> {_quote(e.dst)};")
    lines.append("}")
    return "\n".join(lines)


def _dot_layout(
    exe: str, nodes: Sequence[LayoutNode], edges: Sequence[LayoutEdge], timeout: float
) -> Layout:
    source = layout_dot_source(nodes, edges)
    proc = subprocess.run(
        [exe, "-Tjson0"], input=source.encode(), capture_output=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise ValueError(proc.stderr.decode(errors="replace").strip().splitlines()[-1:])
    return _parse_dot_json(json.loads(proc.stdout), edges)


def _parse_dot_json(data: dict, edges: Sequence[LayoutEdge]) -> Layout:
    _, _, width, height = (float(v) for v in data["bb"].split(","))
    boxes: dict[str, NodeBox] = {}
    by_gvid: dict[int, str] = {}
    for obj in data.get("objects", []):
        if "pos" not in obj:
            continue  # a cluster
        x, y = (float(v) for v in obj["pos"].split(","))
        w, h = float(obj["width"]) * 72, float(obj["height"]) * 72
        boxes[obj["name"]] = NodeBox(x, height - y, w, h)
        by_gvid[obj["_gvid"]] = obj["name"]
    polylines: dict[tuple[str, str], list] = {}
    for e in data.get("edges", []):
        key = (by_gvid[e["tail"]], by_gvid[e["head"]])
        polylines.setdefault(key, []).append(_spline_points(e.get("pos", ""), height))
    out = [polylines[(e.src, e.dst)].pop(0) if polylines.get((e.src, e.dst)) else [] for e in edges]
    return Layout("dot", width, height, boxes, out)


def _spline_points(pos: str, height: float) -> list[tuple[float, float]]:
    # dot writes "e,x,y p1 p2 ..." where "e,x,y" is the arrow tip: put it last
    end: tuple[float, float] | None = None
    points: list[tuple[float, float]] = []
    for part in pos.split():
        fields = part.split(",")
        if fields[0] in ("e", "s"):
            tip = (float(fields[1]), height - float(fields[2]))
            end = tip if fields[0] == "e" else end
            continue
        points.append((float(fields[0]), height - float(fields[1])))
    return points + [end] if end else points


def fallback_layout(
    nodes: Sequence[LayoutNode], edges: Sequence[LayoutEdge], *, note: str = ""
) -> Layout:
    """A layered layout in pure Python: ranks by longest path, order by barycentre sweeps.

    Iterative and deterministic; cycles (possible once scopes are collapsed) are broken by
    taking the waiting node with the fewest unplaced inputs, then the lowest index.

    >>> lay = fallback_layout([LayoutNode("a"), LayoutNode("b"), LayoutNode("c")],
    ...                       [LayoutEdge("a", "c"), LayoutEdge("b", "c")])
    >>> [round(lay.nodes[k].x) for k in "abc"], lay.edges[0][0][1] < lay.edges[0][-1][1]
    ([27, 99, 63], True)
    """
    ids = [n.id for n in nodes]
    index = {k: i for i, k in enumerate(ids)}
    pairs = [(index[e.src], index[e.dst]) for e in edges if e.src in index and e.dst in index]
    centres, width, height = layered([n.size for n in nodes], pairs)
    placed = {k: NodeBox(x, y, n.size[0], n.size[1]) for k, n, (x, y) in zip(ids, nodes, centres)}
    lines = [_straight(placed[e.src], placed[e.dst]) for e in edges if e.src in placed]
    return Layout("fallback", width, height, placed, lines, note)


def _straight(a: NodeBox, b: NodeBox) -> list[tuple[float, float]]:
    if b.y >= a.y:
        return [(a.x, a.y + a.h / 2), (b.x, b.y - b.h / 2)]
    return [(a.x, a.y - a.h / 2), (b.x, b.y + b.h / 2)]
