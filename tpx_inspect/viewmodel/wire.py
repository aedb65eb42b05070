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

from tpx_inspect.viewmodel.layout import Layout
from tpx_inspect.viewmodel.tree import ROOT, ViewModel

__all__ = ["box_values", "layout_json", "records", "search", "tree_json"]

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


def _meets(x: float, y: float, w: float, h: float, vp: tuple | None) -> bool:
    if vp is None:
        return True
    vx, vy, vw, vh = vp
    return x + w / 2 >= vx and x - w / 2 <= vx + vw and y + h / 2 >= vy and y - h / 2 <= vy + vh


def _r(v: float) -> float:
    return round(v, 1)


def layout_json(
    lay: Layout, viewport: tuple[float, float, float, float] | None = None, min_size: float = 0
) -> dict[str, Any]:
    """``lay`` as JSON: only what meets ``viewport`` (x, y, w, h; None: everything); a frame
    whose sides are both under ``min_size`` is sent as one aggregate, without its contents."""
    hidden: set[str] = set()  # frames inside an aggregate: their contents are not sent
    frames, aggregates = [], []
    for f in lay.frames:  # NOTE: parents come before children
        if f.parent in hidden:
            hidden.add(f.id)
            continue
        if max(f.w, f.h) < min_size:
            hidden.add(f.id)
            if _meets(f.x, f.y, f.w, f.h, viewport):
                aggregates.append({
                    "id": f.id, "kind": f.kind, "label": f.label, "size": f.size,
                    "x": _r(f.x), "y": _r(f.y), "w": _r(f.w), "h": _r(f.h),
                })  # fmt: skip
            continue
        if _meets(f.x, f.y, f.w, f.h, viewport):
            frames.append({"id": f.id, "kind": f.kind, "label": f.label, "parent": f.parent,
                           "depth": f.depth, "size": f.size, "x": _r(f.x), "y": _r(f.y),
                           "w": _r(f.w), "h": _r(f.h)})  # fmt: skip
    inside = {b.id for b in lay.boxes if b.parent in hidden}
    boxes = [_box(b) for b in lay.boxes if b.id not in inside and _meets(*b[4:8], viewport)]
    edges = [
        {"src": e.src, "dst": e.dst, "count": e.count, "label": e.label,
         "points": [[_r(x), _r(y)] for x, y in e.points]}
        for e in lay.edges
        if e.src not in inside and e.dst not in inside and e.src not in hidden
        and e.dst not in hidden and _line_meets(e.points, viewport)
    ]  # fmt: skip
    return {
        "width": _r(lay.width), "height": _r(lay.height), "total_boxes": len(lay.boxes),
        "boxes": boxes, "frames": frames, "edges": edges, "aggregates": aggregates,
    }  # fmt: skip


def _line_meets(points: Iterable[tuple[float, float]], vp: tuple | None) -> bool:
    if vp is None:
        return True
    xs, ys = zip(*points)
    return _meets((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2, max(xs) - min(xs),
                  max(ys) - min(ys), vp)  # fmt: skip


def _box(b) -> dict[str, Any]:
    out = {"id": b.id, "kind": b.kind, "label": b.label, "parent": b.parent, "x": _r(b.x),
           "y": _r(b.y), "w": _r(b.w), "h": _r(b.h), "size": b.size}  # fmt: skip
    if b.node is not None:
        out["node"] = b.node
    if b.count != 1:
        out["count"] = b.count
    if b.link is not None:
        out["link"] = b.link
    return out


def _haystack(vm: ViewModel, i: int, field: str | None) -> str:
    c = vm.cols
    src = c.where(i)
    parts = {
        "op": c.op[i] or "", "title": c.title(i), "label": c.label[i], "scope": c.scope[i],
        "source": "" if src is None else f"{src[0]}:{src[1]}", "kind": c.kind[i],
    }  # fmt: skip
    return (parts[field] if field else " ".join(parts.values())).lower()


def search(vm: ViewModel, query: str) -> list[int]:
    """Ids of the nodes matching ``query``: a case-insensitive substring of the op, name,
    scope, source or kind; ``op:``, ``scope:``, ``source:``, ``label:``, ``kind:`` restrict
    it to that field (``op:`` matches the op exactly)."""
    field, _, text = query.partition(":") if ":" in query else (None, "", query)
    if field not in (None, "op", "scope", "source", "label", "kind", "title"):
        field, text = None, query
    text = text.strip().lower()
    if not text:
        return []
    if field == "op":
        return [i for i, op in enumerate(vm.cols.op) if (op or "").lower() == text]
    return [i for i in range(len(vm.owner)) if text in _haystack(vm, i, field)]


def box_values(box_of: list[str], values: np.ndarray) -> dict[str, float]:
    """The largest finite value of each box's nodes (boxes without one are left out)."""
    out: dict[str, float] = {}
    for b, v in zip(box_of, values.tolist()):
        if v == v and abs(v) != float("inf") and (b not in out or v > out[b]):
            out[b] = v
    return out


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
