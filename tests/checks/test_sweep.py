"""Sweeps over the whole rule table: no false positive on any rule (float64 and float32
graphs), and a planted bug in each rule caught at that rule's nodes and nowhere else."""

from __future__ import annotations

import numpy as np
import pytest
from _rule_cases import CASES

import tpx as tp
from tpx.rules import RULES, Rule
from tpx_inspect.checks import capture_call, local_check, run_graph_checks


def _inputs(case, dtype):
    return [
        tp.asarray(x.astype(dtype), requires_grad=True) if x.dtype.kind == "f" else tp.asarray(x)
        for x in case.inputs()
    ]


def _sweep(dtype):
    failures, ops = [], set()
    for case in CASES:
        graph = capture_call(case.fn, _inputs(case, dtype))
        ops |= {n.op for n in graph.nodes}
        report = run_graph_checks(graph)
        failures += [(case.id, f.category, f.where, f.message) for f in report.failures]
    return failures, ops


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_no_false_positive_over_the_whole_rule_table(dtype):
    failures, ops = _sweep(dtype)
    assert failures == []
    assert set(RULES) <= ops  # every rule was exercised


def _mutated(rule):
    def vjp(ctx, g):
        return tuple(None if gi is None else gi * 1.5 + 0.25 for gi in rule.vjp(ctx, g))

    return Rule(vjp, rule.save, rule.save_output)


def _first_case(op):
    return next(c for c in CASES if c.op is op and c.inputs()[0].size > 1)


@pytest.mark.parametrize("op", list(RULES), ids=lambda op: op.value)
def test_a_planted_bug_in_every_rule_is_caught_at_its_nodes(op):
    case = _first_case(op)
    saved = RULES[op]
    RULES[op] = _mutated(saved)
    try:
        with np.errstate(all="ignore"):
            graph = capture_call(case.fn, _inputs(case, "float64"))
    finally:
        RULES[op] = saved
    result = local_check(graph)
    assert result.findings, f"planted bug in {op.value} not caught"
    assert {f.op for f in result.findings} == {op.value}
