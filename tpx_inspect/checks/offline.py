"""Offline checks: a saved trace's graph with the ``tp.Function`` classes the checks may run.

A trace graph (``tpx_inspect.records.Graph``) names ops by string and stores params as JSON;
its full values are there only when the capture kept them (``values="all"``, or ``"small"`` for
small tensors). Nodes whose values are missing are skipped by the value-based checks, and the
report says so. A custom ``tp.Function`` node is replayed only with its class; without one it
is skipped with the reason (:func:`~tpx_inspect.check_view.unavailable_reason`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import p10
from tpx_inspect.check_view import NOT_IMPORTED, op_of, unavailable_reason
from tpx_inspect.records import Graph

__all__ = ["NOT_IMPORTED", "unavailable_reason", "with_functions"]


def with_functions(
    graph: Graph, functions: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None
) -> Graph:
    """``graph`` with the ``tp.Function`` classes its custom nodes replay with.

    ``functions`` maps a custom op's name to its class (the CLI's ``--trust-code`` import, or
    the live classes while recording); the others get the reason they are skipped (``meta`` is
    the trace's, naming the import path).

    >>> import tpx as tp, tpx_inspect
    >>> with tpx_inspect.capture(values="all", timing=False) as cap:
    ...     x = tp.asarray([0.5, 1.0], requires_grad=True)
    ...     (x.sin() * x).sum().backward()
    >>> g = with_functions(cap.trace.graphs[0])
    >>> [n.name for n in g.replay_nodes], g.backwards[0].order
    (['AccumulateGrad', 'SinBackward', 'MulBackward', 'SumBackward'], (3, 2, 1, 0))
    """
    functions, meta = functions or {}, meta or {}
    found: dict[str, Any] = dict(graph.live.functions)
    kernels = p10.get_backend("numpy").kernels
    for n in graph.nodes:
        op = op_of(n.op)
        if isinstance(op, p10.CustomOp) and op not in kernels and op.value not in found:
            cls = functions.get(op.value)
            found[op.value] = cls if cls is not None else unavailable_reason(op.value, meta)
    return dataclasses.replace(graph, live=dataclasses.replace(graph.live, functions=found))
