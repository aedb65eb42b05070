"""What the checks read: a :class:`GraphRecord` of node values and backward events.

The checks never touch live ``GradFn`` objects; they read records. A record is made live by
:func:`record` (an observer of TPX's public observer API that keeps every node's input and
output values and every backward event) or offline from a saved trace that holds the values
(:func:`from_trace`). Node ids are small integers in recording order, never ``id()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

import p10
import tpx
from tpx import observe


@dataclass(frozen=True)
class NodeRecord:
    """One node of a recorded graph, with the values needed to replay it.

    ``inputs`` holds every input of the op in argument order (NumPy copies of tensors, other
    arguments as given), or ``None`` when the values were not recorded. Leaves
    (``AccumulateGrad``) have ``op=None`` and their value as ``output``.

    >>> NodeRecord(0, "AccumulateGrad", None, {}, (), (), None).is_leaf
    True
    """

    id: int
    name: str
    op: Any
    params: Mapping[str, Any]
    edges: tuple[int | None, ...]
    inputs: tuple[Any, ...] | None
    output: np.ndarray | None
    backend: str = "numpy"
    scope: str = ""
    source: str = "<unknown>"
    rule: Any = None
    function: Any = None
    hooked: bool = False
    unavailable: str | None = None
    """Why this node cannot be replayed here (a Function class that was not imported)."""

    @property
    def is_leaf(self) -> bool:
        """True for an ``AccumulateGrad`` node (a leaf tensor that requires grad)."""
        return self.op is None

    def where(self) -> str:
        """``Name #id (scope s) at file:line``, the way every finding names its node."""
        scope = f" in scope {self.scope!r}" if self.scope else ""
        return f"{self.name} #{self.id}{scope} at {self.source}"


@dataclass(frozen=True)
class Execution:
    """One node run by a backward: the gradient it received and those its rule returned."""

    node: int
    grad_output: np.ndarray
    grad_inputs: tuple[np.ndarray | None, ...]


@dataclass(frozen=True)
class Contribution:
    """``value`` from node ``source`` was summed into ``target``'s gradient, giving ``total``."""

    target: int
    source: int
    value: np.ndarray
    total: np.ndarray


@dataclass(frozen=True)
class BackwardRecord:
    """One backward pass: roots with their seed gradients, the planned order, what ran."""

    roots: tuple[int, ...]
    seeds: tuple[np.ndarray, ...]
    order: tuple[int, ...]
    executions: tuple[Execution, ...]
    contributions: tuple[Contribution, ...]
    partial: bool = False
    """True for ``tpx.grad``: only the nodes needed for the requested inputs run."""


@dataclass(frozen=True)
class GraphRecord:
    """Nodes in recording order plus the backward passes that ran over them.

    >>> import tpx as tp
    >>> with record() as rec:
    ...     x = tp.asarray([1.0, 2.0], requires_grad=True)
    ...     (x * x).sum().backward()
    >>> g = rec.graph()
    >>> [n.name for n in g.nodes], len(g.backwards[0].executions)
    (['AccumulateGrad', 'MulBackward', 'SumBackward'], 3)
    """

    nodes: tuple[NodeRecord, ...]
    backwards: tuple[BackwardRecord, ...] = ()

    def node(self, node_id: int) -> NodeRecord:
        """The node with id ``node_id``."""
        return self.nodes[node_id]

    def consumers(self) -> dict[int, list[int]]:
        """For each node id, the ids of the nodes that take it as an input (argument order)."""
        out: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for e in n.edges:
                if e is not None:
                    out[e].append(n.id)
        return out

    @cached_property
    def _first_runs(self) -> dict[int, Execution]:
        runs: dict[int, Execution] = {}
        for bw in self.backwards:
            for ex in bw.executions:
                runs.setdefault(ex.node, ex)
        return runs

    def execution(self, node_id: int) -> Execution | None:
        """The first backward run of ``node_id``, if any."""
        return self._first_runs.get(node_id)

    def incoming(self, node_id: int) -> np.ndarray | None:
        """The gradient ``node_id`` received in the first backward that ran it, if any."""
        ex = self.execution(node_id)
        return None if ex is None else ex.grad_output


def to_numpy(value: Any) -> Any:
    """A NumPy copy of a P10/TPX tensor; other values unchanged."""
    if isinstance(value, (tpx.Tensor, p10.Tensor)):
        return np.array(value.numpy())
    return value


def _backend_name(value: Any) -> str:
    backend = getattr(value, "backend", None)
    return getattr(backend, "name", "numpy")


