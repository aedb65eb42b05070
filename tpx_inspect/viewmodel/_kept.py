"""What a kept view-model sidecar answers before the trace is read: the group tree checked
to be one (:func:`owner_of`) and :class:`Kept`, the search fields and the box showing each node
(see :mod:`tpx_inspect.viewmodel.persist`, which reads them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpx_inspect.viewmodel.tree import ROOT

__all__ = ["Kept", "owner_of"]


def owner_of(tree: dict[str, Any]) -> tuple[str, ...]:
    """The group holding each node, checking that the kept tree is one: parents listed
    first, every child's group its own, every node in exactly one group."""
    n = int(tree["nodes"])
    parent: dict[str, str | None] = {}
    owner: list[str | None] = [None] * n
    for row in tree["groups"]:
        gid, up = row[0], row[4]
        if gid in parent or (up is None) != (gid == ROOT) or (up is not None and up not in parent):
            raise ValueError(f"group {gid!r}: not a tree listed parents first")
        parent[gid] = up
    for row in tree["groups"]:
        for c in row[5]:
            if c[0] == "n":
                i = int(c[1:])
                if not 0 <= i < n or owner[i] is not None:
                    raise ValueError(f"node box {c!r} of group {row[0]!r}: unknown or placed twice")
                owner[i] = row[0]
            elif parent.get(c, "") != row[0]:
                raise ValueError(f"child {c!r} of group {row[0]!r} is not its group")
    if None in owner:
        raise ValueError(f"node {owner.index(None)} is in no group")
    if any(x not in parent for x in tree["default_expanded"]):
        raise ValueError("the first screen opens an unknown group")
    return tuple(owner)  # type: ignore[arg-type]


class Kept:
    """The kept tree and search fields of one graph: search and the boxes showing nodes,
    answered before the trace is read (a fresh server's first search).

    ``search(query)`` as :func:`~tpx_inspect.viewmodel.wire.search`; ``boxes(expanded,
    nodes)``: the id of the box showing each node with the groups ``expanded`` open."""

    def __init__(self, tree: dict[str, Any], codes: np.ndarray, values: dict[str, Any]) -> None:
        self.owner = owner_of(tree)
        self.n = len(self.owner)
        self.parent = {row[0]: row[4] for row in tree["groups"]}
        self.default_expanded = tuple(tree["default_expanded"])
        names, lists = values["fields"], values["values"]
        if codes.shape != (len(names), self.n) or len(lists) != len(names):
            raise ValueError(f"search codes of shape {codes.shape} for {self.n} nodes")
        for row, vals in zip(codes, lists):
            if self.n and not (row.min() >= 0 and row.max() < len(vals)):
                raise ValueError("a search code past its values")
        self.fields = {k: (codes[j], [str(v) for v in lists[j]]) for j, k in enumerate(names)}

    def search(self, query: str) -> list[int]:
        from tpx_inspect.viewmodel.wire import match

        return match(query, self.fields.__getitem__, self.n)

    def boxes(self, expanded: Any, nodes: list[int]) -> list[str]:
        opened = set(expanded) | {ROOT}
        shown: dict[str, str | None] = {}  # group -> the outermost closed group at or above it

        def outer(g: str) -> str | None:  # NOTE: iterative, each group worked out once
            chain, up = [], g
            while up is not None and up not in shown:
                chain.append(up)
                up = self.parent[up]
            above = shown[up] if up is not None else None
            for x in reversed(chain):
                above = above if above is not None else (None if x in opened else x)
                shown[x] = above
            return shown[g]

        return [outer(self.owner[i]) or f"n{i}" for i in nodes]
