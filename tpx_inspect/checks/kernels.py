"""The kernel check: each node recomputed on the numpy spec backend, against the backend used.

Every node that ran on another backend is replayed from its own recorded inputs, in its own
dtypes, on the numpy backend, and its output compared with the recorded one; when a backward
ran it, its rule is replayed on the spec from the recorded incoming gradient and compared with
the gradients the backend returned. Feeding each node its recorded inputs keeps one wrong
kernel from spreading: only the node that ran it disagrees.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np

import p10
from tpx_inspect._util import paused_gc
from tpx_inspect.check_view import NodeRecord
from tpx_inspect.checks._differences import stack_arrays
from tpx_inspect.checks.batched import BatchReplay, batches, layout_keys
from tpx_inspect.checks.registry import register_check
from tpx_inspect.checks.replay import Replay, why_not_replayable
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at
from tpx_inspect.checks.tracing import tap_kernels
from tpx_inspect.records import Graph

SPEC = "numpy"
"""The backend whose kernels define every op."""


def _tolerance(dtype: np.dtype) -> tuple[float, float]:
    return (1e-5, 1e-6) if np.dtype(dtype).itemsize <= 4 else (1e-10, 1e-12)


def _mismatch(spec: Any, got: Any) -> str | None:
    """Why ``got`` differs from ``spec``, or None when they agree within tolerance."""
    if got is None or spec is None:
        return None if got is None and spec is None else "one of them is missing"
    spec, got = np.asarray(spec), np.asarray(got)
    if spec.shape != got.shape or spec.dtype != got.dtype:
        return f"spec gives {spec.shape} {spec.dtype}, backend gave {got.shape} {got.dtype}"
    if spec.dtype.kind != "f":
        return None if np.array_equal(spec, got) else "values differ"
    rtol, atol = _tolerance(spec.dtype)
    if np.allclose(got, spec, rtol=rtol, atol=atol, equal_nan=True):
        return None
    diff = np.abs(got.astype(np.float64) - spec)
    k = int(np.nanargmax(np.where(np.isnan(diff), -1, diff)))
    index = np.unravel_index(k, spec.shape) if spec.shape else ()
    return (
        f"max |diff| {np.nanmax(diff):.3g} at element {tuple(int(i) for i in index)}: spec "
        f"{spec.reshape(-1)[k]:.6g}, backend {got.reshape(-1)[k]:.6g}"
    )


def _check_node(graph: Graph, node: NodeRecord) -> list[Finding]:
    replay = Replay(node, upcast=False)
    xs = replay.inputs()
    spec = replay.forward(xs)
    why = _mismatch(spec, node.output)
    if why is not None:
        return [_finding(node, "forward", f"the {node.backend} kernel of {_op(node)}", why)]
    ex = graph.execution(node.id)
    if ex is None:
        return []
    g, got = ex.grad_output, ex.grad_inputs
    spec_grads = replay.vjp(xs, node.output, g)
    for i, (s, b) in enumerate(zip(spec_grads, got)):
        why = _mismatch(s, b) if b is not None else None
        if why is not None:
            kernel = culprit_kernel(node, xs, g)
            used = f"its {kernel} kernel" if kernel else "a kernel its rule uses"
            what = f"the backward of {_op(node)} on {node.backend} ({used})"
            details = {"input": i, "kernel": kernel}
            return [_finding(node, "backward", what, f"input {i}: {why}", **details)]
    return []


def culprit_kernel(node: NodeRecord, xs: list, g: np.ndarray) -> str | None:
    """The first kernel the node's rule runs whose output differs between the node's backend
    and the spec, found by replaying the rule on both with every kernel call tapped; None when
    the backend is not registered here or no single kernel call differs."""
    try:
        p10.get_backend(node.backend)
    except p10.BackendError:
        return None
    spec_calls: list = []
    backend_calls: list = []
    with tap_kernels([SPEC], spec_calls):
        Replay(node, upcast=False).vjp(xs, node.output, g)
    with tap_kernels([node.backend], backend_calls):
        Replay(node, upcast=False, backend=node.backend).vjp(xs, node.output, g)
    for (op, spec), (op_b, got) in zip(spec_calls, backend_calls):
        if op is not op_b:
            return None
        if _mismatch(spec, got) is not None:
            return op.value
    return None


def _op(node: NodeRecord) -> str:
    return getattr(node.op, "value", node.name)


def _finding(node: NodeRecord, phase: str, what: str, why: str, **details: Any) -> Finding:
    return finding_at(
        node, "kernel",
        f"{phase}: {what} disagrees with the {SPEC} spec at {node.where()}: {why}",
        phase=phase, backend=node.backend, **details,
    )  # fmt: skip


@register_check(
    "kernel",
    rank=30,
    summary=(
        "nodes that ran on a backend other than `numpy` are replayed on the numpy spec from their "
        "own recorded inputs (forward) and recorded incoming gradient (the rule's backward); one "
        "wrong kernel shows up only at the node that ran it; for a backward mismatch the rule is "
        "replayed on both backends with every kernel call tapped, and the first kernel whose "
        "output differs is named."
    ),
)
def kernel_check(graph: Graph, include_spec: bool = False, batch_size: int = 512) -> CheckResult:
    """Compare every node that ran on a non-spec backend with the numpy spec.

    Nodes that ran on the spec itself are skipped unless ``include_spec`` (then the check
    only shows that replay reproduces the recorded values). Nodes of one op and layout are
    replayed ``batch_size`` at a time; any node the batch does not clear is checked alone,
    so its finding is the one a node-by-node check (``batch_size=1``) gives.

    >>> import tpx as tp
    >>> from tpx_inspect.checks.record import record
    >>> with record() as rec:
    ...     (tp.asarray([1.0, 2.0], requires_grad=True).exp()).sum().backward()
    >>> r = kernel_check(rec.graph(), include_spec=True)
    >>> r.status.label, r.checked
    ('PASS', 2)
    >>> kernel_check(rec.graph()).summary()
    'SKIPPED: NumPy is the spec backend: nothing to compare'
    """
    start = time.perf_counter()
    reasons: dict[int, str | None] = {}
    for node in graph.replay_nodes:
        if not node.is_leaf:
            on_spec = node.backend == SPEC and not include_spec
            reasons[node.id] = ON_SPEC if on_spec else why_not_replayable(node)
    todo = [graph.replay_node(nid) for nid, why in reasons.items() if why is None]
    results: dict[int, Any] = {}
    with paused_gc(promote=True):  # NOTE: keys and results hold no cycles (see local_check)
        keys = layout_keys(graph) if batch_size > 1 else []
        for batch in batches(todo, batch_size, lambda n: keys[n.id]):
            results.update(_check_batch(graph, batch))
    findings: list[Finding] = []
    checked, skips, notes = 0, [], []
    for nid, reason in reasons.items():
        result = results.get(nid)
        if reason is not None:
            skips.append(Skip(reason, nid))
        elif isinstance(result, Exception):  # a kernel the spec lacks, a rule that cannot replay
            skips.append(Skip(f"replay on the spec failed: {type(result).__name__}", nid))
            notes.append(f"{graph.replay_node(nid).where()}: replay failed: {result}")
        else:
            findings += result
            checked += 1
    skipped = len(skips)
    if checked == 0 and skips and all(s.reason == ON_SPEC for s in skips):
        skips = [Skip(ON_SPEC)]  # NOTE: one reason for the whole graph, not one per node
    return CheckResult("kernel", checked, tuple(findings), skipped,
                       time.perf_counter() - start, tuple(notes), tuple(skips))  # fmt: skip


def _check_batch(graph: Graph, nodes: list) -> dict[int, Any]:
    """Findings (or the exception) per node; nodes the batch clears have no findings."""
    suspects = {n.id for n in nodes}
    if len(nodes) > 1:
        # NOTE: a batch that cannot replay as a whole is checked node by node
        with contextlib.suppress(Exception):
            suspects = _suspects(graph, nodes)
    return {n.id: _one(graph, n) if n.id in suspects else [] for n in nodes}


def _one(graph: Graph, node: NodeRecord) -> Any:
    try:
        return _check_node(graph, node)
    except Exception as e:
        return e


def _suspects(graph: Graph, nodes: list) -> set[int]:
    """The ids of the nodes whose stacked replay does not agree with their record."""
    replay = BatchReplay(nodes, upcast=False)
    xs = replay.inputs()
    outs = stack_arrays([n.output for n in nodes])
    bad = ~_agree(replay.forward(xs), outs)
    execs = [graph.execution(n.id) for n in nodes]
    if execs[0] is not None:
        g = stack_arrays([ex.grad_output for ex in execs])
        spec_grads = replay.vjp(xs, outs, g)
        for i, got in enumerate(zip(*(ex.grad_inputs for ex in execs))):
            if got[0] is not None:
                spec = spec_grads[i] if i < len(spec_grads) else None
                bad |= True if spec is None else ~_agree(spec, stack_arrays(got))
    return {n.id for n, b in zip(nodes, bad) if b}


def _agree(spec: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Per node (leading axis), whether ``got`` matches ``spec`` as :func:`_mismatch` asks."""
    if spec.shape != got.shape or spec.dtype != got.dtype:
        return np.zeros(len(got), dtype=bool)
    if spec.dtype.kind != "f":
        return (spec == got).reshape(len(got), -1).all(axis=1)
    rtol, atol = _tolerance(spec.dtype)
    close = np.isclose(got, spec, rtol=rtol, atol=atol, equal_nan=True)
    return close.reshape(len(got), -1).all(axis=1)


ON_SPEC = "NumPy is the spec backend: nothing to compare"
