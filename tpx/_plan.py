"""A recorded plan: an ordered list of P10 kernel calls over numbered buffers, and its replay.

A :class:`Plan` is what :func:`tpx.compile` lowers one recorded call into (the passes and
the lowering live in :mod:`tpx._plan_passes`, the generated code in :mod:`tpx._plan_codegen`,
its description in :mod:`tpx._plan_describe`). Its buffers
(``slots``) are bound from the call's arguments, from the state tensors it reads and writes
(parameters and their ``.grad``), held as captured arrays, or produced by a kernel step. Steps
run in recorded order; each buffer is dropped right after its last reader (liveness), so the
plan's peak memory is what its live buffers need. Between segments of kernel steps the plan
may run an eager island (an optimizer step) as Python, then re-reads the state it changed.

A segment of steps is replayed by a small generated Python function that calls the backend
kernels on raw arrays: no tensor, graph node or engine object is made per op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from p10._tensor import Tensor as P10Tensor
from p10._tensor import wrap as p10_wrap
from tpx._tensor import wrap as tpx_wrap

# slot kinds: where the value of a buffer comes from
ARG = "arg"  # a tensor argument of the call, by position in the flattened arguments
STATE = "state"  # a state tensor's value or .grad, read at a boundary (before a segment)
CAPTURE = "capture"  # an array that existed before the call, held by reference
CONST = "const"  # an array made inside the call from no input (ones for a backward root)
KERNEL = "kernel"  # the output of a step
SCALAR = "scalar"  # a Python number of a lowered optimizer step, set by its prologue
OPTSTATE = "optstate"  # an optimizer state tensor's array (momentum, exp_avg...), ditto


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
    bind: Callable[[list, list, list], None] | None = None  # reads ``bindings`` (generated)
    # a lowered optimizer step (see tpx._plan_optim): ``prologue(b)`` sets its scalars and
    # state arrays before ``run`` (False: the step changed shape, ``fallback`` runs eagerly)
    prologue: Callable[[list], bool] | None = None
    fallback: Any = None  # (function, args, kwargs) of the eager step
    fallback_writeback: list[tuple[int, int | None]] = field(default_factory=list)


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
    grad_checks: list[tuple[int, bool]] = field(default_factory=list)  # (holder, must be None)
    eager_peak_bytes: int | None = None
    peak_bytes: int = 0
    kernel_seconds: list[float | None] | None = None
    fixed: list[tuple[int, Any]] = field(default_factory=list)  # CAPTURE/CONST slots
    fresh: list[int] = field(default_factory=list)  # CONST slots copied at every call
    aliased: set[int] = field(default_factory=set)  # slots that may share memory with another
    # (slot, holder, "data" | "grad", shape, backend dtype) of each state value read at the start
    state_meta: list[tuple] = field(default_factory=list)
    has_arg_holders: bool = False
    removed: dict[str, int] = field(default_factory=dict)  # steps removed by tpx._plan_passes
    arg_is_p10: tuple[bool, ...] = ()  # per flattened argument: a P10 tensor (else TPX)
    template: list[Any] = field(default_factory=list)  # the buffer list with ``fixed`` set
    bind: Callable[[list, list, list], None] | None = None  # reads ``arg_bindings`` (generated)
    guard: Callable[[list], bool] | None = None  # the state checks of a replay (generated)
    optimizers: list[Any] = field(default_factory=list)  # whose steps are lowered kernels
    # (optimizer, ids of its parameters per group): its zero_grad(set_to_none=True) ran inside
    param_guards: list[tuple[Any, tuple]] = field(default_factory=list)

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
        ids += [i for i in key_slots(step.params["key"])]
    return ids


def key_slots(key: Any) -> list[int]:
    if isinstance(key, tuple):
        return [i for k in key for i in key_slots(k)]
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


def fill_key(b: list, key: Any) -> Any:
    """A setitem key with each slot marker replaced by that slot's array in ``b``."""
    if isinstance(key, tuple):
        return tuple(fill_key(b, k) for k in key)
    return b[key.slot] if isinstance(key, _KeySlot) else key


def replay(plan: Plan, flat_args: list[Any]) -> Any:
    """Run ``plan`` on the raw arrays of ``flat_args`` (the call's flattened tensor arguments);
    write back the state it changes and return the outputs, wrapped as tensors without graph."""
    b = plan.template.copy()  # NOTE: the captured arrays and constants already in place
    holders = resolve(plan.holders, flat_args) if plan.has_arg_holders else plan.holders
    for i in plan.fresh:
        b[i] = _copy(b[i], plan.backend_of[i])
    plan.bind(b, flat_args, holders)
    island_results: list[Any] = []
    for seg in plan.segments:
        if seg.prologue is None:
            seg.run(b)
        elif seg.prologue(b):
            seg.run(b)
            island_results.append(None)
        else:
            island_results.append(_fall_back(plan, seg, b, holders))
        for h, i in seg.writeback:
            holder = holders[h]
            holder.grad = None if i is None else tpx_wrap(p10_wrap(b[i], plan.backend_of[i]))
        if seg.island is not None:
            island_results.append(_island(plan, seg, b, flat_args))
        if seg.bind is not None:
            seg.bind(b, flat_args, holders)
    outputs = plan.outputs
    if outputs.__class__ is tuple and len(outputs) == 2 and outputs[0] == "value":
        return outputs[1]
    return _rebuild(outputs, b, plan.backend_of, island_results)


def _island(plan: Plan, seg: Segment, b: list, flat_args: list) -> Any:
    """Run the segment's eager island on this call's values."""
    fn, args, kwargs = seg.island
    if seg.island_inputs:
        args = list(args)
        for k, i, kind in seg.island_inputs:
            if kind == "arg":
                args[k] = flat_args[i]
                continue
            raw = p10_wrap(b[i], plan.backend_of[i])
            args[k] = tpx_wrap(raw) if kind == "tpx" else raw
    return fn(*args, **kwargs)


def _fall_back(plan: Plan, seg: Segment, b: list, holders: list) -> Any:
    """Run a lowered optimizer step eagerly (its groups or state changed shape since the
    plan was recorded), after writing back the ``.grad`` the plan set; the plan's guard then
    fails, so the next call records again."""
    plan.guard = _stale
    for h, i in seg.fallback_writeback:
        holders[h].grad = None if i is None else tpx_wrap(p10_wrap(b[i], plan.backend_of[i]))
    fn, args, kwargs = seg.fallback
    return fn(*args, **kwargs)


def _stale(holders: list) -> bool:
    return False


def _bind(b: list, i: int, slot: Slot, flat_args: list, holders: list) -> None:
    if slot.kind == ARG:
        a = flat_args[slot.source]
        b[i] = a._data if a.__class__ is P10Tensor else a._value._data
    else:
        h, attr = slot.source
        holder = holders[h]
        b[i] = holder._value._data if attr == "data" else holder.grad._value._data


def _rebuild(outputs: Any, b: list, backend_of: dict, island_results: list) -> Any:
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
