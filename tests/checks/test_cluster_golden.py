"""The golden comparison of the local check: one process (node by node, the reference, and
batched) against a real 2-worker LocalCluster on 127.0.0.1, on the planted-bug suite (a wrong
rule planted in every rule of the table, float64 and float32) and on a larger graph whose
groups span many nodes. Findings are compared field by field, their numbers with tolerances
(BLAS kernels differ in the last bits between machines), never as printed strings."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

import tpx as tp
from p10 import Op
from tests.checks.test_sweep import _first_case, _inputs, _mutated
from tpx.rules import RULES
from tpx_inspect.checks import LocalOptions, capture_call, local_check
from tpx_inspect.checks.cluster import connect

pytestmark = pytest.mark.slow

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|nan|inf")


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("dask.distributed")
    with connect(workers=2) as c:
        yield c


def _close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        both_nan = math.isnan(a) and math.isnan(b)
        return both_nan or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def _numbers(text: str) -> list[float]:
    return [float(m) for m in NUMBER.findall(text)]


def assert_same_findings(a, b) -> None:
    """``a`` and ``b`` (CheckResults) agree: the same nodes, categories, inputs, cotangents,
    skips and notes; the numbers of the findings (fields and messages) within tolerances."""
    assert (a.checked, a.skips, a.notes) == (b.checked, b.skips, b.notes)
    assert len(a.findings) == len(b.findings)
    for x, y in zip(a.findings, b.findings):
        text = {k: v for k, v in vars(x).items() if k not in ("message", "details")}
        assert text == {k: v for k, v in vars(y).items() if k not in ("message", "details")}
        assert NUMBER.sub("#", x.message) == NUMBER.sub("#", y.message)
        assert np.allclose(_numbers(x.message), _numbers(y.message), rtol=1e-4, equal_nan=True)
        assert x.details.keys() == y.details.keys()
        assert all(_close(x.details[k], y.details[k]) for k in x.details), (x.details, y.details)


def _planted_suite(dtype, keep: bool):
    """One graph holding the first case of every rule of the table, recorded with a wrong
    rule planted in every entry; with ``keep`` the wrong rules stay in the table during the
    check (their nodes batch in one process), else the table is restored before it (the
    nodes replay one by one)."""
    cases = [_first_case(op) for op in RULES]
    inputs = [_inputs(case, dtype) for case in cases]
    ends = np.cumsum([len(xs) for xs in inputs]).tolist()

    def every_case(*flat):
        outs = []
        for case, start, end in zip(cases, [0, *ends], ends):
            out = case.fn(*flat[start:end])
            outs += out if isinstance(out, (tuple, list)) else [out]
        return outs

    saved = dict(RULES)
    RULES.update({op: _mutated(rule) for op, rule in saved.items()})
    try:
        with np.errstate(all="ignore"):
            graph = capture_call(every_case, [x for xs in inputs for x in xs])
    finally:
        if not keep:
            RULES.update(saved)
    return graph, saved


@pytest.mark.parametrize(("dtype", "keep"), [("float64", True), ("float32", False)])
def test_the_planted_bug_suite_gives_the_same_findings_on_the_cluster(client, dtype, keep):
    graph, saved = _planted_suite(dtype, keep)
    try:
        with np.errstate(all="ignore"):
            alone = local_check(graph)
            reference = local_check(graph, LocalOptions(batch_size=1))
            spread = local_check(graph, client=client)
    finally:
        RULES.update(saved)
    assert_same_findings(alone, reference)
    assert_same_findings(alone, spread)
    # the planted bugs are found at (nearly) every rule (complex-valued ops are skipped)
    assert len({f.op for f in alone.findings}) > 0.8 * len(RULES)


def _layers(x, w, b):
    h = x
    for k in range(40):
        z = (h @ w + b).tanh()
        h = z * 0.5 + z.sin() * 0.5
        h = h * (h.mean() + 1.0)  # 0-d values that differ between the nodes of a group
        if k == 30:  # NaN from here on: those nodes are skipped, in every run
            h = h + tp.asarray(np.full(6, np.nan)) * 0.0
    return (h * h).mean()


def test_a_graph_of_large_groups_gives_the_same_findings_on_the_cluster(client):
    rng = np.random.default_rng(5)
    shapes = [(4, 6), (6, 6), (6,)]
    inputs = [tp.asarray(rng.standard_normal(s) * 0.4, requires_grad=True) for s in shapes]
    wrong = dataclasses.replace(RULES[Op.TANH], vjp=lambda ctx, g: (g * 1.01,))
    handle = tp.register_rule(Op.TANH, wrong.vjp, save=(0,))
    try:
        graph = capture_call(_layers, inputs)
        opts = LocalOptions(batch_size=16, directions=1, cotangents=2, seed=4)
        alone = local_check(graph, opts)
        reference = local_check(graph, dataclasses.replace(opts, batch_size=1))
        spread = local_check(graph, opts, client=client)
    finally:
        handle.remove()
    assert len(graph.nodes) > 250 and alone.findings and alone.skips
    assert_same_findings(alone, reference)
    assert_same_findings(alone, spread)
