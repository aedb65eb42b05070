"""The replay check (plan of tpx.compile vs eager, bitwise): passes on a correct function,
fails on a planted bug, and reports a graph break as skipped, never as passed."""

from __future__ import annotations

import numpy as np

import p10
import tpx as tp
from tpx_inspect.checks import run_all_checks
from tpx_inspect.checks.compiled import replay_check


def test_replay_check_passes_on_an_mlp_like_function() -> None:
    rng = np.random.default_rng(0)
    w = tp.asarray(rng.normal(size=(4, 3)), requires_grad=True)
    x = tp.asarray(rng.normal(size=(5, 4)), requires_grad=True)
    result = replay_check(lambda a, b: (a @ b).tanh().sum(), [x, w])
    assert result.passed and result.checked == 2 and result.skipped == 0


def test_replay_check_fails_on_a_planted_bug() -> None:
    # a kernel that reads Python state: the plan keeps calling it, but each call differs,
    # so the replayed values cannot equal the eager call's
    calls = [0]

    def drifting(x: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return x * (1.0 + calls[0])

    op = p10.define_op("drifting_for_replay_test", drifting)
    rule = tp.register_rule(op, lambda ctx, g: (g,))
    try:
        x = tp.asarray([1.0, 2.0], requires_grad=True)
        result = replay_check(lambda a: p10.apply(op, a * 1.0), [x])
    finally:
        rule.remove()
        op.remove()
    assert not result.passed
    assert (
        result.errors[0].category == "replay" and "differs from eager" in result.errors[0].message
    )


def test_a_graph_break_is_skipped_not_passed() -> None:
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    result = replay_check(lambda a: a * a.sum().item(), [x])
    assert result.checked == 0 and result.skipped == 2 and result.status.label == "SKIPPED"
    assert "data-dependent read" in result.notes[0]


def test_run_all_checks_includes_replay() -> None:
    x = tp.asarray([[0.5, -1.0], [2.0, 0.3]], requires_grad=True)
    report = run_all_checks(lambda a: (a @ a).tanh().sum(), [x])
    assert report.results[-1].check == "replay" and report.results[-1].checked == 2
