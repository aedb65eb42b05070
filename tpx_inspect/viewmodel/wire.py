"""The view model as JSON for the HTTP API: the group tree, a layout clipped to a viewport with
level of detail, server-side search and per-box colour values.

>>> import tpx as tp, tpx_inspect
>>> from tpx_inspect.viewmodel import build, layout
>>> w = tp.ones(2, requires_grad=True)
>>> def f():
...     with tp.scope("enc"):
...         h = (w * 2).exp()
...     (h + w).sum().backward()
>>> vm = build(tpx_inspect.trace(f).graphs[0])
>>> doc = layout_json(layout(vm, {"root", "s:enc"}), min_size=1000)
>>> [a["id"] for a in doc["aggregates"]], sorted(b["id"] for b in doc["boxes"])
(['s:enc'], ['n0', 'n3', 'n4'])
>>> search(vm, "exp")
[2]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tpx_inspect._util import paused_gc
from tpx_inspect.viewmodel.layout import Layout
from tpx_inspect.viewmodel.tree import ROOT, ViewModel

__all__ = [
    "box_values", "document", "fields", "layout_json", "match", "records", "search", "tree_json",
]  # fmt: skip

RECORD_FIELDS = ("kind", "op", "label", "title", "scope", "source", "shape", "dtype", "group")


def tree_json(vm: ViewModel) -> dict[str, Any]:
    """Every group (no per-node records) and the first screen's expansion."""
    return {
        "nodes": len(vm.owner), "root": ROOT, "default_expanded": list(vm.default_expanded),
        "groups": [
            {"id": g.id, "kind": g.kind, "label": g.label, "title": g.title, "parent": g.parent,
             "children": list(g.children), "size": g.size, "depth": g.depth, "count": g.count,
             "scope": g.scope}
            for g in vm.groups.values()
        ],
    }  # fmt: skip


def _meets(rect: np.ndarray, vp: tuple | None) -> np.ndarray:
    """Which of the rectangles (rows of centre x, y and size w, h) meet viewport ``vp``."""
    if vp is None:
        return np.ones(len(rect), bool)
    vx, vy, vw, vh = vp
    x, y, w, h = rect.T
    return (x + w / 2 >= vx) & (x - w / 2 <= vx + vw) & (y + h / 2 >= vy) & (y - h / 2 <= vy + vh)


class _Arrays:
    """A layout's geometry as arrays, made once per layout (a cached layout answers many
    viewports): frames' and boxes' rectangles and parent frames, edges' ends and extents."""

    def __init__(self, lay: Layout) -> None:
        fidx = {f.id: k for k, f in enumerate(lay.frames)}
        bidx = {b.id: k for k, b in enumerate(lay.boxes)}
        self.fparent = [fidx.get(f.parent, -1) for f in lay.frames]  # type: ignore[arg-type]
        self.frect = _rects(lay.frames)
        self.bparent = np.array([fidx.get(b.parent, -1) for b in lay.boxes], np.int64)
        self.brect = _rects(lay.boxes)

        def end(item: str) -> int:  # NOTE: box k -> k, frame k -> -1 - k
            k = bidx.get(item)
            return k if k is not None else -1 - fidx[item]

        self.esrc = np.array([end(e.src) for e in lay.edges], np.int64)
        self.edst = np.array([end(e.dst) for e in lay.edges], np.int64)
        pts = [e.points for e in lay.edges]
        if all(len(p) == 2 for p in pts):  # NOTE: straight edges (all of them today)
            ends = np.array(pts, float).reshape(-1, 2, 2)
            lo, hi = ends.min(1), ends.max(1)
        else:
            lo = np.array([np.min(p, 0) for p in pts], float).reshape(-1, 2)
            hi = np.array([np.max(p, 0) for p in pts], float).reshape(-1, 2)
        self.erect = np.column_stack([(lo + hi) / 2, hi - lo])


def _rects(items: list) -> np.ndarray:
    """Centre x, y and size w, h of boxes or frames, one row each."""
    n = len(items)
    cols = [np.fromiter((getattr(b, k) for b in items), float, n) for k in ("x", "y", "w", "h")]
    return np.column_stack(cols) if n else np.zeros((0, 4))


