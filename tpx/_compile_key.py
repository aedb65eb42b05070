"""What a compiled call is keyed and guarded by, and the state tensors it can reach.

:func:`signature` is the cache key of a call (tensor shapes, dtypes, backends, which require
grad, the grad mode, the default dtype, the other arguments by value or identity); it runs at
every call of a compiled function, so it is written for speed. :func:`guard` checks that the
state tensors a plan reads still look as when it was recorded; :func:`holders` finds the
tensors a function can reach (parameters of modules and optimizers, leaves that require grad).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import p10
from p10._dtypes import _state as _dtype_state
from tpx import _mode, _observers
from tpx._plan import Plan, resolve
from tpx._record import _params_of
from tpx._tensor import Tensor

_P10Tensor = p10.Tensor
_SCALARS = (bool, int, str, type(None))


class Unsupported(Exception):
    """An argument a plan cannot be keyed by (the reason is the message)."""


def global_reason() -> str | None:
    """Why no call can replay now (an observer, anomaly mode), or None."""
    if _observers.observers:
        return "an observer is registered (a tpx_inspect capture, tp.add_observer)"
    if _mode.anomalous and _mode.state.anomaly:  # NOTE: no thread-local read while none has it
        return "anomaly mode (tp.detect_anomaly) is on"
    return None


def signature(args: tuple, kwargs: dict, flat: list) -> tuple[tuple | None, str | None]:
    """The cache key of a call, or the reason it cannot have one; the call's tensors are
    appended to ``flat`` in order."""
    try:
        key = (
            _mode.state.grad_enabled,
            _dtype_state.default,
            tuple([_key(x, flat) for x in args]),
            _key(kwargs, flat) if kwargs else None,
        )
    except Unsupported as e:
        return None, str(e)
    return key, None


def _key(x: Any, flat: list) -> Any:
    """The signature of one argument; tensors are appended to ``flat`` (their P10 values)."""
    cls = x.__class__
    if cls is Tensor:
        if x.grad_fn is not None:
            raise Unsupported("a tensor argument carries a graph (pass it .detach()ed)")
        flat.append(x)
        raw = x._value
        return ("t", raw.shape, raw.dtype.str, raw._backend.name, x._requires_grad)
    if cls is float:  # NOTE: by its bits: -0.0 == 0.0, and NaN equals nothing
        return ("float", x.hex())
    if cls in _SCALARS:
        return (cls.__name__, x)
    if isinstance(x, _P10Tensor):
        flat.append(x)
        return ("p", x.shape, x.dtype.str, x._backend.name)
    if isinstance(x, complex):
        return (type(x).__name__, x.real.hex(), x.imag.hex())
    if isinstance(x, float):
        return (type(x).__name__, x.hex())
    if isinstance(x, _SCALARS):
        return (type(x).__name__, x)
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple([_key(v, flat) for v in x]))
    if isinstance(x, dict):
        return ("dict", tuple([(k, _key(v, flat)) for k, v in x.items()]))
    return ("id", id(x))  # a module, an optimizer...: by identity


def guard(plan: Plan, flat: list) -> bool:
    """Whether the state tensors still look as when ``plan`` was recorded (the plan's
    ``grad_checks`` and ``state_meta``, run as the generated ``plan.guard``)."""
    return plan.guard(resolve(plan.holders, flat) if plan.has_arg_holders else plan.holders)


def holders(fn: Callable, args: tuple, kwargs: dict) -> list[Any]:
    """The tensors ``fn`` can reach through its arguments, closure and globals that hold
    state (parameters of modules and optimizers, leaf tensors that require grad)."""
    found: dict[int, Any] = {}
    roots = [*args, *kwargs.values()]
    code = getattr(fn, "__code__", None)
    for cell in getattr(fn, "__closure__", None) or ():
        with contextlib.suppress(ValueError):
            roots.append(cell.cell_contents)
    if code is not None:
        glb = getattr(fn, "__globals__", {})
        roots += [glb[n] for n in code.co_names if n in glb]
    for r in roots:
        _collect(r, found, 2)
    return list(found.values())


def _collect(x: Any, found: dict, depth: int) -> None:
    if x.__class__ is Tensor:
        if x._requires_grad and x.grad_fn is None:
            found.setdefault(id(x), x)
        return
    params = getattr(x, "parameters", None)
    if callable(params) and hasattr(x, "_parameters"):
        for p in params():
            found.setdefault(id(p), p)
        return
    for p in _params_of(x):
        found.setdefault(id(p), p)
    if depth and isinstance(x, (list, tuple)):
        for v in x:
            _collect(v, found, depth - 1)
    elif depth and isinstance(x, dict):
        for v in x.values():
            _collect(v, found, depth - 1)
