"""What a recording wraps while it runs: the backends' kernel tables, their host
transfers, and TPX's observers.

While a call records, every registered P10 backend's kernel tables (``kernels``, ``inplace``)
and its ``from_numpy``/``to_numpy``/``setitem`` are wrapped (restored in ``finally``; nothing
is wrapped otherwise, so the eager paths pay nothing), and a TPX observer names the graph node
each kernel call came from. Observers registered by others run as always but their own kernel
calls are not recorded (:class:`_Muted`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from p10._backend import _registry
from tpx import _mode, _observers, _record
from tpx._graph import AccumulateGrad
from tpx._record import Recorder
from tpx._record_source import Stop, user_line


# -- the observer: node names and the checks a backward needs ------------------------------------
class _Observer:
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    def on_node_recorded(self, node: Any, output: Any) -> None:
        self.rec.label(("forward", node.seq, node.name))

    def on_backward_start(self, roots: Any, grad_roots: Any, order: list) -> None:
        rec = self.rec
        if rec.thread != threading.get_ident() or rec.stopped is not None:
            return
        rec.label(("backward-root", None, None))
        try:
            if _mode.state.grad_enabled:
                raise Stop("backward with create_graph=True")
            for node in order:
                if _has_hooks(node):
                    raise Stop(f"a hook on {node.name} (hooks run Python at backward)")
            rec.backward_ran = True
            for node in order:
                if node.__class__ is AccumulateGrad:
                    rec.add_holder(node.variable)
        except Stop as e:
            rec.stopped = (e.args[0], e.args[1] if len(e.args) > 1 else user_line())

    def on_node_executed(self, node: Any, grad_output: Any, grad_inputs: Any, s: float) -> None:
        self.rec.label(("backward", node.seq, node.name))

    def on_grad_accumulated(self, target: Any, contribution: Any, total: Any, source: Any) -> None:
        self.rec.label(("accumulate", target.seq, target.name))


def _has_hooks(node: Any) -> bool:
    if node._pre_hooks or node._hooks or node.tensor_hooks or node.retain is not None:
        return True
    if node.__class__ is AccumulateGrad:
        extra = node.variable._rare_attrs
        return bool(extra and extra.get("hooks"))
    return False


# -- wrapping the backends ---------------------------------------------------------------------
def _guarded(rec: Recorder, event: Any) -> None:
    """Run one recorder event; a Stop records the reason and ends the recording."""
    try:
        event()
    except Stop as e:
        if rec.lowering is not None:  # NOTE: the optimizer step stays an eager island
            rec.lowering.fail(e.args[0])
        else:
            rec.stopped = (e.args[0], e.args[1] if len(e.args) > 1 else user_line())


def _wrap_kernel(rec: Recorder, backend: Any, op: Any, fn: Any, kind: str) -> Any:
    originals = (backend.from_numpy,)

    def kernel(*args: Any, **params: Any) -> Any:
        if rec.depth or rec.thread != threading.get_ident():
            return fn(*args, **params)
        rec.depth += 1
        try:
            out = fn(*args, **params)
        finally:
            rec.depth -= 1
        if rec.stopped is not None:
            return out
        if kind == "kernel" and out.__class__ is not backend.array_type:
            out = originals[0](np.asarray(out))  # as p10's wrap() converts a NumPy scalar
            step_fn = _converting(fn, originals[0])
        else:
            step_fn = fn
        if rec.in_island:
            rec.island_made[id(out)] = out
            return out
        _guarded(rec, lambda: rec.kernel(kind, op, step_fn, backend, args, params, out))
        return out

    return kernel


def _converting(fn: Any, from_numpy: Any) -> Any:
    def kernel(*args: Any, **params: Any) -> Any:
        return from_numpy(np.asarray(fn(*args, **params)))

    return kernel


def _wrap_host(rec: Recorder, backend: Any, saved: dict) -> None:
    from_numpy, to_numpy, setitem = saved["from_numpy"], saved["to_numpy"], saved["setitem"]

    def mine() -> bool:
        return not rec.depth and rec.thread == threading.get_ident() and rec.stopped is None

    def wrapped_from(host: Any) -> Any:
        out = from_numpy(host)
        if mine():
            if rec.in_island:
                rec.island_made[id(out)] = out
            else:
                _guarded(rec, lambda: rec.from_numpy(backend, host, out, (from_numpy, to_numpy)))
        return out

    def wrapped_to(array: Any) -> Any:
        out = to_numpy(array)
        if mine() and not rec.in_island:
            _guarded(rec, lambda: rec.to_numpy(backend, array, out))
        return out

    backend.from_numpy, backend.to_numpy = wrapped_from, wrapped_to
    if setitem is not None:

        def wrapped_setitem(dst: Any, key: Any, value: Any) -> None:
            setitem(dst, key, value)
            if mine() and not rec.in_island:
                _guarded(rec, lambda: rec.setitem(setitem, backend, dst, key, value))

        backend.setitem = wrapped_setitem


_SAVED = ("kernels", "inplace", "from_numpy", "to_numpy", "setitem")


@contextmanager
def recording(rec: Recorder) -> Iterator[Recorder]:
    """Wrap every registered backend and observe TPX while the block runs; restore both."""
    backends = list(_registry.values())
    saved = [{name: getattr(b, name) for name in _SAVED} for b in backends]
    handle = None
    try:
        for b, s in zip(backends, saved):
            b.kernels = {
                op: _wrap_kernel(rec, b, op, fn, "kernel") for op, fn in s["kernels"].items()
            }
            b.inplace = {
                op: _wrap_kernel(rec, b, op, fn, "inplace") for op, fn in s["inplace"].items()
            }
            _wrap_host(rec, b, s)
        foreign = _mute_observers(rec)
        handle = _observers.add_observer(_Observer(rec))
        _record.active = rec
        yield rec
    finally:
        _record.active = None
        if handle is not None:
            handle.remove()
        if foreign:
            _unmute_observers(foreign)
        for b, s in zip(backends, saved):
            for name, value in s.items():
                setattr(b, name, value)
        if len(_registry) != len(backends) and rec.stopped is None:
            rec.stopped = ("a backend was first used inside the function", user_line())


class _Muted:
    """A registered observer seen through a recording: its handlers run as always, but the
    kernels they call are not part of the recorded function (a capture copying values)."""

    def __init__(self, inner: Any, rec: Recorder) -> None:
        self.inner, self.rec = inner, rec

    def __getattr__(self, name: str) -> Any:
        fn = _observers._adapt(name, getattr(self.inner, name))  # NOTE: before *args hides arity
        rec = self.rec

        def handler(*args: Any) -> Any:
            rec.depth += 1
            try:
                return fn(*args)
            finally:
                rec.depth -= 1

        return handler


def _mute_observers(rec: Recorder) -> list[Any]:
    """Replace each registered observer by a :class:`_Muted` view of it; returns them."""
    foreign = list(_observers.observers)
    if foreign:
        _observers.observers[:] = [_Muted(o, rec) for o in foreign]
        _observers._index_handlers()
    return foreign


def _unmute_observers(foreign: list[Any]) -> None:
    _observers.observers[:] = [
        o.inner if isinstance(o, _Muted) else o for o in _observers.observers
    ]
    _observers._index_handlers()
