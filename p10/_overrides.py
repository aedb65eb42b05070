"""Replace one kernel of one backend for a block of code, in the calling thread only.

``with p10.override_kernel(Op.TANH, my_tanh, backend="numpy"):`` makes every tanh computed by
this thread inside the block run ``my_tanh``; other threads keep the backend's own kernel.
While some thread overrides ``(backend, op)``, the backend's table holds a small dispatcher
for that op that picks the thread's kernel (or the original); when the last override of it
ends, the original goes back into the table. With no override anywhere nothing is changed,
so the kernel fast paths cost exactly what they cost before.

Who records nodes (TPX) learns of the calling thread's overrides through
:func:`add_kernel_override_listener`, so that a node can say which kernel computed it.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from p10._backend import Backend, CustomOp, Handle, OpKey, get_backend, op_from_name
from p10._errors import ArgumentError
from p10._ops import OP_INFO, Op

__all__ = [
    "KernelOverrideError",
    "add_kernel_override_listener",
    "kernel_overrides",
    "override_kernel",
]


class KernelOverrideError(ArgumentError):
    """An override that names an unknown op or backend, or a kernel of the wrong signature.

    >>> with override_kernel("no_such_op", abs):
    ...     pass
    Traceback (most recent call last):
    ...
    p10._overrides.KernelOverrideError: override_kernel: unknown op name 'no_such_op'
    """


class _Local(threading.local):
    # (backend, op) -> (kernel, name); None when this thread overrides nothing
    kernels: dict[tuple[Backend, OpKey], tuple[Callable[..., Any], str]] | None = None


_local = _Local()
_lock = threading.Lock()
# (backend, op) -> [original kernel, the dispatcher, how many blocks use it, original inplace]
_installed: dict[tuple[Backend, OpKey], list[Any]] = {}
_listeners: list[Callable[[dict | None], None]] = []


def describe(fn: Any) -> str:
    """``module:qualname`` of a function (what traces and reports show).

    >>> describe(describe)
    'p10._overrides:describe'
    """
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module}:{name}"


def kernel_overrides() -> dict[tuple[Backend, OpKey], tuple[Callable[..., Any], str]] | None:
    """The calling thread's kernel overrides, ``(backend, op) -> (kernel, name)`` (or None).

    >>> kernel_overrides() is None
    True
    """
    return _local.kernels


def add_kernel_override_listener(fn: Callable[[dict | None], None]) -> Handle:
    """Call ``fn(overrides)`` in the thread whose kernel overrides change (entering or leaving
    an :func:`override_kernel` block), with that thread's new overrides (None for none).

    >>> seen = []
    >>> with add_kernel_override_listener(lambda o: seen.append(o is None)):
    ...     with override_kernel(Op.NEG, lambda x: -x):
    ...         pass
    >>> seen
    [False, True]
    """
    _listeners.append(fn)
    return Handle(lambda: _listeners.remove(fn) if fn in _listeners else None)


@contextmanager
def override_kernel(
    op: OpKey | str, kernel: Callable[..., Any], *, backend: str | Backend | None = None
) -> Iterator[Backend]:
    """Compute ``op`` with ``kernel`` on ``backend`` (default: the current default backend)
    inside the block, in this thread only; nestable, restored on error.

    ``kernel`` takes what the backend's kernel takes (its arrays, then the op's params as
    keywords) and returns an array of the backend. On a backend with ``weak_scalars`` the
    kernel of a binary op may also receive a Python int/float operand.

    >>> import numpy as np, p10
    >>> x = p10.asarray([0.0, 1.0])
    >>> with override_kernel(Op.TANH, lambda a: np.clip(a, -1, 1)):
    ...     x.tanh().tolist()
    [0.0, 1.0]
    >>> round(x.tanh().tolist()[1], 4)
    0.7616
    """
    key, entry = _prepare(op, kernel, backend)
    previous = _local.kernels
    _install(key)
    try:
        _set_local({**(previous or {}), key: entry})
        yield key[0]
    finally:
        _set_local(previous)
        _uninstall(key)


def _prepare(op: Any, kernel: Any, backend: Any) -> tuple[tuple[Backend, OpKey], tuple]:
    """Check the arguments; the table key and the ``(kernel, name)`` entry."""
    if isinstance(op, str):
        try:
            op = op_from_name(op)
        except ArgumentError as e:
            raise KernelOverrideError(f"override_kernel: {e}") from None
    if not isinstance(op, Op | CustomOp):
        raise KernelOverrideError(f"override_kernel: expected a p10.Op or an op name, got {op!r}")
    try:
        b = get_backend(backend)
    except Exception as e:  # an unknown backend is the user's input
        raise KernelOverrideError(f"override_kernel({op.value}): {e}") from None
    if op not in b.kernels:
        raise KernelOverrideError(
            f"override_kernel({op.value}): backend '{b.name}' has no kernel for this op to "
            "replace; register one with p10.register_kernel"
        )
    _check_kernel(op, kernel)
    return (b, op), (kernel, describe(kernel))


def _check_kernel(op: OpKey, kernel: Any) -> None:
    if not callable(kernel):
        raise KernelOverrideError(
            f"override_kernel({op.value}): kernel must be callable, got {kernel!r}"
        )
    arity = OP_INFO[op].arity if isinstance(op, Op) else op.arity
    if arity is None:
        return
    try:
        inspect.signature(kernel).bind_partial(*range(arity))
    except TypeError as e:
        raise KernelOverrideError(
            f"override_kernel({op.value}): kernel must take {arity} array(s) (then the op's "
            f"params as keywords): {e}"
        ) from None
    except ValueError:
        pass  # builtins without a signature


def _set_local(kernels: dict | None) -> None:
    _local.kernels = kernels or None
    for fn in list(_listeners):
        fn(_local.kernels)


def _install(key: tuple[Backend, OpKey]) -> None:
    backend, op = key
    with _lock:
        entry = _installed.get(key)
        if entry is not None:
            entry[2] += 1
            return
        original = backend.kernels[op]
        dispatch = _dispatcher(key, original)
        inplace = backend.inplace.get(op)
        _installed[key] = [original, dispatch, 1, inplace]
        backend.kernels[op] = dispatch
        if inplace is not None:
            backend.inplace[op] = _inplace_dispatcher(key, inplace)


def _uninstall(key: tuple[Backend, OpKey]) -> None:
    backend, op = key
    with _lock:
        entry = _installed[key]
        entry[2] -= 1
        if entry[2]:
            return
        del _installed[key]
        original, dispatch, _, inplace = entry
        if backend.kernels.get(op) is dispatch:  # not replaced by register_kernel meanwhile
            backend.kernels[op] = original
        if inplace is not None:
            backend.inplace[op] = inplace


def _dispatcher(key: tuple, original: Callable[..., Any]) -> Callable[..., Any]:
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        mine = _local.kernels
        if mine is not None:
            entry = mine.get(key)
            if entry is not None:
                return entry[0](*args, **kwargs)
        return original(*args, **kwargs)

    dispatch.__wrapped__ = original  # type: ignore[attr-defined]
    return dispatch


class _Declined(Exception):
    """The in-place kernel of an overridden op declines: P10 then takes the general path."""


def _inplace_dispatcher(key: tuple, original: Callable[..., Any]) -> Callable[..., Any]:
    # NOTE: `x -= y` would write with the backend's own in-place kernel; in a thread that
    # overrides the op it declines (before writing), and P10 computes `x - y` with the
    # overriding kernel and writes that back
    def dispatch(dst: Any, other: Any) -> Any:
        mine = _local.kernels
        if mine is not None and key in mine:
            raise _Declined
        return original(dst, other)

    return dispatch
