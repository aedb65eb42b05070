"""Folding repeated structure: N identical consecutive sibling scopes become one group ×N.

Two scopes are identical when their ops match one for one: op, kind, output shape and dtype,
the shapes they read, their names and scopes up to the indices in them (``blocks.3.attn`` reads
``blocks.#.attn``), and where each input comes from (an offset inside the scope, or from
outside). Every node gets one integer token for what it is; a scope's structure is then a few
integer arrays, compared as bytes.

>>> import tpx as tp, tpx_inspect
>>> from tpx_inspect.viewmodel.tree import build
>>> w = tp.ones(2, requires_grad=True)
>>> def f():
...     h = w
...     for k in range(4):
...         with tp.scope(f"layer{k}"):
...             h = (h * w).exp() if k < 3 else h.log()
...     h.sum().backward()
>>> vm = build(tpx_inspect.trace(f).graphs[0])
>>> [vm.groups[x].label for x in vm.groups["root"].children if not x.startswith("n")]
['layer0-2 ×3', 'layer3 (1)']
"""

from __future__ import annotations

import re
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

import numpy as np

from tpx_inspect.viewmodel._columns import LEAF_KINDS, Columns

__all__ = ["fold_repeats", "template"]


@lru_cache(maxsize=65536)
def template(label: str) -> str:
    """``label`` with every number read as ``#``.

    >>> template("model.blocks.12.attn")
    'model.blocks.#.attn'
    """
    return re.sub(r"\d+", "#", label)


def _codes(values: list, key=None) -> np.ndarray:
    seen: dict = {}
    if key is None:
        return np.fromiter((seen.setdefault(v, len(seen)) for v in values), np.int64, len(values))
    return np.fromiter((seen.setdefault(key(v), len(seen)) for v in values), np.int64, len(values))


def _string_codes(values: list[str]) -> np.ndarray:
    """Codes of ``values`` read through :func:`template` (each distinct string read once, all
    of them in one pass of the pattern)."""
    raw = _codes(values)
    distinct = [v or "" for v in dict.fromkeys(values)]
    if any("\n" in v for v in distinct):
        read = [template(v) for v in distinct]
    else:  # NOTE: one substitution over the joined text instead of one call per string
        read = re.sub(r"\d+", "#", "\n".join(distinct)).split("\n")
    seen: dict[str, int] = {}
    return np.array([seen.setdefault(v, len(seen)) for v in read] or [0])[raw]


def node_tokens(c: Columns) -> np.ndarray:
    """One int per node for its kind, op, output shape, dtype, and name and scope up to their
    indices."""
    cols = [_codes(c.kind), _codes(c.op), _codes(c.shape, tuple), _codes(c.dtype),
            _string_codes(c.label), _string_codes(c.scope)]  # fmt: skip
    out = cols[0]
    for col in cols[1:]:  # NOTE: pairs of columns as one int, renumbered densely each time
        out = np.unique(out * (int(col.max(initial=0)) + 1) + col, return_inverse=True)[1]
    return out.reshape(-1)


