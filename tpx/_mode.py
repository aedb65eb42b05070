"""Thread-local modes (grad mode, scopes, anomaly detection) and the observer registry."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from p10 import Handle

F = TypeVar("F", bound=Callable[..., Any])


NAN_CHECKS = 1
SAVED_CHECKS = 2


class _State(threading.local):
    grad_enabled: bool = True
    # NOTE: bits of the checks that are on: NAN_CHECKS (a NaN/Inf raises), SAVED_CHECKS
    # (checksums of saved values); any bit sends ops and backward to their general paths
    anomaly: int = 0
    # rule/kernel overrides of this thread (tpx._overrides.Overrides), None when none
    overrides: Any = None
    rule_overrides: dict | None = None

    def __init__(self) -> None:
        self.scopes: list[str] = []
        self.scope = ""


state = _State()

# NOTE: how many scopes and rule/kernel overrides are on, in all threads together: while none
# is, recording reads neither `state.scope` nor `state.overrides` (a thread-local read costs
# ~1,000 instructions, 2% of a recorded op); while one is, every thread reads its own.
local_settings = 0
_local_settings_lock = threading.Lock()


def count_local_setting(delta: int) -> None:
    """Add ``delta`` (+1 when a thread turns a scope or an override on, -1 when off) to
    ``local_settings``."""
    global local_settings
    with _local_settings_lock:
        local_settings += delta


# NOTE: how many threads have an anomaly check on (``state.anomaly`` not 0), as
# ``local_settings``: while none has, the hot paths read ``state.anomaly`` not at all.
anomalous = 0


def set_anomaly(bits: int) -> None:
    """Set this thread's ``state.anomaly`` to ``bits``, counting it in ``anomalous``: every
    write of ``state.anomaly`` goes through here."""
    global anomalous
    was = state.anomaly
    state.anomaly = bits
    if bool(was) != bool(bits):
        with _local_settings_lock:
            anomalous += 1 if bits else -1


class _GradModeContext:
    """Base of ``no_grad``/``enable_grad``/``set_grad_enabled``: context manager and decorator."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        self._previous.append(state.grad_enabled)
        state.grad_enabled = self._enabled

    def __exit__(self, *exc: object) -> None:
        state.grad_enabled = self._previous.pop()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)._make(self._enabled):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    @classmethod
    def _make(cls, enabled: bool) -> _GradModeContext:
        return _GradModeContext(enabled)


class no_grad(_GradModeContext):
    """Record nothing inside: a context manager and a decorator (thread-local).

    >>> import tpx as tp
    >>> x = tp.ones(2, requires_grad=True)
    >>> with tp.no_grad():
    ...     (x * 2).requires_grad
    False
    """

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(_GradModeContext):
    """Record again inside a ``no_grad`` block: a context manager and a decorator.

    >>> import tpx as tp
    >>> x = tp.ones(2, requires_grad=True)
    >>> with tp.no_grad(), tp.enable_grad():
    ...     (x * 2).requires_grad
    True
    """

    def __init__(self) -> None:
        super().__init__(True)


class set_grad_enabled(_GradModeContext):
    """Set grad mode on or off; as a call, a context manager or a decorator.

    >>> import tpx as tp
    >>> with tp.set_grad_enabled(False):
    ...     tp.is_grad_enabled()
    False
    """

    def __init__(self, mode: bool) -> None:
        super().__init__(bool(mode))
        self._previous.append(state.grad_enabled)
        state.grad_enabled = bool(mode)
        self._applied = True

    def __enter__(self) -> None:
        if self._applied:  # the constructor switched the mode already
            self._applied = False
            return
        super().__enter__()

    def __call__(self, fn: F) -> F:
        if self._applied:  # used as a decorator: undo the constructor's switch
            state.grad_enabled = self._previous.pop()
            self._applied = False
        return super().__call__(fn)


def is_grad_enabled() -> bool:
    """Whether ops record gradient nodes in this thread.

    >>> is_grad_enabled()
    True
    """
    return state.grad_enabled


@contextmanager
def scope(name: str) -> Iterator[str]:
    """Name the nodes recorded inside; nested scopes join with dots (``encoder.layer0``).

    >>> import tpx as tp
    >>> x = tp.ones(2, requires_grad=True)
    >>> with tp.scope("encoder"), tp.scope("proj"):
    ...     (x * 2).grad_fn.scope
    'encoder.proj'
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"scope: name must be a non-empty string, got {name!r}")
    count_local_setting(1)
    state.scopes.append(state.scope)
    state.scope = f"{state.scope}.{name}" if state.scope else name
    try:
        yield state.scope
    finally:
        state.scope = state.scopes.pop()
        count_local_setting(-1)


def current_scope() -> str:
    """The dotted scope that new nodes get ('' outside every scope).

    >>> current_scope()
    ''
    """
    return state.scope


@contextmanager
def detect_anomaly() -> Iterator[None]:
    """Raise :class:`~tpx.AnomalyError` at the first NaN/Inf in a forward output or gradient.

    >>> import tpx as tp
    >>> with tp.detect_anomaly():
    ...     try:
    ...         tp.zeros(1, requires_grad=True).log()
    ...     except tp.AnomalyError as e:
    ...         print(str(e).split(":")[0])
    anomaly in forward of log (LogBackward)
    """
    previous = state.anomaly
    set_anomaly(previous | NAN_CHECKS | SAVED_CHECKS)
    try:
        yield
    finally:
        set_anomaly(previous)


class set_saved_tensor_checks:
    """Turn checksums of saved values on or off in this thread (``detect_anomaly`` turns them
    on too): each node records a CRC-32 of every value it saves, and backward raises
    :class:`~tpx.SavedValueError`, naming the node, when the bytes changed without a version
    bump (memory written by another library). Takes effect when called; as a context
    manager it restores the previous setting on exit, as does :meth:`restore`.

    >>> import tpx as tp
    >>> with tp.set_saved_tensor_checks(True):
    ...     tp.saved_tensor_checks_enabled()
    True
    >>> tp.saved_tensor_checks_enabled()
    False
    """

    def __init__(self, mode: bool) -> None:
        self._previous = state.anomaly
        if mode:
            set_anomaly(self._previous | SAVED_CHECKS)
        else:
            set_anomaly(self._previous & ~SAVED_CHECKS)

    def __enter__(self) -> set_saved_tensor_checks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def restore(self) -> None:
        """Put back the setting from before this call (NaN checks are left as they are)."""
        set_anomaly((state.anomaly & ~SAVED_CHECKS) | (self._previous & SAVED_CHECKS))


def saved_tensor_checks_enabled() -> bool:
    """Whether nodes recorded in this thread keep checksums of their saved values.

    >>> saved_tensor_checks_enabled()
    False
    """
    return bool(state.anomaly & SAVED_CHECKS)


# -- observers ----------------------------------------------------------------------------------
observers: list[Any] = []
"""Registered observers; empty means the hot paths skip every event (the cost is nil)."""

EVENTS = (
    "on_node_recorded",
    "on_node_forward",
    "on_backward_start",
    "on_node_executed",
    "on_grad_accumulated",
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


def _index_handlers() -> None:
    global _handlers, on_node_recorded, on_node_forward, on_node_executed, on_grad_accumulated
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
