"""The hierarchy of a graph's view: scopes, folded repeats, inferred loops, parameter groups.

:func:`build` turns a captured graph into a :class:`ViewModel`: a tree of groups whose leaves
are the graph's nodes. Groups are the scopes (``s:model.blocks.3``); N identical consecutive
sibling scopes folded into one repeat group (``r:s:model.blocks.0+40``, drawn "x40", expanding
to its copies); loops of unscoped code found from repeated source lines (iterations
``l:<first>-<last>`` inside a repeat group ``r:l:<first>-<last>+<N>``), so an unscoped graph
gets a hierarchy too; and the parameters and leaves of a group folded into ``p:<group>`` when
there are many. Every leaf (parameter, buffer, input) sits in the innermost group holding all
its consumers. Ids are derived from scope paths and node ids only, so they are the same in
every layout and request.
Every walk is iterative.

>>> import tpx as tp, tpx_inspect
>>> w = tp.ones(2, requires_grad=True)
>>> def f():
...     h = w
...     for k in range(3):
...         with tp.scope(f"block{k}"):
...             h = (h * w).exp()
...     h.sum().backward()
>>> vm = build(tpx_inspect.trace(f).graphs[0])
>>> vm.groups["root"].children
('n0', 'r:s:block0+3', 'n7')
>>> vm.groups["r:s:block0+3"].label, vm.groups["r:s:block0+3"].children
('block0-2 ×3', ('s:block0', 's:block1', 's:block2'))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from tpx_inspect._util import paused_gc
from tpx_inspect.collapse import shape_label
from tpx_inspect.viewmodel._columns import Columns, columns
from tpx_inspect.viewmodel.loops import Loop, find_loops

if TYPE_CHECKING:
    from tpx_inspect.records import Graph

__all__ = ["LOOP_MIN", "PARAM_FOLD", "Group", "ViewModel", "build"]

ROOT = "root"
LOOP_MIN = 16
"""A group's own ops are searched for loops when there are at least this many."""
PARAM_FOLD = 8
"""A group holding more leaves (parameters, buffers, inputs) than this folds them into one."""
FIRST_SCREEN = 60
"""The default expansion opens groups breadth-first while at most this many boxes show."""
LEAF_KINDS = ("leaf", "param")


@dataclass(frozen=True)
class Group:
    """A group of the view: ``kind`` is root, scope, repeat, loop or params; ``label`` is its
    box's label when collapsed, ``title`` its frame's when expanded; ``children`` are group
    ids and node box ids (``n<id>``) in drawing order; ``size`` the graph nodes below it.

    >>> Group("s:a", "scope", "a (3)", "a", "root", ("n1",), 3, 1, "a", 1, 1).count
    1
    """

    id: str
    kind: str
    label: str
    title: str
    parent: str | None
    children: tuple[str, ...]
    size: int
    depth: int
    scope: str
    count: int
    first: int


@dataclass(frozen=True)
class ViewModel:
    """The view model of one graph: groups (root first, parents before children), the group
    directly holding each node, and the groups the first screen opens."""

    groups: dict[str, Group]
    owner: tuple[str, ...]
    default_expanded: tuple[str, ...]
    cols: Columns = field(repr=False)
    _labels: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    def label(self, i: int) -> str:
        """The box label of node ``i``: its op (a parameter's name within its scope) and shape."""
        text = self._labels.get(i)
        if text is None:
            text = self._labels[i] = _node_label(self.cols, i, self.groups[self.owner[i]].scope)
        return text

    def ancestors(self, box: str) -> list[str]:
        """The groups above box ``box`` (a group id or ``n<id>``), innermost first."""
        out = []
        g = self.owner[int(box[1:])] if box.startswith("n") else self.groups[box].parent
        while g is not None:
            out.append(g)
            g = self.groups[g].parent
        return out

    def members(self, group: str) -> list[int]:
        """The graph node ids below ``group``, sorted."""
        out: list[int] = []
        stack = [group]
        while stack:
            for c in self.groups[stack.pop()].children:
                if c.startswith("n"):
                    out.append(int(c[1:]))
                else:
                    stack.append(c)
        return sorted(out)


