"""Where every node and edge of a view model sits in its tree, as arrays, so that the layout of
an expansion state costs what it shows rather than the size of the graph.

Built once per view model (:func:`index_of`): per node, the group holding it at every tree depth;
per graph edge, the innermost group holding both ends and the two children of that group that
hold them; per (group, edge entering it from outside), the child of the group the edge enters.
An expansion state then needs only array lookups: the groups that are open and shown, the box
showing a node, the edges of one frame, and its input stubs (one per frame and source box).

>>> import tpx as tp, tpx_inspect
>>> from tpx_inspect.viewmodel.tree import build
>>> w = tp.ones(2, requires_grad=True)
>>> def f():
...     with tp.scope("enc"):
...         h = (w * 2).exp()
...     (h + w).sum().backward()
>>> vm = build(tpx_inspect.trace(f).graphs[0])
>>> ix = index_of(vm)
>>> ix.boxes(ix.shown({"root"}))
['n0', 's:enc', 's:enc', 'n3', 'n4']
>>> sorted(ix.inner("root"))
[('n0', 'n3', 1, 3), ('n0', 's:enc', 1, 0), ('n3', 'n4', 1, 4), ('s:enc', 'n3', 1, 2)]
>>> ix.stubs(ix.shown({"root", "s:enc"}))
{'s:enc': [('n0', 'n1', 1, 0)]}
"""

from __future__ import annotations

import threading

import numpy as np

from tpx_inspect.viewmodel.tree import ViewModel

__all__ = ["TreeIndex", "index_of"]

_LOCK = threading.Lock()


def index_of(vm: ViewModel) -> TreeIndex:
    """The :class:`TreeIndex` of ``vm`` (made on first use, then kept with it)."""
    ix = vm.memo.get("index")
    if ix is None:
        with _LOCK:
            ix = vm.memo.get("index")
            if ix is None:
                ix = vm.memo["index"] = TreeIndex(vm)
    return ix