class _Signatures:
    """The structure of groups as bytes (equal for two groups = identical structure): per op
    below the group, its token, input count, input shapes and inputs (an offset inside the
    group, -2 from a leaf or from outside, -1 none). Made for every group of one depth at
    once, from a snapshot of the tree taken before any fold (folding moves groups under
    repeats but never changes what lies below a group)."""

    def __init__(self, t: Any, c: Columns) -> None:
        self.tokens = node_tokens(c)
        self.ptr, self.flat = c.csr()
        self.shape = _codes([e[1] for ins in c.inputs for e in ins], tuple)
        self.leaf = np.array([k in LEAF_KINDS for k in c.kind], bool)
        gids = list(t.parent)
        self.code = {g: k for k, g in enumerate(gids)}
        parent = np.array([-1 if t.parent[g] is None else self.code[t.parent[g]] for g in gids])
        depth, cur = np.zeros(len(gids), np.int64), parent.copy()
        while (cur >= 0).any():
            depth += cur >= 0
            cur = np.where(cur >= 0, parent[np.maximum(cur, 0)], -1)
        self.depth = depth
        self.glev = np.full((int(depth.max()) + 1, len(c)), -1, np.int64)
        cur, idx = np.array([self.code[o] for o in t.owner], np.int64), np.arange(len(c))
        while len(cur):
            self.glev[depth[cur], idx] = cur
            cur = parent[cur]
            keep = cur >= 0
            cur, idx = cur[keep], idx[keep]
        self.levels: dict[int, tuple] = {}

    def _level(self, level: int) -> tuple:
        col = self.glev[level]
        ops = np.flatnonzero(~self.leaf & (col >= 0))
        order = ops[np.lexsort((ops, col[ops]))]  # ops grouped by their group, in id order
        grp = col[order]
        counts = self.ptr[order + 1] - self.ptr[order]
        ends = np.cumsum(counts)
        idx = np.repeat(self.ptr[order] - ends + counts, counts) + np.arange(int(counts.sum()))
        src, dst = self.flat[idx], np.repeat(order, counts)
        ok = src >= 0
        inside = ok & ~self.leaf[np.maximum(src, 0)] & (col[np.maximum(src, 0)] == col[dst])
        rel = np.where(inside, dst - src, np.where(ok, -2, -1))
        cut = np.flatnonzero(np.diff(grp)) + 1
        starts, stops = np.r_[0, cut], np.r_[cut, len(order)]
        spans = dict(zip(grp[starts].tolist(), zip(starts.tolist(), stops.tolist())))
        first_edge = np.r_[0, ends]
        return spans, self.tokens[order], counts, self.shape[idx], rel, first_edge

    def __call__(self, gid: str) -> bytes:
        k = self.code[gid]
        level = int(self.depth[k])
        if level not in self.levels:
            self.levels[level] = self._level(level)
        spans, tokens, counts, shapes, rel, first_edge = self.levels[level]
        a, b = spans.get(k, (0, 0))
        ea, eb = int(first_edge[a]), int(first_edge[b])
        parts = (tokens[a:b], counts[a:b], shapes[ea:eb], rel[ea:eb])
        return b"|".join(np.ascontiguousarray(p, np.int64).tobytes() for p in parts)


def _range_label(t: Any, copies: list[str]) -> str:
    a, b = t.label[copies[0]], t.label[copies[-1]]
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k] and not a[k].isdigit():
        k += 1
    return f"{a}-{b[k:]} ×{len(copies)}"


def fold_repeats(t: Any, c: Columns, kids: dict[str, list[str]], size: dict, first: dict) -> None:
    """Fold runs of identical consecutive sibling scopes of tree ``t`` into repeat groups
    (``r:<first copy>+<N>``), updating ``kids``, ``size`` and ``first`` in place."""
    signatures: list[_Signatures] = []  # NOTE: made for the first candidate pair only
    seq_of: dict[str, bytes] = {}
    tree = SimpleNamespace(parent=dict(t.parent), owner=list(t.owner))  # before any fold

    def same(a: str, b: str) -> bool:
        if t.kind[b] != "scope" or template(t.label[a]) != template(t.label[b]):
            return False
        if not signatures:
            signatures.append(_Signatures(tree, c))
        for g in (a, b):
            if g not in seq_of:
                seq_of[g] = signatures[0](g)
        return seq_of[a] == seq_of[b]

    for g in [g for g in kids if t.kind[g] in ("root", "scope", "loop")]:
        # NOTE: leaves first (they have no inputs: drawn on top anyway), so that a weight
        # shared by the blocks does not split their run
        is_leaf = [x[0] == "n" and c.kind[int(x[1:])] in LEAF_KINDS for x in kids[g]]
        seq = [x for x, leaf in zip(kids[g], is_leaf) if leaf]
        seq += [x for x, leaf in zip(kids[g], is_leaf) if not leaf]
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
            rid = t.add(f"r:{copies[0]}+{len(copies)}", "repeat", g, _range_label(t, copies),
                        t.scope[g])  # fmt: skip
            t.count[rid] = len(copies)
            for x in copies:
                t.parent[x] = rid
            kids[rid] = copies
            size[rid] = sum(size[x] for x in copies)
            first[rid] = first[copies[0]]
            out.append(rid)
            i = j
        kids[g] = out
