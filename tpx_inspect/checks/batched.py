"""Replay many recorded nodes of the same op and shapes at once, for the local check.

Small nodes (a (4, 4) tanh) cost the local check far more in per-call overhead than in
arithmetic. A :class:`BatchReplay` stacks the recorded values of ``B`` nodes that share op,
params and shapes along a new leading axis and runs their forward and rule once on the stack.
Only ops whose kernel and rule act the same on every slice of a leading axis are stacked
(elementwise ops, and matmul of matrices); any other batch runs its nodes one at a time.
A batch of one node always runs alone, through :class:`~tpx_inspect.checks.replay.Replay`:
that is the reference path the batched one is tested against.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

import numpy as np

import p10
import tpx
from tpx_inspect.check_view import NodeRecord
from tpx_inspect.checks.replay import Replay, _numpy, _tensor, rule_context, why_not_replayable
from tpx_inspect.records import Graph


def stackable(node: NodeRecord) -> bool:
    """Whether ``node``'s forward and rule can run on a leading batch axis of its inputs.

    >>> stackable(NodeRecord(0, "AccumulateGrad", None, {}, (), (), None))
    False
    """
    op = node.op
    if node.function is not None or not isinstance(op, p10.Op) or node.inputs is None:
        return False
    rule = node.rule
    if rule is not None and rule is not tpx.rules.RULES.get(op) and rule != tpx.rules.RULES.get(op):
        return False  # NOTE: equal, not identical, once unpickled
    kind = p10.OP_INFO[op].kind
    if kind == "elementwise":
        return True
    arrays = [x for x in node.inputs if isinstance(x, np.ndarray)]
    return op is p10.Op.MATMUL and len(arrays) == 2 and all(x.ndim >= 2 for x in arrays)


def batch_key(node: NodeRecord) -> tuple:
    """What nodes must share to be replayed as one batch: op, params, input/output layout."""
    # NOTE: a list, not a generator, into tuple(): 1.5x faster per node
    inputs = tuple(
        [
            (x.shape, x.dtype.str) if isinstance(x, np.ndarray) else (type(x).__name__, repr(x))
            for x in node.inputs or ()
        ]
    )
    out = node.output
    if out is not None:
        out = (out.shape, out.dtype.str) if out.__class__ is np.ndarray else _layout(out)
    return (
        node.op,
        repr(sorted(node.params.items())) if node.params else "",
        tuple([e is None for e in node.edges]),
        inputs,
        out,
    )


def _layout(a: Any) -> tuple:
    return np.shape(a), np.asarray(a).dtype.str


class BatchReplay:
    """Forward and VJP of ``B`` nodes at once, on arrays with a leading batch axis.

    Inputs that are arrays are stacked to ``(B, *shape)``; other inputs (Python scalars) are
    the same for every node of a batch and stay as they are.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     _ = tp.asarray([0.5], requires_grad=True).sin()
    ...     _ = tp.asarray([1.5], requires_grad=True).sin()
    >>> nodes = [n for n in rec.graph().replay_nodes if not n.is_leaf]
    >>> r = BatchReplay(nodes)
    >>> xs = r.inputs()
    >>> np.round(r.forward(xs), 4).tolist()
    [[0.4794], [0.9975]]
    """

    def __init__(self, nodes: Sequence[NodeRecord], upcast: bool = True) -> None:
        self.nodes = list(nodes)
        self.upcast = upcast
        first = self.nodes[0]
        self.first = Replay(first, upcast=upcast)
        self.stacked = len(self.nodes) > 1 and stackable(first)
        self.is_array = [isinstance(x, np.ndarray) for x in first.inputs or ()]
        out_ndim = np.ndim(first.output)
        self.padded = [
            (len(self.nodes),) + (1,) * max(out_ndim - x.ndim, 0) + x.shape if a else None
            for x, a in zip(first.inputs or (), self.is_array)
        ]

    def __len__(self) -> int:
        return len(self.nodes)

    @cached_property
    def replays(self) -> list[Replay]:
        """One :class:`Replay` per node (made only for a batch that runs node by node)."""
        return [self.first] + [Replay(n, upcast=self.upcast) for n in self.nodes[1:]]

    def differentiable(self) -> list[int]:
        """Positions of the inputs that need a gradient (the same for every node)."""
        return self.first.differentiable()

    def inputs(self) -> list[Any]:
        """The nodes' recorded inputs, stacked (float64 where floating and upcasting)."""
        if self.stacked:
            # NOTE: non-array inputs (Python scalars) are the same for the whole batch
            first = self.nodes[0].inputs or ()
            return [self.stack(i) if a else first[i] for i, a in enumerate(self.is_array)]
        per_node = [r.inputs() for r in self.replays]
        return [
            np.stack([xs[i] for xs in per_node]) if a else per_node[0][i]
            for i, a in enumerate(self.is_array)
        ]

    def stack(self, i: int) -> np.ndarray:
        """Input ``i`` of every node in one array (one copy: faster than ``np.stack``)."""
        arrays = [n.inputs[i] for n in self.nodes]  # type: ignore[index]
        return self.upcast64(np.array(arrays))  # NOTE: np.array(dtype=) is 2x slower than astype

    def upcast64(self, x: np.ndarray) -> np.ndarray:
        """``x`` as the replay reads it: float64 when it is floating and upcasting."""
        return x.astype(np.float64, copy=False) if self.upcast and x.dtype.kind == "f" else x

    def one(self, xs: Sequence[Any], b: int) -> list[Any]:
        """Node ``b``'s slice of stacked values ``xs``."""
        return [x[b] if a else x for x, a in zip(xs, self.is_array)]

    def forward(self, xs: Sequence[Any]) -> np.ndarray:
        """The outputs of every node, stacked, recomputed from stacked inputs ``xs``."""
        if not self.stacked:
            return np.stack([r.forward(self.one(xs, b)) for b, r in enumerate(self.replays)])
        ts = self._padded(xs)
        return np.array(p10.execute(self.nodes[0].op, ts, self.first.params).numpy())

    def vjp(self, xs: Sequence[Any], out: np.ndarray, g: np.ndarray) -> tuple[Any, ...]:
        """Each node's rule on its slice of cotangent ``g``: per input, a stack or None."""
        if not self.stacked:
            per_node = [r.vjp(self.one(xs, b), out[b], g[b]) for b, r in enumerate(self.replays)]
            return tuple(_stack_grads(gs) for gs in zip(*per_node))
        replay = self.first
        ts = tuple(self._padded(xs))
        ctx = rule_context(self.nodes[0], replay.params, ts, _tensor(out))
        grads = replay.rule.vjp(ctx, _tensor(np.asarray(g, dtype=out.dtype)))
        return tuple(self._unpad(i, gi, xs) for i, gi in enumerate(grads))

    def _unpad(self, i: int, g: Any, xs: Sequence[Any]) -> Any:
        if g is None:
            return None
        g = _numpy(g)
        if g.shape != self.padded[i]:
            # NOTE: a rule that returns a wrong shape is judged node by node, as alone
            raise ValueError(f"the rule returned shape {g.shape} for input {i}")
        return g.reshape(np.shape(xs[i]))

    def _padded(self, xs: Sequence[Any]) -> list[Any]:
        return [
            _tensor(np.reshape(x, shape)) if shape is not None else _tensor(x)
            for x, shape in zip(xs, self.padded)
        ]


