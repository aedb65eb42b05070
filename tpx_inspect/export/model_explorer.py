"""Model Explorer's graph JSON (a ``GraphCollection``), so a graph opens in that tool.

Namespaces come from the view model (:mod:`tpx_inspect.viewmodel`): scopes (``encoder.layer0``
-> ``encoder/layer0``), parameters inside the scope that uses them, and the loops found in
unscoped code (``loop train.py:12 ×32/#3``), so Model Explorer shows the same hierarchy as the
viewer; each node lists its incoming edges in argument order and its output's dtype and shape.
"""

from __future__ import annotations

from typing import Any

from tpx_inspect.records import Graph, Node
from tpx_inspect.viewmodel import ViewModel, build


def _kv(key: str, value: Any) -> dict[str, str]:
    return {"key": key, "value": str(value)}


def _tensor(dtype: str, shape: tuple[int, ...]) -> str:
    return f"{dtype}[{','.join(map(str, shape))}]"


def to_model_explorer(graph: Graph, label: str | None = None) -> dict[str, Any]:
    """The ``GraphCollection`` JSON object of ``graph`` (pure, deterministic).

    >>> import tpx as tp, tpx_inspect
    >>> x = tp.ones(2, requires_grad=True)
    >>> def f():
    ...     with tp.scope("enc"):
    ...         y = x.exp()
    ...     y.sum().backward()
    >>> me = to_model_explorer(tpx_inspect.trace(f).graphs[0])
    >>> [(n["label"], n["namespace"]) for n in me["graphs"][0]["nodes"]]
    [('leaf', 'enc'), ('exp', 'enc'), ('sum', '')]
    """
    name = label or f"run{graph.run}_graph{graph.id}"
    spaces = namespaces(build(graph))
    nodes = [_node(graph, n, spaces) for n in graph.nodes]
    return {"label": name, "graphs": [{"id": name, "nodes": nodes}]}


def namespaces(vm: ViewModel) -> list[str]:
    """Per node, its place in the view model's tree as a Model Explorer namespace (repeat and
    parameter groups are not levels: Model Explorer folds identical layers itself)."""
    memo: dict[str, str] = {"root": ""}
    stack = list(vm.groups.values())[1:]  # NOTE: parents come before children
    for g in stack:
        parent = memo[g.parent] if g.parent is not None else ""
        if g.kind == "scope":
            part = g.scope.rsplit(".", 1)[-1]
        elif g.kind == "loop":
            part = f"{vm.groups[g.parent].title}/{g.label.split(' ', 1)[0]}"  # type: ignore[index]
        else:
            part = ""
        memo[g.id] = f"{parent}/{part}".strip("/") if part else parent
    return [memo[o] for o in vm.owner]


def _node(graph: Graph, n: Node, spaces: list[str]) -> dict[str, Any]:
    attrs = [_kv("kind", n.kind), _kv("name", n.name)]
    if n.op:
        attrs.append(_kv("op", n.op))
    if n.label:
        attrs.append(_kv("label", n.label))
    if n.source is not None:
        attrs.append(_kv("source", n.source))
    attrs.extend(_kv(f"param.{k}", v) for k, v in sorted(n.params.items()))
    out_attrs = [_kv("tensor_shape", _tensor(n.dtype, n.shape))]
    st = graph.stats[n.id]
    if st.grad is not None and st.grad.norm is not None:
        out_attrs.append(_kv("grad_norm", f"{st.grad.norm:.6g}"))
    if st.order is not None:
        out_attrs.append(_kv("backward_order", st.order))
    return {
        "id": str(n.id),
        "label": n.title,
        "namespace": spaces[n.id],
        "attrs": attrs,
        "incomingEdges": [
            {"sourceNodeId": str(e.src), "sourceNodeOutputId": "0", "targetNodeInputId": str(i)}
            for i, e in enumerate(n.inputs)
            if e.src is not None
        ],
        "inputsMetadata": [
            {"id": str(i), "attrs": [_kv("tensor_shape", _tensor(e.dtype, e.shape)),
                                     _kv("requires_grad", e.src is not None)]}
            for i, e in enumerate(n.inputs)
        ],
        "outputsMetadata": [{"id": "0", "attrs": out_attrs}],
    }  # fmt: skip
