"""Lowering a recorded plan: passes that remove or reuse work, then liveness and code.

:func:`lower` is what :func:`tpx.compile` runs on each recorded call. Every pass keeps a
replay bit for bit equal to the eager call (the same kernels on the same values):

- :func:`fold_constants`: a kernel step whose every input is a constant made inside the call
  (the backward root's ones, a literal) runs once, at lowering; its result becomes a constant.
- :func:`drop_dead`: a kernel step whose result nobody reads (a loss that is computed but not
  returned) is dropped, as ``jax.jit`` drops dead code.
- broadcasts that the consuming elementwise kernel does itself are elided; ``t = op(d, x);
  d[...] = t`` becomes the backend's in-place kernel; a large operand that dies at an
  elementwise step takes its result in place (``Backend.inplace``).

Captured arrays (which the caller may change between calls) are never folded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from p10._ops import OP_INFO, Op
from tpx._plan import (
    CAPTURE,
    CONST,
    KERNEL,
    OPTSTATE,
    SCALAR,
    ArgRef,
    Plan,
    Slot,
    Step,
    _output_slots,
    escape_slots,
    step_reads,
)
from tpx._plan_codegen import generate, generate_bind, generate_guard

_PURE = ("kernel", "copy")


def optimize(plan: Plan) -> Plan:
    """Fold constants, then drop dead steps; the counts go to ``plan.removed``."""
    plan.removed = {"folded": fold_constants(plan), "dead": drop_dead(plan)}
    return plan  # step kinds that write nothing but their own result


def drop_dead(plan: Plan) -> int:
    """Drop the kernel steps whose results are never read; returns how many were dropped."""
    needed = escape_slots(plan)
    dropped = 0
    for seg in reversed(plan.segments):
        kept = []
        for step in reversed(seg.steps):
            if step.kind in _PURE and step.out is not None and step.out not in needed:
                dropped += 1
                continue
            needed.update(step_reads(step))
            kept.append(step)
        seg.steps = kept[::-1]
    return dropped


def fold_constants(plan: Plan) -> int:
    """Run at lowering each kernel step whose inputs are all constants (never written by a
    step, sharing no memory with its result); returns how many steps were folded."""
    written = {s.inputs[0] for seg in plan.segments for s in seg.steps if s.kind != "kernel"}
    folded = 0
    for seg in plan.segments:
        kept = []
        for step in seg.steps:
            value = _fold(plan, step, written)
            if value is None:
                kept.append(step)
                continue
            slot = plan.slots[step.out]
            plan.slots[step.out] = Slot(CONST, slot.shape, slot.dtype, _nbytes(slot), value)
            folded += 1
        seg.steps = kept
    return folded


def _fold(plan: Plan, step: Any, written: set) -> Any:
    if step.kind != "kernel" or step.out is None or not step.inputs:
        return None
    arrays = []
    for x in step.inputs:
        if x.__class__ is int:
            if plan.slots[x].kind != CONST or x in written:
                return None
            arrays.append(plan.slots[x].source)
        else:
            arrays.append(x[1])
    backend = plan.backend_of[step.out]
    out = step.kernel(*arrays, **step.params)
    if out.__class__ is not backend.array_type:
        return None  # a NumPy scalar from a reduction: the dispatcher wraps it at run time
    for a in arrays:
        if a.__class__ is backend.array_type and backend.may_share_memory(out, a):
            return None  # a view of a constant: kept as a step (in-place writes stay apart)
    return out


def _nbytes(slot: Slot) -> int:
    return int(np.prod(slot.shape, dtype=np.int64)) * np.dtype(slot.dtype).itemsize


def lower(plan: Plan) -> Plan:
    """Compute liveness (the slots freed after each step), the peak memory, and generate the
    replay function of each segment."""
    _elide_broadcasts(plan)
    _write_in_place(plan)
    last = _last_uses(plan)
    _reuse_dying(plan, last)
    plan.fixed = [
        (i, s.source) for i, s in enumerate(plan.slots) if s.kind in (CAPTURE, CONST) and i in last
    ]
    plan.fresh = _fresh_constants(plan)
    plan.arg_bindings = [i for i in plan.arg_bindings if i in last]
    plan.state_meta = [m for m in plan.state_meta if m[0] in last]
    plan.has_arg_holders = any(h.__class__ is ArgRef for h in plan.holders)
    plan.grad_checks = [(h, none) for h, none in enumerate(plan.grad_none) if none is not None]
    plan.guard = generate_guard(plan.grad_checks, plan.state_meta, plan.param_guards)
    plan.template = [None] * len(plan.slots)
    for i, array in plan.fixed:
        plan.template[i] = array
    plan.bind = generate_bind(plan.slots, plan.arg_bindings, plan.arg_is_p10)
    for seg in plan.segments:
        seg.bindings = [i for i in seg.bindings if i in last]
        seg.bind = (
            generate_bind(plan.slots, seg.bindings, plan.arg_is_p10) if seg.bindings else None
        )
    plan.peak_bytes = _liveness(plan, last)
    for seg in plan.segments:
        seg.run = generate(seg, plan.slots, plan.backend_of)
    return plan


def _liveness(plan: Plan, last: dict[int, int]) -> int:
    """Set each segment's ``frees`` (the slots dead after each step); returns the plan's peak
    bytes (its constants live all the time)."""
    live, peak = 0, 0
    const_bytes = sum(s.nbytes for i, s in enumerate(plan.slots) if s.kind == CONST and i in last)
    position = 0
    for seg in plan.segments:
        seg.frees = []
        for step in seg.steps:
            if step.out is not None:
                live += plan.slots[step.out].nbytes
            peak = max(peak, live)
            dead = [i for i in step_reads(step) if last.get(i) == position and _owned(plan, i)]
            if step.out is not None and last.get(step.out, -1) <= position:
                dead.append(step.out)  # never read: dropped at once
            live -= sum(plan.slots[i].nbytes for i in set(dead))
            seg.frees.append(sorted(set(dead)))
            position += 1
        position += 1  # the boundary
    return peak + const_bytes


_BINARY = frozenset(
    op.value for op, info in OP_INFO.items() if info.kind == "elementwise" and info.arity == 2
)


def _elide_broadcasts(plan: Plan) -> None:
    """Drop ``broadcast_to`` steps (and ``reshape`` steps that only prepend size-1 axes) whose
    every reader is an elementwise binary kernel whose other operand already has the result's
    shape: the kernel's own broadcasting computes the same values, bit for bit, without the
    view (a reduction's gradient meets its consumer this way)."""
    escaping = escape_slots(plan)
    for seg in plan.segments:
        readers: dict[int, list[int]] = {}
        for k, step in enumerate(seg.steps):
            for i in step_reads(step):
                readers.setdefault(i, []).append(k)
        for k in reversed(range(len(seg.steps))):
            step = seg.steps[k]
            if not _expands_only(plan, step) or step.out in escaping:
                continue
            users = [u for u in readers.get(step.out, []) if seg.steps[u] is not None]
            src = step.inputs[0]
            if not users or not all(
                _broadcasts_itself(plan, seg.steps[u], step.out, src) for u in users
            ):
                continue
            for u in users:
                user = seg.steps[u]
                inputs = tuple(
                    src if x == step.out and x.__class__ is int else x for x in user.inputs
                )
                seg.steps[u] = replace(user, inputs=inputs)
                readers.setdefault(src, []).append(u)
            seg.steps[k] = None  # type: ignore[call-overload]
        seg.steps = [s for s in seg.steps if s is not None]


_INPLACE_OPS = ("add", "sub", "mul", "div")


def _write_in_place(plan: Plan) -> None:
    """``t = op(d, x)`` followed by ``d[...] = t`` (an in-place operator that eager code ran
    out of place, then wrote back) becomes the backend's in-place kernel ``d op= x`` when it
    has one: the same values in ``d``, without the temporary and the copy."""
    escaping = escape_slots(plan)
    for seg in plan.segments:
        reads: dict[int, int] = {}
        for step in seg.steps:
            for i in step_reads(step):
                reads[i] = reads.get(i, 0) + 1
        steps = seg.steps
        for k in range(1, len(steps)):
            put, calc = steps[k], steps[k - 1]
            if put is None or calc is None or put.kind != "setitem":
                continue
            dst, value = put.inputs
            if (
                put.params["key"] is not Ellipsis
                or calc.kind != "kernel"
                or calc.op not in _INPLACE_OPS
                or calc.out != value
                or calc.inputs[0] != dst
                or reads.get(value) != 1
                or value in escaping
                or plan.slots[value].shape != plan.slots[dst].shape
                or plan.slots[value].dtype != plan.slots[dst].dtype
            ):
                continue
            kernel = plan.backend_of[dst].inplace.get(Op(calc.op))
            if kernel is None:
                continue
            steps[k - 1] = replace(calc, kind="inplace", kernel=kernel, out=None)
            steps[k] = None  # type: ignore[call-overload]
        seg.steps = [s for s in steps if s is not None]


_REUSE_MIN_BYTES = 1 << 16  # below this, an allocation costs less than the in-place call


_COMMUTATIVE = ("add", "mul")


def _reuse_dying(plan: Plan, last: dict[int, int]) -> None:
    """Buffer reuse by liveness: an elementwise ``add/sub/mul/div`` whose operand dies at this
    step (made by the plan, shares memory with nothing, of the output's shape and dtype, large)
    writes its result into that operand with the backend's in-place kernel. ``add``/``mul``
    may reuse either operand (IEEE addition and multiplication commute, bit for bit). A
    buffer that leaves the plan (a ``.grad`` a lowered optimizer step reads after its write
    back, an output) is never reused."""
    escaping = escape_slots(plan)
    position = 0
    for seg in plan.segments:
        for k, step in enumerate(seg.steps):
            target = _dying_operand(plan, step, last, position, escaping)
            if target is not None:
                a, other = target
                kernel = plan.backend_of[a].inplace.get(Op(step.op))
                if kernel is not None:
                    seg.steps[k] = replace(step, inputs=(a, other), kernel=_returning(kernel))
            position += 1
        position += 1


def _dying_operand(
    plan: Plan, step: Step, last: dict, position: int, escaping: set[int]
) -> tuple | None:
    if step.kind != "kernel" or step.op not in _INPLACE_OPS or step.out is None or step.params:
        return None
    out = plan.slots[step.out]
    if out.nbytes < _REUSE_MIN_BYTES:
        return None
    first, second = step.inputs
    candidates = [(first, second)]
    if step.op in _COMMUTATIVE:
        candidates.append((second, first))
    for a, other in candidates:
        if (
            a.__class__ is int
            and a != other
            and plan.slots[a].kind == KERNEL
            and a not in plan.aliased
            and a not in escaping
            and last.get(a) == position
            and plan.slots[a].shape == out.shape
            and plan.slots[a].dtype == out.dtype
        ):
            return a, other
    return None


def _returning(kernel: Callable[..., Any]) -> Callable[..., Any]:
    def in_place(dst: Any, other: Any) -> Any:
        kernel(dst, other)
        return dst

    in_place.in_place_kernel = kernel  # type: ignore[attr-defined]  # NOTE: for the code
    return in_place


def _expands_only(plan: Plan, step: Step) -> bool:
    if step.kind != "kernel" or step.out is None or step.inputs[0].__class__ is not int:
        return False
    shape, src = plan.slots[step.out].shape, plan.slots[step.inputs[0]].shape
    if step.op == "broadcast_to":
        return True
    if step.op == "reshape":  # only size-1 axes added or removed in front
        return _strip(shape) == _strip(src)
    return False


def _strip(shape: tuple) -> tuple:
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return shape[k:]


def _broadcasts_itself(plan: Plan, user: Step, slot: int, src: int) -> bool:
    if user.kind != "kernel" or user.op not in _BINARY or user.out is None or user.params:
        return False
    a, b = user.inputs
    other = b if a == slot else a
    if (a == slot) == (b == slot) or other.__class__ is not int:
        return False
    if plan.slots[other].kind == SCALAR:
        return False
    shape = plan.slots[user.out].shape
    return plan.slots[other].shape == shape and len(plan.slots[src].shape) <= len(shape)


def _fresh_constants(plan: Plan) -> list[int]:
    """Constants that a step writes into or that leave the plan (returned, a ``.grad``): the
    eager call makes them anew each time, so a replay gets a fresh copy of each."""
    touched = set(_output_slots(plan.outputs))
    for seg in plan.segments:
        touched |= {s.inputs[0] for s in seg.steps if s.kind in ("inplace", "setitem")}
        touched |= {i for _, i in seg.writeback if i is not None}
        touched |= {i for _, i in seg.fallback_writeback if i is not None}
        touched |= {i for _, i, kind in seg.island_inputs if kind != "arg"}
    return sorted(i for i in touched if i.__class__ is int and plan.slots[i].kind == CONST)


def _owned(plan: Plan, i: int) -> bool:
    # NOTE: constants stay counted (the plan holds them); an optimizer's scalars and state
    # arrays are set by its prologue at every replay, never freed
    return plan.slots[i].kind not in (CONST, SCALAR, OPTSTATE)


def _last_uses(plan: Plan) -> dict[int, int]:
    """slot -> the position (step index, boundaries counted) of its last reader."""
    last: dict[int, int] = {}
    position = 0
    for seg in plan.segments:
        for _, slot in seg.fallback_writeback:  # NOTE: written back before an eager step
            if slot is not None:
                last[slot] = max(last.get(slot, -1), position)
        for step in seg.steps:
            for i in step_reads(step):
                last[i] = position
            position += 1
        for _, slot in seg.writeback:
            if slot is not None:
                last[slot] = position
        for _, slot, kind in seg.island_inputs:
            if kind != "arg":
                last[slot] = position
        position += 1
    for i in _output_slots(plan.outputs):
        last[i] = position + 1
    return last
