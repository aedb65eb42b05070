"""The backward engine. It knows no op: it orders nodes, looks up each node's rule, checks
what the rule returns and accumulates gradients with P10 operations.

Nodes get increasing sequence numbers when recorded, and a node is always recorded after the
nodes of its inputs, so sorting the reachable nodes by decreasing ``seq`` is a reverse
topological order: every node runs after all of its consumers, deterministically.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import p10
from tpx import _observers
from tpx._backward_errors import (
    check_grad,
    given_grad,
    output_name,
    raise_arity,
    raise_bad_gradient,
    raise_freed,
    raise_modified,
)
from tpx._errors import BackwardError
from tpx._graph import AccumulateGrad, GradFn, Node, RuleContext, hooked
from tpx._leaf import accumulate_leaf, pre_hooks
from tpx._mode import NAN_CHECKS, state
from tpx._saved_checks import verify_checksums
from tpx._saved_graph import graph_inputs
from tpx._tensor import Tensor, wrap
from tpx._tensor_autograd import use_engine

P10Tensor = p10.Tensor
_new = object.__new__


def reachable(roots: Sequence[Node]) -> list[Node]:
    """Every node reachable from ``roots``, in reverse topological order (iterative walk).

    >>> import tpx as tp
    >>> x = tp.ones(2, requires_grad=True)
    >>> [n.name for n in reachable([(x * 2).sum().grad_fn])]
    ['SumBackward', 'MulBackward', 'AccumulateGrad']
    """
    seen: set[Node] = set()
    stack = list(roots)
    nodes: list[Node] = []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        nodes.append(node)
        for e in node.edges:
            if e is not None and e not in seen:
                stack.append(e)
    nodes.sort(key=_by_seq, reverse=True)
    return nodes


_by_seq = attrgetter("seq")


def _root_grad(t: Tensor, g: Any, create_graph: bool) -> Any:
    if g is None:
        if math.prod(t._value._data.shape) != 1:
            raise BackwardError(
                f"backward of a non-scalar output of shape {t.shape}: pass gradient= "
                "(a tensor of that shape), or reduce the output first (e.g. .sum())"
            )
        return _as_grad(p10.ones_like(t._value), create_graph)
    graw = g._value if isinstance(g, Tensor) else given_grad(t, g)
    if graw.shape != t.shape:
        raise BackwardError(
            f"gradient of shape {graw.shape} does not match the shape {t.shape} of "
            f"{output_name(t)}; pass a gradient of that shape"
        )
    if (graw.dtype.kind == "c") != (t.dtype.kind == "c"):  # as PyTorch; nodes rely on it
        raise BackwardError(
            f"gradient of dtype {graw.dtype.name} for {output_name(t)} of dtype "
            f"{t.dtype.name}: a complex output takes a complex gradient, a real one a real "
            f"gradient; pass a gradient of dtype {t.dtype.name}"
        )
    if create_graph and isinstance(g, Tensor):
        return g
    return _as_grad(graw, create_graph)


def _as_grad(raw: p10.Tensor, create_graph: bool) -> Any:
    return wrap(raw) if create_graph else raw


def backward(
    tensors: Sequence[Tensor],
    grad_tensors: Sequence[Any] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
) -> list[Any] | None:
    """Run backward from ``tensors``; accumulate into leaves' ``.grad``, or, with ``inputs``,
    return the gradients of those tensors instead (``tpx.grad``).

    >>> import tpx as tp
    >>> x = tp.ones(3, requires_grad=True)
    >>> backward([(x * x).sum()]); x.grad.tolist()
    [2.0, 2.0, 2.0]
    """
    grad_tensors = grad_tensors or [None] * len(tensors)
    roots = tuple([_root(t) for t in tensors])
    grads: dict[Node, Any] = {}
    for node, t, g in zip(roots, tensors, grad_tensors):
        _accumulate(grads, node, _root_grad(t, g, create_graph), None)
    run = _Pass(retain_graph, create_graph, inputs)
    order = reachable(roots)
    run.plan(order)
    # NOTE: the grad mode switched by hand, as set_grad_enabled does (one object less per call)
    previous = state.grad_enabled
    state.grad_enabled = create_graph
    if run.observed:
        info = _observers.backward_info(run.targets, create_graph, run.retain_graph)
        _observers.emit("on_backward_start", roots, dict(grads), order, info)
    try:
        _run(order, grads, run)
    finally:
        state.grad_enabled = previous
        if run.observed:
            try:
                if run.runs is not None:
                    _hand_over(run)
            finally:
                _observers.emit("on_backward_end", roots)
    return run.results


def _root(t: Tensor) -> Node:
    if not t.requires_grad:
        raise BackwardError(
            f"backward of a tensor of shape {t.shape} that does not require grad and has "
            "no grad_fn; did you compute it under no_grad() or from detached tensors?"
        )
    return t.grad_fn if t.grad_fn is not None else t._accumulator()


# What a node needs besides its rule, set once per pass in _Pass.plan (see _before)
_HOOKS = 1  # tensor hooks, pre-hooks or retain_grad() see its gradient first
_TARGET = 2  # a tpx.grad input: its gradient is a result
_STOP = 4  # nothing past it is needed (a leaf under tpx.grad, a node that reaches no input)


class _Pass:
    """The settings of one backward pass and the per-node flags, fixed before its loop."""

    __slots__ = (
        "create_graph", "flags", "inspected", "nan_checks", "observed", "results",
        "retain_graph", "runs", "sums", "targets",
    )  # fmt: skip

    def __init__(self, retain: bool | None, create_graph: bool, inputs: Any) -> None:
        self.create_graph = create_graph
        self.retain_graph = create_graph if retain is None else retain
        self.observed = bool(_observers.observers)
        self.nan_checks = bool(state.anomaly & NAN_CHECKS)
        # NOTE: a batch of on_nodes_executed takes a rule's gradients as returned (see _send):
        # _after for anomaly mode, hooks, per-node observers and create_graph (the TPX tensors
        # that the sums hold are then the ones the observers see)
        self.inspected = self.nan_checks or (
            self.observed and (create_graph or bool(_observers.on_node_executed))
        )
        self.targets = _targets(inputs)
        self.results = None if inputs is None else [None] * len(inputs)
        self.flags: dict[Node, int] = {}
        # the batches of on_nodes_executed (see _hand_over); None when nobody reads them
        self.runs: list | None = None
        self.sums: list | None = None
        if self.observed and _observers.on_nodes_executed:
            self.runs, self.sums = [], []

    def plan(self, order: list[Node]) -> None:
        """Flag the nodes that need more than their rule; most need nothing."""
        flags = self.flags
        for x in hooked:  # NOTE: nodes of other graphs too: flags of nodes never met are unused
            node = x if isinstance(x, Node) else x._accumulator_ref and x._accumulator_ref()
            if node is not None:
                flags[node] = _HOOKS
        targets = self.targets
        if targets is None:
            return
        reaches: set[Node] = set()  # the nodes that lead to a requested input
        for node in reversed(order):  # inputs before consumers
            if node in targets:
                flags[node] = flags.get(node, 0) | _TARGET
            if node.__class__ is AccumulateGrad or not any(
                e in reaches or e in targets for e in node.edges if e is not None
            ):
                flags[node] = flags.get(node, 0) | _STOP
            else:
                reaches.add(node)


def _targets(inputs: Sequence[Tensor] | None) -> dict[Node, int] | None:
    if inputs is None:
        return None
    targets: dict[Node, int] = {}
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise BackwardError(f"grad: input {i} does not require grad")
        targets[x.grad_fn if x.grad_fn is not None else x._accumulator()] = i
    return targets


def _run(order: list[Node], grads: dict, run: _Pass) -> None:
    """The backward loop: each node that received a gradient runs once, after its consumers."""
    flags, observed = run.flags, run.observed
    start = 0.0
    for node in order:
        g = grads.pop(node, None)
        if g is None:
            continue
        if observed:
            start = time.perf_counter()
        if node in flags:
            g = _before(node, g, flags[node], run)
            if g is None:
                continue
        if node.__class__ is AccumulateGrad:
            accumulate_leaf(node, g, run.create_graph)
            if observed:
                _executed(node, g, (), start, run)
        else:
            # NOTE: no local keeps a gradient alive past its node: a leaf takes over a
            # gradient that nothing else holds (see _unshared)
            _send(grads, node, g, node.vjp(_context(node, g, run), g), run, start)
        g = None


def _before(node: Node, g: Any, flags: int, run: _Pass) -> Any:
    """Hooks and tpx.grad targets of a flagged node; None when the walk stops at it."""
    if flags & _HOOKS:
        g = pre_hooks(node, g)
    if flags & _TARGET:
        run.results[run.targets[node]] = g if run.create_graph else wrap(g)
    return None if flags & _STOP else g


def _context(node: GradFn, g: Any, run: _Pass) -> RuleContext:
    """What the node's rule reads: its saved values (checked unmodified, then let go)."""
    saved = node.saved
    ctx = _new(RuleContext)  # NOTE: RuleContext.__init__ written out (one call less per node)
    ctx.params, ctx.input_meta = node.params, node.in_meta
    ctx.needs_input_grad, ctx.function_ctx = node.needs_input_grad, node.ctx
    if saved is None:
        if node.freed:
            raise_freed(node)
        ctx.inputs, ctx.output = (), None
    else:
        for value, version in zip(saved, node.versions):
            if value is not None:
                if value.__class__ is P10Tensor:  # the counter itself: no property call
                    vc = value._vc
                    if vc is not None and vc[0] != version:
                        raise_modified(node, saved)
                elif value.version != version:  # a TPX tensor that a tp.Function saved
                    raise_modified(node, saved)
        if node.checksums is not None:  # recorded under tp.set_saved_tensor_checks
            verify_checksums(node)
        if run.create_graph:
            ctx.inputs, ctx.output = graph_inputs(node, saved)
        else:
            ctx.inputs, ctx.output = saved[:-1], saved[-1]
        if not run.retain_graph:
            node.saved = None
            node.freed = True
    if run.nan_checks:
        check_grad(node, g, "incoming gradient")
    return ctx


