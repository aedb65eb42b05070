"""What only a live run knows, kept by ``Capture(live=True)`` for the checks.

The checks read one graph model, the captured :class:`~tpx_inspect.records.Graph`. A live
capture also fills each graph's :class:`~tpx_inspect.check_view.LiveInfo`: the rule objects and
backends of the nodes, ``tp.Function`` classes, hooks, ``tpx.grad`` passes and the executions in
engine order; and it keeps the nodes recorded since the last backward, so that a forward whose
outputs are already gone can still be read as a graph.
"""

from __future__ import annotations

import dataclasses
import weakref
from operator import attrgetter
from typing import Any

from tpx import observe
from tpx_inspect.check_view import LiveInfo
from tpx_inspect.records import Graph

_seq = attrgetter("seq")


class LiveState:
    """The live facts of one capture: backends by node, hooked nodes, nodes since the last
    backward, and ``where`` (the location that records without a user frame are given)."""

    __slots__ = ("backends", "hooked", "since_backward", "where")

    def __init__(self, where: str | None = None) -> None:
        self.where = where
        self.hooked: weakref.WeakSet = weakref.WeakSet()
        self.backends: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.since_backward: list = []

    def forward(self, node: Any, output: Any) -> None:
        """A node was recorded (and is pending in the capture)."""
        self.backends[node] = _backend_name(output)
        self.since_backward.append(node)

    def executed(self, node: Any) -> None:
        """A node's rule ran: remember whether a hook could replace its gradient."""
        if observe.has_pre_hooks(node):
            self.hooked.add(node)

    def attach(self, graph: Graph, order: list, b: Any, root: str) -> Graph:
        """``graph`` with its :class:`LiveInfo` (``b``: the backward's record, or None)."""
        raw = sorted(order, key=_seq)  # NOTE: the builder's node ids: recording order
        assert len(raw) == len(graph.nodes)
        index = {n: i for i, n in enumerate(raw)}
        live = LiveInfo(
            partial=b.is_grad if b is not None else False,
            runs=None if b is None else tuple(index[n] for n in b.nodes_run() if n in index),
            hooked=frozenset(i for i, n in enumerate(raw) if n in self.hooked),
            backends=tuple(_node_backend(n, self.backends) for n in raw),
            rules=tuple(getattr(n, "rule", None) for n in raw),
            functions=_functions(raw),
            root=root,
            where=self.where,
        )  # fmt: skip
        return dataclasses.replace(graph, live=live)

    def rest_roots(self) -> list:
        """The roots of the nodes recorded since the last backward (empty: none)."""
        return sorted(roots_of(self.since_backward), key=_seq)


def roots_of(nodes: list) -> list:
    """The nodes of ``nodes`` that are no input of another one of them, in their order."""
    used = {id(e) for n in nodes for e in n.edges if e is not None}
    return [n for n in nodes if id(n) not in used]


def _backend_name(value: Any) -> str:
    backend = getattr(value, "backend", None)
    return getattr(backend, "name", "numpy")


def _node_backend(node: Any, backends: Any) -> str:
    variable = getattr(node, "variable", None)
    if variable is not None:
        return _backend_name(variable)
    return backends.get(node, "numpy")


def _functions(raw: list) -> dict[str, Any]:
    out = {}
    for n in raw:
        cls = observe.function_class(n) if getattr(n, "op", None) is not None else None
        if cls is not None:
            out[n.op.value] = cls
    return out
