"""What a capture keeps of one running backward until it ends (:class:`BackwardRecords`),
its events' records kept flat and untracked by the cyclic GC, and :func:`held`, what it keeps
of a gradient.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import accumulate
from typing import Any

import numpy as np

import p10
from tpx import observe

__all__ = ["BackwardRecords", "held"]

native, natives, grad_inputs = observe.native, observe.natives, observe.grad_inputs
P10Tensor, ndarray = p10.Tensor, np.ndarray


class BackwardRecords:
    """What one running backward reported, kept until it ends.

    The engine hands the node runs and sums over in batches (``on_nodes_executed``, see
    :meth:`add`); they are kept flat, in lists of plain items (``executed``: six per node run,
    ``accs``: four per sum), and a gradient on the NumPy backend as its array (see
    :func:`held`): no tuple and no P10 tensor per event outlives its batch, so the cyclic
    GC, which an unrecorded backward hardly wakes, is not woken by the capture either."""

    __slots__ = (
        "accs", "create_graph", "executed", "gins", "is_grad", "order", "raw", "root_grads",
        "roots", "step", "timing", "wanted",
    )  # fmt: skip

    def __init__(
        self,
        step: int,
        roots: Any,
        root_grads: dict,
        order: list,
        wanted: bool,
        is_grad: bool,
        timing: bool = True,
        create_graph: bool = False,
    ) -> None:
        self.step = step
        self.is_grad = is_grad  # NOTE: tpx.grad: gradients returned, .grad untouched
        self.create_graph = create_graph  # NOTE: how a batch's grad_inputs are read (see _take)
        self.roots = tuple(roots)
        self.root_grads = {node: held(g) for node, g in root_grads.items()}
        self.order = order
        self.wanted = wanted
        self.timing = timing  # NOTE: False: every node's seconds recorded as 0.0
        # node, grad_output, start and end of its grad_inputs in ``gins``, seconds, freed
        self.executed: list[Any] = []
        self.gins: list[Any] = []  # every node's grad_inputs, one after another
        self.accs: list[Any] = []  # target, contribution, total, source
        # NOTE: the latest batch, as the engine sent it (see add)
        self.raw: tuple[list, list] | None = None

    def add(self, runs: list, sums: list) -> None:
        """Keep a batch of ``on_nodes_executed``: ``runs`` four items per node run (node,
        grad_output, grad_inputs, seconds), ``sums`` four per sum (target, contribution,
        total, source). The latest batch waits as it came (a step that the policy does not
        keep is mostly dropped at its end, unread but for its gradients: see
        :meth:`grad_outputs`); the ones before it are taken into the flat lists at once, so
        that a long pass holds at most one batch of P10 gradients and tuples."""
        if self.raw is not None:
            self.settle()
        self.raw = (runs, sums)

    def settle(self) -> None:
        """Take the waiting batch (if any) into the flat lists."""
        raw = self.raw
        if raw is not None:
            self.raw = None
            self._take(*raw)

    def _take(self, runs: list, sums: list) -> None:
        # NOTE: column at a time (slices and comprehensions): no Python loop body per node
        n = len(runs) // 4
        nodes, cg = runs[0::4], self.create_graph
        # NOTE: the rules' gradients as on_node_executed tells them (the engine leaves that to
        # who reads a batch: most steps not kept are dropped unread)
        gis = [grad_inputs(node, gi, cg) for node, gi in zip(nodes, runs[2::4])]
        flat = held_all([x for gi in gis for x in gi])
        ends = list(accumulate(map(len, gis), initial=len(self.gins)))
        self.gins += flat
        block: list[Any] = [None] * (6 * n)
        block[0::6], block[1::6] = nodes, held_all(runs[1::4])
        block[2::6], block[3::6] = ends[:-1], ends[1:]
        block[4::6] = runs[3::4] if self.timing else [0.0] * n
        block[5::6] = [getattr(node, "saved", 0) is None for node in nodes]
        self.executed += block
        block = [None] * len(sums)
        block[0::4], block[3::4] = sums[0::4], sums[3::4]
        block[1::4], block[2::4] = held_all(sums[1::4]), held_all(sums[2::4])
        self.accs += block

    def nodes_run(self) -> list:
        """The nodes whose rule ran, in order."""
        self.settle()
        return self.executed[0::6]

    def grad_outputs(self) -> list:
        """The gradient each node run received (its ``grad_output``), in order; those of the
        waiting batch as the engine sent them (P10 tensors: see :meth:`add`)."""
        out = self.executed[1::6]
        if self.raw is not None:
            out += self.raw[0][1::4]
        return out

    def runs(self) -> Iterator[tuple[Any, Any, tuple, float, bool]]:
        """``(node, grad_output, grad_inputs, seconds, freed)`` of each node run, in order."""
        self.settle()
        ex, gins = self.executed, self.gins
        for k in range(0, len(ex), 6):
            node, g, lo, hi, seconds, freed = ex[k : k + 6]
            yield node, g, tuple(gins[lo:hi]), seconds, freed

    def sums(self) -> Iterator[tuple[Any, Any, Any, Any]]:
        """``(target, contribution, total, source)`` of each accumulation, in order."""
        self.settle()
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


def held_all(xs: list) -> list:
    """``[held(x) for x in xs]``, without a call per value.

    >>> [type(x).__name__ for x in held_all([p10.ones(2), None, 1.0])]
    ['ndarray', 'NoneType', 'float']
    """
    return [
        a if a.__class__ is ndarray and x.__class__ is P10Tensor else x
        for x, a in zip(xs, natives(xs))
    ]
