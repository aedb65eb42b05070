"""DOT of a graph's view model (:mod:`tpx_inspect.viewmodel`): what the viewer shows, as a file.

Expanded groups become nested clusters, collapsed groups one box each (a repeat says "×N"),
parameters sit inside the scope that uses them, and an edge into a frame from outside goes
through one input stub per (frame, source box). The first screen's expansion is the default,
so a 20,000-node model exports as a few dozen boxes that Graphviz lays out in well under a
second. Pure and deterministic.

>>> import tpx as tp, tpx_inspect
>>> w = tp.ones(2, requires_grad=True)
>>> def f():
...     h = w
...     for k in range(3):
...         with tp.scope(f"block{k}"):
...             h = (h * w).exp()
...     h.sum().backward()
>>> dot = folded_dot(tpx_inspect.trace(f).graphs[0], expanded=["root"])
>>> 'label="block0-2 ×3"' in dot, dot.count(" -> ")
(True, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from tpx_inspect.collapse import shape_label
from tpx_inspect.export._style import _RANK, KIND_COLOURS, STATUS_COLOURS, _quote, statuses_with
from tpx_inspect.viewmodel import ViewModel, build
from tpx_inspect.viewmodel.layout import _Composer

if TYPE_CHECKING:
    from tpx_inspect.records import Graph

__all__ = ["folded_dot"]

SHAPES = {"scope": "box3d", "repeat": "box3d", "loop": "box3d", "params": "folder", "stub": "note"}
FILL = {**KIND_COLOURS, "repeat": "#e8daef", "loop": "#ebdef0", "params": KIND_COLOURS["param"]}


def folded_dot(
    graph: Graph,
    *,
    vm: ViewModel | None = None,
    expanded: Iterable[str] | None = None,
    status: Mapping[int, str] | None = None,
    rankdir: str = "TB",
) -> str:
    """DOT source of ``graph``'s view model with ``expanded`` groups open (default: the first
    screen's); ``status`` overrides node statuses as in :func:`~tpx_inspect.export.to_dot`."""
    vm = vm if vm is not None else build(graph)
    comp = _Composer(vm, vm.default_expanded if expanded is None else expanded)
    comp.route()
    statuses = statuses_with(graph, status)
    worst = _worst(comp.box, statuses)
    lines = [
        f"digraph {_quote(f'run{graph.run}_graph{graph.id}')} {{",
        f"\tgraph [fontname=Helvetica fontsize=10 rankdir={rankdir} compound=true]",
        '\tnode [fontname=Helvetica fontsize=10 shape=box style="rounded,filled"]',
        '\tedge [color="#7f8c8d" fontname=Helvetica fontsize=8]',
    ]
    _emit_frame(lines, comp, "root", worst, 1)
    for frame in comp.frames:
        for (a, b), (count, shape) in comp.edges[frame].items():
            lines.append(_edge(comp, a, b, count, shape))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _worst(box_of: list[str], statuses: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for b, s in zip(box_of, statuses):
        if b not in out or _RANK[s] > _RANK[out[b]]:
            out[b] = s
    return out


def _emit_frame(lines: list[str], comp: _Composer, root: str, worst: dict, ind: int) -> None:
    stack: list[tuple[str, int, bool]] = [(root, ind, False)]
    index = _cluster_index(comp)
    while stack:
        frame, depth, closing = stack.pop()
        tab = "\t" * depth
        if closing:
            lines.append("\t" * (depth - 1) + "}")
            continue
        if frame != root:
            g = comp.vm.groups[frame]
            lines.append("\t" * (depth - 1) + f"subgraph cluster_{index[frame]} {{")
            lines.append(f'{tab}label={_quote(g.title)} style=dashed color="#a569bd"')
            stack.append((frame, depth, True))
        for item in reversed(comp.items[frame]):
            if item in comp.edges:
                stack.append((item, depth + 1, False))
        for item in comp.items[frame]:
            if item not in comp.edges:
                lines.append(tab + _node(comp, item, worst))


def _node(comp: _Composer, item: str, worst: dict[str, str]) -> str:
    label = comp.label(item)
    if item.startswith("i:"):
        attrs = {"shape": "note", "style": "filled", "fillcolor": FILL["stub"], "fontsize": "8"}
    elif item.startswith("n"):
        attrs = {"fillcolor": FILL.get(comp.vm.cols.kind[int(item[1:])], FILL["op"])}
    else:
        kind = comp.vm.groups[item].kind
        attrs = {"shape": SHAPES[kind], "fillcolor": FILL[kind]}
    status = worst.get(item, "ok")
    attrs["color"] = STATUS_COLOURS[status]
    if status != "ok":
        attrs["penwidth"] = "2.5"
    body = " ".join(f"{k}={_quote(v)}" for k, v in attrs.items())
    return f"{_quote(item)} [label={_quote(label)} {body} id={_quote(item)}]"


def _edge(comp: _Composer, a: str, b: str, count: int, shape: tuple) -> str:
    attrs = [f"label={_quote(shape_label(shape) + (f' (x{count})' if count > 1 else ''))}"]
    a = _anchor(comp, a, last=True, attrs=attrs, key="ltail")
    b = _anchor(comp, b, last=False, attrs=attrs, key="lhead")
    return f"\t{_quote(a)} -> {_quote(b)} [{' '.join(attrs)}]"


def _anchor(comp: _Composer, item: str, *, last: bool, attrs: list[str], key: str) -> str:
    """A frame is not a DOT node: an edge ends on one of its boxes, clipped at the cluster."""
    if item not in comp.edges:
        return item
    frame = item
    while frame in comp.edges:
        items = comp.items[frame]
        frame = items[-1] if last else items[0]
    attrs.append(f"{key}={_quote(_cluster_name(comp, item))}")
    return frame


def _cluster_name(comp: _Composer, frame: str) -> str:
    return "cluster_" + str(_cluster_index(comp)[frame])


def _cluster_index(comp: _Composer) -> dict[str, int]:
    index = getattr(comp, "_clusters", None)
    if index is None:
        index = {}
        stack = ["root"]
        while stack:
            f = stack.pop()
            if f != "root":
                index[f] = len(index)
            stack.extend(x for x in reversed(comp.items[f]) if x in comp.edges)
        comp._clusters = index  # type: ignore[attr-defined]
    return index
