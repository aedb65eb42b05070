"""The few per-node fields the view model reads, straight from a graph's node-table columns
(no per-node records are built for a 100,000-node graph)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpx_inspect.records import Graph


@dataclass(frozen=True)
class Columns:
    """Per node: kind, op, label, scope, source key, input sources, shape, dtype."""

    kind: list[str]
    op: list[str | None]
    label: list[str]
    scope: list[str]
    source: list[tuple[str, int] | None]
    srcs: list[tuple[int | None, ...]]
    in_shapes: list[tuple[tuple[int, ...], ...]]
    shape: list[tuple[int, ...]]
    dtype: list[str]

    def __len__(self) -> int:
        return len(self.kind)

    def title(self, i: int) -> str:
        """The op, the parameter's name, or the kind."""
        return self.op[i] or self.label[i] or self.kind[i]


def _source(src: Any) -> tuple[str, int] | None:
    if src is None:
        return None
    if isinstance(src, list | tuple):
        return (str(src[0]), int(src[1]))
    return (src.file, src.line)


def columns(graph: Graph) -> Columns:
    """The :class:`Columns` of ``graph`` (from its node table, else from its records)."""
    c = getattr(graph.nodes, "columns", None)
    if c is None:
        nodes = list(graph.nodes)
        c = {
            "kind": [n.kind for n in nodes], "op": [n.op for n in nodes],
            "label": [n.label for n in nodes], "scope": [n.scope for n in nodes],
            "source": [n.source for n in nodes],
            "inputs": [[(e.src, e.shape, e.dtype) for e in n.inputs] for n in nodes],
            "shape": [n.shape for n in nodes], "dtype": [n.dtype for n in nodes],
        }  # fmt: skip
    ins = c["inputs"]
    return Columns(
        kind=list(c["kind"]), op=list(c["op"]), label=list(c["label"]), scope=list(c["scope"]),
        source=[_source(s) for s in c["source"]],
        srcs=[tuple(e[0] for e in x) for x in ins],
        in_shapes=[tuple(tuple(e[1]) for e in x) for x in ins],
        shape=[tuple(s) for s in c["shape"]], dtype=list(c["dtype"]),
    )  # fmt: skip
