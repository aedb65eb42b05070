"""Plan passes that remove work before a plan is lowered, without changing any value.

- :func:`fold_constants`: a kernel step whose every input is a constant made inside the call
  (the backward root's ones, a literal) runs once, at lowering; its result becomes a constant.
- :func:`drop_dead`: a kernel step whose result nobody reads (a loss that is computed but not
  returned) is dropped, as ``jax.jit`` drops dead code.

Both run the same kernels on the same values as the eager call, so a replay stays bit for bit
equal to it; captured arrays (which the caller may change between calls) are never folded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpx._plan import CONST, Plan, Slot, escape_slots, step_reads

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
