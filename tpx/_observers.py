"""The observer registry: who receives TPX's graph events, looked up once per (un)registration
(``add_observer``), the per-node events' handlers as module globals that the recording path
and the engine loop over (``on_node_recorded`` ...), and what a backward pass tells them
(:class:`BackwardInfo`). Observers are how ``tpx_inspect`` and ``tpx.compile`` see graphs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p10 import Handle
from tpx._tensor import Tensor, wrap

observers: list[Any] = []
"""Registered observers; empty means the hot paths skip every event (the cost is nil)."""

EVENTS = (
    "on_node_recorded",
    "on_node_forward",
    "on_backward_start",
    "on_node_executed",
    "on_grad_accumulated",
    "on_nodes_executed",
    "on_backward_end",
)


def add_observer(observer: Any) -> Handle:
    """Register an object that receives graph events; returns a handle whose ``remove()``
    unregisters it. An observer defines any of these methods:

    - ``on_node_recorded(node, output)``: an op recorded ``node`` producing ``output``;
    - ``on_node_forward(node, inputs, output, seconds)``: right after ``on_node_recorded``,
      with the op's inputs in argument order and the seconds its forward took;
    - ``on_backward_start(roots, grad_roots, order, info)``: a backward will run ``order``;
      ``info`` is a :class:`BackwardInfo` (``tpx.grad`` or ``.backward()``, which inputs it
      targets); a method that takes only three arguments gets the first three;
    - ``on_node_executed(node, grad_output, grad_inputs, seconds)``: a node's rule ran;
    - ``on_grad_accumulated(target, contribution, total, source)``: ``contribution`` from
      ``source`` was summed into the gradient of ``target`` (a node), giving ``total``;
    - ``on_nodes_executed(runs, sums)``: the same node runs and sums in batches, as flat lists
      (no object per event): ``runs`` holds four items per node run, ``node, grad_output,
      grad_inputs, seconds``, ``sums`` four per sum, ``target, contribution, total, source``,
      each in the order they happened; sent every :data:`BATCH` node runs and once at the end
      of the pass, before ``on_backward_end`` (also after an error). The lists are the
      observer's to keep: the engine starts new ones. An observer that reads a whole pass
      defines this instead of the two per-node events (a Python call per node less). A
      batch's ``grad_inputs`` may be as the rule returned them (a value for an input that
      needs none, a TPX tensor): ``tpx.observe.grad_inputs`` gives what
      ``on_node_executed`` sees, so that only the runs an observer reads are normalized;
    - ``on_backward_end(roots)``: the backward finished (also after an error).

    >>> import tpx as tp
    >>> class Count:
    ...     n = 0
    ...     def on_node_recorded(self, node, output):
    ...         self.n += 1
    >>> c = Count()
    >>> with tp.add_observer(c):
    ...     _ = tp.ones(2, requires_grad=True) * 3
    >>> c.n
    1
    """
    if not any(hasattr(observer, e) for e in EVENTS):
        raise TypeError(f"add_observer: {observer!r} defines none of {', '.join(EVENTS)}")
    observers.append(observer)
    _index_handlers()

    def remove() -> None:
        if observer in observers:
            observers.remove(observer)
            _index_handlers()

    return Handle(remove)


# event -> the bound methods that handle it, in registration order: looked up once when an
# observer is added or removed, not at every event (a capture receives several per node)
_handlers: dict[str, tuple[Any, ...]] = {}

# NOTE: the handlers of the per-node events, as module globals: the recording path and the
# engine loop over them directly (no emit call and no dict lookup per event; empty tuples
# when no observer handles the event)
on_node_recorded: tuple[Any, ...] = ()
on_node_forward: tuple[Any, ...] = ()
on_node_executed: tuple[Any, ...] = ()
on_grad_accumulated: tuple[Any, ...] = ()
on_nodes_executed: tuple[Any, ...] = ()

BATCH = 128
"""Node runs per ``on_nodes_executed`` call at most: what the engine holds for it is bounded
(the gradients and grad_inputs tuples of a batch; a whole long pass held until its end would
make the cyclic GC scan them again and again)."""


def normalized(edges: tuple, grad_inputs: tuple, create_graph: bool) -> tuple:
    """A rule's gradients as hooks and observers see them: None for an input that needs none
    (its edge is None), else a P10 value, or a TPX tensor under ``create_graph``."""
    values = []  # NOTE: a loop, not a comprehension: no function made and called per node
    for e, gi in zip(edges, grad_inputs):
        if e is None or gi is None:
            gi = None
        elif gi.__class__ is not Tensor:
            gi = wrap(gi) if create_graph else gi
        elif not create_graph:
            gi = gi._value
        values.append(gi)
    return tuple(values)


def _index_handlers() -> None:
    global _handlers, on_node_recorded, on_node_forward, on_node_executed, on_grad_accumulated
    global on_nodes_executed
    _handlers = {
        event: tuple(
            _adapt(event, fn)
            for fn in (getattr(o, event, None) for o in observers)
            if fn is not None
        )
        for event in EVENTS
    }
    on_node_recorded = _handlers["on_node_recorded"]
    on_node_forward = _handlers["on_node_forward"]
    on_node_executed = _handlers["on_node_executed"]
    on_grad_accumulated = _handlers["on_grad_accumulated"]
    on_nodes_executed = _handlers["on_nodes_executed"]


def _adapt(event: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    # NOTE: on_backward_start got its fourth argument (info) later; observers written for
    # three keep working. Decided once, when the observer is added, not at every event.
    if event != "on_backward_start" or _positional_count(fn) >= 4:
        return fn
    return lambda roots, grad_roots, order, info: fn(roots, grad_roots, order)


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 4
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return 4
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(k in positional for k in kinds)


@dataclass(frozen=True)
class BackwardInfo:
    """What kind of backward pass starts: the fourth argument of ``on_backward_start``.

    ``targets`` holds the nodes whose gradients ``tpx.grad`` returns (in input order, each once; a
    leaf's node is its ``AccumulateGrad``), or ``None`` for ``.backward()``, which sums into
    the leaves' ``.grad``. ``tpx.grad`` runs only the nodes its targets need.

    >>> import tpx as tp
    >>> class Seen:
    ...     def on_backward_start(self, roots, grad_roots, order, info):
    ...         print(info.is_grad, len(info.targets or ()), info.create_graph)
    >>> x = tp.ones(2, requires_grad=True)
    >>> with tp.add_observer(Seen()):
    ...     _ = tp.grad((x * x).sum(), x)
    ...     (x * x).sum().backward()
    True 1 False
    False 0 False
    """

    targets: tuple[Any, ...] | None = None
    create_graph: bool = False
    retain_graph: bool = False

    @property
    def is_grad(self) -> bool:
        """True for ``tpx.grad`` (gradients returned, ``.grad`` untouched)."""
        return self.targets is not None


BACKWARD = BackwardInfo()
"""The info of a plain ``.backward()`` (no targets, no graph created)."""


def backward_info(targets: Any, create_graph: bool, retain_graph: bool) -> BackwardInfo:
    """The :class:`BackwardInfo` of a pass; ``targets`` maps each target node to its index."""
    if targets is None and not create_graph and not retain_graph:
        return BACKWARD
    return BackwardInfo(None if targets is None else tuple(targets), create_graph, retain_graph)


def emit(event: str, *args: Any) -> None:
    """Send ``event`` to every observer that handles it (the methods an observer had when it
    was added)."""
    for fn in _handlers.get(event, ()):
        fn(*args)
