"""Tracing on vs off: recording a graph must not change a single forward value.

The function runs twice, with grad mode on (recording) and off, while every kernel call of
the backends in use is tapped. The function's outputs must agree bitwise, and every node
recorded with grad mode on must find, in order, a kernel call of its op with grad mode off
that gave the same value bitwise: the recorded ops and their forward values, not the number of
kernel calls, are compared (an in-place ``g += ...`` may run a different number of kernels in
the two modes and is not a failure). A difference is attributed to the recorded node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

import p10
import tpx
from tpx_inspect.checks.record import Recording
from tpx_inspect.checks.report import CheckResult, Finding, Skip, finding_at
from tpx_inspect.records import Graph


@contextmanager
def tap_kernels(backends: Sequence[str], calls: list) -> Iterator[list]:
    """Append ``(op, numpy copy of the output)`` to ``calls`` for every kernel call inside.

    >>> import p10
    >>> with tap_kernels(["numpy"], []) as calls:
    ...     _ = p10.ones(2) + p10.ones(2)
    >>> [op.value for op, _ in calls]
    ['add']
    """
    saved = []
    for name in backends:
        backend = p10.get_backend(name)
        for table, wrap in ((backend.kernels, _tapped), (backend.inplace, _tapped_inplace)):
            saved.append((table, dict(table)))
            for op, kernel in list(table.items()):
                table[op] = wrap(op, kernel, backend, calls)
    try:
        yield calls
    finally:
        for table, original in saved:
            for op, kernel in original.items():
                table[op] = kernel


def _tapped(op: Any, kernel: Callable, backend: Any, calls: list) -> Callable:
    def run(*args: Any, **kwargs: Any) -> Any:
        out = kernel(*args, **kwargs)
        calls.append((op, np.array(backend.to_numpy(np.asarray(out) if np.isscalar(out) else out))))
        return out

    return run


def _tapped_inplace(op: Any, kernel: Callable, backend: Any, calls: list) -> Callable:
    """An in-place kernel ``kernel(dst, other)``: the value it leaves in ``dst`` is its output."""

    def run(dst: Any, other: Any) -> Any:
        out = kernel(dst, other)
        calls.append((op, np.array(backend.to_numpy(dst))))
        return out

    return run


def _backends(inputs: Sequence[Any]) -> list[str]:
    names = {getattr(getattr(x, "backend", None), "name", None) for x in inputs}
    return sorted({"numpy"} | {n for n in names if n})


def tracing_check(
    fn: Callable[..., Any], inputs: Sequence[Any], seed: int = 0
) -> tuple[CheckResult, Graph]:
    """Run ``fn(*inputs)`` traced and untraced; compare outputs and recorded values bitwise.

    ``p10.manual_seed(seed)`` runs before each call so that random ops draw the same values.

    >>> import tpx as tp
    >>> x = tp.asarray([1.0, 2.0], requires_grad=True)
    >>> result, graph = tracing_check(lambda t: (t * t).sum(), [x])
    >>> result.status.label, result.checked
    ('PASS', 3)
    """
    start = time.perf_counter()
    backends = _backends(inputs)
    recorder = Recording(keep_values=True)
    p10.manual_seed(seed)
    with recorder:
        traced_out = _outputs(fn(*inputs))
    plain: list = []
    p10.manual_seed(seed)
    with tap_kernels(backends, plain), tpx.no_grad():
        plain_out = _outputs(fn(*inputs))
    graph = recorder.graphs[-1]
    p10.manual_seed(seed)
    with tpx.no_grad():
        again = _outputs(fn(*inputs))
    if len(again) != len(plain_out) or not all(map(_same, again, plain_out)):
        skip = Skip("two calls with grad mode off and the same seed differ (a random op with "
                    "its own generator?): nothing to compare")  # fmt: skip
        return CheckResult("tracing", 0, seconds=time.perf_counter() - start, skips=(skip,)), graph
    findings = _compare_nodes(graph, plain) or _compare_outputs(traced_out, plain_out)
    nodes = sum(not n.is_leaf for n in graph.replay_nodes)
    result = CheckResult(
        "tracing", nodes + len(traced_out), tuple(findings[:1]),
        seconds=time.perf_counter() - start,
    )  # fmt: skip
    return result, graph


def _outputs(out: Any) -> list[np.ndarray]:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.array(o.numpy()) for o in outs if isinstance(o, (tpx.Tensor, p10.Tensor))]


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _compare_outputs(traced: list, plain: list) -> list[Finding]:
    if len(traced) != len(plain):
        return [
            Finding("tracing", f"grad mode on returned {len(traced)} tensors, off {len(plain)}")
        ]
    for k, (a, b) in enumerate(zip(traced, plain)):
        if not _same(a, b):
            what = (
                f"output {k} differs with grad mode on and off ({a.dtype} {a.shape} vs "
                f"{b.dtype} {b.shape}{_max_diff(a, b)})"
            )
            return [Finding("tracing", what, details={"output": k})]
    return []


def _max_diff(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape or a.dtype.kind != "f" or b.dtype.kind != "f":
        return ""
    with np.errstate(invalid="ignore"):
        return f", max |diff| {float(np.nanmax(np.abs(a - b), initial=0.0)):.3g}"


def _compare_nodes(graph: Graph, plain: list) -> list[Finding]:
    """The first recorded node whose op and value no later untraced kernel call reproduces."""
    at = 0
    for node in graph.replay_nodes:
        if node.is_leaf or node.output is None or node.function is not None:
            continue  # NOTE: a Function's node stands for the kernels its forward ran
        k = next((j for j in range(at, len(plain)) if plain[j][0] is node.op
                  and _same(plain[j][1], node.output)), None)  # fmt: skip
        if k is None:
            return [_not_reproduced(node, plain[at:])]
        at = k + 1
    return []


def _not_reproduced(node: Any, rest: list) -> Finding:
    same_op = [v for op, v in rest if op is node.op]
    if not same_op:
        why = f"grad mode off ran no {node.op.value} kernel at this point"
    else:
        why = f"no {node.op.value} kernel with grad mode off gave its value bitwise"
        why += _max_diff(np.asarray(node.output), same_op[0])
    what = f"{node.where()}: its forward value with grad mode on is not reproduced: {why}"
    return finding_at(node, "tracing", what)
