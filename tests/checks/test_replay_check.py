"""The replay check (plan of tpx.compile vs eager, bitwise): passes on a correct function,
fails on a planted bug, and reports a graph break as skipped, never as passed."""

from __future__ import annotations

import numpy as np

import tpx as tp
import tpx._plan as tpx_plan
from tpx_inspect.checks import run_all_checks
from tpx_inspect.checks.compiled import replay_check


def test_replay_check_passes_on_an_mlp_like_function() -> None:
    rng = np.random.default_rng(0)
    w = tp.asarray(rng.normal(size=(4, 3)), requires_grad=True)
    x = tp.asarray(rng.normal(size=(5, 4)), requires_grad=True)
    result = replay_check(lambda a, b: (a @ b).tanh().sum(), [x, w])
    assert result.passed and result.checked == 2 and result.skipped == 0


def plant_wrong_lowering(monkeypatch) -> None:
    """A planted bug in the lowering: the plan's first multiply runs as an add."""
    from dataclasses import replace

    import tpx._compile as compile_module

    lower = compile_module.lower

    def wrong(plan):
        plan = lower(plan)
        for seg in plan.segments:
            for k, step in enumerate(seg.steps):
                if step.op == "mul":
                    seg.steps[k] = replace(step, kernel=np.add)
                    seg.run = tpx_plan._generate(seg)
                    return plan
        return plan

    monkeypatch.setattr(compile_module, "lower", wrong)


def test_replay_check_fails_on_a_planted_bug(monkeypatch) -> None:
    plant_wrong_lowering(monkeypatch)
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    result = replay_check(lambda a: (a * a).sin(), [x])
    assert not result.passed
    first = result.errors[0]
    assert first.category == "replay" and "differs from eager" in first.message
    assert first.name == "SinBackward"


def test_a_stateful_function_is_skipped_not_compared() -> None:
    calls = [0]

    def drifting(a: tp.Tensor) -> tp.Tensor:
        calls[0] += 1
        return a * float(calls[0])

    result = replay_check(drifting, [tp.asarray([1.0, 2.0], requires_grad=True)])
    assert result.checked == 0 and result.status.label == "SKIPPED"
    assert "two eager calls differ" in result.notes[0]


def test_a_graph_break_is_skipped_not_passed() -> None:
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    result = replay_check(lambda a: a * a.sum().item(), [x])
    assert result.checked == 0 and result.skipped == 2 and result.status.label == "SKIPPED"
    assert "data-dependent read" in result.notes[0]


def test_run_all_checks_includes_replay() -> None:
    x = tp.asarray([[0.5, -1.0], [2.0, 0.3]], requires_grad=True)
    report = run_all_checks(lambda a: (a @ a).tanh().sum(), [x])
    assert report.results[-1].check == "replay" and report.results[-1].checked == 2
