"""Thread-local modes (grad mode, scopes, anomaly detection); the observer registry is
``tpx._observers``."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

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
