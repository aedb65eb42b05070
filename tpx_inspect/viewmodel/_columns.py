"""The few per-node fields the view model reads, straight from a graph's node-table columns
(no per-node records and no copies: a 100,000-node graph's columns are used as loaded)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tpx_inspect.records import Graph


@dataclass(frozen=True)
class Columns:
    """Per node: kind, op, label, scope, source, inputs (``[src, shape, dtype]`` lists),
    shape and dtype, as the node table stores them; ``srcs`` the input sources alone."""

    kind: list[str]
    op: list[str | None]
    label: list[str]
    scope: list[str]
    source: list[Any]
    inputs: list[list[Any]]
    shape: list[Any]
    dtype: list[str]
    srcs: list[list[int | None]]

    def __len__(self) -> int:
        return len(self.kind)

    def title(self, i: int) -> str:
        """The op, the parameter's name, or the kind."""
        return self.op[i] or self.label[i] or self.kind[i]

    def where(self, i: int) -> tuple[str, int] | None:
        """``(file, line)`` of node ``i``'s source, or None."""
        src = self.source[i]
        if src is None:
            return None
        if isinstance(src, list | tuple):
            return (str(src[0]), int(src[1]))
        return (src.file, src.line)

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """Inputs as arrays: node ``i``'s sources are ``flat[ptr[i]:ptr[i + 1]]`` (-1: none)."""
        counts = np.fromiter((len(s) for s in self.srcs), np.int64, len(self.srcs))
        ptr = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=ptr[1:])
        flat = np.fromiter((-1 if s is None else s for x in self.srcs for s in x), np.int64,
                           int(ptr[-1]))  # fmt: skip
        return ptr, flat


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
    return Columns(
        kind=c["kind"], op=c["op"], label=c["label"], scope=c["scope"], source=c["source"],
        inputs=c["inputs"], shape=c["shape"], dtype=c["dtype"],
        srcs=[[e[0] for e in x] for x in c["inputs"]],
    )  # fmt: skip