def _hidden(a: _Arrays, min_size: float) -> tuple[np.ndarray, list[int]]:
    """Frames not sent (inside an aggregate, or one), and the aggregates (the outermost)."""
    small = (np.maximum(a.frect[:, 2], a.frect[:, 3]) < min_size).tolist()
    hidden = [False] * len(small)
    tops = []
    for k, p in enumerate(a.fparent):  # NOTE: parents come before children
        if p >= 0 and hidden[p]:
            hidden[k] = True
        elif small[k]:
            hidden[k] = True
            tops.append(k)
    return np.array(hidden, bool), tops


def layout_json(
    lay: Layout, viewport: tuple[float, float, float, float] | None = None, min_size: float = 0
) -> dict[str, Any]:
    """``lay`` as JSON (coordinates as computed: sizes and gaps are whole points, so they are
    short exact binary fractions): only what meets ``viewport`` (x, y, w, h; None:
    everything); a frame whose sides are both under ``min_size`` is sent as one aggregate,
    without its contents. Selection by arrays kept with the layout: a viewport of a big
    cached layout costs what it shows."""
    if viewport is None and min_size <= 0:
        boxes, frames, edges, aggregates = lay.boxes, lay.frames, lay.edges, []
    else:
        a = lay.memo.get("arrays")
        if a is None:
            with paused_gc():  # NOTE: hundreds of thousands of short-lived numbers
                a = lay.memo["arrays"] = _Arrays(lay)
        hidden, tops = _hidden(a, min_size)
        fmeets = _meets(a.frect, viewport)
        aggregates = [lay.frames[k] for k in tops if fmeets[k]]
        frames = [lay.frames[k] for k in np.flatnonzero(~hidden & fmeets).tolist()]
        inside = np.append(hidden, False)[a.bparent]  # NOTE: parent -1 (the root) is shown
        boxes = [lay.boxes[k] for k in np.flatnonzero(~inside & _meets(a.brect, viewport))]
        gone = np.concatenate([inside, hidden[::-1]])  # NOTE: index -1 - k is frame k
        keep = ~gone[a.esrc] & ~gone[a.edst] & _meets(a.erect, viewport)
        edges = [lay.edges[k] for k in np.flatnonzero(keep).tolist()]
    return document(lay.width, lay.height, len(lay.boxes), boxes, frames, edges, aggregates)


def document(width, height, total, boxes, frames, edges, aggregates) -> dict[str, Any]:
    """The JSON of a layout (or of a part of one): boxes, frames, edges, aggregates."""
    return {
        "width": width, "height": height, "total_boxes": total,
        "boxes": [_box(b) for b in boxes],
        "frames": [{"id": f.id, "kind": f.kind, "label": f.label, "parent": f.parent,
                    "depth": f.depth, "size": f.size, "x": f.x, "y": f.y, "w": f.w, "h": f.h}
                   for f in frames],
        "edges": [{"src": e.src, "dst": e.dst, "count": e.count, "label": e.label,
                   "points": e.points} for e in edges],
        "aggregates": [{"id": f.id, "kind": f.kind, "label": f.label, "size": f.size,
                        "x": f.x, "y": f.y, "w": f.w, "h": f.h} for f in aggregates],
    }  # fmt: skip


def _box(b) -> dict[str, Any]:
    out = {"id": b.id, "kind": b.kind, "label": b.label, "parent": b.parent, "x": b.x,
           "y": b.y, "w": b.w, "h": b.h, "size": b.size}  # fmt: skip
    if b.node is not None:
        out["node"] = b.node
    if b.count != 1:
        out["count"] = b.count
    if b.link is not None:
        out["link"] = b.link
    return out


FIELDS = ("op", "title", "label", "scope", "source", "kind")


def _where(src: Any) -> tuple[str, int]:
    return (src[0], src[1]) if isinstance(src, list | tuple) else (src.file, src.line)


