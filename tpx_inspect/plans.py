"""Plans of ``tpx.compile`` in a trace: the eager graph of one call next to the plan replayed
for its signature (buffers, kernels with the GradFn node each came from, liveness, peak
memory, per-kernel seconds)."""

from __future__ import annotations

import dataclasses
from typing import Any

import tpx
from tpx_inspect.capture import capture
from tpx_inspect.records import Trace


def capture_plan(compiled: tpx.CompiledFunction, *args: Any, name: str | None = None,
                 **kwargs: Any) -> Trace:  # fmt: skip
    """A trace of one eager call of ``compiled``'s function, with the plan that
    ``tpx.compile`` replays for that signature in its ``plans`` field.

    The function runs twice: once eagerly under a capture while ``tpx.compile`` records its
    plan (so each kernel names the captured graph and node it came from: ``graph`` and
    ``node_id``), then once as a replay timed kernel by kernel; a training step therefore
    takes two steps (three when it is an optimizer's first step, which makes its state and
    is recorded again). The kernels of a lowered optimizer step link to no node: their
    ``phase`` is ``optimizer`` and their ``node`` names the optimizer, group and parameter.

    >>> import tpx as tp
    >>> x = tp.ones(3, requires_grad=True)
    >>> step = tp.compile(lambda: (x * 2).sum().backward())
    >>> trace = capture_plan(step, name="step")
    >>> [(k["op"], k["node"], k["node_id"]) for k in trace.plans[0]["kernels"]]
    [('broadcast_to', 'SumBackward', 2), ('mul', 'MulBackward', 1), ('copy', 'AccumulateGrad', 0)]
    >>> [n.name for n in trace.graphs[0].nodes]
    ['AccumulateGrad', 'MulBackward', 'SumBackward']
    """
    for _ in range(2):  # NOTE: an optimizer's first step makes its state: recorded again
        ids = _NodeIds()
        with (
            capture(timing=False) as cap,
            tpx.add_observer(ids),
            tpx.CompiledFunction.intercept(lambda call: call.record()),
        ):
            compiled(*args, **kwargs)
        if compiled.has_plan(*args, **kwargs):
            break
    plan = compiled.inspect_plan(*args, **kwargs)  # NOTE: recorded above: one timed replay
    trace = cap.trace
    plans: tuple[dict[str, Any], ...] = ()
    if plan is not None:
        label = name or getattr(compiled.fn, "__qualname__", "compiled")
        graph_ids = [g.id for g in trace.graphs]
        kernels = [_linked(k, ids.graphs, graph_ids) for k in plan["kernels"]]
        plans = ({**plan, "kernels": kernels, "name": label},)
    return dataclasses.replace(trace, plans=plans)


class _NodeIds:
    """The node ids a capture gives each backward's graph: nodes numbered in the order they
    were created (``seq``), as :mod:`tpx_inspect._build` numbers them."""

    def __init__(self) -> None:
        self.graphs: list[dict[int, int]] = []

    def on_backward_start(self, roots: Any, grad_roots: Any, order: list) -> None:
        seqs = sorted(n.seq for n in order)
        self.graphs.append({s: i for i, s in enumerate(seqs)})


def _linked(kernel: dict[str, Any], graphs: list[dict[int, int]], graph_ids: list[int]) -> dict:
    """``kernel`` with the captured ``graph`` id and ``node_id`` of the GradFn it came from
    (None when the node is in no captured graph)."""
    seq = kernel.get("node_seq")
    for k, ids in enumerate(graphs):
        if seq in ids and len(graphs) == len(graph_ids):
            return {**kernel, "graph": graph_ids[k], "node_id": ids[seq]}
    return {**kernel, "graph": None, "node_id": None}


def plans_view(trace: Trace) -> list[dict[str, Any]]:
    """The plans of ``trace`` for the viewer: per plan its name, memory figures and kernels
    (each with its seconds, when timed, and the captured ``graph`` / ``node_id`` it links to).
    A pure function of the trace (the server's ``/api/runs/{run}/plans`` answers it).

    >>> import tpx as tp
    >>> x = tp.ones(3, requires_grad=True)
    >>> view = plans_view(capture_plan(tp.compile(lambda: (x * 2).sum().backward())))
    >>> [(k["op"], k["node_id"], k["seconds"] >= 0) for k in view[0]["kernels"]][:1]
    [('broadcast_to', 2, True)]
    """
    out = []
    for k, plan in enumerate(trace.plans):
        seconds = plan.get("kernel_seconds") or []
        kernels = [
            {**kernel, "seconds": seconds[i] if i < len(seconds) else None}
            for i, kernel in enumerate(plan.get("kernels", []))
        ]
        out.append(
            {
                "index": k,
                "name": plan.get("name", f"plan {k}"),
                "peak_bytes": plan.get("peak_bytes"),
                "eager_peak_bytes": plan.get("eager_peak_bytes"),
                "islands": plan.get("islands", 0),
                "optimizer_steps": plan.get("optimizer_steps", 0),
                "buffers": len(plan.get("buffers", [])),
                "kernels": kernels,
            }
        )
    return out
