"""What a capture keeps of one running backward until it ends (:class:`BackwardRecords`),
its events' records kept flat and untracked by the cyclic GC, and :func:`held`, what it keeps
of a gradient.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

import p10
from tpx import observe

__all__ = ["BackwardRecords", "held"]

native = observe.native
P10Tensor = p10.Tensor


class BackwardRecords:
    """What one running backward reported, kept until it ends.

    The events' records are kept flat, in lists of plain items (``executed``: six per node
    run, ``accs``: four per accumulation), and a gradient on the NumPy backend as its array
    (see :func:`held`): no tuple and no P10 tensor per event outlives it, so the cyclic GC,
    which an unrecorded backward hardly wakes, is not woken by the capture either."""

    __slots__ = (
        "accs", "executed", "gins", "is_grad", "last", "order", "root_grads", "roots", "step",
        "wanted",
    )  # fmt: skip

    def __init__(
        self, step: int, roots: Any, root_grads: dict, order: list, wanted: bool, is_grad: bool
    ) -> None:
        self.step = step
        self.is_grad = is_grad  # NOTE: tpx.grad: gradients returned, .grad untouched
        self.roots = tuple(roots)
        self.root_grads = {node: held(g) for node, g in root_grads.items()}
        self.order = order
        self.wanted = wanted
        # node, grad_output, start and end of its grad_inputs in ``gins``, seconds, freed
        self.executed: list[Any] = []
        self.gins: list[Any] = []  # every node's grad_inputs, one after another
        self.accs: list[Any] = []  # target, contribution, total, source
        # NOTE: the P10 gradient held last and its array (see on_node_executed)
        self.last: list[Any] = [None, None]

    def nodes_run(self) -> list:
        """The nodes whose rule ran, in order."""
        return self.executed[0::6]

    def grad_outputs(self) -> list:
        """The gradient each node run received (its ``grad_output``), in order."""
        return self.executed[1::6]

    def runs(self) -> Iterator[tuple[Any, Any, tuple, float, bool]]:
        """``(node, grad_output, grad_inputs, seconds, freed)`` of each node run, in order."""
        ex, gins = self.executed, self.gins
        for k in range(0, len(ex), 6):
            node, g, lo, hi, seconds, freed = ex[k : k + 6]
            yield node, g, tuple(gins[lo:hi]), seconds, freed

    def sums(self) -> Iterator[tuple[Any, Any, Any, Any]]:
        """``(target, contribution, total, source)`` of each accumulation, in order."""
        accs = self.accs
        for k in range(0, len(accs), 4):
            yield tuple(accs[k : k + 4])  # type: ignore[misc]


def held(x: Any) -> Any:
    """What a capture keeps of a gradient: the NumPy array of a P10 tensor on the NumPy
    backend (an ndarray is not tracked by the cyclic GC; a P10 tensor is), else ``x`` itself
    (a lazy tensor; a TPX tensor of ``create_graph``, whose wrappers of one P10 tensor are
    values of their own; None).

    >>> type(held(p10.ones(2))).__name__, held(None)
    ('ndarray', None)
    """
    if x.__class__ is P10Tensor:
        a = native(x)
        if a.__class__ is np.ndarray:
            return a
    return x
