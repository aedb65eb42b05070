"""Workspace arrays: a plan's large temporaries written with ``out=`` into arrays it keeps.

Eager code (and a plain replay) makes a fresh array for each kernel result: a ``malloc``, a
write, a ``free``. A replay knows every temporary's shape, dtype and lifetime in advance, so
it can give each large temporary an array allocated once and let the kernel write into it
(``np.matmul(a, b, out=w)``, ``np.multiply(a, b, out=w)``): the same kernel on the same
values, so the same bits (NumPy computes into ``out`` as into a fresh C-ordered result).
Two temporaries whose lifetimes do not overlap share an array (liveness, pooled by shape
and dtype), within the eager call's peak memory.

It is off by default (see :data:`MIN_BYTES`: it measured slower). Only what is safe gets a
workspace array: a NumPy ufunc call (one output, no parameters) or ``np.matmul`` on the
NumPy backend, whose result is made and dies inside one segment (never returned, never a
``.grad``, never given to an island), shares memory with nothing at record time (no view of
it was taken), and was C-ordered in the eager call (a later kernel sees the same memory
layout, so BLAS gets the same arguments). A result that a later step writes into in place
(:func:`tpx._plan_passes._reuse_dying`) keeps the array until the last of the chain dies.
The arrays are the plan's, so two replays of one plan at once (threads, or a replay that
re-enters itself from an island) must not share them: :func:`tpx._plan.replay` runs a
second, concurrent replay with the plain code (fresh arrays).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpx._plan import KERNEL, Plan, Segment, Step, escape_slots, key_slots

# NOTE: off by default (None). Measured on the MLP step (784-256-128-10, batch 64, one BLAS
# thread, loaded 2-core machine, paired in one process): workspace arrays made the replay
# ~3% SLOWER than fresh arrays (even for the one 800 kB weight gradient alone), most likely
# because an array kept since the last replay is colder in the cache than the block malloc
# hands back (just freed). Set it (e.g. 1 << 14: temporaries of 16 kB and more) to use them;
# benchmarks/bench_compile.py --workspace compares.
MIN_BYTES: int | None = None


def assign_workspace(plan: Plan, last: dict[int, int], min_bytes: int) -> int:
    """Give each eligible temporary of ``plan`` of at least ``min_bytes`` a workspace array
    (``seg.workspace``: step index -> array); returns the bytes the plan keeps in them."""
    escaping = escape_slots(plan)
    pools: dict[tuple, list[Any]] = {}  # (shape, dtype) -> free arrays
    total = 0
    position = 0
    for seg in plan.segments:
        groups = _groups(seg)
        end = position + len(seg.steps) - 1
        local = _local(seg, last, end)
        ok = {
            r
            for r in _eligible_roots(plan, seg, groups, escaping, local)
            if plan.slots[r].nbytes >= min_bytes
        }
        ends = {r: max(last.get(i, -1) for i in members) for r, members in groups.items()}
        held: dict[int, Any] = {}
        seg.workspace = {}
        for k, step in enumerate(seg.steps):
            if step.out in ok:
                key = (plan.slots[step.out].shape, plan.slots[step.out].dtype)
                pool = pools.setdefault(key, [])
                if not pool:
                    pool.append(np.empty(key[0], dtype=np.dtype(key[1])))
                    total += pool[-1].nbytes
                held[step.out] = seg.workspace[k] = pool.pop()
            for root in [r for r in held if free_after(ends, r) <= position + k]:
                key = (plan.slots[root].shape, plan.slots[root].dtype)
                pools[key].append(held.pop(root))
        position += len(seg.steps) + 1
    return total


def free_after(ends: dict[int, int], root: int) -> int:
    """The position after which ``root``'s array is free: its chain's last reader."""
    return ends[root]


def workspace_slots(seg: Segment) -> set[int]:
    """Every slot whose value lives in one of ``seg``'s workspace arrays."""
    roots = {seg.steps[k].out for k in seg.workspace}
    return {i for r, members in _groups(seg).items() if r in roots for i in members}


def _groups(seg: Segment) -> dict[int, list[int]]:
    """root slot -> the slots that share its memory through in-place rewrites (``t = a + b``
    written into a dying ``a`` by :func:`tpx._plan_passes._reuse_dying`)."""
    root_of: dict[int, int] = {}
    groups: dict[int, list[int]] = {}
    for step in seg.steps:
        if step.out is None:
            continue
        if _writes_into_first(step) and step.inputs[0] in root_of:
            root = root_of[step.inputs[0]]
        else:
            root = step.out
            groups[root] = []
        root_of[step.out] = root
        groups[root].append(step.out)
    return groups


def _writes_into_first(step: Step) -> bool:
    return hasattr(step.kernel, "in_place_kernel")


def _local(seg: Segment, last: dict[int, int], end: int) -> set[int]:
    """Slots made in ``seg`` whose last reader is in ``seg`` (not read through a setitem key:
    those are read by ``fill``, outside the generated code's view)."""
    keys = {i for s in seg.steps if s.kind == "setitem" for i in key_slots(s.params["key"])}
    made = {s.out for s in seg.steps if s.out is not None}
    return {i for i in made - keys if last.get(i, end + 1) <= end}


def _eligible_roots(
    plan: Plan, seg: Segment, groups: dict[int, list[int]], escaping: set[int], local: set[int]
) -> set[int]:
    made = {s.out: s for s in seg.steps if s.out is not None}
    ok = set()
    for root, members in groups.items():
        step, slot = made[root], plan.slots[root]
        if (
            _out_kernel(step)
            and slot.kind == KERNEL
            and slot.c_order
            and plan.backend_of.get(root) is not None
            and plan.backend_of[root].array_type is np.ndarray
            and all(i in local and i not in escaping and i not in plan.aliased for i in members)
        ):
            ok.add(root)
    return ok


def _out_kernel(step: Step) -> bool:
    """A kernel that takes ``out=`` and computes into it what it would return."""
    if step.kind != "kernel" or step.params or _writes_into_first(step):
        return False
    kernel = step.kernel
    return kernel is np.matmul or (isinstance(kernel, np.ufunc) and kernel.nout == 1)