class _Tree:
    """The mutable tree while it is built: parent and kind per group, owner per node."""

    def __init__(self, n: int) -> None:
        self.parent: dict[str, str | None] = {ROOT: None}
        self.kind: dict[str, str] = {ROOT: "root"}
        self.label: dict[str, str] = {ROOT: ""}
        self.scope: dict[str, str] = {ROOT: ""}
        self.count: dict[str, int] = {}
        self.owner: list[str] = [ROOT] * n

    def add(self, gid: str, kind: str, parent: str, label: str, scope: str) -> str:
        assert gid not in self.parent, f"group id {gid} made twice"  # a cycle would follow
        self.parent[gid] = parent
        self.kind[gid] = kind
        self.label[gid] = label
        self.scope[gid] = scope
        return gid

    def depth(self, gid: str) -> int:
        d = 0
        g = self.parent[gid]
        while g is not None:
            d += 1
            g = self.parent[g]
        return d

    def lca(self, a: str, b: str, depth: dict[str, int]) -> str:
        while depth[a] > depth[b]:
            a = self.parent[a]  # type: ignore[assignment]
        while depth[b] > depth[a]:
            b = self.parent[b]  # type: ignore[assignment]
        while a != b:
            a, b = self.parent[a], self.parent[b]  # type: ignore[assignment]
        return a


def _scope_groups(t: _Tree, c: Columns, ops: list[int]) -> None:
    for scope in sorted({c.scope[i] for i in ops if c.scope[i]}):
        parent = ROOT
        parts = scope.split(".")
        for k in range(len(parts)):
            path = ".".join(parts[: k + 1])
            gid = "s:" + path
            if gid not in t.parent:
                name = f"{parts[k - 1]}.{parts[k]}" if k and parts[k].isdigit() else parts[k]
                t.add(gid, "scope", parent, name, path)
            parent = gid
    for i in ops:
        t.owner[i] = "s:" + c.scope[i] if c.scope[i] else ROOT


def _tokens(c: Columns, ops: list[int]) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    ids: dict[tuple, int] = {}
    tok = [
        ids.setdefault((c.op[i], tuple(c.shape[i]), c.dtype[i], c.where(i)), len(ids)) for i in ops
    ]
    pos = {n: k for k, n in enumerate(ops)}
    a, b = [], []
    for k, i in enumerate(ops):
        for s in c.srcs[i]:
            if s is not None and s in pos:
                a.append(pos[s])
                b.append(k)
    return np.array(tok, np.int64), (np.array(a, np.int64), np.array(b, np.int64))


def _where(c: Columns, i: int) -> str:
    src = c.where(i)
    return "" if src is None else f" {src[0].rsplit('/', 1)[-1]}:{src[1]}"


def _loops(t: _Tree, c: Columns, group: str, ops: list[int]) -> None:
    tokens, edges = _tokens(c, ops)
    stack: list[tuple[str, int, tuple[Loop, ...]]] = [(group, 0, tuple(find_loops(tokens, edges)))]
    while stack:
        parent, offset, loops = stack.pop()
        for lp in loops:
            first = ops[offset + lp.start]
            body = f"l:{first}-{ops[offset + lp.start + lp.period - 1]}"  # the first copy's id
            rid = t.add(f"r:{body}+{lp.copies}", "repeat", parent,
                        f"loop{_where(c, first)} ×{lp.copies}", t.scope[parent])  # fmt: skip
            t.count[rid] = lp.copies
            for j in range(lp.copies):
                a = offset + lp.start + j * lp.period
                members = ops[a : a + lp.period]
                if len(members) == 1:  # NOTE: a one-op body: the copies are the ops themselves
                    t.owner[members[0]] = rid
                    continue
                iid = t.add(f"l:{members[0]}-{members[-1]}", "loop", rid, f"#{j}",
                            t.scope[parent])  # fmt: skip
                for i in members:
                    t.owner[i] = iid
                stack.append((iid, a, lp.inner))


def _place_leaves(t: _Tree, c: Columns, leaves: list[int]) -> None:
    depth = {g: t.depth(g) for g in t.parent}
    home: dict[int, str] = {}
    for i in range(len(c)):
        for s in c.srcs[i]:
            if s is not None and c.kind[s] in LEAF_KINDS:
                g = t.owner[i]
                home[s] = g if s not in home else t.lca(home[s], g, depth)
    for i in leaves:
        fallback = "s:" + c.scope[i] if "s:" + c.scope[i] in t.parent else ROOT
        g = home.get(i, fallback)
        t.owner[i] = t.parent[g] if t.kind[g] == "repeat" else g  # type: ignore[assignment]


