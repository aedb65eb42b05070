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


def layout_json(
    lay: Layout, viewport: tuple[float, float, float, float] | None = None, min_size: float = 0
) -> dict[str, Any]:
    """``lay`` as JSON (coordinates as computed: sizes and gaps are whole points, so they are
    short exact binary fractions): only what meets ``viewport`` (x, y, w, h; None:
    everything); a frame whose sides are both under ``min_size`` is sent as one aggregate,
    without its contents."""
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
                    "x": f.x, "y": f.y, "w": f.w, "h": f.h,
                })  # fmt: skip
            continue
        if _meets(f.x, f.y, f.w, f.h, viewport):
            frames.append({"id": f.id, "kind": f.kind, "label": f.label, "parent": f.parent,
                           "depth": f.depth, "size": f.size, "x": f.x, "y": f.y,
                           "w": f.w, "h": f.h})  # fmt: skip
    inside = {b.id for b in lay.boxes if b.parent in hidden}
    boxes = [_box(b) for b in lay.boxes if b.id not in inside and _meets(*b[4:8], viewport)]
    edges = [
        {"src": e.src, "dst": e.dst, "count": e.count, "label": e.label,
         "points": e.points}
        for e in lay.edges
        if e.src not in inside and e.dst not in inside and e.src not in hidden
        and e.dst not in hidden and _line_meets(e.points, viewport)
    ]  # fmt: skip
    return {
        "width": lay.width, "height": lay.height, "total_boxes": len(lay.boxes),
        "boxes": boxes, "frames": frames, "edges": edges, "aggregates": aggregates,
    }  # fmt: skip


def _line_meets(points: Iterable[tuple[float, float]], vp: tuple | None) -> bool:
    if vp is None:
        return True
    xs, ys = zip(*points)
    return _meets((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2, max(xs) - min(xs),
                  max(ys) - min(ys), vp)  # fmt: skip


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
    field, _, text = query.partition(":") if ":" in query else (None, "", query)
    if field not in (None, *FIELDS):
        field, text = None, query
    text = text.strip().lower()
    if not text:
        return []
    hit = np.zeros(len(vm.owner), bool)
    for name in (field,) if field else FIELDS[:1] + FIELDS[2:]:  # NOTE: a title is one of them
        codes, values = _field(vm, name)
        match = [v == text if name == "op" and field else text in v for v in values]
        hit |= np.asarray(match, bool)[codes]
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
