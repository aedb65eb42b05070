"""The per-node records of a trace: a node, its edges, saved values, what one step measured.

Everything here is a frozen dataclass; :mod:`tpx_inspect.records` re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

import numpy as np

from tpx_inspect.summary import TensorSummary

KINDS = ("leaf", "param", "op", "loss")
"""Node kinds: a leaf tensor, a named parameter, a recorded op, a backward root (the loss)."""


@dataclass(frozen=True)
class Source:
    """The user's source line that recorded a node.

    >>> str(Source("train.py", 12, "step"))
    'train.py:12 in step'
    """

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


@dataclass(frozen=True)
class Edge:
    """One input of a node, in argument order; ``src`` is None for inputs that need no grad."""

    src: int | None
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Saved:
    """A value a node saved for backward: ``slot`` is the input index, or -1 for its output."""

    slot: int
    shape: tuple[int, ...]
    dtype: str
    bytes: int


def column(
    *,
    encode: Callable[[Any], Any] | None = None,
    decode: Callable[[Any], Any] | None = None,
    optional: bool = False,
    api: Callable[[Any], Any] | bool = True,
    default: Any = MISSING,
    runs: bool = False,
) -> Any:
    """Declare a field of :class:`Node` as a column of the trace's node table.

    ``encode``/``decode`` turn the field's value into its JSON entry and back (None: as is);
    an ``optional`` column is written only when a node has a value (older traces lack it);
    ``api`` says whether the server's ``NodeInfo`` shows it (a function: shown converted);
    a ``runs`` column is stored as runs of equal entries from trace format 2 on (a node
    table repeats its kinds, ops, scopes, dtypes, ... in long runs).
    The node table (:mod:`tpx_inspect.tables`), the loader, the schema test and the server's
    model read these declarations; adding a field here is the one place to add a column.
    """
    meta = {"column": (encode, decode, optional, api, runs)}
    return field(default=default, metadata=meta)


def _source_json(s: Source | None) -> list | None:
    return None if s is None else [s.file, s.line, s.function]


def _source(v: list | None) -> Source | None:
    return None if v is None else Source(v[0], v[1], v[2])


def _source_text(s: Source | None) -> str | None:
    return None if s is None else str(s)


def _edges_json(edges: tuple[Edge, ...]) -> list:
    return [[e.src, list(e.shape), e.dtype] for e in edges]


def _edges(v: list) -> tuple[Edge, ...]:
    return tuple([Edge(e[0], tuple(e[1]), e[2]) for e in v])


def _saved_json(saved: tuple[Saved, ...]) -> list:
    return [[v.slot, list(v.shape), v.dtype, v.bytes] for v in saved]


def _saved(v: list) -> tuple[Saved, ...]:
    return tuple([Saved(x[0], tuple(x[1]), x[2], x[3]) for x in v])


@dataclass(frozen=True)
class Node:
    """The static record of one node: what was computed, from what, where.

    ``name`` is the PyTorch-style node name (``MulBackward``, ``AccumulateGrad``); ``label``
    is a parameter's name (``fc1.weight``) or ''; ``overrides`` names the overridden rule and
    kernel that computed the node (``{"rule": "module:function", "kernel": ...}``), or None.
    """

    id: int
    kind: str = column(runs=True)
    op: str | None = column(runs=True)
    name: str = column(runs=True)
    label: str = column(runs=True)
    params: dict[str, Any] = column(api=False, runs=True)
    scope: str = column(runs=True)
    source: Source | None = column(encode=_source_json, decode=_source, api=_source_text, runs=True)
    inputs: tuple[Edge, ...] = column(encode=_edges_json, decode=_edges)
    shape: tuple[int, ...] = column(encode=list, decode=tuple, runs=True)
    dtype: str = column(runs=True)
    saved: tuple[Saved, ...] = column(encode=_saved_json, decode=_saved, api=False, default=())
    overrides: dict[str, str] | None = column(optional=True, default=None)

    @property
    def saved_bytes(self) -> int:
        """Bytes of the values this node saved for backward."""
        return sum(s.bytes for s in self.saved)

    @property
    def title(self) -> str:
        """A short display name: the op, or the parameter's name, or ``leaf``."""
        return self.op or self.label or self.kind


NODE_COLUMNS_DECLARED: tuple[Field, ...] = tuple(f for f in fields(Node) if "column" in f.metadata)
"""The fields of :class:`Node` that are columns of the node table, in column order."""


@dataclass(frozen=True)
class NodeStats:
    """What one step measured at a node.

    ``grad`` is the incoming gradient (w.r.t. the node's output, all contributions summed);
    ``grads_out`` the gradient the rule returned per input; ``consts`` summaries of inputs that
    need no grad; ``order`` the node's position in the backward execution (None: not run);
    ``released`` the backward position at which its saved values were freed.
    """

    output: TensorSummary | None = None
    grad: TensorSummary | None = None
    grads_out: tuple[TensorSummary | None, ...] = ()
    consts: tuple[TensorSummary | None, ...] = ()
    forward_seconds: float = 0.0
    backward_seconds: float | None = None
    order: int | None = None
    released: int | None = None


@dataclass(frozen=True)
class Accumulation:
    """``contribution`` from ``source`` (None for the root gradient) summed into ``target``'s
    gradient, giving ``total``."""

    target: int
    source: int | None
    contribution: TensorSummary
    total: TensorSummary


@dataclass(frozen=True)
class ErrorInfo:
    """An exception that ended a run."""

    type: str
    message: str
    traceback: str


@dataclass(frozen=True)
class NodeValues:
    """Full values around one node, for offline replay (None where not kept)."""

    inputs: tuple[np.ndarray | None, ...]
    output: np.ndarray | None
    grad: np.ndarray | None
    grads_out: tuple[np.ndarray | None, ...]
