"""A recorded plan: an ordered list of P10 kernel calls over numbered buffers, and its replay.

A :class:`Plan` is what :func:`tpx.compile` lowers one recorded call into (the passes and
the lowering live in :mod:`tpx._plan_passes`). Its buffers
(``slots``) are bound from the call's arguments, from the state tensors it reads and writes
(parameters and their ``.grad``), held as captured arrays, or produced by a kernel step. Steps
run in recorded order; each buffer is dropped right after its last reader (liveness), so the
plan's peak memory is what its live buffers need. Between segments of kernel steps the plan
may run an eager island (an optimizer step) as Python, then re-reads the state it changed.

A segment of steps is replayed by a small generated Python function that calls the backend
kernels on raw arrays: no tensor, graph node or engine object is made per op.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from p10._tensor import Tensor as P10Tensor
from p10._tensor import wrap as p10_wrap

# slot kinds: where the value of a buffer comes from
ARG = "arg"  # a tensor argument of the call, by position in the flattened arguments
STATE = "state"  # a state tensor's value or .grad, read at a boundary (before a segment)
CAPTURE = "capture"  # an array that existed before the call, held by reference
CONST = "const"  # an array made inside the call from no input (ones for a backward root)
KERNEL = "kernel"  # the output of a step


@dataclass(frozen=True)
class Slot:
    """One numbered buffer: where it comes from, its shape, dtype and bytes (0 for a view)."""

    kind: str
    shape: tuple
    dtype: str
    nbytes: int
    source: Any = None  # ARG: flat index; STATE: (holder index, "data" | "grad"); CONST: array


@dataclass(frozen=True)
class ArgRef:
    """A state tensor that is argument ``index`` of the call (a new tensor at every call)."""

    index: int


def resolve(holders: list[Any], flat_args: list[Any]) -> list[Any]:
    """The state tensors of this call: arguments looked up in ``flat_args``."""
    return [flat_args[h.index] if h.__class__ is ArgRef else h for h in holders]


@dataclass(frozen=True)
class Step:
    """One kernel call: ``out = kernel(*inputs, **params)``.

    ``inputs`` hold slot numbers (ints) and constants (``("c", value)``); ``kind`` is
    ``kernel``, ``inplace`` (``kernel(dst, other)`` writes into input 0; ``out`` is None),
    ``setitem`` (``setitem(dst, key, value)``) or ``copy`` (a host copy through NumPy, as
    ``p10.asarray(copy=True)``); ``origin`` names the GradFn node and the phase it came from.
    """

    kind: str
    op: str
    kernel: Callable[..., Any]
    inputs: tuple
    params: dict
    out: int | None
    origin: tuple = ()  # (phase, node seq, node name, source line)


@dataclass
class Segment:
    """Kernel steps, then the boundary after them: state written back, then an eager island
    (or nothing for the last segment), then state re-read into slots."""

    steps: list[Step]
    writeback: list[tuple[int, int | None]] = field(default_factory=list)  # (holder, slot)
    island: Any = None  # (function, args, kwargs) run as Python at every replay
    island_index: int = -1
    # (position, slot, "tpx" | "p10") or (position, flat argument index, "arg")
    island_inputs: list[tuple[int, int, str]] = field(default_factory=list)
    bindings: list[int] = field(default_factory=list)  # STATE slots read after the island
    frees: list[list[int]] = field(default_factory=list)  # per step: slots dead after it
    run: Callable[[list], None] | None = None


@dataclass
class Plan:
    """A lowered call: slots, segments, where outputs come from, and memory figures."""

    slots: list[Slot]
    segments: list[Segment]
    arg_bindings: list[int]  # ARG and boundary-0 STATE slots
    holders: list[Any]  # the state tensors (tpx.Tensor, strongly held) or ArgRef
    outputs: Any  # the returned structure, tensors replaced by ("slot", i) markers
    backend_of: dict[int, Any]  # slot -> backend (to wrap outputs and written-back grads)
    grad_none: tuple[bool, ...] = ()  # per holder: .grad was None when the call started
    eager_peak_bytes: int | None = None
    peak_bytes: int = 0
    kernel_seconds: list[float] | None = None
    fixed: list[tuple[int, Any]] = field(default_factory=list)  # CAPTURE/CONST slots
    fresh: list[int] = field(default_factory=list)  # CONST slots copied at every call
    aliased: set[int] = field(default_factory=set)  # slots that may share memory with another
    # (slot, holder, "data" | "grad", shape, backend dtype) of each state value read at the start
    state_meta: list[tuple] = field(default_factory=list)
    has_arg_holders: bool = False
    removed: dict[str, int] = field(default_factory=dict)  # steps removed by tpx._plan_passes

    @property
    def steps(self) -> list[Step]:
        """Every kernel step, in order."""
        return [s for seg in self.segments for s in seg.steps]

    @property
    def output_slots(self) -> list[int]:
        """The slots of the returned tensors, in the order of the flattened outputs."""
        return _output_slots(self.outputs)


def escape_slots(plan: Plan) -> set[int]:
    """Slots whose value leaves the plan: returned, written to a ``.grad``, given to an island."""
    out = set(_output_slots(plan.outputs))
    for seg in plan.segments:
        out |= {i for _, i in seg.writeback if i is not None}
        out |= {i for _, i, kind in seg.island_inputs if kind != "arg"}
    return out


def _copy(array: Any, backend: Any) -> Any:
    return backend.from_numpy(np.array(backend.to_numpy(array)))


def step_reads(step: Step) -> list[int]:
    """The slots a step reads (its array inputs and the arrays in a setitem key)."""
    ids = [i for i in step.inputs if i.__class__ is int]
    if step.kind == "setitem":
        ids += [i for i in _key_slots(step.params["key"])]
    return ids


def _key_slots(key: Any) -> list[int]:
    if isinstance(key, tuple):
        return [i for k in key for i in _key_slots(k)]
    return [key.slot] if isinstance(key, _KeySlot) else []


@dataclass(frozen=True)
class _KeySlot:
    """An array inside a ``setitem`` key, replaced by its slot."""

    slot: int


def _output_slots(outputs: Any) -> list[int]:
    if isinstance(outputs, tuple) and len(outputs) == 2 and outputs[0] == "slot":
        return [outputs[1]]
    if isinstance(outputs, (list, tuple)):
        return [i for o in outputs for i in _output_slots(o)]
    if isinstance(outputs, dict):
        return [i for o in outputs.values() for i in _output_slots(o)]
    return []


def _generate(seg: Segment) -> Callable[[list], None]:
    """A function ``run(b)`` that executes the segment's steps: slots that live only inside
    the segment are local variables (names reused once a slot is dead), the others live in
    the buffer list ``b``; kernels and constants are globals of the generated code."""
    names: dict[str, Any] = {"fill": _fill_key}
    known: dict[int, str] = {}  # id of a kernel or constant -> its global name

    def global_name(value: Any, prefix: str) -> str:
        name = known.get(id(value))
        if name is None:
            name = known[id(value)] = f"{prefix}{len(known)}"
            names[name] = value
        return name

    local = _local_slots(seg)
    var: dict[int, str] = {}
    pool: list[str] = []
    fresh = iter(range(len(seg.steps)))

    def ref(i: int) -> str:
        return var.get(i, f"b[{i}]")

    lines = ["def run(b):"]
    for step, frees in zip(seg.steps, seg.frees):
        args = [ref(x) if x.__class__ is int else global_name(x[1], "c") for x in step.inputs]
        if step.kind == "setitem":
            args.insert(1, f"fill(b, {global_name(step.params['key'], 'key')})")
        elif step.params:
            args.append(f"**{global_name(step.params, 'p')}")
        call = f"{global_name(step.kernel, 'k')}({', '.join(args)})"
        if step.out is None:
            lines.append(f"    {call}")
        else:
            if step.out in local:
                var[step.out] = pool.pop() if pool else f"v{next(fresh)}"
            lines.append(f"    {ref(step.out)} = {call}")
        for i in frees:
            if i in var:
                lines.append(f"    del {var[i]}")
                pool.append(var.pop(i))
            else:
                lines.append(f"    b[{i}] = None")
    lines.append("    return None")
    exec(compile("\n".join(lines), "<tpx plan>", "exec"), names)
    return names["run"]


def _local_slots(seg: Segment) -> set[int]:
    """Slots made and freed inside ``seg`` and not read through a setitem key."""
    made = {s.out for s in seg.steps if s.out is not None}
    freed = {i for frees in seg.frees for i in frees}
    keys = {i for s in seg.steps if s.kind == "setitem" for i in _key_slots(s.params["key"])}
    return (made & freed) - keys


def _fill_key(b: list, key: Any) -> Any:
    if isinstance(key, tuple):
        return tuple(_fill_key(b, k) for k in key)
    return b[key.slot] if isinstance(key, _KeySlot) else key


def replay(plan: Plan, flat_args: list[Any]) -> Any:
    """Run ``plan`` on the raw arrays of ``flat_args`` (the call's flattened tensor arguments);
    write back the state it changes and return the outputs, wrapped as tensors without graph."""
    from tpx._tensor import wrap as tpx_wrap

    b: list[Any] = [None] * len(plan.slots)
    slots = plan.slots
    holders = resolve(plan.holders, flat_args) if plan.has_arg_holders else plan.holders
    for i, array in plan.fixed:
        b[i] = array
    for i in plan.fresh:
        b[i] = _copy(b[i], plan.backend_of[i])
    for i in plan.arg_bindings:
        _bind(b, i, slots[i], flat_args, holders)
    island_results: list[Any] = []
    for seg in plan.segments:
        seg.run(b)
        for h, i in seg.writeback:
            holder = holders[h]
            holder.grad = None if i is None else tpx_wrap(p10_wrap(b[i], plan.backend_of[i]))
        if seg.island is not None:
            fn, args, kwargs = seg.island
            if seg.island_inputs:
                args = list(args)
                for k, i, kind in seg.island_inputs:
                    if kind == "arg":
                        args[k] = flat_args[i]
                        continue
                    raw = p10_wrap(b[i], plan.backend_of[i])
                    args[k] = tpx_wrap(raw) if kind == "tpx" else raw
            island_results.append(fn(*args, **kwargs))
            for i in seg.bindings:
                _bind(b, i, slots[i], flat_args, holders)
    return _rebuild(plan.outputs, b, plan.backend_of, island_results)


def _bind(b: list, i: int, slot: Slot, flat_args: list, holders: list) -> None:
    if slot.kind == ARG:
        a = flat_args[slot.source]
        b[i] = a._data if a.__class__ is P10Tensor else a._value._data
    else:
        h, attr = slot.source
        holder = holders[h]
        b[i] = holder._value._data if attr == "data" else holder.grad._value._data


def _rebuild(outputs: Any, b: list, backend_of: dict, island_results: list) -> Any:
    from tpx._tensor import wrap as tpx_wrap

    if isinstance(outputs, tuple) and len(outputs) == 2 and outputs[0] == "slot":
        return tpx_wrap(p10_wrap(b[outputs[1]], backend_of[outputs[1]]))
    if isinstance(outputs, tuple) and len(outputs) == 2 and outputs[0] == "island":
        return island_results[outputs[1]]
    if isinstance(outputs, tuple) and len(outputs) == 2 and outputs[0] == "value":
        return outputs[1]
    if isinstance(outputs, list):
        return [_rebuild(o, b, backend_of, island_results) for o in outputs]
    if isinstance(outputs, tuple):
        return tuple(_rebuild(o, b, backend_of, island_results) for o in outputs)
    if isinstance(outputs, dict):
        return {k: _rebuild(o, b, backend_of, island_results) for k, o in outputs.items()}
    return outputs


def time_kernels(plan: Plan, flat_args: list[Any]) -> list[float]:
    """Seconds of each kernel step of one replay, measured step by step (for inspection; the
    state the plan writes is written as by :func:`replay`)."""
    b: list[Any] = [None] * len(plan.slots)
    for i, array in plan.fixed:
        b[i] = array
    for i in plan.fresh:
        b[i] = _copy(b[i], plan.backend_of[i])
    holders = resolve(plan.holders, flat_args)
    for i in plan.arg_bindings:
        _bind(b, i, plan.slots[i], flat_args, holders)
    seconds: list[float] = []
    for seg in plan.segments:
        for step in seg.steps:
            args = [b[x] if x.__class__ is int else x[1] for x in step.inputs]
            start = time.perf_counter()
            if step.kind == "setitem":
                step.kernel(args[0], _fill_key(b, step.params["key"]), args[1])
                out = None
            else:
                out = step.kernel(*args, **step.params)
            seconds.append(time.perf_counter() - start)
            if step.out is not None:
                b[step.out] = out
        if seg.island is not None:
            raise NotImplementedError("time_kernels: a plan with an eager island")
    return seconds


def describe(plan: Plan) -> dict[str, Any]:
    """A JSON-friendly description: buffers, kernels (with the node they came from), the
    liveness of each buffer, the peak memory of the plan and of the eager call.

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
        "removed": dict(plan.removed),
        "outputs": _output_slots(plan.outputs),
        "kernel_seconds": plan.kernel_seconds,
    }


def slot_for(array: Any, kind: str, source: Any, backend: Any, view: bool = False) -> Slot:
    """The :class:`Slot` record of ``array`` (its bytes count 0 when it is a view)."""
    shape = tuple(array.shape)
    dtype = backend.dtype_of(array)
    nbytes = 0 if view else int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return Slot(kind, shape, dtype.name, nbytes, source)


def key_with_slots(key: Any, slot_of: Callable[[Any], int]) -> Any:
    """``key`` (a setitem key) with each backend array replaced by its slot."""
    if isinstance(key, tuple):
        return tuple([key_with_slots(k, slot_of) for k in key])
    if hasattr(key, "shape") and hasattr(key, "dtype"):
        return _KeySlot(slot_of(key))
    return key
