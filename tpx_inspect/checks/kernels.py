"""The kernel check: each node recomputed on the numpy spec backend, against the backend used.

Every node that ran on another backend is replayed from its own recorded inputs, in its own
dtypes, on the numpy backend, and its output compared with the recorded one; when a backward
ran it, its rule is replayed on the spec from the recorded incoming gradient and compared with
the gradients the backend returned. Feeding each node its recorded inputs keeps one wrong
kernel from spreading: only the node that ran it disagrees.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import p10
from tpx_inspect.checks.record import GraphRecord, NodeRecord
from tpx_inspect.checks.replay import Replay, why_not_replayable
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at
from tpx_inspect.checks.tracing import tap_kernels

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


def _check_node(graph: GraphRecord, node: NodeRecord) -> list[Finding]:
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


def kernel_check(graph: GraphRecord, include_spec: bool = False) -> CheckResult:
    """Compare every node that ran on a non-spec backend with the numpy spec.

    Nodes that ran on the spec itself are skipped unless ``include_spec`` (then the check
    only shows that replay reproduces the recorded values).

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
    findings: list[Finding] = []
    checked, skips, notes = 0, [], []
    for node in graph.nodes:
        if node.is_leaf:
            continue
        on_spec = node.backend == SPEC and not include_spec
        reason = ON_SPEC if on_spec else why_not_replayable(node)
        if reason is not None:
            skips.append(Skip(reason, node.id))
            continue
        try:
            findings += _check_node(graph, node)
        except Exception as e:  # a kernel the spec lacks, a rule that cannot replay
            skips.append(Skip(f"replay on the spec failed: {type(e).__name__}", node.id))
            notes.append(f"{node.where()}: replay failed: {e}")
            continue
        checked += 1
    skipped = len(skips)
    if checked == 0 and skips and all(s.reason == ON_SPEC for s in skips):
        skips = [Skip(ON_SPEC)]  # NOTE: one reason for the whole graph, not one per node
    return CheckResult("kernel", checked, tuple(findings), skipped,
                       time.perf_counter() - start, tuple(notes), tuple(skips))  # fmt: skip


ON_SPEC = "NumPy is the spec backend: nothing to compare"
