"""Tracing on vs off: recording a graph must not change a single forward value.

The function runs twice, with grad mode on (recording) and off, while every kernel call of
the backends in use is tapped; the two sequences of kernel outputs must agree bitwise. A
difference is attributed to the node recorded for that kernel call in the traced run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

import p10
import tpx
from tpx_inspect.checks.record import GraphRecord, Recorder
from tpx_inspect.checks.report import CheckResult, Finding, finding_at


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
        table = p10.get_backend(name).kernels
        saved.append((table, dict(table)))
        for op, kernel in list(table.items()):
            table[op] = _tapped(op, kernel, p10.get_backend(name), calls)
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


class _CallIndex:
    """Observer noting which kernel call each recorded node's output came from."""

    def __init__(self, calls: list, recorder: Recorder) -> None:
        self.calls, self.recorder, self.node_of_call = calls, recorder, {}

    def on_node_recorded(self, node: Any, output: Any) -> None:
        self.node_of_call[len(self.calls) - 1] = self.recorder._id(node)


def _backends(inputs: Sequence[Any]) -> list[str]:
    names = {getattr(getattr(x, "backend", None), "name", None) for x in inputs}
    return sorted({"numpy"} | {n for n in names if n})


def tracing_check(
    fn: Callable[..., Any], inputs: Sequence[Any], seed: int = 0
) -> tuple[CheckResult, GraphRecord]:
    """Run ``fn(*inputs)`` traced and untraced and compare every kernel output bitwise.

    ``p10.manual_seed(seed)`` runs before each call so that random ops draw the same values.

    >>> import tpx as tp
    >>> x = tp.asarray([1.0, 2.0], requires_grad=True)
    >>> result, graph = tracing_check(lambda t: (t * t).sum(), [x])
    >>> result.passed, result.checked
    (True, 2)
    """
    start = time.perf_counter()
    backends = _backends(inputs)
    traced: list = []
    recorder = Recorder(keep_values=False)
    index = _CallIndex(traced, recorder)
    p10.manual_seed(seed)
    with tap_kernels(backends, traced), tpx.add_observer(index), tpx.add_observer(recorder):
        fn(*inputs)
    plain: list = []
    p10.manual_seed(seed)
    with tap_kernels(backends, plain), tpx.no_grad():
        fn(*inputs)
    graph = recorder.graph()
    findings = _compare(traced, plain, index.node_of_call, graph)
    result = CheckResult(
        "tracing", min(len(traced), len(plain)), tuple(findings[:1]),
        seconds=time.perf_counter() - start,
    )  # fmt: skip
    return result, graph


def _compare(traced: list, plain: list, node_of_call: dict, graph: GraphRecord) -> list[Finding]:
    for k, ((op_t, a), (op_p, b)) in enumerate(zip(traced, plain)):
        same = op_t is op_p and a.dtype == b.dtype and a.shape == b.shape
        if same and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            continue
        what = (
            f"kernel call {k} ({op_t.value}) gives a different value with grad mode on than "
            f"off ({op_p.value}, {b.dtype} {b.shape} vs {a.dtype} {a.shape})"
        )
        return [_attribute(k, what, node_of_call, graph)]
    if len(traced) != len(plain):
        what = f"grad mode on ran {len(traced)} kernels, off ran {len(plain)}"
        return [Finding("tracing", what)]
    return []


def _attribute(k: int, what: str, node_of_call: dict, graph: GraphRecord) -> Finding:
    nid = node_of_call.get(k)
    if nid is None:
        return Finding("tracing", what + " (not a recorded node)", details={"call": k})
    return finding_at(graph.node(nid), "tracing", what, call=k)
