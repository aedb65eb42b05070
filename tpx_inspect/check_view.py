"""How the checks read a captured :class:`~tpx_inspect.records.Graph`: one node with its values
(:class:`NodeRecord`) and the graph's backward with full values (:class:`BackwardRecord`).

There is one graph model, ``records.Graph``; these are views of it, computed on read
(``graph.replay_node(i)``, ``graph.backwards``). What a live recording adds that a saved trace
does not hold (the rule objects, backends, hooks, ``tpx.grad``, repeated executions, the
``tp.Function`` classes) is declared once, in :class:`LiveInfo` (``graph.live``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

import p10
from p10 import IndexSlot

if TYPE_CHECKING:
    from tpx_inspect.records import Graph


@dataclass(frozen=True)
class LiveInfo:
    """What the checks read of a graph besides the trace's records (``graph.live``).

    A saved trace holds none of it: offline, ``functions`` maps a custom op's name to the
    ``tp.Function`` class imported with ``--trust-code`` or to the reason it is skipped, and
    every other field keeps its default (numpy backend, the built-in rules, no hooks).

    >>> LiveInfo().partial, LiveInfo().rules
    (False, None)
    """

    partial: bool = False
    """True for ``tpx.grad``: only the nodes needed for the requested inputs run."""
    runs: tuple[int, ...] | None = None
    """Node ids in the order the engine ran them, repeats included (None: ``graph.order``)."""
    hooked: frozenset[int] = frozenset()
    """Nodes with a gradient hook when they ran (the gradient they ran with may differ)."""
    backends: tuple[str, ...] | None = None
    """Each node's backend name, by node id (None: all ``numpy``)."""
    rules: tuple[Any, ...] | None = None
    """Each node's rule object as recorded (None: ``tpx.rules.RULES`` at check time)."""
    functions: Mapping[str, Any] = field(default_factory=dict)
    """A custom op's name -> its ``tp.Function`` class, or the reason it cannot be replayed."""
    root: str | None = None
    """The folder that relative source paths are relative to (the capture's ``source_root``)."""
    where: str | None = None
    """Where findings at nodes recorded inside tpx_inspect itself are attributed (the user's
    function, for :func:`~tpx_inspect.checks.capture_call`)."""


NO_LIVE = LiveInfo()
"""The :class:`LiveInfo` of a graph loaded from a trace."""


