"""Time the tpx_inspect checks on a 1,000-node graph, and count false positives over the rule table.

Graph: a 1,000-node MLP-like chain on (8, 16) float32 tensors (matmul, add, tanh, mul, sin,
... with a fan-out every few layers), recorded live with its values and one backward. Each
graph check (local, accumulation, kernel, order, nonfinite) is timed separately, best of
``--rounds``; the kernel check runs with ``include_spec`` so that it does real work on the
numpy backend. The false-positive sweep runs every check on every case of the TPX rule table
(tests/tpx/_rule_cases.py) in float64 and float32 and reports the number of findings (goal 0).

    python benchmarks/bench_checks.py [--rounds N] [--nodes N] [--no-sweep]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import tpx as tp
from tpx_inspect.checks import (
    accumulation_check,
    capture_call,
    kernel_check,
    local_check,
    nonfinite_check,
    order_check,
    run_graph_checks,
)


def build(nodes: int):
    """The function and inputs of a graph with about ``nodes`` recorded nodes."""
    rng = np.random.default_rng(0)
    x = tp.asarray(rng.standard_normal((8, 16)) * 0.5, requires_grad=True)
    w = tp.asarray(rng.standard_normal((16, 16)) * 0.25, requires_grad=True)
    b = tp.asarray(rng.standard_normal(16) * 0.1, requires_grad=True)

    def f(x, w, b):
        h = x
        count = 0
        while count < nodes - 5:
            z = (h @ w + b).tanh()
            h = z * 0.5 + z.sin() * 0.5  # z has two consumers: an accumulation
            count += 7
        return (h * h).mean()

    return f, [x, w, b]


def timed(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_graph(nodes: int, rounds: int) -> None:
    f, inputs = build(nodes)
    start = time.perf_counter()
    graph = capture_call(f, inputs)
    record_s = time.perf_counter() - start
    n = len(graph.nodes)
    checks = {
        "local": lambda: local_check(graph),
        "accumulation": lambda: accumulation_check(graph),
        "kernel (spec replay)": lambda: kernel_check(graph, include_spec=True),
        "order": lambda: order_check(graph),
        "nonfinite": lambda: nonfinite_check(graph),
    }
    print(f"graph: {n} nodes ({n - 3} ops); record + backward with values: {record_s:.3f} s")
    total = 0.0
    for name, run in checks.items():
        s = timed(run, rounds)
        total += s
        print(f"  {name:22s} {s:8.3f} s   {s / n * 1e6:8.1f} us/node")
    report = run_graph_checks(graph)
    print(f"  {'all graph checks':22s} {total:8.3f} s   passed={report.passed}")


def sweep() -> None:
    # the repository root holds the tests package (shared case table of the rule sweep)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.helpers.rule_cases import CASES

    findings = graphs = nodes = 0
    start = time.perf_counter()
    for dtype in ("float64", "float32"):
        for case in CASES:
            inputs = [
                tp.asarray(x.astype(dtype), requires_grad=True) if x.dtype.kind == "f" else x
                for x in case.inputs()
            ]
            graph = capture_call(case.fn, [tp.asarray(x) if isinstance(x, np.ndarray) else x
                                           for x in inputs])  # fmt: skip
            graphs += 1
            nodes += len(graph.nodes)
            findings += len(run_graph_checks(graph).failures)
    seconds = time.perf_counter() - start
    print(
        f"false positives over the rule table: {findings} findings in {graphs} graphs "
        f"({len(CASES)} cases x 2 dtypes, {nodes} nodes), {seconds:.2f} s"
    )


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--no-sweep", action="store_true")
    args = parser.parse_args(argv)
    with threadpool_limits(1):
        bench_graph(args.nodes, args.rounds)
        if not args.no_sweep:
            sweep()


if __name__ == "__main__":
    main()
