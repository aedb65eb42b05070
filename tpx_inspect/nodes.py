"""The per-node records of a trace: a node, its edges, saved values, what one step measured.

Everything here is a frozen dataclass; :mod:`tpx_inspect.records` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Node:
    """The static record of one node: what was computed, from what, where.

    ``name`` is the PyTorch-style node name (``MulBackward``, ``AccumulateGrad``); ``label``
    is a parameter's name (``fc1.weight``) or ''; ``overrides`` names the overridden rule and
    kernel that computed the node (``{"rule": "module:function", "kernel": ...}``), or None.
    """

    id: int
    kind: str
    op: str | None
    name: str
    label: str
    params: dict[str, Any]
    scope: str
    source: Source | None
    inputs: tuple[Edge, ...]
    shape: tuple[int, ...]
    dtype: str
    saved: tuple[Saved, ...] = ()
    overrides: dict[str, str] | None = None

    @property
    def saved_bytes(self) -> int:
        """Bytes of the values this node saved for backward."""
        return sum(s.bytes for s in self.saved)

    @property
    def title(self) -> str:
        """A short display name: the op, or the parameter's name, or ``leaf``."""
        return self.op or self.label or self.kind


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