def _send(grads: dict, node: GradFn, g: Any, grad_inputs: Any, run: _Pass, start: float) -> None:
    """Check each gradient the rule returned against its input, and add it to that input's."""
    edges = node.edges
    if grad_inputs.__class__ is not tuple or len(grad_inputs) != len(edges):
        raise_arity(node, grad_inputs)
    if run.inspected or node._hooks is not None:
        grad_inputs = _after(node, g, grad_inputs, run, start)
    elif run.runs is not None:
        _executed(node, g, grad_inputs, start, run)
    create_graph = run.create_graph
    source = node if run.observed else None  # observers see each sum
    sums = run.sums  # NOTE: read after _executed: a batch handed over there starts a new list
    for nxt, gi, (shape, dtype) in zip(edges, grad_inputs, node.in_meta):
        if nxt is None or gi is None:
            continue
        raw = gi._value if gi.__class__ is Tensor else gi
        # NOTE: the backend's own shape and dtype first (cheap); P10's only to confirm
        data = raw._data
        if (data.shape != shape and raw.shape != shape) or (
            data.dtype is not dtype and raw.dtype != dtype
        ):
            raise_bad_gradient(node, grad_inputs)
        if create_graph:  # TPX tensors, so that the sums are recorded
            raw = gi if gi.__class__ is Tensor else wrap(gi)
        _accumulate(grads, nxt, raw, source)
        if sums is not None:  # NOTE: the total as the sum left it (what _accumulate stored)
            sums += (nxt, raw, grads[nxt], node)


