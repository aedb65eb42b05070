"""Offline checks: a :class:`~tpx_inspect.checks.record.GraphRecord` from a saved trace graph.

A trace graph (``tpx_inspect.records.Graph``) names ops by string and stores params as JSON;
its full values are there only when the capture kept them (``values="all"``, or ``"small"`` for
small tensors). Nodes whose values are missing are skipped by the value-based checks, and the
report says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

import p10
from p10 import IndexSlot
from tpx_inspect.checks.record import (
    BackwardRecord,
    Contribution,
    Execution,
    GraphRecord,
    NodeRecord,
)

NOT_IMPORTED = (
    "tp.Function {name!r} ({path}) is user code, not imported offline (record with "
    "`tpx-inspect run --check`, or check with `tpx-inspect gradcheck RUN --trust-code`)"
)
"""The skip reason of a Function node checked offline without its class."""


def unavailable_reason(name: str, meta: Mapping[str, Any]) -> str:
    """Why a Function node is skipped offline when its class was not imported."""
    info = (meta.get("functions") or {}).get(name)
    if info is None:
        return f"tp.Function {name!r}: the trace does not record its import path"
    if not info.get("importable", True):
        return (
            f"tp.Function {name!r} ({info['path']}) is defined inside a function: it cannot "
            "be imported offline (record with `tpx-inspect run --check`)"
        )
    return NOT_IMPORTED.format(name=name, path=info["path"])


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


def _op(name: str | None) -> Any:
    if name is None:
        return None
    try:
        return p10.op_from_name(name)
    except p10.P10Error:
        return p10.CustomOp(name, None)


def _node(graph: Any, i: int, functions: Mapping[str, Any], meta: Mapping[str, Any]) -> NodeRecord:
    n = graph.node(i)
    values = graph.node_values(i)
    leaf = n.kind in ("leaf", "param")
    inputs = None if any(v is None for v in values.inputs) else tuple(values.inputs)
    op = None if leaf else _op(n.op)
    function, unavailable = None, None
    if isinstance(op, p10.CustomOp) and op not in p10.get_backend("numpy").kernels:
        found = functions.get(op.value)
        if isinstance(found, type):
            function = found
        else:
            unavailable = found if isinstance(found, str) else unavailable_reason(op.value, meta)
    return NodeRecord(
        id=n.id, name=n.name, op=op,
        params=params_from_json(n.params), edges=tuple(e.src for e in n.inputs),
        inputs=() if leaf else inputs, output=values.output, scope=n.scope,
        source=str(n.source) if n.source is not None else "<unknown>",
        function=function, unavailable=unavailable,
    )  # fmt: skip


def _backward(graph: Any) -> BackwardRecord:
    executions = []
    for i in graph.order:
        v = graph.node_values(i)
        executions.append(Execution(i, v.grad, tuple(v.grads_out)))
    seeds: dict[int, Any] = {}
    contributions = []
    for a in graph.accumulations:
        value, total = graph.value(a.contribution), graph.value(a.total)
        if a.source is None:
            seeds[a.target] = value
        elif value is not None and total is not None:
            contributions.append(Contribution(a.target, a.source, value, total))
    roots = tuple(graph.roots)
    return BackwardRecord(
        roots, tuple(seeds.get(r) for r in roots), tuple(graph.order), tuple(executions),
        tuple(contributions),
    )  # fmt: skip


def from_trace_graph(
    graph: Any, functions: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None
) -> GraphRecord:
    """A :class:`GraphRecord` from one graph of a saved trace (``tpx_inspect.records.Graph``).

    Nodes of a custom ``tp.Function`` are replayed with the class ``functions`` maps their op
    name to (the CLI's ``--trust-code`` import, or the live classes while recording); without
    one they are skipped with the reason (``meta`` is the trace's, naming the import path).

    >>> import tpx as tp, tpx_inspect
    >>> with tpx_inspect.capture(values="all", timing=False) as cap:
    ...     x = tp.asarray([0.5, 1.0], requires_grad=True)
    ...     (x.sin() * x).sum().backward()
    >>> g = from_trace_graph(cap.trace.graphs[0])
    >>> [n.name for n in g.nodes], g.backwards[0].order
    (['AccumulateGrad', 'SinBackward', 'MulBackward', 'SumBackward'], (3, 2, 1, 0))
    """
    functions, meta = functions or {}, meta or {}
    nodes = tuple(_node(graph, i, functions, meta) for i in range(len(graph.nodes)))
    backwards = (_backward(graph),) if graph.kind == "backward" and graph.order else ()
    return GraphRecord(nodes, backwards)
