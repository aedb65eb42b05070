"""What a finished recording adds to its plan besides its steps: the checks a replay makes of
the state it starts from (see ``Recorder.finish`` in :mod:`tpx._record`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpx._plan import STATE

if TYPE_CHECKING:
    from tpx._record import Recorder


def state_meta(rec: Recorder) -> list[tuple]:
    """What a replay checks of each state value the plan reads at its start."""
    meta = []
    for i in rec.arg_bindings:
        slot = rec.slots[i]
        if slot.kind == STATE:
            meta.append((i, *slot.source, slot.shape, rec.dtype_of_slot[i]))
    return meta


def grad_guards(rec: Recorder) -> tuple:
    """Per holder: whether its ``.grad`` must be None (True), must be set (False) when a
    replay starts, or may be either (None): only the first segment, before any island
    such as ``zero_grad``, depends on it (eager code adds into a set gradient)."""
    first = []  # NOTE: the segments before the first island (a lowered step is none)
    for seg in rec.segments:
        first.append(seg)
        if seg.island is not None:
            break
    read = {i for seg in first for step in seg.steps for i in step.inputs if i.__class__ is int}
    read |= {i for seg in first for _, i in seg.writeback if i is not None}
    written = {h for seg in first for h, _ in seg.writeback}
    guards: list[bool | None] = []
    for h, none in enumerate(rec.grad_none):
        starts = [i for i in rec.arg_bindings if rec.slots[i].source == (h, "grad")]
        used = any(i in read for i in starts)
        guards.append(True if none and h in written else False if used else None)
    return tuple(guards)
