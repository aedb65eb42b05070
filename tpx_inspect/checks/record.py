"""Record live for the checks: a capture that keeps every value and what only a live run knows.

The checks read one graph model, the captured :class:`~tpx_inspect.records.Graph` (through
``graph.replay_node(i)`` and ``graph.backwards``). :func:`record` is a
:class:`~tpx_inspect.capture.Capture` that keeps every step and every value and fills each
graph's :class:`~tpx_inspect.check_view.LiveInfo`: the rule objects and backends of the nodes,
``tp.Function`` classes, hooks, ``tpx.grad`` and the executions in engine order.
"""

from __future__ import annotations

import dataclasses
import weakref
from operator import attrgetter
from typing import Any

import tpx
from tpx import observe
from tpx_inspect._policy import Policy
from tpx_inspect.capture import Capture
from tpx_inspect.check_view import LiveInfo
from tpx_inspect.records import Graph

_seq = attrgetter("seq")


class Recording(Capture):
    """A capture for the checks: every step (up to ``max_backwards``) in full, every value
    kept (``keep_values=False``: none), no timings, every thread.

    Reusable as the ``cap`` of :func:`tpx_inspect.script.run_captured`.

    >>> import tpx as tp
    >>> with Recording() as rec:
    ...     _ = tp.ones(2, requires_grad=True) * 2
    >>> [n.name for n in rec.graph().replay_nodes]
    ['AccumulateGrad', 'MulBackward']
    """

    def __init__(self, keep_values: bool = True, max_backwards: int | None = None) -> None:
        policy = Policy() if max_backwards is None else Policy(first=max_backwards)
        values = "all" if keep_values else "none"
        super().__init__(policy, values=values, timing=False, threads="all", name="checks")
        self.where: str | None = None
        self._grad_passes: dict[int, bool] = {}
        self._hooked: weakref.WeakSet = weakref.WeakSet()
        self._backends: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # NOTE: the nodes recorded since the last backward, held so that a forward whose
        # outputs are already gone (the tracing check) can still be read as a graph
        self._since_backward: list = []

    # -- observer events: the capture's, plus what only a live run knows ----------------------
    def on_node_forward(self, node: Any, inputs: tuple, output: Any, seconds: float) -> None:
        super().on_node_forward(node, inputs, output, seconds)
        if node in self._pending:
            self._backends[node] = _backend_name(output)
            self._since_backward.append(node)

    def on_backward_start(self, roots: Any, grads: dict, order: list, info: Any) -> None:
        super().on_backward_start(roots, grads, order)
        stack = self._stack()
        if stack and stack[-1] is not None:
            self._grad_passes[id(stack[-1])] = info.is_grad

    def on_node_executed(
        self, node: Any, grad_output: Any, grad_inputs: tuple, seconds: float
    ) -> None:
        super().on_node_executed(node, grad_output, grad_inputs, seconds)
        if observe.has_pre_hooks(node):
            self._hooked.add(node)

    def on_backward_end(self, roots: Any) -> None:
        super().on_backward_end(roots)
        self._since_backward = []

    # -- graphs ------------------------------------------------------------------------------
    def _build(self, kind: str, step: int, roots: list, order: list, b: Any) -> Graph:
        # NOTE: the checks read every step's values: no step is kept as statistics only
        self._builder.structures.clear()
        graph = super()._build(kind, step, roots, order, b)
        raw = sorted(order, key=_seq)  # NOTE: the builder's node ids: recording order
        assert len(raw) == len(graph.nodes)
        index = {n: i for i, n in enumerate(raw)}
        live = LiveInfo(
            partial=self._grad_passes.pop(id(b), False) if b is not None else False,
            runs=None if b is None else tuple(index[e[0]] for e in b.executed if e[0] in index),
            hooked=frozenset(i for i, n in enumerate(raw) if n in self._hooked),
            backends=tuple(_node_backend(n, self._backends) for n in raw),
            rules=tuple(getattr(n, "rule", None) for n in raw),
            functions=_functions(raw),
            root=self._builder.root,
            where=self.where,
        )  # fmt: skip
        return dataclasses.replace(graph, live=live)

    @property
    def graphs(self) -> tuple[Graph, ...]:
        """The graph of every backward kept, then one of the nodes recorded since the last
        backward (if any): what the checks read."""
        rest = self._rest()
        return (*self._graphs, rest) if rest is not None else tuple(self._graphs)

    def _rest(self) -> Graph | None:
        alive = self._since_backward
        if not alive:
            return None
        used = {id(e) for n in alive for e in n.edges if e is not None}
        roots = sorted((n for n in alive if id(n) not in used), key=_seq)
        order = tpx.reachable(roots)
        gid = len(self._graphs)
        graph = self._build("roots", -1, roots, order, None)
        return dataclasses.replace(graph, id=gid)

    def graph(self) -> Graph:
        """The one graph recorded (see :attr:`graphs`); an error names how many there are."""
        graphs = self.graphs
        if len(graphs) != 1:
            raise ValueError(
                f"the recording holds {len(graphs)} graphs (one per backward): read "
                "`.graphs`, or check them with run_graph_checks one at a time"
            )
        return graphs[0]


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


def record(keep_values: bool = True, max_backwards: int | None = None) -> Recording:
    """Observe every node recorded and every backward run inside the ``with`` block.

    With ``max_backwards``, observation stops after that many backward passes (a training
    script repeats the same graph; keeping every value of every step costs memory).

    >>> import tpx as tp
    >>> with record() as rec:
    ...     y = tp.asarray([0.5], requires_grad=True).sin()
    >>> rec.graph().replay_nodes[-1].name
    'SinBackward'
    """
    return Recording(keep_values, max_backwards)
