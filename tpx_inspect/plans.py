"""Plans of ``tpx.compile`` in a trace: the eager graph of one call next to the plan replayed
for its signature (buffers, kernels with the GradFn node each came from, liveness, peak
memory, per-kernel seconds)."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import tpx
from tpx_inspect.capture import capture
from tpx_inspect.records import Trace


def capture_plan(compiled: tpx.CompiledFunction, *args: Any, name: str | None = None,
                 **kwargs: Any) -> Trace:  # fmt: skip
    """A trace of one eager call of ``compiled``'s function, with the plan that
    ``tpx.compile`` replays for that signature in its ``plans`` field.

    The function runs three times: once to record the plan (when it has none yet), once as
    a replay timed kernel by kernel, once eagerly under a capture (its graph); a training
    step therefore takes three steps.

    >>> import tpx as tp
    >>> x = tp.ones(3, requires_grad=True)
    >>> step = tp.compile(lambda: (x * 2).sum().backward())
    >>> trace = capture_plan(step, name="step")
    >>> [k["op"] for k in trace.plans[0]["kernels"]][:2], len(trace.graphs)
    (['mul', 'sum'], 1)
    """
    plan = compiled.inspect_plan(*args, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tpx.CompileWarning)
        with capture(timing=False) as cap:
            compiled.fn(*args, **kwargs)
    plans: tuple[dict[str, Any], ...] = ()
    if plan is not None:
        label = name or getattr(compiled.fn, "__qualname__", "compiled")
        plans = ({**plan, "name": label},)
    return dataclasses.replace(cap.trace, plans=plans)
