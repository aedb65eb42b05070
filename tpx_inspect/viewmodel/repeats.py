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


class _Shapes:
    """The graph's inputs as arrays: CSR sources and a code per input's shape."""

    def __init__(self, c: Columns) -> None:
        self.tokens = node_tokens(c)
        self.ptr, self.flat = c.csr()
        self.shape = _codes([e[1] for ins in c.inputs for e in ins], tuple)
        self.leaf = np.array([k in LEAF_KINDS for k in c.kind], bool)

    def structure(self, m: np.ndarray) -> bytes:
        """Ops ``m``'s tokens, input counts, input shapes and inputs (an offset inside the
        group, -2 from a leaf or from outside, -1 none) as bytes: equal for two groups =
        identical structure."""
        m = m[~self.leaf[m]]  # NOTE: ops only: the block holding the input x differs by it
        ptr, flat = self.ptr, self.flat
        counts = ptr[m + 1] - ptr[m]
        idx = np.repeat(ptr[m] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        src = flat[idx]
        dst = np.repeat(m, counts)
        pos = np.minimum(np.searchsorted(m, src), len(m) - 1)
        inside = (src >= 0) & (m[pos] == src)
        rel = np.where(inside, dst - src, np.where(src < 0, -1, -2))
        parts = (self.tokens[m], counts, self.shape[idx], rel)
        return b"|".join(np.ascontiguousarray(p, np.int64).tobytes() for p in parts)


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


def _range_label(t: Any, copies: list[str]) -> str:
    a, b = t.label[copies[0]], t.label[copies[-1]]
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k] and not a[k].isdigit():
        k += 1
    return f"{a}-{b[k:]} ×{len(copies)}"


def fold_repeats(t: Any, c: Columns, kids: dict[str, list[str]], size: dict, first: dict) -> None:
    """Fold runs of identical consecutive sibling scopes of tree ``t`` into repeat groups
    (``r:<first copy>+<N>``), updating ``kids``, ``size`` and ``first`` in place."""
    arrays: list[_Shapes] = []  # NOTE: made for the first candidate pair only
    seq_of: dict[str, bytes] = {}

    def same(a: str, b: str) -> bool:
        if t.kind[b] != "scope" or template(t.label[a]) != template(t.label[b]):
            return False
        if not arrays:
            arrays.append(_Shapes(c))
        for g in (a, b):
            if g not in seq_of:
                seq_of[g] = arrays[0].structure(_members(kids, g))
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