@lru_cache(maxsize=65536)
def _template(label: str) -> str:
    return re.sub(r"\d+", "#", label)


def _kids(t: _Tree, n: int) -> dict[str, list[str]]:
    kids: dict[str, list[str]] = {g: [] for g in t.parent}
    for g, p in t.parent.items():
        if p is not None:
            kids[p].append(g)
    for i in range(n):
        kids[t.owner[i]].append(f"n{i}")
    return kids


def _fold_params(t: _Tree, c: Columns, kids: dict[str, list[str]]) -> None:
    for g in list(kids):
        leaves = [x for x in kids[g] if x[0] == "n" and c.kind[int(x[1:])] in LEAF_KINDS]
        if len(leaves) <= PARAM_FOLD:
            continue
        what = "params" if all(c.kind[int(x[1:])] == "param" for x in leaves) else "leaves"
        pid = t.add("p:" + g, "params", g, what, t.scope[g])
        moved = set(leaves)
        kids[g] = [x for x in kids[g] if x not in moved] + [pid]
        kids[pid] = leaves
        for x in leaves:
            t.owner[int(x[1:])] = pid


def _bottom_up(t: _Tree, kids: dict[str, list[str]]) -> tuple[dict[str, int], dict[str, int]]:
    """``first`` (smallest node id below) and ``size`` of every group; sorts every group's
    children by their first node."""
    order = sorted(t.parent, key=t.depth, reverse=True)
    first: dict[str, int] = {}
    size: dict[str, int] = {}
    for g in order:

        def key(x: str) -> int:
            return int(x[1:]) if x[0] == "n" else first[x]

        kids[g].sort(key=key)
        first[g] = key(kids[g][0]) if kids[g] else 1 << 62
        size[g] = sum(1 if x[0] == "n" else size[x] for x in kids[g])
    return first, size


def _node_tokens(c: Columns) -> np.ndarray:
    """One int per node for its op, shapes, dtype, and name and scope up to their indices."""
    ids: dict[tuple, int] = {}
    out = np.empty(len(c), np.int64)
    for i, (label, scope, shape, ins) in enumerate(zip(c.label, c.scope, c.shape, c.inputs)):
        key = (c.kind[i], c.op[i], tuple(shape), c.dtype[i], _template(label), _template(scope),
               tuple([tuple(e[1]) for e in ins]))  # fmt: skip
        out[i] = ids.setdefault(key, len(ids))
    return out


def _structure(c: Columns, tokens: np.ndarray, csr: tuple, m: np.ndarray) -> tuple:
    """Members ``m``'s tokens, input counts and inputs (an offset inside the group, -2 from a
    leaf or from outside, -1 none): equal for two groups = identical structure."""
    ptr, flat = csr
    counts = ptr[m + 1] - ptr[m]
    idx = np.repeat(ptr[m] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    src = flat[idx]
    dst = np.repeat(m, counts)
    pos = np.minimum(np.searchsorted(m, src), len(m) - 1)
    inside = (src >= 0) & (m[pos] == src)
    rel = np.where(inside, dst - src, np.where(src < 0, -1, -2))
    return tokens[m], counts, rel


def _members(kids: dict[str, list[str]], gid: str) -> np.ndarray:
    out: list[int] = []
    stack = [gid]
    while stack:
        for x in kids[stack.pop()]:
            if x[0] == "n":
                out.append(int(x[1:]))
            else:
                stack.append(x)
    return np.sort(np.array(out, np.int64))


def _range_label(t: _Tree, parent: str, copies: list[str]) -> str:
    a, b = t.label[copies[0]], t.label[copies[-1]]
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k] and not a[k].isdigit():
        k += 1
    return f"{a}-{b[k:]} ×{len(copies)}"