class TreeIndex:
    """Array views of a view model's tree (see the module docstring). Group codes are the
    positions of the groups in ``vm.groups`` (root 0); an item code ``>= G`` is node
    ``code - G``."""

    def __init__(self, vm: ViewModel) -> None:
        self.cols = vm.cols  # NOTE: not vm itself: the model keeps its index (no cycle)
        self.gids = list(vm.groups)
        self.code = {g: k for k, g in enumerate(self.gids)}
        groups = list(vm.groups.values())
        self.G = len(groups)
        self.parent = np.array([-1 if g.parent is None else self.code[g.parent] for g in groups])
        self.depth = np.array([g.depth for g in groups], np.int64)
        self.by_level = [np.flatnonzero(self.depth == d) for d in range(int(self.depth.max()) + 1)]
        self._inner_of: dict[str, list] = {}  # NOTE: filled per group on first use
        self._where: tuple[list[int], list[int]] | None = None
        self.glev = self._levels(np.array([self.code[o] for o in vm.owner], np.int64))
        self._edges()

    def _levels(self, owner: np.ndarray) -> np.ndarray:
        """``glev[l, i]``: the group at depth ``l`` holding node ``i`` (-1: none); one spare
        row of -1 at the bottom."""
        glev = np.full((len(self.by_level) + 1, len(owner)), -1, np.int64)
        cur, idx = owner, np.arange(len(owner))
        while len(cur):
            glev[self.depth[cur], idx] = cur
            cur = self.parent[cur]
            keep = cur >= 0
            cur, idx = cur[keep], idx[keep]
        return glev

    def _edges(self) -> None:
        ptr, flat = self.cols.csr()
        d = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
        j = np.arange(len(flat)) - ptr[d]
        keep = flat >= 0
        s, d, self.ej = flat[keep], d[keep], j[keep]
        self.ed = d
        gs, gd = self.glev[:, s], self.glev[:, d]
        level = ((gs == gd) & (gs >= 0)).sum(0) - 1  # NOTE: true down to the innermost common
        cols = np.arange(len(s))
        lca = gs[level, cols]
        below = np.minimum(level + 1, len(self.glev) - 1)
        cs = np.where(gs[below, cols] >= 0, gs[below, cols], self.G + s)
        cd = np.where(gd[below, cols] >= 0, gd[below, cols], self.G + d)
        self._inner = _aggregate(lca, cs, cd, cols)
        none = np.zeros(0, np.int64)
        parts = [(none, none, none, none)]
        for lv in range(1, len(self.glev) - 1):  # NOTE: the edge enters the group at depth lv
            enters = (level < lv) & (gd[lv] >= 0)
            child = np.where(gd[lv + 1] >= 0, gd[lv + 1], self.G + d)
            parts.append((gd[lv][enters], child[enters], s[enters], cols[enters]))
        self.in_frame, self.in_child, self.in_src, self.in_edge = (
            np.concatenate([p[i] for p in parts]) for i in range(4)
        )

    def item(self, code: int) -> str:
        """The id of item ``code`` (a group id or ``n<id>``)."""
        return self.gids[code] if code < self.G else f"n{code - self.G}"

    def shape(self, edge: int) -> tuple:
        """The shape carried by graph edge number ``edge``."""
        if self._where is None:
            self._where = (self.ed.tolist(), self.ej.tolist())
        d, j = self._where
        return tuple(self.cols.inputs[d[edge]][j[edge]][1])

    def shown(self, expanded) -> np.ndarray:
        """Per group: open and shown (the root and every ancestor open too)."""
        opened = np.zeros(self.G, bool)
        opened[[self.code[g] for g in expanded if g in self.code]] = True
        opened[0] = True
        out = np.zeros(self.G, bool)
        out[0] = True
        for gl in self.by_level[1:]:
            out[gl] = opened[gl] & out[self.parent[gl]]
        return out

    def box_codes(self, shown: np.ndarray, nodes: np.ndarray | None = None) -> np.ndarray:
        """The item code of the box showing each of ``nodes`` (None: every node)."""
        gl = self.glev if nodes is None else self.glev[:, nodes]
        ids = np.arange(gl.shape[1]) if nodes is None else np.asarray(nodes)
        closed = (gl >= 0) & ~shown[np.maximum(gl, 0)]
        first = closed.argmax(0)
        return np.where(closed.any(0), gl[first, np.arange(gl.shape[1])], self.G + ids)

    def boxes(self, shown: np.ndarray, nodes=None) -> list[str]:
        """The ids of the boxes showing ``nodes`` (None: every node)."""
        return [self.item(k) for k in self.box_codes(shown, nodes).tolist()]

    def inner(self, group: str) -> list[tuple[str, str, int, int]]:
        """The edges between children of ``group`` (source item, target item, graph edges
        merged, first edge number): the same in every state where ``group`` is open, so
        they are kept once made."""
        hit = self._inner_of.get(group)
        if hit is not None:
            return hit
        lca, cs, cd, count, first = self._inner
        k = self.code[group]
        a, b = np.searchsorted(lca, k), np.searchsorted(lca, k, "right")
        hit = self._inner_of[group] = [
            (self.item(x), self.item(y), n, e) for x, y, n, e in
            zip(cs[a:b].tolist(), cd[a:b].tolist(), count[a:b].tolist(), first[a:b].tolist())
        ]  # fmt: skip
        return hit

    def inner_shapes(self, group: str) -> list[tuple[str, str, int, tuple]]:
        """:meth:`inner` with the shape of each edge's first graph edge instead of its
        number (kept once made)."""
        hit = self._inner_of.get("\0" + group)
        if hit is None:
            hit = self._inner_of["\0" + group] = [
                (a, b, n, self.shape(e)) for a, b, n, e in self.inner(group)
            ]
        return hit

    def stubs(self, shown: np.ndarray) -> dict[str, list[tuple[str, str, int, int]]]:
        """Per open frame, its input stubs' edges ``(source box, target item, graph edges,
        first edge number)``, ordered by their first edge: an edge from outside a frame ends
        at the innermost open frame holding its target's box, from one stub per source box."""
        child = self.in_child
        keep = shown[self.in_frame] & ~((child < self.G) & shown[np.minimum(child, self.G - 1)])
        frame, child, edge = self.in_frame[keep], child[keep], self.in_edge[keep]
        src = self.box_codes(shown, self.in_src[keep])
        f, a, b, count, first = _aggregate(frame, src, child, edge)
        out: dict[str, list] = {}
        for k in np.argsort(first, kind="stable").tolist():
            out.setdefault(self.gids[f[k]], []).append(
                (self.item(int(a[k])), self.item(int(b[k])), int(count[k]), int(first[k]))
            )
        return out


def _aggregate(key0, key1, key2, edge) -> tuple[np.ndarray, ...]:
    """Unique ``(key0, key1, key2)`` rows sorted, with their count and smallest ``edge``."""
    order = np.lexsort((edge, key2, key1, key0))
    k0, k1, k2, e = key0[order], key1[order], key2[order], edge[order]
    if not len(order):
        return k0, k1, k2, np.zeros(0, np.int64), e
    new = np.ones(len(order), bool)
    new[1:] = (k0[1:] != k0[:-1]) | (k1[1:] != k1[:-1]) | (k2[1:] != k2[:-1])
    starts = np.flatnonzero(new)
    count = np.diff(np.append(starts, len(order)))
    return k0[starts], k1[starts], k2[starts], count, e[starts]