def _stack_grads(gs: Sequence[Any]) -> Any:
    if all(g is None for g in gs):
        return None
    if any(g is None for g in gs):
        raise ValueError("the nodes of a batch disagree on which inputs get a gradient")
    return np.stack(gs)


def batches(items: Sequence[Any], size: int, key: Any) -> Any:
    """Split ``items`` into batches of at most ``size`` items with equal ``key(item)``; an item
    whose key is None goes alone. Batches come in the order their last item arrives.

    >>> list(batches([1, 2, 3, 4, 5], 2, lambda i: i % 2))
    [[1, 3], [2, 4], [5]]
    """
    open_: dict[Any, list] = {}
    for item in items:
        k = key(item) if size > 1 else None
        if k is None:
            yield [item]
            continue
        group = open_.setdefault(k, [])
        group.append(item)
        if len(group) >= size:
            yield open_.pop(k)
    yield from open_.values()


def plan(graph: Graph, ids: Sequence[int], opts: Any) -> tuple[dict, list[list]]:
    """The outcomes of the non-leaf nodes among ``ids`` that cannot be replayed, and the
    others as groups of ``(node, execution)`` of one layout (at most ``opts.batch_size``
    each), in the order ``local.check_nodes`` checks them with ``local.check_group``."""
    out, todo = replayable(graph, ids)
    return out, list(groups_of(todo, opts, graph))


def groups_of(todo: list, opts: Any, graph: Graph | None = None) -> Iterator[list]:
    """The ``(node, execution)`` items ``todo`` in groups of one layout (at most
    ``opts.batch_size`` each), made as they are iterated; with ``graph`` (the graph of the
    items) by its cached :func:`layout_keys`."""
    if graph is None or opts.batch_size <= 1:
        return batches(todo, opts.batch_size, _key)
    keys = layout_keys(graph)
    return batches(todo, opts.batch_size, lambda item: keys[item[0].id])


_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def layout_keys(graph: Graph) -> list[int | None]:
    """Per node id, a small int shared by the nodes that replay as one batch (same op,
    params, layouts of values and gradients), None for a node replayed alone.

    Made once per graph (and rule table: a node whose recorded rule is no longer the table's
    replays alone) and shared by the local and kernel checks and every rerun: the per-node
    Python of the key was the largest part of grouping.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     x = tp.asarray([0.5, 1.5], requires_grad=True)
    ...     _ = x.sin() + x.sin()
    >>> layout_keys(rec.graph())
    [None, 0, 0, 1]
    """
    rules = tuple(tpx.rules.RULES.values())
    cached = _KEYS.get(graph)
    same = cached is not None and len(cached[0]) == len(rules)
    if same and all(map(operator.is_, cached[0], rules)):
        return cached[1]
    codes: dict[tuple, int] = {}
    keys = []
    for node in graph.replay_nodes:
        key = _key((node, graph.execution(node.id)))
        keys.append(None if key is None else codes.setdefault(key, len(codes)))
    _KEYS[graph] = (rules, keys)
    return keys


def replayable(graph: Graph, ids: Sequence[int]) -> tuple[dict, list]:
    """The outcomes of the non-leaf nodes among ``ids`` that cannot be replayed, and the
    others as ``(node, execution)`` items, in the order of ``ids``."""
    out: dict[int, tuple] = {}
    todo = []
    for nid in ids:
        node = graph.replay_node(nid)
        if node.is_leaf:
            continue
        reason = why_not_replayable(node)
        if reason is not None:
            out[nid] = (reason, None, None)
        else:
            todo.append((node, graph.execution(nid)))
    return out, todo


def _key(item: tuple) -> tuple | None:
    node, ex = item
    if not stackable(node):
        return None
    if ex is None:
        return batch_key(node), None
    return batch_key(node), _grad_layout(ex.grad_output), tuple(map(_grad_layout, ex.grad_inputs))


def _grad_layout(a: Any) -> tuple | None:
    if a.__class__ is np.ndarray:
        return a.shape, a.dtype.str
    return None if a is None else _layout(a)