def _raw(vm: ViewModel, name: str) -> list:
    c = vm.cols
    if name == "source":
        return [None if x is None else _where(x) for x in c.source]
    if name == "title":
        return [c.title(i) for i in range(len(c))]
    return getattr(c, name)


def _field(vm: ViewModel, name: str) -> tuple[np.ndarray, list[str]]:
    """Per node, a code into the field's distinct lower-cased values (made once per model)."""
    memo = vm.memo.setdefault("search", {})
    if name not in memo:
        seen: dict = {}
        raw = _raw(vm, name)
        codes = np.fromiter((seen.setdefault(v, len(seen)) for v in raw), np.int64, len(raw))
        text = ["" if v is None else "{}:{}".format(*v) if name == "source" else str(v)
                for v in seen]  # fmt: skip
        memo[name] = (codes, [t.lower() for t in text])
    return memo[name]


def search(vm: ViewModel, query: str) -> list[int]:
    """Ids of the nodes matching ``query``: a case-insensitive substring of the op, name,
    scope, source or kind; ``op:``, ``scope:``, ``source:``, ``label:``, ``kind:`` restrict
    it to that field (``op:`` matches the op exactly). Each field's distinct values are
    matched once, then their nodes picked out as arrays."""
    return match(query, lambda name: _field(vm, name), len(vm.owner))


def fields(vm: ViewModel) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Per search field: a code per node into the field's distinct lower-cased values."""
    return {name: _field(vm, name) for name in FIELDS}


def match(query: str, field: Any, n: int) -> list[int]:
    """The search of :func:`search` over ``n`` nodes whose fields ``field(name)`` gives as
    (codes, values): a model's, or those kept beside a trace.

    >>> match("op:add", lambda name: (np.array([0, 1, 0]), ["add", "mul"]), 3)
    [0, 2]
    """
    name_, _, text = query.partition(":") if ":" in query else (None, "", query)
    if name_ not in (None, *FIELDS):
        name_, text = None, query
    text = text.strip().lower()
    if not text:
        return []
    hit = np.zeros(n, bool)
    for name in (name_,) if name_ else FIELDS[:1] + FIELDS[2:]:  # NOTE: a title is one of them
        codes, values = field(name)
        found = [v == text if name == "op" and name_ else text in v for v in values]
        hit |= np.asarray(found, bool)[codes]
    return np.flatnonzero(hit).tolist()


def box_values(box_of: np.ndarray, values: np.ndarray) -> dict[int, float]:
    """The largest finite value of each box's nodes, by box code (``box_of[i]``: the code of
    node ``i``'s box); boxes without a finite value are left out.

    >>> box_values(np.array([0, 0, 3]), np.array([1.0, 2.0, float("nan")]))
    {0: 2.0}
    """
    ok = np.isfinite(values)
    codes, v = box_of[ok], values[ok].astype(np.float64)
    if not len(codes):
        return {}
    order = np.lexsort((-v, codes))
    first = np.ones(len(order), bool)
    first[1:] = codes[order][1:] != codes[order][:-1]
    best = order[first]
    return dict(zip(codes[best].tolist(), v[best].tolist()))


def records(vm: ViewModel, ids: list[int], fields: Iterable[str] = RECORD_FIELDS) -> dict:
    """Columns of node fields for ``ids`` (``group``: the group directly holding the node)."""
    c = vm.cols
    get = {
        "kind": lambda i: c.kind[i], "op": lambda i: c.op[i], "label": lambda i: c.label[i],
        "title": c.title, "scope": lambda i: c.scope[i], "shape": lambda i: list(c.shape[i]),
        "source": lambda i: None if c.where(i) is None else "{}:{}".format(*c.where(i)),
        "dtype": lambda i: c.dtype[i], "group": lambda i: vm.owner[i],
    }  # fmt: skip
    out: dict[str, list] = {"ids": list(ids)}
    for f in fields:
        if f not in get:
            raise ValueError(f"unknown record field {f!r}; use some of {', '.join(get)}")
        out[f] = [get[f](i) for i in ids]
    return out
