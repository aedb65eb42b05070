"""What a plan looks like from outside: :func:`describe` (buffers, kernels with the node
each came from, liveness, peak memory) and :func:`time_kernels` (one replay timed step by
step), for :meth:`tpx.CompiledFunction.inspect_plan` and ``tpx_inspect``'s plan capture."""

from __future__ import annotations

import time
from typing import Any

from p10._tensor import wrap as p10_wrap
from tpx._plan import (
    Plan,
    _bind,
    _copy,
    _fall_back,
    _island,
    _output_slots,
    fill_key,
    resolve,
)
from tpx._tensor import wrap as tpx_wrap


def time_kernels(plan: Plan, flat_args: list[Any]) -> list[float | None]:
    """Seconds of each kernel step of one replay, measured step by step (for inspection; the
    state the plan writes is written as by :func:`replay`; eager islands run untimed, and a
    lowered optimizer step that runs eagerly instead has None seconds)."""
    b: list[Any] = [None] * len(plan.slots)
    for i, array in plan.fixed:
        b[i] = array
    for i in plan.fresh:
        b[i] = _copy(b[i], plan.backend_of[i])
    holders = resolve(plan.holders, flat_args)
    for i in plan.arg_bindings:
        _bind(b, i, plan.slots[i], flat_args, holders)
    seconds: list[float | None] = []
    for seg in plan.segments:
        if seg.prologue is not None and not seg.prologue(b):
            _fall_back(plan, seg, b, holders)
            seconds += [None] * len(seg.steps)
            continue
        for step in seg.steps:
            args = [b[x] if x.__class__ is int else x[1] for x in step.inputs]
            start = time.perf_counter()
            if step.kind == "setitem":
                step.kernel(args[0], fill_key(b, step.params["key"]), args[1])
                out = None
            else:
                out = step.kernel(*args, **step.params)
            seconds.append(time.perf_counter() - start)
            if step.out is not None:
                b[step.out] = out
        for h, i in seg.writeback:
            holders[h].grad = None if i is None else tpx_wrap(p10_wrap(b[i], plan.backend_of[i]))
        if seg.island is not None:  # NOTE: run as in a replay, not timed
            _island(plan, seg, b, flat_args)
        for i in seg.bindings:
            _bind(b, i, plan.slots[i], flat_args, holders)
    return seconds


def describe(plan: Plan) -> dict[str, Any]:
    """A JSON-friendly description: buffers, kernels (with the node they came from: a
    lowered optimizer step's kernels have the phase ``optimizer`` and a node such as
    ``Adam group 0 param 3``), the liveness of each buffer, the peak memory of the plan and
    of the eager call, the counts of eager islands and lowered optimizer steps.

    >>> import tpx as tp
    >>> step = tp.compile(lambda x: (x * 2).sum())
    >>> _ = step(tp.ones(3))
    >>> d = describe(step.plans()[0])
    >>> [k["op"] for k in d["kernels"]], d["peak_bytes"] <= d["eager_peak_bytes"]
    (['mul', 'sum'], True)
    """
    kernels, frees_at = [], {}
    index = 0
    for seg in plan.segments:
        for step, frees in zip(seg.steps, seg.frees):
            phase, seq, node, line = (step.origin + (None,) * 4)[:4]
            kernels.append(
                {
                    "index": index,
                    "kind": step.kind,
                    "op": step.op,
                    "inputs": [x if x.__class__ is int else None for x in step.inputs],
                    "output": step.out,
                    "phase": phase,
                    "node_seq": seq,
                    "node": node,
                    "source": line,
                }
            )
            for i in frees:
                frees_at[i] = index
            index += 1
    born = {s.out: k for k, s in enumerate(plan.steps) if s.out is not None}
    buffers = [
        {
            "id": i,
            "kind": s.kind,
            "shape": list(s.shape),
            "dtype": s.dtype,
            "nbytes": s.nbytes,
            "first": born.get(i, -1),
            "last": frees_at.get(i, index),
        }
        for i, s in enumerate(plan.slots)
    ]
    return {
        "buffers": buffers,
        "kernels": kernels,
        "peak_bytes": plan.peak_bytes,
        "eager_peak_bytes": plan.eager_peak_bytes,
        "islands": sum(seg.island is not None for seg in plan.segments),
        "optimizer_steps": sum(seg.prologue is not None for seg in plan.segments),
        "removed": dict(plan.removed),
        "outputs": _output_slots(plan.outputs),
        "kernel_seconds": plan.kernel_seconds,
    }