@dataclass(frozen=True)
class NodeRecord:
    """One node as the checks read it, with the values needed to replay it.

    ``inputs`` holds every input of the op in argument order (NumPy arrays), or ``None`` when
    the values were not kept. Leaves (``AccumulateGrad``) have ``op=None`` and their value as
    ``output``.

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
    """The backward of a graph: roots with their seed gradients, the order, what ran."""

    roots: tuple[int, ...]
    seeds: tuple[np.ndarray, ...]
    order: tuple[int, ...]
    executions: tuple[Execution, ...]
    contributions: tuple[Contribution, ...]
    partial: bool = False
    """True for ``tpx.grad``: only the nodes needed for the requested inputs run."""


_FLOAT_WORDS = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}


def params_from_json(params: dict[str, Any]) -> dict[str, Any]:
    """The inverse of the trace writer's ``params_to_json``: tuples, slices, dtypes, slots.

    >>> params_from_json({"axis": [0, 1], "dtype": "float32", "key": [{"slice": [1, None, None]}]})
    {'axis': (0, 1), 'dtype': dtype('float32'), 'key': (slice(1, None, None),)}
    """
    out = {k: _value(v) for k, v in params.items()}
    if isinstance(out.get("dtype"), str):
        out["dtype"] = np.dtype(out["dtype"])
    return out


def _value(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_value(x) for x in v)
    if isinstance(v, dict):
        if set(v) == {"slice"}:
            return slice(*(_value(x) for x in v["slice"]))
        if set(v) == {"tensor"}:
            return IndexSlot(v["tensor"])
        return {k: _value(x) for k, x in v.items()}
    if v == "...":
        return Ellipsis
    if isinstance(v, str) and v in _FLOAT_WORDS:
        return _FLOAT_WORDS[v]
    return v


def op_of(name: str | None) -> Any:
    """The ``p10.Op`` named ``name`` (a ``p10.CustomOp`` for a custom op; None for a leaf).

    >>> op_of("sin"), op_of(None)
    (<Op.SIN: 'sin'>, None)
    """
    if name is None:
        return None
    try:
        return p10.op_from_name(name)
    except p10.P10Error:
        return p10.CustomOp(name, None)


NOT_IMPORTED = (
    "tp.Function {name!r} ({path}) is user code, not imported offline (record with "
    "`tpx-inspect run --check`, or check with `tpx-inspect gradcheck RUN --trust-code`)"
)
"""The skip reason of a Function node checked offline without its class."""


def unavailable_reason(name: str, meta: Mapping[str, Any]) -> str:
    """Why a Function node is skipped offline when its class was not imported.

    >>> unavailable_reason("Square", {})
    "tp.Function 'Square': the trace does not record its import path"
    """
    info = (meta.get("functions") or {}).get(name)
    if info is None:
        return f"tp.Function {name!r}: the trace does not record its import path"
    if not info.get("importable", True):
        return (
            f"tp.Function {name!r} ({info['path']}) is defined inside a function: it cannot "
            "be imported offline (record with `tpx-inspect run --check`)"
        )
    return NOT_IMPORTED.format(name=name, path=info["path"])


_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _source(graph: Graph, n: Any) -> str:
    if n.source is None:
        return "<leaf>" if n.op is None else "<unknown>"
    live = graph.live
    src = n.source
    if live.root is not None and not os.path.isabs(src.file):
        src = type(src)(os.path.join(live.root, src.file), src.line, src.function)
    text = str(src)
    if live.where is not None and text.startswith(_HERE):
        return live.where
    return text


def _function(op: Any, live: LiveInfo) -> tuple[Any, str | None]:
    """``(Function class, None)`` or ``(None, why it cannot be replayed)`` for a custom op."""
    if not isinstance(op, p10.CustomOp) or op in p10.get_backend("numpy").kernels:
        return None, None
    found = live.functions.get(op.value)
    if isinstance(found, type):
        return found, None
    return None, found if isinstance(found, str) else unavailable_reason(op.value, {})


def node_record(graph: Graph, i: int) -> NodeRecord:
    """Node ``i`` of ``graph`` as the checks read it (its op object, Python params, values)."""
    n, live = graph.node(i), graph.live
    values = graph.node_values(i)
    leaf = n.kind in ("leaf", "param")
    op = None if leaf else op_of(n.op)
    inputs = None if any(v is None for v in values.inputs) else tuple(values.inputs)
    function, unavailable = _function(op, live)
    return NodeRecord(
        id=n.id, name=n.name, op=op, params=params_from_json(n.params),
        edges=tuple(e.src for e in n.inputs), inputs=() if leaf else inputs,
        output=values.output, backend="numpy" if live.backends is None else live.backends[i],
        scope=n.scope, source=_source(graph, n),
        rule=None if live.rules is None else live.rules[i], function=function,
        hooked=i in live.hooked, unavailable=unavailable,
    )  # fmt: skip


def backward_record(graph: Graph) -> BackwardRecord:
    """The backward of ``graph`` with its values: what ran, the seeds, the contributions."""
    runs = graph.order if graph.live.runs is None else graph.live.runs
    executions = []
    for i in runs:
        v = graph.node_values(i)
        executions.append(Execution(i, v.grad, tuple(v.grads_out)))
    seeds: dict[int, Any] = {}
    contributions = []
    for target, source, c, t in graph.tables.accumulations.tolist():
        value, total = graph.summary_value(c), graph.summary_value(t)
        if source < 0:
            seeds[target] = value
        elif value is not None and total is not None:
            contributions.append(Contribution(target, source, value, total))
    roots = tuple(graph.roots)
    return BackwardRecord(
        roots, tuple(seeds.get(r) for r in roots), tuple(graph.order), tuple(executions),
        tuple(contributions), graph.live.partial,
    )  # fmt: skip
