"""What a rule reads under ``create_graph``: the saved P10 values as TPX tensors connected to
the graph, so that the rule's own computation is recorded (the engine's one use of them)."""

from __future__ import annotations

from typing import Any

import p10
from tpx._graph import AccumulateGrad, GradFn
from tpx._tensor import Tensor, wrap


def graph_inputs(node: GradFn, saved: tuple) -> tuple[tuple, Any]:
    """The saved inputs and output as TPX tensors connected to the graph (``create_graph``),
    as PyTorch's SavedVariable unpacks them: a rule's computation is then recorded too."""
    inputs = tuple([_unpack(v, node, i) for i, v in enumerate(saved[:-1])])
    out = saved[-1]
    return inputs, None if out is None else _rewrap_output(out, node)


def _unpack(value: Any, node: GradFn, i: int) -> Any:
    if value is None or value.__class__ is Tensor:  # tp.Function saves TPX tensors
        return value
    edge = node.edges[i] if i < len(node.edges) else None
    if edge is None:
        return wrap(value)
    if edge.__class__ is AccumulateGrad:
        return edge.variable
    return _rewrap_output(value, edge)


def _rewrap_output(out: p10.Tensor, node: GradFn) -> Tensor:
    t = wrap(out)
    t._requires_grad = True
    t.grad_fn = node
    t._recorded_version = out.version
    return t
