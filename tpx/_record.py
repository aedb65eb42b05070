"""Recording one eager call into a :class:`~tpx._plan.Plan`.

A :class:`Recorder` turns the events of one eager call (kernel calls, host transfers, eager
islands, the observer's node names; :mod:`tpx._record_wrap` delivers them) into steps over
numbered buffers. Every kernel call of the recording thread becomes a step. What a plan cannot
replay stops the recording (the call itself finishes eagerly) with a reason and the user's
source line: a data-dependent read (``.item()``, ``bool(t)``, ``.tolist()``), random numbers,
tensors made from Python data, hooks, ``create_graph``.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import replace
from typing import Any

import numpy as np

import p10
from p10._tensor import VIEW_OPS
from tpx._plan import (
    ARG,
    CAPTURE,
    CONST,
    KERNEL,
    STATE,
    ArgRef,
    Plan,
    Segment,
    Slot,
    Step,
    key_with_slots,
    slot_for,
)
from tpx._plan_optim import INLINE, RETRY, lowering_reason, param_ids, record_step
from tpx._record_finish import grad_guards, state_meta
from tpx._record_source import (
    Stop,
    _first,
    _has_array,
    _params_of,
    creation_kind,
    host_copy,
    inside_asarray,
    same_value,
    user_line,
)

__all__ = ["Recorder", "Stop", "active", "user_line"]

active: Recorder | None = None
"""The recording in progress (one at a time), or None."""


class Recorder:
    """The state of one recording: slots, steps, the state tensors, what stopped it."""

    def __init__(self, flat: list[Any], holders: list[Any]) -> None:
        self.thread = threading.get_ident()
        self.depth = 0
        self.in_island = 0
        self.stopped: tuple[str, str] | None = None
        self.slots: list[Slot] = []
        self.slot_of: dict[int, int] = {}
        self.backend_of: dict[int, Any] = {}
        self.dtype_of_slot: dict[int, Any] = {}
        self.segments = [Segment([])]
        self.arg_bindings: list[int] = []
        self.holders: list[Any] = []
        self.refs: list[Any] = []  # what the plan keeps of each holder
        self.holder_index: dict[int, int] = {}
        self.grad_none: list[bool] = []
        self.last_grad: list[Any] = []
        self.data_of: list[Any] = []
        self.island_made: dict[int, Any] = {}
        self.island_results: list[Any] = []
        self.pending: tuple[int, np.ndarray, str] | None = None
        self.mark = 0
        self.aliased: set[int] = set()
        self.backward_ran = False
        self.lowering: Any = None  # the optimizer step being lowered (tpx._plan_optim)
        self.notes: list[tuple[str, str]] = []  # (reason, line): steps left as islands
        self.retry = False  # an optimizer made its state: record again at the next call
        self.optimizers: list[Any] = []  # whose steps are lowered
        self.param_guards: list[tuple[Any, tuple]] = []  # (optimizer, its parameters' ids)
        self.live = self.peak = 0
        self.weak_ok = True
        self._finalizers: list[Any] = []
        self._keep: list[Any] = []
        self.arg_of: dict[int, int] = {}
        self.arg_is_p10 = tuple(isinstance(t, p10.Tensor) for t in flat)
        for i, t in enumerate(flat):
            self.arg_of[id(t)] = i
            raw = t if isinstance(t, p10.Tensor) else t._value
            self._bind_new(raw._data, raw._backend, ARG, i)
        for t in holders:
            self.add_holder(t)

    # -- slots ------------------------------------------------------------------------------
    def _new_slot(self, array: Any, backend: Any, kind: str, source: Any, view: bool) -> int:
        i = len(self.slots)
        self.slots.append(slot_for(array, kind, source, backend, view))
        self.dtype_of_slot[i] = array.dtype
        self.backend_of[i] = backend
        self.slot_of[id(array)] = i
        self._watch(array, i, self.slots[i].nbytes if kind in (KERNEL, CONST) else 0)
        return i

    def _watch(self, array: Any, i: int, nbytes: int) -> None:
        """Forget ``array``'s id when it dies (ids are reused), and count the eager call's
        live bytes; arrays that take no weak reference are kept alive instead."""
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        try:
            self._finalizers.append(weakref.finalize(array, self._died, id(array), i, nbytes))
        except TypeError:
            self.weak_ok = False
            self._keep.append(array)

    def _died(self, key: int, i: int, nbytes: int) -> None:
        if self.slot_of.get(key) == i:
            del self.slot_of[key]
        self.live -= nbytes

    def _bind_new(self, array: Any, backend: Any, kind: str, source: Any) -> int:
        i = self._new_slot(array, backend, kind, source, False)
        if kind == ARG or not self.island_results:
            self.arg_bindings.append(i)
        else:
            self.segments[-2].bindings.append(i)
        return i

    def input_slot(self, array: Any, backend: Any) -> int:
        i = self.slot_of.get(id(array))
        if i is not None:
            return i
        if id(array) in self.island_made:
            raise Stop("a value computed inside an eager island is read by the plan")
        if self.lowering is not None:
            raise Stop("the optimizer step reads an array the plan does not know")
        # NOTE: an array from before the call (a closed-over tensor): held by reference, so
        # in-place updates are seen, as eager code sees them
        return self._new_slot(array, backend, CAPTURE, array, False)

    # -- state tensors ------------------------------------------------------------------------
    def add_holder(self, t: Any) -> None:
        """Track ``t`` (a parameter or input): its value is read, its ``.grad`` written back."""
        if id(t) in self.holder_index:
            return
        h = len(self.holders)
        self.holder_index[id(t)] = h
        self.holders.append(t)
        self.refs.append(ArgRef(self.arg_of[id(t)]) if id(t) in self.arg_of else t)
        self.grad_none.append(t.grad is None)
        self.data_of.append(t._value._data)
        self.last_grad.append(None if t.grad is None else t.grad._value._data)
        for attr, array in (("data", t._value._data), ("grad", self.last_grad[h])):
            if array is None:
                continue
            i = self.slot_of.get(id(array))
            if i is None:
                self._bind_new(array, t._value._backend, STATE, (h, attr))
            elif self.slots[i].kind == CAPTURE and not self.island_results:
                self.slots[i] = replace(self.slots[i], kind=STATE, source=(h, attr))
                self.arg_bindings.append(i)

    def boundary(self) -> None:
        """End a segment: the ``.grad`` changes to write back at replay."""
        self.segments[-1].writeback += self.grad_changes()
        for h, t in enumerate(self.holders):
            self.last_grad[h] = None if t.grad is None else t.grad._value._data

    def grad_changes(self) -> list[tuple[int, int | None]]:
        """The ``.grad`` set since the last boundary: (holder, slot or None)."""
        changes: list[tuple[int, int | None]] = []
        for h, t in enumerate(self.holders):
            if t._value._data is not self.data_of[h]:
                raise Stop("the value of a parameter was rebound (not written in place)")
            grad = None if t.grad is None else t.grad._value._data
            if grad is self.last_grad[h]:
                continue
            i = None if grad is None else self.slot_of.get(id(grad))
            if grad is not None and i is None:
                raise Stop("a .grad was set to a value the plan does not know")
            changes.append((h, i))
        return changes

    # -- events -------------------------------------------------------------------------------
    def kernel(
        self, kind: str, op: Any, fn: Any, backend: Any, args: tuple, params: dict, out: Any
    ) -> None:
        if self.pending is not None:
            raise Stop(
                "a data-dependent read (.item(), bool(t), .tolist(), .numpy())", self.pending[2]
            )
        inputs = []
        for a in args:
            if a.__class__ is backend.array_type:
                inputs.append(self.input_slot(a, backend))
            elif a is not None and self.lowering is not None and isinstance(a, _NUMBERS):
                inputs.append(self.lowering.scalar(a, op))
            elif a is None or isinstance(a, _NUMBERS):
                inputs.append(("c", a))
            else:
                raise Stop(f"{op.value}: an operand of type {type(a).__name__}")
        if any(_has_array(v, backend) for v in params.values()):
            raise Stop(f"{op.value}: an array inside the kernel's params")
        if self.lowering is not None:
            self.lowering.check_params(op, params)
        if out is None or kind == "inplace":
            self._step(Step(kind, op.value, fn, tuple(inputs), params, None))
            return
        shared = [
            j
            for a, j in zip(args, inputs)
            if a.__class__ is backend.array_type and backend.may_share_memory(out, a)
        ]
        i = self._new_slot(out, backend, KERNEL, None, op in VIEW_OPS and bool(shared))
        if shared:  # NOTE: never written in place by the plan (see tpx._plan_passes._reuse_dying)
            self.aliased.update([i, *shared])
        self._step(Step(kind, op.value, fn, tuple(inputs), params, i))

    def _step(self, step: Step) -> None:
        self.segments[-1].steps.append(replace(step, origin=("forward", None, None, user_line())))

    def setitem(self, fn: Any, backend: Any, dst: Any, key: Any, value: Any) -> None:
        if self.pending is not None:
            raise Stop("a data-dependent read", self.pending[2])
        d, v = self.input_slot(dst, backend), self.input_slot(value, backend)
        skey = key_with_slots(key, lambda a: self.input_slot(a, backend))
        self._step(Step("setitem", "setitem", fn, (d, v), {"key": skey}, None))

    def to_numpy(self, backend: Any, array: Any, result: np.ndarray) -> None:
        if self.pending is not None:
            raise Stop("a data-dependent read", self.pending[2])
        if self.lowering is not None:
            raise Stop("the optimizer step reads a value to the host")
        if not inside_asarray():
            raise Stop("a data-dependent read (.item(), bool(t), .tolist(), .numpy())")
        # NOTE: p10.asarray(t, copy=True) reads the value to the host and makes it again: a
        # copy, if the very next event creates an equal array (see from_numpy)
        self.pending = (self.input_slot(array, backend), result, user_line())

    def from_numpy(self, backend: Any, host: Any, array: Any, originals: tuple) -> None:
        if self.lowering is not None:
            raise Stop("the optimizer step makes a tensor from host data")
        pending, self.pending = self.pending, None
        if pending is not None:
            src, seen, where = pending
            if not same_value(seen, host):
                raise Stop("a data-dependent read (.item(), bool(t), .tolist(), .numpy())", where)
            fn = host_copy(originals, np.asarray(host).dtype)
            i = self._new_slot(array, backend, KERNEL, None, False)
            self._step(Step("copy", "copy", fn, (src,), {}, i))
            return
        kind = creation_kind()
        if kind == "random":
            raise Stop("random numbers drawn inside the function")
        if kind == "data":
            raise Stop("a tensor created from Python data inside the function")
        # NOTE: the plan keeps a copy: the caller may write into the array it got
        snapshot = originals[0](np.array(originals[1](array)))
        self._new_slot(array, backend, CONST, snapshot, False)

    def label(self, origin: tuple) -> None:
        """Name the node that the steps since the last event came from."""
        steps = self.segments[-1].steps
        for k in range(self.mark, len(steps)):
            if steps[k].origin[1] is None:
                steps[k] = replace(steps[k], origin=origin + steps[k].origin[3:])
        self.mark = len(steps)

    # -- islands ------------------------------------------------------------------------------
    def island(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        if self.pending is not None:
            raise Stop("a data-dependent read", self.pending[2])
        seg = self.segments[-1]
        inputs = []
        for k, a in enumerate(args):
            if id(a) in self.arg_of:  # the call's own argument: the new one at a replay
                inputs.append((k, self.arg_of[id(a)], "arg"))
                continue
            i = _plan_slot(self, a)
            if i is not None:
                inputs.append((k, i, "p10" if isinstance(a, p10.Tensor) else "tpx"))
        for a in (*args, *kwargs.values()):
            if _plan_slot(self, a) is None and _plan_slot(self, _first(a)) is not None:
                raise Stop(
                    f"{fn.__qualname__} (an eager island) takes a value computed in "
                    "the plan inside a container"
                )
            for p in _params_of(a):
                self.add_holder(p)
        reason = lowering_reason(fn, args, kwargs)
        if reason == INLINE:  # NOTE: .grad = None, seen by the next boundary
            if all(o is not args[0] for o, _ in self.param_guards):
                self.param_guards.append((args[0], param_ids(args[0])))
            return fn(*args, **kwargs)
        if reason is None and not inputs:
            return record_step(self, fn, args, kwargs)
        seg.island_inputs += inputs
        self.boundary()
        if reason == RETRY:
            self.retry = True
        elif reason:
            self.notes.append((reason, user_line()))
        seg.island = (fn, args, kwargs)
        seg.island_index = len(self.island_results)
        self.in_island += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            self.in_island -= 1
        self.island_results.append(result)
        self.segments.append(Segment([]))
        self.mark = 0
        self.rebind_holders()
        return result

    def rebind_holders(self) -> None:
        """Read every holder's value and ``.grad`` anew after an island."""
        for h, t in enumerate(self.holders):
            self.data_of[h] = t._value._data
            self._bind_new(t._value._data, t._value._backend, STATE, (h, "data"))
            self.last_grad[h] = None if t.grad is None else t.grad._value._data
            if t.grad is not None:
                self._bind_new(t.grad._value._data, t.grad._value._backend, STATE, (h, "grad"))

    # -- the end ------------------------------------------------------------------------------
    def finish(self, result: Any) -> Plan:
        if self.pending is not None:
            raise Stop(
                "a data-dependent read (.item(), bool(t), .tolist(), .numpy())", self.pending[2]
            )
        self.boundary()
        outputs = self._output(result)
        plan = Plan(
            slots=self.slots,
            segments=self.segments,
            arg_bindings=self.arg_bindings,
            holders=self.refs,
            outputs=outputs,
            backend_of=self.backend_of,
            grad_none=grad_guards(self),
            eager_peak_bytes=self.peak if self.weak_ok else None,
            aliased=self.aliased,
            state_meta=state_meta(self),
            arg_is_p10=self.arg_is_p10,
            optimizers=self.optimizers,
            param_guards=self.param_guards,
        )
        return plan

    def _output(self, x: Any) -> Any:
        for k, r in enumerate(self.island_results):
            if x is r and not isinstance(x, (bool, int, type(None))):
                return ("island", k)
        if isinstance(x, p10.Tensor) or hasattr(x, "_value"):
            if (
                getattr(x, "_requires_grad", False)
                and x.grad_fn is not None
                and not self.backward_ran
            ):
                raise Stop(
                    "the function returns a tensor that requires grad and runs no "
                    "backward (call .backward() inside it, or return .detach())"
                )
            raw = x if isinstance(x, p10.Tensor) else x._value
            i = self.slot_of.get(id(raw._data))
            if i is None:
                raise Stop("the function returns a tensor the plan does not know")
            return ("slot", i)
        if isinstance(x, list):
            return [self._output(v) for v in x]
        if isinstance(x, tuple):
            return tuple(self._output(v) for v in x)
        if isinstance(x, dict):
            return {k: self._output(v) for k, v in x.items()}
        return ("value", x)

    def close(self) -> None:
        for f in self._finalizers:
            f.detach()
        self._finalizers.clear()
        self._keep.clear()


_NUMBERS = (bool, int, float, complex)


def _plan_slot(rec: Recorder, a: Any) -> int | None:
    """The slot of a tensor that the plan computes (None for anything else)."""
    raw = a if isinstance(a, p10.Tensor) else getattr(a, "_value", None)
    if not isinstance(raw, p10.Tensor):
        return None
    i = rec.slot_of.get(id(raw._data))
    return i if i is not None and rec.slots[i].kind in (KERNEL, CONST) else None