def _fold_repeats(
    t: _Tree, c: Columns, kids: dict[str, list[str]], size: dict, first: dict
) -> None:
    cache: list = []  # NOTE: tokens and input arrays, made for the first candidate pair only
    seq_of: dict[str, tuple] = {}

    def same(a: str, b: str) -> bool:
        if t.kind[b] != "scope" or _template(t.label[a]) != _template(t.label[b]):
            return False
        if not cache:
            leaf = np.array([k in LEAF_KINDS for k in c.kind], bool)
            cache.extend((_node_tokens(c), c.csr(), leaf))
        for g in (a, b):
            if g not in seq_of:
                m = _members(kids, g)
                # NOTE: ops only: the block holding the model's input x differs by that leaf
                seq_of[g] = _structure(c, cache[0], cache[1], m[~cache[2][m]])
        return all(np.array_equal(x, y) for x, y in zip(seq_of[a], seq_of[b]))

    for g in [g for g in kids if t.kind[g] in ("root", "scope", "loop")]:
        # NOTE: leaves first (they have no inputs: drawn on top anyway), so that a weight
        # shared by the blocks does not split their run
        seq = [x for x in kids[g] if x[0] == "n" and c.kind[int(x[1:])] in LEAF_KINDS]
        seq += [x for x in kids[g] if not (x[0] == "n" and c.kind[int(x[1:])] in LEAF_KINDS)]
        out, i = [], 0
        while i < len(seq):
            j = i + 1
            if seq[i][0] == "s":
                while j < len(seq) and seq[j][0] == "s" and same(seq[i], seq[j]):
                    j += 1
            if j - i < 2:
                out.append(seq[i])
                i += 1
                continue
            copies = seq[i:j]
            rid = t.add(f"r:{copies[0]}+{len(copies)}", "repeat", g,
                        _range_label(t, g, copies), t.scope[g])  # fmt: skip
            t.count[rid] = len(copies)
            for x in copies:
                t.parent[x] = rid
            kids[rid] = copies
            size[rid] = sum(size[x] for x in copies)
            first[rid] = first[copies[0]]
            out.append(rid)
            i = j
        kids[g] = out


def _node_label(c: Columns, i: int, scope: str) -> str:
    title = c.title(i)
    if c.kind[i] in LEAF_KINDS and scope and title.startswith(scope + "."):
        title = title[len(scope) + 1 :]
    return f"{title}\n{shape_label(tuple(c.shape[i]))}"


def _first_screen(t: _Tree, kids: dict[str, list[str]]) -> list[str]:
    expanded = [ROOT]
    visible = len(kids[ROOT])
    queue = [x for x in kids[ROOT] if x[0] != "n"]
    k = 0
    while k < len(queue):
        g = queue[k]
        k += 1
        if t.kind[g] in ("repeat", "params") or visible + len(kids[g]) - 1 > FIRST_SCREEN:
            continue
        expanded.append(g)
        visible += len(kids[g]) - 1
        queue.extend(x for x in kids[g] if x[0] != "n")
    return expanded


def build(graph: Graph) -> ViewModel:
    """The :class:`ViewModel` of ``graph`` (see the module's docstring)."""
    with paused_gc():  # NOTE: hundreds of thousands of small tuples, no cycles
        return _build(graph)


def _build(graph: Graph) -> ViewModel:
    c = columns(graph)
    n = len(c)
    t = _Tree(n)
    ops = [i for i in range(n) if c.kind[i] not in LEAF_KINDS]
    _scope_groups(t, c, ops)
    by_group: dict[str, list[int]] = {}
    for i in ops:
        by_group.setdefault(t.owner[i], []).append(i)
    for g, members in by_group.items():
        if len(members) >= LOOP_MIN:
            _loops(t, c, g, members)
    _place_leaves(t, c, [i for i in range(n) if c.kind[i] in LEAF_KINDS])
    kids = _kids(t, n)
    _fold_params(t, c, kids)
    first, size = _bottom_up(t, kids)
    _fold_repeats(t, c, kids, size, first)
    expanded = _first_screen(t, kids)
    return _freeze(t, c, kids, first, size, expanded)


def _freeze(t: _Tree, c: Columns, kids, first, size, expanded) -> ViewModel:
    groups: dict[str, Group] = {}
    stack = [(ROOT, 0)]
    while stack:
        g, d = stack.pop()
        label = t.label[g] if t.kind[g] == "repeat" else f"{t.label[g]} ({size[g]})"
        title = t.label[g] if t.kind[g] != "loop" else f"iteration {t.label[g][1:]}"
        groups[g] = Group(g, t.kind[g], label, title, t.parent[g], tuple(kids[g]), size[g], d,
                          t.scope[g], t.count.get(g, 1), first.get(g, 0))  # fmt: skip
        stack.extend((x, d + 1) for x in reversed(kids[g]) if x[0] != "n")
    return ViewModel(groups, tuple(t.owner), tuple(expanded), c)
