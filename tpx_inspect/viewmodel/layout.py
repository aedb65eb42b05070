"""The layout of a view model at an expansion state, composed from one layout per group.

An expanded group is a frame: its children (nodes, collapsed groups as single boxes, expanded
groups as frames) are laid out inside it by :func:`~tpx_inspect.viewmodel.layered.layered`, and
the frame is one box of its parent's layout. Each group's layout is cached by its geometry
(box sizes and edges), so identical blocks are laid out once, in every state and graph. An edge
joins the two boxes that show its ends in the innermost frame holding both; when its target
sits inside a frame, the frame gets one input stub per (frame, source box), never one per use.

>>> import tpx as tp, tpx_inspect
>>> from tpx_inspect.viewmodel.tree import build
>>> w = tp.ones(2, requires_grad=True)
>>> def f():
...     with tp.scope("enc"):
...         h = (w * 2).exp()
...     (h + w).sum().backward()
>>> vm = build(tpx_inspect.trace(f).graphs[0])
>>> lay = layout(vm, {"root"})
>>> sorted(b.id for b in lay.boxes), sorted((e.src, e.dst) for e in lay.edges)
(['n0', 'n3', 'n4', 's:enc'], [('n0', 'n3'), ('n0', 's:enc'), ('n3', 'n4'), ('s:enc', 'n3')])
>>> lay = layout(vm, {"root", "s:enc"})
>>> sorted(b.id for b in lay.boxes), [f.id for f in lay.frames]
(['i:s:enc<n0', 'n0', 'n1', 'n2', 'n3', 'n4'], ['s:enc'])
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from tpx_inspect._util import paused_gc
from tpx_inspect.collapse import shape_label
from tpx_inspect.viewmodel._index import index_of
from tpx_inspect.viewmodel.layered import layered
from tpx_inspect.viewmodel.tree import ROOT, ViewModel

__all__ = [
    "Arranged", "Box", "Edge", "Frame", "Layout", "box_size", "layout", "prepare", "state",
    "visible_boxes",
]  # fmt: skip

CHAR_W = 7.0  # points per label character (monospace 11px)
LINE_H = 16.0
PAD = 12.0  # frame padding
HEADER = 22.0  # frame title band


class Box(NamedTuple):
    """A drawn box: a node (``node`` set), a collapsed group or an input stub; centre
    ``(x, y)``, size ``(w, h)``; ``parent`` the frame holding it; ``link`` a stub's source.
    (Named tuples, not dataclasses: a layout makes tens of thousands.)"""

    id: str
    kind: str
    label: str
    parent: str
    x: float
    y: float
    w: float
    h: float
    node: int | None = None
    size: int = 1
    count: int = 1
    link: str | None = None


class Frame(NamedTuple):
    """An expanded group drawn as a rectangle (centre, size) titled ``label``."""

    id: str
    kind: str
    label: str
    parent: str | None
    x: float
    y: float
    w: float
    h: float
    depth: int
    size: int


class Edge(NamedTuple):
    """An edge between two drawn items (boxes or frames); ``count`` graph edges merged."""

    src: str
    dst: str
    count: int
    label: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Layout:
    """A composed layout: boxes, frames, edges and the bounding size."""

    boxes: list[Box]
    frames: list[Frame]
    edges: list[Edge]
    width: float
    height: float
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """What is derived from the layout once and kept with it (its geometry as arrays)."""


@lru_cache(maxsize=65536)
def box_size(label: str) -> tuple[float, float]:
    """``(width, height)`` of a box showing ``label`` (lines split on ``\\n``).

    >>> box_size("matmul\\n4x8")
    (60.0, 44.0)
    """
    lines = label.split("\n")
    return max(54.0, CHAR_W * max(len(s) for s in lines) + 18.0), LINE_H * len(lines) + 12.0


def visible_boxes(vm: ViewModel, expanded: Iterable[str]) -> list[str]:
    """Per node, the id of the box that shows it with the groups ``expanded`` open: the
    outermost collapsed group above it, else ``n<id>``."""
    ix = index_of(vm)
    return ix.boxes(ix.shown(expanded))


class _Cache:
    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.items: OrderedDict[tuple, tuple] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, sizes: list, pairs: list) -> tuple:
        key = (tuple(sizes), tuple(pairs))
        with self.lock:
            hit = self.items.get(key)
            if hit is not None:
                self.items.move_to_end(key)
                return hit
        value = layered(sizes, pairs)
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


CACHE = _Cache()
"""Layouts of groups by geometry, shared by every view model (identical blocks: one entry)."""


class _Composer:
    """One expansion state: the open frames, their items (children and input stubs) and
    their edges, from the view model's :class:`~tpx_inspect.viewmodel._index.TreeIndex`
    (array lookups: the cost follows what is shown, not the graph's size)."""

    def __init__(self, vm: ViewModel, expanded: Iterable[str]) -> None:
        self.vm = vm
        self.ix = index_of(vm)
        self.shown = self.ix.shown(expanded)
        self.frames = [self.ix.gids[k] for k in np.flatnonzero(self.shown).tolist()]
        self.items: dict[str, list[str]] = {f: list(vm.groups[f].children) for f in self.frames}
        self.edges: dict[str, dict[tuple[str, str], list]] = {f: {} for f in self.frames}
        self.stubs: dict[str, str] = {}  # stub id -> source box

    @property
    def box(self) -> list[str]:
        """Per node, the id of the box showing it."""
        return self.ix.boxes(self.shown)

    def route(self) -> None:
        """Edges between the items of each frame; an edge from outside a frame ends at its
        target's box from one stub per (frame, source box)."""
        ix = self.ix
        for f in self.frames:
            self.edges[f] = {(a, b): [n, shape] for a, b, n, shape in ix.inner_shapes(f)}
        for f, rows in ix.stubs(self.shown).items():
            made: list[str] = []
            edges = self.edges[f]
            for src, dst, n, e in rows:
                stub = f"i:{f}<{src}"
                if stub not in self.stubs:
                    self.stubs[stub] = src
                    made.append(stub)
                entry = edges.get((stub, dst))
                if entry is None:
                    edges[(stub, dst)] = [n, ix.shape(e)]
                else:
                    entry[0] += n
            self.items[f][:0] = made[::-1]

    def label(self, item: str) -> str:
        if item[0] == "n":
            return self.vm.label(int(item[1:]))
        if item.startswith("i:"):
            return "from " + self.label(self.stubs[item]).split("\n", 1)[0]
        return self.vm.groups[item].label

    def place(self) -> dict[str, tuple]:
        """Relative centres of every frame's items and each frame's inner size."""
        placed: dict[str, tuple] = {}
        for f in sorted(self.frames, key=lambda g: -self.vm.groups[g].depth):
            items = self.items[f]
            sizes = [self._size(x, placed) for x in items]
            index = {x: k for k, x in enumerate(items)}
            pairs = sorted((index[a], index[b]) for a, b in self.edges[f])
            centres, w, h = CACHE.get(sizes, pairs)
            placed[f] = (items, sizes, centres, w, h)
        return placed

    def _size(self, item: str, placed: dict[str, tuple]) -> tuple[float, float]:
        if item in placed:
            _, _, _, w, h = placed[item]
            return (max(w, box_size(self.vm.groups[item].title)[0]) + 2 * PAD, h + PAD + HEADER)
        return box_size(self.label(item))

    def compose(self, placed: dict[str, tuple]) -> Layout:
        boxes: list[Box] = []
        frames: list[Frame] = []
        rects: dict[str, tuple[float, float, float, float]] = {}
        _, _, _, width, height = placed[ROOT]
        stack = [(ROOT, 0.0, 0.0)]
        while stack:
            f, x0, y0 = stack.pop()
            items, sizes, centres, _, _ = placed[f]
            for item, (w, h), (cx, cy) in zip(items, sizes, centres):
                x, y = x0 + cx, y0 + cy
                rects[item] = (x, y, w, h)
                if item in placed:
                    frames.append(self._frame(item, x, y, w, h))
                    stack.append((item, x - placed[item][3] / 2, y - h / 2 + HEADER))
                else:
                    boxes.append(self._box(item, f, x, y, w, h))
        text = lru_cache(maxsize=None)(shape_label)
        edges = [
            Edge(a, b, count, text(label), _line(rects[a], rects[b]))
            for f in self.frames
            for (a, b), (count, label) in self.edges[f].items()
        ]
        return Layout(boxes, frames, edges, width, height)

    def _frame(self, g: str, x: float, y: float, w: float, h: float) -> Frame:
        grp = self.vm.groups[g]
        return Frame(g, grp.kind, grp.title, grp.parent, x, y, w, h, grp.depth, grp.size)

    def _box(self, item: str, parent: str, x: float, y: float, w: float, h: float) -> Box:
        if item[0] == "n":
            i = int(item[1:])
            return Box(item, self.vm.cols.kind[i], self.vm.label(i), parent, x, y, w, h, node=i)
        label = self.label(item)
        if item.startswith("i:"):
            src = self.stubs[item]
            node = int(src[1:]) if src.startswith("n") else None
            return Box(item, "stub", label, parent, x, y, w, h, node=node, link=src)
        g = self.vm.groups[item]
        return Box(item, g.kind, label, parent, x, y, w, h, size=g.size, count=g.count)


def _line(a: tuple, b: tuple) -> tuple[tuple[float, float], ...]:
    ax, ay, _, ah = a
    bx, by, _, bh = b
    if by >= ay:
        return ((ax, ay + ah / 2), (bx, by - bh / 2))
    return ((ax, ay - ah / 2), (bx, by + bh / 2))


class Arranged:
    """An expansion state routed and placed (every open frame's items with their centres
    relative to the frame, and its size) but not composed: a region of it, or where one item
    is, costs what it touches (:mod:`~tpx_inspect.viewmodel.region`); :meth:`layout` composes
    the whole :class:`Layout` once, when asked."""

    def __init__(self, vm: ViewModel, expanded: Iterable[str]) -> None:
        with paused_gc():  # NOTE: tens of thousands of small records, no cycles
            self.composer = c = _Composer(vm, expanded)
            c.route()
            self.placed = c.place()
        self.width, self.height = self.placed[ROOT][3], self.placed[ROOT][4]
        self.total_boxes = sum(
            1 for items, *_ in self.placed.values() for x in items if x not in self.placed
        )
        self.index: dict[str, dict[str, int]] = {}  # per frame: item -> position (on demand)
        self._layout: Layout | None = None
        self._lock = threading.Lock()
        self.memo: dict[str, Any] = {}  # NOTE: what a caller derives once (its encoded answer)

    def layout(self) -> Layout:
        """The whole composed layout (made once)."""
        with self._lock:
            if self._layout is None:
                with paused_gc():
                    self._layout = self.composer.compose(self.placed)
            return self._layout


def layout(vm: ViewModel, expanded: Iterable[str]) -> Layout:
    """The composed :class:`Layout` of ``vm`` with the groups ``expanded`` open (the root
    always is); an id of a group hidden inside a collapsed one is ignored."""
    return Arranged(vm, expanded).layout()


WARM_COPIES = 64
"""Repeats of the first screen with at least this many copies are laid out ahead of time."""


def state(expanded: Iterable[str]) -> tuple[str, ...]:
    """An expansion state as one key: the groups open, the root included, sorted.

    >>> state(["b", "a"])
    ('a', 'b', 'root')
    """
    return tuple(sorted(set(expanded) | {ROOT}))


def prepare(vm: ViewModel, most: int = 4) -> dict[tuple[str, ...], Arranged]:
    """Arrange and compose ahead of time the first screen and the states that open one big
    repeat of it (at most ``most``, the biggest first), so that the click that opens one
    costs a lookup; kept in ``vm.memo["ready"]`` by :func:`state` and returned.

    >>> import tpx as tp, tpx_inspect
    >>> from tpx_inspect.viewmodel.tree import build
    >>> x = tp.ones(2, requires_grad=True)
    >>> list(prepare(build(tpx_inspect.trace(lambda: (x * 2).sum().backward()).graphs[0])))
    [('root',)]
    """
    first = state(vm.default_expanded)
    ready = {first: Arranged(vm, first)}
    shown = ready[first].layout().boxes
    big = sorted((b for b in shown if b.kind == "repeat" and b.count >= WARM_COPIES),
                 key=lambda b: -b.size)  # fmt: skip
    for b in big[:most]:
        key = state((*first, b.id))
        ready[key] = Arranged(vm, key)
        ready[key].layout()
    vm.memo["ready"] = ready
    return ready