def _after(node: GradFn, g: Any, grad_inputs: tuple, run: _Pass, start: float) -> tuple:
    """What anomaly mode, the node's hooks and observers see of a rule's gradients, before
    they are sent: one per input (None for those that need none), each maybe replaced."""
    grad_inputs = _observers.normalized(node.edges, grad_inputs, run.create_graph)
    if run.nan_checks:
        for i, gi in enumerate(grad_inputs):
            if gi is not None:
                check_grad(node, gi, f"gradient for input {i}")
    for fn in node._hooks or ():
        out = fn(node, grad_inputs, g)
        if out is not None:
            grad_inputs = tuple(out)
    if run.observed:
        _executed(node, g, grad_inputs, start, run)
    return grad_inputs


def _executed(node: Node, g: Any, grad_inputs: tuple, start: float, run: _Pass) -> None:
    """Tell observers that ``node`` ran (straight to the handlers: no ``emit`` per node), or
    add the run to the batch of ``on_nodes_executed``."""
    seconds = time.perf_counter() - start
    for fn in _observers.on_node_executed:
        fn(node, g, grad_inputs, seconds)
    runs = run.runs
    if runs is not None:
        if len(runs) >= _BATCH_ITEMS:  # NOTE: before this run: its sums go with it
            runs = _hand_over(run)
        runs += (node, g, grad_inputs, seconds)


_BATCH_ITEMS = 4 * _observers.BATCH


def _hand_over(run: _Pass) -> list:
    """Send the batch of node runs and sums to ``on_nodes_executed``; new lists follow."""
    runs, sums = run.runs, run.sums
    run.runs, run.sums = [], []
    if runs or sums:
        for fn in _observers.on_nodes_executed:
            fn(runs, sums)
    return run.runs


def _accumulate(grads: dict, node: Node, g: Any, source: Node | None) -> None:
    """Add ``g`` into the gradient waiting for ``node`` (told to observers when ``source``)."""
    prev = grads.get(node)
    total = g if prev is None else prev + g
    grads[node] = total
    if source is not None:
        for fn in _observers.on_grad_accumulated:
            fn(node, g, total, source)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Any, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    >>> import tpx as tp
    >>> x = tp.asarray([3.0], requires_grad=True)
    >>> (g,) = tp.grad((x ** 2).sum(), x)
    >>> g.tolist(), x.grad is None
    ([6.0], True)
    """
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    gos = None
    if grad_outputs is not None:
        gos = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    results = backward(outs, gos, retain_graph, create_graph, inputs=ins)
    assert results is not None
    for i, r in enumerate(results):
        if r is None and not allow_unused:
            raise BackwardError(
                f"grad: input {i} (shape {ins[i].shape}) was not used to compute the outputs; "
                "pass allow_unused=True to get None for it"
            )
    return tuple(results)


use_engine(backward)