class Recorder:
    """An observer that keeps every node's values and every backward event.

    Use it through :func:`record`; ``graph()`` freezes what it saw into a :class:`GraphRecord`.
    """

    def __init__(self, keep_values: bool = True, max_backwards: int | None = None) -> None:
        self.keep_values = keep_values
        self.max_backwards = max_backwards
        self._ids: dict[Any, int] = {}
        self._nodes: list[dict[str, Any]] = []
        self._backwards: list[dict[str, Any]] = []
        self._ended = 0

    @property
    def done(self) -> bool:
        """True once ``max_backwards`` backward passes ended: later events are ignored."""
        return self.max_backwards is not None and self._ended >= self.max_backwards

    # -- node ids ------------------------------------------------------------------------------
    def _id(self, node: Any) -> int:
        nid = self._ids.get(node)
        if nid is not None:
            return nid
        # NOTE: iterative post-order, so inputs get smaller ids than their consumers even for
        # nodes recorded before observation began (deep graphs must not recurse).
        stack = [node]
        while stack:
            top = stack[-1]
            if top in self._ids:
                stack.pop()
                continue
            missing = [e for e in top.edges if e is not None and e not in self._ids]
            if missing:
                stack.extend(reversed(missing))
                continue
            stack.pop()
            self._ids[top] = len(self._nodes)
            self._nodes.append(self._describe(top, self._ids[top]))
        return self._ids[node]

    def _describe(self, node: Any, nid: int) -> dict[str, Any]:
        if isinstance(node, tpx.AccumulateGrad):
            value = to_numpy(node.variable) if self.keep_values else None
            return {
                "id": nid, "name": node.name, "op": None, "params": {}, "edges": (),
                "inputs": (), "output": value, "backend": _backend_name(node.variable),
                "scope": "", "source": "<leaf>",
            }  # fmt: skip
        edges = tuple(None if e is None else self._ids[e] for e in node.edges)
        return {
            "id": nid, "name": node.name, "op": node.op, "params": dict(node.params),
            "edges": edges, "inputs": None, "output": None, "backend": "numpy",
            "scope": node.scope, "source": node.source, "rule": node.rule,
            "function": observe.function_class(node),
        }  # fmt: skip

    # -- observer events -------------------------------------------------------------------------
    def on_node_recorded(self, node: Any, output: Any) -> None:
        if self.done:
            return
        entry = self._nodes[self._id(node)]
        entry["backend"] = _backend_name(output)
        if self.keep_values:
            entry["output"] = to_numpy(output)

    def on_node_forward(self, node: Any, inputs: tuple, output: Any, seconds: float) -> None:
        if self.keep_values and not self.done:
            self._nodes[self._id(node)]["inputs"] = tuple(to_numpy(x) for x in inputs)

    def on_backward_start(self, roots: Any, grads: dict, order: list, info: Any) -> None:
        if self.done:
            return
        ids = tuple(self._id(r) for r in roots)
        seeds = tuple(to_numpy(grads[r]) for r in roots)
        self._backwards.append(
            {"roots": ids, "seeds": seeds, "order": tuple(self._id(n) for n in order),
             "executions": [], "contributions": [], "partial": info.is_grad}
        )  # fmt: skip

    def on_node_executed(self, node: Any, grad_output: Any, grad_inputs: tuple, s: float) -> None:
        if not self._backwards or self.done:
            return
        nid = self._id(node)
        if observe.has_pre_hooks(node):
            self._nodes[nid]["hooked"] = True
        ex = Execution(nid, to_numpy(grad_output), tuple(to_numpy(g) for g in grad_inputs))
        self._backwards[-1]["executions"].append(ex)

    def on_grad_accumulated(self, target: Any, contribution: Any, total: Any, source: Any) -> None:
        if not self._backwards or self.done:
            return
        c = Contribution(self._id(target), self._id(source), to_numpy(contribution),
                         to_numpy(total))  # fmt: skip
        self._backwards[-1]["contributions"].append(c)

    def on_backward_end(self, roots: Any) -> None:
        if not self.done:
            self._ended += 1

    # -- result -------------------------------------------------------------------------------
    def graph(self) -> GraphRecord:
        """Freeze what was observed so far into a :class:`GraphRecord`."""
        nodes = tuple(NodeRecord(**n) for n in self._nodes)
        backwards = tuple(
            BackwardRecord(b["roots"], b["seeds"], b["order"], tuple(b["executions"]),
                           tuple(b["contributions"]), b["partial"])
            for b in self._backwards
        )  # fmt: skip
        return GraphRecord(nodes, backwards)


class Recording:
    """A context manager that observes TPX while entered; ``graph()`` gives what it saw.

    Reusable as the ``cap`` of :func:`tpx_inspect.script.run_captured`.

    >>> import tpx as tp
    >>> with Recording() as rec:
    ...     _ = tp.ones(2, requires_grad=True) * 2
    >>> len(rec.graph().nodes)
    2
    """

    def __init__(self, keep_values: bool = True, max_backwards: int | None = None) -> None:
        self.recorder = Recorder(keep_values, max_backwards)
        self._handle: Any = None

    def __enter__(self) -> Recording:
        self._handle = tpx.add_observer(self.recorder)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def graph(self) -> GraphRecord:
        """The frozen record of everything observed so far."""
        return self.recorder.graph()


def record(keep_values: bool = True, max_backwards: int | None = None) -> Recording:
    """Observe every node recorded and every backward run inside the ``with`` block.

    With ``max_backwards``, observation stops after that many backward passes (a training
    script repeats the same graph; keeping every value of every step costs memory).

    >>> import tpx as tp
    >>> with record() as rec:
    ...     y = tp.asarray([0.5], requires_grad=True).sin()
    >>> rec.graph().nodes[-1].name
    'SinBackward'
    """
    return Recording(keep_values, max_backwards)
