"""A region of an arranged layout, and where one item is, without composing the whole layout.

A fully expanded 100,000-node graph has 114,688 boxes; composing them all and sending 35 MB
before the first frame is what made Expand all slow. :func:`region_json` walks the placed
frames from the root and descends only into those that meet the viewport and are not smaller
than ``min_size`` (those come as one aggregate each), so an answer costs what it shows; it
is the same answer as :func:`~tpx_inspect.viewmodel.wire.layout_json` cutting the whole
layout. :func:`locate` gives the box showing a node (or any item) and its place.

>>> import tpx as tp, tpx_inspect
>>> from tpx_inspect.viewmodel import build
>>> from tpx_inspect.viewmodel.layout import Arranged
>>> w = tp.ones(2, requires_grad=True)
>>> def f():
...     with tp.scope("enc"):
...         h = (w * 2).exp()
...     (h + w).sum().backward()
>>> vm = build(tpx_inspect.trace(f).graphs[0])
>>> arr = Arranged(vm, {"root", "s:enc"})
>>> doc = region_json(arr, None, 1000)
>>> [a["id"] for a in doc["aggregates"]], sorted(b["id"] for b in doc["boxes"])
(['s:enc'], ['n0', 'n3', 'n4'])
>>> where = locate(arr, node=2)
>>> where["box"], where["frames"]
('n2', ['s:enc'])
>>> locate(Arranged(vm, {"root"}), node=2)["box"]
's:enc'
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from tpx_inspect.collapse import shape_label
from tpx_inspect.viewmodel.layout import HEADER, Arranged, Edge, _line
from tpx_inspect.viewmodel.tree import ROOT
from tpx_inspect.viewmodel.wire import document

__all__ = ["locate", "region_json"]

_label = lru_cache(maxsize=4096)(shape_label)


def _meets(x: float, y: float, w: float, h: float, vp: tuple | None) -> bool:
    if vp is None:
        return True
    vx, vy, vw, vh = vp  # NOTE: the same arithmetic as wire._meets, so the same answers
    return x + w / 2 >= vx and x - w / 2 <= vx + vw and y + h / 2 >= vy and y - h / 2 <= vy + vh


def _edge_meets(points: tuple, vp: tuple | None) -> bool:
    if vp is None:
        return True
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    lo_x, hi_x, lo_y, hi_y = min(xs), max(xs), min(ys), max(ys)
    return _meets((lo_x + hi_x) / 2, (lo_y + hi_y) / 2, hi_x - lo_x, hi_y - lo_y, vp)


def region_json(
    arr: Arranged, viewport: tuple[float, float, float, float] | None, min_size: float = 0
) -> dict[str, Any]:
    """The JSON of what meets ``viewport`` (None: everything), frames whose sides are both
    under ``min_size`` sent as one aggregate without their contents (see the module)."""
    c, placed = arr.composer, arr.placed
    boxes, frames, edges, aggregates = [], [], [], []
    stack = [(ROOT, 0.0, 0.0)]
    while stack:
        f, x0, y0 = stack.pop()
        items, sizes, centres, _, _ = placed[f]
        rects: dict[str, tuple] = {}
        gone: set[str] = set()
        for item, (w, h), (cx, cy) in zip(items, sizes, centres):
            x, y = x0 + cx, y0 + cy
            rects[item] = (x, y, w, h)
            meets = _meets(x, y, w, h, viewport)
            if item not in placed:
                if meets:
                    boxes.append(c._box(item, f, x, y, w, h))
            elif max(w, h) < min_size:
                gone.add(item)
                if meets:
                    aggregates.append(c._frame(item, x, y, w, h))
            elif meets:
                frames.append(c._frame(item, x, y, w, h))
                stack.append((item, x - placed[item][3] / 2, y - h / 2 + HEADER))
        for (a, b), (count, label) in c.edges[f].items():
            if a in gone or b in gone:
                continue
            points = _line(rects[a], rects[b])
            if _edge_meets(points, viewport):
                edges.append(Edge(a, b, count, _label(label), points))
    return document(arr.width, arr.height, arr.total_boxes, boxes, frames, edges, aggregates)


def _chain(arr: Arranged, node: int | None, box: str | None) -> list[str]:
    """The open frames from the root down to the item that shows ``node`` (or ``box``),
    that item last; KeyError when there is no such node or item."""
    vm = arr.composer.vm
    if box is None or box.startswith("n"):
        i = node if box is None else int(box[1:])
        if not 0 <= i < len(vm.owner):  # type: ignore[operator]
            raise KeyError(f"no node {i} ({len(vm.owner)} nodes)")
        path = [*vm.ancestors(f"n{i}")[::-1], f"n{i}"]
    elif box.startswith("i:"):
        frame = box[2:].split("<", 1)[0]
        if frame not in arr.placed or box not in arr.composer.stubs:
            raise KeyError(f"no input stub {box!r} in this state")
        path = [*vm.ancestors(frame)[::-1], frame, box]
    else:
        if box not in vm.groups:
            raise KeyError(f"no group {box!r}")
        path = [*vm.ancestors(box)[::-1], box]
    for k, item in enumerate(path[1:], 1):
        if item not in arr.placed:  # NOTE: the outermost closed group (or the item) shows it
            return path[: k + 1]
    return path


def locate(arr: Arranged, *, node: int | None = None, box: str | None = None) -> dict[str, Any]:
    """Where ``node`` (or the box or frame ``box``) is drawn: the id of the item showing it
    (itself, or the outermost collapsed group holding it), the open frames around it
    (outermost first) and its centre and size; KeyError when unknown."""
    path = _chain(arr, node, box)
    if len(path) == 1:  # NOTE: the root: the whole extent
        return {"box": ROOT, "frames": [], "x": arr.width / 2, "y": arr.height / 2,
                "w": arr.width, "h": arr.height}  # fmt: skip
    x0 = y0 = 0.0
    for f, item in zip(path, path[1:]):
        items, sizes, centres, _, _ = arr.placed[f]
        where = arr.index.get(f)
        if where is None:
            where = arr.index[f] = {x: k for k, x in enumerate(items)}
        k = where[item]
        (w, h), (cx, cy) = sizes[k], centres[k]
        x, y = x0 + cx, y0 + cy
        if item in arr.placed:
            x0, y0 = x - arr.placed[item][3] / 2, y - h / 2 + HEADER
    return {"box": path[-1], "frames": path[1:-1], "x": x, "y": y, "w": w, "h": h}
